//! Whether a driver starts and speaks the protocol, before a run needs it (`lockbench doctor
//! --clients-from`): the manifest reads, its program is found, and the process answers a
//! `ping`. A driver's first start may make its environment (a virtual environment from PyPI, a
//! compile), so the doctor's check also readies it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::manifest::Manifest;
use super::process::DriverProcess;
use super::protocol::{Outcome, RequestOp};

/// How long a driver may take to answer its first ping: its first start may install its
/// library.
pub const FIRST_START: Duration = Duration::from_secs(300);

/// Where `name` (a manifest, its folder, or a shipped driver's name) finds a driver: the path
/// given when it exists, else `drivers/<name>` for a bare name; `Err` says what was looked for.
pub fn find(name: &str) -> Result<PathBuf, String> {
    let given = Path::new(name);
    if given.exists() {
        return Ok(given.to_path_buf());
    }
    if name.contains('/') {
        return Err(format!("{name}: no such file or folder"));
    }
    let shipped = Path::new("drivers").join(name);
    if shipped.exists() {
        Ok(shipped)
    } else {
        Err(format!(
            "{name}: no such file, and no driver at {}: give a driver's manifest (driver.toml) \
             or its folder",
            shipped.display()
        ))
    }
}

/// The manifests of the drivers shipped under `root`/drivers (each folder with a
/// `driver.toml`), by folder name; a manifest that does not read is an `Err` naming the file
/// and the field.
pub fn shipped(root: &Path) -> Vec<Result<Manifest, String>> {
    let Ok(entries) = std::fs::read_dir(root.join("drivers")) else {
        return Vec::new();
    };
    let mut folders: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("driver.toml").is_file())
        .collect();
    folders.sort();
    folders
        .iter()
        .map(|f| Manifest::load(f).map_err(|e| e.to_string()))
        .collect()
}

/// Whether the manifest's program is found: a path that exists, or a name on PATH.
pub fn program_found(m: &Manifest) -> Result<(), String> {
    let program = &m.command[0];
    let found = if program.contains('/') {
        m.folder().join(program).exists()
    } else {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
    };
    if found {
        Ok(())
    } else {
        Err(format!(
            "{}: field `command`: program `{program}` not found (not on PATH, nor in {})",
            m.path.display(),
            m.folder().display()
        ))
    }
}

/// Starts `m`'s driver, sends one `ping` and stops it: how long the answer took from the start,
/// or why there was none, with the last lines of the driver's stderr.
pub async fn ping(m: &Manifest) -> Result<Duration, String> {
    program_found(m)?;
    let stderr = std::env::temp_dir().join(format!(
        "lockbench-doctor-{}-{}.stderr",
        m.library,
        std::process::id()
    ));
    let _ = std::fs::remove_file(&stderr);
    let started = Instant::now();
    let answered = match DriverProcess::spawn(&m.library, &m.command, m.folder(), &stderr) {
        Ok(p) => {
            let a = p.request(RequestOp::Ping, started + FIRST_START).await;
            p.finish(Duration::from_secs(2)).await;
            a.map_err(|e| e.0)
        }
        Err(e) => Err(e.0),
    };
    let tail = std::fs::read_to_string(&stderr)
        .map(|t| {
            let lines: Vec<&str> = t.lines().collect();
            lines[lines.len().saturating_sub(3)..].join(" | ")
        })
        .unwrap_or_default();
    let _ = std::fs::remove_file(&stderr);
    match answered {
        Ok(a) if a.outcome == Outcome::Ok => Ok(started.elapsed()),
        Ok(a) => Err(format!("answered ping with {:?}: {:?}", a.outcome, a.error)),
        Err(why) if tail.is_empty() => Err(why),
        Err(why) => Err(format!("{why}; its stderr ends: {tail}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_driver_and_program_are_named() {
        let e = find("no-such-driver").unwrap_err();
        assert!(e.contains("drivers/no-such-driver"), "{e}");
        assert!(
            find("x/y/driver.toml")
                .unwrap_err()
                .contains("x/y/driver.toml")
        );
        let m = Manifest::parse(
            "library = \"x\"\nversion = \"1\"\nsystems = [\"redis\"]\n\
             command = [\"lockbench-no-such-program\"]\nlease_ttl = \"ttl\"\n\
             checks_lost_before_write = false\n",
            Path::new("/d/driver.toml"),
        )
        .unwrap();
        let e = program_found(&m).unwrap_err();
        assert!(
            e.contains("/d/driver.toml") && e.contains("lockbench-no-such-program"),
            "{e}"
        );
    }

    #[test]
    fn every_shipped_manifest_reads() {
        let all = shipped(Path::new(env!("CARGO_MANIFEST_DIR")));
        assert!(all.len() >= 5, "{all:?}");
        for m in &all {
            let m = m.as_ref().unwrap();
            assert!(!m.version.is_empty(), "{}", m.path.display());
        }
    }
}
