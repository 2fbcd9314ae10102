//! etcd's handoff floor: A deletes its key; B, which already watches it for deletion (as the
//! predecessor recipe does), hears the event and confirms its own key is still there (one
//! linearizable get), which is when a predecessor waiter knows it holds the lock. One client
//! per member; sample `i` puts A on member `i mod n` and B on member `i / n mod n`, so the
//! floor mixes every placement, as the cells' clients do.

use std::time::Duration;

use etcd_client::{Client, ConnectOptions, EventType, GetOptions, WatchFilterType, WatchOptions};

use super::super::floor::{sample_each, timed_handoff, within};
use crate::cluster::ConnectInfo;
use crate::results::floor::FloorSamples;

/// What one sample measures.
const CHAIN: &str = "A's delete of its key, B's watch event (a watch on that key for deletions), B's linearizable get of its own key";

/// This system's probe.
pub(super) const PROBE: crate::service::FloorProbe = crate::service::FloorProbe {
    chain: CHAIN,
    run: |info, prefix, samples| Box::pin(probe(info, prefix, samples)),
};

/// `samples` handoffs under `prefix`.
async fn probe(info: &ConnectInfo, prefix: &str, samples: usize) -> Result<FloorSamples, String> {
    let mut clients = Vec::new();
    for e in &info.endpoints {
        let opts = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_require_leader(true);
        let urls = [format!("http://{e}")];
        clients.push(within(&format!("client of {e}"), Client::connect(urls, Some(opts))).await?);
    }
    let n = clients.len();
    let dir = prefix.trim_end_matches('/').to_string();
    // Each client's own key as B, put once and kept for every sample.
    for (k, c) in clients.iter_mut().enumerate() {
        within("B's put", c.put(format!("{dir}/b{k}"), "", None)).await?;
    }
    let result = sample_each(super::super::floor::WARMUP, samples, |i| {
        let (a, b) = (clients[i % n].clone(), clients[(i / n) % n].clone());
        one(a, b, dir.clone(), format!("{dir}/b{}", (i / n) % n))
    })
    .await;
    let mut c = clients[0].clone();
    let _ = within(
        "clean-up",
        c.delete(
            format!("{dir}/"),
            Some(etcd_client::DeleteOptions::new().with_prefix()),
        ),
    )
    .await;
    result
}

/// One handoff: A holds `dir/a`, B (its key `mine` put already) watches it; A deletes it.
async fn one(mut a: Client, mut b: Client, dir: String, mine: String) -> Result<Duration, String> {
    let held = format!("{dir}/a");
    within("A's put", a.put(held.as_str(), "", None)).await?;
    let opts = WatchOptions::new().with_filters([WatchFilterType::NoPut]);
    let mut watch = within("B's watch", b.watch(held.as_str(), Some(opts))).await?;
    match within("B's watch", watch.message()).await? {
        Some(r) if r.created() => {}
        _ => return Err("etcd did not create B's watch".into()),
    }
    let (deleted, confirmed, took) = timed_handoff(a.delete(held.as_str(), None), async {
        loop {
            match watch.message().await {
                Ok(Some(r))
                    if r.events()
                        .iter()
                        .any(|e| e.event_type() == EventType::Delete) =>
                {
                    break;
                }
                Ok(Some(_)) => continue,
                Ok(None) => return Err("B's watch ended".to_string()),
                Err(e) => return Err(format!("B's watch: {e}")),
            }
        }
        b.get(mine.as_str(), Some(GetOptions::new()))
            .await
            .map_err(|e| format!("B's get: {e}"))
    })
    .await;
    deleted.map_err(|e| format!("A's delete: {e}"))?;
    let confirmed = confirmed?;
    if confirmed.kvs().is_empty() {
        return Err("B's key was gone".into());
    }
    Ok(took)
}
