//! `lockbench doctor`: is a Docker engine reachable, which images are present, and the command
//! that fixes each problem.

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
