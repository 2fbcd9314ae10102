//! Fault windows on hand-made histories, through the whole evaluation (so the findings are the
//! real checkers'): pairing, failed starts, open windows, grant and recovery times, and the
//! attribution of findings, lost leases and errors.

use super::*;
use crate::check::testkit::*;
use crate::check::{History, evaluate_history};
use crate::history::{ErrorKind, Event, EventKind};

use EventKind::{Info, Invoke, Ok};

/// The cell's fault windows, as `evaluate_history` fills them into the summary.
fn windows(events: Vec<Event>) -> Vec<FaultWindow> {
    evaluate_history(&History::new(events), cell(4))
        .analysis
        .summary
        .faults
}

/// A window's kind, targets, start, end and whether it started.
type Shape<'a> = (&'a str, Vec<&'a str>, u64, Option<u64>, bool);

/// The [`Shape`] of each window.
fn shapes(ws: &[FaultWindow]) -> Vec<Shape<'_>> {
    ws.iter()
        .map(|w| {
            (
                w.kind.as_str(),
                w.targets.iter().map(String::as_str).collect(),
                w.start_us,
                w.end_us,
                w.started,
            )
        })
        .collect()
}

/// Client 0 granted `key` (token 1) at `t - 10`, client 1 granted it (token 2) at `t` inside
/// that hold: an overlap the mutex checker finds at `t` (both leases of `ttl_ms`).
fn overlap(t: u64, key: &str, ttl_ms: u64) -> Vec<Event> {
    vec![
        invoke(t - 20, 0, key),
        grant(t - 10, 0, key, 1, ttl_ms),
        invoke(t - 5, 1, key),
        grant(t, 1, key, 2, ttl_ms),
        release(t + 10, 1, key),
        release(t + 20, 0, key),
    ]
}

#[test]
fn overlapping_windows_of_different_kinds_and_targets_pair_first_in_first_out() {
    let h = vec![
        fault_on(1_000_000, Invoke, "partition", &["n1"]),
        fault_on(2_000_000, Invoke, "kill", &["n2"]),
        fault_on(2_500_000, Invoke, "pause-node", &["n1"]),
        fault_on(2_600_000, Invoke, "pause-node", &["n3"]),
        fault_on(3_000_000, Ok, "partition", &["n1"]),
        fault_on(3_500_000, Ok, "pause-node", &["n3"]),
        fault_on(4_000_000, Ok, "pause-node", &["n1"]),
        fault_on(5_000_000, Ok, "kill", &["n2"]),
        fault_on(6_000_000, Invoke, "partition", &["n1"]),
        fault_on(7_000_000, Ok, "partition", &["n1"]),
        // The same kind and targets twice at once: the first to start is the first to end.
        fault_on(8_000_000, Invoke, "kill", &["n4"]),
        fault_on(8_500_000, Invoke, "kill", &["n4"]),
        fault_on(9_000_000, Ok, "kill", &["n4"]),
        fault_on(9_500_000, Ok, "kill", &["n4"]),
    ];
    let expected = vec![
        ("partition", vec!["n1"], 1_000_000, Some(3_000_000), true),
        ("kill", vec!["n2"], 2_000_000, Some(5_000_000), true),
        ("pause-node", vec!["n1"], 2_500_000, Some(4_000_000), true),
        ("pause-node", vec!["n3"], 2_600_000, Some(3_500_000), true),
        ("partition", vec!["n1"], 6_000_000, Some(7_000_000), true),
        ("kill", vec!["n4"], 8_000_000, Some(9_000_000), true),
        ("kill", vec!["n4"], 8_500_000, Some(9_500_000), true),
    ];
    let ws = windows(h.clone());
    assert_eq!(shapes(&ws), expected);
    assert!(ws.iter().all(|w| w.error.is_none() && w.acquisitions == 0));
    // The file may be in arrival order: the windows come from the time order.
    let mut reversed = h;
    reversed.reverse();
    assert_eq!(shapes(&windows(reversed)), expected);
}

#[test]
fn a_failed_start_never_started_and_a_failed_heal_leaves_the_window_open() {
    let failed = |t, fault: &str, target: &[&str], error: &str| {
        let mut e = fault_on(t, Info, fault, target);
        e.error = Some(error.into());
        e
    };
    let h = vec![
        invoke(100_000, 0, "k"),
        grant(200_000, 0, "k", 1, 100),
        release(300_000, 0, "k"),
        // Nothing to pause: no client 3; written as the nemesis does, at one instant.
        fault_on(700_000, Invoke, "pause-client", &[]),
        failed(700_000, "pause-client", &[], "start: no client 3"),
        // Started half-way, and the undo failed as well.
        fault_on(800_000, Invoke, "kill", &["n1"]),
        failed(900_000, "kill", &["n1"], "start: x; heal: y"),
        // Started, and the heal failed: still in effect.
        fault_on(1_000_000, Invoke, "partition", &["n2"]),
        failed(2_000_000, "partition", &["n2"], "heal: docker unreachable"),
        invoke(2_400_000, 1, "k"),
        grant(2_500_000, 1, "k", 2, 100),
        release(2_600_000, 1, "k"),
    ];
    let ws = windows(h);
    assert_eq!(
        shapes(&ws),
        [
            ("pause-client", vec![], 700_000, Some(700_000), false),
            ("kill", vec!["n1"], 800_000, None, false),
            ("partition", vec!["n2"], 1_000_000, None, true),
        ]
    );
    let errors: Vec<Option<&str>> = ws.iter().map(|w| w.error.as_deref()).collect();
    assert_eq!(
        errors,
        [
            Some("start: no client 3"),
            Some("start: x; heal: y"),
            Some("heal: docker unreachable")
        ]
    );
    // The grant at 2.5 s is the first after every start; only the ended window recovers.
    let firsts: Vec<_> = ws
        .iter()
        .map(|w| (w.first_grant_ms, w.recovery_ms))
        .collect();
    assert_eq!(
        firsts,
        [
            (Some(1800.0), Some(1800.0)),
            (Some(1700.0), None),
            (Some(1500.0), None)
        ]
    );
    // The unhealed windows run to the end of the history (2.6 s): the grant is inside.
    let acq: Vec<u64> = ws.iter().map(|w| w.acquisitions).collect();
    assert_eq!(acq, [0, 1, 1]);
}

#[test]
fn an_open_window_runs_to_the_end_of_the_history() {
    let h = vec![
        fault_on(1_000_000, Invoke, "partition", &["n1"]),
        invoke(1_200_000, 0, "k"),
        grant(1_500_000, 0, "k", 1, 100),
        release(1_600_000, 0, "k"),
        invoke(1_700_000, 1, "k"),
        grant(2_000_000, 1, "k", 2, 100),
        release(2_100_000, 1, "k"),
    ];
    let ws = windows(h);
    assert_eq!(
        shapes(&ws),
        [("partition", vec!["n1"], 1_000_000, None, true)]
    );
    let w = &ws[0];
    assert_eq!(
        (w.first_grant_ms, w.recovery_ms, w.acquisitions),
        (Some(500.0), None, 2)
    );
    assert_eq!(w.verdict, SafetyVerdict::Safe);
}

#[test]
fn first_grant_and_recovery_are_the_first_grants_at_or_after_start_and_end() {
    let h = vec![
        invoke(400_000, 0, "k"),
        grant(500_000, 0, "k", 1, 100), // before the window
        release(600_000, 0, "k"),
        fault_on(1_000_000, Invoke, "kill", &["n1"]),
        invoke(1_100_000, 1, "k"),
        grant(1_250_500, 1, "k", 2, 100), // the first after the start: 250.5 ms
        release(1_300_000, 1, "k"),
        invoke(1_900_000, 0, "k"),
        grant(2_000_000, 0, "k", 3, 100),
        release(2_100_000, 0, "k"),
        invoke(2_200_000, 1, "j"),
        fault_on(3_000_000, Ok, "kill", &["n1"]),
        grant(3_400_250, 1, "j", 1, 100), // the first after the heal: 400.25 ms
        release(3_500_000, 1, "j"),
        fault_on(5_000_000, Invoke, "restart", &["n2"]),
        invoke(5_900_000, 0, "k"),
        fault_on(6_000_000, Ok, "restart", &["n2"]),
        grant(6_000_000, 0, "k", 4, 100), // at the heal's very microsecond: 0 ms, inside
        release(6_100_000, 0, "k"),
    ];
    let ws = windows(h);
    let figures: Vec<_> = ws
        .iter()
        .map(|w| (w.first_grant_ms, w.recovery_ms, w.acquisitions))
        .collect();
    assert_eq!(
        figures,
        [(Some(250.5), Some(400.25), 2), (Some(1000.0), Some(0.0), 1)],
        "{ws:?}"
    );
}

#[test]
fn an_overlap_counts_in_its_window_and_not_in_one_long_before() {
    let mut h = vec![
        fault_on(0, Invoke, "kill", &["n1"]),
        fault_on(100_000, Ok, "kill", &["n1"]),
    ];
    // A clean section of client 0 (writes 1); leases of 1 s, so the settle is 2 s.
    h.extend(section(200_000, 0, "k", 1, 0));
    h.extend([
        fault_on(4_000_000, Invoke, "partition", &["n1"]),
        invoke(4_990_000, 0, "k"),
        grant(5_000_000, 0, "k", 2, 1000),
        read(5_001_000, 0, "k", 2, 1),
        invoke(5_005_000, 1, "k"),
        grant(5_010_000, 1, "k", 3, 1000), // inside client 0's hold: granted twice
        read(5_011_000, 1, "k", 3, 1),
        write(5_015_000, 1, "k", 3, 2),
        release(5_020_000, 1, "k"),
        write(5_025_000, 0, "k", 2, 2), // the second write of 2: an update lost
        release(5_030_000, 0, "k"),
        fault_on(6_000_000, Ok, "partition", &["n1"]),
    ]);
    let ws = windows(h);
    assert_eq!(ws.len(), 2);
    let figures: Vec<_> = ws
        .iter()
        .map(|w| (w.verdict, w.overlaps, w.lost_updates, w.acquisitions))
        .collect();
    assert_eq!(
        figures,
        [
            (SafetyVerdict::Safe, 0, 0, 0),
            (SafetyVerdict::Unsafe, 1, 1, 2)
        ]
    );
    // Healed at 100 ms; client 0's clean section was granted at 200.01 ms.
    assert_eq!(ws[0].recovery_ms, Some(100.01));
}

#[test]
fn a_finding_in_the_settle_after_the_heal_is_the_faults() {
    // Leases of 2 s: the settle is 4 s, so the window [1 s, 2 s] is answerable to 6 s.
    let mut h = vec![
        fault_on(1_000_000, Invoke, "pause-client", &["0"]),
        fault_on(2_000_000, Ok, "pause-client", &["0"]),
    ];
    h.extend(overlap(5_900_000, "a", 2000));
    h.extend(overlap(6_100_000, "b", 2000));
    let ws = windows(h);
    assert_eq!(
        (ws[0].overlaps, ws[0].verdict, ws[0].acquisitions),
        (1, SafetyVerdict::Unsafe, 0)
    );

    // With leases of 200 ms the settle is its floor of 1 s: the span ends at 3 s, so the
    // overlap at that very microsecond is the fault's, the one 100 ms later is not.
    let mut h = vec![
        fault_on(1_000_000, Invoke, "pause-client", &["0"]),
        fault_on(2_000_000, Ok, "pause-client", &["0"]),
    ];
    h.extend(overlap(3_000_000, "a", 200));
    h.extend(overlap(3_100_000, "b", 200));
    let ws = windows(h);
    assert_eq!((ws[0].overlaps, ws[0].verdict), (1, SafetyVerdict::Unsafe));
    assert_eq!(
        super::settle_us(&overlap(100, "a", 200).into()),
        MIN_SETTLE_US
    );
    assert_eq!(super::settle_us(&overlap(100, "a", 2000).into()), 4_000_000);
}

#[test]
fn an_overlap_with_a_holder_granted_before_the_fault_is_the_faults() {
    // Client 0 is granted at 0.5 s and paused at 1 s; its lease (300 ms) runs out and client 1
    // is granted at 1.5 s while client 0 still holds: the overlap happened in the pause.
    let h = vec![
        invoke(400_000, 0, "k"),
        grant(500_000, 0, "k", 1, 300),
        fault_on(1_000_000, Invoke, "pause-client", &["0"]),
        invoke(1_100_000, 1, "k"),
        grant(1_500_000, 1, "k", 2, 300),
        release(1_600_000, 1, "k"),
        fault_on(2_000_000, Ok, "pause-client", &["0"]),
        release(2_100_000, 0, "k"),
    ];
    let ws = windows(h);
    assert_eq!((ws[0].overlaps, ws[0].verdict), (1, SafetyVerdict::Unsafe));
}

#[test]
fn counts_are_complete_beyond_the_evidence_kept() {
    let mut h = vec![fault_on(0, Invoke, "partition", &["n1"])];
    for i in 0..12u64 {
        h.extend(overlap(100_000 * (i + 1), &format!("k{i}"), 1000));
    }
    h.push(fault_on(2_000_000, Ok, "partition", &["n1"]));
    let r = evaluate_history(&History::new(h), cell(2));
    let mutex = &r.verdicts[0];
    assert_eq!(
        (mutex.evidence.len(), mutex.findings.len()),
        (crate::check::MAX_EVIDENCE, 12)
    );
    assert_eq!(r.analysis.summary.faults[0].overlaps, 12);
}

#[test]
fn possible_overlaps_stale_accesses_and_regressions_count_where_they_happened() {
    let h = vec![
        // Window 1 [1 s, 2 s]: client 2's acquisition ends unknown inside client 0's hold.
        fault_on(1_000_000, Invoke, "partition", &["n1"]),
        invoke(1_100_000, 0, "k"),
        grant(1_110_000, 0, "k", 1, 100),
        invoke(1_120_000, 2, "k"),
        info(1_130_000, 2, "k"),
        release(1_200_000, 0, "k"),
        fault_on(2_000_000, Ok, "partition", &["n1"]),
        // Window 2 [10 s, 11 s]: a repeated token, and a stale write refused.
        fault_on(10_000_000, Invoke, "kill", &["n2"]),
        invoke(10_100_000, 0, "k"),
        grant(10_110_000, 0, "k", 3, 100),
        write(10_120_000, 0, "k", 3, 1),
        release(10_150_000, 0, "k"),
        invoke(10_200_000, 1, "k"),
        grant(10_210_000, 1, "k", 3, 100),
        stale_write(10_220_000, 1, "k", 2, 5),
        release(10_300_000, 1, "k"),
        fault_on(11_000_000, Ok, "kill", &["n2"]),
    ];
    let ws = windows(h);
    let figures: Vec<_> = ws
        .iter()
        .map(|w| {
            (
                w.verdict,
                w.overlaps,
                w.possible_overlaps,
                w.token_regressions,
                w.stale_accesses_rejected,
            )
        })
        .collect();
    assert_eq!(
        figures,
        [
            (SafetyVerdict::Unknown, 0, 1, 0, 0),
            (SafetyVerdict::Unsafe, 0, 0, 1, 1)
        ]
    );
    // Client 2's unknown outcome is window 1's error.
    assert_eq!(
        ws[0].errors,
        BTreeMap::from([("connection".to_string(), 1)])
    );
    assert!(ws[1].errors.is_empty());
}

#[test]
fn errors_by_kind_and_lost_leases_within_the_span() {
    let with = |mut e: Event, kind: Option<ErrorKind>, error: Option<&str>| {
        e.error_kind = kind;
        e.error = error.map(str::to_string);
        e
    };
    let h = vec![
        fault_on(1_000_000, Invoke, "partition", &["n1"]),
        invoke(1_100_000, 0, "k"),
        timeout(1_200_000, 0, "k"),
        invoke(1_300_000, 1, "k"),
        info(1_400_000, 1, "k"),
        invoke(1_450_000, 2, "k"),
        // Written before error kinds: a timeout by its text.
        with(
            Event::new(1_500_000, 2, EventKind::Fail, Op::Acquire, "k"),
            None,
            Some("timeout"),
        ),
        invoke(1_600_000, 3, "k"),
        Event::new(1_700_000, 3, EventKind::Fail, Op::Acquire, "k"),
        fault_on(2_000_000, Ok, "partition", &["n1"]),
        // In the settle (no TTL known: 1 s, to 3 s): a lost lease and a failed release.
        invoke(2_100_000, 0, "k"),
        grant(2_200_000, 0, "k", 1, 0),
        lost(2_250_000, 0, "k"),
        release(2_300_000, 0, "k"),
        with(
            Event::new(2_400_000, 0, EventKind::Fail, Op::Release, "k"),
            Some(ErrorKind::Server),
            Some("refused"),
        ),
        // After it: not the fault's.
        invoke(3_500_000, 1, "k"),
        timeout(3_600_000, 1, "k"),
        lost(3_700_000, 1, "k"),
    ];
    let ws = windows(h);
    let expected: BTreeMap<String, u64> = [
        ("timeout", 2),
        ("connection", 1),
        ("unclassified", 1),
        ("server", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(ws[0].errors, expected);
    assert_eq!(ws[0].lost_leases, 1);
}

#[test]
fn without_faults_there_are_no_windows_and_no_faults_key() {
    let r = evaluate_history(&History::new(section(0, 0, "k", 1, 0)), cell(1));
    assert!(r.analysis.summary.faults.is_empty());
    let json = serde_json::to_value(&r.analysis.summary).unwrap();
    assert!(json.get("faults").is_none(), "{json}");
    assert!(json.get("safety").is_some());
}

#[test]
fn windows_are_in_summary_json_and_read_back_equal() {
    let mut h = vec![fault_on(1_000_000, Invoke, "kill", &["n1", "n2"])];
    h.extend(overlap(1_500_000, "k", 1000));
    let r = evaluate_history(&History::new(h), cell(2));
    let json = serde_json::to_value(&r.analysis.summary).unwrap();
    let w = &json["faults"][0];
    assert_eq!(w["kind"], "kill");
    assert_eq!(w["targets"], serde_json::json!(["n1", "n2"]));
    assert_eq!(w["end_us"], serde_json::Value::Null);
    assert_eq!(w["verdict"], "unsafe");
    assert_eq!(w["first_grant_ms"], 499.99);
    assert_eq!(w["errors"], serde_json::json!({}));
    let back: crate::results::CellSummary = serde_json::from_value(json).unwrap();
    assert_eq!(back, r.analysis.summary, "lockbench check compares these");
}

#[test]
fn figures_count_from_the_effect_and_old_names_read_as_the_one_name() {
    // Asked for at 1 s, in effect at 1.4 s (a kill waits for the engine), undo asked for at
    // 3 s, done at 3.5 s (the node served again).
    let mut end = fault_on(3_500_000, Ok, "kill", &["n1"]);
    end.effect_us = Some(1_400_000);
    end.undo_us = Some(3_000_000);
    let mut h = vec![fault_on(1_000_000, Invoke, "kill", &["n1"]), end];
    // Granted while the kill was still being applied, then inside, then after the end.
    for (i, t) in [1_200_000, 2_000_000, 3_700_000].into_iter().enumerate() {
        let c = i as u32;
        let key = format!("k{i}");
        h.push(invoke(t - 10, c, &key));
        h.push(grant(t, c, &key, 1, 10_000));
        h.push(release(t + 10, c, &key));
    }
    // A history from before the names were one: `client-pause` reads as `pause-client`.
    h.push(fault_on(5_000_000, Invoke, "client-pause", &["worker0"]));
    h.push(fault_on(6_000_000, Ok, "client-pause", &["worker0"]));
    let ws = windows(h);
    let w = &ws[0];
    assert_eq!((w.effect_us, w.undo_us), (Some(1_400_000), Some(3_000_000)));
    assert_eq!(w.applying_ms, Some(400.0));
    assert_eq!(w.undoing_ms, Some(500.0));
    assert_eq!(
        w.acquisitions, 1,
        "only the grant at 2 s was inside the effect"
    );
    assert_eq!(w.first_grant_ms, Some(600.0), "1.4 s → 2 s");
    assert_eq!(w.recovery_ms, Some(200.0), "3.5 s → 3.7 s");
    assert_eq!(ws[1].kind, "pause-client");
    // No effect recorded (an older history): the invoke stands in for it.
    assert_eq!((ws[1].effect_us, ws[1].applying_ms), (None, None));
}

#[test]
fn recovery_splits_into_the_clusters_and_the_clients_share_and_the_load_is_per_client_second() {
    let with = |mut e: Event, requests: u64| {
        e.requests = Some(requests);
        e
    };
    let withdrawn = |t: u64, c: u32| Event {
        error: Some("withdrawn".into()),
        error_kind: Some(ErrorKind::Withdrawn),
        ..Event::new(t, c, EventKind::Fail, Op::Acquire, "k")
    };
    // The split is in effect from 1 s to 5 s (invoked at 0.5 s); 4 clients in the cell.
    let mut end = fault_on(5_000_000, Ok, "partition", &["n1", "n2"]);
    end.effect_us = Some(1_000_000);
    end.undo_us = Some(4_900_000);
    let h = vec![
        fault_on(500_000, Invoke, "partition", &["n1", "n2"]),
        // Client 0: one acquisition from 1.5 s, withdrawn at 5.5 s (the first answer after the
        // heal), 10 requests: 3.5 s of its 4 s inside the window, so 8.75 of them.
        invoke(1_500_000, 0, "k"),
        // Client 1: an unknown outcome at 3 s (4 requests) and a timeout at 4 s (2): both
        // wholly inside, and its 2 failures are the most of one client.
        invoke(2_000_000, 1, "k"),
        with(info(3_000_000, 1, "k"), 4),
        invoke(3_000_000, 1, "k"),
        with(timeout(4_000_000, 1, "k"), 2),
        end,
        with(withdrawn(5_500_000, 0), 10),
        invoke(5_600_000, 2, "k"),
        grant(6_000_000, 2, "k", 7, 10_000),
        release(6_010_000, 2, "k"),
    ];
    let ws = windows(h);
    assert_eq!(ws.len(), 1);
    let w = &ws[0];
    // Heal at 5 s: the cluster first answered at 5.5 s, the first grant came at 6 s.
    assert_eq!(
        (w.recovery_ms, w.recovery_cluster_ms, w.recovery_clients_ms),
        (Some(1000.0), Some(500.0), Some(500.0))
    );
    // (8.75 + 4 + 2) requests / 4 clients / 4 s.
    assert_eq!(w.requests_per_client_s, Some(14.75 / 4.0 / 4.0));
    assert_eq!(w.most_failed_per_client, 2);
}

#[test]
fn a_grant_that_is_the_first_answer_leaves_the_clients_no_share() {
    let mut end = fault_on(2_000_000, Ok, "partition", &["n1"]);
    end.effect_us = Some(1_000_000);
    let h = vec![
        fault_on(900_000, Invoke, "partition", &["n1"]),
        end,
        invoke(2_100_000, 0, "k"),
        grant(2_300_000, 0, "k", 1, 10_000),
        release(2_400_000, 0, "k"),
    ];
    let w = &windows(h)[0];
    assert_eq!(
        (w.recovery_ms, w.recovery_cluster_ms, w.recovery_clients_ms),
        (Some(300.0), Some(300.0), Some(0.0))
    );
    // No acquisition overlapped the window: no requests, nobody failed.
    assert_eq!(
        (w.requests_per_client_s, w.most_failed_per_client),
        (Some(0.0), 0)
    );
}
