//! Server versions as data: every image lockbench builds comes in the versions that
//! `docker/versions.tsv` lists, each from one Debian release's packages. The first version an
//! image lists is its default; the others run when named (`--systems etcd@3.4`). Redlock runs on
//! the Redis image, so it has the Redis image's versions (Valkey among them).
//!
//! The same file is read by `.ci/run`, which warms Docker's layer cache for every version before
//! the binary exists, so the two can never disagree on a package list.

use std::fmt;
use std::sync::LazyLock;

use super::{ImageKind, System};

/// The versions file, embedded so the binary builds its images anywhere.
const VERSIONS_TSV: &str = include_str!("../../docker/versions.tsv");

/// The Debian release a version's packages come from; each has its own base image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Release {
    /// Debian 12.
    Bookworm,
    /// Debian 13.
    Trixie,
}

impl Release {
    /// Every release, oldest first.
    pub const ALL: [Release; 2] = [Release::Bookworm, Release::Trixie];

    /// The release's code name, as debootstrap and image tags spell it.
    pub fn name(self) -> &'static str {
        match self {
            Release::Bookworm => "bookworm",
            Release::Trixie => "trixie",
        }
    }

    fn parse(s: &str) -> Option<Release> {
        Release::ALL.into_iter().find(|r| r.name() == s)
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One line of `docker/versions.tsv`: an image at one server version.
#[derive(Debug, PartialEq, Eq)]
pub struct VersionRow {
    /// The image's folder under docker/ (`redis`, `etcd`, ...).
    pub image: String,
    /// The version's name: the image tag and what `system@version` names (`3.5`, `valkey-8.1`).
    pub name: String,
    /// The Debian release its packages come from.
    pub release: Release,
    /// The Debian packages that carry the server, comma-separated (the Dockerfile's `PACKAGES`).
    pub packages: String,
    /// Whether it is the image's default (the first row of its image).
    pub default: bool,
}

/// A server version of one image, as the versions file lists it: cheap to copy, compared by
/// image and name.
#[derive(Clone, Copy)]
pub struct Version {
    row: &'static VersionRow,
}

/// Every row of the versions file, in file order. A malformed file fails the first read with
/// the line and the fix: it is embedded, so a test catches it before any release.
static ROWS: LazyLock<Vec<VersionRow>> =
    LazyLock::new(|| parse_rows(VERSIONS_TSV).unwrap_or_else(|e| panic!("{e}")));

/// Reads the versions file's text: `image version release packages` a line, `#` comments.
pub fn parse_rows(text: &str) -> Result<Vec<VersionRow>, String> {
    let mut rows: Vec<VersionRow> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        let at = format!("docker/versions.tsv:{}", i + 1);
        let [image, name, release, packages] = cols[..] else {
            return Err(format!(
                "{at}: expected 4 columns (image, version, release, packages), found {}",
                cols.len()
            ));
        };
        let release = Release::parse(release)
            .ok_or_else(|| format!("{at}: unknown release '{release}': use bookworm or trixie"))?;
        if rows.iter().any(|r| r.image == image && r.name == name) {
            return Err(format!("{at}: {image} {name} is listed twice"));
        }
        let default = !rows.iter().any(|r| r.image == image);
        rows.push(VersionRow {
            image: image.to_string(),
            name: name.to_string(),
            release,
            packages: packages.to_string(),
            default,
        });
    }
    Ok(rows)
}

/// A version name that the system does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown version '{asked}' of {system}: its versions are {valid} (the first is the default)"
)]
pub struct UnknownVersion {
    /// The system asked for.
    pub system: System,
    /// The version name asked for.
    pub asked: String,
    /// The versions it has, comma-separated.
    pub valid: String,
}

impl Version {
    /// The image this version is of.
    pub fn image(self) -> ImageKind {
        ImageKind::named(&self.row.image)
            .expect("every image in docker/versions.tsv is a registered image (a test checks)")
    }

    /// The version's name (`3.5`, `valkey-8.1`): the image tag, and what `system@version` says.
    pub fn name(self) -> &'static str {
        &self.row.name
    }

    /// The Debian release its packages come from.
    pub fn release(self) -> Release {
        self.row.release
    }

    /// The Debian packages carrying the server, comma-separated.
    pub fn packages(self) -> &'static str {
        &self.row.packages
    }

    /// Whether it is its image's default version.
    pub fn is_default(self) -> bool {
        self.row.default
    }

    /// Every version of `image`, the default first.
    pub fn of_image(image: ImageKind) -> impl Iterator<Item = Version> {
        ROWS.iter()
            .filter(move |r| r.image == image.name())
            .map(|row| Version { row })
    }

    /// Every version of every image, in file order.
    pub fn all() -> impl Iterator<Item = Version> {
        ROWS.iter().map(|row| Version { row })
    }

    /// The default version of `image`.
    pub fn default_of(image: ImageKind) -> Version {
        Version::of_image(image)
            .next()
            .expect("every image has a version in docker/versions.tsv (a test checks)")
    }

    /// `system`'s version named `name`, or an error listing the versions it has.
    pub fn find(system: System, name: &str) -> Result<Version, UnknownVersion> {
        let wanted = name.trim();
        Version::of_image(system.image_kind())
            .find(|v| v.name() == wanted)
            .ok_or_else(|| UnknownVersion {
                system,
                asked: name.to_string(),
                valid: system.versions_text(),
            })
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.row, other.row)
    }
}

impl Eq for Version {}

impl std::hash::Hash for Version {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.row.image.hash(state);
        self.row.name.hash(state);
    }
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.row.image, self.row.name)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl System {
    /// The versions this system runs, the default first.
    pub fn versions(self) -> Vec<Version> {
        Version::of_image(self.image_kind()).collect()
    }

    /// The version a run that names none uses.
    pub fn default_version(self) -> Version {
        Version::default_of(self.image_kind())
    }

    /// The versions, as error messages and help texts list them.
    pub fn versions_text(self) -> String {
        self.versions()
            .iter()
            .map(|v| v.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A system at a version, as `--systems` names it: `etcd` (its default version) or
/// `etcd@3.4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SystemAt {
    /// The system.
    pub system: System,
    /// The version it runs.
    pub version: Version,
    /// Whether the version was named (`@3.4`) rather than the default taken.
    pub named: bool,
}

impl SystemAt {
    /// The system at its default version.
    pub fn default_of(system: System) -> SystemAt {
        SystemAt {
            system,
            version: system.default_version(),
            named: false,
        }
    }
}

// As `--systems` reads it back: the version only where it was named.
impl fmt::Display for SystemAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.named {
            write!(f, "{}@{}", self.system, self.version)
        } else {
            write!(f, "{}", self.system)
        }
    }
}

/// Why a `--systems` entry does not name a system at a version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SystemAtError {
    /// The system part.
    #[error(transparent)]
    System(#[from] super::SystemError),
    /// The version part.
    #[error(transparent)]
    Version(#[from] UnknownVersion),
}

impl std::str::FromStr for SystemAt {
    type Err = SystemAtError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once('@') {
            None => Ok(SystemAt::default_of(s.parse()?)),
            Some((system, version)) => {
                let system: System = system.parse()?;
                Ok(SystemAt {
                    system,
                    version: Version::find(system, version)?,
                    named: true,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_image_has_versions_and_every_row_a_registered_image() {
        for v in Version::all() {
            assert!(ImageKind::named(&v.row.image).is_some(), "{v:?}");
        }
        for image in crate::system::all_images() {
            let versions: Vec<Version> = Version::of_image(image).collect();
            assert!(!versions.is_empty(), "{image} has no version");
            assert!(versions[0].is_default());
            assert!(versions[1..].iter().all(|v| !v.is_default()), "{image}");
        }
    }

    #[test]
    fn defaults_are_the_current_releases_and_old_ones_stay_by_name() {
        let etcd = System::Etcd.default_version();
        assert_eq!((etcd.name(), etcd.release()), ("3.5", Release::Trixie));
        assert_eq!(
            Version::find(System::Etcd, "3.4").unwrap().release(),
            Release::Bookworm
        );
        assert_eq!(System::Zookeeper.default_version().name(), "3.9");
        assert_eq!(System::Redis.default_version().name(), "8.0");
        // Redlock runs on the Redis image: the same versions, Valkey among them.
        assert_eq!(System::Redlock.versions(), System::Redis.versions());
        assert!(Version::find(System::Redlock, "valkey-8.1").is_ok());
    }

    #[test]
    fn system_at_parses_names_and_versions_and_lists_the_valid_ones() {
        let at: SystemAt = "etcd@3.4".parse().unwrap();
        assert_eq!(
            (at.system, at.version.name(), at.named),
            (System::Etcd, "3.4", true)
        );
        let at: SystemAt = "redis".parse().unwrap();
        assert_eq!((at.version.name(), at.named), ("8.0", false));
        assert_eq!(at.to_string(), "redis");
        assert_eq!(
            "redis@8.0".parse::<SystemAt>().unwrap().to_string(),
            "redis@8.0"
        );
        let err = "etcd@3.3".parse::<SystemAt>().unwrap_err().to_string();
        assert!(err.contains("unknown version '3.3' of etcd"), "{err}");
        assert!(err.contains("3.5, 3.4"), "{err}");
        let err = "consul@1".parse::<SystemAt>().unwrap_err().to_string();
        assert!(err.contains("unknown system 'consul'"), "{err}");
    }

    #[test]
    fn a_malformed_versions_file_names_the_line_and_the_fix() {
        let err = parse_rows("# c\netcd 3.5 trixie\n").unwrap_err();
        assert!(
            err.contains("docker/versions.tsv:2: expected 4 columns"),
            "{err}"
        );
        let err = parse_rows("etcd 3.5 sid etcd-server\n").unwrap_err();
        assert!(err.contains("unknown release 'sid'"), "{err}");
        let err = parse_rows("etcd 3.5 trixie a\netcd 3.5 trixie b\n").unwrap_err();
        assert!(err.contains("listed twice"), "{err}");
        let rows = parse_rows("etcd 3.5 trixie a,b # new\netcd 3.4 bookworm a\n").unwrap();
        assert!(rows[0].default && !rows[1].default);
        assert_eq!(rows[0].packages, "a,b");
    }
}
