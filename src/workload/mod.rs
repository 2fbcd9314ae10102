//! Workloads: what each client does, when and on which key. This half holds the pure parts (the
//! random choices); client loops and arrival pacing build on it.

pub mod distribution;

pub use distribution::{DurationDist, KeyChooser, KeyDistribution, client_rng};
