//! The Memcached meta text protocol (1.6), as much of it as the lock needs: the request lines
//! ([`Request`]), a parser of the server's replies ([`parse`], pure: unit-tested without a
//! server), and one client connection with a deadline on every call ([`Conn`]).
//!
//! Checked by hand against the 1.6.18 server of the image:
//! - `ms <key> <datalen> T<ttl> ME` + data: `HD` stored, `NS` not stored (the key exists);
//!   with `C<cas>`: `EX` when the item's CAS differs, `NF` when there is no item; `c` adds the
//!   new CAS to the reply (`HD c5`, `NS c0`).
//! - `mg <key> v c t`: `VA <len> c<cas> t<ttl>` + data, `t-1` for no TTL; `EN` on a miss.
//! - `md <key> C<cas>`: `HD` deleted, `EX` CAS mismatch, `NF` no item; `md <key>`: `HD`/`NF`.
//! - `ma <key> N0 J1 v`: `VA <len>` + the new value; the first call creates the counter at the
//!   initial value (1), with no TTL (`N0`).
//! - `mn`: `MN`; `version`: `VERSION 1.6.18`.
//!
//! TTLs are whole seconds on the server's own clock, which ticks once a second: an item stored
//! with `T<n>` lives between n − 1 and n seconds (measured: `T1` items were gone after 0.16 to
//! 0.64 s, `T2` after 1.63 s, `T3` after 2.63 s).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest key memcached accepts.
pub(crate) const MAX_KEY_LEN: usize = 250;

/// One request line (and its data block, for `ms`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request<'a> {
    /// `ms`: store `value` under `key` with a TTL of `ttl` seconds.
    Set {
        key: &'a str,
        value: &'a str,
        ttl: u64,
        /// `ME`: store only if the key is absent (`add`).
        add: bool,
        /// `C<cas>`: store only if the item's CAS is this one.
        cas: Option<u64>,
    },
    /// `mg <key> v c t`: the value, its CAS and its remaining TTL.
    Get { key: &'a str },
    /// `md <key>`, with `C<cas>`: delete only if the item's CAS is this one.
    Delete { key: &'a str, cas: Option<u64> },
    /// `ma <key> N0 J<initial> v`: increment, creating the counter (no TTL) at `initial`.
    Incr { key: &'a str, initial: u64 },
    /// `mn`: a no-op the server answers with `MN`.
    Noop,
    /// `version`.
    Version,
}

impl Request<'_> {
    /// The bytes sent for this request.
    pub(crate) fn encode(&self) -> Vec<u8> {
        match self {
            Request::Set {
                key,
                value,
                ttl,
                add,
                cas,
            } => {
                let mut line = format!("ms {key} {} T{ttl}", value.len());
                if *add {
                    line.push_str(" ME");
                }
                if let Some(c) = cas {
                    line.push_str(&format!(" C{c}"));
                }
                format!("{line}\r\n{value}\r\n").into_bytes()
            }
            Request::Get { key } => format!("mg {key} v c t\r\n").into_bytes(),
            Request::Delete { key, cas: None } => format!("md {key}\r\n").into_bytes(),
            Request::Delete { key, cas: Some(c) } => format!("md {key} C{c}\r\n").into_bytes(),
            Request::Incr { key, initial } => format!("ma {key} N0 J{initial} v\r\n").into_bytes(),
            Request::Noop => b"mn\r\n".to_vec(),
            Request::Version => b"version\r\n".to_vec(),
        }
    }
}

/// Why a key cannot be sent as it is: memcached keys are at most 250 bytes of printable,
/// non-space ASCII.
pub(crate) fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err(format!(
            "memcached key '{key}' is {} bytes: keys must be 1 to {MAX_KEY_LEN} bytes (shorten \
             the key prefix or the lock name)",
            key.len()
        ));
    }
    if let Some(c) = key.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(format!(
            "memcached key '{key}' holds {c:?}: keys must be printable ASCII without spaces"
        ));
    }
    Ok(())
}

/// The return flags of a reply that the lock reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Flags {
    /// `c<cas>`.
    pub cas: Option<u64>,
    /// `t<seconds>`: the remaining TTL, −1 for none.
    pub ttl: Option<i64>,
}

/// One reply of the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `HD`: stored, deleted, or a hit without a value.
    Stored(Flags),
    /// `NS`: not stored (`ME` and the key exists).
    NotStored,
    /// `EX`: the CAS given does not match the item's.
    Exists,
    /// `NF`: no such item (`md`, or `ms` with a CAS).
    NotFound,
    /// `EN`: a `mg` miss.
    Miss,
    /// `VA`: a hit with its value.
    Value { data: Vec<u8>, flags: Flags },
    /// `MN`.
    Noop,
    /// `VERSION <v>`.
    Version(String),
    /// `ERROR`, `CLIENT_ERROR ...`, `SERVER_ERROR ...`: the whole line.
    Error(String),
}

/// Parses the return flags after a reply's code (`c12 t5 klk`); flags it does not read are
/// skipped.
fn flags<'a>(tokens: impl Iterator<Item = &'a str>) -> Result<Flags, String> {
    let mut f = Flags::default();
    for t in tokens {
        let Some(first) = t.chars().next() else {
            continue;
        };
        let rest = &t[first.len_utf8()..];
        match first {
            'c' => f.cas = Some(rest.parse().map_err(|_| format!("bad CAS flag '{t}'"))?),
            't' => f.ttl = Some(rest.parse().map_err(|_| format!("bad TTL flag '{t}'"))?),
            _ => {}
        }
    }
    Ok(f)
}

/// The first whole reply at the start of `buf` and how many bytes it took; `None` while the
/// reply is not complete; `Err` for bytes that are no reply of this protocol.
pub(crate) fn parse(buf: &[u8]) -> Result<Option<(Reply, usize)>, String> {
    let Some(end) = buf.windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let line = std::str::from_utf8(&buf[..end])
        .map_err(|_| format!("reply line is not UTF-8: {:?}", &buf[..end]))?;
    let used = end + 2;
    let mut tokens = line.split(' ').filter(|t| !t.is_empty());
    let code = tokens.next().unwrap_or_default();
    let reply = match code {
        "HD" => Reply::Stored(flags(tokens)?),
        "NS" => Reply::NotStored,
        "EX" => Reply::Exists,
        "NF" => Reply::NotFound,
        "EN" => Reply::Miss,
        "MN" => Reply::Noop,
        "VERSION" => Reply::Version(line["VERSION".len()..].trim().to_string()),
        "ERROR" | "CLIENT_ERROR" | "SERVER_ERROR" => Reply::Error(line.to_string()),
        "VA" => {
            let len: usize = tokens
                .next()
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| format!("VA without a length: '{line}'"))?;
            let f = flags(tokens)?;
            if buf.len() < used + len + 2 {
                return Ok(None);
            }
            if &buf[used + len..used + len + 2] != b"\r\n" {
                return Err(format!("VA data of {len} bytes is not followed by CRLF"));
            }
            let reply = Reply::Value {
                data: buf[used..used + len].to_vec(),
                flags: f,
            };
            return Ok(Some((reply, used + len + 2)));
        }
        _ => return Err(format!("unknown reply '{line}'")),
    };
    Ok(Some((reply, used)))
}

/// Why a call got no reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallError {
    /// Nothing was sent (no connection could be made in time): the server certainly did not
    /// apply the request.
    NotSent(String),
    /// The request may have reached the server, but no (whole) reply came in time: its outcome
    /// is unknown. The connection is dropped, so no late reply is read as another call's.
    NoReply(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::NotSent(e) | CallError::NoReply(e) => f.write_str(e),
        }
    }
}

/// An open connection and what it has read past the last reply.
struct Stream {
    sock: TcpStream,
    buf: Vec<u8>,
    /// A call is between its write and its whole reply: if that call is abandoned (its
    /// deadline), the next one finds this set and opens a new connection.
    busy: bool,
}

/// One client connection to one server, opened on first use and again after a failure; one
/// call at a time (callers queue for it), each within its own time limit.
pub(crate) struct Conn {
    endpoint: String,
    stream: tokio::sync::Mutex<Option<Stream>>,
}

impl Conn {
    /// A connection to `endpoint` (`host:port`), not yet opened.
    pub(crate) fn new(endpoint: &str) -> Conn {
        Conn {
            endpoint: endpoint.to_string(),
            stream: tokio::sync::Mutex::new(None),
        }
    }

    /// The server's `host:port`.
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Closes the connection (a crash: nothing is sent).
    pub(crate) async fn close(&self) {
        *self.stream.lock().await = None;
    }

    /// Sends `req` and reads its reply, all within `limit` (waiting for the connection and
    /// opening it included).
    pub(crate) async fn call(
        &self,
        req: &Request<'_>,
        limit: Duration,
    ) -> Result<Reply, CallError> {
        let sent = AtomicBool::new(false);
        let bytes = req.encode();
        let endpoint = &self.endpoint;
        let run = async {
            let mut slot = self.stream.lock().await;
            if slot.as_ref().is_some_and(|s| s.busy) {
                *slot = None; // an abandoned call's reply may still come: start afresh
            }
            if slot.is_none() {
                let sock = TcpStream::connect(endpoint.as_str()).await.map_err(|e| {
                    CallError::NotSent(format!("cannot connect to {endpoint}: {e}"))
                })?;
                let _ = sock.set_nodelay(true);
                *slot = Some(Stream {
                    sock,
                    buf: Vec::with_capacity(256),
                    busy: false,
                });
            }
            let Some(s) = slot.as_mut() else {
                return Err(CallError::NotSent(format!("no connection to {endpoint}")));
            };
            s.busy = true;
            sent.store(true, Ordering::Relaxed);
            let answer = exchange(s, &bytes).await;
            match answer {
                Ok(r) => {
                    s.busy = false;
                    Ok(r)
                }
                Err(e) => {
                    *slot = None;
                    Err(CallError::NoReply(format!("{endpoint}: {e}")))
                }
            }
        };
        match tokio::time::timeout(limit, run).await {
            Ok(r) => r,
            Err(_) if sent.load(Ordering::Relaxed) => Err(CallError::NoReply(format!(
                "{endpoint} did not answer within {limit:?}"
            ))),
            Err(_) => Err(CallError::NotSent(format!(
                "could not reach {endpoint} within {limit:?}"
            ))),
        }
    }
}

/// Writes `bytes` on `s` and reads one whole reply.
async fn exchange(s: &mut Stream, bytes: &[u8]) -> Result<Reply, String> {
    s.sock
        .write_all(bytes)
        .await
        .map_err(|e| format!("write failed: {e}"))?;
    loop {
        if let Some((reply, used)) = parse(&s.buf)? {
            s.buf.drain(..used);
            return Ok(reply);
        }
        let mut chunk = [0u8; 4096];
        let n = s
            .sock
            .read(&mut chunk)
            .await
            .map_err(|e| format!("read failed: {e}"))?;
        if n == 0 {
            return Err("the server closed the connection".into());
        }
        s.buf.extend_from_slice(&chunk[..n]);
    }
}

/// One call on a fresh connection (the probes: readiness, version).
pub(crate) async fn probe(
    endpoint: &str,
    req: &Request<'_>,
    limit: Duration,
) -> Result<Reply, String> {
    Conn::new(endpoint)
        .call(req, limit)
        .await
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_the_meta_lines_checked_against_the_server() {
        let add = Request::Set {
            key: "/p/k",
            value: "c1:0",
            ttl: 11,
            add: true,
            cas: None,
        };
        assert_eq!(add.encode(), b"ms /p/k 4 T11 ME\r\nc1:0\r\n");
        let renew = Request::Set {
            key: "/p/k",
            value: "c1:0",
            ttl: 11,
            add: false,
            cas: Some(42),
        };
        assert_eq!(renew.encode(), b"ms /p/k 4 T11 C42\r\nc1:0\r\n");
        assert_eq!(Request::Get { key: "k" }.encode(), b"mg k v c t\r\n");
        let del = Request::Delete {
            key: "k",
            cas: Some(7),
        };
        assert_eq!(del.encode(), b"md k C7\r\n");
        let plain = Request::Delete {
            key: "k",
            cas: None,
        };
        assert_eq!(plain.encode(), b"md k\r\n");
        let incr = Request::Incr {
            key: "k:fence",
            initial: 1,
        };
        assert_eq!(incr.encode(), b"ma k:fence N0 J1 v\r\n");
        assert_eq!(Request::Noop.encode(), b"mn\r\n");
        assert_eq!(Request::Version.encode(), b"version\r\n");
    }

    #[test]
    fn parses_each_reply_the_server_gave() {
        let one = |b: &[u8]| parse(b).unwrap().unwrap();
        assert_eq!(one(b"HD\r\n"), (Reply::Stored(Flags::default()), 4));
        let hd = one(b"HD c5\r\n").0;
        assert_eq!(
            hd,
            Reply::Stored(Flags {
                cas: Some(5),
                ttl: None
            })
        );
        assert_eq!(one(b"NS c0\r\n").0, Reply::NotStored);
        assert_eq!(one(b"EX\r\n").0, Reply::Exists);
        assert_eq!(one(b"NF\r\n").0, Reply::NotFound);
        assert_eq!(one(b"EN\r\n").0, Reply::Miss);
        assert_eq!(one(b"MN\r\n").0, Reply::Noop);
        assert_eq!(
            one(b"VERSION 1.6.18\r\n").0,
            Reply::Version("1.6.18".into())
        );
        let va = b"VA 5 c1 t2 klk\r\nownA1\r\nMN\r\n";
        let (r, used) = one(va);
        assert_eq!(
            r,
            Reply::Value {
                data: b"ownA1".to_vec(),
                flags: Flags {
                    cas: Some(1),
                    ttl: Some(2)
                }
            }
        );
        assert_eq!(
            &va[used..],
            b"MN\r\n",
            "the next reply is left in the buffer"
        );
        let counter = one(b"VA 1 t-1\r\n3\r\n").0;
        assert_eq!(
            counter,
            Reply::Value {
                data: b"3".to_vec(),
                flags: Flags {
                    cas: None,
                    ttl: Some(-1)
                }
            }
        );
        let e = one(b"CLIENT_ERROR bad command line format\r\n").0;
        assert_eq!(
            e,
            Reply::Error("CLIENT_ERROR bad command line format".into())
        );
    }

    #[test]
    fn an_incomplete_reply_waits_and_garbage_is_an_error() {
        assert_eq!(parse(b"").unwrap(), None);
        assert_eq!(parse(b"HD").unwrap(), None);
        assert_eq!(parse(b"VA 5 c1\r\nown").unwrap(), None);
        assert_eq!(parse(b"VA 5 c1\r\nownA1").unwrap(), None);
        assert!(parse(b"VA 5\r\nownA1xx").unwrap_err().contains("CRLF"));
        assert!(parse(b"HELLO\r\n").unwrap_err().contains("unknown reply"));
        assert!(parse(b"HD cx\r\n").unwrap_err().contains("bad CAS"));
        assert!(parse(b"VA x\r\n").unwrap_err().contains("length"));
    }

    #[test]
    fn keys_are_checked_before_they_are_sent() {
        assert!(check_key("/lockbench/run/cell/k0").is_ok());
        assert!(check_key("a b").unwrap_err().contains("without spaces"));
        assert!(check_key("").is_err());
        let long = "k".repeat(MAX_KEY_LEN + 1);
        assert!(check_key(&long).unwrap_err().contains("1 to 250 bytes"));
        assert!(check_key(&"k".repeat(MAX_KEY_LEN)).is_ok());
    }

    #[tokio::test]
    async fn a_silent_server_is_no_reply_and_a_closed_port_is_not_sent() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let hold = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((s, _)) = l.accept().await {
                held.push(s);
            }
        });
        let c = Conn::new(&addr);
        let e = c
            .call(&Request::Noop, Duration::from_millis(100))
            .await
            .unwrap_err();
        assert!(matches!(e, CallError::NoReply(_)), "{e:?}");
        hold.abort();
        // A port nobody listens on: refused before anything is sent.
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let gone = free.local_addr().unwrap().to_string();
        drop(free);
        let e = Conn::new(&gone)
            .call(&Request::Noop, Duration::from_secs(2))
            .await
            .unwrap_err();
        assert!(matches!(e, CallError::NotSent(_)), "{e:?}");
    }

    #[tokio::test]
    async fn an_abandoned_call_does_not_leave_its_reply_to_the_next() {
        // A server that answers the first request late, then every later one at once.
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let server = tokio::spawn(async move {
            let mut first = true;
            while let Ok((mut s, _)) = l.accept().await {
                let slow = std::mem::replace(&mut first, false);
                tokio::spawn(async move {
                    let mut buf = [0u8; 256];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        if slow {
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            let _ = s.write_all(b"EN\r\n").await;
                        } else {
                            let _ = s.write_all(b"MN\r\n").await;
                        }
                    }
                });
            }
        });
        let c = Conn::new(&addr);
        let get = Request::Get { key: "k" };
        assert!(c.call(&get, Duration::from_millis(50)).await.is_err());
        tokio::time::sleep(Duration::from_millis(300)).await;
        let r = c.call(&Request::Noop, Duration::from_secs(1)).await;
        assert_eq!(r, Ok(Reply::Noop), "a new connection, not the late EN");
        server.abort();
    }
}
