//! The reports' first section: what the comparison's figures say, in words. For each system
//! (and version, workload, fault schedule) the two waiting strategies are set side by side at
//! every client count on throughput, handoff p50 and wake-ups per acquisition: which one wins,
//! by how much, or "no measurable difference" where the two intervals overlap. Generated from
//! the cells' summaries alone (a pure function), never written by hand.
//!
//! A side's interval is the range of its repetitions when it has two or more; with one run it
//! is [`NOISE_BAND`] either side of the value, the spread measured between repetitions of the
//! default run's cells (the guide's "Reports" chapter gives the measurement).

use std::collections::BTreeMap;

use crate::gate::{CellAggregate, Metric, Spread, aggregate};
use crate::plan::CellId;
use crate::recipe::Strategy;
use crate::results::CellSummary;

/// The noise band of a cell measured once, as a fraction of its value: two single runs closer
/// than this either side are not called different. From the default run's 24 cells (8 s, 2 to
/// 32 clients) run 3 times each on a shared 2-core machine: in three cells of four, no run was
/// further from its cell's median than 25 % (throughput), 29 % (handoff p50) or 6 % (wake-ups
/// per acquisition); the guide's "Reports" chapter gives the measurement.
pub const NOISE_BAND: f64 = 0.30;

/// The metrics the words compare, in the order they are said.
const SAID: [Metric; 3] = [
    Metric::Throughput,
    Metric::HandoffP50,
    Metric::WakeupsPerAcquisition,
];

/// The section: how the intervals were made, then one finding per system compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Findings {
    /// How a difference is told from noise, in one or two sentences.
    pub method: String,
    /// One per system (× version × workload × schedule) with both strategies, in run order.
    pub findings: Vec<Finding>,
}

/// What one system's curves show.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The system, its version, and the workload and schedule where the run had several.
    pub subject: String,
    /// Which strategy won how many comparisons.
    pub summary: String,
    /// One sentence per metric: the winner at each client count, by how much.
    pub details: Vec<String>,
}

/// The findings of `cells` (every repetition, as the run recorded them), or `None` when no
/// system ran both herd and predecessor at one client count. `band` is the single-run noise
/// band ([`NOISE_BAND`] in the reports).
pub fn findings(cells: &[CellSummary], band: f64) -> Option<Findings> {
    let groups = pair_up(&aggregate(cells));
    if groups.is_empty() {
        return None;
    }
    let several = |f: fn(&CellId) -> &str| {
        let seen: std::collections::BTreeSet<&str> = groups.iter().map(|g| f(&g.id)).collect();
        seen.len() > 1
    };
    let (workloads, schedules) = (several(|id| &id.workload), several(|id| &id.chaos));
    let findings = groups
        .iter()
        .map(|g| g.finding(band, workloads, schedules))
        .collect();
    let reps: Vec<u32> = groups
        .iter()
        .flat_map(|g| g.points.values())
        .flat_map(|(h, p)| [h.repetitions, p.repetitions])
        .collect();
    let method = method(
        band,
        reps.iter().all(|&r| r > 1),
        reps.iter().any(|&r| r > 1),
    );
    Some(Findings { method, findings })
}

fn method(band: f64, all_repeated: bool, some_repeated: bool) -> String {
    let band = format!("±{:.0} %", band * 100.0);
    let interval = if all_repeated {
        "the range of its repetitions".to_string()
    } else if some_repeated {
        format!(
            "the range of its repetitions, or {band} around a cell run once (the spread measured between repetitions of the default run's cells)"
        )
    } else {
        format!(
            "{band} around its one run (the spread measured between repetitions of the default run's cells; run with --repeat 3 or more to use the repetitions' own range)"
        )
    };
    format!(
        "Herd against predecessor, per system and client count, on each cell's median. Each side's interval is {interval}; where the two intervals overlap the words say no measurable difference, and otherwise name the better strategy and its factor over the other."
    )
}

/// One system × version × workload × schedule: herd and predecessor by client count.
struct Group {
    id: CellId,
    points: BTreeMap<u32, (CellAggregate, CellAggregate)>,
}

/// The aggregates with both strategies at one client count, grouped, in the order their
/// groups first appear.
fn pair_up(aggs: &[CellAggregate]) -> Vec<Group> {
    let key = |id: &CellId| CellId {
        strategy: Strategy::Herd,
        clients: 0,
        ..id.base()
    };
    let mut groups: Vec<Group> = Vec::new();
    // A library's cell waits its own way: it has no strategy to pair.
    for herd in aggs
        .iter()
        .filter(|a| a.id.strategy == Strategy::Herd && a.id.library.is_none())
    {
        let Some(pred) = aggs.iter().find(|a| {
            a.id.strategy == Strategy::Predecessor
                && key(&a.id) == key(&herd.id)
                && a.id.clients == herd.id.clients
        }) else {
            continue;
        };
        let k = key(&herd.id);
        let pair = (herd.clone(), pred.clone());
        match groups.iter_mut().find(|g| g.id == k) {
            Some(g) => {
                g.points.insert(herd.id.clients, pair);
            }
            None => groups.push(Group {
                id: k,
                points: BTreeMap::from([(herd.id.clients, pair)]),
            }),
        }
    }
    groups
}

/// How one metric came out at one client count.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    /// The intervals overlap.
    Same,
    /// `winner` is better by `factor` (≥ 1; `None` when the other's value is 0).
    Wins {
        winner: Strategy,
        factor: Option<f64>,
    },
    /// A side did not measure the metric (`None`: neither did).
    Unmeasured(Option<Strategy>),
}

/// `s`'s interval: the range of its values, or `band` either side of a single value.
fn interval(s: &Spread, band: f64) -> (f64, f64) {
    if s.values.len() > 1 {
        let lo = s.values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = s.values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    } else {
        (s.median * (1.0 - band), s.median * (1.0 + band))
    }
}

fn outcome(m: Metric, herd: Option<&Spread>, pred: Option<&Spread>, band: f64) -> Outcome {
    let (h, p) = match (herd, pred) {
        (Some(h), Some(p)) => (h, p),
        (None, None) => return Outcome::Unmeasured(None),
        (None, Some(_)) => return Outcome::Unmeasured(Some(Strategy::Herd)),
        (Some(_), None) => return Outcome::Unmeasured(Some(Strategy::Predecessor)),
    };
    let ((hl, hh), (pl, ph)) = (interval(h, band), interval(p, band));
    if hl <= ph && pl <= hh {
        return Outcome::Same;
    }
    let herd_better = (h.median > p.median) == m.higher_is_better();
    let (winner, better, worse) = if herd_better {
        (Strategy::Herd, h.median, p.median)
    } else {
        (Strategy::Predecessor, p.median, h.median)
    };
    let factor = if m.higher_is_better() {
        (worse > 0.0).then(|| better / worse)
    } else {
        (better > 0.0).then(|| worse / better)
    };
    Outcome::Wins { winner, factor }
}

/// The word for a win on `m`: "higher", "faster", "fewer".
fn better_word(m: Metric) -> &'static str {
    match m {
        Metric::Throughput => "higher",
        Metric::AcquireP99 | Metric::HandoffP50 => "faster",
        Metric::WakeupsPerAcquisition => "fewer",
    }
}

/// What `m` is called in the words.
fn metric_words(m: Metric) -> &'static str {
    match m {
        Metric::Throughput => "throughput (acquisitions/s)",
        Metric::AcquireP99 => "acquire p99 (ms)",
        Metric::HandoffP50 => "handoff p50 (ms)",
        Metric::WakeupsPerAcquisition => "wake-ups per acquisition",
    }
}

/// `v` in the unit [`metric_words`] names.
fn value(m: Metric, v: f64) -> String {
    match m {
        Metric::Throughput => format!("{v:.1}"),
        Metric::AcquireP99 | Metric::HandoffP50 => format!("{:.2}", v / 1000.0),
        Metric::WakeupsPerAcquisition => format!("{v:.2}"),
    }
}

fn factor_text(f: f64) -> String {
    if f >= 10.0 {
        format!("{f:.0}×")
    } else {
        format!("{f:.1}×")
    }
}

/// "2 clients", "2 and 8 clients", "2, 8 and 32 clients".
fn clients_list(counts: &[u32]) -> String {
    let words: Vec<String> = counts.iter().map(u32::to_string).collect();
    let joined = match words.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    let plural = if counts == [1] { "client" } else { "clients" };
    format!("{joined} {plural}")
}

impl Group {
    fn finding(&self, band: f64, workloads: bool, schedules: bool) -> Finding {
        let mut subject = self.id.system.name().to_string();
        if let Some(v) = &self.id.version {
            subject.push_str(&format!(" {v}"));
        }
        if workloads {
            subject.push_str(&format!(", workload {}", self.id.workload));
        }
        if schedules && self.id.chaos != crate::plan::NO_CHAOS {
            subject.push_str(&format!(", under {}", self.id.chaos));
        }
        let mut tally: BTreeMap<&str, u32> = BTreeMap::new();
        let details = SAID
            .iter()
            .map(|&m| {
                let outcomes: Vec<(u32, Outcome, String)> = self
                    .points
                    .iter()
                    .map(|(&n, (h, p))| {
                        let o = outcome(m, h.metric(m), p.metric(m), band);
                        let shown = |a: &CellAggregate| {
                            a.metric(m).map_or("n/a".into(), |s| value(m, s.median))
                        };
                        let vs = format!("herd {}, predecessor {}", shown(h), shown(p));
                        (n, o, vs)
                    })
                    .collect();
                for (_, o, _) in &outcomes {
                    let k = match o {
                        Outcome::Wins { winner, .. } => winner.name(),
                        Outcome::Same => "same",
                        Outcome::Unmeasured(_) => continue,
                    };
                    *tally.entry(k).or_default() += 1;
                }
                sentence(m, &outcomes)
            })
            .collect();
        let count = |k: &str| tally.get(k).copied().unwrap_or(0);
        let total: u32 = tally.values().sum();
        let (h, p, same) = (count("herd"), count("predecessor"), count("same"));
        let summary = match (h, p) {
            (0, 0) => format!("no measurable difference in any of {total} comparisons"),
            (0, _) => format!(
                "predecessor wins {p} of {total} comparisons, herd none; no measurable difference in {same}"
            ),
            (_, 0) => format!(
                "herd wins {h} of {total} comparisons, predecessor none; no measurable difference in {same}"
            ),
            _ => format!(
                "predecessor wins {p} of {total} comparisons, herd {h}; no measurable difference in {same}"
            ),
        };
        Finding {
            subject,
            summary,
            details,
        }
    }
}

/// One metric's sentence: each client count's outcome, wins first, then the ties, then what
/// was not measured.
fn sentence(m: Metric, outcomes: &[(u32, Outcome, String)]) -> String {
    let mut parts = Vec::new();
    for strategy in [Strategy::Predecessor, Strategy::Herd] {
        let wins: Vec<String> = outcomes
            .iter()
            .filter_map(|(n, o, vs)| match o {
                Outcome::Wins { winner, factor } if *winner == strategy => Some(format!(
                    "{} ({}{vs})",
                    clients_list(&[*n]),
                    factor.map_or(String::new(), |f| format!("{}: ", factor_text(f)))
                )),
                _ => None,
            })
            .collect();
        if !wins.is_empty() {
            parts.push(format!(
                "{} {} at {}",
                strategy.name(),
                better_word(m),
                join_and(&wins)
            ));
        }
    }
    let same: Vec<u32> = outcomes
        .iter()
        .filter(|(_, o, _)| *o == Outcome::Same)
        .map(|(n, _, _)| *n)
        .collect();
    if !same.is_empty() {
        let vs: Vec<&str> = outcomes
            .iter()
            .filter(|(_, o, _)| *o == Outcome::Same)
            .map(|(_, _, vs)| vs.as_str())
            .collect();
        parts.push(format!(
            "no measurable difference at {} ({})",
            clients_list(&same),
            vs.join("; ")
        ));
    }
    let unmeasured: Vec<String> = outcomes
        .iter()
        .filter_map(|(n, o, _)| match o {
            Outcome::Unmeasured(Some(s)) => Some(format!("{} at {n}", s.name())),
            Outcome::Unmeasured(None) => Some(format!("either strategy at {n}")),
            _ => None,
        })
        .collect();
    if !unmeasured.is_empty() {
        parts.push(format!("not measured for {}", join_and(&unmeasured)));
    }
    format!("{}: {}.", metric_words(m), parts.join("; "))
}

fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::System;

    /// A hand-made cell: `system` × `strategy` at `clients`, with throughput (acq/s), handoff
    /// p50 (µs) and wake-ups per acquisition.
    fn cell(
        system: System,
        strategy: Strategy,
        clients: u32,
        (tput, handoff_us, wakeups): (f64, u64, Option<f64>),
    ) -> CellSummary {
        let mut c = crate::capacity::report::tests::cell(clients, tput, 1000, 100);
        c.id.system = system;
        c.id.strategy = strategy;
        c.id.version = Some("3.9".into());
        c.handoff_latency_us.p50 = handoff_us;
        c.handoff_latency_us.count = 100;
        c.wakeups_per_acquisition = wakeups;
        c
    }

    #[test]
    fn single_runs_are_compared_through_the_noise_band() {
        use Strategy::{Herd, Predecessor};
        let z = System::Zookeeper;
        let cells = [
            // 2 clients: 100 against 120 acq/s is inside ±30 % (70–130 against 84–156).
            cell(z, Herd, 2, (100.0, 5000, Some(1.0))),
            cell(z, Predecessor, 2, (120.0, 5000, Some(1.0))),
            // 32 clients: 40 (28–52) against 100 (70–130) acq/s: predecessor 2.5×; handoff
            // 20 ms against 4 ms: predecessor 5.0× faster; wake-ups 24 against 1: 24×.
            cell(z, Herd, 32, (40.0, 20_000, Some(24.0))),
            cell(z, Predecessor, 32, (100.0, 4000, Some(1.0))),
        ];
        let f = findings(&cells, 0.30).expect("a pair to compare");
        assert_eq!(f.findings.len(), 1);
        let z = &f.findings[0];
        assert_eq!(z.subject, "zookeeper 3.9");
        assert_eq!(
            z.summary,
            "predecessor wins 3 of 6 comparisons, herd none; no measurable difference in 3"
        );
        assert_eq!(
            z.details[0],
            "throughput (acquisitions/s): predecessor higher at 32 clients (2.5×: herd 40.0, \
             predecessor 100.0); no measurable difference at 2 clients (herd 100.0, predecessor \
             120.0)."
        );
        assert_eq!(
            z.details[1],
            "handoff p50 (ms): predecessor faster at 32 clients (5.0×: herd 20.00, predecessor \
             4.00); no measurable difference at 2 clients (herd 5.00, predecessor 5.00)."
        );
        assert_eq!(
            z.details[2],
            "wake-ups per acquisition: predecessor fewer at 32 clients (24×: herd 24.00, \
             predecessor 1.00); no measurable difference at 2 clients (herd 1.00, predecessor \
             1.00)."
        );
        assert!(
            f.method.contains("±30 % around its one run"),
            "{}",
            f.method
        );
    }

    #[test]
    fn repetitions_use_their_range_and_a_herd_win_is_said() {
        use Strategy::{Herd, Predecessor};
        let r = System::Redis;
        let rep = |mut c: CellSummary, k: u32| {
            c.id.repetition = Some(k);
            c
        };
        let cells = [
            // Herd 100, 104, 108 (range 100–108) against predecessor 90, 95, 99 (90–99): apart,
            // herd higher by 104 / 95 = 1.09×, which ±30 % would have called the same.
            rep(cell(r, Herd, 8, (100.0, 1000, None)), 1),
            rep(cell(r, Predecessor, 8, (90.0, 1000, Some(1.0))), 1),
            rep(cell(r, Herd, 8, (104.0, 1000, None)), 2),
            rep(cell(r, Predecessor, 8, (95.0, 1000, Some(1.0))), 2),
            rep(cell(r, Herd, 8, (108.0, 1100, None)), 3),
            rep(cell(r, Predecessor, 8, (99.0, 1000, Some(1.0))), 3),
        ];
        let f = findings(&cells, 0.30).unwrap();
        let d = &f.findings[0].details;
        assert_eq!(
            d[0],
            "throughput (acquisitions/s): herd higher at 8 clients (1.1×: herd 104.0, \
             predecessor 95.0)."
        );
        // Handoff 1.0, 1.0, 1.1 ms against 1.0 ms thrice: the ranges touch.
        assert!(
            d[1].contains("no measurable difference at 8 clients"),
            "{}",
            d[1]
        );
        // Herd's client cannot see wake-ups here: said, not counted.
        assert_eq!(
            d[2],
            "wake-ups per acquisition: not measured for herd at 8."
        );
        assert_eq!(
            f.findings[0].summary,
            "herd wins 1 of 2 comparisons, predecessor none; no measurable difference in 1"
        );
        assert!(
            f.method.contains("the range of its repetitions;"),
            "{}",
            f.method
        );
    }

    #[test]
    fn nothing_to_compare_gives_no_section_and_subjects_name_what_differs() {
        use Strategy::{Herd, Predecessor};
        let only_herd = [cell(System::Etcd, Herd, 4, (10.0, 1000, Some(3.0)))];
        assert!(findings(&only_herd, 0.30).is_none());
        // Two systems, two workloads: each group names its workload; the plan's order holds.
        let mut cells = Vec::new();
        for (sys, w) in [(System::Etcd, "a"), (System::Redis, "b")] {
            for s in [Herd, Predecessor] {
                let mut c = cell(sys, s, 4, (10.0, 1000, Some(1.0)));
                c.id.workload = w.into();
                cells.push(c);
            }
        }
        let f = findings(&cells, 0.30).unwrap();
        let subjects: Vec<&str> = f.findings.iter().map(|x| x.subject.as_str()).collect();
        assert_eq!(subjects, ["etcd 3.9, workload a", "redis 3.9, workload b"]);
        assert_eq!(
            f.findings[0].summary,
            "no measurable difference in any of 3 comparisons"
        );
    }

    #[test]
    fn client_counts_are_listed_in_words() {
        assert_eq!(clients_list(&[1]), "1 client");
        assert_eq!(clients_list(&[2, 8]), "2 and 8 clients");
        assert_eq!(clients_list(&[2, 8, 32]), "2, 8 and 32 clients");
    }
}
