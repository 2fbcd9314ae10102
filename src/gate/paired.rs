//! `lockbench gate --pair A=B`: an A/B comparison inside one run, round by round, of two values
//! of one cell coordinate: two workloads (`base=candidate`), two server versions
//! (`etcd@3.4=etcd@3.5`), two strategies, schedules or systems (`strategy:herd=predecessor`).
//!
//! A baseline from another run meets other clusters and another minute of the machine: on this
//! project's 2-core hosts one fresh cluster differs from the next by 10–20 % in handoff latency,
//! and the machine moves as much from one minute to the next, which a 20 % change cannot be told
//! apart from. Two variants of a cell (workloads A and B, otherwise the same coordinates) run in
//! the same `--repeat` round share that round's clusters and its minute: each round's ratio
//! B ÷ A cancels both. Per metric the gate takes the median of the rounds' ratios and fails B
//! when it is worse than both the metric's floor and Z standard errors of that median, estimated
//! from the ratios' own IQR: `Z × 0.929 × IQR/median × √(1/rounds)` (the paired form of the
//! unpaired gate's rule). This is the paired design of benchmarking practice (A and B
//! interleaved on one machine, the difference judged per pair), as in Georges et al.'s
//! "Statistically rigorous Java performance evaluation" and rustc-perf's same-machine runs.
//!
//! Rounds pair by repetition number within one run folder (several folders pool their pairs).
//! Safety is gated as without a baseline: any violation in a cell expected safe fails.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::GateError;
use super::aggregate::aggregate;
use super::compare::{Judgement, Outcome, Row, Thresholds, judge, safety_row};
use super::metric::Metric;
use super::spread::Spread;
use crate::plan::CellId;
use crate::results::CellSummary;

/// The cell coordinate a pair varies; every other coordinate must match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coordinate {
    /// The workload's name.
    Workload,
    /// The server version (`3.4`), within one system.
    Version,
    /// The waiting strategy, or the library whose driver ran the clients (a library waits its
    /// own way): `strategy:predecessor=kazoo`, `strategy:kazoo=curator`.
    Strategy,
    /// The fault schedule's name.
    Chaos,
    /// The system.
    System,
}

impl Coordinate {
    const ALL: [Coordinate; 5] = [
        Coordinate::Workload,
        Coordinate::Version,
        Coordinate::Strategy,
        Coordinate::Chaos,
        Coordinate::System,
    ];

    /// Its name, as `--pair NAME:A=B` writes it.
    pub fn name(self) -> &'static str {
        match self {
            Coordinate::Workload => "workload",
            Coordinate::Version => "version",
            Coordinate::Strategy => "strategy",
            Coordinate::Chaos => "chaos",
            Coordinate::System => "system",
        }
    }

    /// The coordinate's value in `id` (`None`: a cell without a version).
    fn of(self, id: &CellId) -> Option<String> {
        match self {
            Coordinate::Workload => Some(id.workload.clone()),
            Coordinate::Version => id.version.clone(),
            Coordinate::Strategy => Some(id.waiting()),
            Coordinate::Chaos => Some(id.chaos.clone()),
            Coordinate::System => Some(id.system.to_string()),
        }
    }

    /// `id` with the coordinate set to `value` (`None` where the value does not read).
    fn with(self, id: &CellId, value: &str) -> Option<CellId> {
        let mut out = id.clone();
        match self {
            Coordinate::Workload => out.workload = value.to_string(),
            Coordinate::Version => out.version = Some(value.to_string()),
            Coordinate::Strategy => match value.parse() {
                Ok(strategy) => (out.strategy, out.library) = (strategy, None),
                // A library's cell: its strategy field is the system's first, as planned.
                Err(_) => {
                    out.strategy = id.system.strategies()[0];
                    out.library = Some(value.to_string());
                }
            },
            Coordinate::Chaos => out.chaos = value.to_string(),
            Coordinate::System => out.system = value.parse().ok()?,
        }
        Some(out)
    }
}

/// `--pair A=B`: each cell whose coordinate is B judged against the cell with A there and the
/// same other coordinates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// The coordinate that differs.
    pub coordinate: Coordinate,
    /// For a version pair written `etcd@3.4=etcd@3.5`: the one system compared.
    pub system: Option<crate::system::System>,
    /// The baseline variant's value.
    pub baseline: String,
    /// The variant judged.
    pub current: String,
}

impl Pair {
    /// Whether `id` is a cell of the variant judged.
    fn judges(&self, id: &CellId) -> bool {
        self.system.is_none_or(|s| s == id.system)
            && self.coordinate.of(id).as_deref() == Some(self.current.as_str())
    }

    /// The pair as a reader says it: `workload 'a'`, `etcd version '3.4'`.
    fn side(&self, value: &str) -> String {
        match self.system {
            Some(s) => format!("{s} {} '{value}'", self.coordinate.name()),
            None => format!("{} '{value}'", self.coordinate.name()),
        }
    }
}

/// Parses `A=B` (two workloads), `SYSTEM@V1=SYSTEM@V2` (two versions of one system) or
/// `COORDINATE:A=B` with COORDINATE one of workload, version, strategy, chaos, system.
pub fn parse_pair(text: &str) -> Result<Pair, String> {
    let (coordinate, rest) = match text.split_once(':') {
        Some((name, rest)) => {
            // `library` names the strategy coordinate too: libraries stand in it.
            let name = if name.trim() == "library" {
                "strategy"
            } else {
                name
            };
            let c = Coordinate::ALL
                .into_iter()
                .find(|c| c.name() == name.trim())
                .ok_or_else(|| {
                    format!(
                        "'{text}': unknown coordinate '{name}': pair on one of {}",
                        Coordinate::ALL.map(Coordinate::name).join(", ")
                    )
                })?;
            (Some(c), rest)
        }
        None => (None, text),
    };
    let (a, b) = rest.split_once('=').ok_or_else(|| {
        format!(
            "'{text}' is not A=B: e.g. --pair base=candidate (workloads), --pair \
             etcd@3.4=etcd@3.5 (versions) or --pair strategy:herd=predecessor"
        )
    })?;
    let (a, b) = (a.trim(), b.trim());
    if a.is_empty() || b.is_empty() || a == b {
        return Err(format!(
            "'{text}': name two different values, the baseline first, e.g. base=candidate"
        ));
    }
    if coordinate.is_none()
        && let (Some((sa, va)), Some((sb, vb))) = (a.split_once('@'), b.split_once('@'))
    {
        let system: crate::system::System = sa.parse().map_err(|e| format!("'{text}': {e}"))?;
        if sb.parse::<crate::system::System>() != Ok(system) {
            return Err(format!(
                "'{text}': a version pair compares two versions of one system, e.g. \
                 etcd@3.4=etcd@3.5"
            ));
        }
        for v in [va, vb] {
            crate::system::Version::find(system, v).map_err(|e| format!("'{text}': {e}"))?;
        }
        return Ok(Pair {
            coordinate: Coordinate::Version,
            system: Some(system),
            baseline: va.to_string(),
            current: vb.to_string(),
        });
    }
    Ok(Pair {
        coordinate: coordinate.unwrap_or(Coordinate::Workload),
        system: None,
        baseline: a.to_string(),
        current: b.to_string(),
    })
}

/// One B cell's rounds: per metric the ratios B ÷ A of the rounds both measured.
struct Rounds {
    base: CellId,
    /// Per metric: (A's value, B's value) of each round.
    values: BTreeMap<Metric, Vec<(f64, f64)>>,
    rounds: usize,
}

/// Compares, in each run of `runs` (folder, its cells), every cell of workload `pair.current`
/// with the cell of workload `pair.baseline` at the same other coordinates, repetition by
/// repetition. A B cell without any A repetition to pair with is an error (exit 2) that says
/// which; so is a run with no B cell at all.
pub fn compare_paired(
    runs: &[(PathBuf, Vec<CellSummary>)],
    pair: &Pair,
    th: &Thresholds,
) -> Result<Outcome, GateError> {
    let mut by_cell: Vec<Rounds> = Vec::new();
    let mut missing = Vec::new();
    for (_, cells) in runs {
        for b in cells.iter().filter(|c| pair.judges(&c.id)) {
            let Some(a_id) = pair.coordinate.with(&b.id, &pair.baseline) else {
                return Err(GateError::Input {
                    path: runs.first().map(|(d, _)| d.clone()).unwrap_or_default(),
                    message: format!(
                        "--pair: '{}' is not a {} a cell can have",
                        pair.baseline,
                        pair.coordinate.name()
                    ),
                });
            };
            let Some(a) = cells.iter().find(|c| c.id == a_id) else {
                missing.push(a_id.to_string());
                continue;
            };
            let base = b.id.base();
            let i = match by_cell.iter().position(|r| r.base == base) {
                Some(i) => i,
                None => {
                    by_cell.push(Rounds {
                        base,
                        values: BTreeMap::new(),
                        rounds: 0,
                    });
                    by_cell.len() - 1
                }
            };
            let r = &mut by_cell[i];
            r.rounds += 1;
            for m in Metric::ALL {
                if let (Some(x), Some(y)) = (m.of(a), m.of(b)) {
                    r.values.entry(m).or_default().push((x, y));
                }
            }
        }
    }
    if !missing.is_empty() {
        return Err(GateError::MissingCells(missing));
    }
    if by_cell.is_empty() {
        return Err(GateError::Input {
            path: runs.first().map(|(d, _)| d.clone()).unwrap_or_default(),
            message: format!(
                "no cell of {} to compare with {}: run both in one run with --repeat N \
                 (two workloads: `--workload A.toml --workload B.toml`; two versions: \
                 `--systems etcd@3.4,etcd@3.5`)",
                pair.side(&pair.current),
                pair.side(&pair.baseline)
            ),
        });
    }

    let mut rows = Vec::new();
    for r in &by_cell {
        let cell = r.base.to_string();
        for m in Metric::ALL {
            if let Some(v) = r.values.get(&m) {
                rows.push(paired_row(&cell, m, v, th));
            }
        }
    }
    // Safety: every cell of both variants, as without a baseline.
    let pooled: Vec<CellSummary> = runs.iter().flat_map(|(_, c)| c.clone()).collect();
    rows.extend(aggregate(&pooled).iter().map(|c| safety_row(None, c)));
    let rounds: usize = by_cell.iter().map(|r| r.rounds).max().unwrap_or(0);
    Ok(Outcome {
        rows,
        notes: vec![format!(
            "paired: each cell of {} against the same cell of {} in the same round (the same \
             minute of the machine), up to {rounds} rounds; the change is the median of the \
             rounds' ratios",
            pair.side(&pair.current),
            pair.side(&pair.baseline)
        )],
    })
}

/// The row of metric `m` of `cell` from its rounds' (A, B) values.
fn paired_row(cell: &str, m: Metric, values: &[(f64, f64)], th: &Thresholds) -> Row {
    let side = |pick: fn(&(f64, f64)) -> f64| Spread::of(values.iter().map(pick).collect());
    let show = |s: Option<Spread>| {
        s.map_or("not measured".into(), |s| {
            format!("{} (n={})", m.show(s.median), s.values.len())
        })
    };
    let mut row = Row {
        cell: cell.to_string(),
        metric: m.name().to_string(),
        baseline: show(side(|v| v.0)),
        current: show(side(|v| v.1)),
        change: String::new(),
        threshold: String::new(),
        verdict: Judgement::Pass,
        evidence: None,
    };
    if values.iter().any(|&(a, _)| a <= 0.0) {
        row.verdict = Judgement::NotGated("zero in a baseline round: no ratio".into());
        return row;
    }
    let Some(ratios) = Spread::of(values.iter().map(|&(a, b)| b / a).collect()) else {
        row.verdict = Judgement::NotGated("no finite ratio".into());
        return row;
    };
    let change = 100.0 * (ratios.median - 1.0);
    row.change = format!(
        "{change:+.1} % (paired, ratio IQR {:.1} %)",
        100.0 * ratios.relative_iqr()
    );
    (row.threshold, row.verdict) = judge(m, change, th.paired_allowance(m, &ratios), th);
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::Strategy;
    use crate::results::Expect;
    use crate::results::Safety;
    use crate::system::System;

    /// Repetition `rep` of `redis-predecessor-<workload>-c4`: handoff p50 (µs) and throughput.
    fn summary_with(workload: &str, rep: Option<u32>, handoff: f64, x: f64) -> CellSummary {
        let mut s = crate::capacity::report::tests::cell(4, x, 50_000, 100);
        s.id = CellId {
            repetition: rep,
            ..CellId::new(System::Redis, Strategy::Predecessor, workload, 4)
        };
        s.handoff_latency_us.p50 = handoff as u64;
        s.handoff_latency_us.count = 90;
        s.safety = Some(Safety::of(
            &[],
            crate::results::SafetyVerdict::Safe,
            Expect::Safe,
        ));
        s
    }

    fn th(handoff_floor: f64) -> Thresholds {
        Thresholds::with(&[(Metric::HandoffP50, handoff_floor)], 3.0)
    }

    /// Rounds whose level moves by ±30 % from one to the next (cluster and minute), with B a
    /// fixed factor of A inside each round plus a small wobble.
    fn rounds(factor: f64) -> Vec<(PathBuf, Vec<CellSummary>)> {
        let level = [1.0, 1.3, 0.75, 1.2, 0.8, 1.25, 0.7, 1.1];
        let wobble = [1.01, 0.99, 1.02, 0.98, 1.0, 1.015, 0.985, 1.0];
        let mut cells = Vec::new();
        for (k, (l, w)) in level.iter().zip(wobble).enumerate() {
            let rep = Some(k as u32 + 1);
            cells.push(summary_with("a", rep, 1000.0 * l, 100.0 / l));
            cells.push(summary_with("b", rep, 1000.0 * l * factor * w, 100.0 / l));
        }
        vec![(PathBuf::from("run"), cells)]
    }

    fn verdict(o: &Outcome, metric: &str) -> Judgement {
        o.rows
            .iter()
            .find(|r| r.metric == metric)
            .map(|r| r.verdict.clone())
            .unwrap()
    }

    #[test]
    fn pairs_cancel_what_moves_both_variants_and_catch_a_20_percent_slowdown() {
        let pair = parse_pair("a=b").unwrap();
        let slow = compare_paired(&rounds(1.2), &pair, &th(10.0)).unwrap();
        assert_eq!(
            verdict(&slow, "handoff_p50"),
            Judgement::Regressed,
            "{slow:?}"
        );
        assert_eq!(verdict(&slow, "throughput"), Judgement::Pass);
        assert!(slow.rows.iter().any(|r| r.metric == "safety"));
        // The same data unpaired: the rounds' ±30 % spread hides the 20 %.
        let level_iqr = Spread::of(
            rounds(1.0)[0]
                .1
                .iter()
                .filter(|c| c.id.workload == "a")
                .map(|c| Metric::HandoffP50.of(c).unwrap())
                .collect(),
        )
        .unwrap()
        .relative_iqr();
        let unpaired = 100.0 * 3.0 * 0.929 * level_iqr * (2.0f64 / 8.0).sqrt();
        assert!(unpaired > 20.0, "{unpaired}");
        let same = compare_paired(&rounds(1.0), &pair, &th(10.0)).unwrap();
        assert!(same.passed(), "{same:?}");
        let fast = compare_paired(&rounds(0.7), &pair, &th(10.0)).unwrap();
        assert_eq!(verdict(&fast, "handoff_p50"), Judgement::Improved);
        assert!(fast.passed());
    }

    #[test]
    fn a_cell_without_its_pair_or_a_run_without_b_says_which() {
        let mut runs = rounds(1.0);
        runs[0]
            .1
            .retain(|c| !(c.id.workload == "a" && c.id.repetition == Some(3)));
        let e = compare_paired(&runs, &parse_pair("a=b").unwrap(), &th(10.0)).unwrap_err();
        assert!(e.to_string().contains("redis-predecessor-a-c4-r3"), "{e}");
        let e = compare_paired(&runs, &parse_pair("a=c").unwrap(), &th(10.0)).unwrap_err();
        assert!(e.to_string().contains("no cell of workload 'c'"), "{e}");
        assert!(parse_pair("a").unwrap_err().contains("A=B"));
        assert!(parse_pair("a=a").is_err());
    }

    #[test]
    fn a_pair_varies_any_coordinate_and_names_versions_by_system() {
        let p = parse_pair("etcd@3.4=etcd@3.5").unwrap();
        assert_eq!(
            (
                p.coordinate,
                p.system,
                p.baseline.as_str(),
                p.current.as_str()
            ),
            (Coordinate::Version, Some(System::Etcd), "3.4", "3.5")
        );
        let e = parse_pair("etcd@3.4=redis@8.0").unwrap_err();
        assert!(e.contains("one system"), "{e}");
        let e = parse_pair("etcd@3.3=etcd@3.5").unwrap_err();
        assert!(e.contains("unknown version '3.3'"), "{e}");
        let p = parse_pair("strategy:herd=predecessor").unwrap();
        assert_eq!(p.coordinate, Coordinate::Strategy);
        assert!(
            parse_pair("colour:a=b")
                .unwrap_err()
                .contains("unknown coordinate")
        );
        // The same rounds, told apart by version instead of workload: B 20 % slower is caught.
        let mut runs = rounds(1.2);
        for c in &mut runs[0].1 {
            let v = if c.id.workload == "a" { "7.0" } else { "8.0" };
            c.id.version = Some(v.into());
            c.id.workload = "w".into();
        }
        let pair = parse_pair("redis@7.0=redis@8.0").unwrap();
        let o = compare_paired(&runs, &pair, &th(10.0)).unwrap();
        assert_eq!(verdict(&o, "handoff_p50"), Judgement::Regressed, "{o:?}");
        assert!(o.notes[0].contains("redis version '8.0'"), "{:?}", o.notes);
        // A version pair judges only its own system's cells.
        let other = parse_pair("etcd@3.4=etcd@3.5").unwrap();
        assert!(compare_paired(&runs, &other, &th(10.0)).is_err());
    }

    #[test]
    fn a_library_pairs_against_a_recipe_strategy_or_another_library() {
        // The same rounds, B a library's cell and A the predecessor recipe's.
        let mut runs = rounds(1.2);
        for c in &mut runs[0].1 {
            if c.id.workload == "b" {
                c.id.library = Some("kazoo".into());
                c.id.strategy = c.id.system.strategies()[0];
            } else {
                c.id.strategy = Strategy::Predecessor;
            }
            c.id.workload = "w".into();
        }
        for text in ["strategy:predecessor=kazoo", "library:predecessor=kazoo"] {
            let pair = parse_pair(text).unwrap();
            assert_eq!(pair.coordinate, Coordinate::Strategy, "{text}");
            let o = compare_paired(&runs, &pair, &th(10.0)).unwrap();
            assert_eq!(verdict(&o, "handoff_p50"), Judgement::Regressed, "{o:?}");
        }
        // Two libraries: the recipe's cells are no part of it.
        for c in &mut runs[0].1 {
            if c.id.library.is_none() {
                c.id.library = Some("curator".into());
                c.id.strategy = c.id.system.strategies()[0];
            }
        }
        let pair = parse_pair("strategy:curator=kazoo").unwrap();
        let o = compare_paired(&runs, &pair, &th(10.0)).unwrap();
        assert_eq!(verdict(&o, "handoff_p50"), Judgement::Regressed, "{o:?}");
    }
}
