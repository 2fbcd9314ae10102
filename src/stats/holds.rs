//! Holds and handoffs: how long each holder kept the lock (acquire `ok` → its release invoke),
//! and how long a waiter that was already waiting took to get it once the holder let go.

use rustc_hash::FxHashMap as HashMap;

use hdrhistogram::Histogram;

use super::latency::{new_histogram, record};

/// The hold and handoff histograms, folded over a cell's events in time order.
pub(crate) struct Holds {
    pub hold: Histogram<u64>,
    pub handoff: Histogram<u64>,
    /// Client → its acquire `ok` time, while it holds.
    holding: HashMap<u32, u64>,
    /// Key → the last release invoke not yet followed by a grant.
    last_release: HashMap<String, u64>,
    warmup_us: u64,
}

impl Holds {
    pub fn new(warmup_us: u64) -> Holds {
        Holds {
            hold: new_histogram(),
            handoff: new_histogram(),
            holding: HashMap::default(),
            last_release: HashMap::default(),
            warmup_us,
        }
    }

    /// `client` invoked the release of `key` at `t`; true when its hold counts (it was
    /// granted after the warm-up).
    pub fn release_invoked(&mut self, client: u32, key: &str, t: u64) -> bool {
        let Some(ok_us) = self.holding.remove(&client) else {
            return false;
        };
        let counted = ok_us >= self.warmup_us;
        if counted {
            record(&mut self.hold, t - ok_us);
        }
        self.last_release.insert(key.to_string(), t);
        counted
    }

    /// `client`, waiting since `invoke_us`, was granted `key` at `t`. The lock was idle, not
    /// handed off, unless this waiter was already waiting when the previous holder let go.
    pub fn granted(&mut self, client: u32, key: &str, invoke_us: u64, t: u64) {
        if let Some(rel) = self.last_release.remove(key)
            && rel >= self.warmup_us
            && invoke_us <= rel
        {
            record(&mut self.handoff, t.saturating_sub(rel));
        }
        self.holding.insert(client, t);
    }
}
