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
