//! The binary's error paths: bad input gets a clear message and exit code 2, never a panic.

use std::process::Command;

fn lockbench(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(args)
        .output()
        .expect("run lockbench");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("panicked"), "lockbench panicked: {text}");
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn unknown_system_lists_the_valid_ones() {
    let (code, text) = lockbench(&["up", "consul"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("valid systems are zookeeper, etcd, redis, redlock"),
        "{text}"
    );
}

#[test]
fn bad_sizes_name_the_valid_sizes() {
    let (code, text) = lockbench(&["up", "zookeeper", "--size", "2"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("valid sizes are 1, 3, 4"), "{text}");
    let (code, text) = lockbench(&["up", "redlock", "--size", "4"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("odd numbers"), "{text}");
    let (code, text) = lockbench(&["up", "etcd", "--size", "three"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("invalid value 'three'"), "{text}");
}

#[test]
fn missing_docker_engine_is_named_with_the_fix() {
    for args in [&["up", "etcd"][..], &["images"][..], &["doctor"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
            .args(args)
            .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
            .output()
            .expect("run lockbench");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
        assert!(
            text.contains("no Docker engine answered"),
            "{args:?}: {text}"
        );
        assert!(text.contains("DOCKER_HOST"), "{args:?}: {text}");
    }
}

/// Runs `lockbench run ARGS` in a fresh folder with no Docker engine reachable: a refusal that
/// happens before Docker is touched cannot mention Docker, and leaves no results folder.
fn run_offline(name: &str, args: &[&str]) -> (i32, String) {
    let dir = std::env::temp_dir().join(format!("lockbench-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("run")
        .args(args)
        .current_dir(&dir)
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .expect("run lockbench");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("panicked"), "lockbench panicked: {text}");
    assert!(
        !text.contains("Docker"),
        "refused only after reaching for Docker: {text}"
    );
    assert!(
        !dir.join("results").exists(),
        "a results folder was made: {text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn zero_clients_are_refused_naming_the_flag_and_range() {
    for (name, value, bad) in [
        ("c0", "0", "'0'"),
        ("c5000", "2,5000", "'5000'"),
        ("cnone", "", "''"),
    ] {
        let (code, text) = run_offline(name, &["--systems", "etcd", "--clients", value]);
        assert_eq!(code, 2, "{value}: {text}");
        assert!(
            text.contains(&format!("invalid value {bad} for '--clients")),
            "{text}"
        );
        if !value.is_empty() {
            assert!(text.contains("1..=4096"), "{text}");
        }
    }
}

#[test]
fn a_zero_duration_is_refused_naming_the_flag_and_range() {
    let (code, text) = run_offline("d0", &["--systems", "etcd", "--duration", "0s"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("invalid value '0s' for '--duration"),
        "{text}"
    );
    assert!(text.contains("valid 1s to 1day"), "{text}");
}

#[test]
fn a_client_latency_past_a_second_is_refused_naming_the_flag_and_range() {
    let (code, text) = run_offline("lat", &["--systems", "etcd", "--client-latency", "0ms,2s"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("invalid value '2s' for '--client-latency"),
        "{text}"
    );
    assert!(text.contains("valid 0s to 1s"), "{text}");
}

#[test]
fn a_missing_workload_file_is_named_with_its_os_error_once() {
    let (code, text) = run_offline("nope", &["--workload", "nope.toml"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("nope.toml: cannot read the workload file"),
        "{text}"
    );
    // "No such file or directory (os error 2)" on Linux, as the OS words it.
    let reason = std::io::Error::from_raw_os_error(2).to_string();
    assert_eq!(text.matches(&reason).count(), 1, "said once: {text}");
    assert_eq!(text.matches("nope.toml").count(), 1, "{text}");
}

#[test]
fn capacity_refuses_a_bad_slo_and_too_few_client_counts_before_docker() {
    let base = ["capacity", "--system", "etcd", "--strategy", "predecessor"];
    let with = |more: &[&str]| lockbench(&[&base[..], more].concat());
    let (code, text) = with(&["--clients", "1,2,4", "--slo", "50ms"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("write the SLO as p99=<duration>"), "{text}");
    let (code, text) = with(&["--clients", "1,2,4", "--slo", "p99=soon"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("is not a duration"), "{text}");
    let (code, text) = with(&["--clients", "1,2,2"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("at least 3 distinct client counts, got 2 (1,2)"),
        "{text}"
    );
    let (code, text) = with(&[]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("--clients"), "{text}");
}

#[test]
fn clients_as_flags_are_checked_and_the_worker_is_hidden() {
    let (code, text) = lockbench(&["run", "--clients-as", "threads"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("possible values: tasks, processes"), "{text}");
    let (code, text) = lockbench(&["run", "--clients-per-process", "0"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("1..=4096"), "{text}");
    let (code, text) = lockbench(&["run", "--clients-as", "tasks", "--clients-per-process", "2"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("--clients-per-process applies only to --clients-as processes"),
        "{text}"
    );
    let (_, help) = lockbench(&["--help"]);
    assert!(!help.contains("worker"), "{help}");
    // With its stdin closed it takes the runner for gone (exit 3); a first line that is not
    // a setup is a `failed` line on stdout and exit 2.
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("worker")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run lockbench worker");
    assert_eq!(
        out.status.code(),
        Some(3),
        "stdin closed: the runner is gone"
    );
    assert!(out.stdout.is_empty());
    let out = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("worker")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(b"{\"start\":{\"epoch_ns\":1}}\n")?;
            c.wait_with_output()
        })
        .expect("run lockbench worker");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(
        stdout.starts_with("{\"failed\":{\"error\":\"expected the setup line first"),
        "{stdout}"
    );
}

#[test]
fn chaos_files_are_validated_before_docker_is_touched() {
    let root = env!("CARGO_MANIFEST_DIR");
    let (code, text) = run_offline("chaos-nope", &["--chaos", "nope.toml"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("nope.toml: cannot read the chaos schedule file"),
        "{text}"
    );
    let bad = std::env::temp_dir().join(format!("lockbench-cli-{}-bad.toml", std::process::id()));
    std::fs::write(
        &bad,
        "[[faults]]\nkind = \"kill\"\ntarget = \"all\"\nstart = \"1s\"\n",
    )
    .unwrap();
    let (code, text) = run_offline("chaos-bad", &["--chaos", bad.to_str().unwrap()]);
    let _ = std::fs::remove_file(&bad);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("field 'faults[0].target' = \"all\" is invalid: valid targets of kind \"kill\" are one, minority, majority, leader"),
        "{text}"
    );
    let pause = format!("{root}/chaos/pause-clients.toml");
    let (code, text) = run_offline("chaos-pause", &["--systems", "etcd", "--chaos", &pause]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("add --clients-as processes"), "{text}");
}

#[test]
fn a_target_is_refused_before_anything_runs_where_it_cannot_be_kept() {
    let dir = std::env::temp_dir().join(format!("lockbench-cli-{}-targets", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let etcd = file(
        "etcd.toml",
        "system = \"etcd\"\nendpoints = [\"127.0.0.1:1\"]\nprefix = \"/b\"\n",
    );
    let chaos = concat!(env!("CARGO_MANIFEST_DIR"), "/chaos/kill-leader.toml");
    // A schedule with faults on a target without them: refused, naming the schedule, the
    // primitive, the target and the fix.
    let (code, text) = run_offline("target-chaos", &["--target", &etcd, "--chaos", chaos]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("'kill-leader' needs kill on target 'etcd'")
            && text.contains("faults = true"),
        "{text}"
    );
    // A system whose keys cannot be listed cannot keep the empty-prefix rule.
    let pg = file(
        "pg.toml",
        "system = \"postgres\"\nendpoints = [\"127.0.0.1:1\"]\nprefix = \"/b\"\n",
    );
    let (code, text) = run_offline("target-pg", &["--target", &pg]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("cannot list the keys a postgres recipe"),
        "{text}"
    );
    // Two targets of one system, and --systems beside --target.
    let (code, text) = run_offline("target-twice", &["--target", &etcd, "--target", &etcd]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("a run takes one target per system"), "{text}");
    let (code, text) = run_offline("target-systems", &["--target", &etcd, "--systems", "etcd"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("cannot be used with"), "{text}");
    // A password from a variable that is not set: named, before any connection.
    let auth = file(
        "auth.toml",
        "system = \"etcd\"\nendpoints = [\"127.0.0.1:1\"]\nprefix = \"/b\"\n[auth]\n\
         user = \"u\"\npassword_env = \"LB_CLI_TEST_UNSET_PW\"\n",
    );
    let (code, text) = run_offline("target-unset", &["--target", &auth]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("$LB_CLI_TEST_UNSET_PW, which is not set"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn floor_samples_are_bounded() {
    let (code, text) = lockbench(&["run", "--floor-samples", "10001"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("0..=10000"), "{text}");
    let (code, text) = lockbench(&["run", "--floor-samples", "-1"]);
    assert_eq!(code, 2, "{text}");
}

#[test]
fn an_unknown_version_lists_the_versions_there_are_before_anything_starts() {
    let (code, text) = run_offline("badversion", &["--systems", "etcd@3.3"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("unknown version '3.3' of etcd"), "{text}");
    assert!(text.contains("3.5, 3.4"), "{text}");
    let (code, text) = lockbench(&["up", "redis@6.2"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("8.0, 7.0, valkey-8.1"), "{text}");
}

#[test]
fn an_image_override_beside_a_named_version_is_refused_with_the_reason() {
    for args in [
        &["--etcd-image", "my/etcd:x", "run", "--systems", "etcd@3.4"][..],
        &[
            "--redis-image",
            "my/redis:x",
            "run",
            "--systems",
            "redlock@valkey-8.1",
        ][..],
    ] {
        let (code, text) = lockbench(args);
        assert_eq!(code, 2, "{args:?}: {text}");
        assert!(text.contains("names a version"), "{args:?}: {text}");
        assert!(
            text.contains("replaces the default version's image"),
            "{text}"
        );
    }
    // The override alone still runs the default version's cells on the image it names (the
    // run then stops at the missing image or engine, past the check).
    let (_, text) = lockbench(&[
        "--etcd-image",
        "my/etcd:x",
        "run",
        "--systems",
        "etcd",
        "--duration",
        "1s",
    ]);
    assert!(!text.contains("names a version"), "{text}");
}
