//! etcd's facts: its name, sizes, image, strategies and plot colour, as data. This file is
//! compiled as `crate::system::etcd`, below every other module, so that every module may name
//! the system (see [`crate::system::registry`]); the rest of this folder is what the system
//! does, its [`crate::service::LockService`].

use crate::strategy::Strategy;
use crate::system::{Facts, ImageKind, LeaseClock, System};

impl System {
    /// An etcd cluster.
    #[allow(non_upper_case_globals)]
    pub const Etcd: System = System::named("etcd");
}

impl ImageKind {
    /// etcd from Debian's package.
    #[allow(non_upper_case_globals)]
    pub const Etcd: ImageKind = ImageKind::new(
        "etcd",
        include_str!("../../../docker/etcd/Dockerfile"),
        include_str!("../../../docker/etcd/entrypoint.sh"),
    );
}

/// The server settings that differ from the package's defaults.
#[path = "settings.rs"]
mod settings;

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
    in_default_run: true,
    manual_failover: false,
    lease_clock: LeaseClock::Monotonic,
    lock_kinds: &["mutex", "reentrant", "rwlock", "semaphore"],
    colour: (230, 159, 0),
    settings: settings::SETTINGS,
};
