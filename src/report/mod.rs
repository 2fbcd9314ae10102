//! Reporters: turn cell summaries into files people read.

pub mod markdown;
