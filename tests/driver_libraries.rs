//! The shipped library drivers on real clusters, through `lockbench run --clients-from` as a
//! user runs them:
//!
//! - every shipped driver (kazoo and Curator on ZooKeeper, python-etcd3 on etcd, pottery on
//!   Redlock; redis-py on Redis is `tests/driver_redis.rs`) acquires, writes and releases,
//!   recorded with no token and no made-up figure, and its cell is safe without faults;
//! - kazoo behind a wrapper script (a shell that does not `exec` the driver) paused mid-hold
//!   past its session timeout: the pause stops the whole process group, so the session expires,
//!   another client is granted the lock during the pause, kazoo reports the session lost after
//!   the thaw, and the driver, which checks, declines its write;
//! - calibration: the same driver told to ignore the lost session writes late into another
//!   holder's critical section, and the checkers judge it unsafe, with evidence.
//!
//! Needs Docker and the lockbench images, PyPI on first use (each Python driver's virtual
//! environment) and Debian's Curator and JDK packages (`.ci/run` installs them).

mod common;

use std::path::{Path, PathBuf};

use common::cli_run::{
    assert_evidence_walks_to_events, history, latest, n, overlaps, run, safety, scratch, windows,
    write,
};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn driver_json(run: &Path, cell: &str) -> Value {
    let path = run.join("cells").join(cell).join("driver.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn count(events: &[Value], kind: &str, op: &str) -> usize {
    events
        .iter()
        .filter(|e| e["kind"] == kind && e["op"] == op)
        .count()
}

#[test]
fn every_shipped_driver_acquires_writes_and_releases_on_its_system() {
    let out = scratch("driver-libraries");
    let w = write(
        &out,
        "w.toml",
        "clients = 4\nkeys = 1\nhold = \"2ms\"\nthink = \"0ms\"\nduration = \"5s\"\n\
         warmup = \"0s\"\nlease_ttl = \"10s\"\nacquire_timeout = \"5s\"\nresource = \"unfenced\"\n\
         strategies = [\"predecessor\"]\nseed = 1\n",
    );
    let drivers = ["kazoo", "curator", "python-etcd3", "pottery"]
        .map(|d| root().join("drivers").join(d).display().to_string())
        .join(",");
    // The doctor starts each driver and pings it (making what its first start makes).
    let doctor = std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .args(["doctor", "--clients-from", &drivers])
        .output()
        .expect("run lockbench doctor");
    let said = String::from_utf8_lossy(&doctor.stdout);
    for library in ["kazoo", "curator", "python-etcd3", "pottery"] {
        assert!(
            said.lines().any(|l| l.starts_with("ok")
                && l.contains(&format!("driver {library} "))
                && l.contains("answered a ping")),
            "{library}: {said}{}",
            String::from_utf8_lossy(&doctor.stderr)
        );
    }
    let res = run(
        &out,
        &[
            "--systems",
            "zookeeper,etcd,redlock",
            "--clients-from",
            &drivers,
        ],
        &[w],
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{stderr}");
    let run = latest(&out);
    for (system, library, version) in [
        ("zookeeper", "kazoo", "2.11.0"),
        ("zookeeper", "curator", "5.4.0"),
        ("etcd", "python-etcd3", "0.12.0"),
        ("redlock", "pottery", "3.0.1"),
    ] {
        let cell = format!("{system}-{library}-w-c4");
        let events = history(&run, &cell);
        let (acquired, released, written) = (
            count(&events, "ok", "acquire"),
            count(&events, "ok", "release"),
            count(&events, "ok", "write"),
        );
        assert!(
            acquired >= 5 && released >= 5 && written >= 5,
            "{cell}: {acquired} acquisitions, {released} releases, {written} writes\n{stderr}"
        );
        // None of these libraries shows a token, its requests or its wake-ups: absent, never 0.
        for e in events
            .iter()
            .filter(|e| matches!(e["op"].as_str(), Some("acquire" | "read" | "write")))
        {
            for field in ["token", "requests", "wakeups"] {
                assert!(e.get(field).is_none(), "{cell}: {field} in {e}");
            }
        }
        let record = driver_json(&run, &cell);
        assert_eq!(record["reported_version"], version, "{cell}: {record}");
        assert!(
            record["broken"].as_array().unwrap().is_empty(),
            "{cell}: {record}"
        );
        assert!(
            record["round_trip_p50_us"].as_u64().unwrap() > 0,
            "{cell}: {record}"
        );
        assert_eq!(safety(&run, &cell)["verdict"], "safe", "{cell}");
    }
}

/// A manifest in `dir` running the shipped kazoo driver behind `sh -c '…; exit $?'` (the shell
/// stays, the driver its child), with `check_lost` as given.
fn wrapped_kazoo(dir: &Path, library: &str, check_lost: bool) -> PathBuf {
    let folder = dir.join(library);
    std::fs::create_dir_all(&folder).unwrap();
    let drivers = root().join("drivers");
    let script = format!(
        "sh {}/python/run.sh {}/kazoo/driver.py; exit $?",
        drivers.display(),
        drivers.display()
    );
    write(
        &folder,
        "driver.toml",
        &format!(
            "library = \"{library}\"\nversion = \"2.11.0\"\nsystems = [\"zookeeper\"]\n\
             command = [\"sh\", \"-c\", \"{script}\"]\nlease_ttl = \"KazooClient(timeout=...)\"\n\
             checks_lost_before_write = {check_lost}\n[settings]\ncheck_lost = {check_lost}\n"
        ),
    );
    folder
}

#[test]
fn a_paused_kazoo_behind_a_wrapper_loses_its_session_and_one_that_ignores_it_is_unsafe() {
    let out = scratch("driver-pause");
    let checks = wrapped_kazoo(&out, "kazoo-wrapped", true);
    let ignores = wrapped_kazoo(&out, "kazoo-ignores-lost", false);
    // Holds of 14 s under a 4 s session; the holder stopped at 3 s for 7 s, mid-hold: its
    // session expires during the pause, and the library can tell it before the hold ends. A
    // think time past the cell's end makes each client's one acquisition its last.
    let w = write(
        &out,
        "held.toml",
        "clients = 3\nkeys = 1\nhold = \"14s\"\nthink = \"30s\"\nduration = \"18s\"\n\
         warmup = \"1s\"\nlease_ttl = \"4s\"\nacquire_timeout = \"20s\"\nresource = \"unfenced\"\n\
         strategies = [\"predecessor\"]\nseed = 1\nclients_as = \"processes\"\n",
    );
    let schedule = write(
        &out,
        "pause.toml",
        "seed = 1\nexpect = \"unsafe\"\n[[faults]]\nkind = \"pause-client\"\ntarget = \"holder\"\n\
         start = \"3s\"\nduration = \"7s\"\n",
    );
    let libraries = format!("{},{}", checks.display(), ignores.display());
    let res = run(
        &out,
        &[
            "--systems",
            "zookeeper",
            "--clients-from",
            &libraries,
            "--chaos",
            schedule.to_str().unwrap(),
        ],
        &[w],
    );
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(0), "{stderr}");
    let run = latest(&out);
    for library in ["kazoo-wrapped", "kazoo-ignores-lost"] {
        let cell = format!("zookeeper-{library}-held-pause-c3");
        let events = history(&run, &cell);
        let pause = windows(&events)
            .into_iter()
            .find(|w| w.0 == "pause-client")
            .unwrap_or_else(|| panic!("{cell}: no pause window\n{stderr}"));
        let (start, end) = (pause.2, pause.3);
        // The library said so itself, after the thaw: its session was lost.
        let lost = events
            .iter()
            .find(|e| e["op"] == "lease_lost")
            .unwrap_or_else(|| panic!("{cell}: kazoo never reported its session lost"));
        let (paused, lost_at) = (&lost["process"], lost["t_us"].as_u64().unwrap());
        assert!(
            lost_at >= end,
            "{cell}: lost at {lost_at} µs, thawed at {end}"
        );
        // The session expired during the pause: another client was granted the lock then. Had
        // the pause stopped the wrapper alone, kazoo would have kept its session alive.
        let granted_meanwhile = events.iter().any(|e| {
            e["kind"] == "ok"
                && e["op"] == "acquire"
                && &e["process"] != paused
                && (start..end).contains(&e["t_us"].as_u64().unwrap())
        });
        assert!(
            granted_meanwhile,
            "{cell}: nobody was granted the lock while client {paused} was paused ({start}-{end} µs)"
        );
        // The paused client's write after the signal, before its release: declined where the
        // driver checks it.
        let of_paused = |op: &'static str| -> Vec<(Value, u64)> {
            events
                .iter()
                .filter(|e| e["op"] == op && &e["process"] == paused)
                .map(|e| (e["kind"].clone(), e["t_us"].as_u64().unwrap()))
                .collect()
        };
        let released = of_paused("release")
            .into_iter()
            .map(|(_, t)| t)
            .find(|&t| t > lost_at)
            .unwrap_or(u64::MAX);
        let wrote_after = of_paused("write")
            .into_iter()
            .any(|(kind, t)| kind == "ok" && t > lost_at && t < released);
        assert_eq!(
            wrote_after,
            library == "kazoo-ignores-lost",
            "{cell}: client {paused} wrote after its session was reported lost: {wrote_after}"
        );
    }
    // Calibration: the driver that ignores the lost session writes late, into the next
    // holder's critical section, and the same checkers say unsafe.
    let cell = "zookeeper-kazoo-ignores-lost-held-pause-c3";
    let s = safety(&run, cell);
    assert_eq!(s["verdict"], "unsafe", "{cell}: {s:#}");
    assert!(overlaps(&s) >= 1, "{cell}: {s:#}");
    assert!(n(&s, &["lost_updates"]) >= 1, "{cell}: {s:#}");
    assert_evidence_walks_to_events(&run, cell, &s);
    // The driver that checks lost no update: it declined its late write.
    let checked = safety(&run, "zookeeper-kazoo-wrapped-held-pause-c3");
    assert_eq!(n(&checked, &["lost_updates"]), 0, "{checked:#}");
}
