//! Capacity planning: how many clients a lock takes before it stops scaling or misses its SLO.
//!
//! `lockbench capacity` sweeps the concurrency of one system ×
//! strategy × workload on one cluster (`--clients 1,2,4,…,128`, optionally `--repeat N`),
//! fits the Universal Scalability Law to the measured throughput, and reports λ, σ, κ with
//! their uncertainty, the predicted peak concurrency and throughput, the fit's R², and the
//! highest measured concurrency that keeps the latency SLO next to the law's prediction of it,
//! as `capacity.json`, a plot and a section of the report.
//!
//! The parts: [`usl`], the fit itself ([`fit`] → [`UslFit`]); [`report`], the pure
//! [`Capacity`] report of a sweep's cells; [`slo`], the `--slo` bound; [`mod@file`],
//! `capacity.json`; and [`sweep`], the plan of a sweep and what is done with its cells. The
//! plots exporter draws the capacity figure from `capacity.json`
//! ([`crate::report::plots::capacity`]), and report.md/report.html give it a Capacity section.
//! `--repeat N` runs each count N times, each repetition a point of the fit.

pub mod file;
mod linalg;
pub mod report;
pub mod slo;
pub mod sweep;
pub mod usl;

pub use report::{CAPACITY_FILE, Capacity, CapacityError, FitOutcome};
pub use slo::Slo;
pub use usl::{FitError, UslFit, fit};
