//! The runner end to end without Docker: the in-memory mock lock drives `runner::run_on` through
//! the history, the statistics and the exporters, in about two seconds.

use std::path::PathBuf;

use lockbench::System;
use lockbench::history::{CriticalSection, critical_sections, read_history};
use lockbench::plan::{Overrides, Plan};
use lockbench::recipe::Strategy;
use lockbench::recipe::mock::MockOptions;
use lockbench::report::Exporters;
use lockbench::runner::progress::PlainProgress;
use lockbench::runner::{MockBackend, RunFolder, RunOutcome, run_on};
use lockbench::stats::CellSummary;
use lockbench::workload::Workload;

const WORKLOAD: &str = r#"
clients = 8
keys = 1
hold = { kind = "fixed", value = "1ms" }
think = { kind = "fixed", value = "0ms" }
arrival = "closed"
duration = "1s"
warmup = "0s"
lease_ttl = "10s"
renew = true
acquire_timeout = "5s"
strategies = ["herd", "predecessor"]
seed = 7
"#;

fn scratch(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("lockbench-mock-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

/// Plays `plan` on `backend` into a run folder `name` under `out`, with the file exporters.
async fn play(backend: &MockBackend, plan: Plan, out: &std::path::Path, name: &str) -> RunOutcome {
    let folder = RunFolder::create(Some(out), name).expect("folder");
    run_on(
        backend,
        plan,
        folder,
        &PlainProgress,
        &Exporters::files_only(),
    )
    .await
    .expect("run")
}

async fn run(name: &str, options: MockOptions) -> (PathBuf, Vec<CellSummary>, u64) {
    let wl = Workload::from_str(WORKLOAD, "mock-hot").expect("workload");
    let plan =
        Plan::expand("mockrun", &[System::Redis], &[wl], &Overrides::default()).expect("plan");
    let backend = MockBackend::new(options);
    let outcome = play(&backend, plan, &scratch(name), "mock-hot").await;
    assert!(!outcome.interrupted && outcome.not_run.is_empty());
    (outcome.folder, outcome.summaries, backend.planted())
}

/// Pairs of different clients whose holds [acquire ok, release invoke] overlap on one key.
fn overlaps(history: &std::path::Path) -> usize {
    let events = read_history(history).expect("history");
    let sections = critical_sections(&events);
    let end = |s: &CriticalSection| s.released_us.unwrap_or(u64::MAX);
    let mut n = 0;
    for (i, a) in sections.iter().enumerate() {
        n += sections[i + 1..]
            .iter()
            .take_while(|b| b.acquired_us < end(a))
            .filter(|b| b.client != a.client && b.key == a.key)
            .count();
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mock_run_writes_every_file_and_shows_the_herd() {
    let (folder, summaries, planted) = run("safe", MockOptions::default()).await;
    assert_eq!(planted, 0);
    assert_eq!(summaries.len(), 2);
    for f in ["plan.toml", "summary.json", "report.md"] {
        assert!(folder.join(f).is_file(), "{f} missing");
    }
    let by = |s: Strategy| summaries.iter().find(|c| c.id.strategy == s).expect("cell");
    let (herd, pred) = (by(Strategy::Herd), by(Strategy::Predecessor));
    for c in [herd, pred] {
        let dir = folder
            .join("cells")
            .join(format!("redis-{}-mock-hot-c8", c.id.strategy));
        for f in ["history.jsonl", "cell.json", "summary.json", "acquire.hgrm"] {
            assert!(dir.join(f).is_file(), "{}: {f} missing", dir.display());
        }
        let cell: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("cell.json")).unwrap()).unwrap();
        assert_eq!(
            cell["schema_version"],
            lockbench::results::SCHEMA_VERSION,
            "check::evaluate checks it"
        );
        // The folder alone gives back what the run wrote (what `lockbench check` relies on).
        let again = lockbench::check::evaluate(&dir).expect("evaluate the cell folder");
        let written: CellSummary =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(again.analysis.summary, written);
        assert_eq!(&written, c);
        assert!(
            c.acquisitions > 100,
            "{}: {} acquisitions",
            c.id.strategy,
            c.acquisitions
        );
        assert_eq!(
            overlaps(&dir.join("history.jsonl")),
            0,
            "a correct lock never overlaps"
        );
        assert!(c.requests_total >= c.acquisitions);
        assert_eq!(c.fallback_polls, 0);
    }
    let (wh, wp) = (
        herd.wakeups_per_acquisition.expect("herd wake-ups"),
        pred.wakeups_per_acquisition.expect("predecessor wake-ups"),
    );
    assert!(
        wh > 2.0 * wp,
        "herd {wh:.2} vs predecessor {wp:.2} wake-ups per acquisition"
    );
    assert!(wp <= 1.0, "one release wakes one queued waiter: {wp:.2}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unsafe_mock_leaves_overlaps_in_the_history() {
    let (folder, summaries, planted) = run(
        "unsafe",
        MockOptions {
            overlap_every: Some(10),
            ..MockOptions::default()
        },
    )
    .await;
    // Every 10th acquisition is granted at once; it overlaps when the key was held then.
    assert!(planted > 0, "planted {planted}");
    let mut seen = 0;
    for c in &summaries {
        let h = folder
            .join("cells")
            .join(format!("redis-{}-mock-hot-c8", c.id.strategy))
            .join("history.jsonl");
        seen += overlaps(&h);
    }
    assert!(
        seen > 0,
        "the planted double grants show in the history ({planted} planted)"
    );
}

fn check(args: &[&std::ffi::OsStr]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("check")
        .args(args)
        .output()
        .expect("run lockbench check")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_recomputes_a_run_folder_offline_and_rewrites_only_when_asked() {
    let (folder, summaries, _) = run("check", MockOptions::default()).await;
    let out = check(&[folder.as_os_str()]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("| redis | herd | mock-hot |"), "{stdout}");
    assert!(
        stderr.contains("2 cells; every stored summary matches"),
        "{stderr}"
    );

    // A summary that no longer says what the history says is named, and left alone.
    let cell = folder.join("cells").join("redis-herd-mock-hot-c8");
    let path = cell.join("summary.json");
    let mut tampered = summaries[0].clone();
    tampered.acquisitions += 1;
    let text = serde_json::to_string_pretty(&tampered).unwrap();
    std::fs::write(&path, &text).unwrap();
    let out = check(&[folder.as_os_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 of 2 cells differ"), "{stderr}");
    assert!(stderr.contains("redis-herd-mock-hot-c8"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "rewrites nothing"
    );

    // --write puts back what the history says; one cell folder can be checked alone.
    let out = check(&[cell.as_os_str(), std::ffi::OsStr::new("--write")]);
    assert!(out.status.success());
    let back: CellSummary = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(back, summaries[0]);

    // With no stored summary, nothing is said to match: it says what it evaluated.
    for c in std::fs::read_dir(folder.join("cells")).unwrap() {
        std::fs::remove_file(c.unwrap().path().join("summary.json")).unwrap();
    }
    let out = check(&[folder.as_os_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "2 cells evaluated from their histories; none had a stored summary.json to compare with"
        ) && !stderr.contains("matches"),
        "{stderr}"
    );

    let out = check(&[folder.join("cells").as_os_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("not a lockbench run or cell folder"),
        "{stderr}"
    );
}

/// A short mock workload on one key with seed `seed` and the register in `resource` mode.
fn calibration_workload(seed: u64, resource: &str, expect: &str) -> Workload {
    let text = format!(
        "clients = 6\nkeys = 1\nhold = {{ kind = \"uniform\", min = \"200us\", max = \"2ms\" }}\n\
         think = {{ kind = \"uniform\", min = \"0ms\", max = \"500us\" }}\nacquisitions = 300\n\
         lease_ttl = \"10s\"\nacquire_timeout = \"5s\"\nstrategies = [\"herd\", \"predecessor\"]\n\
         seed = {seed}\nresource = \"{resource}\"\nexpect = \"{expect}\"\n"
    );
    Workload::from_str(&text, &format!("calib-{seed}")).expect("workload")
}

async fn run_workload(name: &str, wl: Workload, options: MockOptions) -> (Vec<CellSummary>, u64) {
    let plan =
        Plan::expand("mockrun", &[System::Redis], &[wl], &Overrides::default()).expect("plan");
    let out = scratch(name);
    let backend = MockBackend::new(options);
    let outcome = play(&backend, plan, &out, name).await;
    let _ = std::fs::remove_dir_all(&out);
    (outcome.summaries, backend.planted())
}

fn safety(c: &CellSummary) -> &lockbench::check::Safety {
    c.safety.as_ref().expect("every cell carries a verdict")
}

/// One thread, so a release's invoke and the service freeing the key happen in one step and
/// every overlap the mock plants is one the history shows.
#[tokio::test(flavor = "current_thread")]
async fn the_checkers_find_every_planted_overlap_and_no_false_alarm() {
    use lockbench::check::{Expect, SafetyVerdict};
    let opts = |every| MockOptions {
        overlap_every: every,
        ttl: std::time::Duration::from_secs(10),
        ..MockOptions::default()
    };
    let (mut planted_total, mut found_total) = (0, 0);
    for seed in 1..=6 {
        // Safe mode: a correct lock, both strategies, fenced and unfenced: nothing found.
        for resource in ["fenced", "unfenced"] {
            let (cells, planted) = run_workload(
                &format!("safe-{seed}-{resource}"),
                calibration_workload(seed, resource, "safe"),
                opts(None),
            )
            .await;
            assert_eq!(planted, 0);
            for c in &cells {
                let s = safety(c);
                assert_eq!(
                    (s.verdict, s.violations.len(), s.lost_updates),
                    (SafetyVerdict::Safe, 0, 0),
                    "false alarm, seed {seed} {resource} {}: {s:#?}",
                    c.id
                );
                assert_eq!(s.stale_accesses_rejected, 0);
            }
        }
        // Unsafe mode: every planted overlap is found, each as "granted twice".
        let (cells, planted) = run_workload(
            &format!("unsafe-{seed}"),
            calibration_workload(seed, "unfenced", "unsafe"),
            opts(Some(7)),
        )
        .await;
        let found: u64 = cells.iter().map(|c| safety(c).overlaps.granted_twice).sum();
        assert_eq!(
            found, planted,
            "seed {seed}: planted {planted}, found {found}"
        );
        for c in &cells {
            let s = safety(c);
            assert_eq!(s.expected, Expect::Unsafe);
            if s.overlaps.granted_twice > 0 {
                assert_eq!(s.verdict, SafetyVerdict::Unsafe, "{}", c.id);
                assert!(!s.violations.is_empty());
            }
            let other = s.overlaps.told_and_went_on + s.overlaps.expired_untold;
            assert_eq!(other, 0, "{}: nobody was told or expired: {s:#?}", c.id);
        }
        planted_total += planted;
        found_total += found;
    }
    assert!(
        planted_total >= 30,
        "too few planted to calibrate: {planted_total}"
    );
    eprintln!("planted {planted_total} overlaps over 6 seeds; found {found_total}");
}

/// The fenced register turns planted double grants into refused stale accesses and loses no
/// update; unfenced, the same double grants lose updates.
#[tokio::test(flavor = "current_thread")]
async fn fencing_keeps_the_data_that_double_grants_would_lose() {
    let opts = MockOptions {
        overlap_every: Some(5),
        ttl: std::time::Duration::from_secs(10),
        ..MockOptions::default()
    };
    let (fenced, _) = run_workload(
        "fenced",
        calibration_workload(11, "fenced", "unsafe"),
        opts.clone(),
    )
    .await;
    let (unfenced, _) = run_workload(
        "unfenced",
        calibration_workload(11, "unfenced", "unsafe"),
        opts,
    )
    .await;
    let sum = |cells: &[CellSummary], f: fn(&lockbench::check::Safety) -> u64| -> u64 {
        cells.iter().map(|c| f(safety(c))).sum()
    };
    assert_eq!(sum(&fenced, |s| s.lost_updates), 0);
    assert!(sum(&fenced, |s| s.stale_accesses_rejected) > 0);
    assert!(sum(&unfenced, |s| s.lost_updates) > 0);
    assert_eq!(sum(&unfenced, |s| s.stale_accesses_rejected), 0);
}

/// `lockbench check` exits 1 on a cell expected safe and judged unsafe, naming it with the
/// history lines of its first violation; the same cells expected unsafe are findings (exit 0).
#[tokio::test(flavor = "current_thread")]
async fn check_exits_1_on_an_unexpected_unsafe_cell_and_names_the_events() {
    let opts = MockOptions {
        overlap_every: Some(7),
        ttl: std::time::Duration::from_secs(10),
        ..MockOptions::default()
    };
    for (expect, code) in [("safe", 1), ("unsafe", 0)] {
        let wl = calibration_workload(5, "fenced", expect);
        let plan = Plan::expand("mockrun", &[System::Redis], &[wl], &Overrides::default()).unwrap();
        let out = scratch(&format!("exit-{expect}"));
        let outcome = play(&MockBackend::new(opts.clone()), plan, &out, "exit").await;
        let res = check(&[outcome.folder.as_os_str()]);
        let stderr = String::from_utf8_lossy(&res.stderr);
        assert_eq!(res.status.code(), Some(code), "expect {expect}: {stderr}");
        if expect == "safe" {
            assert!(stderr.contains("UNSAFE redis-"), "{stderr}");
            assert!(stderr.contains("overlaps granted twice"), "{stderr}");
            assert!(stderr.contains("history.jsonl lines"), "{stderr}");
        } else {
            assert!(stderr.contains("finding redis-"), "{stderr}");
        }
        let report = std::fs::read_to_string(outcome.folder.join("report.md")).unwrap();
        assert!(report.contains("## Safety"), "{report}");
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// A run with chaos schedules: the schedule is a coordinate (folder names, summaries, cell.json,
/// plan.toml), its `expect` is the cell's, its `cluster_size` a cluster of its own; and a
/// schedule with faults is played by the nemesis and healed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_schedules_are_cell_coordinates_and_their_faults_are_played() {
    use lockbench::check::Expect;
    use lockbench::nemesis::schedule::Schedule;
    let wl = Workload::from_str(WORKLOAD, "mock-hot").expect("workload");
    // A control schedule: no faults, its own name, size and expectation.
    let calm = Schedule::from_str(
        "cluster_size = 4\nexpect = \"unsafe\"\nfaults = []\n",
        "chaos/calm.toml",
    )
    .expect("schedule");
    let ov = Overrides {
        schedules: vec![Schedule::none(), calm.clone()],
        strategies: Some(vec![Strategy::Herd]),
        ..Overrides::default()
    };
    let plan =
        Plan::expand("mockrun", &[System::Redis], std::slice::from_ref(&wl), &ov).expect("plan");
    let groups: Vec<usize> = plan.by_cluster().iter().map(|g| g.size).collect();
    assert_eq!(groups, [3, 4], "the 4-node schedule gets its own cluster");
    let out = scratch("chaos");
    let backend = MockBackend::new(MockOptions::default());
    let outcome = play(&backend, plan, &out, "mock-hot").await;
    let ids: Vec<String> = outcome.summaries.iter().map(|s| s.id.to_string()).collect();
    assert_eq!(
        ids,
        ["redis-herd-mock-hot-c8", "redis-herd-mock-hot-calm-c8"]
    );
    let calm_cell = outcome.folder.join("cells/redis-herd-mock-hot-calm-c8");
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(calm_cell.join("cell.json")).unwrap())
            .unwrap();
    assert_eq!(info["chaos"], "calm");
    assert_eq!(
        info["expect"], "unsafe",
        "the schedule's expect, not the workload's"
    );
    assert_eq!(info["chaos_spec"]["cluster_size"], 4);
    let plain = outcome
        .folder
        .join("cells/redis-herd-mock-hot-c8/cell.json");
    let plain: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(plain).unwrap()).unwrap();
    assert_eq!(
        (&plain["chaos"], &plain["expect"]),
        (&"none".into(), &"safe".into())
    );
    assert!(plain.get("chaos_spec").is_none());
    let safety = |i: usize| {
        outcome.summaries[i]
            .safety
            .as_ref()
            .expect("safety")
            .expected
    };
    assert_eq!((safety(0), safety(1)), (Expect::Safe, Expect::Unsafe));
    let back = Plan::from_toml(
        &std::fs::read_to_string(outcome.folder.join("plan.toml")).unwrap(),
        "plan.toml",
    )
    .expect("plan.toml reads back");
    assert_eq!(back.cells[1].chaos, calm);

    // A schedule with faults is played by the nemesis on the mock's pretend servers: fault
    // events with targets in the history, every fault undone by the cell's end.
    let kill = Schedule::from_str(
        "seed = 3\n[[faults]]\nkind = \"kill\"\ntarget = \"leader\"\nstart = \"100ms\"\nrestart_after = \"300ms\"\n",
        "chaos/k.toml",
    )
    .expect("schedule");
    let ov = Overrides {
        schedules: vec![kill],
        strategies: Some(vec![Strategy::Herd]),
        ..Overrides::default()
    };
    let plan = Plan::expand("mockrun", &[System::Redis], &[wl], &ov).expect("plan");
    let outcome = play(&backend, plan, &out, "mock-kill").await;
    assert_eq!(outcome.summaries.len(), 1);
    let service = backend.last.lock().unwrap().clone().expect("service");
    // The leader is mock1 while it is up; killed at 100 ms, restarted 300 ms later.
    assert_eq!(service.fault_log(), ["kill mock1", "restart mock1"]);
    assert_eq!(service.faults_left(), (vec![], false));
    let cell = outcome.folder.join("cells/redis-herd-mock-hot-k-c8");
    let h = lockbench::history::read_history(&cell.join("history.jsonl")).expect("history");
    let faults: Vec<(String, String, Vec<String>)> = h
        .iter()
        .filter(|e| e.op == lockbench::history::Op::Fault)
        .map(|e| {
            (
                format!("{:?}", e.kind),
                e.fault.clone().unwrap(),
                e.targets.clone().unwrap(),
            )
        })
        .collect();
    let m1 = vec!["mock1".to_string()];
    assert_eq!(
        faults,
        [
            ("Invoke".into(), "kill".into(), m1.clone()),
            ("Ok".into(), "kill".into(), m1.clone())
        ]
    );
    // The summary has the window, from the kill to its restart, and the folder alone gives it
    // back (what `lockbench check` compares).
    let summary = &outcome.summaries[0];
    let times: Vec<u64> = h
        .iter()
        .filter(|e| e.op == lockbench::history::Op::Fault)
        .map(|e| e.t_us)
        .collect();
    let w: Vec<_> = summary
        .faults
        .iter()
        .map(|w| (w.kind.as_str(), &w.targets, w.start_us, w.end_us, w.started))
        .collect();
    assert_eq!(w, [("kill", &m1, times[0], Some(times[1]), true)]);
    let again = lockbench::check::evaluate(&cell).expect("evaluate the chaos cell");
    assert_eq!(&again.analysis.summary, summary);
    let _ = std::fs::remove_dir_all(&out);
}
