//! ZooKeeper's handoff floor: A deletes its ephemeral node; B, queued behind it (each session
//! holds one sequential node for the whole probe) and already watching it
//! (getData with a watch, as the predecessor recipe does), hears the event and lists the queue
//! (getChildren), which is when a predecessor waiter knows it holds the lock. One session per
//! server; sample `i` puts A on server `i mod n` and B on server `i / n mod n`, so the floor
//! mixes every placement, as the cells' clients do.

use std::time::Duration;

use zookeeper_client as zk;

use super::super::floor::{sample_each, timed_handoff, within};
use crate::cluster::ConnectInfo;
use crate::results::floor::FloorSamples;

/// Warm-up samples: the JVM's hot paths compile after hundreds of requests
/// ([`super::super::floor::WARMUP`] says what was measured).
const ZK_WARMUP: usize = 300;

/// What one sample measures.
const CHAIN: &str =
    "A's delete of its node, B's watch event (set by getData), B's getChildren of the queue";

/// This system's probe.
pub(super) const PROBE: crate::service::FloorProbe = crate::service::FloorProbe {
    chain: CHAIN,
    run: |info, prefix, samples| Box::pin(probe(info, prefix, samples)),
};

/// `samples` handoffs under `prefix`.
async fn probe(info: &ConnectInfo, prefix: &str, samples: usize) -> Result<FloorSamples, String> {
    let mut sessions = Vec::new();
    for e in &info.endpoints {
        let mut connector = zk::Client::connector();
        connector = connector.with_session_timeout(Duration::from_secs(6));
        let client = within(&format!("session on {e}"), connector.connect(e)).await?;
        sessions.push(client);
    }
    let dir = format!("{}/queue", prefix.trim_end_matches('/'));
    make_parents(&sessions[0], &dir).await?;
    // Each session's place in the queue as B, behind A's node, kept for every sample.
    let queued = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let base = format!("{dir}/b-");
    let mut places = Vec::new();
    for s in &sessions {
        let (_, seq) = within("B's create", s.create(&base, b"", &queued)).await?;
        places.push(format!("{base}{seq}"));
    }
    let n = sessions.len();
    let result = sample_each(ZK_WARMUP, samples, |i| {
        let (a, b) = (&sessions[i % n], &sessions[(i / n) % n]);
        one(a, b, &dir)
    })
    .await;
    for (s, place) in sessions.iter().zip(&places) {
        let _ = within("B's delete", s.delete(place, None)).await;
    }
    // The parents are removed, deepest first.
    let mut path = dir.as_str();
    while path.len() > 1 {
        let _ = within("delete", sessions[0].delete(path, None)).await;
        match path.rfind('/') {
            Some(0) | None => break,
            Some(cut) if path[..cut].len() < prefix.len() => break,
            Some(cut) => path = &path[..cut],
        }
    }
    result
}

/// Creates `dir` and every parent of it.
async fn make_parents(c: &zk::Client, dir: &str) -> Result<(), String> {
    let opts = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    let mut at = String::new();
    for part in dir.split('/').filter(|p| !p.is_empty()) {
        at.push('/');
        at.push_str(part);
        match within("create", async {
            match c.create(&at, b"", &opts).await {
                Ok(_) | Err(zk::Error::NodeExists) => Ok(()),
                Err(e) => Err(e),
            }
        })
        .await
        {
            Ok(()) => {}
            Err(e) => return Err(format!("{at}: {e}")),
        }
    }
    Ok(())
}

/// One handoff: A holds `dir/a`, B (queued behind it already) watches it; A deletes it.
async fn one(a: &zk::Client, b: &zk::Client, dir: &str) -> Result<Duration, String> {
    let ephemeral = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    let held = format!("{dir}/a");
    within("A's create", a.create(&held, b"", &ephemeral)).await?;
    // B's server may not have applied A's create yet (ZooKeeper orders one session's view,
    // not two sessions' on two servers): B looks again until it sees the node, as a waiter
    // that read the queue from its own server does. Not timed.
    let mut tries = 0;
    let watch = loop {
        match within("B's getData", async {
            match b.get_and_watch_data(&held).await {
                Ok((_, _, w)) => Ok(Some(w)),
                Err(zk::Error::NoNode) => Ok(None),
                Err(e) => Err(e),
            }
        })
        .await?
        {
            Some(w) => break w,
            None if tries < 50 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            None => return Err("B never saw A's node".into()),
        }
    };
    let (deleted, listed, took) = timed_handoff(a.delete(&held, None), async {
        watch.changed().await;
        b.list_children(dir).await
    })
    .await;
    deleted.map_err(|e| format!("A's delete: {e}"))?;
    let children = listed.map_err(|e| format!("B's getChildren: {e}"))?;
    if children.iter().any(|c| c == "a") {
        return Err("B listed the queue before A's node was gone".into());
    }
    Ok(took)
}
