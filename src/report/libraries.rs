//! The "Libraries" section: for each cell whose clients were a lock library's (`--clients-from`),
//! what its driver recorded in `driver.json`: the library and its versions, what the workload's
//! `lease_ttl` set, whether the driver checks the library's lost signal before writing, whether
//! the library gives fencing tokens, its processes, the pipe's round trip and any driver that
//! broke.

use std::collections::BTreeMap;

use super::table::{Table, number, text};
use crate::results::CellSummary;
use crate::results::DriverRecord;

/// What the section says above its table, in both reports.
pub const LIBRARIES_TEXT: &str = "Each cell whose clients were a lock library's, run by its \
     driver: the version pinned and the one the driver reported, the library setting the \
     workload's lease_ttl set, whether the driver checks the library's lost signal before \
     writing (as the library's documentation tells its users to), whether the library gives a \
     fencing token, the driver pipe's round trip on lockbench's clock, and, where the server \
     can list them (etcd), the leases the cell's clients left alive at its end, per acquisition \
     of the whole cell (warm-up included). A figure the driver cannot tell (requests, wake-ups) reads n/a in the tables \
     above, never 0.";

/// The section's table; `None` when no cell ran a library.
pub fn table(cells: &[CellSummary], drivers: &BTreeMap<String, DriverRecord>) -> Option<Table> {
    let rows: Vec<Vec<String>> = cells
        .iter()
        .filter(|c| c.id.library.is_some())
        .map(|c| {
            let id = c.id.to_string();
            let Some(d) = drivers.get(&id) else {
                let mut row = vec![id, c.id.waiting()];
                row.extend(std::iter::repeat_n("n/a".to_string(), 8));
                row.push("driver.json not found".into());
                return row;
            };
            let us = |v: Option<u64>| v.map_or_else(|| "n/a".to_string(), |v| v.to_string());
            let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
            vec![
                id,
                d.library.clone(),
                format!(
                    "{} / {}",
                    d.version,
                    d.reported_version.as_deref().unwrap_or("n/a")
                ),
                d.lease_ttl_maps_to.clone(),
                yes(d.checks_lost_before_write),
                yes(d.tokens),
                d.processes.to_string(),
                us(d.round_trip_p50_us),
                us(d.round_trip_p99_us),
                match d.leases_left {
                    None => "n/a".to_string(),
                    Some(n) if d.acquisitions == 0 => format!("{n} (no acquisition)"),
                    Some(n) => format!("{n} ({:.2}/acq)", n as f64 / d.acquisitions as f64),
                },
                if d.broken.is_empty() {
                    "-".to_string()
                } else {
                    d.broken.join("; ")
                },
            ]
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    Some(Table {
        columns: vec![
            text("cell"),
            text("library"),
            text("version pinned / reported"),
            text("lease_ttl sets"),
            text("checks lost before write"),
            text("tokens"),
            number("processes"),
            number("pipe p50 µs"),
            number("pipe p99 µs"),
            number("leases left"),
            text("broken"),
        ],
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::testkit::cell;
    use crate::stats::analyze_events;

    fn summary() -> CellSummary {
        analyze_events(&[], &cell(3)).summary
    }

    fn record(library: &str) -> DriverRecord {
        DriverRecord {
            protocol: 1,
            library: library.into(),
            version: "2.11.0".into(),
            reported_version: Some("2.11.0".into()),
            manifest: "drivers/kazoo/driver.toml".into(),
            lease_ttl_maps_to: "KazooClient(timeout=...)".into(),
            checks_lost_before_write: true,
            tokens: false,
            processes: 3,
            round_trips: 40,
            round_trip_p50_us: Some(180),
            round_trip_p99_us: Some(900),
            acquisitions: 40,
            leases_left: Some(30),
            broken: Vec::new(),
        }
    }

    #[test]
    fn a_row_per_library_cell_and_none_for_the_recipes() {
        let recipe = summary();
        let mut library = summary();
        library.id.library = Some("kazoo".into());
        assert!(table(std::slice::from_ref(&recipe), &BTreeMap::new()).is_none());
        let drivers = BTreeMap::from([(library.id.to_string(), record("kazoo"))]);
        let t = table(&[recipe, library.clone()], &drivers).expect("a library cell");
        assert_eq!(t.rows.len(), 1);
        let row = &t.rows[0];
        assert_eq!(row[0], library.id.to_string());
        assert_eq!(
            &row[1..],
            [
                "kazoo",
                "2.11.0 / 2.11.0",
                "KazooClient(timeout=...)",
                "yes",
                "no",
                "3",
                "180",
                "900",
                "30 (0.75/acq)",
                "-"
            ]
        );
        let missing = table(&[library], &BTreeMap::new()).unwrap();
        assert_eq!(missing.rows[0][10], "driver.json not found");
    }
}
