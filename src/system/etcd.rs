//! etcd's facts: its name, sizes, image and strategies, as data (how it is started, probed
//! and connected to is `service/etcd/`).

use super::{Facts, ImageKind, LeaseClock, System};
use crate::strategy::Strategy;

impl System {
    /// An etcd 3.4 cluster.
    #[allow(non_upper_case_globals)]
    pub const Etcd: System = System::named("etcd");
}

impl ImageKind {
    /// etcd from Debian's package.
    #[allow(non_upper_case_globals)]
    pub const Etcd: ImageKind = ImageKind::new(
        "etcd",
        "3.4",
        include_str!("../../docker/etcd/Dockerfile"),
        include_str!("../../docker/etcd/entrypoint.sh"),
    );
}

pub(super) static FACTS: Facts = Facts {
    system: System::Etcd,
    name: "etcd",
    aliases: &[],
    default_size: 3,
    sizes: &[1, 2, 3, 4, 5, 6, 7],
    sizes_text: "1 to 7",
    image: ImageKind::Etcd,
    strategies: &[Strategy::Herd, Strategy::Predecessor, Strategy::Native],
    leaderless: false,
    lease_clock: LeaseClock::Monotonic,
    colour: (230, 159, 0),
};
