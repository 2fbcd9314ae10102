//! redis's facts: its name, sizes, image, strategies and plot colour, as data. This file is
//! compiled as `crate::system::redis`, below every other module, so that every module may name
//! the system (see [`crate::system::registry`]); the rest of this folder is what the system
//! does, its [`crate::service::LockService`].

use crate::strategy::Strategy;
use crate::system::{Facts, ImageKind, LeaseClock, System};

impl System {
    /// One Redis (or Valkey) master with replicas, watched by three Sentinels.
    #[allow(non_upper_case_globals)]
    pub const Redis: System = System::named("redis");
}

impl ImageKind {
    /// Redis (or Valkey) and Sentinel from Debian's packages (Redlock runs on it too).
    #[allow(non_upper_case_globals)]
    pub const Redis: ImageKind = ImageKind::new(
        "redis",
        include_str!("../../../docker/redis/Dockerfile"),
        include_str!("../../../docker/redis/entrypoint.sh"),
    );
}

impl LeaseClock {
    /// What a Redis lock's queue-entry deadline set is named after the lock key (`K:qx`): the
    /// one place the recipes' scripts keep server-clock times (`TIME` + a TTL, as sorted-set
    /// scores), so the modelled clock fault moves these along with the TTLs
    /// ([`LeaseClock::RedisTtl`]). Kept here, below the fault kinds, so that the recipes'
    /// scripts and the clock model both name it.
    pub const REDIS_DEADLINES_SUFFIX: &str = ":qx";
}

/// The server settings that differ from the package's defaults.
#[path = "settings.rs"]
pub(crate) mod settings;

pub(super) static FACTS: Facts = Facts {
    system: System::Redis,
    name: "redis",
    aliases: &[],
    // Data nodes (one master plus replicas); the three Sentinels come on top.
    default_size: 3,
    sizes: &[1, 2, 3, 4, 5],
    sizes_text: "1 to 5 (one master plus replicas)",
    image: ImageKind::Redis,
    // The unsafe ones run only when named (a workload's `strategies`, `--strategies`).
    strategies: &[
        Strategy::Herd,
        Strategy::Predecessor,
        Strategy::UnsafeDel,
        Strategy::UnsafeSetnxExpire,
        Strategy::UnsafeGetSet,
    ],
    leaderless: false,
    in_default_run: true,
    manual_failover: false,
    lease_clock: LeaseClock::RedisTtl,
    lock_kinds: &["mutex", "reentrant", "rwlock", "semaphore"],
    colour: (0, 140, 100),
    settings: settings::SETTINGS,
};
