//! `lockbench up` end to end: it prints the cluster as JSON, and SIGTERM (what `kill` and CI
//! runners send; Ctrl-C's SIGINT is covered by the run test) removes every
//! container and network it started.

mod common;

#[test]
fn up_prints_endpoints_and_sigterm_removes_everything() {
    let up = common::up::Up::start(&["redlock", "--size", "1"]);
    let endpoint = up.info["endpoints"][0].as_str().expect("an endpoint");
    assert!(endpoint.starts_with("127.0.0.1:"), "{endpoint}");
    assert_eq!(up.info["nodes"][0]["state"], "running");
    // Dropped: SIGTERM, exit 0, and no container or network of the run left (Up's Drop
    // asserts both).
    drop(up);
}
