//! Added network latency without `netem` (this kernel has none: `CONFIG_NET_SCH_NETEM` is not
//! set): a userspace TCP relay on 127.0.0.1 in front of one server, which holds every chunk it
//! reads for the one-way delay (plus jitter) before writing it on, in each direction, and
//! never reorders a stream. [`LatencyProxy`] stands in front of one server for the clients
//! (`client_latency`, the `slow` fault); [`transparent`] runs inside a server's container and
//! delays every connection it opens to its peers (`peer_latency`).
//!
//! Delivery times come from [`crate::pace::sleep_until`], which ends within tens of
//! microseconds of its target, so a 1 ms delay is 1 ms and not tokio's rounded-up 2. A chunk's
//! time is `read + delay + jitter`, moved later where needed so it never overtakes the chunk
//! before it (TCP's order): jitter delays, it never reorders.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::Rng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub mod transparent;

/// How long a relay may take to reach its server before it gives the connection up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest chunk read at once.
const CHUNK: usize = 16 * 1024;
/// Chunks in flight per direction before reading waits (backpressure).
const IN_FLIGHT: usize = 1024;

/// One-way delay: `base` plus a uniform draw from `0..=jitter`, per chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Delay {
    /// Every chunk waits at least this long.
    pub base: Duration,
    /// Up to this much more, drawn per chunk.
    pub jitter: Duration,
}

impl Delay {
    /// Whether it adds nothing.
    pub fn is_zero(&self) -> bool {
        self.base.is_zero() && self.jitter.is_zero()
    }
}

/// The delay every relay of a proxy reads before each chunk, changeable while it runs (a `slow`
/// fault raises it and puts it back).
#[derive(Debug, Default)]
struct Shared {
    base_ns: AtomicU64,
    jitter_ns: AtomicU64,
}

impl Shared {
    fn set(&self, d: Delay) {
        self.base_ns
            .store(d.base.as_nanos() as u64, Ordering::Relaxed);
        self.jitter_ns
            .store(d.jitter.as_nanos() as u64, Ordering::Relaxed);
    }
    fn draw(&self) -> Duration {
        let base = self.base_ns.load(Ordering::Relaxed);
        let jitter = self.jitter_ns.load(Ordering::Relaxed);
        let extra = if jitter == 0 {
            0
        } else {
            rand::rng().random_range(0..=jitter)
        };
        Duration::from_nanos(base + extra)
    }
}

/// A listening relay in front of one server; dropping it stops accepting and ends every
/// connection it relays.
#[derive(Debug)]
pub struct LatencyProxy {
    addr: SocketAddr,
    upstream: String,
    delay: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl Drop for LatencyProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl LatencyProxy {
    /// Listens on a free port of 127.0.0.1 and relays each connection to `upstream`
    /// (`host:port`) with `delay` each way.
    pub async fn start(upstream: &str, delay: Delay) -> std::io::Result<LatencyProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        shared.set(delay);
        let accept = tokio::spawn(accept_loop(listener, upstream.to_string(), shared.clone()));
        Ok(LatencyProxy {
            addr,
            upstream: upstream.to_string(),
            delay: shared,
            accept,
        })
    }

    /// Where clients connect: `127.0.0.1:<port>`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server it relays to.
    pub fn upstream(&self) -> &str {
        &self.upstream
    }

    /// Changes the delay of every chunk read from now on, on open connections too.
    pub fn set_delay(&self, delay: Delay) {
        self.delay.set(delay);
    }
}

async fn accept_loop(listener: TcpListener, upstream: String, delay: Arc<Shared>) {
    // Each connection's relays end with it; aborting this task (the proxy dropped) aborts them
    // through the set.
    let mut relays = tokio::task::JoinSet::new();
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let (upstream, delay) = (upstream.clone(), delay.clone());
        relays.spawn(async move {
            let server =
                match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&upstream)).await {
                    Ok(Ok(s)) => s,
                    // The client sees its connection closed, as with a server that is down.
                    _ => return,
                };
            splice(client, server, delay).await;
        });
        while relays.try_join_next().is_some() {}
    }
}

/// Relays one connection both ways, each direction delayed, until both have ended.
async fn splice(client: TcpStream, server: TcpStream, delay: Arc<Shared>) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    tokio::join!(relay(cr, sw, delay.clone()), relay(sr, cw, delay));
}

/// Copies `from` to `to`, each chunk written no earlier than its delivery time, in order; ends
/// when `from` closes (then shuts `to`'s write side) or either side fails.
async fn relay<R, W>(mut from: R, mut to: W, delay: Arc<Shared>)
where
    R: AsyncReadExt + Unpin,
    W: AsyncWriteExt + Unpin,
{
    let (tx, mut rx) = mpsc::channel::<(Instant, Vec<u8>)>(IN_FLIGHT);
    let reader = async move {
        let mut last = Instant::now();
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let due = (Instant::now() + delay.draw()).max(last);
            last = due;
            if tx.send((due, buf[..n].to_vec())).await.is_err() {
                return;
            }
        }
    };
    let writer = async move {
        while let Some((due, chunk)) = rx.recv().await {
            crate::pace::sleep_until(due).await;
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server on 127.0.0.1: its address.
    async fn echo() -> String {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = l.accept().await.unwrap();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    loop {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => {
                                if s.write_all(&buf[..n]).await.is_err() {
                                    return;
                                }
                            }
                        }
                    }
                });
            }
        });
        addr
    }

    /// The fastest of `n` one-byte round trips on `stream`. The fastest, not the median: a delay
    /// the relay adds is a floor under every trip, while a busy machine only lengthens trips
    /// (beside two CPU hogs and a dozen busy loops the median of 40 trips ran past 5.5 ms with a
    /// 4 ms delay), so the fastest trip shows the delay and not the machine's load.
    async fn rtt(stream: &mut TcpStream, n: usize) -> Duration {
        let mut times = Vec::new();
        let mut b = [0u8; 1];
        for i in 0..n {
            let t = Instant::now();
            stream.write_all(&[i as u8]).await.unwrap();
            stream.read_exact(&mut b).await.unwrap();
            assert_eq!(b[0], i as u8);
            times.push(t.elapsed());
        }
        times.into_iter().min().expect("at least one round trip")
    }

    async fn connect(p: &LatencyProxy) -> TcpStream {
        let s = TcpStream::connect(p.addr()).await.unwrap();
        s.set_nodelay(true).unwrap();
        s
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_round_trip_grows_by_twice_the_one_way_delay_and_follows_changes() {
        let server = echo().await;
        let p = LatencyProxy::start(&server, Delay::default())
            .await
            .unwrap();
        let mut s = connect(&p).await;
        let bare = rtt(&mut s, 40).await;
        p.set_delay(Delay {
            base: Duration::from_millis(2),
            jitter: Duration::ZERO,
        });
        let slowed = rtt(&mut s, 40).await;
        // Two one-way delays of 2 ms; the waits end within tens of microseconds of their
        // targets (pace), so the fastest trip lands close above 4 ms: a relay that delayed one
        // way only, or each way twice, would land near 2 ms or 8 ms.
        let added = slowed.saturating_sub(bare);
        assert!(
            added >= Duration::from_micros(3900) && added <= Duration::from_micros(5500),
            "bare {bare:?}, with 2 ms each way {slowed:?}"
        );
        p.set_delay(Delay::default());
        let back = rtt(&mut s, 40).await;
        assert!(back < Duration::from_millis(2), "back to {back:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jitter_never_reorders_a_stream_and_a_closed_side_closes_the_other() {
        let server = echo().await;
        let p = LatencyProxy::start(
            &server,
            Delay {
                base: Duration::from_micros(200),
                jitter: Duration::from_millis(3),
            },
        )
        .await
        .unwrap();
        let mut s = connect(&p).await;
        let sent: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
        for piece in sent.chunks(50) {
            s.write_all(piece).await.unwrap();
            tokio::time::sleep(Duration::from_micros(100)).await;
        }
        let mut got = vec![0u8; sent.len()];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(got, sent, "bytes arrived out of order");
        s.shutdown().await.unwrap();
        let mut rest = Vec::new();
        let n = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest))
            .await
            .expect("the relay closed the connection after the client's side closed")
            .unwrap();
        assert_eq!(n, 0);
    }

    #[tokio::test]
    async fn a_server_that_is_down_closes_the_client_connection() {
        // A port nothing listens on: bind and drop.
        let free = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let gone = free.local_addr().unwrap().to_string();
        drop(free);
        let p = LatencyProxy::start(&gone, Delay::default()).await.unwrap();
        let mut s = connect(&p).await;
        let mut buf = [0u8; 1];
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf))
            .await
            .expect("the relay answered a dead server by closing")
            .unwrap_or(0);
        assert_eq!(n, 0);
        assert_eq!(p.upstream(), gone);
    }
}
