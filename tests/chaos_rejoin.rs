//! Restarted nodes rejoin their cluster, on real clusters, through `lockbench run`: on every
//! system the leader (for Redlock a master) is killed and restarted with its data wiped; the
//! kill's end is `ok` only once the node serves its cluster again (an etcd member is removed
//! and added back, since etcd refuses to bootstrap a member twice), and a second, calm cell on
//! the same cluster starts on a healthy cluster (every node up, one leader) and records how
//! long that took. Cells are short: the test is about the cluster, not the lock.

mod common;

use common::cli_run::{history, latest, n, run, scratch, summary, write};

// One test per system, so that two of the four runs go side by side (one run of all four took
// 69 s, the longest test of its binary and of CI's tail).

#[test]
fn a_wiped_node_rejoins_and_the_next_cell_finds_every_node_healthy_zookeeper() {
    wiped_node_rejoins("zookeeper");
}

#[test]
fn a_wiped_node_rejoins_and_the_next_cell_finds_every_node_healthy_etcd() {
    wiped_node_rejoins("etcd");
}

#[test]
fn a_wiped_node_rejoins_and_the_next_cell_finds_every_node_healthy_redis() {
    wiped_node_rejoins("redis");
}

#[test]
fn a_wiped_node_rejoins_and_the_next_cell_finds_every_node_healthy_redlock() {
    wiped_node_rejoins("redlock");
}

/// On `system`: the leader (a master) killed and restarted wiped rejoins, and the calm cell
/// after it finds every node healthy.
fn wiped_node_rejoins(system: &str) {
    let out = scratch(&format!("chaos-rejoin-{system}"));
    let workload = write(
        &out,
        "rejoin.toml",
        "clients = 2\nkeys = 1\nhold = \"5ms\"\nthink = \"10ms\"\nduration = \"5s\"\n\
         lease_ttl = \"4s\"\nrenew = true\nacquire_timeout = \"20s\"\n\
         strategies = [\"herd\"]\nseed = 1\n",
    );
    // The leader killed at 1 s, restarted empty 1 s later. Redis and Redlock are expected
    // unsafe under a wipe (a replica or master that forgot the lock); the verdict is not what
    // this test is about.
    let schedule = write(
        &out,
        "wipe.toml",
        "seed = 3\nexpect = { default = \"safe\", redis = \"unsafe\", redlock = \"unsafe\" }\n\
         [[faults]]\nkind = \"kill\"\ntarget = \"leader\"\ndata = \"wipe\"\n\
         restart_after = \"1s\"\nstart = \"1s\"\n",
    );
    let calm = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("chaos/none.toml");
    let res = run(
        &out,
        &[
            "--systems",
            system,
            "--chaos",
            schedule.to_str().unwrap(),
            "--chaos",
            calm.to_str().unwrap(),
        ],
        &[workload],
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(0), "{stderr}");
    let run = latest(&out);
    let cell = format!("{system}-herd-rejoin-wipe-c2");
    let s = summary(&run, &cell);
    let faults = s["faults"].as_array().expect("faults");
    assert_eq!(faults.len(), 1, "{cell}: {faults:#?}");
    let w = &faults[0];
    assert_eq!(w["kind"], "kill", "{cell}: {w:#}");
    assert_eq!(w["started"], true, "{cell}: {w:#}");
    // Ended `ok`: the undo ran and the node served its cluster again in time.
    assert!(w["error"].is_null(), "{cell}: {w:#}");
    let (start, effect, undo, end) = (
        n(w, &["start_us"]),
        n(w, &["effect_us"]),
        n(w, &["undo_us"]),
        n(w, &["end_us"]),
    );
    assert!(
        start <= effect && effect <= undo && undo <= end,
        "{cell}: {w:#}"
    );
    let ends: Vec<_> = history(&run, &cell)
        .into_iter()
        .filter(|e| e["op"] == "fault" && e["kind"] != "invoke")
        .collect();
    assert_eq!(ends.len(), 1, "{cell}: {ends:?}");
    assert_eq!(ends[0]["kind"], "ok", "{cell}: {:?}", ends[0]);
    // The end is due a full `restart_after` after the kill took effect.
    assert!(undo >= effect + 1_000_000, "{cell}: {w:#}");
    eprintln!(
        "{cell}: kill applied in {:.1} ms, restart and rejoin took {:.0} ms",
        w["applying_ms"].as_f64().unwrap(),
        w["undoing_ms"].as_f64().unwrap()
    );

    // The next cell on the same cluster found every node healthy, and says how long
    // that took; its clients were served.
    let next = format!("{system}-herd-rejoin-c2");
    let s = summary(&run, &next);
    let settle = s["settle_ms"].as_f64();
    assert!(settle.is_some(), "{next}: no settle_ms in {s:#}");
    assert!(n(&s, &["acquisitions"]) > 0, "{next}: {s:#}");
    eprintln!("{next}: settled in {:.0} ms", settle.unwrap());
}
