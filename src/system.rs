//! The systems lockbench can start and lock on, with their valid cluster sizes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::recipe::Strategy;

/// A lock service lockbench knows how to start and drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum System {
    /// An Apache ZooKeeper 3.8 ensemble.
    Zookeeper,
    /// An etcd 3.4 cluster.
    Etcd,
    /// One Redis 7.0 master with replicas, watched by three Sentinels.
    Redis,
    /// Independent Redis masters used together through the Redlock algorithm.
    Redlock,
}

/// Every system, in the order reports list them (the order of [`FACTS`]).
pub const ALL_SYSTEMS: [System; 4] = [
    FACTS[0].system,
    FACTS[1].system,
    FACTS[2].system,
    FACTS[3].system,
];

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

/// What lockbench knows about one system, in one place: the CLI, the plan, error messages and
/// the cluster providers read it here. A new system is one new entry (plus its cluster provider
/// and recipe folders).
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
}

/// The table of system facts, in the order reports list the systems.
pub const FACTS: [Facts; 4] = [
    Facts {
        system: System::Zookeeper,
        name: "zookeeper",
        aliases: &["zk"],
        default_size: 3,
        sizes: &[1, 3, 4, 5],
        sizes_text: "1, 3, 4 (to show the even split), 5",
        image: ImageKind::Zookeeper,
        strategies: &[Strategy::Herd, Strategy::Predecessor],
    },
    Facts {
        system: System::Etcd,
        name: "etcd",
        aliases: &[],
        default_size: 3,
        sizes: &[1, 2, 3, 4, 5, 6, 7],
        sizes_text: "1 to 7",
        image: ImageKind::Etcd,
        strategies: &[Strategy::Herd, Strategy::Predecessor, Strategy::Native],
    },
    Facts {
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
        ],
    },
    Facts {
        system: System::Redlock,
        name: "redlock",
        aliases: &[],
        default_size: 5,
        sizes: &[1, 3, 5, 7, 9],
        sizes_text: "odd numbers 1 to 9",
        image: ImageKind::Redis,
        strategies: &[Strategy::Herd, Strategy::Predecessor],
    },
];

/// The valid system names, as error messages list them.
fn valid_names() -> String {
    FACTS.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
}

impl System {
    /// This system's entry in [`FACTS`].
    pub fn facts(self) -> &'static Facts {
        FACTS
            .iter()
            .find(|f| f.system == self)
            .expect("every system has an entry in FACTS")
    }

    /// The name used on the command line, in files and in image names.
    pub fn name(self) -> &'static str {
        self.facts().name
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

impl fmt::Display for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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

/// One of the three server images lockbench builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageKind {
    Zookeeper,
    Etcd,
    Redis,
}

/// All images, in build order.
pub const ALL_IMAGES: [ImageKind; 3] = [ImageKind::Zookeeper, ImageKind::Etcd, ImageKind::Redis];

impl ImageKind {
    /// The folder under docker/ and the image's short name.
    pub fn name(self) -> &'static str {
        match self {
            ImageKind::Zookeeper => "zookeeper",
            ImageKind::Etcd => "etcd",
            ImageKind::Redis => "redis",
        }
    }
}

impl fmt::Display for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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
        assert_eq!(System::Zookeeper.strategies_text(), "herd, predecessor");
        assert_eq!(
            System::Redis.strategies_text(),
            "herd, predecessor, unsafe-del (unsafe, for calibration), \
             unsafe-setnx-expire (unsafe, for calibration)"
        );
        // The unsafe designs are Redis's alone.
        for f in FACTS.iter().filter(|f| f.system != System::Redis) {
            assert!(f.strategies.iter().all(|s| !s.is_unsafe()), "{}", f.name);
        }
        assert_eq!("zk".parse::<System>(), Ok(System::Zookeeper));
    }
}
