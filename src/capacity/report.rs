//! The capacity of one system × strategy × workload, from the cells of a concurrency sweep:
//! the measured points, the USL fit, its peak, and how many clients keep a latency SLO, both
//! as measured and as the fit predicts. Pure (no I/O); [`Capacity`] is written as is to
//! `<run>/capacity.json` ([`CAPACITY_FILE`]).
//!
//! # The USL's prediction of the SLO
//! The USL models throughput, not latency percentiles. What it does give is the mean time of
//! one closed-loop cycle (acquire, hold, release, think) by Little's law, `R(N) = N / X(N)`
//! ([`UslFit::response_time`]). The prediction assumes the acquire p99 is proportional to
//! that cycle time, `p99(N) ≈ k · R(N)`, and calibrates `k` on the sweep itself: the median
//! over the measured points of `p99_i / (N_i / X_i)` (the median, so one outlying cell does
//! not move it). It then reports the highest `N` from 1 up to [`PREDICTION_REACH`] times the
//! largest measured count (at most [`PREDICTION_LIMIT`]) such that
//! `k · R(m) ≤ SLO` for every `m ≤ N` ([`UslFit::max_clients_within`]). The assumption is
//! rough where the p99 is dominated by something the cycle time does not see (timeouts, a
//! few slow grants), so the prediction is reported next to the measured answer, never instead.

use serde::{Deserialize, Serialize};

use super::slo::Slo;
use super::usl::{UslFit, fit};
use crate::recipe::Strategy;
use crate::results::CellSummary;
use crate::system::System;

/// The file name of a capacity report inside a run folder.
pub const CAPACITY_FILE: &str = "capacity.json";

/// The highest concurrency the USL's SLO prediction looks at (the most clients a cell may
/// have), so an extrapolation past the sweep stays bounded.
pub const PREDICTION_LIMIT: u32 = crate::workload::CLIENTS.1 as u32;

/// How far past the largest measured client count the prediction may reach: a fit on 1–4
/// clients once predicted 1 226 (mock), which no sweep had come near.
pub const PREDICTION_REACH: u32 = 4;

/// One measured cell of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Concurrent clients.
    pub clients: u32,
    /// Acquisitions per second.
    pub throughput: f64,
    /// Acquire latency p99, µs (0 when nothing was acquired; see `acquisitions`).
    pub p99_us: u64,
    /// Completed acquisitions the p99 is taken over.
    pub acquisitions: u64,
}

/// What fitting the USL to the points gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FitOutcome {
    /// The fitted law.
    Fitted(UslFit),
    /// Why the points could not be fitted (the fit's error text, which says what to change).
    Failed(String),
}

/// The USL's answer to "how many clients keep the SLO" (see the module documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloPrediction {
    /// Highest `N` whose predicted p99, and every lower one's, is within the SLO; `None` when
    /// even one client is predicted over it.
    pub max_clients: Option<u32>,
    /// The calibration `k` in `p99 ≈ k · N / X(N)` (dimensionless: µs of p99 per µs of
    /// cycle time).
    pub p99_per_cycle_time: f64,
    /// The highest `N` looked at ([`PREDICTION_REACH`] × the largest measured count, at most
    /// [`PREDICTION_LIMIT`]); `max_clients` equal to it means "at least this many".
    pub searched_up_to: u32,
}

/// The capacity report of one system × strategy × workload × chaos across client counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    /// The system.
    pub system: System,
    /// The waiting strategy.
    pub strategy: Strategy,
    /// The workload's name.
    pub workload: String,
    /// The fault schedule's name (`none` without one).
    pub chaos: String,
    /// The p99 bound of the SLO, µs, if one was given.
    pub slo_p99_us: Option<u64>,
    /// The measured cells, by growing clients.
    pub points: Vec<Point>,
    /// The USL fitted to (clients, throughput).
    pub fit: FitOutcome,
    /// The fit's peak concurrency `N* = √((1−σ)/κ)`; `None` without a fit or a peak.
    pub peak_concurrency: Option<f64>,
    /// The fit's throughput at `N*` (acquisitions/s).
    pub peak_throughput: Option<f64>,
    /// The highest measured client count whose p99 is within the SLO with every lower
    /// measured count also within; `None` without an SLO or when the lowest count misses it.
    /// A cell with no completed acquisition counts as missing the SLO.
    pub max_clients_within_slo: Option<u32>,
    /// The USL's prediction of the same; `None` without an SLO or a fit, or when no measured
    /// point can calibrate it.
    pub usl_prediction_within_slo: Option<SloPrediction>,
}

/// Why the cells do not make one capacity report.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CapacityError {
    /// No finished cell.
    #[error("no finished cell to plan capacity from (the sweep ran no cell to its end)")]
    NoCells,
    /// Cells of more than one system × strategy × workload × chaos.
    #[error(
        "the cells are not one sweep: {first} and {other} differ in system, strategy, workload or chaos (run one system and one strategy per capacity sweep)"
    )]
    Mixed {
        /// The first cell's coordinates.
        first: String,
        /// The first cell that differs.
        other: String,
    },
}

impl Capacity {
    /// The capacity report of `cells` (one system × strategy × workload × chaos at several
    /// client counts) against `slo`.
    pub fn of(cells: &[CellSummary], slo: Option<Slo>) -> Result<Capacity, CapacityError> {
        let first = &cells.first().ok_or(CapacityError::NoCells)?.id;
        let key = |c: &CellSummary| {
            (
                c.id.system,
                c.id.strategy,
                c.id.workload.clone(),
                c.id.chaos.clone(),
            )
        };
        if let Some(other) = cells.iter().find(|c| key(c) != key(&cells[0])) {
            return Err(CapacityError::Mixed {
                first: first.to_string(),
                other: other.id.to_string(),
            });
        }
        let mut points: Vec<Point> = cells
            .iter()
            .map(|c| Point {
                clients: c.id.clients,
                throughput: c.throughput_per_s,
                p99_us: c.acquire_latency_us.p99,
                acquisitions: c.acquire_latency_us.count,
            })
            .collect();
        points.sort_by_key(|p| p.clients);
        let xy: Vec<(f64, f64)> = points
            .iter()
            .map(|p| (f64::from(p.clients), p.throughput))
            .collect();
        let fit = match fit(&xy) {
            Ok(f) => FitOutcome::Fitted(f),
            Err(e) => FitOutcome::Failed(e.to_string()),
        };
        let fitted = match &fit {
            FitOutcome::Fitted(f) => Some(f),
            FitOutcome::Failed(_) => None,
        };
        let slo_us = slo.map(|s| s.p99_us);
        Ok(Capacity {
            system: first.system,
            strategy: first.strategy,
            workload: first.workload.clone(),
            chaos: first.chaos.clone(),
            slo_p99_us: slo_us,
            peak_concurrency: fitted.and_then(UslFit::peak_concurrency),
            peak_throughput: fitted.and_then(UslFit::peak_throughput),
            max_clients_within_slo: slo_us.and_then(|s| max_measured_within(&points, s)),
            usl_prediction_within_slo: match (fitted, slo_us) {
                (Some(f), Some(s)) => predict_within(f, &points, s),
                _ => None,
            },
            points,
            fit,
        })
    }

    /// The fitted law, if the fit succeeded.
    pub fn fitted(&self) -> Option<&UslFit> {
        match &self.fit {
            FitOutcome::Fitted(f) => Some(f),
            FitOutcome::Failed(_) => None,
        }
    }
}

/// A point keeps the SLO when it completed acquisitions and their p99 is within it.
fn within(p: &Point, slo_us: u64) -> bool {
    p.acquisitions > 0 && p.p99_us <= slo_us
}

/// The highest measured client count within the SLO with every lower count within too
/// (points sorted by clients; several points at one count must all be within).
fn max_measured_within(points: &[Point], slo_us: u64) -> Option<u32> {
    let mut best = None;
    for p in points {
        if !within(p, slo_us) {
            break;
        }
        best = Some(p.clients);
    }
    // A later point at the same count that failed makes that count fail.
    if let Some(n) = best
        && points.iter().any(|p| p.clients == n && !within(p, slo_us))
    {
        return points
            .iter()
            .filter(|p| p.clients < n)
            .map(|p| p.clients)
            .max();
    }
    best
}

/// The USL's prediction (see the module documentation); `None` when no point calibrates it.
fn predict_within(fit: &UslFit, points: &[Point], slo_us: u64) -> Option<SloPrediction> {
    let mut ratios: Vec<f64> = points
        .iter()
        .filter(|p| p.acquisitions > 0 && p.throughput > 0.0 && p.p99_us > 0)
        .map(|p| p.p99_us as f64 / (1e6 * f64::from(p.clients) / p.throughput))
        .filter(|r| r.is_finite())
        .collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let mid = ratios.len() / 2;
    let k = if ratios.len() % 2 == 1 {
        ratios[mid]
    } else {
        (ratios[mid - 1] + ratios[mid]) / 2.0
    };
    let slo = slo_us as f64;
    let largest = points.iter().map(|p| p.clients).max().unwrap_or(1);
    let limit = largest
        .saturating_mul(PREDICTION_REACH)
        .min(PREDICTION_LIMIT);
    let max_clients = fit.max_clients_within(limit, |n, x| {
        x > 0.0 && x.is_finite() && k * 1e6 * n / x <= slo
    });
    Some(SloPrediction {
        max_clients,
        p99_per_cycle_time: k,
        searched_up_to: limit,
    })
}

#[cfg(test)]
#[path = "report_tests.rs"]
pub(crate) mod tests;
