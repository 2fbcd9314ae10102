//! The relay between servers (`peer_latency`): it runs inside one server's container, where
//! an iptables `REDIRECT` in the nat table's OUTPUT chain hands it every TCP connection the
//! container opens to another node of its network. It reads where each connection was going
//! (`SO_ORIGINAL_DST`), opens its own connection there, and relays both ways with the delay.
//!
//! Its own connections carry a firewall mark ([`MARK`]) that the redirect skips, and they
//! leave from the container's own address to the peer's: the partition rules (`-s`/`-d` the
//! peer's address, in the filter table) drop them exactly as they drop a direct connection,
//! so a partition behind the relays is still a partition. Each connection is relayed once, on
//! the side that opened it, so every byte between two servers is delayed once each way.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpSocket, TcpStream};

use super::{CONNECT_TIMEOUT, Delay, Shared, splice};

/// The firewall mark on the relay's own connections, which the redirect lets through.
pub const MARK: u32 = 0x1b;

/// Serves on `127.0.0.1:port` until the process ends (it returns only an error to listen): every connection redirected here is
/// relayed to where it was going, with `delay` each way. `ready` is created once it listens
/// (the container's start-up waits for it before adding the redirect).
pub async fn serve(
    port: u16,
    delay: Delay,
    ready: Option<&Path>,
) -> std::io::Result<std::convert::Infallible> {
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    if let Some(ready) = ready {
        std::fs::write(ready, b"listening\n")?;
    }
    let shared = Arc::new(Shared::default());
    shared.set(delay);
    let mut relays = tokio::task::JoinSet::new();
    loop {
        let (client, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(_) => continue,
        };
        let delay = shared.clone();
        relays.spawn(async move {
            let Some(to) = relay_to(&client) else {
                return;
            };
            let Ok(Ok(server)) = tokio::time::timeout(CONNECT_TIMEOUT, connect_marked(to)).await
            else {
                // The peer is down or cut off: the server sees its connection closed.
                return;
            };
            splice(client, server, delay).await;
        });
        while relays.try_join_next().is_some() {}
    }
}

/// Where to relay `s`: where it was going before the nat table sent it here; `None` for a
/// connection that was not redirected (someone dialled the relay itself), which the kernel
/// either knows nothing of or says was going to the relay, so relaying would loop.
fn relay_to(s: &TcpStream) -> Option<SocketAddr> {
    let to = original_destination(s).ok()?;
    (Some(to) != s.local_addr().ok()).then_some(to)
}

/// Where a redirected connection was going before the nat table sent it here.
fn original_destination(s: &TcpStream) -> std::io::Result<SocketAddr> {
    // SAFETY: getsockopt writes at most `len` bytes into `addr`, a plain C struct that any
    // bytes make valid; the descriptor is `s`'s own and open for this call.
    let mut addr: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_IP,
            libc::SO_ORIGINAL_DST,
            (&mut addr as *mut libc::sockaddr_in).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(SocketAddr::V4(SocketAddrV4::new(
        Ipv4Addr::from(u32::from_be(addr.sin_addr.s_addr)),
        u16::from_be(addr.sin_port),
    )))
}

/// A connection to `to` whose packets carry [`MARK`] (needs CAP_NET_ADMIN, which the
/// cluster's containers have for their partitions).
async fn connect_marked(to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    let mark: libc::c_int = MARK as libc::c_int;
    // SAFETY: SO_MARK reads one c_int from the pointer, which points at `mark` for the call.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MARK,
            (&mark as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    socket.connect(to).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_connection_that_was_not_redirected_is_not_relayed_back_to_the_relay() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let (dialled, accepted) = tokio::join!(TcpStream::connect(addr), l.accept());
        let _dialled = dialled.unwrap();
        let (accepted, _) = accepted.unwrap();
        // Without a nat entry the kernel knows no original destination (ENOENT), or, where
        // conntrack follows loopback, names the relay itself: either way it is not relayed.
        assert_eq!(relay_to(&accepted), None);
    }
}
