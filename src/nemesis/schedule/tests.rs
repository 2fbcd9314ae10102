//! Schedule parsing, validation, writing back and timelines, on small texts and on every
//! shipped file.

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::cluster::DataOnRestart;
use crate::fault::{
    ClientTarget, Clock, ClockSkew, Kill, Mixed, Partition, PauseClient, Shape, Target,
};
use crate::workload::Expect::{Safe, Unsafe};

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn err(text: &str) -> String {
    Schedule::from_str(text, "chaos/x.toml")
        .unwrap_err()
        .to_string()
}

fn shipped(name: &str) -> Schedule {
    Schedule::from_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("chaos/{name}.toml")))
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_shipped_schedule_parses_and_reads_back_equal() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("chaos");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let s = Schedule::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
        let text = toml::to_string(&s.to_table()).unwrap();
        let back = Schedule::from_str(&text, "written")
            .unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()));
        assert_eq!(back, s, "{}\n{text}", path.display());
        names.push(s.name);
    }
    names.sort();
    assert_eq!(
        names,
        [
            "bridge",
            "clock-jump",
            "clock-jump-majority",
            "isolate-leader",
            "kill-leader",
            "mixed",
            "none",
            "partition-clients",
            "partition-even",
            "partition-halves",
            "pause-clients",
            "pause-node",
            "promote",
            "redlock-restart-delayed",
            "redlock-restart-empty",
            "slow-clients",
            "split-even-20s",
        ]
    );
}

#[test]
fn shipped_schedules_mean_what_their_comments_say() {
    assert_eq!(shipped("none"), Schedule::none());
    let even = shipped("partition-even");
    assert_eq!(even.cluster_size, Some(4));
    assert_eq!(even.systems, Some(vec![System::Zookeeper, System::Etcd]));
    assert_eq!(
        even.faults[0].kind,
        FaultKind::Partition(Partition {
            shape: Shape::Halves,
            clients: false
        })
    );
    let pause = shipped("pause-clients");
    assert_eq!(
        pause.faults[0].kind,
        FaultKind::PauseClient(PauseClient {
            target: ClientTarget::Holder
        })
    );
    // Longer than held-locks' 10 s lease, as the comment says.
    assert!(pause.faults[0].duration > secs(10));
    assert!(pause.pauses_clients());
    assert_eq!(
        pause.expect_for(System::Zookeeper, Strategy::Herd),
        Some(Unsafe)
    );
    let empty = shipped("redlock-restart-empty");
    let delayed = shipped("redlock-restart-delayed");
    for s in [&empty, &delayed] {
        assert_eq!(s.systems, Some(vec![System::Redlock]));
        assert!(matches!(
            s.faults[0].kind,
            FaultKind::Kill(Kill {
                data: DataOnRestart::Wipe,
                ..
            })
        ));
    }
    assert_eq!(empty.faults[0].duration, Duration::ZERO);
    // A majority: one master restarted empty leaves the holder four of five. The delayed pair
    // kills as many, once, and keeps them down past held-locks' 10 s lease, inside a 20 s cell.
    for s in [&empty, &delayed] {
        assert!(matches!(
            s.faults[0].kind,
            FaultKind::Kill(Kill {
                target: Target::Majority,
                ..
            })
        ));
    }
    assert!(delayed.faults[0].duration > secs(10));
    assert!(
        matches!(delayed.faults[0].timing, Timing::At(t) if t + delayed.faults[0].duration < secs(20))
    );
    assert_eq!(
        empty.expect_for(System::Redlock, Strategy::Herd),
        Some(Unsafe)
    );
    assert_eq!(
        delayed.expect_for(System::Redlock, Strategy::Herd),
        Some(Safe)
    );
    let kill = shipped("kill-leader");
    assert_eq!(
        kill.expect_for(System::Etcd, Strategy::Predecessor),
        Some(Safe)
    );
    // The promoted replica has the lock keys; Redlock's holder keeps four of five masters.
    for system in [System::Redis, System::Redlock] {
        assert_eq!(kill.expect_for(system, Strategy::Herd), Some(Safe));
    }
    // Redis' lock breaks under these only when the draw isolates its master: not run there.
    for name in ["partition-halves", "mixed"] {
        let s = shipped(name);
        assert!(s.unfit_for(System::Redis).is_some(), "{name}");
        assert_eq!(s.expect_for(System::Redlock, Strategy::Herd), Some(Safe));
    }
    assert_eq!(
        shipped("bridge").expect_for(System::Redis, Strategy::Herd),
        Some(Safe)
    );
    // The Redis master, and a majority of Redlock's masters (one of five leaves the holder four).
    for (name, system, target) in [
        ("clock-jump", System::Redis, Target::Leader),
        ("clock-jump-majority", System::Redlock, Target::Majority),
    ] {
        let clock = shipped(name);
        assert_eq!(clock.systems, Some(vec![system]), "{name}");
        let skew = ClockSkew::Jump { by: secs(30) };
        assert_eq!(
            clock.faults[0].kind,
            FaultKind::Clock(Clock { target, skew }),
            "{name}"
        );
        // The model moves the queue-entry deadlines too: the predecessor queue breaks as well.
        assert_eq!(clock.expect_for(system, Strategy::Herd), Some(Unsafe));
        assert_eq!(
            clock.expect_for(system, Strategy::Predecessor),
            Some(Unsafe)
        );
    }
    let FaultKind::Mixed(Mixed { kinds }) = &shipped("mixed").faults[0].kind else {
        panic!("mixed is mixed")
    };
    assert_eq!(kinds.len(), 4);
    assert!(shipped("none").unfit_for(System::Redlock).is_none());
}

#[test]
fn a_shipped_timeline_in_a_30s_cell_matches_its_timing() {
    // kill-leader: every 10 s + [0, 2 s], down 5 s: 10–12 and 20–22 fit (end ≤ 27 s), the third
    // (30–32 s) does not.
    let t = shipped("kill-leader").timeline(secs(30));
    assert_eq!(t.len(), 2, "{t:?}");
    for (n, p) in t.iter().enumerate() {
        let base = secs(10) * (n as u32 + 1);
        assert!(p.at >= base && p.at <= base + secs(2), "{p:?}");
        assert_eq!(p.duration, secs(5));
    }
    // pause-clients: once at 3 s for 15 s.
    let t = shipped("pause-clients").timeline(secs(30));
    assert_eq!((t.len(), t[0].at, t[0].end()), (1, secs(3), secs(18)));
    // ... which a 17 s cell cannot hold.
    assert!(shipped("pause-clients").timeline(secs(17)).is_empty());
    assert!(shipped("none").timeline(secs(30)).is_empty());
}

const EVERY: &str = "
[[faults]]
kind = \"pause-node\"
every = \"10s\"
duration = \"3s\"
";

#[test]
fn every_without_jitter_repeats_exactly_until_the_end() {
    let s = Schedule::from_str(EVERY, "x").unwrap();
    let starts = |cell| -> Vec<Duration> { s.timeline(cell).iter().map(|p| p.at).collect() };
    // 10+3, 20+3, 30+3 = 33 ≤ 35; the 40 s one does not fit.
    assert_eq!(starts(secs(35)), [secs(10), secs(20), secs(30)]);
    // 30 + 3 = 33 > 32: left out. Ending exactly at the cell's end is inside.
    assert_eq!(starts(secs(32)), [secs(10), secs(20)]);
    assert_eq!(starts(secs(33)), [secs(10), secs(20), secs(30)]);
    assert!(starts(secs(12)).is_empty());
}

#[test]
fn the_same_seed_gives_the_same_timeline_and_another_seed_another() {
    let text = |seed: u64| {
        format!(
            "seed = {seed}
[[faults]]
kind = \"mixed\"
kinds = [\"kill\", \"pause-node\", {{ kind = \"partition\", shape = \"bridge\" }}]
every = \"1s\"
jitter = \"500ms\"
duration = \"300ms\"
"
        )
    };
    let cell = secs(600);
    let a = Schedule::from_str(&text(7), "x").unwrap().timeline(cell);
    let b = Schedule::from_str(&text(7), "x").unwrap().timeline(cell);
    let c = Schedule::from_str(&text(8), "x").unwrap().timeline(cell);
    assert_eq!(a, b);
    assert_ne!(a, c);
    // Bounds: the n-th is in [n s, n s + 500 ms], every one ends inside the cell, in order.
    for (i, p) in a.iter().enumerate() {
        let base = secs(i as u64 + 1);
        assert!(
            p.at >= base && p.at <= base + Duration::from_millis(500),
            "{p:?}"
        );
        assert!(p.end() <= cell);
    }
    // The 599th ends by 599 s + 500 ms + 300 ms < 600 s; the 600th starts at 600 s at the
    // earliest and would end after the cell.
    assert_eq!(a.len(), 599);
    // The jitter is drawn, not constant, and the mixed kinds are all drawn over 600 draws.
    let delays: std::collections::BTreeSet<Duration> = a
        .iter()
        .enumerate()
        .map(|(i, p)| p.at - secs(i as u64 + 1))
        .collect();
    assert!(delays.len() > 500, "{} distinct delays", delays.len());
    for kind in ["kill", "pause-node", "partition"] {
        let n = a.iter().filter(|p| p.kind.name() == kind).count();
        // Each of three kinds about 200 times; far from 0 and from 600.
        assert!((100..=300).contains(&n), "{kind}: {n}");
    }
    assert!(
        a.iter()
            .all(|p| !matches!(p.kind, FaultKind::Mixed(Mixed { .. })))
    );
}

#[test]
fn each_fault_draws_from_its_own_stream() {
    let text = |first_every: &str| {
        format!(
            "seed = 3
[[faults]]
kind = \"pause-node\"
every = \"{first_every}\"
jitter = \"900ms\"
duration = \"100ms\"

[[faults]]
kind = \"kill\"
every = \"2s\"
jitter = \"1s\"
restart_after = \"500ms\"
"
        )
    };
    let second = |first_every| -> Vec<PlannedFault> {
        let s = Schedule::from_str(&text(first_every), "x").unwrap();
        let t = s.timeline(secs(30));
        assert!(t.windows(2).all(|w| w[0].at <= w[1].at), "sorted by start");
        t.into_iter().filter(|p| p.fault == 1).collect()
    };
    // Editing the first fault (three times fewer occurrences, so fewer draws) leaves the second
    // fault's draws as they were.
    let a = second("1s");
    assert_eq!(a, second("3s"));
    assert_eq!(
        a.len(),
        14,
        "2 s .. 28 s, each + [0, 1 s] + 500 ms ≤ 29.5 s: {a:?}"
    );
}

#[test]
fn defaults_fill_the_optional_fields() {
    let s =
        Schedule::from_str("[[faults]]\nkind = \"kill\"\nstart = \"1s\"\n", "c/k.toml").unwrap();
    assert_eq!(s.name, "k");
    assert_eq!(s.seed, 1);
    assert_eq!(
        (s.systems.clone(), s.cluster_size, s.expect.clone()),
        (None, None, None)
    );
    assert_eq!(
        s.faults,
        [FaultSpec {
            kind: FaultKind::Kill(Kill {
                target: Target::One,
                data: DataOnRestart::Keep
            }),
            timing: Timing::At(secs(1)),
            duration: Duration::ZERO,
        }]
    );
    let s = Schedule::from_str("", "c/calm.toml").unwrap();
    assert!(s.is_calm() && s.name == "calm");
}

#[test]
fn unknown_fields_name_their_line_and_the_valid_ones() {
    let e = err("seed = 1\n[[faults]]\nkind = \"kill\"\nstart = \"1s\"\ntargte = \"one\"\n");
    assert!(e.starts_with("chaos/x.toml:5:1: "), "{e}");
    assert!(
        e.contains("unknown field 'targte'") && e.contains("'target'"),
        "{e}"
    );
    let e = err("sed = 1\n");
    assert!(
        e.contains("unknown field 'sed'") && e.contains("'seed'"),
        "{e}"
    );
}

#[test]
fn a_target_a_kind_cannot_take_is_an_error_naming_the_valid_ones() {
    let base = "[[faults]]\nkind = \"kill\"\nstart = \"1s\"\n[[faults]]\nkind = \"pause-node\"\nstart = \"1s\"\nduration = \"1s\"\n";
    let e = err(&format!(
        "{base}[[faults]]\nkind = \"pause-node\"\nstart = \"1s\"\nduration = \"1s\"\ntarget = \"majority\"\n"
    ));
    assert_eq!(
        e,
        "chaos/x.toml: field 'faults[2].target' = \"majority\" is invalid: valid targets of kind \"pause-node\" are leader, one"
    );
    let e = err("[[faults]]\nkind = \"kill\"\ntarget = \"all\"\nstart = \"1s\"\n");
    assert!(
        e.contains("'faults[0].target' = \"all\"")
            && e.contains("valid targets of kind \"kill\" are one, minority, majority, leader"),
        "{e}"
    );
    let e = err(
        "[[faults]]\nkind = \"pause-client\"\ntarget = \"leader\"\nstart = \"1s\"\nduration = \"1s\"\n",
    );
    assert!(
        e.contains("'faults[0].target'") && e.contains("holder"),
        "{e}"
    );
}

#[test]
fn bad_kinds_parameters_and_timing_say_what_is_valid() {
    let e = err("[[faults]]\nkind = \"explode\"\nstart = \"1s\"\n");
    assert_eq!(
        e,
        "chaos/x.toml: field 'faults[0].kind' = \"explode\" is invalid: valid kinds are kill, partition, pause-node, pause-client, clock, mixed, promote, slow"
    );
    let e = err("[[faults]]\nkind = \"kill\"\nshape = \"halves\"\nstart = \"1s\"\n");
    assert!(
        e.contains("'faults[0].shape' does not apply to kind \"kill\": it takes target, data, restart_after"),
        "{e}"
    );
    let e = err(
        "[[faults]]\nkind = \"partition\"\nshape = \"ring\"\nstart = \"1s\"\nduration = \"1s\"\n",
    );
    assert!(
        e.contains("valid shapes are halves, isolate-leader, bridge, majorities-ring"),
        "{e}"
    );
    let e = err("[[faults]]\nkind = \"kill\"\ndata = \"lose\"\nstart = \"1s\"\n");
    assert!(
        e.contains("'faults[0].data'") && e.contains("keep") && e.contains("wipe"),
        "{e}"
    );
    let e = err("[[faults]]\nkind = \"kill\"\nstart = \"1s\"\nduration = \"1s\"\n");
    assert!(
        e.contains("'faults[0].duration' does not apply to kind \"kill\"")
            && e.contains("restart_after"),
        "{e}"
    );
    let e = err("[[faults]]\nkind = \"pause-node\"\nstart = \"1s\"\n");
    assert!(e.contains("'faults[0].duration' is missing"), "{e}");
    let e = err("[[faults]]\nkind = \"pause-node\"\nduration = \"1s\"\n");
    assert!(
        e.contains("'faults[0].start' is missing") && e.contains("'every'"),
        "{e}"
    );
    let e = err("[[faults]]\nkind = \"kill\"\nstart = \"1s\"\nevery = \"1s\"\n");
    assert!(e.contains("keep exactly one"), "{e}");
    let e = err("[[faults]]\nkind = \"kill\"\nstart = \"1s\"\njitter = \"1s\"\n");
    assert!(
        e.contains("'faults[0].jitter' applies only with 'every'"),
        "{e}"
    );
    let e = err("[[faults]]\nkind = \"kill\"\nevery = \"5s\"\njitter = \"6s\"\n");
    assert_eq!(
        e,
        "chaos/x.toml: field 'faults[0].jitter' = \"6s\" is out of range: valid 0s to 5s"
    );
    let e = err(
        "[[faults]]\nkind = \"pause-node\"\nevery = \"5s\"\njitter = \"2s\"\nduration = \"4s\"\n",
    );
    assert!(
        e.contains("faults[0]: duration plus jitter (2s) is longer than every (5s)"),
        "{e}"
    );
    let e = err("[[faults]]\nkind = \"kill\"\nevery = \"5 fortnights\"\n");
    assert!(
        e.contains("'faults[0].every'") && e.contains("\"250ms\""),
        "{e}"
    );
    let e = err("[[faults]]\nkind = \"kill\"\nevery = \"10ms\"\n");
    assert!(
        e.contains("'faults[0].every' = \"10ms\" is out of range: valid 100ms to 1day"),
        "{e}"
    );
    let e = err("[[faults]]\nstart = \"1s\"\n");
    assert!(e.contains("'faults[0].kind' is missing"), "{e}");
}

#[test]
fn clock_modes_take_their_own_parameter() {
    let clock = "[[faults]]\nkind = \"clock\"\nstart = \"1s\"\nduration = \"1s\"\n";
    let e = err(clock);
    assert!(e.contains("'faults[0].by' is missing"), "{e}");
    let e = err(&format!("{clock}mode = \"fast\"\n"));
    assert!(e.contains("'faults[0].rate' is missing"), "{e}");
    let e = err(&format!("{clock}mode = \"fast\"\nrate = 1.0\n"));
    assert!(
        e.contains("'faults[0].rate' = 1 is out of range: valid above 1"),
        "{e}"
    );
    let e = err(&format!(
        "{clock}mode = \"fast\"\nrate = 2.0\nby = \"1s\"\n"
    ));
    assert!(
        e.contains("'faults[0].by' applies only to mode = \"jump\""),
        "{e}"
    );
    let e = err(&format!("{clock}mode = \"slow\"\n"));
    assert!(
        e.contains("'faults[0].mode'") && e.contains("jump") && e.contains("fast"),
        "{e}"
    );
    let s = Schedule::from_str(
        &format!("systems = [\"redis\"]\n{clock}mode = \"fast\"\nrate = 2.5\n"),
        "x",
    )
    .unwrap();
    assert_eq!(
        s.faults[0].kind,
        FaultKind::Clock(Clock {
            target: Target::One,
            skew: ClockSkew::Fast { rate: 2.5 }
        })
    );
}

#[test]
fn mixed_entries_are_plain_kinds_without_timing() {
    let mixed = |kinds: &str| {
        format!(
            "[[faults]]\nkind = \"mixed\"\nkinds = {kinds}\nevery = \"5s\"\nduration = \"1s\"\n"
        )
    };
    let e = err(&mixed("[]"));
    assert!(e.contains("'faults[0].kinds' = [] is out of range"), "{e}");
    let e = err(&mixed("[\"kill\", { kind = \"kill\", start = \"1s\" }]"));
    assert!(
        e.contains("'faults[0].kinds[1].start' does not belong in a mixed fault's kinds"),
        "{e}"
    );
    let e = err(&mixed("[{ kind = \"kill\", restart_after = \"1s\" }]"));
    assert!(
        e.contains("'faults[0].kinds[0].restart_after' does not belong"),
        "{e}"
    );
    let e = err(&mixed("[\"mixed\"]"));
    assert!(
        e.contains("'faults[0].kinds[0].kind' = \"mixed\" is invalid"),
        "{e}"
    );
    let e = err(&mixed("[{ kind = \"pause-node\", target = \"majority\" }]"));
    assert!(
        e.contains("'faults[0].kinds[0].target'") && e.contains("leader, one"),
        "{e}"
    );
    let e = err("[[faults]]\nkind = \"mixed\"\nevery = \"5s\"\nduration = \"1s\"\n");
    assert!(e.contains("'faults[0].kinds' is missing"), "{e}");
    let s = Schedule::from_str(&mixed("[\"pause-client\", \"kill\"]"), "x").unwrap();
    assert!(s.pauses_clients());
}

#[test]
fn schedule_level_fields_are_checked() {
    let e = err("cluster_size = 8\n");
    assert!(
        e.starts_with("chaos/x.toml: field 'cluster_size' = 8 is out of range: valid a size one of its systems runs (zookeeper 1, 3, 4"),
        "{e}"
    );
    let e = err("systems = [\"redlock\"]\ncluster_size = 4\n");
    assert!(
        e.contains("'cluster_size' = 4") && e.contains("redlock odd numbers 1 to 9"),
        "{e}"
    );
    let e = err("systems = [\"mongo\"]\n");
    assert!(
        e.contains("field 'systems' = \"mongo\"") && e.contains("zookeeper, etcd, redis, redlock"),
        "{e}"
    );
    let e = err("systems = []\n");
    assert!(e.contains("'systems' = [] is out of range"), "{e}");
    let e = err("expect = \"maybe\"\n");
    assert!(
        e.contains("field 'expect'") && e.contains("\"unsafe\""),
        "{e}"
    );
    let e = err("name = \"none\"\n[[faults]]\nkind = \"kill\"\nstart = \"1s\"\n");
    assert!(
        e.contains("field 'name' = \"none\"") && e.contains("another name"),
        "{e}"
    );
    let e = Schedule::from_file(Path::new("chaos/nope.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("chaos/nope.toml: cannot read the chaos schedule file"),
        "{e}"
    );
}

#[test]
fn systems_and_sizes_say_why_a_system_is_left_out() {
    let even = shipped("partition-even");
    assert!(even.unfit_for(System::Zookeeper).is_none());
    // The file's `skipped_because` says why.
    assert_eq!(
        even.unfit_for(System::Redis).unwrap(),
        "redis × partition-even: the schedule applies to zookeeper, etcd only: only ZooKeeper \
         and etcd are split-brain-proof by quorum: Redlock cannot run 4 masters, Redis data \
         nodes do not vote, and PostgreSQL, MariaDB and Memcached servers do not agree on locks"
    );
    // Every shipped schedule that leaves systems out says why.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("chaos");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let s = Schedule::from_file(&path).unwrap();
        assert_eq!(
            s.systems.is_some(),
            s.skipped_because.is_some(),
            "{}",
            s.name
        );
    }
    let bare = Schedule::from_str("systems = [\"etcd\"]\n", "c/bare.toml").unwrap();
    assert_eq!(
        bare.unfit_for(System::Redis).unwrap(),
        "redis × bare: the schedule applies to etcd only"
    );
    let e = Schedule::from_str("skipped_because = \"x\"\n", "c/why.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("c/why.toml")
            && e.contains("'skipped_because'")
            && e.contains("systems = [...]"),
        "{e}"
    );
    let e = Schedule::from_str(
        "systems = [\"etcd\"]\nskipped_because = \" \"\n",
        "c/why.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("'skipped_because'"), "{e}");
    let s = Schedule::from_str("cluster_size = 4\n", "c/four.toml").unwrap();
    assert_eq!(
        s.unfit_for(System::Redlock).unwrap(),
        "redlock × four: the schedule needs 4 nodes, and redlock runs odd numbers 1 to 9"
    );
    assert_eq!(
        (
            s.size_for(System::Etcd),
            Schedule::none().size_for(System::Redlock)
        ),
        (4, 5)
    );
}

#[test]
fn odd_values_read_back_equal() {
    let src = r#"
        name = "odd"
        seed = 99
        systems = ["redlock", "redis"]
        cluster_size = 5
        expect = { default = "unsafe", redlock = "safe", "redis/herd" = "safe" }

        [[faults]]
        kind = "partition"
        shape = "majorities-ring"
        clients = true
        every = "1s 500ms"
        jitter = "250ms"
        duration = "750ms"

        [[faults]]
        kind = "clock"
        target = "leader"
        mode = "fast"
        rate = 1.75
        start = "2s"
        duration = "1s"

        [[faults]]
        kind = "mixed"
        kinds = ["pause-client", { kind = "clock", by = "3s" }, { kind = "kill", data = "wipe", target = "majority" }]
        start = "0s"
        duration = "1ms"
    "#;
    let s = Schedule::from_str(src, "odd").unwrap();
    let text = toml::to_string(&s.to_table()).unwrap();
    assert!(text.contains("every = \"1s 500ms\""), "{text}");
    assert_eq!(Schedule::from_str(&text, "odd").unwrap(), s, "{text}");
}

#[test]
fn a_clock_fault_on_monotonic_leases_is_refused_with_the_fix() {
    let clock = "[[faults]]\nkind = \"clock\"\nby = \"30s\"\nstart = \"1s\"\nduration = \"1s\"\n";
    let e = err(clock);
    assert!(
        e.contains("field 'systems' = (absent: every system) is invalid")
            && e.contains("faults[0] is a clock fault, which cannot run on zookeeper and etcd")
            && e.contains("monotonic")
            && e.contains("systems = [\"redis\", \"redlock\"]"),
        "{e}"
    );
    let e = err(&format!("systems = [\"redis\", \"etcd\"]\n{clock}"));
    assert!(
        e.contains("'systems' = [\"redis\", \"etcd\"]") && e.contains("cannot run on etcd:"),
        "{e}"
    );
    // Inside a mixed fault too.
    let mixed = "systems = [\"zookeeper\"]\n[[faults]]\nkind = \"mixed\"\nkinds = [\"kill\", { kind = \"clock\", by = \"3s\" }]\nstart = \"1s\"\nduration = \"1s\"\n";
    assert!(
        err(mixed).contains("cannot run on zookeeper"),
        "{}",
        err(mixed)
    );
    assert!(
        Schedule::from_str(&format!("systems = [\"redis\", \"redlock\"]\n{clock}"), "x").is_ok()
    );
}

#[test]
fn the_stores_schedules_say_what_their_comments_say() {
    let (pg, maria, mc) = (
        System::Postgres,
        "mariadb".parse::<System>().unwrap(),
        "memcached".parse::<System>().unwrap(),
    );
    // A stopped client keeps its session lock: a liveness finding on the databases, a
    // lapsed TTL on Memcached.
    let pause = shipped("pause-clients");
    assert_eq!(pause.expect_for(pg, Strategy::Native), Some(Safe));
    assert_eq!(pause.expect_for(maria, Strategy::Herd), Some(Safe));
    assert_eq!(pause.expect_for(mc, Strategy::Herd), Some(Unsafe));
    assert_eq!(
        pause.expect_for(System::Redis, Strategy::Herd),
        Some(Unsafe)
    );
    // An operator's failover, on the two stores without one of their own.
    let promote = shipped("promote");
    assert_eq!(promote.systems, Some(vec![pg, maria]));
    assert_eq!(promote.faults[0].kind.name(), "promote");
    assert_eq!(promote.expect_for(maria, Strategy::Native), Some(Unsafe));
    assert_eq!(promote.expect_for(pg, Strategy::Predecessor), Some(Unsafe));
    // The clients cut off beside one server, on the stores only; the schedule raises no
    // expectation, so the workload's (safe) stands.
    let cut = shipped("partition-clients");
    assert_eq!(cut.systems, Some(vec![pg, maria, mc]));
    assert_eq!(
        cut.seed, 12,
        "the seed that puts the clients beside the replica"
    );
    assert_eq!(cut.faults[0].kind.name(), "partition");
    assert!(
        toml::to_string(&cut.to_table())
            .unwrap()
            .contains("clients = true")
    );
    assert_eq!(cut.expect_for(pg, Strategy::Native), None);
    // The partitions among servers mean nothing to the stores: skipped with the reason.
    for name in ["bridge", "isolate-leader"] {
        let s = shipped(name);
        let systems = s.systems.clone().unwrap();
        assert!(!systems.contains(&pg) && !systems.contains(&maria) && !systems.contains(&mc));
    }
}
