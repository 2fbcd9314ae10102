//! A cell's clients behind latency relays (`client_latency`): one [`LatencyProxy`] per server
//! address the clients dial (every endpoint, every Sentinel, every address Sentinel's replies
//! are mapped to), and the cluster's [`ConnectInfo`] rewritten to point at them. The relays
//! live in the runner's process for the cell, so worker processes reach them too.

use std::collections::BTreeMap;

use anyhow::Context;

use crate::cluster::ConnectInfo;
use crate::latency::{Delay, LatencyProxy};

/// The relays of one cell, by the address each stands in front of; dropping them ends every
/// relayed connection.
#[derive(Debug)]
pub struct Relays {
    proxies: BTreeMap<String, LatencyProxy>,
    /// The cell's own delay (the workload's `client_latency`), which a `slow` fault's undo
    /// puts back.
    own: Delay,
}

impl Relays {
    /// Starts a relay with `delay` in front of every address `info` names, and returns them with
    /// `info` rewritten to reach the servers only through them (Sentinel's address map included,
    /// so the master a Sentinel names is reached through its relay too).
    pub async fn start(info: &ConnectInfo, delay: Delay) -> anyhow::Result<(Relays, ConnectInfo)> {
        if !info.sentinel_endpoints.is_empty() && info.address_map.is_empty() {
            // The masters the Sentinels name would be dialled directly, around the relays: the
            // figures would claim a latency the clients never had.
            anyhow::bail!(
                "client latency on a Redis target with Sentinels needs its [sentinel] nat_map to \
                 name every server the Sentinels may report (\"host:port\" = the address to \
                 reach it at), so the relays can stand in front of each; without one the clients \
                 would reach the master directly and no latency would be added"
            );
        }
        let mut proxies = BTreeMap::new();
        let upstreams = info
            .endpoints
            .iter()
            .chain(&info.sentinel_endpoints)
            .chain(info.address_map.values());
        for up in upstreams {
            if proxies.contains_key(up) {
                continue;
            }
            let proxy = LatencyProxy::start(up, delay)
                .await
                .with_context(|| format!("starting the latency relay in front of {up}"))?;
            proxies.insert(up.clone(), proxy);
        }
        let relays = Relays {
            proxies,
            own: delay,
        };
        let via = |a: &String| relays.addr_of(a);
        let rewritten = ConnectInfo {
            system: info.system,
            endpoints: info.endpoints.iter().map(via).collect(),
            sentinel_endpoints: info.sentinel_endpoints.iter().map(via).collect(),
            address_map: info
                .address_map
                .iter()
                .map(|(k, v)| (k.clone(), via(v)))
                .collect(),
            master_name: info.master_name.clone(),
        };
        Ok((relays, rewritten))
    }

    /// The relay's `127.0.0.1:<port>` in front of `upstream` (itself if none is).
    fn addr_of(&self, upstream: &String) -> String {
        self.proxies
            .get(upstream)
            .map_or_else(|| upstream.clone(), |p| p.addr().to_string())
    }

    /// Sets every relay's delay (a `slow` fault raises it, its undo puts it back).
    pub fn set_delay(&self, delay: Delay) {
        for p in self.proxies.values() {
            p.set_delay(delay);
        }
    }

    /// How many relays run.
    pub fn len(&self) -> usize {
        self.proxies.len()
    }

    /// Whether none runs.
    pub fn is_empty(&self) -> bool {
        self.proxies.is_empty()
    }
}

impl crate::fault::ClientLinks for Relays {
    fn slow(&self, delay: Delay) {
        self.set_delay(delay);
    }
    fn restore(&self) {
        self.set_delay(self.own);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::System;
    use std::time::Duration;

    #[tokio::test]
    async fn every_address_is_rewritten_to_one_relay_each() {
        let info = ConnectInfo {
            system: System::Redis,
            endpoints: vec!["127.0.0.1:7001".into(), "127.0.0.1:7002".into()],
            sentinel_endpoints: vec!["127.0.0.1:7101".into()],
            address_map: [
                ("redis1".to_string(), "127.0.0.1:7001".to_string()),
                ("redis2".to_string(), "127.0.0.1:7002".to_string()),
            ]
            .into(),
            master_name: Some("m".into()),
        };
        let delay = Delay {
            base: Duration::from_millis(1),
            jitter: Duration::ZERO,
        };
        let (relays, via) = Relays::start(&info, delay).await.unwrap();
        // Three distinct upstreams: two servers (named twice) and a Sentinel.
        assert_eq!(relays.len(), 3);
        for e in via.endpoints.iter().chain(&via.sentinel_endpoints) {
            assert!(e.starts_with("127.0.0.1:") && !e.ends_with(":7001"), "{e}");
        }
        assert_ne!(via.endpoints, info.endpoints);
        // Sentinel's name for a server reaches the same relay as its endpoint.
        assert_eq!(via.address_map["redis1"], via.endpoints[0]);
        assert_eq!(via.address_map["redis2"], via.endpoints[1]);
        assert_eq!(via.master_name.as_deref(), Some("m"));
        // Sentinels whose answers nothing maps: refused, not silently bypassed.
        let unmapped = ConnectInfo {
            address_map: Default::default(),
            ..info
        };
        let e = Relays::start(&unmapped, delay)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("nat_map"), "{e}");
    }
}
