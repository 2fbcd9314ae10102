//! redlock's facts: its name, sizes, image and strategies, as data (how it is started, probed
//! and connected to is `service/redlock/`).

use super::{Facts, ImageKind, LeaseClock, System};
use crate::strategy::Strategy;

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
    lease_clock: LeaseClock::RedisTtl,
    colour: (204, 121, 167),
};
