//! mariadb's facts: its name, sizes, image, strategies and plot colour, as data. This file is
//! compiled as `crate::system::mariadb`, below every other module, so that every module may name
//! the system (see [`crate::system::registry`]); the rest of this folder is what the system
//! does, its [`crate::service::LockService`].

use crate::strategy::Strategy;
use crate::system::{Facts, ImageKind, LeaseClock, System};

impl System {
    /// One MariaDB primary with GTID replicas, locked with `GET_LOCK`.
    #[allow(non_upper_case_globals)]
    pub const Mariadb: System = System::named("mariadb");
}

impl ImageKind {
    /// MariaDB server and client from Debian's packages.
    #[allow(non_upper_case_globals)]
    pub const Mariadb: ImageKind = ImageKind::new(
        "mariadb",
        include_str!("../../../docker/mariadb/Dockerfile"),
        include_str!("../../../docker/mariadb/entrypoint.sh"),
    );
}

/// The server settings that differ from the package's defaults.
#[path = "settings.rs"]
mod settings;

pub(super) static FACTS: Facts = Facts {
    system: System::Mariadb,
    name: "mariadb",
    aliases: &[],
    // A primary plus one replica (the replica is what the promote fault fails over to).
    default_size: 2,
    sizes: &[1, 2, 3],
    sizes_text: "1 to 3 (one primary plus replicas)",
    image: ImageKind::Mariadb,
    // No predecessor: MariaDB has no channel to notify one waiter (see the recipe's doc).
    // `unsafe-shared-session` runs only when named.
    strategies: &[
        Strategy::Native,
        Strategy::Herd,
        Strategy::UnsafeSharedSession,
    ],
    leaderless: false,
    in_default_run: false,
    // Replication has no failover of its own: an operator promotes a replica.
    manual_failover: true,
    // Session locks have no TTL: they last as long as the connection (the recipe sets the
    // session's `wait_timeout`, counted by the server's own timer; see its recipe.rs).
    lease_clock: LeaseClock::Monotonic,
    lock_kinds: &["mutex", "reentrant"],
    colour: (213, 94, 0),
    settings: settings::SETTINGS,
};
