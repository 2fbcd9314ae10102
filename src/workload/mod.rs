//! Workloads: what each client does, when and on which key. This half holds the random choices
//! ([`distribution`]) and the precise waits that keep holds, thinks and arrivals on time
//! ([`pace`]); the client loop (`runner::client`) builds on them.

pub mod distribution;
pub mod pace;

pub use distribution::{DurationDist, KeyChooser, KeyDistribution, client_rng};
