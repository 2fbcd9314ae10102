//! postgres's facts: its name, sizes, image, strategies and plot colour, as data. This file is
//! compiled as `crate::system::postgres`, below every other module (see
//! [`crate::system::registry`]); the rest of this folder is what the system does, its
//! [`crate::service::LockService`].

use crate::strategy::Strategy;
use crate::system::{Facts, ImageKind, LeaseClock, System};

impl System {
    /// One PostgreSQL primary with streaming replicas, locked with session advisory locks.
    #[allow(non_upper_case_globals)]
    pub const Postgres: System = System::named("postgres");
}

impl ImageKind {
    /// PostgreSQL from Debian's package, as a primary or a streaming replica.
    #[allow(non_upper_case_globals)]
    pub const Postgres: ImageKind = ImageKind::new(
        "postgres",
        include_str!("../../../docker/postgres/Dockerfile"),
        include_str!("../../../docker/postgres/entrypoint.sh"),
    );
}

/// The server settings that differ from the package's defaults.
#[path = "settings.rs"]
mod settings;

pub(super) static FACTS: Facts = Facts {
    system: System::Postgres,
    name: "postgres",
    aliases: &["postgresql", "pg"],
    // One primary plus replicas (streaming, asynchronous).
    default_size: 2,
    sizes: &[1, 2, 3],
    sizes_text: "1 to 3 (one primary plus streaming replicas)",
    image: ImageKind::Postgres,
    strategies: &[Strategy::Native, Strategy::Herd, Strategy::Predecessor],
    leaderless: false,
    in_default_run: false,
    // A replica takes writes only when promoted (`pg_promote`): the `promote` fault.
    manual_failover: true,
    // Session locks have no TTL: they end with the session, whatever the wall clock does.
    lease_clock: LeaseClock::Monotonic,
    lock_kinds: &["mutex", "reentrant"],
    colour: (86, 180, 233),
    settings: settings::SETTINGS,
};
