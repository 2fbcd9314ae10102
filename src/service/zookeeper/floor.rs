//! ZooKeeper's handoff floor: A deletes its ephemeral node; B, which already watches it
//! (getData with a watch, as the predecessor recipe does), hears the event and lists the queue
//! (getChildren), which is when a predecessor waiter knows it holds the lock. One session per
//! server; sample `i` puts A on server `i mod n` and B on server `i / n mod n`, so the floor
//! mixes every placement, as the cells' clients do.

use std::time::{Duration, Instant};

use zookeeper_client as zk;

use super::super::floor::{sample_each, within};
use crate::cluster::ConnectInfo;
use crate::results::floor::FloorSamples;

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
    let n = sessions.len();
    let result = sample_each(samples, |i| {
        let (a, b) = (&sessions[i % n], &sessions[(i / n) % n]);
        one(a, b, &dir)
    })
    .await;
    // The nodes were ephemeral and are gone; the parents are removed (deepest first).
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

/// One handoff: A holds `dir/a`, B queues behind it and watches it; A deletes it.
async fn one(a: &zk::Client, b: &zk::Client, dir: &str) -> Result<Duration, String> {
    let ephemeral = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    let queued = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let held = format!("{dir}/a");
    within("A's create", a.create(&held, b"", &ephemeral)).await?;
    let base = format!("{dir}/b-");
    let (_, seq) = within("B's create", b.create(&base, b"", &queued)).await?;
    let mine = format!("{base}{seq}");
    let (_, _, watch) = within("B's getData", b.get_and_watch_data(&held)).await?;
    let start = Instant::now();
    let (deleted, listed) = tokio::join!(a.delete(&held, None), async {
        watch.changed().await;
        b.list_children(dir).await
    });
    let took = start.elapsed();
    deleted.map_err(|e| format!("A's delete: {e}"))?;
    let children = listed.map_err(|e| format!("B's getChildren: {e}"))?;
    within("B's delete", b.delete(&mine, None)).await?;
    if children.iter().any(|c| c == "a") {
        return Err("B listed the queue before A's node was gone".into());
    }
    Ok(took)
}
