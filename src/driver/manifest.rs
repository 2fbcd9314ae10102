//! A driver's manifest (`driver.toml`): how to start it, which systems it serves, which
//! library at which version, and how the workload's settings map to the library's.
//!
//! ```toml
//! library = "redis-py"
//! version = "5.0.8"
//! systems = ["redis"]
//! command = ["python3", "driver.py"]     # run in the manifest's folder
//! lease_ttl = "timeout"                  # the library setting the workload's lease_ttl sets
//! checks_lost_before_write = false       # the library's documentation tells users to
//! tokens = false                         # the library exposes a fencing token
//! clients_per_process = 16
//! [settings]                             # passed to the driver in `hello`
//! blocking_timeout = "acquire timeout"
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::system::System;

/// A manifest that cannot be used, naming the file and the field.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{path}: cannot read the driver manifest: {why}")]
    Unreadable { path: PathBuf, why: String },
    #[error("{path}: {why}")]
    Invalid { path: PathBuf, why: String },
}

/// A driver as its manifest describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// Where the manifest was read from.
    pub path: PathBuf,
    /// The library's name: a coordinate of the cell (`redis-py`).
    pub library: String,
    /// The library's pinned version.
    pub version: String,
    /// The systems the driver can lock on.
    pub systems: Vec<System>,
    /// The program and its arguments, run in the manifest's folder.
    pub command: Vec<String>,
    /// The library setting the workload's `lease_ttl` maps to (a TTL, a session timeout).
    pub lease_ttl: String,
    /// The driver checks the library's lost signal before writing, as the library's
    /// documentation tells its users to.
    pub checks_lost_before_write: bool,
    /// The library exposes a fencing token (without one, the library has no fenced cell).
    pub tokens: bool,
    /// Clients one driver process serves.
    pub clients_per_process: u32,
    /// Passed to the driver in `hello`.
    pub settings: toml::Table,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    library: String,
    version: String,
    systems: Vec<String>,
    command: Vec<String>,
    lease_ttl: String,
    checks_lost_before_write: bool,
    #[serde(default)]
    tokens: bool,
    #[serde(default = "one")]
    clients_per_process: u32,
    #[serde(default)]
    settings: toml::Table,
}

fn one() -> u32 {
    1
}

impl Manifest {
    /// Reads the manifest at `path`, or the `driver.toml` in the folder `path` names.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let path = if path.is_dir() {
            path.join("driver.toml")
        } else {
            path.to_path_buf()
        };
        let text = std::fs::read_to_string(&path).map_err(|e| ManifestError::Unreadable {
            path: path.clone(),
            why: e.to_string(),
        })?;
        Manifest::parse(&text, &path)
    }

    /// Reads manifest text; `path` names it in errors and roots its command.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest, ManifestError> {
        let invalid = |why: String| ManifestError::Invalid {
            path: path.to_path_buf(),
            why,
        };
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let at = e
                .span()
                .map(|s| {
                    let line = text[..s.start].matches('\n').count() + 1;
                    format!("line {line}: ")
                })
                .unwrap_or_default();
            invalid(format!("{at}{}", e.message()))
        })?;
        if raw.library.is_empty()
            || !raw
                .library
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        {
            return Err(invalid(format!(
                "field `library`: \"{}\" must be a non-empty name of letters, digits, '-', '_' \
                 or '.' (it becomes part of cell ids and folder names)",
                raw.library
            )));
        }
        if raw.command.is_empty() {
            return Err(invalid(
                "field `command`: empty; give the program and its arguments, e.g. \
                 [\"python3\", \"driver.py\"]"
                    .into(),
            ));
        }
        if raw.clients_per_process == 0 {
            return Err(invalid(
                "field `clients_per_process`: 0; a process serves at least one client".into(),
            ));
        }
        let systems = raw
            .systems
            .iter()
            .map(|s| {
                s.parse::<System>()
                    .map_err(|e| invalid(format!("field `systems`: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if systems.is_empty() {
            return Err(invalid(
                "field `systems`: empty; name the systems the driver locks on".into(),
            ));
        }
        Ok(Manifest {
            path: path.to_path_buf(),
            library: raw.library,
            version: raw.version,
            systems,
            command: raw.command,
            lease_ttl: raw.lease_ttl,
            checks_lost_before_write: raw.checks_lost_before_write,
            tokens: raw.tokens,
            clients_per_process: raw.clients_per_process,
            settings: raw.settings,
        })
    }

    /// The folder the command runs in.
    pub fn folder(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
library = "redis-py"
version = "5.0.8"
systems = ["redis"]
command = ["python3", "driver.py"]
lease_ttl = "timeout"
checks_lost_before_write = false
[settings]
sleep = 0.01
"#;

    #[test]
    fn a_manifest_reads_with_its_defaults() {
        let m = Manifest::parse(GOOD, Path::new("/d/driver.toml")).unwrap();
        assert_eq!(m.library, "redis-py");
        assert_eq!(m.systems, vec![System::Redis]);
        assert_eq!((m.tokens, m.clients_per_process), (false, 1));
        assert_eq!(m.folder(), Path::new("/d"));
        assert_eq!(m.settings["sleep"].as_float(), Some(0.01));
    }

    #[test]
    fn errors_name_the_file_and_the_field() {
        let p = Path::new("drivers/x/driver.toml");
        for (text, field) in [
            (
                GOOD.replace("[\"redis\"]", "[\"redys\"]"),
                "field `systems`",
            ),
            (
                GOOD.replace("\"redis-py\"", "\"redis py\""),
                "field `library`",
            ),
            (
                GOOD.replace("[\"python3\", \"driver.py\"]", "[]"),
                "field `command`",
            ),
            (GOOD.replace("lease_ttl = \"timeout\"\n", ""), "lease_ttl"),
            (GOOD.replace("version", "verison"), "verison"),
        ] {
            let e = Manifest::parse(&text, p).unwrap_err().to_string();
            assert!(e.starts_with("drivers/x/driver.toml: "), "{e}");
            assert!(e.contains(field), "{field}: {e}");
        }
        let e = Manifest::load(Path::new("/nonexistent/driver.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/driver.toml"), "{e}");
    }
}
