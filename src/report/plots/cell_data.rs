//! What the per-cell plots read from a cell's history, gathered in one pass: acquisitions with
//! their latency and outcome, critical sections, refused stale accesses and fault windows.

use std::collections::HashSet;

use crate::history::{
    CriticalSection, ErrorKind, Event, EventKind, Mode, Op, critical_sections, operations,
};
use crate::results::FaultWindow;

/// How an acquisition ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Granted.
    Ok,
    /// Definitely not granted (timeout, refusal, error).
    Fail,
    /// Unknown: the client cannot tell whether it was granted.
    Info,
}

/// One acquisition: when it was meant to start, how long it took, how it ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Acquisition {
    /// The intended start (open loop) or the invoke, µs since the cell's start.
    pub start_us: u64,
    /// From that start to the outcome, µs.
    pub latency_us: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// The client.
    pub client: u32,
}

/// A fault window, as the summary's `faults` gives it, with its end known.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultBand {
    /// The fault kind (`kill`, `partition`, …).
    pub kind: String,
    /// A short label: the kind and its targets.
    pub label: String,
    /// Start (the nemesis asked for the fault) and end (its undo completed), µs since the
    /// cell's start (an open window ends with the history).
    pub start_us: u64,
    pub end_us: u64,
    /// When the fault was in effect: from its start's completion to its undo's request, µs;
    /// `start_us..end_us` when the history does not say.
    pub effect_us: u64,
    pub undo_us: u64,
}

/// A cell's history, digested for plotting.
#[derive(Debug, Clone, Default)]
pub struct CellData {
    /// Every acquisition with an outcome, in invoke order.
    pub acquisitions: Vec<Acquisition>,
    /// Every critical section, in grant order.
    pub sections: Vec<CriticalSection>,
    /// Whether each of `sections` (by position) was a read-write lock's read hold: its grant's
    /// `mode`, else its invoke's, is `read` (no mode: exclusive). All false for other kinds.
    pub reads: Vec<bool>,
    /// Register accesses refused for a stale token: (time µs, client, key).
    pub stale_refused: Vec<(u64, u32, String)>,
    /// Fault windows.
    pub faults: Vec<FaultBand>,
    /// The last event's time, µs.
    pub end_us: u64,
    /// Client ids seen, sorted.
    pub clients: Vec<u32>,
}

impl CellData {
    /// Digests `events` (a cell's history) and the summary's fault windows.
    pub fn of(events: &[Event], faults: &[FaultWindow]) -> CellData {
        let end_us = events.iter().map(|e| e.t_us).max().unwrap_or(0);
        let mut acquisitions = Vec::new();
        // The acquire `ok`s that granted a read.
        let mut read_grants: HashSet<usize> = HashSet::new();
        for op in operations(events).ops {
            if op.op != Op::Acquire {
                continue;
            }
            let (Some(out), Some(client)) = (op.outcome, op.process.client()) else {
                continue;
            };
            let invoke = &events[op.invoke];
            if events[out].kind == EventKind::Ok && Mode::is_read(events[out].mode.or(invoke.mode))
            {
                read_grants.insert(out);
            }
            let start_us = invoke.intended_us.unwrap_or(invoke.t_us);
            let outcome = match events[out].kind {
                EventKind::Ok => Outcome::Ok,
                EventKind::Fail => Outcome::Fail,
                _ => Outcome::Info,
            };
            acquisitions.push(Acquisition {
                start_us,
                latency_us: events[out].t_us.saturating_sub(start_us),
                outcome,
                client,
            });
        }
        let stale_refused = events
            .iter()
            .filter(|e| {
                matches!(e.op, Op::Read | Op::Write)
                    && e.kind == EventKind::Fail
                    && e.error_kind == Some(ErrorKind::Stale)
            })
            .filter_map(|e| Some((e.t_us, e.client()?, e.key.clone())))
            .collect();
        let mut clients: Vec<u32> = events.iter().filter_map(Event::client).collect();
        clients.sort_unstable();
        clients.dedup();
        let sections = critical_sections(events);
        let reads = sections
            .iter()
            .map(|s| read_grants.contains(&s.acquired_at))
            .collect();
        CellData {
            acquisitions,
            sections,
            reads,
            stale_refused,
            faults: fault_bands(faults, end_us),
            end_us,
            clients,
        }
    }
}

/// The summary's fault windows as bands; a window never closed ends with the history.
pub fn fault_bands(faults: &[FaultWindow], end_us: u64) -> Vec<FaultBand> {
    faults
        .iter()
        .filter(|f| f.started)
        .map(|f| {
            let targets = f.targets.join(",");
            // The clock fault is a model of a jump: the plots say so and what it does, in the
            // reports' words.
            let kind = f.kind_label();
            let label = if targets.is_empty() {
                kind
            } else {
                format!("{kind} {targets}")
            };
            let end = f.end_us.unwrap_or(end_us).max(f.start_us);
            let effect = f.effect_us.unwrap_or(f.start_us).clamp(f.start_us, end);
            FaultBand {
                kind: f.kind.clone(),
                label,
                start_us: f.start_us,
                end_us: end,
                effect_us: effect,
                undo_us: f.undo_us.unwrap_or(end).clamp(effect, end),
            }
        })
        .collect()
}

/// The distinct fault kinds of `bands`, in order of first appearance (their colours).
pub fn fault_kinds(bands: &[FaultBand]) -> Vec<String> {
    let mut kinds: Vec<String> = Vec::new();
    for b in bands {
        if !kinds.contains(&b.kind) {
            kinds.push(b.kind.clone());
        }
    }
    kinds
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::faults::CLOCK_MODEL;

    fn window(kind: &str, started: bool, effect: Option<&str>) -> FaultWindow {
        serde_json::from_value(serde_json::json!({
            "kind": kind, "targets": ["redis1"], "start_us": 1_000_000, "end_us": 3_000_000,
            "started": started, "effect": effect, "acquisitions": 0, "verdict": "safe",
            "overlaps": 0, "possible_overlaps": 0, "lost_updates": 0,
            "stale_accesses_rejected": 0, "token_regressions": 0, "lost_leases": 0, "errors": {}
        }))
        .unwrap()
    }

    #[test]
    fn a_clock_band_says_what_the_model_does_in_the_reports_words() {
        let bands = fault_bands(
            &[
                window(
                    "clock",
                    true,
                    Some("modelled: ...; redis1: 3 TTLs cut, 1 keys expired"),
                ),
                window(
                    "clock",
                    true,
                    Some("partial: modelled: ...; redis1: refused (READONLY)"),
                ),
                window("kill", true, None),
                window("kill", false, None),
            ],
            10_000_000,
        );
        let labels: Vec<&str> = bands.iter().map(|b| b.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "clock (modelled: TTLs and deadlines cut, no clock changed) redis1",
                "clock (partial, modelled: TTLs and deadlines cut, no clock changed) redis1",
                "kill redis1",
            ],
            "a fault that did not start draws no band"
        );
        // The one wording the reports use too.
        assert!(labels[0].contains(CLOCK_MODEL));
        assert_eq!(bands[0].kind, "clock");
    }
}
