//! The "Versions" section: where a run measured one system at two or more server versions
//! (`--systems etcd@3.4,etcd@3.5`), each version's cells beside the baseline version's: every
//! gated metric as a ratio of medians with the range of the rounds' own ratios, each side's
//! verdicts (marked where they differ), and the recovery after faults side by side.
//!
//! The baseline of a system is its version from the older Debian release where the run has one
//! (the version users upgrade from), else its default version, else the first seen.

use std::collections::BTreeMap;

use super::table::{Table, number, text};
use crate::gate::{CellAggregate, Metric, aggregate};
use crate::plan::CellId;
use crate::results::CellSummary;
use crate::system::{Release, System, Version};

/// What the section says above its table, in both reports.
pub const VERSIONS_TEXT: &str = "Each cell measured at two or more server versions, every other \
     coordinate the same: each metric as the other version's median ÷ the baseline's (below 1 \
     is less; for p99 and handoff, less is faster), with the range of the per-round ratios \
     where rounds pair up (`--repeat`), each version's verdicts (`differs` where they are not \
     the same) and the median recovery after a fault's end.";

/// The cell's coordinates without its version and repetition: what two versions share.
fn shared(id: &CellId) -> CellId {
    CellId {
        version: None,
        repetition: None,
        ..id.clone()
    }
}

/// The version of `system` the others are compared with, among `present`.
fn baseline(system: System, present: &[String]) -> String {
    let find = |pick: &dyn Fn(Version) -> bool| {
        system
            .versions()
            .into_iter()
            .find(|v| pick(*v) && present.iter().any(|p| p == v.name()))
            .map(|v| v.name().to_string())
    };
    find(&|v| v.release() == Release::Bookworm)
        .or_else(|| find(&|v| v.is_default()))
        .unwrap_or_else(|| present[0].clone())
}

/// The section's table; `None` when no system ran at two versions.
pub fn table(cells: &[CellSummary]) -> Option<Table> {
    let aggregates = aggregate(cells);
    // Per shared coordinates: each version's aggregate, in the order first seen.
    let mut groups: BTreeMap<CellId, Vec<(String, &CellAggregate)>> = BTreeMap::new();
    for a in &aggregates {
        let Some(v) = a.id.version.clone() else {
            continue;
        };
        groups.entry(shared(&a.id)).or_default().push((v, a));
    }
    let mut columns = vec![text("cell"), text("versions")];
    columns.extend(Metric::ALL.map(|m| number(ratio_heading(m))));
    columns.extend([text("verdicts"), number("recovery ms")]);
    let mut rows = Vec::new();
    for (key, versions) in groups.iter().filter(|(_, v)| v.len() > 1) {
        let present: Vec<String> = versions.iter().map(|(v, _)| v.clone()).collect();
        let base_name = baseline(key.system, &present);
        let Some((_, base)) = versions.iter().find(|(v, _)| *v == base_name) else {
            continue;
        };
        for (name, other) in versions.iter().filter(|(v, _)| *v != base_name) {
            let mut row = vec![
                format!("{}-{}-{}", key.system, key.strategy, key.workload)
                    + &chaos_and_clients(key),
                format!("{base_name} → {name}"),
            ];
            for m in Metric::ALL {
                row.push(ratio(m, base, other, cells));
            }
            let (a, b) = (base.safety.describe(), other.safety.describe());
            row.push(if a == b {
                a
            } else {
                format!("{a} | {b} (differs)")
            });
            row.push(format!(
                "{} → {}",
                recovery(cells, &base.id),
                recovery(cells, &other.id)
            ));
            rows.push(row);
        }
    }
    (!rows.is_empty()).then_some(Table { columns, rows })
}

fn ratio_heading(m: Metric) -> &'static str {
    match m {
        Metric::Throughput => "acq/s ratio",
        Metric::AcquireP99 => "p99 ratio",
        Metric::HandoffP50 => "handoff p50 ratio",
        Metric::WakeupsPerAcquisition => "wakeups/acq ratio",
    }
}

fn chaos_and_clients(id: &CellId) -> String {
    let mut s = String::new();
    if id.chaos != crate::plan::NO_CHAOS {
        s += &format!("-{}", id.chaos);
    }
    s + &format!("-c{}", id.clients)
}

/// `other ÷ base` of the medians, with the range of the rounds' ratios where repetitions of
/// both sides pair up (two or more rounds).
fn ratio(m: Metric, base: &CellAggregate, other: &CellAggregate, cells: &[CellSummary]) -> String {
    let (Some(a), Some(b)) = (base.metric(m), other.metric(m)) else {
        return "n/a".into();
    };
    if a.median <= 0.0 {
        return "n/a".into();
    }
    let of = |id: &CellId, r: u32| {
        cells
            .iter()
            .find(|c| c.id.base() == *id && c.id.repetition == Some(r))
            .and_then(|c| m.of(c))
    };
    let rounds: Vec<f64> = cells
        .iter()
        .filter(|c| c.id.base() == base.id)
        .filter_map(|c| c.id.repetition)
        .filter_map(|r| Some((of(&base.id, r)?, of(&other.id, r)?)))
        .filter(|(x, _)| *x > 0.0)
        .map(|(x, y)| y / x)
        .collect();
    let mut text = format!("{:.2}", b.median / a.median);
    if rounds.len() > 1 {
        let lo = rounds.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = rounds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        text += &format!(" [{lo:.2}–{hi:.2}]");
    }
    text
}

/// The median over a cell's repetitions of its fault windows' recovery (the end → the first
/// grant), ms; `-` where none recovered or the cell had no fault.
fn recovery(cells: &[CellSummary], id: &CellId) -> String {
    let mut all: Vec<f64> = cells
        .iter()
        .filter(|c| c.id.base() == *id)
        .flat_map(|c| c.faults.iter().filter_map(|f| f.recovery_ms))
        .collect();
    if all.is_empty() {
        return "-".into();
    }
    all.sort_by(f64::total_cmp);
    format!("{:.0}", all[all.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::Strategy;

    fn cell(version: &str, rep: u32, throughput: f64) -> CellSummary {
        let mut c = crate::capacity::report::tests::cell(4, throughput, 50_000, 100);
        c.id = CellId {
            version: Some(version.into()),
            repetition: Some(rep),
            ..CellId::new(System::Etcd, Strategy::Predecessor, "w", 4)
        };
        c
    }

    #[test]
    fn versions_side_by_side_as_ratios_against_the_older_release() {
        // 3.5 at 1.5 times 3.4's throughput in each of three rounds (levels move by round).
        let mut cells = Vec::new();
        for (r, level) in [(1, 100.0), (2, 120.0), (3, 80.0)] {
            cells.push(cell("3.5", r, 1.5 * level));
            cells.push(cell("3.4", r, level));
        }
        let t = table(&cells).expect("two versions of etcd");
        assert_eq!(t.rows.len(), 1, "{t:?}");
        let row = &t.rows[0];
        assert_eq!(row[0], "etcd-predecessor-w-c4");
        // The baseline is the older release's version, whatever the order of the cells.
        assert_eq!(row[1], "3.4 → 3.5");
        assert_eq!(row[2], "1.50 [1.50–1.50]");
        // One version alone: no section.
        cells.retain(|c| c.id.version.as_deref() == Some("3.5"));
        assert!(table(&cells).is_none());
    }
}
