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
