//! `lockbench doctor`: is a Docker engine reachable, which images are present, and the command
//! that fixes each problem.

use crate::image::{self, ImageState};
use crate::system::all_images;

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
    for kind in all_images() {
        let name = image::image_name(kind);
        let (ok, detail, fix) = match image::state(kind).await {
            Ok(ImageState::Current) => (true, format!("{} present", name.name), None),
            Ok(ImageState::Missing) => (
                false,
                format!("{} missing", name.name),
                Some(image::missing_fix(kind, &name)),
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
            what: format!("image {kind}"),
            ok,
            detail,
            fix,
        });
    }
    out
}
