//! The gate's rules on hand-made cells.

use super::compare::{Judgement, parse_threshold};
use super::*;
use crate::plan::CellId;
use crate::recipe::Strategy;
use crate::results::CellSummary;
use crate::results::Expect;
use crate::results::{Safety, SafetyVerdict, Violation};
use crate::system::System;

/// One repetition of `etcd-<strategy>-w-c4`: throughput, p99 and handoff p50 (µs), wake-ups.
fn rep(strategy: Strategy, r: u32, x: f64, p99: u64, handoff: u64, wakeups: f64) -> CellSummary {
    let mut s = crate::capacity::report::tests::cell(4, x, p99, 100);
    s.id = CellId {
        repetition: Some(r),
        ..CellId::new(System::Etcd, strategy, "w", 4)
    };
    s.handoff_latency_us.p50 = handoff;
    s.handoff_latency_us.count = 90;
    s.wakeups_per_acquisition = Some(wakeups);
    s.safety = Some(safety(SafetyVerdict::Safe, Expect::Safe));
    s
}

fn safety(verdict: SafetyVerdict, expected: Expect) -> Safety {
    let mut s = Safety::of(&[], crate::results::SafetyVerdict::Safe, expected);
    s.verdict = verdict;
    s
}

/// Five repetitions of a predecessor cell at about 100/s, p99 50 ms, handoff 5 ms, 1 wake-up,
/// each metric spread by ±`jitter` (fraction) around its centre, scaled by `slow` (1.0: none).
fn five(jitter: f64, slow: f64) -> Vec<CellSummary> {
    [-1.0, -0.5, 0.0, 0.5, 1.0]
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let f = 1.0 + k * jitter;
            rep(
                Strategy::Predecessor,
                i as u32 + 1,
                100.0 * f / slow,
                (50_000.0 * f * slow) as u64,
                (5_000.0 * f * slow) as u64,
                1.0,
            )
        })
        .collect()
}

fn baseline_of(cells: &[CellSummary]) -> Baseline {
    Baseline {
        schema_version: baseline::BASELINE_SCHEMA,
        lockbench_version: "test".into(),
        source: "hand-made".into(),
        environment: None,
        cells: aggregate(cells),
    }
}

/// Each row of `metric`: its cell (or machine factor) and verdict.
fn cells_and_verdicts<'a>(o: &'a Outcome, metric: &str) -> Vec<(&'a str, Judgement)> {
    o.rows
        .iter()
        .filter(|r| r.metric == metric)
        .map(|r| (r.cell.as_str(), r.verdict.clone()))
        .collect()
}

fn verdicts(o: &Outcome, metric: &str) -> Vec<Judgement> {
    o.rows
        .iter()
        .filter(|r| r.metric == metric)
        .map(|r| r.verdict.clone())
        .collect()
}

#[test]
fn repetitions_are_taken_together_in_order_with_their_spread() {
    let mut cells = five(0.02, 1.0);
    cells.reverse();
    let agg = aggregate(&cells);
    assert_eq!(agg.len(), 1);
    let a = &agg[0];
    assert_eq!(a.cell, "etcd-predecessor-w-c4");
    assert_eq!(a.repetitions, 5);
    let x = a.metric(Metric::Throughput).unwrap();
    assert_eq!(x.values, [98.0, 99.0, 100.0, 101.0, 102.0]);
    assert_eq!((x.q1, x.median, x.q3), (99.0, 100.0, 101.0));
    assert_eq!(a.safety.describe(), "safe 5/5");
}

#[test]
fn the_same_numbers_pass_and_a_slowdown_past_the_floor_fails() {
    let base = baseline_of(&five(0.02, 1.0));
    let th = Thresholds::default();
    let same = compare(Some(&base), &aggregate(&five(0.02, 1.0)), None, &th).unwrap();
    assert!(same.passed(), "{}", output::markdown(&same));
    // 15 % slower: inside every floor (throughput −13 %, p99 and handoff +15 %).
    let mild = compare(Some(&base), &aggregate(&five(0.02, 1.15)), None, &th).unwrap();
    assert!(mild.passed(), "{}", output::markdown(&mild));
    // 30 % slower: throughput −23 % and latencies +30 % pass every floor.
    let slow = compare(Some(&base), &aggregate(&five(0.02, 1.30)), None, &th).unwrap();
    assert!(!slow.passed());
    for m in ["throughput", "acquire_p99", "handoff_p50"] {
        assert_eq!(verdicts(&slow, m), [Judgement::Regressed], "{m}");
    }
    assert_eq!(
        verdicts(&slow, "wakeups_per_acquisition"),
        [Judgement::Pass]
    );
    let md = output::markdown(&slow);
    assert!(md.contains("## lockbench gate: FAIL"), "{md}");
    assert!(
        md.contains("| etcd-predecessor-w-c4 | throughput | 100.0/s (IQR 2.0 %, n=5) | 76.9/s"),
        "{md}"
    );
    assert!(md.contains("| −20.0 % (floor) | REGRESSED |"), "{md}");
    // A tighter floor catches the mild one.
    let tight = Thresholds::with(&[parse_threshold("handoff_p50=10").unwrap()], 3.0);
    let caught = compare(Some(&base), &aggregate(&five(0.02, 1.15)), None, &tight).unwrap();
    assert_eq!(verdicts(&caught, "handoff_p50"), [Judgement::Regressed]);
    assert_eq!(verdicts(&caught, "acquire_p99"), [Judgement::Pass]);
}

#[test]
fn a_noisy_side_widens_its_threshold_and_improvements_never_fail() {
    // ±20 % jitter on both sides: relative IQR 20 %, so with five repetitions a side the
    // spread allows 3 × 0.929 × √(0.2²/5 + 0.2²/5) = 35.3 %, and a 30 % slowdown passes.
    let base = baseline_of(&five(0.20, 1.0));
    let th = Thresholds::default();
    let slow = compare(Some(&base), &aggregate(&five(0.20, 1.30)), None, &th).unwrap();
    assert!(slow.passed(), "{}", output::markdown(&slow));
    assert!(
        slow.rows[0].threshold.contains("(3σ noise)"),
        "{:?}",
        slow.rows[0]
    );
    // A quiet baseline and a current run whose own repetitions scatter (CI's A/A case: p99
    // 16.6 ms ±1 % against 17.2, 26.4 and 21.2 ms): the current side's spread counts too, and
    // a +28 % median inside it is no regression.
    let quiet = baseline_of(&five(0.01, 1.0));
    let scattered = compare(Some(&quiet), &aggregate(&five(0.25, 1.28)), None, &th).unwrap();
    assert_eq!(
        verdicts(&scattered, "acquire_p99"),
        [Judgement::Pass],
        "{}",
        output::markdown(&scattered)
    );
    // The same +28 % with tight repetitions on both sides is a regression.
    let steady = compare(Some(&quiet), &aggregate(&five(0.01, 1.28)), None, &th).unwrap();
    assert_eq!(verdicts(&steady, "acquire_p99"), [Judgement::Regressed]);
    // Each side's spread and count: symmetric sides give the pooled figure, a tight current
    // side narrows it, and more repetitions narrow it further.
    let wide = Spread::of(vec![80.0, 90.0, 100.0, 110.0, 120.0]).unwrap();
    let (five_reps, bound) = th.allowance(Metric::HandoffP50, &wide, &wide);
    assert!((five_reps - 35.25).abs() < 0.05, "{five_reps}");
    assert_eq!(bound, compare::Bound::Spread);
    let wide50 = Spread::of((0..50).flat_map(|_| [80.0, 90.0, 110.0, 120.0]).collect()).unwrap();
    let (many, _) = th.allowance(Metric::HandoffP50, &wide50, &wide50);
    assert!(many < five_reps - 5.0, "{many} vs {five_reps}");
    let tight = Spread::of(vec![100.0; 5]).unwrap();
    let (one_sided, _) = th.allowance(Metric::HandoffP50, &wide, &tight);
    assert!((one_sided - 25.0).abs() < 0.1, "{one_sided}");
    // Twice as fast: improved, and the gate passes.
    let calm = baseline_of(&five(0.02, 1.0));
    let fast = compare(Some(&calm), &aggregate(&five(0.02, 0.5)), None, &th).unwrap();
    assert!(fast.passed());
    assert_eq!(verdicts(&fast, "throughput"), [Judgement::Improved]);
    assert_eq!(verdicts(&fast, "handoff_p50"), [Judgement::Improved]);
}

#[test]
fn more_wakeups_per_acquisition_past_ten_percent_fail() {
    let herd = |w: f64| {
        (1..=3)
            .map(|r| rep(Strategy::Herd, r, 50.0, 90_000, 9_000, w))
            .collect::<Vec<_>>()
    };
    let base = baseline_of(&herd(10.0));
    let th = Thresholds::default();
    let ok = compare(Some(&base), &aggregate(&herd(10.9)), None, &th).unwrap();
    assert_eq!(verdicts(&ok, "wakeups_per_acquisition"), [Judgement::Pass]);
    let bad = compare(Some(&base), &aggregate(&herd(11.2)), None, &th).unwrap();
    assert_eq!(
        verdicts(&bad, "wakeups_per_acquisition"),
        [Judgement::Regressed]
    );
}

#[test]
fn safety_is_strict_and_the_evidence_names_the_history_lines() {
    let base = baseline_of(&five(0.02, 1.0));
    let mut cur = five(0.02, 1.0);
    let mut s = safety(SafetyVerdict::Unsafe, Expect::Safe);
    s.violations.push(Violation {
        checker: "mutual_exclusion".into(),
        class: Some("granted_twice".into()),
        what: "clients 1 and 3 held lock k at once".into(),
        key: Some("k".into()),
        clients: vec![1, 3],
        tokens: vec![],
        t_us: vec![10, 20],
        lines: vec![41, 57],
    });
    cur[3].safety = Some(s);
    let o = compare(Some(&base), &aggregate(&cur), None, &Thresholds::default()).unwrap();
    assert!(!o.passed());
    let row = o.rows.iter().find(|r| r.metric == "safety").unwrap();
    assert_eq!(row.verdict, Judgement::Unsafe);
    // 0 of 5 unsafe: 0–43 %; 1 of 5: 4–62 % (src/stats/rates_tests.rs works them out).
    assert_eq!(row.baseline, "safe 5/5 (unsafe 0–43 %)");
    assert_eq!(row.current, "unsafe 1/5 (unsafe 4–62 %)");
    assert_eq!(
        row.evidence.as_deref(),
        Some(
            "cells/etcd-predecessor-w-c4-r4/history.jsonl line 41, 57 (mutual_exclusion): \
             clients 1 and 3 held lock k at once"
        )
    );
    let junit = output::junit(&o);
    let doc = roxmltree::Document::parse(&junit).expect("well-formed JUnit");
    let failures: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .collect();
    assert_eq!(failures.len(), 1);
    assert!(failures[0].text().unwrap().contains("line 41, 57"));
    assert_eq!(
        doc.root_element().attribute("tests"),
        Some(o.rows.len().to_string().as_str())
    );

    // A cell the workload expects unsafe may be unsafe, unless the baseline was safe.
    let mut expected_unsafe = cur.clone();
    for c in &mut expected_unsafe {
        c.safety.as_mut().unwrap().expected = Expect::Unsafe;
    }
    let mut unsafe_base = five(0.02, 1.0);
    for c in &mut unsafe_base {
        c.safety = Some(safety(SafetyVerdict::Unsafe, Expect::Unsafe));
    }
    let o = compare(
        Some(&baseline_of(&unsafe_base)),
        &aggregate(&expected_unsafe),
        None,
        &Thresholds::default(),
    )
    .unwrap();
    assert!(o.passed(), "{}", output::markdown(&o));
    // Against a baseline safe in 5 of 5, one unsafe repetition of 5 is no evidence of a
    // change: 4–62 % overlaps 0–43 %.
    let o = compare(
        Some(&base),
        &aggregate(&expected_unsafe),
        None,
        &Thresholds::default(),
    )
    .unwrap();
    assert!(o.passed(), "{}", output::markdown(&o));
    let row = o.rows.iter().find(|r| r.metric == "safety").unwrap();
    assert_eq!(
        row.threshold,
        "expected unsafe; rates within the baseline's (Wilson 95 % intervals overlap)"
    );

    // Without a baseline: the safety gate alone, one row per cell.
    let o = compare(None, &aggregate(&cur), None, &Thresholds::default()).unwrap();
    assert_eq!(o.rows.len(), 1);
    assert_eq!(o.rows[0].verdict, Judgement::Unsafe);
    assert_eq!(o.rows[0].threshold, "expected safe");
    let calm = compare(
        None,
        &aggregate(&five(0.02, 3.0)),
        None,
        &Thresholds::default(),
    )
    .unwrap();
    assert!(calm.passed(), "speed is not judged without a baseline");
    let o = compare(
        None,
        &aggregate(&expected_unsafe),
        None,
        &Thresholds::default(),
    )
    .unwrap();
    assert!(o.passed(), "expected unsafe and unsafe");
}

#[test]
fn missing_cells_and_new_cells_and_faulted_cells() {
    let mut both = five(0.02, 1.0);
    both.extend((1..=3).map(|r| rep(Strategy::Herd, r, 50.0, 90_000, 9_000, 10.0)));
    let base = baseline_of(&both);
    let e = compare(
        Some(&base),
        &aggregate(&five(0.02, 1.0)),
        None,
        &Thresholds::default(),
    )
    .unwrap_err();
    assert!(
        matches!(e, GateError::MissingCells(ref m) if m == &["etcd-herd-w-c4"]),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("lacks 1 baseline cell(s): etcd-herd-w-c4"),
        "{e}"
    );

    // A cell the baseline lacks: noted, its safety still gated.
    let only_pred = baseline_of(&five(0.02, 1.0));
    let o = compare(
        Some(&only_pred),
        &aggregate(&both),
        None,
        &Thresholds::default(),
    )
    .unwrap();
    assert!(o.passed());
    assert!(
        o.notes[0].starts_with("etcd-herd-w-c4: not in the baseline"),
        "{:?}",
        o.notes
    );

    // Under a fault schedule the speed is reported, not gated.
    let faulted = |slow: f64| {
        let mut c = five(0.02, slow);
        for s in &mut c {
            s.id.chaos = "kill-leader".into();
        }
        c
    };
    let o = compare(
        Some(&baseline_of(&faulted(1.0))),
        &aggregate(&faulted(2.0)),
        None,
        &Thresholds::default(),
    )
    .unwrap();
    assert!(o.passed());
    assert!(matches!(
        verdicts(&o, "throughput")[0],
        Judgement::NotGated(_)
    ));
}

#[test]
fn thresholds_parse_or_say_what_to_write() {
    assert_eq!(
        parse_threshold("throughput=30").unwrap(),
        (Metric::Throughput, 30.0)
    );
    assert_eq!(
        parse_threshold("acquire_p99=12.5%").unwrap(),
        (Metric::AcquireP99, 12.5)
    );
    let e = parse_threshold("p99=30").unwrap_err();
    assert!(
        e.contains("throughput, acquire_p99, handoff_p50, wakeups_per_acquisition"),
        "{e}"
    );
    assert!(
        parse_threshold("throughput")
            .unwrap_err()
            .contains("NAME=PERCENT")
    );
    assert!(parse_threshold("throughput=-5").is_err());
    assert!(parse_threshold("throughput=abc").is_err());
}

#[test]
fn baselines_round_trip_and_other_schemas_are_refused() {
    let dir = std::env::temp_dir().join(format!("lockbench-gate-unit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("nested").join("b.json");
    let b = baseline_of(&five(0.02, 1.0));
    b.save(&path).unwrap();
    assert_eq!(Baseline::load(&path).unwrap(), b);
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"schema_version\": 2", "\"schema_version\": 99");
    std::fs::write(&path, text).unwrap();
    let e = Baseline::load(&path).unwrap_err();
    assert!(matches!(e, GateError::Schema(_)), "{e}");
    assert!(e.to_string().contains("baseline schema_version 99"), "{e}");
    std::fs::write(&path, "{}").unwrap();
    assert!(
        Baseline::load(&path)
            .unwrap_err()
            .to_string()
            .contains("not a lockbench baseline")
    );
    let e = Baseline::load(&dir.join("absent.json"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("lockbench baseline save"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Four systems' predecessor cells (five repetitions each, ±2 %), each `slow`-times slower
/// than the hand-made centre.
fn suite_of(slows: [f64; 4]) -> Vec<CellSummary> {
    [
        System::Zookeeper,
        System::Etcd,
        System::Redis,
        System::Redlock,
    ]
    .into_iter()
    .zip(slows)
    .flat_map(|(system, slow)| {
        five(0.02, slow).into_iter().map(move |mut s| {
            s.id.system = system;
            s
        })
    })
    .collect()
}

#[test]
fn normalizing_divides_out_a_slower_machine_but_not_one_system_slower_than_the_rest() {
    let base = baseline_of(&suite_of([1.0; 4]));
    // A host 40 % slower for everything, and etcd 50 % slower still.
    let current = aggregate(&suite_of([1.4, 1.4 * 1.5, 1.4, 1.4]));
    let raw = compare(Some(&base), &current, None, &Thresholds::default()).unwrap();
    assert_eq!(
        verdicts(&raw, "handoff_p50"),
        vec![Judgement::Regressed; 4],
        "as measured, every cell looks slower"
    );
    let th = Thresholds {
        normalize: Some(2.0),
        ..Thresholds::default()
    };
    let o = compare(Some(&base), &current, None, &th).unwrap();
    let md = output::markdown(&o);
    assert_eq!(
        cells_and_verdicts(&o, "handoff_p50"),
        [
            ("suite (machine factor)", Judgement::Pass),
            ("zookeeper-predecessor-w-c4", Judgement::Pass),
            ("etcd-predecessor-w-c4", Judgement::Regressed),
            ("redis-predecessor-w-c4", Judgement::Pass),
            ("redlock-predecessor-w-c4", Judgement::Pass),
        ],
        "{md}"
    );
    // The factor is the median of the four ratios: (1.4 + 1.4) / 2 for latencies.
    assert!(
        md.contains("| suite (machine factor) | handoff_p50 | ×1 | ×1.400 (median of 4 cells) | +40.0 % | +100.0 % (machine limit ×2) | pass |"),
        "{md}"
    );
    assert!(md.contains("+50.0 % (raw +110.0 %)"), "{md}");
    assert!(md.contains("handoff_p50 ×1.400"), "{md}");
    // A uniform slowdown past the limit is not a machine any more: the suite rows fail.
    let uniform = compare(Some(&base), &aggregate(&suite_of([2.5; 4])), None, &th).unwrap();
    let suite: Vec<Judgement> = uniform
        .rows
        .iter()
        .filter(|r| r.cell.starts_with("suite"))
        .map(|r| r.verdict.clone())
        .collect();
    assert_eq!(
        suite[..3],
        vec![Judgement::Regressed; 3],
        "{}",
        output::markdown(&uniform)
    );
    // Fewer than three cells: no factor, said so, compared as measured.
    let few = compare(
        Some(&baseline_of(&five(0.02, 1.0))),
        &aggregate(&five(0.02, 1.4)),
        None,
        &th,
    )
    .unwrap();
    assert!(!few.rows.iter().any(|r| r.cell.starts_with("suite")));
    assert!(few.notes.iter().any(|n| n.contains("no machine factor")));
    assert_eq!(verdicts(&few, "handoff_p50"), [Judgement::Regressed]);
}

/// `n` repetitions (±2 %) of `<system>-<strategy>-w-c4` around the given medians: throughput
/// per second, p99 and handoff p50 in milliseconds, wake-ups per acquisition.
fn cell_of(
    system: System,
    strategy: Strategy,
    n: u32,
    [x, p99_ms, handoff_ms, wakeups]: [f64; 4],
) -> Vec<CellSummary> {
    (0..n)
        .map(|i| {
            let f = 1.0 + 0.02 * (i as f64 - (n - 1) as f64 / 2.0) / n as f64;
            let mut s = rep(
                strategy,
                i + 1,
                x * f,
                (p99_ms * 1000.0 * f) as u64,
                (handoff_ms * 1000.0 * f) as u64,
                wakeups,
            );
            s.id.system = system;
            s
        })
        .collect()
}

/// `.ci/run`'s gate options (`CI_GATE_THRESHOLDS`), grouped `by`.
fn ci_thresholds(by: machine::Grouping) -> Thresholds {
    Thresholds {
        normalize: Some(3.0),
        normalize_by: by,
        ..Thresholds::with(
            &[
                parse_threshold("throughput=40").unwrap(),
                parse_threshold("acquire_p99=100").unwrap(),
                parse_threshold("handoff_p50=80").unwrap(),
                parse_threshold("wakeups_per_acquisition=15").unwrap(),
            ],
            3.0,
        )
    }
}

/// The CI run of 2026-12-04 that failed on Redlock herd on a slower host: each cell's
/// baseline medians (9 repetitions) and current medians (3, Redlock's 8 after the rerun), with
/// `redlock_herd_x` the current Redlock herd throughput (38.0 in that run).
fn ci_run_of_2026_12_04(redlock_herd_x: f64) -> (Vec<CellSummary>, Vec<CellSummary>) {
    use Strategy::{Herd as H, Predecessor as P};
    const ZK: System = System::Zookeeper;
    const ETCD: System = System::Etcd;
    const REDIS: System = System::Redis;
    const RL: System = System::Redlock;
    let rl_x = redlock_herd_x;
    type Medians = [f64; 4];
    #[rustfmt::skip]
    let cells: [(System, Strategy, Medians, Medians, u32); 8] = [
        (ZK, H, [48.5, 1213.44, 13.57, 9.78], [28.1, 2406.40, 21.86, 7.58], 3),
        (ZK, P, [114.4, 170.88, 4.32, 1.0], [88.6, 212.74, 6.86, 1.0], 3),
        (ETCD, H, [57.7, 1059.84, 11.51, 12.38], [34.6, 1625.09, 19.63, 11.71], 3),
        (ETCD, P, [92.1, 203.52, 7.17, 1.0], [71.2, 240.13, 9.39, 1.0], 3),
        (REDIS, H, [220.5, 403.71, 1.39, 14.74], [177.7, 721.41, 2.43, 13.67], 3),
        (REDIS, P, [234.0, 74.30, 1.08, 1.0], [208.6, 86.02, 1.58, 1.0], 3),
        (RL, H, [88.0, 612.86, 5.95, 12.60], [rl_x, 1284.61, 15.95, 12.54], 8),
        (RL, P, [183.0, 99.90, 2.16, 1.0], [133.7, 131.36, 4.03, 1.0], 8),
    ];
    let mut base = Vec::new();
    let mut current = Vec::new();
    for (system, strategy, b, c, n) in cells {
        base.extend(cell_of(system, strategy, 9, b));
        current.extend(cell_of(system, strategy, n, c));
    }
    (base, current)
}

#[test]
fn normalizing_by_strategy_holds_a_herd_cell_against_herd_cells() {
    let ci = ci_thresholds;
    let (base, current) = ci_run_of_2026_12_04(38.0);
    let base = baseline_of(&base);
    let current = aggregate(&current);
    let row = |o: &Outcome, cell: &str, metric: &str| {
        o.rows
            .iter()
            .find(|r| r.cell == cell && r.metric == metric)
            .unwrap_or_else(|| panic!("no row {cell} {metric}:\n{}", output::markdown(o)))
            .clone()
    };
    // One factor for the suite: that CI run's verdict, Redlock herd −42.6 % against −40 %.
    let suite = compare(Some(&base), &current, None, &ci(machine::Grouping::Suite)).unwrap();
    let md = output::markdown(&suite);
    let rh = row(&suite, "redlock-herd-w-c4", "throughput");
    assert_eq!(rh.verdict, Judgement::Regressed, "{md}");
    assert!(rh.change.starts_with("-42.6 %"), "{md}");
    assert_eq!(suite.failures(), 1, "{md}");
    // One factor per strategy: the herd's is the median of the four herd cells (0.590 in
    // throughput), and Redlock herd is −26.7 % against it (−26.8 % with these repetitions'
    // jitter); every row passes.
    let by = compare(
        Some(&base),
        &current,
        None,
        &ci(machine::Grouping::Strategy),
    )
    .unwrap();
    let md = output::markdown(&by);
    assert!(by.passed(), "{md}");
    assert!(
        row(&by, "redlock-herd-w-c4", "throughput")
            .change
            .starts_with("-26."),
        "{md}"
    );
    for group in ["suite (machine factor)", "suite: herd (machine factor)"] {
        assert_eq!(
            row(&by, group, "throughput").verdict,
            Judgement::Pass,
            "{md}"
        );
    }
    assert!(
        row(&by, "suite: herd (machine factor)", "throughput")
            .current
            .starts_with("×0.590 (median of 4 cells)"),
        "{md}"
    );
    assert!(
        row(&by, "suite: predecessor (machine factor)", "throughput")
            .current
            .starts_with("×0.774 (median of 4 cells)"),
        "{md}"
    );
    assert!(md.contains("8 cells: 0 regressed"), "{md}");
    assert!(
        by.notes
            .iter()
            .any(|n| n.starts_with("normalized by strategy")),
        "{md}"
    );
    // A cell slower than its strategy's factor by more than the floor fails, and alone.
    let fails_alone = |current: &[CellSummary], cell: &str, metric: &str| {
        let o = compare(
            Some(&base),
            &aggregate(current),
            None,
            &ci(machine::Grouping::Strategy),
        )
        .unwrap();
        let md = output::markdown(&o);
        assert_eq!(row(&o, cell, metric).verdict, Judgement::Regressed, "{md}");
        assert_eq!(o.failures(), 1, "{md}");
    };
    // A herd cell: Redlock herd at 20.9/s (−59.7 % against the herd's factor) ...
    let (_, slower) = ci_run_of_2026_12_04(20.9);
    fails_alone(&slower, "redlock-herd-w-c4", "throughput");
    // ... and a predecessor cell: etcd predecessor's handoff 2.5 times as slow (+90 %
    // against the predecessors' factor, which its own rise moves from ×1.53 to ×1.73: with
    // four cells a group's median is the mean of the middle two; twice as slow, +52 %, is
    // inside CI's +80 % floor, as it was against the suite's factor).
    let (_, mut planted) = ci_run_of_2026_12_04(38.0);
    for s in planted
        .iter_mut()
        .filter(|s| s.id.system == System::Etcd && s.id.strategy == Strategy::Predecessor)
    {
        s.handoff_latency_us.p50 = s.handoff_latency_us.p50 * 5 / 2;
    }
    fails_alone(&planted, "etcd-predecessor-w-c4", "handoff_p50");
}

#[test]
fn a_strategy_with_too_few_cells_takes_the_suites_factor() {
    // Four predecessor cells 40 % slower and one herd cell 40 % slower still: the herd has no
    // factor of its own (one cell), so it is held against the suite's and fails.
    let mut base = suite_of([1.0; 4]);
    let mut current = suite_of([1.4; 4]);
    let herd = |slow: f64| {
        five(0.02, slow).into_iter().map(|mut s| {
            s.id.strategy = Strategy::Herd;
            s
        })
    };
    base.extend(herd(1.0));
    current.extend(herd(1.4 * 1.4));
    let th = Thresholds {
        normalize: Some(2.0),
        normalize_by: machine::Grouping::Strategy,
        ..Thresholds::default()
    };
    let o = compare(Some(&baseline_of(&base)), &aggregate(&current), None, &th).unwrap();
    let md = output::markdown(&o);
    assert_eq!(
        cells_and_verdicts(&o, "handoff_p50"),
        [
            ("suite (machine factor)", Judgement::Pass),
            ("suite: predecessor (machine factor)", Judgement::Pass),
            ("zookeeper-predecessor-w-c4", Judgement::Pass),
            ("etcd-predecessor-w-c4", Judgement::Pass),
            ("redis-predecessor-w-c4", Judgement::Pass),
            ("redlock-predecessor-w-c4", Judgement::Pass),
            ("etcd-herd-w-c4", Judgement::Regressed),
        ],
        "{md}"
    );
    assert!(md.contains("+40.0 % (raw +96.0 %)"), "{md}");
}

#[test]
fn a_layout_1_baseline_is_upgraded_to_the_bookworm_versions_it_measured_and_gates_again() {
    let dir = std::env::temp_dir().join(format!("lb-upgrade-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("old.json");
    std::fs::write(&file, include_str!("testdata/baseline-v1.json")).unwrap();
    // Refused as it is, with the command that converts it.
    let refused = Baseline::load(&file).unwrap_err().to_string();
    assert!(refused.contains("lockbench baseline upgrade"), "{refused}");
    let said = baseline::upgrade_file(&file).unwrap();
    assert!(said.contains("converted from layout 1"), "{said}");
    let b = Baseline::load(&file).unwrap();
    assert_eq!(b.schema_version, baseline::BASELINE_SCHEMA);
    let zk = b
        .cells
        .iter()
        .find(|c| c.id.system == System::Zookeeper)
        .unwrap();
    assert_eq!(zk.id.version.as_deref(), Some("3.8"));
    assert!(zk.cell.starts_with("zookeeper@3.8-"), "{}", zk.cell);
    let redis = b
        .cells
        .iter()
        .find(|c| c.id.system == System::Redis)
        .unwrap();
    assert_eq!(redis.id.version.as_deref(), Some("7.0"));
    // Its figures are untouched, and a second upgrade changes nothing.
    assert!(!zk.metrics.is_empty());
    assert!(
        baseline::upgrade_file(&file)
            .unwrap()
            .contains("already layout")
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Five repetitions of a cell expected unsafe: the first `unsafe_reps` unsafe, each of those
/// with `twice` overlaps granted twice and `lost` lost updates.
fn expected_unsafe(unsafe_reps: u32, twice: u64, lost: u64) -> Vec<CellSummary> {
    let mut cells = five(0.02, 1.0);
    for (i, c) in cells.iter_mut().enumerate() {
        let mut s = safety(SafetyVerdict::Safe, Expect::Unsafe);
        if (i as u32) < unsafe_reps {
            s.verdict = SafetyVerdict::Unsafe;
            s.overlaps.granted_twice = twice;
            s.lost_updates = lost;
        }
        c.safety = Some(s);
    }
    cells
}

#[test]
fn a_rate_fails_only_when_its_interval_lies_wholly_above_the_baselines() {
    let gate = |base: &[CellSummary], cur: &[CellSummary]| {
        let o = compare(
            Some(&baseline_of(base)),
            &aggregate(cur),
            None,
            &Thresholds::default(),
        )
        .unwrap();
        o.rows.into_iter().find(|r| r.metric == "safety").unwrap()
    };
    // Unsafe in 5 of 5 (57–100 %) against 0 of 5 (0–43 %): apart, so it fails.
    let row = gate(&expected_unsafe(0, 0, 0), &expected_unsafe(5, 1, 0));
    assert_eq!(row.verdict, Judgement::Unsafe);
    assert_eq!(
        row.threshold,
        "rate rose: unsafe 5 of 5 (57–100 %) against 0 of 5 (0–43 %); granted twice 5 of 5 \
         (57–100 %) against 0 of 5 (0–43 %)"
    );
    // 2 of 5 (12–77 %) against 0 of 5: they overlap, so it passes.
    let row = gate(&expected_unsafe(0, 0, 0), &expected_unsafe(2, 1, 0));
    assert_eq!(row.verdict, Judgement::Pass, "{row:?}");
    // The same unsafe rate, 5 of 5 both, but a class of finding that never showed now shows
    // in every repetition: the lock breaks in a new way.
    let row = gate(&expected_unsafe(5, 0, 3), &expected_unsafe(5, 2, 3));
    assert_eq!(row.verdict, Judgement::Unsafe);
    assert_eq!(
        row.threshold,
        "rate rose: granted twice 5 of 5 (57–100 %) against 0 of 5 (0–43 %)"
    );
    // A baseline saved before rates were has its verdicts only: the unsafe rate is still
    // judged, the classes are not.
    let mut old = baseline_of(&expected_unsafe(5, 0, 3));
    old.cells[0].rates = None;
    let o = compare(
        Some(&old),
        &aggregate(&expected_unsafe(5, 2, 3)),
        None,
        &Thresholds::default(),
    )
    .unwrap();
    assert!(o.passed(), "{}", output::markdown(&o));
    // Falling wholly below is reported, never failed.
    let row = gate(&expected_unsafe(5, 1, 0), &expected_unsafe(0, 0, 0));
    assert_eq!(row.verdict, Judgement::Improved);
    // A cell expected safe fails on any violation, whatever the intervals.
    let mut one = five(0.02, 1.0);
    one[0].safety = Some(safety(SafetyVerdict::Unsafe, Expect::Safe));
    let row = gate(&five(0.02, 1.0), &one);
    assert_eq!(row.verdict, Judgement::Unsafe);
    assert_eq!(row.threshold, "expected safe");
}

/// The smoke matrix's medians on two hosts: `results/baselines/ci-smoke.json` (9 repetitions,
/// 2026-12-06) and the CI run of 2026-12-07 on a host about twice as fast (3 repetitions), as
/// [throughput, p99 ms, handoff p50 ms, wake-ups] per cell.
#[rustfmt::skip]
const SLOW_AND_FAST_HOST: [(System, Strategy, [f64; 4], [f64; 4]); 8] = [
    (System::Zookeeper, Strategy::Herd, [45.1, 1466.37, 14.42, 8.98], [107.9, 988.67, 4.52, 12.38]),
    (System::Zookeeper, Strategy::Predecessor, [97.4, 192.51, 5.84, 1.0], [177.1, 104.70, 2.04, 1.0]),
    (System::Etcd, Strategy::Herd, [52.8, 1222.65, 13.24, 12.19], [139.6, 724.99, 3.83, 13.79]),
    (System::Etcd, Strategy::Predecessor, [89.8, 192.00, 7.08, 1.0], [174.4, 96.58, 2.58, 1.0]),
    (System::Redis, Strategy::Herd, [189.4, 515.07, 1.99, 14.59], [258.7, 379.13, 0.71, 14.56]),
    (System::Redis, Strategy::Predecessor, [207.3, 88.38, 1.52, 1.0], [268.2, 65.06, 0.53, 1.0]),
    (System::Redlock, Strategy::Herd, [55.9, 1042.43, 10.02, 12.71], [173.3, 376.06, 2.25, 13.45]),
    (System::Redlock, Strategy::Predecessor, [149.6, 120.77, 3.08, 1.0], [238.8, 73.47, 1.00, 1.0]),
];

/// The cells of [`SLOW_AND_FAST_HOST`], `n` repetitions each, on the slow host or the fast one.
fn host_run(fast: bool, n: u32) -> Vec<CellSummary> {
    SLOW_AND_FAST_HOST
        .iter()
        .flat_map(|&(system, strategy, slow, quick)| {
            cell_of(system, strategy, n, if fast { quick } else { slow })
        })
        .collect()
}

#[test]
fn several_baselines_compare_with_the_one_from_the_most_similar_host() {
    let th = ci_thresholds(machine::Grouping::Strategy);
    let slow = baseline_of(&host_run(false, 9));
    let fast = baseline_of(&host_run(true, 9));
    let on_fast = aggregate(&host_run(true, 3));
    // Against the slow host's baseline alone, the fast host's run fails as that CI run did:
    // Redis herd gained ×1.37 where the herd's factor is ×2.5.
    let alone = compare(Some(&slow), &on_fast, None, &th).unwrap();
    let md = output::markdown(&alone);
    let failed: Vec<(&str, &str)> = alone
        .rows
        .iter()
        .filter(|r| r.verdict.fails())
        .map(|r| (r.cell.as_str(), r.metric.as_str()))
        .collect();
    assert_eq!(
        failed,
        [
            ("zookeeper-herd-w-c4", "wakeups_per_acquisition"),
            ("redis-herd-w-c4", "throughput")
        ],
        "{md}"
    );
    // With both, each host's run meets its own host's baseline.
    let both = [slow.clone(), fast.clone()];
    let (best, d) = nearest::nearest(&both, &on_fast);
    assert_eq!(best, 1, "{d:?}");
    assert!(d[1].unwrap() < 0.05 && d[0].unwrap() > 0.4, "{d:?}");
    let on_slow = aggregate(&host_run(false, 3));
    let (best, d) = nearest::nearest(&both, &on_slow);
    assert_eq!(best, 0, "{d:?}");
    // A regression is still caught against the chosen baseline: Redis herd at half the fast
    // host's throughput.
    let mut slower = host_run(true, 3);
    for s in slower
        .iter_mut()
        .filter(|s| s.id.system == System::Redis && s.id.strategy == Strategy::Herd)
    {
        s.throughput_per_s /= 2.0;
    }
    let slower = aggregate(&slower);
    let (best, _) = nearest::nearest(&both, &slower);
    assert_eq!(best, 1);
    let o = compare(Some(&both[best]), &slower, None, &th).unwrap();
    let md = output::markdown(&o);
    assert!(
        o.rows.iter().any(|r| r.cell == "redis-herd-w-c4"
            && r.metric == "throughput"
            && r.verdict == Judgement::Regressed),
        "{md}"
    );
}

#[test]
fn a_second_baseline_without_normalize_is_refused_before_anything_is_read() {
    let paths = [PathBuf::from("a.json"), PathBuf::from("b.json")];
    let e = gate(&paths, &[PathBuf::from("run")], &Thresholds::default()).unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("b.json: ") && text.contains("--normalize"),
        "{text}"
    );
}
