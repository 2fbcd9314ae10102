//! The gate's rules: cell by cell, each speed metric's change against the larger of its floor
//! and what the two sides' spreads allow, and safety strictly.

use std::collections::BTreeMap;

use super::GateError;
use super::aggregate::CellAggregate;
use super::baseline::Baseline;
use super::machine;
use super::metric::Metric;
use super::spread::Spread;
use crate::results::Expect;
use crate::results::SafetyVerdict;
use crate::stats::rates::Rate;

/// How many standard errors of the difference of two medians a change must exceed before the
/// baseline's spread stops explaining it (3: a fence an A/A comparison crosses about once in
/// a few hundred metrics, were the repetitions normal).
pub const DEFAULT_SIGMAS: f64 = 3.0;

/// The standard error of a median of n normal samples is √(π/2)·σ/√n, and σ = IQR / 1.349:
/// so √(π/2) / 1.349 ≈ 0.929 IQR per √n.
const MEDIAN_SE_PER_IQR: f64 = 0.929;

/// The `cell` of the rows that hold `--normalize`'s machine factors of the whole suite.
pub const SUITE_ROW: &str = "suite (machine factor)";

/// The `cell` of the rows that hold a group's machine factors (`--normalize-by strategy`):
/// `suite: herd (machine factor)`.
pub fn group_row(group: Option<&str>) -> String {
    match group {
        None => SUITE_ROW.to_string(),
        Some(g) => format!("suite: {g} (machine factor)"),
    }
}

/// Whether a row's `cell` is a machine factor's, not a cell's.
pub fn is_factor_row(cell: &str) -> bool {
    cell.starts_with("suite") && cell.ends_with("(machine factor)")
}

/// The thresholds a comparison uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    /// Per metric, the smallest worsening (percent) that can fail.
    pub floors: BTreeMap<Metric, f64>,
    /// A worsening must also exceed this many standard errors of the difference of the two
    /// medians, estimated from each side's IQR and repetition count.
    pub sigmas: f64,
    /// `Some(limit)` (`--normalize`): each cell is compared with its baseline times the
    /// suite's machine factor ([`machine::factors`]), and the factor itself fails past `limit`
    /// (2: half the throughput, twice the latency); `None`: cells are compared as measured.
    pub normalize: Option<f64>,
    /// Which cells share a machine factor under `normalize` (`--normalize-by`).
    pub normalize_by: machine::Grouping,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            floors: Metric::ALL
                .into_iter()
                .map(|m| (m, m.default_floor_pct()))
                .collect(),
            sigmas: DEFAULT_SIGMAS,
            normalize: None,
            normalize_by: machine::Grouping::Suite,
        }
    }
}

/// `--threshold NAME=PCT`: a metric's floor in percent, e.g. `throughput=30`.
pub fn parse_threshold(text: &str) -> Result<(Metric, f64), String> {
    let (name, pct) = text.split_once('=').ok_or_else(|| {
        format!(
            "'{text}' is not NAME=PERCENT: write e.g. throughput=30 (names: {})",
            Metric::ALL.map(Metric::name).join(", ")
        )
    })?;
    let metric = Metric::from_name(name.trim())?;
    let pct: f64 = pct
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{pct}' is not a percentage: write e.g. {name}=30"))?;
    if !(pct.is_finite() && pct > 0.0 && pct < 1000.0) {
        return Err(format!(
            "{name}={pct}: a threshold is a percentage above 0 and below 1000"
        ));
    }
    Ok((metric, pct))
}

impl Thresholds {
    /// The defaults with `overrides` applied.
    pub fn with(overrides: &[(Metric, f64)], sigmas: f64) -> Thresholds {
        let mut t = Thresholds {
            sigmas,
            ..Thresholds::default()
        };
        for &(m, pct) in overrides {
            t.floors.insert(m, pct);
        }
        t
    }

    /// The worsening (percent) `metric` may show against `base` when the current repetitions
    /// are `current`, before it fails, and whether the floor or the spread set it. The spread's
    /// share: `sigmas` × 0.929 × √(r_b²/n_b + r_c²/n_c), the standard error of a difference of
    /// two medians, where r is a side's IQR/median and n its repetition count (Welch's form:
    /// each side's own spread, so a current run whose repetitions scatter cannot pass its own
    /// noise off as a regression, and more repetitions on either side narrow the fence).
    pub fn allowance(&self, metric: Metric, base: &Spread, current: &Spread) -> (f64, Bound) {
        let share = |s: &Spread| s.relative_iqr().powi(2) / s.values.len().max(1) as f64;
        let se = MEDIAN_SE_PER_IQR * (share(base) + share(current)).sqrt();
        self.floor_or_noise(metric, se)
    }

    /// [`Thresholds::allowance`] for `--pair`: the rounds' ratios B ÷ A are one sample, so the
    /// spread's share is `sigmas` × 0.929 × IQR/median of the ratios × √(1/rounds).
    pub fn paired_allowance(&self, metric: Metric, ratios: &Spread) -> (f64, Bound) {
        let rounds = ratios.values.len().max(1) as f64;
        self.floor_or_noise(
            metric,
            MEDIAN_SE_PER_IQR * ratios.relative_iqr() / rounds.sqrt(),
        )
    }

    /// The larger of `metric`'s floor and `sigmas` relative standard errors `se`, in percent.
    fn floor_or_noise(&self, metric: Metric, se: f64) -> (f64, Bound) {
        let floor = self.floors[&metric];
        let noise = 100.0 * self.sigmas * se;
        if noise > floor {
            (noise, Bound::Spread)
        } else {
            (floor, Bound::Floor)
        }
    }
}

/// What set a threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The metric's floor.
    Floor,
    /// The two sides' spreads (their IQRs, as a standard error of the difference × sigmas).
    Spread,
}

/// A row's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// Within the threshold either way.
    Pass,
    /// Better by more than the threshold: reported, never failed.
    Improved,
    /// Worse by more than the threshold.
    Regressed,
    /// A safety rule broken.
    Unsafe,
    /// Not compared, and why.
    NotGated(String),
}

impl Judgement {
    /// Whether this row fails the gate.
    pub fn fails(&self) -> bool {
        matches!(self, Judgement::Regressed | Judgement::Unsafe)
    }

    /// The table's word for it.
    pub fn word(&self) -> String {
        match self {
            Judgement::Pass => "pass".into(),
            Judgement::Improved => "improved".into(),
            Judgement::Regressed => "REGRESSED".into(),
            Judgement::Unsafe => "UNSAFE".into(),
            Judgement::NotGated(why) => format!("not gated: {why}"),
        }
    }
}

/// One line of the gate's table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The cell id (without repetition).
    pub cell: String,
    /// A [`Metric::name`], or `safety`.
    pub metric: String,
    /// The baseline's value (median, spread, repetitions).
    pub baseline: String,
    /// The current value.
    pub current: String,
    /// The change in percent, signed; empty where there is none.
    pub change: String,
    /// The threshold that applied and what set it.
    pub threshold: String,
    /// The verdict.
    pub verdict: Judgement,
    /// For an unsafe row: where the evidence is.
    pub evidence: Option<String>,
}

/// Everything a comparison found.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Cell by cell, metric by metric, safety last in each cell.
    pub rows: Vec<Row>,
    /// Things worth saying that do not fail the gate (environment differences, new cells).
    pub notes: Vec<String>,
}

impl Outcome {
    /// Rows that fail the gate.
    pub fn failures(&self) -> usize {
        self.rows.iter().filter(|r| r.verdict.fails()).count()
    }

    /// Whether the gate passes.
    pub fn passed(&self) -> bool {
        self.failures() == 0
    }
}

/// Compares `current` (a run's cells over their repetitions) with `baseline`. Every baseline
/// cell must be in the current run ([`GateError::MissingCells`] otherwise); current cells the
/// baseline lacks get only the safety rule that needs no baseline. Without a baseline, that
/// rule is all there is: the safety gate.
pub fn compare(
    baseline: Option<&Baseline>,
    current: &[CellAggregate],
    current_environment: Option<&serde_json::Value>,
    th: &Thresholds,
) -> Result<Outcome, GateError> {
    let Some(baseline) = baseline else {
        return Ok(Outcome {
            rows: current.iter().map(|c| safety_row(None, c)).collect(),
            notes: vec!["no baseline: safety alone is gated".into()],
        });
    };
    let missing: Vec<String> = baseline
        .cells
        .iter()
        .filter(|b| !current.iter().any(|c| c.id == b.id))
        .map(|b| b.cell.clone())
        .collect();
    if !missing.is_empty() {
        return Err(GateError::MissingCells(missing));
    }
    let mut rows = Vec::new();
    let mut notes = environment_notes(baseline.environment.as_ref(), current_environment);
    let factors = match th.normalize {
        Some(limit) => {
            let pairs: Vec<_> = current
                .iter()
                .filter_map(|c| baseline.cells.iter().find(|b| b.id == c.id).map(|b| (b, c)))
                .collect();
            let factors = machine::factors(&pairs, th.normalize_by);
            notes.extend(normalize_notes(&factors));
            for g in &factors.groups {
                let name = group_row(g.group);
                rows.extend(
                    g.factors
                        .iter()
                        .map(|(&m, f)| factor_row(&name, m, f, limit)),
                );
            }
            Some(factors)
        }
        None => None,
    };
    for cur in current {
        let base = baseline.cells.iter().find(|b| b.id == cur.id);
        match base {
            Some(base) => {
                for m in Metric::ALL {
                    let factor = factors.as_ref().and_then(|f| f.of(cur, m)).map(|f| f.ratio);
                    if let Some(row) = speed_row(base, cur, m, th, factor) {
                        rows.push(row);
                    }
                }
            }
            None => notes.push(format!(
                "{}: not in the baseline; only its safety is gated",
                cur.cell
            )),
        }
        rows.push(safety_row(base, cur));
    }
    Ok(Outcome { rows, notes })
}

/// What `--normalize` did, for the notes.
fn normalize_notes(factors: &machine::Factors) -> Vec<String> {
    if factors.is_empty() {
        return vec![format!(
            "normalize: fewer than {} speed-gated cells on both sides, so no machine factor; \
             cells compared as measured",
            machine::MIN_CELLS
        )];
    }
    let list = |f: &BTreeMap<Metric, machine::Factor>| {
        f.iter()
            .map(|(m, f)| format!("{m} ×{:.3}", f.ratio))
            .collect::<Vec<String>>()
            .join(", ")
    };
    match factors.grouping {
        machine::Grouping::Suite => vec![format!(
            "normalized: each cell's change is against its baseline × the suite's machine \
             factor (median of current ÷ baseline over the cells: {}); `raw` is the change as \
             measured",
            factors.suite().map_or(String::new(), |g| list(&g.factors))
        )],
        machine::Grouping::Strategy => {
            let groups: Vec<String> = factors
                .groups
                .iter()
                .filter_map(|g| Some(format!("{}: {}", g.group?, list(&g.factors))))
                .collect();
            vec![format!(
                "normalized by strategy: each cell's change is against its baseline × its \
                 strategy's machine factor (median of current ÷ baseline over that strategy's \
                 cells; {}), or the suite's ({}) where the strategy has fewer than {} cells \
                 measuring the metric; `raw` is the change as measured",
                groups.join("; "),
                factors.suite().map_or(String::new(), |g| list(&g.factors)),
                machine::MIN_CELLS
            )]
        }
    }
}

/// The row `name` of `m`: a machine factor, failed only past `limit`.
fn factor_row(name: &str, m: Metric, f: &machine::Factor, limit: f64) -> Row {
    let (worse, better) = machine::past_limit(m, f.ratio, limit);
    let limit_pct = machine::worsening_pct(
        m,
        if m.higher_is_better() {
            1.0 / limit
        } else {
            limit
        },
    );
    let sign = if m.higher_is_better() { '−' } else { '+' };
    Row {
        cell: name.to_string(),
        metric: m.name().to_string(),
        baseline: "×1".into(),
        current: format!("×{:.3} (median of {} cells)", f.ratio, f.cells),
        change: format!("{:+.1} %", 100.0 * (f.ratio - 1.0)),
        threshold: format!("{sign}{limit_pct:.1} % (machine limit ×{limit})"),
        verdict: if worse {
            Judgement::Regressed
        } else if better {
            Judgement::Improved
        } else {
            Judgement::Pass
        },
        evidence: None,
    }
}

/// The row of `metric`, or `None` when neither side measured it; with a machine `factor`, the
/// change is against the baseline times it.
fn speed_row(
    base: &CellAggregate,
    cur: &CellAggregate,
    m: Metric,
    th: &Thresholds,
    factor: Option<f64>,
) -> Option<Row> {
    let (b, c) = (base.metric(m), cur.metric(m));
    if b.is_none() && c.is_none() {
        return None;
    }
    let show = |s: Option<&Spread>| match s {
        None => "not measured".to_string(),
        Some(s) if s.values.len() > 1 => format!(
            "{} (IQR {:.1} %, n={})",
            m.show(s.median),
            100.0 * s.relative_iqr(),
            s.values.len()
        ),
        Some(s) => format!("{} (n=1)", m.show(s.median)),
    };
    let mut row = Row {
        cell: cur.cell.clone(),
        metric: m.name().to_string(),
        baseline: show(b),
        current: show(c),
        change: String::new(),
        threshold: String::new(),
        verdict: Judgement::Pass,
        evidence: None,
    };
    let (Some(b), Some(c)) = (b, c) else {
        row.verdict = Judgement::NotGated("measured on one side only".into());
        return Some(row);
    };
    if cur.under_faults() {
        row.verdict = Judgement::NotGated("a fault schedule's timing moves it".into());
        return Some(row);
    }
    let raw = percent_change(b.median, c.median);
    let change = percent_change(b.median * factor.unwrap_or(1.0), c.median);
    row.change = match factor {
        Some(_) => format!("{change:+.1} % (raw {raw:+.1} %)"),
        None => format!("{change:+.1} %"),
    };
    (row.threshold, row.verdict) = judge(m, change, th.allowance(m, b, c), th);
    Some(row)
}

/// The threshold text and verdict of a `change` (percent, signed) of `m` against what is
/// `allowed` and what set it.
pub(super) fn judge(
    m: Metric,
    change: f64,
    (allowed, bound): (f64, Bound),
    th: &Thresholds,
) -> (String, Judgement) {
    // Positive `worse` is a worsening, whichever way the metric improves.
    let worse = if m.higher_is_better() {
        -change
    } else {
        change
    };
    let sign = if m.higher_is_better() { '−' } else { '+' };
    let threshold = match bound {
        Bound::Floor => format!("{sign}{allowed:.1} % (floor)"),
        Bound::Spread => format!("{sign}{allowed:.1} % ({}σ noise)", th.sigmas),
    };
    let verdict = if worse > allowed {
        Judgement::Regressed
    } else if -worse > allowed {
        Judgement::Improved
    } else {
        Judgement::Pass
    };
    (threshold, verdict)
}

/// `from` → `to` in percent of `from` (±∞ from 0 to anything else).
fn percent_change(from: f64, to: f64) -> f64 {
    if from == 0.0 {
        if to == 0.0 {
            0.0
        } else {
            f64::INFINITY * to.signum()
        }
    } else {
        100.0 * (to - from) / from.abs()
    }
}

/// The safety row. Any violation in a cell expected safe fails, whatever the baseline. Against
/// a baseline, a rate that rose fails: the cell's unsafe repetitions, or the repetitions showing
/// one class of finding, whose 95 % Wilson interval lies wholly above the baseline's
/// ([`Rate::rose_above`]); intervals that overlap are no evidence of a change and pass. One
/// wholly below is reported as improved.
pub(super) fn safety_row(base: Option<&CellAggregate>, cur: &CellAggregate) -> Row {
    let s = &cur.safety;
    let worst = s.worst();
    let violated = s.repetitions_with_violations > 0 || worst == SafetyVerdict::Unsafe;
    let (rose, fell) = base.map_or((Vec::new(), false), |b| rate_changes(b, cur));
    let (verdict, threshold) = if violated && s.expected == Expect::Safe {
        (Judgement::Unsafe, "expected safe".to_string())
    } else if !rose.is_empty() {
        (Judgement::Unsafe, format!("rate rose: {}", rose.join("; ")))
    } else if fell {
        (Judgement::Improved, RATE_TEST.to_string())
    } else if base.is_some() && violated {
        (Judgement::Pass, format!("expected unsafe; {RATE_TEST}"))
    } else {
        (Judgement::Pass, format!("expected {}", s.expected.name()))
    };
    let evidence = s.first_violation.as_ref().map(|e| {
        let lines: Vec<String> = e.lines.iter().map(usize::to_string).collect();
        let run = e.run.as_ref().map_or(String::new(), |r| format!("{r}/"));
        format!(
            "{run}cells/{}/history.jsonl line {} ({}): {}",
            e.cell_folder,
            lines.join(", "),
            e.checker,
            e.what
        )
    });
    let show = |a: &CellAggregate| {
        format!(
            "{} (unsafe {})",
            a.safety.describe(),
            unsafe_rate(&a.safety).interval()
        )
    };
    Row {
        cell: cur.cell.clone(),
        metric: "safety".into(),
        baseline: base.map_or("not in baseline".into(), show),
        current: show(cur),
        change: String::new(),
        threshold,
        verdict,
        evidence: if violated { evidence } else { None },
    }
}

/// What the safety row's threshold says of a rate that did not rise.
const RATE_TEST: &str = "rates within the baseline's (Wilson 95 % intervals overlap)";

/// Unsafe repetitions of all of them, from the verdicts (which every baseline has, rates or
/// not).
fn unsafe_rate(s: &super::aggregate::SafetyRecord) -> Rate {
    let k = s
        .verdicts
        .iter()
        .filter(|v| **v == SafetyVerdict::Unsafe)
        .count();
    Rate::of(k as u32, s.verdicts.len() as u32)
}

/// The rates of `cur` that rose above `base`'s, said with both sides (the unsafe verdicts
/// first, then each class both sides rate), and whether the unsafe rate fell below.
fn rate_changes(base: &CellAggregate, cur: &CellAggregate) -> (Vec<String>, bool) {
    let said = |what: &str, c: &Rate, b: &Rate| {
        format!(
            "{what} {} of {} ({}) against {} of {} ({})",
            c.k,
            c.n,
            c.interval(),
            b.k,
            b.n,
            b.interval()
        )
    };
    let (b, c) = (unsafe_rate(&base.safety), unsafe_rate(&cur.safety));
    let mut rose = Vec::new();
    if c.rose_above(&b) {
        rose.push(said("unsafe", &c, &b));
    }
    if let (Some(br), Some(cr)) = (&base.rates, &cur.rates) {
        for (name, cc) in &cr.classes {
            if let Some(bc) = br.classes.get(name)
                && cc.rate.rose_above(&bc.rate)
            {
                rose.push(said(&name.replace('_', " "), &cc.rate, &bc.rate));
            }
        }
    }
    (rose, b.rose_above(&c))
}

/// The environment facts that differ between the baseline and the current run.
fn environment_notes(
    base: Option<&serde_json::Value>,
    cur: Option<&serde_json::Value>,
) -> Vec<String> {
    let (Some(base), Some(cur)) = (base, cur) else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    for key in ["lockbench_version", "git_commit"] {
        if base[key] != cur[key] {
            notes.push(format!("code: {key} {} → {}", base[key], cur[key]));
        }
    }
    for key in ["cores", "memory_bytes", "kernel", "docker_server"] {
        if base[key] != cur[key] {
            notes.push(format!(
                "machine differs: {key} {} → {} (the baseline may not describe this machine)",
                base[key], cur[key]
            ));
        }
    }
    notes
}
