//! The server images: their Dockerfiles (embedded, so the binary works outside the repository),
//! content hashes, name overrides, and an idempotent offline build.
//!
//! Each image comes in the versions `docker/versions.tsv` lists ([`Version`]), tagged by version
//! (`lockbench/etcd:3.5`). A version is built from one Debian release's packages on that
//! release's base: `debian:<release>-slim` when the engine has it or can pull it, and otherwise
//! `lockbench/base:<release>`, made here with `debootstrap` and `docker import` (no registry
//! needed).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio::process::Command;

use crate::system::{ImageKind, Release, Version};

/// The official slim base of `release`, used when present or pullable.
pub fn slim_base(release: Release) -> String {
    format!("debian:{release}-slim")
}

/// The base of `release` made locally with debootstrap when no registry answers.
pub fn local_base(release: Release) -> String {
    format!("lockbench/base:{release}")
}

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

/// The hash recorded on a built image: it changes exactly when its build inputs change (the
/// Dockerfile, the entrypoint, the release and the packages).
pub fn content_hash(version: Version) -> String {
    let kind = version.image();
    let mut h = Sha256::new();
    h.update(kind.dockerfile().as_bytes());
    h.update([0u8]);
    h.update(kind.entrypoint().as_bytes());
    h.update([0u8]);
    h.update(version.release().name().as_bytes());
    h.update([0u8]);
    h.update(version.packages().as_bytes());
    let digest = h.finalize();
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// The second tag of a built image, which records the inputs it was built from
/// ([`content_hash`]): `lockbench/etcd:3.5-inputs-<hash>`. A tag is set at no cost, where a label
/// would be one more build step, and each step after the package layer walks the whole image
/// on a Docker engine without a native diff (fuse-overlayfs).
pub fn inputs_tag(version: Version) -> String {
    format!("{}{}", inputs_prefix(version), content_hash(version))
}

/// What every inputs tag of `version` starts with (`lockbench/etcd:3.5-inputs-`).
fn inputs_prefix(version: Version) -> String {
    format!("{}-inputs-", default_name(version))
}

/// The environment variable that overrides the name of an image's default version.
pub fn override_var(kind: ImageKind) -> String {
    format!("LOCKBENCH_{}_IMAGE", kind.name().to_ascii_uppercase())
}

/// The locally built image name of a version, e.g. `lockbench/etcd:3.5`.
pub fn default_name(version: Version) -> String {
    format!("lockbench/{}:{}", version.image().name(), version.name())
}

/// The image the override variable names for `kind`'s default version, if it is set.
pub fn override_of(kind: ImageKind) -> Option<String> {
    match std::env::var(override_var(kind)) {
        Ok(v) if !v.trim().is_empty() => Some(v.trim().to_string()),
        _ => None,
    }
}

/// Which image a version runs on: for the default version the override variable when set,
/// else the locally built image. An override never replaces a version named on the command
/// line (the run refuses that combination before it starts).
pub fn image_name(version: Version) -> ImageRef {
    match override_of(version.image()).filter(|_| version.is_default()) {
        Some(name) => ImageRef {
            name,
            overridden: true,
        },
        None => ImageRef {
            name: default_name(version),
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
pub fn missing_fix(version: Version, image: &ImageRef) -> String {
    let kind = version.image();
    if image.overridden {
        format!(
            "it is named by {} (or --{}-image), so lockbench does not build it: `docker pull {}`, or drop the override",
            override_var(kind),
            kind.name(),
            image.name
        )
    } else if version.is_default() {
        "run `lockbench images` to build it".to_string()
    } else {
        format!(
            "run `lockbench images --versions {}@{}` to build it (a run that names the version builds it too)",
            kind.name(),
            version.name()
        )
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

/// Looks the image up with `docker image inspect`: current when it carries the inputs tag of
/// today's build inputs ([`inputs_tag`]); an image the user named is current when it exists.
pub async fn state(version: Version) -> Result<ImageState, ImageError> {
    let image = image_name(version);
    let out = run_docker(
        &[
            "image",
            "inspect",
            "--format",
            "{{join .RepoTags \" \"}}",
            &image.name,
        ],
        PULL_TIMEOUT,
    )
    .await;
    match out {
        Ok(_) if image.overridden => Ok(ImageState::Current),
        Ok(tags) => Ok(state_of_tags(version, &tags)),
        Err(ImageError::Failed { output, .. })
            if output.to_lowercase().contains("no such image") =>
        {
            Ok(ImageState::Missing)
        }
        Err(e) => Err(e),
    }
}

/// The state of the locally built image of `version` that carries `tags` (space-separated).
fn state_of_tags(version: Version, tags: &str) -> ImageState {
    let wanted = inputs_tag(version);
    if tags.split_whitespace().any(|t| t == wanted) {
        return ImageState::Current;
    }
    let prefix = inputs_prefix(version);
    let found = tags
        .split_whitespace()
        .find_map(|t| t.strip_prefix(prefix.as_str()))
        .unwrap_or("none recorded");
    ImageState::Stale {
        found: found.to_string(),
    }
}

/// Fails with the fix when an image a run needs is missing or stale.
pub async fn require(version: Version) -> Result<String, ImageError> {
    let image = image_name(version);
    match state(version).await? {
        ImageState::Current => Ok(image.name),
        ImageState::Missing => Err(ImageError::Missing {
            fix: missing_fix(version, &image),
            image: image.name,
        }),
        ImageState::Stale { found } => Err(ImageError::Stale {
            image: image.name,
            found,
            expected: content_hash(version),
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
    versions: &[Version],
    log: &dyn Fn(&str),
) -> Result<Vec<BuildReport>, ImageError> {
    // Concurrent callers in one process (parallel tests) wait for one build instead of racing.
    static BUILD_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _guard = BUILD_LOCK.lock().await;
    // Without an engine every image looks missing: say so instead of starting a build.
    crate::docker::connect().await?;
    // Which images are current, in the order asked; the rest are built below.
    let mut wanted = Vec::new();
    for &version in versions {
        if wanted.iter().any(|(v, _, _)| *v == version) {
            continue;
        }
        let image = image_name(version);
        let current = state(version).await? == ImageState::Current;
        if current {
            log(&format!("{}: up to date", image.name));
        } else if image.overridden {
            return Err(ImageError::Missing {
                fix: missing_fix(version, &image),
                image: image.name,
            });
        }
        wanted.push((version, image.name, current));
    }
    // Each release's base once, before the builds that need it.
    let mut bases: Vec<(Release, String)> = Vec::new();
    for (version, _, current) in &wanted {
        let release = version.release();
        if !current && !bases.iter().any(|(r, _)| *r == release) {
            bases.push((release, ensure_base(release, log).await?));
        }
    }
    // The builds run at once: each mostly waits on Debian's mirror and on dpkg's I/O, so six
    // images take little longer than the slowest (on a fresh machine they build beside the
    // first compile). Reports come in the order asked.
    let jobs = wanted.into_iter().map(|(version, name, current)| {
        let base = bases
            .iter()
            .find(|(r, _)| *r == version.release())
            .map(|(_, b)| b.as_str());
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
            build_one(version, &name, base).await?;
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

/// Picks or makes the base image of a Debian release, returning its name.
pub async fn ensure_base(release: Release, log: &dyn Fn(&str)) -> Result<String, ImageError> {
    let (slim, local) = (slim_base(release), local_base(release));
    if image_exists(&slim).await {
        return Ok(slim);
    }
    if image_exists(&local).await {
        return Ok(local);
    }
    log(&format!(
        "base: trying `docker pull {slim}` ({PULL_TIMEOUT:?} at most)"
    ));
    if run_docker(&["pull", &slim], PULL_TIMEOUT).await.is_ok() {
        return Ok(slim);
    }
    log(&format!(
        "base: no registry answered; making {local} with debootstrap (about a minute)"
    ));
    let started = Instant::now();
    debootstrap_base(release, &local).await?;
    log(&format!(
        "base: {local} made in {:.0} s",
        started.elapsed().as_secs_f64()
    ));
    Ok(local)
}

async fn debootstrap_base(release: Release, local: &str) -> Result<(), ImageError> {
    let mirror = std::env::var("LOCKBENCH_DEBIAN_MIRROR")
        .unwrap_or_else(|_| "http://deb.debian.org/debian".to_string());
    let dir = ScratchDir::new("rootfs")?;
    let rootfs = dir.path().join("rootfs");
    let rootfs_s = rootfs.to_string_lossy().to_string();
    run(
        "debootstrap",
        &["--variant=minbase", release.name(), &rootfs_s, &mirror],
        BUILD_TIMEOUT,
        &format!(
            "Install it (`apt-get install debootstrap`, a version that knows {release}) and run as root, or make `{}` available to Docker",
            slim_base(release)
        ),
    )
    .await?;
    let script = format!(
        "set -o pipefail; tar -C '{rootfs_s}' -c . | docker import -c 'CMD [\"/bin/bash\"]' - {local}"
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

async fn build_one(version: Version, name: &str, base: &str) -> Result<(), ImageError> {
    let kind = version.image();
    let dir = ScratchDir::new(kind.name())?;
    std::fs::write(dir.path().join("Dockerfile"), kind.dockerfile())?;
    // Executable here: the Dockerfile's COPY keeps the context's mode, with no step after it.
    let entrypoint = dir.path().join("entrypoint.sh");
    std::fs::write(&entrypoint, kind.entrypoint())?;
    std::fs::set_permissions(&entrypoint, std::fs::Permissions::from_mode(0o755))?;
    let ctx = dir.path().to_string_lossy().to_string();
    let inputs = inputs_tag(version);
    let base_arg = format!("BASE={base}");
    let packages_arg = format!("PACKAGES={}", version.packages());
    run_docker(
        &[
            "build",
            "--build-arg",
            &base_arg,
            "--build-arg",
            &packages_arg,
            "-t",
            name,
            "-t",
            &inputs,
            &ctx,
        ],
        BUILD_TIMEOUT,
    )
    .await?;
    drop_older_inputs_tags(version).await;
    Ok(())
}

/// Removes the inputs tags of `version`'s earlier builds, so the images they kept are freed
/// (an image a container still uses stays, untagged). Best effort: a tag left behind costs
/// only disk.
async fn drop_older_inputs_tags(version: Version) {
    let (repo, _) = split_repo_tag(&default_name(version));
    let Ok(listed) = run_docker(
        &["image", "ls", "--format", "{{.Repository}}:{{.Tag}}", &repo],
        PULL_TIMEOUT,
    )
    .await
    else {
        return;
    };
    let (prefix, current) = (inputs_prefix(version), inputs_tag(version));
    for tag in listed.split_whitespace() {
        if tag.starts_with(&prefix) && tag != current {
            let _ = run_docker(&["image", "rm", tag], PULL_TIMEOUT).await;
        }
    }
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
    fn hashes_differ_per_image_and_version_and_are_stable() {
        let zk = Version::default_of(ImageKind::Zookeeper);
        let a = content_hash(zk);
        assert_eq!(a, content_hash(zk));
        assert_ne!(a, content_hash(Version::default_of(ImageKind::Etcd)));
        let older = Version::of_image(ImageKind::Zookeeper).nth(1).unwrap();
        assert_ne!(a, content_hash(older));
        assert_eq!(a.len(), 16);
    }

    #[test]
    fn images_are_tagged_by_version_and_bases_by_release() {
        let etcd = Version::of_image(ImageKind::Etcd).collect::<Vec<_>>();
        assert_eq!(default_name(etcd[0]), "lockbench/etcd:3.5");
        assert_eq!(default_name(etcd[1]), "lockbench/etcd:3.4");
        assert_eq!(local_base(Release::Trixie), "lockbench/base:trixie");
        assert_eq!(slim_base(Release::Bookworm), "debian:bookworm-slim");
    }

    #[test]
    fn an_image_is_current_only_with_the_inputs_tag_of_todays_inputs() {
        let etcd = Version::default_of(ImageKind::Etcd);
        let name = default_name(etcd);
        let today = inputs_tag(etcd);
        assert_eq!(
            today,
            format!("lockbench/etcd:3.5-inputs-{}", content_hash(etcd))
        );
        let tags = format!("{name} {today}");
        assert_eq!(state_of_tags(etcd, &tags), ImageState::Current);
        let older = format!("{name} lockbench/etcd:3.5-inputs-0123456789abcdef");
        assert_eq!(
            state_of_tags(etcd, &older),
            ImageState::Stale {
                found: "0123456789abcdef".into()
            }
        );
        assert_eq!(
            state_of_tags(etcd, &name),
            ImageState::Stale {
                found: "none recorded".into()
            }
        );
        // Another version's tag on the same image is not this version's record.
        let other = Version::of_image(ImageKind::Etcd).nth(1).unwrap();
        let tags = format!("{name} {}", inputs_tag(other));
        assert!(matches!(
            state_of_tags(etcd, &tags),
            ImageState::Stale { .. }
        ));
    }

    /// `.ci/run` tags the images it builds with docker/inputs-hash.sh: the same hash as ours.
    #[test]
    fn the_ci_scripts_inputs_hash_is_this_hash() {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/docker/inputs-hash.sh");
        for v in Version::all() {
            let out = std::process::Command::new("sh")
                .args([script, v.image().name(), v.release().name(), v.packages()])
                .output()
                .expect("sh runs docker/inputs-hash.sh");
            assert!(out.status.success(), "{v:?}: {out:?}");
            let hash = String::from_utf8_lossy(&out.stdout).trim().to_string();
            assert_eq!(hash, content_hash(v), "{v:?}");
        }
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
