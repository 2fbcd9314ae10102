//! The systems lockbench can start and lock on, with their valid cluster sizes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

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

/// Every system, in the order reports list them.
pub const ALL_SYSTEMS: [System; 4] = [
    System::Zookeeper,
    System::Etcd,
    System::Redis,
    System::Redlock,
];

/// A system name or a size that lockbench does not accept, with the valid values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SystemError {
    #[error("unknown system '{0}': valid systems are zookeeper, etcd, redis, redlock")]
    Unknown(String),
    #[error("invalid size {size} for {system}: valid sizes are {valid}")]
    BadSize {
        system: System,
        size: usize,
        valid: &'static str,
    },
}

impl System {
    /// The name used on the command line, in files and in image names.
    pub fn name(self) -> &'static str {
        match self {
            System::Zookeeper => "zookeeper",
            System::Etcd => "etcd",
            System::Redis => "redis",
            System::Redlock => "redlock",
        }
    }

    /// The number of server nodes started when no size is given.
    pub fn default_size(self) -> usize {
        match self {
            System::Zookeeper | System::Etcd => 3,
            System::Redis => 3,
            System::Redlock => 5,
        }
    }

    /// Checks a requested size. For `redis` the size counts the data nodes (one master plus
    /// replicas); the three Sentinels come on top.
    pub fn validate_size(self, size: usize) -> Result<usize, SystemError> {
        let (ok, valid) = match self {
            System::Zookeeper => (
                matches!(size, 1 | 3 | 4 | 5),
                "1, 3, 4 (to show the even split), 5",
            ),
            System::Etcd => ((1..=7).contains(&size), "1 to 7"),
            System::Redis => ((1..=5).contains(&size), "1 to 5 (one master plus replicas)"),
            System::Redlock => (size % 2 == 1 && size <= 9, "odd numbers 1 to 9"),
        };
        if ok {
            Ok(size)
        } else {
            Err(SystemError::BadSize {
                system: self,
                size,
                valid,
            })
        }
    }

    /// The server image this system runs on (Redlock uses the Redis image).
    pub fn image_kind(self) -> ImageKind {
        match self {
            System::Zookeeper => ImageKind::Zookeeper,
            System::Etcd => ImageKind::Etcd,
            System::Redis | System::Redlock => ImageKind::Redis,
        }
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
        match s.trim().to_ascii_lowercase().as_str() {
            "zookeeper" | "zk" => Ok(System::Zookeeper),
            "etcd" => Ok(System::Etcd),
            "redis" => Ok(System::Redis),
            "redlock" => Ok(System::Redlock),
            _ => Err(SystemError::Unknown(s.to_string())),
        }
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
}
