//! The server images: their Dockerfiles (embedded, so the binary works outside the repository),
//! content hashes, name overrides, and an idempotent offline build.
//!
//! Each image is built from Debian bookworm packages on a base that is `debian:bookworm-slim`
//! when the engine has it or can pull it, and otherwise `lockbench/base:bookworm`, made here with
//! `debootstrap` and `docker import` (no registry needed).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::process::Command;

use crate::system::ImageKind;

/// Image label holding the hash of the Dockerfile and files it copies.
pub const HASH_LABEL: &str = "lockbench.content-hash";
/// The official slim base, used when present or pullable.
pub const SLIM_BASE: &str = "debian:bookworm-slim";
/// The base made locally with debootstrap when no registry answers.
pub const LOCAL_BASE: &str = "lockbench/base:bookworm";

const PULL_TIMEOUT: Duration = Duration::from_secs(30);
const BUILD_TIMEOUT: Duration = Duration::from_secs(1200);

/// Image build and lookup problems, each with its fix.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("image {image} is missing: {fix}")]
    Missing { image: String, fix: String },
    #[error(
        "image {image} was built from older Dockerfiles (hash {found}, expected {expected}): run `lockbench images`"
    )]
    Stale {
        image: String,
        found: String,
        expected: String,
    },
    #[error("`{command}` could not be started: {error}. {fix}")]
    Tool {
        command: String,
        error: String,
        fix: String,
    },
    #[error("`{command}` failed ({status}):\n{output}")]
    Failed {
        command: String,
        status: String,
        output: String,
    },
    #[error("`{command}` did not finish within {timeout:?}")]
    Timeout { command: String, timeout: Duration },
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Docker(#[from] crate::docker::DockerError),
}

/// The hash recorded on a built image: it changes exactly when its build inputs change.
pub fn content_hash(kind: ImageKind) -> String {
    let mut h = Sha256::new();
    h.update(kind.dockerfile().as_bytes());
    h.update([0u8]);
    h.update(kind.entrypoint().as_bytes());
    let digest = h.finalize();
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The environment variable that overrides an image's name.
pub fn override_var(kind: ImageKind) -> String {
    format!("LOCKBENCH_{}_IMAGE", kind.name().to_ascii_uppercase())
}

/// The default, locally built image name.
pub fn default_name(kind: ImageKind) -> String {
    format!("lockbench/{}:{}", kind.name(), kind.tag())
}

/// Which image a system runs on: the override variable when set, else the local default.
pub fn image_name(kind: ImageKind) -> ImageRef {
    match std::env::var(override_var(kind)) {
        Ok(v) if !v.trim().is_empty() => ImageRef {
            name: v.trim().to_string(),
            overridden: true,
        },
        _ => ImageRef {
            name: default_name(kind),
            overridden: false,
        },
    }
}

/// A resolved image name, and whether the user chose it (then lockbench never rebuilds it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ImageRef {
    pub name: String,
    pub overridden: bool,
}

impl ImageRef {
    /// Splits `repo:tag` (a registry port before the last `/` is not a tag).
    pub fn repo_and_tag(&self) -> (String, String) {
        split_repo_tag(&self.name)
    }
}

fn split_repo_tag(name: &str) -> (String, String) {
    match name.rfind(':') {
        Some(i) if !name[i..].contains('/') => (name[..i].to_string(), name[i + 1..].to_string()),
        _ => (name.to_string(), "latest".to_string()),
    }
}

/// How to get a missing image: build ours, or pull the one the user named.
pub fn missing_fix(kind: ImageKind, image: &ImageRef) -> String {
    if image.overridden {
        format!(
            "it is named by {} (or --{}-image), so lockbench does not build it: `docker pull {}`, or drop the override",
            override_var(kind),
            kind.name(),
            image.name
        )
    } else {
        "run `lockbench images` to build it".to_string()
    }
}

/// What the engine holds for one image.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum ImageState {
    Current,
    Stale { found: String },
    Missing,
}

/// Looks the image up with `docker image inspect`.
pub async fn state(kind: ImageKind) -> Result<ImageState, ImageError> {
    let image = image_name(kind);
    let fmt = format!("{{{{index .Config.Labels \"{HASH_LABEL}\"}}}}");
    let out = run_docker(
        &["image", "inspect", "--format", &fmt, &image.name],
        PULL_TIMEOUT,
    )
    .await;
    match out {
        Ok(label) => {
            let label = label.trim().to_string();
            if image.overridden || label == content_hash(kind) {
                Ok(ImageState::Current)
            } else {
                Ok(ImageState::Stale { found: label })
            }
        }
        Err(ImageError::Failed { output, .. })
            if output.to_lowercase().contains("no such image") =>
        {
            Ok(ImageState::Missing)
        }
        Err(e) => Err(e),
    }
}

/// Fails with the fix when an image a run needs is missing or stale.
pub async fn require(kind: ImageKind) -> Result<String, ImageError> {
    let image = image_name(kind);
    match state(kind).await? {
        ImageState::Current => Ok(image.name),
        ImageState::Missing => Err(ImageError::Missing {
            fix: missing_fix(kind, &image),
            image: image.name,
        }),
        ImageState::Stale { found } => Err(ImageError::Stale {
            image: image.name,
            found,
            expected: content_hash(kind),
        }),
    }
}

/// The outcome of [`ensure`] for one image.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BuildReport {
    pub image: String,
    pub built: bool,
    pub seconds: f64,
}

/// Builds every listed image that is missing or stale; current images are left alone, and
/// overridden names are never built. `log` receives progress lines.
pub async fn ensure(
    kinds: &[ImageKind],
    log: &dyn Fn(&str),
) -> Result<Vec<BuildReport>, ImageError> {
    // Concurrent callers in one process (parallel tests) wait for one build instead of racing.
    static BUILD_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _guard = BUILD_LOCK.lock().await;
    // Without an engine every image looks missing: say so instead of starting a build.
    crate::docker::connect().await?;
    // Which images are current, in the order asked; the rest are built below.
    let mut wanted = Vec::new();
    for &kind in kinds {
        let image = image_name(kind);
        let current = state(kind).await? == ImageState::Current;
        if current {
            log(&format!("{}: up to date", image.name));
        } else if image.overridden {
            return Err(ImageError::Missing {
                fix: missing_fix(kind, &image),
                image: image.name,
            });
        }
        wanted.push((kind, image.name, current));
    }
    let base = if wanted.iter().any(|(_, _, current)| !current) {
        Some(ensure_base(log).await?)
    } else {
        None
    };
    // The builds run at once: each mostly waits on Debian's mirror and on dpkg's I/O, so six
    // images take little longer than the slowest (on a fresh machine they build beside the
    // first compile). Reports come in the order asked.
    let jobs = wanted.into_iter().map(|(kind, name, current)| {
        let base = base.as_deref();
        async move {
            let (Some(base), false) = (base, current) else {
                return Ok(BuildReport {
                    image: name,
                    built: false,
                    seconds: 0.0,
                });
            };
            log(&format!(
                "{name}: building on {base} (Debian packages; a few minutes)"
            ));
            let started = Instant::now();
            build_one(kind, &name, base).await?;
            let seconds = started.elapsed().as_secs_f64();
            log(&format!("{name}: built in {seconds:.0} s"));
            Ok(BuildReport {
                image: name,
                built: true,
                seconds,
            })
        }
    });
    futures::future::join_all(jobs).await.into_iter().collect()
}

async fn image_exists(name: &str) -> bool {
    run_docker(
        &["image", "inspect", "--format", "{{.Id}}", name],
        PULL_TIMEOUT,
    )
    .await
    .is_ok()
}

/// Picks or makes the Debian bookworm base image, returning its name.
pub async fn ensure_base(log: &dyn Fn(&str)) -> Result<String, ImageError> {
    if image_exists(SLIM_BASE).await {
        return Ok(SLIM_BASE.to_string());
    }
    if image_exists(LOCAL_BASE).await {
        return Ok(LOCAL_BASE.to_string());
    }
    log(&format!(
        "base: trying `docker pull {SLIM_BASE}` ({PULL_TIMEOUT:?} at most)"
    ));
    if run_docker(&["pull", SLIM_BASE], PULL_TIMEOUT).await.is_ok() {
        return Ok(SLIM_BASE.to_string());
    }
    log(&format!(
        "base: no registry answered; making {LOCAL_BASE} with debootstrap (about a minute)"
    ));
    let started = Instant::now();
    debootstrap_base().await?;
    log(&format!(
        "base: made in {:.0} s",
        started.elapsed().as_secs_f64()
    ));
    Ok(LOCAL_BASE.to_string())
}

async fn debootstrap_base() -> Result<(), ImageError> {
    let mirror = std::env::var("LOCKBENCH_DEBIAN_MIRROR")
        .unwrap_or_else(|_| "http://deb.debian.org/debian".to_string());
    let dir = ScratchDir::new("rootfs")?;
    let rootfs = dir.path().join("rootfs");
    let rootfs_s = rootfs.to_string_lossy().to_string();
    run(
        "debootstrap",
        &["--variant=minbase", "bookworm", &rootfs_s, &mirror],
        BUILD_TIMEOUT,
        "Install it (`apt-get install debootstrap`) and run as root, or make `debian:bookworm-slim` available to Docker",
    )
    .await?;
    let script = format!(
        "set -o pipefail; tar -C '{rootfs_s}' -c . | docker import -c 'CMD [\"/bin/bash\"]' - {LOCAL_BASE}"
    );
    run(
        "bash",
        &["-c", &script],
        BUILD_TIMEOUT,
        "bash and the docker CLI are needed",
    )
    .await?;
    Ok(())
}

async fn build_one(kind: ImageKind, name: &str, base: &str) -> Result<(), ImageError> {
    let dir = ScratchDir::new(kind.name())?;
    std::fs::write(dir.path().join("Dockerfile"), kind.dockerfile())?;
    std::fs::write(dir.path().join("entrypoint.sh"), kind.entrypoint())?;
    let ctx = dir.path().to_string_lossy().to_string();
    let hash_label = format!("{HASH_LABEL}={}", content_hash(kind));
    let base_arg = format!("BASE={base}");
    run_docker(
        &[
            "build",
            "--build-arg",
            &base_arg,
            "--label",
            &hash_label,
            "--label",
            "lockbench.image=1",
            "-t",
            name,
            &ctx,
        ],
        BUILD_TIMEOUT,
    )
    .await?;
    Ok(())
}

async fn run_docker(args: &[&str], timeout: Duration) -> Result<String, ImageError> {
    run(
        "docker",
        args,
        timeout,
        "Install the Docker CLI (`apt-get install docker.io`) and make sure `docker info` works",
    )
    .await
}

async fn run(
    program: &str,
    args: &[&str],
    timeout: Duration,
    fix: &str,
) -> Result<String, ImageError> {
    let command = format!("{program} {}", args.join(" "));
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ImageError::Tool {
            command: command.clone(),
            error: e.to_string(),
            fix: fix.to_string(),
        })?;
    let out = match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(r) => r?,
        Err(_) => return Err(ImageError::Timeout { command, timeout }),
    };
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).to_string())
    } else {
        let mut output = String::from_utf8_lossy(&out.stdout).to_string();
        output.push_str(&String::from_utf8_lossy(&out.stderr));
        let tail: Vec<&str> = output.lines().rev().take(30).collect();
        Err(ImageError::Failed {
            command,
            status: out.status.to_string(),
            output: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        })
    }
}

/// A temporary folder removed on drop.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(what: &str) -> std::io::Result<Self> {
        let p =
            std::env::temp_dir().join(format!("lockbench-{what}-{}", crate::docker::new_run_id()));
        std::fs::create_dir_all(&p)?;
        Ok(ScratchDir(p))
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_differ_per_image_and_are_stable() {
        let a = content_hash(ImageKind::Zookeeper);
        assert_eq!(a, content_hash(ImageKind::Zookeeper));
        assert_ne!(a, content_hash(ImageKind::Etcd));
        assert_eq!(a.len(), 16);
    }

    #[test]
    fn splits_registry_ports_from_tags() {
        assert_eq!(split_repo_tag("redis:7"), ("redis".into(), "7".into()));
        assert_eq!(
            split_repo_tag("reg.local:5000/lockbench/etcd"),
            ("reg.local:5000/lockbench/etcd".into(), "latest".into())
        );
        assert_eq!(
            split_repo_tag("reg.local:5000/x/etcd:3.4"),
            ("reg.local:5000/x/etcd".into(), "3.4".into())
        );
    }
}
