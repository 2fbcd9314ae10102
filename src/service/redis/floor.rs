//! The handoff floor of Redis (the master Sentinel names) and Redlock (every master, a
//! majority deciding): A deletes the lock key and publishes on its channel in one pipeline on
//! each master; B, already subscribed there, hears the message from a majority of the masters
//! (the one master of Redis) and takes the key with `SET NX PX` on every master, holding the
//! lock once a majority granted it. The same steps the recipes' release and predecessor wait
//! take, without their scripts' queue, token and fencing work.

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt;
use futures::future::join_all;
use redis::aio::MultiplexedConnection;
use tokio::sync::mpsc;

use super::super::floor::{sample_each, timed_handoff, within};
use crate::cluster::ConnectInfo;
use crate::results::floor::FloorSamples;

/// What one sample measures (Redis: the one master, Redlock: a majority of the masters).
const CHAIN: &str = "A's pipelined DEL of the key and PUBLISH on its channel (on every master), B's message (from a majority of the masters), B's SET NX PX (granted by a majority)";

/// How long a probe's keys live if its clean-up never runs.
const KEY_TTL_MS: u64 = 10_000;

/// One master as the probe uses it: A's and B's command connections.
struct Master {
    a: MultiplexedConnection,
    b: MultiplexedConnection,
}

/// This probe, for Redis and Redlock alike.
pub(in crate::service) const PROBE: crate::service::FloorProbe = crate::service::FloorProbe {
    chain: CHAIN,
    run: |info, prefix, samples| Box::pin(probe(info, prefix, samples)),
};

/// `samples` handoffs on the masters of the cluster `info` describes, keys under `prefix`.
async fn probe(info: &ConnectInfo, prefix: &str, samples: usize) -> Result<FloorSamples, String> {
    let endpoints = super::keys::servers(info, None).await?;
    let key = format!("{}/lock", prefix.trim_end_matches('/'));
    let channel = format!("{key}/released");
    let (tx, rx) = mpsc::unbounded_channel::<(usize, String)>();
    let rx = tokio::sync::Mutex::new(rx);
    let mut masters = Vec::new();
    let mut listeners = Vec::new();
    for (m, e) in endpoints.iter().enumerate() {
        let client =
            redis::Client::open(format!("redis://{e}/")).map_err(|err| format!("{e}: {err}"))?;
        let a = within(
            &format!("A on {e}"),
            client.get_multiplexed_async_connection(),
        )
        .await?;
        let b = within(
            &format!("B on {e}"),
            client.get_multiplexed_async_connection(),
        )
        .await?;
        let pubsub = within(&format!("B's pub/sub on {e}"), client.get_async_pubsub()).await?;
        let (mut sink, mut stream) = pubsub.split();
        within(&format!("SUBSCRIBE on {e}"), sink.subscribe(&channel)).await?;
        let tx = tx.clone();
        listeners.push(tokio::spawn(async move {
            let _keep = sink;
            while let Some(msg) = stream.next().await {
                let text = String::from_utf8_lossy(msg.get_payload_bytes()).into_owned();
                if tx.send((m, text)).is_err() {
                    return;
                }
            }
        }));
        masters.push(Master { a, b });
    }
    let majority = masters.len() / 2 + 1;
    let result = sample_each(super::super::floor::WARMUP, samples, |i| {
        one(&masters, &rx, &key, &channel, majority, i)
    })
    .await;
    for l in &listeners {
        l.abort();
    }
    for m in &mut masters {
        let _ = within(
            "clean-up",
            redis::cmd("DEL").arg(&key).query_async::<i64>(&mut m.b),
        )
        .await;
    }
    result
}

/// One handoff, its messages carrying `i` so a late message of an earlier sample is not
/// taken for this one's.
async fn one(
    masters: &[Master],
    rx: &tokio::sync::Mutex<mpsc::UnboundedReceiver<(usize, String)>>,
    key: &str,
    channel: &str,
    majority: usize,
    i: usize,
) -> Result<Duration, String> {
    let held = join_all(masters.iter().map(|m| {
        let mut a = m.a.clone();
        async move {
            redis::cmd("SET")
                .arg(key)
                .arg("A")
                .arg("PX")
                .arg(KEY_TTL_MS)
                .query_async::<()>(&mut a)
                .await
        }
    }));
    for r in within("A's SET", async { Ok::<_, String>(held.await) }).await? {
        r.map_err(|e| format!("A's SET: {e}"))?;
    }
    let tag = i.to_string();
    let release = join_all(masters.iter().map(|m| {
        let mut a = m.a.clone();
        let tag = tag.clone();
        async move {
            redis::pipe()
                .cmd("DEL")
                .arg(key)
                .cmd("PUBLISH")
                .arg(channel)
                .arg(tag)
                .query_async::<(i64, i64)>(&mut a)
                .await
        }
    }));
    let take = async {
        let mut rx = rx.lock().await;
        let mut heard = BTreeSet::new();
        while heard.len() < majority {
            match rx.recv().await {
                Some((m, t)) if t == tag => {
                    heard.insert(m);
                }
                Some(_) => continue,
                None => return Err("B's subscriptions ended".to_string()),
            }
        }
        let granted = join_all(masters.iter().map(|m| {
            let mut b = m.b.clone();
            async move {
                redis::cmd("SET")
                    .arg(key)
                    .arg("B")
                    .arg("NX")
                    .arg("PX")
                    .arg(KEY_TTL_MS)
                    .query_async::<Option<String>>(&mut b)
                    .await
            }
        }))
        .await;
        let yes = granted.iter().filter(|g| matches!(g, Ok(Some(_)))).count();
        if yes < majority {
            return Err(format!(
                "B's SET NX granted on {yes} of {} masters",
                masters.len()
            ));
        }
        Ok(())
    };
    let (released, taken, took) = timed_handoff(release, take).await;
    for r in released {
        r.map_err(|e| format!("A's DEL and PUBLISH: {e}"))?;
    }
    taken?;
    Ok(took)
}
