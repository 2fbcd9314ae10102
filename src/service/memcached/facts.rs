//! memcached's facts: its name, sizes, image, strategies and plot colour, as data. This file is
//! compiled as `crate::system::memcached`, below every other module, so that every module may
//! name the system (see [`crate::system::registry`]); the rest of this folder is what the system
//! does, its [`crate::service::LockService`].

use crate::strategy::Strategy;
use crate::system::{Facts, ImageKind, LeaseClock, System};

impl System {
    /// Independent Memcached servers, each lock on the node its key hashes to (`add` with a
    /// TTL, the meta protocol's `ms ... ME`).
    #[allow(non_upper_case_globals)]
    pub const Memcached: System = System::named("memcached");
}

impl ImageKind {
    /// Memcached from Debian's package.
    #[allow(non_upper_case_globals)]
    pub const Memcached: ImageKind = ImageKind::new(
        "memcached",
        include_str!("../../../docker/memcached/Dockerfile"),
        include_str!("../../../docker/memcached/entrypoint.sh"),
    );
}

pub(super) static FACTS: Facts = Facts {
    system: System::Memcached,
    name: "memcached",
    aliases: &["mc"],
    default_size: 3,
    sizes: &[1, 2, 3, 4, 5],
    sizes_text: "1 to 5 (independent servers, keys placed by a consistent hash)",
    image: ImageKind::Memcached,
    // No predecessor: Memcached has no notifications and no ordered queue (see recipe.rs).
    // `unsafe-del` runs only when named.
    strategies: &[Strategy::Herd, Strategy::UnsafeDel],
    // No replication and no leader: every key lives on one node, chosen by the client.
    leaderless: true,
    in_default_run: false,
    manual_failover: false,
    // Item TTLs count on memcached's own process clock, read from CLOCK_MONOTONIC (measured:
    // a server whose wall clock ran 10x fast under libfaketime still expired a 5 s item after
    // 4.9 s): a wall-clock jump does not move them.
    lease_clock: LeaseClock::Monotonic,
    lock_kinds: &["mutex", "reentrant"],
    colour: (140, 90, 30),
    settings: &[],
};
