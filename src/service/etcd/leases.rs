//! The leases alive on an etcd cluster (`LeaseLeases`): a library cell counts those its clients
//! left alive at its end (python-etcd3's Lock, for one, grants a lease on every try and revokes
//! none it did not win).

use crate::cluster::{ConnectInfo, PROBE_TIMEOUT};

/// The ids of the leases alive on the cluster `info` describes.
pub(super) async fn live(info: &ConnectInfo) -> Result<Vec<i64>, String> {
    let mut c = super::keys::client(info, None).await?;
    let r = tokio::time::timeout(PROBE_TIMEOUT * 5, c.leases())
        .await
        .map_err(|_| format!("listing the leases took over {:?}", PROBE_TIMEOUT * 5))?
        .map_err(|e| format!("listing the leases: {e}"))?;
    Ok(r.leases().iter().map(|l| l.id()).collect())
}
