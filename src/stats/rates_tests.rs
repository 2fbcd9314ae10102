//! Rates over hand-made repetitions; every interval worked out by hand below.
//!
//! Wilson's 95 % interval of k of n, z = 1.959964, z² = 3.841459:
//! centre = (p + z²/2n) / (1 + z²/n), half = z·√(p(1−p)/n + z²/4n²) / (1 + z²/n).
//! - 7 of 10: p = 0.7, 1 + z²/n = 1.384146, centre = 0.892073 / 1.384146 = 0.644493;
//!   √(0.021 + 0.009604) = 0.174940, half = 0.342876 / 1.384146 = 0.247716:
//!   0.396777–0.892209, "40–89 %" (the interval the guide quotes).
//! - 0 of 5: p = 0, 1 + z²/n = 1.768292, centre = 0.384146 / 1.768292 = 0.217241;
//!   √(0.038415) = 0.195996, half = 0.384146 / 1.768292 = 0.217241: 0–0.434482.
//! - 5 of 5: the mirror of 0 of 5: 0.565518–1.
//! - 1 of 5: p = 0.2, centre = 0.584146 / 1.768292 = 0.330345; √(0.032 + 0.038415) =
//!   0.265358, half = 0.520092 / 1.768292 = 0.294121: 0.036224–0.624466.
//! - 2 of 3: p = 2/3, 1 + z²/n = 2.280486, centre = 1.306910 / 2.280486 = 0.573084;
//!   √(0.074074 + 0.106707) = 0.425183, half = 0.833344 / 2.280486 = 0.365424:
//!   0.207660–0.938508.

use super::rates::{Rate, rates};
use crate::results::testkit::cell;
use crate::results::{CellSummary, FaultWindow, Safety, SafetyVerdict};

fn near(got: f64, want: f64) {
    assert!((got - want).abs() < 1e-5, "got {got}, want {want}");
}

fn interval(k: u32, n: u32) -> (f64, f64) {
    let r = Rate::of(k, n);
    assert_eq!((r.k, r.n), (k, n));
    (r.low, r.high)
}

#[test]
fn wilson_intervals_are_the_hand_worked_ones() {
    let (lo, hi) = interval(7, 10);
    near(lo, 0.396777);
    near(hi, 0.892209);
    assert_eq!(
        Rate::of(7, 10).describe("unsafe"),
        "unsafe in 7 of 10 (95 % interval 40–89 %)"
    );
    assert_eq!(interval(0, 5).0, 0.0, "exactly 0 at 0 of n");
    near(interval(0, 5).1, 0.434482);
    near(interval(5, 5).0, 0.565518);
    assert_eq!(interval(5, 5).1, 1.0, "exactly 1 at n of n");
    near(interval(1, 5).0, 0.036224);
    near(interval(1, 5).1, 0.624466);
    near(interval(2, 3).0, 0.207660);
    near(interval(2, 3).1, 0.938508);
    assert_eq!(interval(0, 0), (0.0, 1.0), "nothing judged: nothing known");
}

#[test]
fn a_rate_rises_only_when_its_interval_lies_wholly_above() {
    // 5 of 5 (0.5655–1) against 0 of 5 (0–0.4345): apart.
    assert!(Rate::of(5, 5).rose_above(&Rate::of(0, 5)));
    // 1 of 5 (0.0362–0.6245) against 0 of 5: they overlap.
    assert!(!Rate::of(1, 5).rose_above(&Rate::of(0, 5)));
    // 7 of 10 (0.3968–0.8922) against 0 of 5 (upper 0.4345): overlap, though 70 % against 0.
    assert!(!Rate::of(7, 10).rose_above(&Rate::of(0, 5)));
    // Falling is never rising.
    assert!(!Rate::of(0, 5).rose_above(&Rate::of(5, 5)));
}

/// Repetition `r` with `verdict` and `granted_twice` overlaps, and fault windows recovering
/// after the given ms (`None`: no grant followed).
fn rep(
    r: u32,
    verdict: Option<SafetyVerdict>,
    twice: u64,
    recoveries: &[Option<f64>],
) -> CellSummary {
    let mut info = cell(4);
    info.id.chaos = "kill-leader".into();
    info.id.repetition = Some(r);
    let mut s = crate::stats::analyze_events(&[], &info).summary;
    s.safety = verdict.map(|v| {
        let mut x = Safety::of(&[], v, Default::default());
        x.overlaps.granted_twice = twice;
        x
    });
    s.faults = recoveries.iter().map(|&ms| window(ms)).collect();
    s
}

fn window(recovery_ms: Option<f64>) -> FaultWindow {
    serde_json::from_value(serde_json::json!({
        "kind": "kill", "targets": ["n1"], "start_us": 1, "end_us": 2, "started": true,
        "error": null, "first_grant_ms": null, "recovery_ms": recovery_ms, "acquisitions": 0,
        "verdict": "safe", "overlaps": 0, "possible_overlaps": 0, "lost_updates": 0,
        "stale_accesses_rejected": 0, "token_regressions": 0, "lost_leases": 0, "errors": {}
    }))
    .expect("a fault window")
}

#[test]
fn verdicts_classes_and_recovery_over_repetitions() {
    use SafetyVerdict::{Safe, Unknown, Unsafe};
    let reps = [
        rep(1, Some(Unsafe), 2, &[Some(1500.0), Some(900.0)]),
        rep(2, Some(Safe), 0, &[Some(1200.0)]),
        rep(3, Some(Unsafe), 1, &[None]),
        rep(4, Some(Unknown), 0, &[Some(2100.0)]),
        rep(5, None, 0, &[]),
    ];
    let refs: Vec<&CellSummary> = reps.iter().collect();
    let r = rates(&refs);
    assert_eq!(
        (r.safe, r.unsafe_, r.unknown),
        (1, 2, 2),
        "no safety counts as unknown"
    );
    assert_eq!((r.unsafe_rate.k, r.unsafe_rate.n), (2, 5));
    // Granted twice in 2 of the 4 repetitions with a verdict, 3 overlaps in all.
    let twice = r.classes["granted_twice"];
    assert_eq!((twice.rate.k, twice.rate.n, twice.total), (2, 4, 3));
    assert_eq!(r.classes["lost_updates"].rate.k, 0);
    // A mutex cell has no semaphore classes.
    assert!(!r.classes.contains_key("over_permits"));
    // Five windows started; four recovered: 900, 1200, 1500, 2100 → median (1200 + 1500) / 2.
    let rec = r.recovery.expect("windows");
    assert_eq!((rec.windows, rec.recovered), (5, 4));
    assert_eq!(rec.median_ms, Some(1350.0));
    assert_eq!((rec.min_ms, rec.max_ms), (Some(900.0), Some(2100.0)));
    assert_eq!(
        rec.describe(),
        "median 1.35 s, range 0.90–2.10 s over 4 of 5 windows"
    );

    // Written and read back as summary.json holds it.
    let text = serde_json::to_string(&r).unwrap();
    assert!(text.contains("\"unsafe\":2"), "{text}");
    assert_eq!(
        serde_json::from_str::<super::rates::Rates>(&text).unwrap(),
        r
    );

    // Without a fault window that started: no recovery; none recovered: said so.
    assert!(rates(&[&reps[4]]).recovery.is_none());
    let stuck = rates(&[&reps[2]]).recovery.unwrap();
    assert_eq!(stuck.median_ms, None);
    assert_eq!(stuck.describe(), "none of 1 windows recovered");
}
