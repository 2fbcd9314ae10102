//! A test-only slowdown, to prove the regression gate catches one: with the `inject-delay`
//! cargo feature compiled in **and** `LOCKBENCH_INJECT_RELEASE_DELAY` set, every real recipe's
//! release waits that long before it lets go of the lock, which lengthens the hold-to-handoff
//! path by exactly that much (waited with [`crate::pace::sleep`], within tens of
//! microseconds: tokio's own sleep has a 1 ms tick and turned a 0.23 ms delay into more than
//! 1 ms). Without the feature these are empty functions: no build a user makes (`cargo build`,
//! `cargo install`, the guide's commands) enables it.
//!
//! The variable holds a duration for every cell (`1ms`) or comma-separated `WHO=DURATION`
//! parts, where WHO is the start of a cell id: a system (`zookeeper=950us`) or more of the id
//! (`redis-predecessor-slow=300us`: only the cells of workload `slow`, so one run can hold a
//! slowed and an unslowed variant of a cell side by side on the same clusters, for
//! `lockbench gate --pair`). The longest matching WHO wins. The cell is the one whose key
//! prefix the process's clients last connected with (cells run one after another).

/// The environment variable the delay is read from (feature `inject-delay` only).
pub const DELAY_VAR: &str = "LOCKBENCH_INJECT_RELEASE_DELAY";

#[cfg(feature = "inject-delay")]
static CELL: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

/// Notes the cell a client connects for, from its key prefix (`/lockbench/<run>/<cell id>`).
#[cfg(feature = "inject-delay")]
pub fn connecting(prefix: &str) {
    let cell = prefix.rsplit('/').next().unwrap_or_default();
    if let Ok(mut c) = CELL.lock() {
        cell.clone_into(&mut c);
    }
}

/// Waits the injected delay for the current cell of `system`, if any, before a release goes
/// to the server.
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
    let cell = CELL.lock().map(|c| c.clone()).unwrap_or_default();
    if let Some(d) = delay_for(delays, &system.to_string(), &cell) {
        crate::pace::sleep(d).await;
    }
}

/// The delay of the longest WHO that starts `cell` (as whole `-` parts; a bare system name
/// also matches when `cell` is unknown), else the delay without a WHO.
#[cfg(any(feature = "inject-delay", test))]
fn delay_for(
    delays: &[(Option<String>, std::time::Duration)],
    system: &str,
    cell: &str,
) -> Option<std::time::Duration> {
    let starts = |who: &str| {
        cell == who
            || cell
                .strip_prefix(who)
                .is_some_and(|rest| rest.starts_with('-'))
            || (cell.is_empty() && who == system)
    };
    delays
        .iter()
        .filter_map(|(who, d)| who.as_deref().filter(|w| starts(w)).map(|w| (w.len(), *d)))
        .max_by_key(|(len, _)| *len)
        .map(|(_, d)| d)
        .or_else(|| delays.iter().find(|(w, _)| w.is_none()).map(|(_, d)| *d))
}

/// `1ms` (every cell) or `zookeeper=950us,redis-predecessor-slow=300us` (per cell-id start).
#[cfg(any(feature = "inject-delay", test))]
fn parse(text: &str) -> Result<Vec<(Option<String>, std::time::Duration)>, String> {
    text.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|part| {
            let (who, d) = match part.split_once('=') {
                Some((s, d)) => (Some(s.trim().to_string()), d),
                None => (None, part),
            };
            humantime::parse_duration(d.trim())
                .map(|d| (who, d))
                .map_err(|e| format!("'{part}': {e}"))
        })
        .collect()
}

/// Without the `inject-delay` feature: nothing.
#[cfg(not(feature = "inject-delay"))]
#[inline(always)]
pub fn connecting(_prefix: &str) {}

/// Without the `inject-delay` feature: nothing.
#[cfg(not(feature = "inject-delay"))]
#[inline(always)]
pub async fn before_release(_system: crate::system::System) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_longest_start_of_the_cell_id_wins() {
        let d = parse("redis=100us, redis-predecessor-slow=300us, 1ms").unwrap();
        let us = |n| Some(Duration::from_micros(n));
        assert_eq!(
            delay_for(&d, "redis", "redis-predecessor-slow-c4-r2"),
            us(300)
        );
        assert_eq!(delay_for(&d, "redis", "redis-predecessor-a-c4-r2"), us(100));
        // A workload named `slower` is not `slow`: parts match whole.
        assert_eq!(
            delay_for(&d, "redis", "redis-predecessor-slower-c4"),
            us(100)
        );
        assert_eq!(delay_for(&d, "etcd", "etcd-herd-a-c4"), us(1000));
        assert_eq!(
            delay_for(&d, "redis", ""),
            us(100),
            "cell unknown: the system's"
        );
        let only = parse("redis-predecessor-slow=300us").unwrap();
        assert_eq!(delay_for(&only, "redis", "redis-predecessor-a-c4"), None);
        assert_eq!(
            delay_for(&only, "redlock", "redlock-predecessor-slow-c4"),
            None
        );
        assert!(parse("redis=fast").unwrap_err().contains("'redis=fast'"));
    }
}
