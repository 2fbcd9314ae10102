//! zookeeper's facts: its name, sizes, image, strategies and plot colour, as data. This file is
//! compiled as `crate::system::zookeeper`, below every other module, so that every module may name
//! the system (see [`crate::system::registry`]); the rest of this folder is what the system
//! does, its [`crate::service::LockService`].

use crate::strategy::Strategy;
use crate::system::{Facts, ImageKind, LeaseClock, System};

impl System {
    /// An Apache ZooKeeper ensemble.
    #[allow(non_upper_case_globals)]
    pub const Zookeeper: System = System::named("zookeeper");
}

impl ImageKind {
    /// ZooKeeper from Debian's package.
    #[allow(non_upper_case_globals)]
    pub const Zookeeper: ImageKind = ImageKind::new(
        "zookeeper",
        include_str!("../../../docker/zookeeper/Dockerfile"),
        include_str!("../../../docker/zookeeper/entrypoint.sh"),
    );
}

/// The server settings that differ from the package's defaults.
#[path = "settings.rs"]
mod settings;

pub(super) static FACTS: Facts = Facts {
    system: System::Zookeeper,
    name: "zookeeper",
    aliases: &["zk"],
    default_size: 3,
    sizes: &[1, 3, 4, 5],
    sizes_text: "1, 3, 4 (to show the even split), 5",
    image: ImageKind::Zookeeper,
    strategies: &[
        Strategy::Herd,
        Strategy::Predecessor,
        Strategy::UnsafeWriterSkipsReaders,
    ],
    leaderless: false,
    in_default_run: true,
    manual_failover: false,
    lease_clock: LeaseClock::Monotonic,
    lock_kinds: &["mutex", "reentrant", "rwlock", "semaphore"],
    colour: (0, 64, 140),
    settings: settings::SETTINGS,
};
