//! `lockbench doctor`: is a Docker engine reachable, which images are present, do the library
//! drivers start, and the command that fixes each problem.

use crate::image::{self, ImageState};
use crate::system::Version;

/// One line of the doctor's report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Problem {
    pub what: String,
    pub ok: bool,
    pub detail: String,
    pub fix: Option<String>,
}

/// Checks the engine and every image; never fails, reports instead.
pub async fn diagnose() -> Vec<Problem> {
    let mut out = Vec::new();
    match crate::docker::connect().await {
        Ok(d) => {
            let version = d
                .version()
                .await
                .ok()
                .and_then(|v| v.version)
                .unwrap_or_default();
            out.push(Problem {
                what: "docker engine".into(),
                ok: true,
                detail: format!("reachable, version {version}"),
                fix: None,
            });
        }
        Err(e) => {
            out.push(Problem {
                what: "docker engine".into(),
                ok: false,
                detail: e.to_string(),
                fix: Some("start Docker (`sudo systemctl start docker`) or set DOCKER_HOST".into()),
            });
            return out;
        }
    }
    for version in Version::all() {
        let name = image::image_name(version);
        let (ok, detail, fix) = match image::state(version).await {
            Ok(ImageState::Current) => (true, format!("{} present", name.name), None),
            // Another version than the default is built when a run first names it.
            Ok(ImageState::Missing) if !version.is_default() => (
                true,
                format!("{} not built (built when a run names it)", name.name),
                None,
            ),
            Ok(ImageState::Missing) => (
                false,
                format!("{} missing", name.name),
                Some(image::missing_fix(version, &name)),
            ),
            Ok(ImageState::Stale { found }) => (
                false,
                format!("{} built from older Dockerfiles ({found})", name.name),
                Some("lockbench images".to_string()),
            ),
            Err(e) => (
                false,
                e.to_string(),
                Some("check `docker info`, then `lockbench images`".to_string()),
            ),
        };
        out.push(Problem {
            what: format!("image {}:{version}", version.image()),
            ok,
            detail,
            fix,
        });
    }
    out
}

/// The library drivers: each named one (as `--clients-from` names it) started and pinged;
/// without names, each shipped driver under `drivers/` checked for its manifest and program,
/// none started.
pub async fn drivers(named: &[String]) -> Vec<Problem> {
    use crate::driver::{Manifest, check};
    let problem = |what: String, detail: String, fix: Option<String>| Problem {
        what,
        ok: fix.is_none(),
        detail,
        fix,
    };
    let mut out = Vec::new();
    if named.is_empty() {
        for m in check::shipped(std::path::Path::new(".")) {
            out.push(match m.and_then(|m| check::program_found(&m).map(|()| m)) {
                Ok(m) => problem(
                    format!("driver {}", m.library),
                    format!(
                        "{} {} on {}: manifest reads, program found (not started: \
                         `lockbench doctor --clients-from {}` starts it)",
                        m.library,
                        m.version,
                        m.systems
                            .iter()
                            .map(|s| s.to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                        m.library
                    ),
                    None,
                ),
                Err(e) => problem(
                    "driver".into(),
                    e,
                    Some("fix the manifest or install the program it names".into()),
                ),
            });
        }
        return out;
    }
    for name in named {
        let m = check::find(name).and_then(|p| Manifest::load(&p).map_err(|e| e.to_string()));
        let m = match m {
            Ok(m) => m,
            Err(e) => {
                out.push(problem(
                    format!("driver {name}"),
                    e,
                    Some("name a driver's manifest, its folder, or a folder under drivers/".into()),
                ));
                continue;
            }
        };
        out.push(match check::ping(&m).await {
            Ok(took) => problem(
                format!("driver {}", m.library),
                format!(
                    "{} {}: started and answered a ping in {} ms",
                    m.library,
                    m.version,
                    took.as_millis()
                ),
                None,
            ),
            Err(e) => problem(
                format!("driver {}", m.library),
                e,
                Some(format!(
                    "see the driver's folder ({}) for what it needs",
                    m.folder().display()
                )),
            ),
        });
    }
    out
}
