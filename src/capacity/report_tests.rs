use super::*;
use crate::plan::CellId;
use crate::results::CellInfo;
use crate::stats::analyze_events as analyze;

/// The reference synthetic set: λ = 1, σ = κ = 0.02.
pub(crate) const SYNTHETIC: [(u32, f64); 6] = [
    (1, 1.0),
    (2, 1.8868),
    (4, 3.0769),
    (6, 3.5294),
    (8, 3.5398),
    (10, 3.3557),
];

/// A hand-made summary of etcd predecessor on workload `w` at `clients`, with the throughput
/// and p99 given and `count` acquisitions.
pub(crate) fn cell(clients: u32, throughput: f64, p99_us: u64, count: u64) -> CellSummary {
    let info = CellInfo {
        server_version: None,
        server_settings: None,
        id: CellId::new(System::Etcd, Strategy::Predecessor, "w", clients),
        warmup: std::time::Duration::ZERO,
        end_us: Some(1_000_000),
        resource: Default::default(),
        expect: Default::default(),
        settle_ms: None,
        lock: Default::default(),
    };
    let mut s = analyze(&[], &info).summary;
    s.throughput_per_s = throughput;
    s.acquire_latency_us.p99 = p99_us;
    s.acquire_latency_us.count = count;
    s.acquisitions = count;
    s
}

/// The synthetic set with p99 = 2 × the cycle time N/X (in µs; X is per second).
pub(crate) fn synthetic() -> Vec<CellSummary> {
    SYNTHETIC
        .iter()
        .rev() // out of order on purpose: the report sorts by clients
        .map(|&(n, x)| cell(n, x, (2e6 * f64::from(n) / x).round() as u64, 100))
        .collect()
}

#[test]
fn the_synthetic_sweep_gives_the_known_law_peak_and_slo_answers() {
    // SLO 4 s: measured p99 (2·N/X s) is 2, 2.12, 2.6, 3.4, 4.52, 5.96 s → within up to 6.
    let cap = Capacity::of(&synthetic(), Some(Slo { p99_us: 4_000_000 })).unwrap();
    assert_eq!(
        cap.points.iter().map(|p| p.clients).collect::<Vec<_>>(),
        [1, 2, 4, 6, 8, 10]
    );
    let f = cap.fitted().expect("the exact set fits");
    assert!((f.lambda - 1.0).abs() < 1e-3, "λ {}", f.lambda);
    assert!((f.sigma - 0.02).abs() < 1e-3, "σ {}", f.sigma);
    assert!((f.kappa - 0.02).abs() < 1e-3, "κ {}", f.kappa);
    // N* = √(0.98/0.02) = 7, X(7) = 7/1.96 = 3.5714.
    let n_star = cap.peak_concurrency.unwrap();
    assert!((n_star - 7.0).abs() < 0.05, "N* {n_star}");
    let x_star = cap.peak_throughput.unwrap();
    assert!((x_star - 3.5714).abs() < 0.005, "X* {x_star}");
    assert_eq!(cap.max_clients_within_slo, Some(6));
    // k = 2 exactly; 2·R(N) ≤ 4 s ⇔ 1 + 0.02(N−1) + 0.02N(N−1) ≤ 2 ⇔ N² ≤ 51 ⇔ N ≤ 7.
    let pred = cap.usl_prediction_within_slo.as_ref().unwrap();
    assert!((pred.p99_per_cycle_time - 2.0).abs() < 1e-3, "k {pred:?}");
    assert_eq!(pred.max_clients, Some(7));
    // The sweep reached 10 clients: the prediction looks 4 times as far, no further.
    assert_eq!(pred.searched_up_to, 10 * PREDICTION_REACH);
}

#[test]
fn a_violation_in_the_middle_stops_the_measured_answer() {
    let mut cells = synthetic();
    // The 2-client cell misses a 3 s SLO; 4 and 6 are within but do not count.
    cells
        .iter_mut()
        .find(|c| c.id.clients == 2)
        .unwrap()
        .acquire_latency_us
        .p99 = 3_500_000;
    let cap = Capacity::of(&cells, Some(Slo { p99_us: 3_000_000 })).unwrap();
    assert_eq!(cap.max_clients_within_slo, Some(1));
    // A cell with no acquisitions misses the SLO even though its p99 reads 0.
    let mut cells = synthetic();
    let one = cells.iter_mut().find(|c| c.id.clients == 1).unwrap();
    one.acquire_latency_us = Default::default();
    let cap = Capacity::of(&cells, Some(Slo { p99_us: 3_000_000 })).unwrap();
    assert_eq!(cap.max_clients_within_slo, None);
}

#[test]
fn without_an_slo_there_are_no_slo_answers_and_the_json_round_trips() {
    let cap = Capacity::of(&synthetic(), None).unwrap();
    assert_eq!(cap.slo_p99_us, None);
    assert_eq!(cap.max_clients_within_slo, None);
    assert_eq!(cap.usl_prediction_within_slo, None);
    let json = serde_json::to_string_pretty(&cap).unwrap();
    assert!(
        json.contains("\"fitted\"") && json.contains("\"lambda\""),
        "{json}"
    );
    let back: Capacity = serde_json::from_str(&json).unwrap();
    assert_eq!(back, cap);
}

#[test]
fn an_unfittable_sweep_keeps_the_fit_error_text_and_the_measured_answer() {
    let cells = vec![cell(1, 100.0, 1_000, 100), cell(2, 180.0, 2_000, 100)];
    let cap = Capacity::of(&cells, Some(Slo { p99_us: 1_500 })).unwrap();
    match &cap.fit {
        FitOutcome::Failed(text) => assert!(text.contains("3 or more"), "{text}"),
        FitOutcome::Fitted(f) => panic!("fitted two levels: {f:?}"),
    }
    assert_eq!(cap.peak_concurrency, None);
    assert_eq!(cap.usl_prediction_within_slo, None);
    assert_eq!(cap.max_clients_within_slo, Some(1));
}

#[test]
fn cells_of_two_strategies_or_none_are_refused() {
    assert_eq!(Capacity::of(&[], None), Err(CapacityError::NoCells));
    let mut cells = synthetic();
    cells[3].id.strategy = Strategy::Herd;
    let e = Capacity::of(&cells, None).unwrap_err().to_string();
    assert!(e.contains("one strategy per capacity sweep"), "{e}");
}

#[test]
fn repetitions_are_points_of_their_own_and_all_must_keep_the_slo() {
    // `capacity --repeat 2`: each count twice; the second round 1 % faster.
    let mut cells = synthetic();
    cells.extend(synthetic().into_iter().map(|mut c| {
        c.throughput_per_s *= 1.01;
        c
    }));
    let cap = Capacity::of(&cells, Some(Slo { p99_us: 4_000_000 })).unwrap();
    assert_eq!(cap.points.len(), 12);
    let f = cap.fitted().expect("fits");
    // Halfway between the two rounds' λ (1.0 and 1.01), σ and κ as before.
    assert!((f.lambda - 1.005).abs() < 2e-3, "λ {}", f.lambda);
    assert!((f.sigma - 0.02).abs() < 2e-3, "σ {}", f.sigma);
    assert!((f.kappa - 0.02).abs() < 2e-3, "κ {}", f.kappa);
    // Make one repetition at 6 clients miss the SLO: 6 is then out, and so is everything above.
    let at6 = cells.iter().position(|c| c.id.clients == 6).unwrap();
    cells[at6].acquire_latency_us.p99 = 9_000_000;
    let cap = Capacity::of(&cells, Some(Slo { p99_us: 4_000_000 })).unwrap();
    assert_eq!(cap.max_clients_within_slo, Some(4));
    let lines = crate::capacity::sweep::summary_lines(&cap);
    assert!(
        lines[0].contains("6 client counts (12 cells with the repetitions)"),
        "{}",
        lines[0]
    );
}
