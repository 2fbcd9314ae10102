//! The tables of the other kinds of lock, as plain tables before any markup (like
//! [`super::table`]): a read-write lock's readers and writers, a semaphore's occupancy. Each
//! exists only when some cell of the run took that kind.

use super::table::{Table, ms, number, opt, text};
use crate::results::CellSummary;

/// Each read-write lock cell's readers beside its writers: acquisitions per second, acquire
/// p50/p99, the longest writer wait (starvation) and the readers holding at once; `None` when
/// no cell took a read-write lock.
pub fn rwlock(cells: &[CellSummary]) -> Option<Table> {
    let rows: Vec<Vec<String>> = cells
        .iter()
        .filter_map(|c| {
            let f = c.rwlock.as_ref()?;
            Some(vec![
                c.id.to_string(),
                format!("{:.1}", f.readers.per_s),
                ms(f.readers.latency_us.p50),
                ms(f.readers.latency_us.p99),
                format!("{:.1}", f.writers.per_s),
                ms(f.writers.latency_us.p50),
                ms(f.writers.latency_us.p99),
                ms(f.writer_wait_max_us),
                format!("{:.2}", f.concurrent_readers_mean),
                f.concurrent_readers_max.to_string(),
            ])
        })
        .collect();
    (!rows.is_empty()).then(|| Table {
        columns: vec![
            text("cell"),
            number("reader acq/s"),
            number("reader p50 ms"),
            number("reader p99 ms"),
            number("writer acq/s"),
            number("writer p50 ms"),
            number("writer p99 ms"),
            number("writer wait max ms"),
            number("readers mean"),
            number("readers max"),
        ],
        rows,
    })
}

/// Each semaphore cell's permits, utilisation, most holders at once and wake-ups per grant;
/// `None` when no cell took a semaphore.
pub fn semaphore(cells: &[CellSummary]) -> Option<Table> {
    let rows: Vec<Vec<String>> = cells
        .iter()
        .filter_map(|c| {
            let f = c.semaphore.as_ref()?;
            Some(vec![
                c.id.to_string(),
                f.permits.to_string(),
                format!("{:.1} %", f.utilisation * 100.0),
                f.holders_max.to_string(),
                opt(f.wakeups_per_grant),
            ])
        })
        .collect();
    (!rows.is_empty()).then(|| Table {
        columns: vec![
            text("cell"),
            number("permits"),
            number("utilisation"),
            number("holders max"),
            number("wake-ups per grant"),
        ],
        rows,
    })
}
