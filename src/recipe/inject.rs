//! A test-only slowdown, to prove the regression gate catches one: with the `inject-delay`
//! cargo feature compiled in **and** `LOCKBENCH_INJECT_RELEASE_DELAY` set (a duration such as
//! `1ms`, or one per system: `zookeeper=950us,etcd=1200us`), every real recipe's release waits
//! that long before it lets go of the lock, which lengthens the hold-to-handoff path by exactly
//! that much (waited with [`crate::workload::pace::sleep`], within tens of microseconds: tokio's
//! own sleep has a 1 ms tick and turned a 0.23 ms delay into more than 1 ms). Without the feature this is an
//! empty function: no build a user makes (`cargo build`, `cargo install`, the README's
//! commands) enables it.

/// The environment variable the delay is read from (feature `inject-delay` only).
pub const DELAY_VAR: &str = "LOCKBENCH_INJECT_RELEASE_DELAY";

/// Waits the injected delay for `system`, if any, before a release goes to the server.
#[cfg(feature = "inject-delay")]
pub async fn before_release(system: crate::system::System) {
    use std::sync::OnceLock;
    static DELAYS: OnceLock<Vec<(Option<String>, std::time::Duration)>> = OnceLock::new();
    let delays = DELAYS.get_or_init(|| {
        let text = std::env::var(DELAY_VAR).unwrap_or_default();
        parse(&text).unwrap_or_else(|e| {
            eprintln!("lockbench: {DELAY_VAR}={text}: {e}; no delay injected");
            Vec::new()
        })
    });
    let name = system.to_string();
    let own = delays
        .iter()
        .find(|(s, _)| s.as_deref() == Some(name.as_str()))
        .or_else(|| delays.iter().find(|(s, _)| s.is_none()));
    if let Some((_, d)) = own {
        crate::workload::pace::sleep(*d).await;
    }
}

/// `1ms` (every system) or `zookeeper=950us,etcd=1200us` (per system).
#[cfg(feature = "inject-delay")]
fn parse(text: &str) -> Result<Vec<(Option<String>, std::time::Duration)>, String> {
    text.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|part| {
            let (system, d) = match part.split_once('=') {
                Some((s, d)) => (Some(s.trim().to_string()), d),
                None => (None, part),
            };
            humantime::parse_duration(d.trim())
                .map(|d| (system, d))
                .map_err(|e| format!("'{part}': {e}"))
        })
        .collect()
}

/// Without the `inject-delay` feature: nothing.
#[cfg(not(feature = "inject-delay"))]
#[inline(always)]
pub async fn before_release(_system: crate::system::System) {}
