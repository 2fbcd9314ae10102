//! redlock's facts: its name, sizes, image, strategies and plot colour, as data. This file is
//! compiled as `crate::system::redlock`, below every other module, so that every module may name
//! the system (see [`crate::system::registry`]); the rest of this folder is what the system
//! does, its [`crate::service::LockService`].

use crate::strategy::Strategy;
use crate::system::{Facts, ImageKind, LeaseClock, System};

impl System {
    /// Independent Redis masters used together through the Redlock algorithm.
    #[allow(non_upper_case_globals)]
    pub const Redlock: System = System::named("redlock");
}

pub(super) static FACTS: Facts = Facts {
    system: System::Redlock,
    name: "redlock",
    aliases: &[],
    default_size: 5,
    sizes: &[1, 3, 5, 7, 9],
    sizes_text: "odd numbers 1 to 9",
    image: ImageKind::Redis,
    strategies: &[Strategy::Herd, Strategy::Predecessor],
    leaderless: true,
    in_default_run: true,
    manual_failover: false,
    lease_clock: LeaseClock::RedisTtl,
    // No semaphore: over a majority of masters it is unsafe from 2 permits on
    // (service/redlock/recipe.rs says why).
    lock_kinds: &["mutex", "reentrant", "rwlock"],
    colour: (204, 121, 167),
    settings: super::redis::settings::SERVER,
};
