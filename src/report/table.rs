//! What the reports show, as plain text cells before any markup: the comparison table, each
//! cell's verdict and first findings, and each cell's fault windows. `report.md` and
//! `report.html` format the same figures, so they never disagree.

use crate::check::expectation::{Judged, judge_cell};
use crate::results::{CellSummary, FifoBasis};

/// A column's heading and whether it holds numbers (right-aligned, sorted as numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// The heading.
    pub name: &'static str,
    /// Numbers (or `n/a`, `-`) rather than words.
    pub numeric: bool,
}

/// Rows of text under headed columns; every row has one text per column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The columns, left to right.
    pub columns: Vec<Column>,
    /// The rows, top to bottom.
    pub rows: Vec<Vec<String>>,
}

pub(crate) const fn text(name: &'static str) -> Column {
    Column {
        name,
        numeric: false,
    }
}

pub(crate) const fn number(name: &'static str) -> Column {
    Column {
        name,
        numeric: true,
    }
}

/// Microseconds as milliseconds with two decimals.
pub(crate) fn ms(us: u64) -> String {
    format!("{:.2}", us as f64 / 1000.0)
}

/// An absent figure (a client that cannot see its wake-ups, nothing granted) reads "n/a",
/// never 0.
pub fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |x| format!("{x:.2}"))
}

/// Hold p50 asked for / as held, so a harness that holds longer than the workload says shows.
fn hold(c: &CellSummary) -> String {
    let asked = if c.hold_requested_us.count == 0 {
        "-".to_string()
    } else {
        ms(c.hold_requested_us.p50)
    };
    format!("{asked}/{}", ms(c.hold_time_us.p50))
}

/// Inversions with their basis: counts judged by invoke time include network races.
fn fifo(c: &CellSummary) -> String {
    let basis = match c.fifo_basis {
        FifoBasis::QueuePosition => "queue",
        FifoBasis::InvokeTime => "invoke",
    };
    format!("{} ({basis})", c.fifo_inversions)
}

/// The version a cell measured, as its servers reported it (`3.5.16`, `valkey 8.1.1`), else
/// the version lockbench started (`3.5`); `None` where neither is known (the mock, an older
/// run).
pub fn version(c: &CellSummary) -> Option<String> {
    c.server_version
        .clone()
        .filter(|v| !v.starts_with("unknown"))
        .or_else(|| c.id.version.clone())
}

/// One row per cell, in the order given. A `chaos` column follows the workload when some cell
/// ran under a chaos schedule (runs without chaos keep their table).
pub fn comparison(cells: &[CellSummary]) -> Table {
    let chaos = cells.iter().any(|c| c.id.chaos != crate::plan::NO_CHAOS);
    let versioned = cells.iter().any(|c| version(c).is_some());
    let mut columns = vec![text("system")];
    if versioned {
        columns.push(text("version"));
    }
    columns.extend([text("strategy"), text("workload")]);
    if chaos {
        columns.push(text("chaos"));
    }
    let repeated = cells.iter().any(|c| c.id.repetition.is_some());
    columns.push(number("clients"));
    if repeated {
        columns.push(number("rep"));
    }
    // The floor's column where some cell's cluster had its floor measured.
    let floored = cells.iter().any(|c| c.handoff_floor.is_some());
    columns.extend([
        number("acq/s"),
        number("p50 ms"),
        number("p99 ms"),
        number("handoff p50 ms"),
    ]);
    if floored {
        columns.extend([number("floor p50 ms"), number("handoff ÷ floor")]);
    }
    columns.extend([
        number("hold p50 ms asked/held"),
        number("wakeups/acq"),
        number("requests/acq"),
        number("FIFO inversions (by)"),
        number("Jain"),
        number("timeouts"),
        number("errors"),
        number("lost leases"),
        text("safety"),
    ]);
    let rows = cells
        .iter()
        .map(|c| {
            let mut row = vec![c.id.system.to_string()];
            if versioned {
                row.push(version(c).unwrap_or_default());
            }
            row.extend([c.id.waiting(), c.id.workload.clone()]);
            if chaos {
                row.push(c.id.chaos.clone());
            }
            row.push(c.id.clients.to_string());
            if repeated {
                row.push(c.id.repetition.map_or(String::new(), |r| r.to_string()));
            }
            row.extend([
                format!("{:.1}", c.throughput_per_s),
                ms(c.acquire_latency_us.p50),
                ms(c.acquire_latency_us.p99),
                ms(c.handoff_latency_us.p50),
            ]);
            if floored {
                let floor = c.handoff_floor.as_ref();
                row.push(floor.map_or(String::new(), |f| ms(f.p50_us)));
                row.push(
                    c.handoff_over_floor
                        .map_or(String::new(), |r| format!("{r:.2}")),
                );
            }
            row.extend([
                hold(c),
                opt(c.wakeups_per_acquisition),
                opt(c.requests_per_acquisition),
                fifo(c),
                opt(c.jain_fairness),
                c.timeouts.to_string(),
                c.errors.values().sum::<u64>().to_string(),
                c.lost_leases.to_string(),
                verdict(c),
            ]);
            row
        })
        .collect();
    Table { columns, rows }
}

/// How a cell's verdict stands against its expectation, in a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Safe as expected, or a design expected unsafe that showed its violations.
    AsExpected,
    /// Unsafe where the workload expected the lock to hold.
    Broken,
    /// Safe where a violation was expected, no verdict could be reached, or a chaos cell in
    /// which no fault took effect.
    Doubtful,
    /// No safety figures (a summary from before the checkers).
    Absent,
}

/// The cell's verdict, and how it stands against its expectation: `UNSAFE` in capitals is a
/// lock that broke where the workload expected it to hold.
pub fn verdict(c: &CellSummary) -> String {
    use crate::results::SafetyVerdict;
    let Some((v, judged)) = judged(c) else {
        return "n/a".into();
    };
    match judged {
        Judged::Broke => "UNSAFE".into(),
        Judged::Untested => format!("{v} (no fault took effect)"),
        Judged::AsExpected if v == SafetyVerdict::Safe => "safe".into(),
        Judged::AsExpected => "unsafe (expected)".into(),
        Judged::NotExposed => "safe (expected unsafe)".into(),
        Judged::Unknown => "unknown".into(),
    }
}

/// [`verdict`] as a [`Standing`], for colouring it.
pub fn standing(c: &CellSummary) -> Standing {
    match judged(c) {
        None => Standing::Absent,
        Some((_, Judged::Broke)) => Standing::Broken,
        Some((_, Judged::AsExpected)) => Standing::AsExpected,
        Some(_) => Standing::Doubtful,
    }
}

/// The cell's merged verdict and how `lockbench run` judges it; `None` without safety figures.
fn judged(c: &CellSummary) -> Option<(crate::results::SafetyVerdict, Judged)> {
    let s = c.safety.as_ref()?;
    let untested = crate::check::expectation::untested(c).is_some();
    Some((s.verdict, judge_cell(s.verdict, s.expected, untested)))
}

/// One finding of a checker, ready to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingLine {
    /// The checker, and the finding's class after a ` / ` when it has one other than the
    /// checker's name.
    pub source: String,
    /// What the events show.
    pub what: String,
    /// 1-based line numbers in the cell's `history.jsonl`.
    pub lines: Vec<usize>,
}

/// A cell that is not plainly safe: its verdict, its counts and its first findings.
#[derive(Debug, Clone)]
pub struct SafetyFindings<'a> {
    /// The cell.
    pub cell: &'a CellSummary,
    /// [`verdict`].
    pub verdict: String,
    /// The counts behind the verdict, in a sentence without a final stop.
    pub counts: String,
    /// The first violations, then the first possible ones, at most [`SHOWN_FINDINGS`].
    pub findings: Vec<FindingLine>,
}

/// How many findings a report shows per cell.
pub const SHOWN_FINDINGS: usize = 5;

/// Every cell that is not plainly safe (a violation, an unknown verdict, or stale accesses the
/// fenced register refused), in the order given.
pub fn safety_findings(cells: &[CellSummary]) -> Vec<SafetyFindings<'_>> {
    let mut out = Vec::new();
    for c in cells {
        let Some(safety) = &c.safety else { continue };
        if safety.verdict == crate::results::SafetyVerdict::Safe
            && safety.stale_accesses_rejected == 0
        {
            continue;
        }
        let findings = safety
            .violations
            .iter()
            .chain(&safety.possible_violations)
            .take(SHOWN_FINDINGS)
            .map(|v| FindingLine {
                source: format!(
                    "{}{}",
                    v.checker,
                    v.class
                        .as_deref()
                        .filter(|c| *c != v.checker)
                        .map(|c| format!(" / {c}"))
                        .unwrap_or_default()
                ),
                what: v.what.clone(),
                lines: v.lines.clone(),
            })
            .collect();
        out.push(SafetyFindings {
            cell: c,
            verdict: verdict(c),
            counts: crate::check::expectation::why(safety)
                .split("; first:")
                .next()
                .unwrap_or_default()
                .to_string(),
            findings,
        });
    }
    out
}

/// A cell's fault windows, one row each (when it ran, how fast the lock came back, what the
/// checkers found over its attribution span), and a note per window whose fault failed.
pub fn faults(c: &CellSummary) -> (Table, Vec<String>) {
    let columns = vec![
        text("kind"),
        text("targets"),
        number("start s"),
        number("applying ms"),
        number("end s"),
        number("first grant ms"),
        number("recovery ms"),
        text("verdict"),
        number("overlaps (certain/possible)"),
        number("lost updates"),
        number("stale rejected"),
        number("lost leases"),
        text("errors"),
    ];
    let secs = |us: u64| format!("{:.3}", us as f64 / 1e6);
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for w in &c.faults {
        let kind = w.kind_label();
        let targets = if w.targets.is_empty() {
            "-".to_string()
        } else {
            w.targets.join(", ")
        };
        let errors = if w.errors.is_empty() {
            "-".to_string()
        } else {
            w.errors
                .iter()
                .map(|(k, n)| format!("{k}:{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        rows.push(vec![
            kind,
            targets,
            secs(w.start_us),
            opt(w.applying_ms),
            w.end_us.map_or_else(|| "not healed".to_string(), secs),
            opt(w.first_grant_ms),
            opt(w.recovery_ms),
            w.verdict.to_string(),
            format!("{}/{}", w.overlaps, w.possible_overlaps),
            w.lost_updates.to_string(),
            w.stale_accesses_rejected.to_string(),
            w.lost_leases.to_string(),
            errors,
        ]);
        if let Some(e) = &w.effect {
            notes.push(format!("{} at {} s did: {e}", w.kind, secs(w.start_us)));
        }
        if let Some(e) = &w.error {
            notes.push(format!("{} at {} s: {e}", w.kind, secs(w.start_us)));
        }
    }
    (Table { columns, rows }, notes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::floor::{FloorSamples, HandoffFloor};

    #[test]
    fn the_floor_columns_appear_only_where_a_floor_was_measured() {
        let plain = crate::capacity::report::tests::cell(8, 100.0, 1_000, 10);
        let names = |t: &Table| t.columns.iter().map(|c| c.name).collect::<Vec<_>>();
        assert!(!names(&comparison(std::slice::from_ref(&plain))).contains(&"handoff ÷ floor"));
        let mut floored = plain.clone();
        let samples = FloorSamples {
            times: vec![std::time::Duration::from_micros(2_000)],
            ..FloorSamples::default()
        };
        floored.handoff_floor = HandoffFloor::of(&samples, "x");
        floored.handoff_over_floor = Some(1.5);
        let t = comparison(&[floored, plain]);
        let at = |name: &str| names(&t).iter().position(|n| *n == name).unwrap();
        assert_eq!(t.rows[0][at("floor p50 ms")], "2.00");
        assert_eq!(t.rows[0][at("handoff ÷ floor")], "1.50");
        // A cell without a floor (another backend's) leaves them empty.
        assert_eq!(t.rows[1][at("handoff ÷ floor")], "");
        assert!(t.rows.iter().all(|r| r.len() == t.columns.len()));
    }
}
