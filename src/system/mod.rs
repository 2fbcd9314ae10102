//! The lock services lockbench can start and lock on, as data: [`System`] is a system's name,
//! and its [`Facts`] (name, sizes, strategies, image, what times its leases, plot colour) are
//! everything the rest of lockbench reads about it without talking to it. [`SYSTEMS`] lists
//! them, in the order reports show them. What a system *does* (its cluster provider, version
//! probe, recipe connect) is its [`crate::service::LockService`], which sits above the clusters
//! and recipes it uses; this module imports only [`crate::strategy`], so every module may name a
//! system.
//!
//! Adding a system: one folder `service/<name>/` and one line in [`registry`]. The line compiles
//! the folder's `facts.rs` here, as `system::<name>` (its `System` constant, its [`ImageKind`]
//! when it brings an image, with `docker/<name>/`, and its [`Facts`]), and the rest of the
//! folder as its service.

pub mod registry;
pub mod settings;
pub mod version;

pub use version::{Release, SystemAt, Version};

registry::each_system!(facts_modules);
use registry::facts_modules;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::strategy::Strategy;

/// A lock service lockbench knows how to start and drive, named by its [`Facts`] entry in
/// [`SYSTEMS`]. The constants (`System::Zookeeper`, ...) live in each system's `facts.rs`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct System {
    name: &'static str,
}

/// Every system, in the order reports list them (the order of [`SYSTEMS`]): iterates
/// by value and derefs to a slice, as the fixed array it replaced did.
pub const ALL_SYSTEMS: AllSystems = AllSystems;

/// The type of [`ALL_SYSTEMS`].
#[derive(Debug, Clone, Copy)]
pub struct AllSystems;

static SYSTEM_LIST: std::sync::LazyLock<Vec<System>> =
    std::sync::LazyLock::new(|| SYSTEMS.iter().map(|f| f.system).collect());

impl std::ops::Deref for AllSystems {
    type Target = [System];
    fn deref(&self) -> &[System] {
        &SYSTEM_LIST
    }
}

impl IntoIterator for AllSystems {
    type Item = System;
    type IntoIter = std::iter::Copied<std::slice::Iter<'static, System>>;
    fn into_iter(self) -> Self::IntoIter {
        SYSTEM_LIST.iter().copied()
    }
}

/// Every system's facts, in registry order: `FACTS.iter()` as the table it replaced.
pub const FACTS: AllFacts = AllFacts;

/// The type of [`FACTS`].
#[derive(Debug, Clone, Copy)]
pub struct AllFacts;

impl AllFacts {
    /// Each system's facts, in registry order.
    pub fn iter(self) -> impl Iterator<Item = &'static Facts> {
        SYSTEMS.iter().copied()
    }
}

/// A system name or a size that lockbench does not accept, with the valid values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SystemError {
    #[error("unknown system '{0}': valid systems are {1}")]
    Unknown(String, String),
    #[error("invalid size {size} for {system}: valid sizes are {valid}")]
    BadSize {
        system: System,
        size: usize,
        valid: &'static str,
    },
}

/// What lockbench knows about one system as data: the CLI, the plan, error messages, the
/// cluster start and the plots read it here.
#[derive(Debug)]
pub struct Facts {
    /// The system.
    pub system: System,
    /// The name used on the command line, in files and in image names.
    pub name: &'static str,
    /// Other names the command line accepts.
    pub aliases: &'static [&'static str],
    /// Server nodes started when no size is given.
    pub default_size: usize,
    /// Sizes that can be started.
    pub sizes: &'static [usize],
    /// The valid sizes, as error messages say them.
    pub sizes_text: &'static str,
    /// The server image it runs on.
    pub image: ImageKind,
    /// The waiting strategies its recipe offers, the unsafe calibration ones (`unsafe-*`)
    /// included: defaults never pick those, a workload or `--strategies` must name them.
    pub strategies: &'static [Strategy],
    /// No node leads (Redlock's independent masters): `leader` faults hit the first server up.
    pub leaderless: bool,
    /// Whether a run that names no systems starts it: the default comparison is kept to about
    /// five minutes, so the stores added later (PostgreSQL, MariaDB, Memcached) run when named
    /// (`--systems`) or with `--all-systems`.
    pub in_default_run: bool,
    /// No failover of its own: a replica takes writes only when an operator promotes it
    /// (PostgreSQL, MariaDB), which the `promote` fault does.
    pub manual_failover: bool,
    /// What times its leases, which says how a clock fault reaches its servers.
    pub lease_clock: LeaseClock,
    /// The lock kinds its recipe implements, by their names in workload files (`mutex`,
    /// `reentrant`, `rwlock`, `semaphore`); a workload of another kind is refused at plan time.
    pub lock_kinds: &'static [&'static str],
    /// Its colour in plots, as RGB; chosen with the others' so all stay apart (see
    /// `report::plots::canvas::system_colour`).
    pub colour: (u8, u8, u8),
    /// Every server setting lockbench gives that differs from the package's default, from the
    /// folder's `settings.rs` ([`settings`]).
    pub settings: &'static [settings::ServerSetting],
}

/// What times a system's leases, as the clock fault sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseClock {
    /// Sessions or leases run on monotonic time (ZooKeeper, etcd): a wall-clock jump does not
    /// move them.
    Monotonic,
    /// Keys expire by their Redis TTLs, on the wall clock (Redis, Redlock): the clock model
    /// reaches them over the Redis protocol.
    RedisTtl,
}

/// The systems a run that names none starts ([`Facts::in_default_run`]), in report order.
pub fn default_systems() -> Vec<System> {
    FACTS
        .iter()
        .filter(|f| f.in_default_run)
        .map(|f| f.system)
        .collect()
}

/// The valid system names, as error messages list them.
fn valid_names() -> String {
    FACTS.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
}

impl System {
    /// A system's name as its folder declares it; it must be registered in
    /// [`SYSTEMS`] (a test checks every constant is).
    pub(crate) const fn named(name: &'static str) -> System {
        System { name }
    }

    /// Where reports list this system: its place in [`SYSTEMS`].
    pub fn position(self) -> usize {
        SYSTEMS
            .iter()
            .position(|f| f.name == self.name)
            .expect("every System constant is registered in system::SYSTEMS")
    }

    /// This system's facts: its entry in [`SYSTEMS`].
    pub fn facts(self) -> &'static Facts {
        SYSTEMS
            .iter()
            .copied()
            .find(|f| f.name == self.name)
            .expect("every System constant is registered in system::SYSTEMS")
    }

    /// The name used on the command line, in files and in image names.
    pub fn name(self) -> &'static str {
        self.name
    }

    /// The number of server nodes started when no size is given.
    pub fn default_size(self) -> usize {
        self.facts().default_size
    }

    /// Checks a requested size. For `redis` the size counts the data nodes (one master plus
    /// replicas); the three Sentinels come on top.
    pub fn validate_size(self, size: usize) -> Result<usize, SystemError> {
        let f = self.facts();
        if f.sizes.contains(&size) {
            Ok(size)
        } else {
            Err(SystemError::BadSize {
                system: self,
                size,
                valid: f.sizes_text,
            })
        }
    }

    /// The server image this system runs on (Redlock uses the Redis image).
    pub fn image_kind(self) -> ImageKind {
        self.facts().image
    }

    /// The waiting strategies this system's recipe offers.
    pub fn strategies(self) -> &'static [Strategy] {
        self.facts().strategies
    }

    /// The lock kinds this system implements, by name (see [`Facts::lock_kinds`]).
    pub fn lock_kinds(self) -> &'static [&'static str] {
        self.facts().lock_kinds
    }

    /// The strategies this system offers, as error messages and help texts list them; the
    /// unsafe ones are labelled "unsafe, for calibration".
    pub fn strategies_text(self) -> String {
        self.strategies()
            .iter()
            .map(|s| s.labelled())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

// Reports list systems in registry order, not by name.
impl Ord for System {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.position()
            .cmp(&other.position())
            .then(self.name.cmp(other.name))
    }
}

impl PartialOrd for System {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl fmt::Display for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl FromStr for System {
    type Err = SystemError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase();
        FACTS
            .iter()
            .find(|f| f.name == wanted || f.aliases.contains(&wanted.as_str()))
            .map(|f| f.system)
            .ok_or_else(|| SystemError::Unknown(s.to_string(), valid_names()))
    }
}

// Files hold the bare name (`"zookeeper"`), as the enum this replaced wrote it.
impl Serialize for System {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name)
    }
}

// Files must name a system exactly (no aliases, no other case), as with the enum before.
impl<'de> Deserialize<'de> for System {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        FACTS
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.system)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "unknown system '{name}': valid systems are {}",
                    valid_names()
                ))
            })
    }
}

/// A server image lockbench builds: its name and embedded build files; its versions (the tags)
/// are [`Version`]s. The constants (`ImageKind::Zookeeper`, ...) live in the folder of the
/// system that brings the image.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImageKind {
    name: &'static str,
    dockerfile: &'static str,
    entrypoint: &'static str,
}

/// All images, in build order (the order systems first name them in the registry).
pub fn all_images() -> Vec<ImageKind> {
    let mut out: Vec<ImageKind> = Vec::new();
    for f in FACTS.iter() {
        if !out.contains(&f.image) {
            out.push(f.image);
        }
    }
    out
}

impl ImageKind {
    /// An image built from `docker/<name>/` (its Dockerfile and entrypoint, embedded).
    pub(crate) const fn new(
        name: &'static str,
        dockerfile: &'static str,
        entrypoint: &'static str,
    ) -> ImageKind {
        ImageKind {
            name,
            dockerfile,
            entrypoint,
        }
    }

    /// The registered image whose folder is `name`.
    pub fn named(name: &str) -> Option<ImageKind> {
        all_images().into_iter().find(|k| k.name == name)
    }

    /// The folder under docker/ and the image's short name.
    pub fn name(self) -> &'static str {
        self.name
    }

    /// The embedded Dockerfile.
    pub fn dockerfile(self) -> &'static str {
        self.dockerfile
    }

    /// The embedded entrypoint script.
    pub fn entrypoint(self) -> &'static str {
        self.entrypoint
    }
}

impl fmt::Debug for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl fmt::Display for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl Serialize for ImageKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_systems_and_rejects_others() {
        assert_eq!("ZooKeeper".parse::<System>(), Ok(System::Zookeeper));
        assert_eq!("redlock".parse::<System>(), Ok(System::Redlock));
        let err = "consul".parse::<System>().unwrap_err();
        assert!(
            err.to_string()
                .contains("valid systems are zookeeper, etcd, redis, redlock")
        );
    }

    #[test]
    fn sizes_are_checked_per_system() {
        assert!(System::Zookeeper.validate_size(4).is_ok());
        assert!(System::Zookeeper.validate_size(2).is_err());
        assert!(System::Redlock.validate_size(4).is_err());
        assert!(System::Redlock.validate_size(5).is_ok());
        assert!(System::Etcd.validate_size(0).is_err());
        let msg = System::Redlock.validate_size(6).unwrap_err().to_string();
        assert!(msg.contains("odd numbers"), "{msg}");
    }

    #[test]
    fn the_table_covers_every_system_once_and_says_its_strategies() {
        for (i, f) in FACTS.iter().enumerate() {
            assert_eq!(f.system.facts().name, f.name);
            assert_eq!(ALL_SYSTEMS[i], f.system);
            assert!(f.sizes.contains(&f.default_size), "{}", f.name);
            assert_eq!(f.name.parse::<System>(), Ok(f.system));
        }
        assert!(System::Etcd.strategies().contains(&Strategy::Native));
        assert!(!System::Redis.strategies().contains(&Strategy::Native));
        assert_eq!(
            System::Zookeeper.strategies_text(),
            "herd, predecessor, unsafe-writer-skips-readers (unsafe, for calibration)"
        );
        assert_eq!(
            System::Redis.strategies_text(),
            "herd, predecessor, unsafe-del (unsafe, for calibration), \
             unsafe-setnx-expire (unsafe, for calibration), \
             unsafe-get-set (unsafe, for calibration)"
        );
        // The unsafe designs are Redis's (Memcached's plain-delete release too), ZooKeeper's
        // read-write lock calibration and MariaDB's shared session.
        let calibrated = [
            System::Redis,
            System::Memcached,
            System::Zookeeper,
            System::Mariadb,
        ];
        for f in FACTS.iter().filter(|f| !calibrated.contains(&f.system)) {
            assert!(f.strategies.iter().all(|s| !s.is_unsafe()), "{}", f.name);
        }
        assert_eq!("zk".parse::<System>(), Ok(System::Zookeeper));
    }

    #[test]
    fn each_registry_line_names_its_folder_and_its_facts_file() {
        assert_eq!(super::FACTS_FILES.len(), SYSTEMS.len());
        for ((folder, path), facts) in super::FACTS_FILES.iter().zip(SYSTEMS) {
            assert_eq!(*path, format!("../service/{folder}/facts.rs"));
            assert_eq!(
                facts.name.replace('-', "_"),
                *folder,
                "the folder is the system's name"
            );
        }
    }

    #[test]
    fn the_registry_names_each_system_once_in_report_order() {
        let names: Vec<&str> = ALL_SYSTEMS.into_iter().map(System::name).collect();
        // The shipped four, in this order (a system registered later may come anywhere).
        let shipped: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| ["zookeeper", "etcd", "redis", "redlock"].contains(n))
            .collect();
        assert_eq!(shipped, ["zookeeper", "etcd", "redis", "redlock"]);
        let mut once = names.clone();
        once.sort();
        once.dedup();
        assert_eq!(once.len(), names.len(), "each system once");
        for (i, s) in ALL_SYSTEMS.into_iter().enumerate() {
            assert_eq!(s.position(), i);
            assert_eq!(s.facts().system, s);
        }
        // Ordering follows the registry, not the alphabet.
        assert!(System::Zookeeper < System::Etcd && System::Redis < System::Redlock);
        let mut colours: Vec<_> = FACTS.iter().map(|f| f.colour).collect();
        colours.sort();
        colours.dedup();
        assert_eq!(colours.len(), ALL_SYSTEMS.len(), "one colour per system");
        let images: Vec<&str> = all_images().into_iter().map(ImageKind::name).collect();
        assert_eq!(images[..3], ["zookeeper", "etcd", "redis"]);
        assert_eq!(System::Redlock.image_kind(), ImageKind::Redis);
        assert!(System::Redlock.facts().leaderless);
    }

    #[test]
    fn files_hold_the_bare_name_and_only_exact_names_read_back() {
        assert_eq!(
            serde_json::to_string(&System::Zookeeper).unwrap(),
            "\"zookeeper\""
        );
        let back: System = serde_json::from_str("\"redlock\"").unwrap();
        assert_eq!(back, System::Redlock);
        let e = serde_json::from_str::<System>("\"zk\"").unwrap_err();
        assert!(e.to_string().contains("valid systems are"), "{e}");
        let map: std::collections::BTreeMap<System, u8> =
            serde_json::from_str(r#"{"etcd": 1, "zookeeper": 2}"#).unwrap();
        assert_eq!(
            map.keys().copied().collect::<Vec<_>>(),
            [System::Zookeeper, System::Etcd]
        );
    }
}
