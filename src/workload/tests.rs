//! Workload parsing and validation on small texts and on every shipped file.

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::recipe::BOTH_STRATEGIES;

fn err(text: &str) -> String {
    Workload::from_str(text, "workloads/x.toml")
        .unwrap_err()
        .to_string()
}

#[test]
fn every_shipped_workload_parses() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let w = Workload::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
            names.push(w.name);
        }
    }
    names.sort();
    assert_eq!(
        names,
        [
            "broken-del",
            "broken-rwlock",
            "broken-semaphore",
            "broken-setnx-expire",
            "broken-shared-session",
            "client-sweep",
            "harness-overhead",
            "held-locks",
            "held-locks-unfenced",
            "held-permits",
            "held-reentrant",
            "held-rwlock",
            "hot-lock",
            "hot-lock-unfenced",
            "long-hold",
            "long-hold-no-renew",
            "long-hold-no-renew-unfenced",
            "open-loop",
            "pool",
            "read-mostly",
            "reentrant",
            "stampede",
            "uncontended",
            "write-heavy",
            "zipf-keys"
        ]
    );
}

#[test]
fn shipped_workloads_mean_what_they_say() {
    let load = |n: &str| {
        Workload::from_file(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("workloads/{n}.toml")),
        )
        .unwrap()
    };
    let hot = load("hot-lock");
    assert_eq!(
        (hot.clients, hot.keys, hot.arrival),
        (16, 1, Arrival::Closed)
    );
    assert_eq!(
        hot.hold,
        DurationDist::Uniform {
            min: Duration::from_millis(1),
            max: Duration::from_millis(5)
        }
    );
    assert_eq!(hot.think, DurationDist::Fixed(Duration::ZERO));
    assert_eq!(hot.strategies, BOTH_STRATEGIES.to_vec());
    let zipf = load("zipf-keys");
    assert_eq!((zipf.clients, zipf.keys), (64, 16));
    assert_eq!(
        zipf.key_distribution,
        KeyDistribution::Zipf { exponent: 1.1 }
    );
    let st = load("stampede");
    assert_eq!(st.stampede, Some(Stampede { rounds: 20 }));
    assert_eq!(st.stop, Stop::Acquisitions(20 * 32));
    // Held across the faults: 8 s holds inside a renewed 10 s lease.
    let held = load("held-locks");
    assert_eq!((held.clients, held.keys), (4, 1));
    assert!(held.renew);
    assert_eq!(
        (held.hold, held.lease_ttl),
        (
            DurationDist::Fixed(Duration::from_secs(8)),
            Duration::from_secs(10)
        )
    );
    assert_eq!(held.strategies, BOTH_STRATEGIES.to_vec());
    assert_eq!(held.resource, ResourceMode::Fenced);
    // The same load with the unfenced register (pause-clients' lost updates).
    let unfenced = load("held-locks-unfenced");
    assert_eq!(unfenced.resource, ResourceMode::Unfenced);
    assert_eq!(
        Workload {
            name: held.name.clone(),
            resource: ResourceMode::Fenced,
            ..unfenced
        },
        held
    );
    let long = load("long-hold");
    assert!(long.renew && long.hold.max() > long.lease_ttl);
    let open = load("open-loop");
    assert_eq!(open.arrival, Arrival::Open { rate_per_s: 200.0 });
    // 32 clients share 200/s: client 1's 2nd op is slot 33, at 165 ms.
    assert_eq!(open.intended_start(1, 1), Some(Duration::from_millis(165)));
    assert_eq!(load("uncontended").clients, 1);
}

#[test]
fn defaults_fill_the_optional_fields() {
    let w = Workload::from_str("clients = 2\nacquisitions = 10\n", "w/plain.toml").unwrap();
    assert_eq!(w.name, "plain");
    assert_eq!(w.keys, 1);
    assert_eq!(w.stop, Stop::Acquisitions(10));
    assert_eq!(w.lease_ttl, Duration::from_secs(10));
    assert!(w.renew);
    assert_eq!(w.seed, 1);
    assert_eq!(w.stampede, None);
    let w = Workload::from_str(
        "name = \"n1\"\nclients = 1\nduration = \"2s\"\nstrategies = [\"native\"]",
        "x",
    )
    .unwrap();
    assert_eq!(w.name, "n1");
    assert_eq!(w.strategies, vec![Strategy::Native]);
}

#[test]
fn retry_backoff_and_resolve_timeout_default_and_are_checked() {
    let w = Workload::from_str("clients = 2\nacquisitions = 10\n", "w/plain.toml").unwrap();
    assert_eq!(
        (w.retry.initial, w.retry.max, w.resolve_timeout),
        (
            Duration::from_millis(50),
            Duration::from_secs(1),
            Duration::from_secs(30)
        )
    );
    let w = Workload::from_str(
        "clients = 1\nduration = \"5s\"\nretry_backoff = \"20ms\"\nretry_backoff_max = \"300ms\"\nresolve_timeout = \"0s\"",
        "x",
    )
    .unwrap();
    assert_eq!(
        (w.retry.initial, w.retry.max, w.resolve_timeout),
        (
            Duration::from_millis(20),
            Duration::from_millis(300),
            Duration::ZERO
        )
    );
    // A backoff longer than the default cap raises the default cap with it.
    let w = Workload::from_str(
        "clients = 1\nduration = \"5s\"\nretry_backoff = \"2s\"",
        "x",
    )
    .unwrap();
    assert_eq!(
        (w.retry.initial, w.retry.max),
        (Duration::from_secs(2), Duration::from_secs(2))
    );
    let e = err(
        "clients = 1\nduration = \"5s\"\nretry_backoff = \"200ms\"\nretry_backoff_max = \"100ms\"",
    );
    assert!(
        e.contains("'retry_backoff_max'") && e.contains("at least 'retry_backoff'"),
        "{e}"
    );
    let e = err("clients = 1\nduration = \"5s\"\nretry_backoff = \"0ms\"");
    assert!(
        e.contains("'retry_backoff' = \"0ms\" is out of range"),
        "{e}"
    );
    let e = err("clients = 1\nduration = \"5s\"\nresolve_timeout = \"2h\"");
    assert!(
        e.contains("'resolve_timeout'") && e.contains("out of range"),
        "{e}"
    );
}

#[test]
fn out_of_range_names_file_field_and_range() {
    assert_eq!(
        err("clients = 0\nduration = \"5s\""),
        "workloads/x.toml: field 'clients' = 0 is out of range: valid 1..=4096"
    );
    assert!(err("clients = 5000\nduration = \"5s\"").contains("valid 1..=4096"));
    let e = err(
        "clients = 1\nduration = \"5s\"\nkey_distribution = { kind = \"zipf\", exponent = -1.0 }",
    );
    assert!(
        e.contains("'key_distribution.exponent' = -1 is out of range"),
        "{e}"
    );
    let e = err("clients = 1\nduration = \"5s\"\nwarmup = \"5s\"");
    assert!(
        e.contains("'warmup'") && e.contains("shorter than 'duration'"),
        "{e}"
    );
    let e = err("clients = 1\nduration = \"5s\"\nlease_ttl = \"10ms\"");
    assert!(
        e.contains("'lease_ttl' = \"10ms\" is out of range: valid 1s to 1h"),
        "{e}"
    );
}

#[test]
fn unknown_field_lists_valid_ones_with_position() {
    let e = err("clients = 1\nduration = \"5s\"\nholdd = \"1ms\"\n");
    assert!(e.starts_with("workloads/x.toml:3:1: "), "{e}");
    assert!(
        e.contains("unknown field 'holdd'") && e.contains("'hold'") && e.contains("'think'"),
        "{e}"
    );
    let e = err("clients = 1\nduration = \"5s\"\nhold = { kind = \"fixed\", vale = \"1ms\" }");
    assert!(
        e.contains("unknown field 'vale'") && e.contains("'value'"),
        "{e}"
    );
}

#[test]
fn syntax_and_type_errors_give_line_and_column() {
    let e = err("clients = 1\nduration = \"5s\nkeys = 2");
    assert!(e.starts_with("workloads/x.toml:2:"), "{e}");
    let e = err("clients = \"many\"\nduration = \"5s\"");
    assert!(
        e.starts_with("workloads/x.toml:1:11: field 'clients': "),
        "{e}"
    );
}

#[test]
fn bad_values_and_combinations_say_what_is_valid() {
    let e = err("clients = 1\nduration = \"5 parsecs\"");
    assert!(
        e.contains("field 'duration'") && e.contains("\"250ms\""),
        "{e}"
    );
    let e = err("clients = 1\nduration = \"5s\"\nhold = { kind = \"normal\", mean = \"1ms\" }");
    assert!(
        e.contains("'hold.kind'")
            && e.contains("fixed (value), uniform (min, max), exponential (mean)"),
        "{e}"
    );
    let e = err(
        "clients = 1\nduration = \"5s\"\nhold = { kind = \"uniform\", min = \"5ms\", max = \"1ms\" }",
    );
    assert!(e.contains("min (5ms) is above max (1ms)"), "{e}");
    let e = err("clients = 1\nduration = \"5s\"\nhold = { kind = \"uniform\", min = \"5ms\" }");
    assert!(e.contains("'hold.max' is missing"), "{e}");
    let e = err("clients = 1");
    assert!(e.contains("exactly one of 'duration'"), "{e}");
    let e = err("clients = 1\nduration = \"5s\"\nacquisitions = 3");
    assert!(e.contains("keep exactly one"), "{e}");
    let e = err("clients = 1\nduration = \"5s\"\nstrategies = [\"fair\"]");
    assert!(
        e.contains("valid strategies are herd, predecessor, native"),
        "{e}"
    );
    let e = err("clients = 1\nduration = \"5s\"\narrival = { kind = \"open\" }");
    assert!(e.contains("'arrival.rate_per_s' is missing"), "{e}");
    let e = err(
        "clients = 1\nduration = \"5s\"\narrival = { kind = \"open\", rate_per_s = 5 }\nthink = \"1ms\"",
    );
    assert!(e.contains("'think' does not apply to open arrival"), "{e}");
    let e = err("clients = 1\nduration = \"5s\"\n[stampede]\nrounds = 3");
    assert!(e.contains("with [stampede], leave out 'duration'"), "{e}");
    let e = err("clients = 1\nname = \"a b\"\nduration = \"5s\"");
    assert!(e.contains("field 'name'"), "{e}");
}

#[test]
fn read_error_names_the_file() {
    let e = Workload::from_file(Path::new("workloads/nope.toml"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("workloads/nope.toml: cannot read"), "{e}");
}

#[test]
fn clients_run_as_tasks_unless_asked_for_processes() {
    let w = Workload::from_str("clients = 6\nduration = \"5s\"", "x").unwrap();
    assert_eq!(w.clients_as, ClientsAs::Tasks);
    let w = Workload::from_str(
        "clients = 6\nduration = \"5s\"\nclients_as = \"processes\"",
        "x",
    )
    .unwrap();
    assert_eq!(w.clients_as, ClientsAs::Processes { per_process: 1 });
    let w = Workload::from_str(
        "clients = 6\nduration = \"5s\"\nclients_as = \"processes\"\nclients_per_process = 4",
        "x",
    )
    .unwrap();
    assert_eq!(w.clients_as, ClientsAs::Processes { per_process: 4 });
    let e = err("clients = 1\nduration = \"5s\"\nclients_as = \"threads\"");
    assert_eq!(
        e,
        "workloads/x.toml: field 'clients_as' = \"threads\" is invalid: valid values are tasks \
         (in the runner's process, the default), processes (`lockbench worker` processes of \
         clients_per_process clients each)"
    );
    let e =
        err("clients = 1\nduration = \"5s\"\nclients_as = \"processes\"\nclients_per_process = 0");
    assert_eq!(
        e,
        "workloads/x.toml: field 'clients_per_process' = 0 is out of range: valid 1..=4096"
    );
    let e = err("clients = 1\nduration = \"5s\"\nclients_per_process = 2");
    assert!(
        e.contains("'clients_per_process' applies only to clients_as = \"processes\""),
        "{e}"
    );
}

#[test]
fn expect_names_systems_and_pairs_and_the_most_specific_wins() {
    use crate::resource::ResourceMode;
    use crate::system::System;
    use crate::workload::Expect::{Safe, Unsafe};
    let base = "clients = 1\nduration = \"5s\"\n";
    let w = Workload::from_str(base, "x").unwrap();
    assert_eq!(w.expect_for(System::Redis, Strategy::Herd), Safe);
    assert_eq!(w.resource, ResourceMode::Fenced, "fenced by default");
    let w = Workload::from_str(&format!("{base}expect = \"unsafe\""), "x").unwrap();
    assert_eq!(w.expect_for(System::Etcd, Strategy::Predecessor), Unsafe);
    let w = Workload::from_str(
        &format!(
            "{base}resource = \"unfenced\"\nexpect = {{ default = \"unsafe\", redis = \"safe\", \"redis/herd\" = \"unsafe\" }}"
        ),
        "x",
    )
    .unwrap();
    assert_eq!(w.resource, ResourceMode::Unfenced);
    assert_eq!(w.expect_for(System::Redis, Strategy::Herd), Unsafe);
    assert_eq!(w.expect_for(System::Redis, Strategy::Predecessor), Safe);
    assert_eq!(w.expect_for(System::Etcd, Strategy::Herd), Unsafe);

    let e = err(&format!("{base}expect = \"maybe\""));
    assert!(
        e.contains("field 'expect'") && e.contains("\"safe\" (the default) and \"unsafe\""),
        "{e}"
    );
    let e = err(&format!("{base}expect = {{ mongo = \"safe\" }}"));
    assert!(
        e.contains("field 'expect.mongo'") && e.contains("system/strategy"),
        "{e}"
    );
    let e = err(&format!(
        "{base}expect = {{ \"redis/sideways\" = \"safe\" }}"
    ));
    assert!(e.contains("unknown strategy 'sideways'"), "{e}");
    let e = err(&format!("{base}resource = \"locked\""));
    assert!(
        e.contains("field 'resource'") && e.contains("unfenced"),
        "{e}"
    );
}

#[test]
fn crash_between_steps_every_is_absent_zero_or_in_range() {
    let base = "clients = 1\nduration = \"5s\"\n";
    let w = Workload::from_str(base, "x").unwrap();
    assert_eq!(w.crash_between_steps_every, 0, "absent = never");
    let w = Workload::from_str(&format!("{base}crash_between_steps_every = 0"), "x").unwrap();
    assert_eq!(w.crash_between_steps_every, 0);
    let w = Workload::from_str(&format!("{base}crash_between_steps_every = 20"), "x").unwrap();
    assert_eq!(w.crash_between_steps_every, 20);
    let w = Workload::from_str(&format!("{base}crash_between_steps_every = 1000000"), "x").unwrap();
    assert_eq!(w.crash_between_steps_every, 1_000_000);
    for bad in ["-1", "1000001"] {
        let e = err(&format!("{base}crash_between_steps_every = {bad}"));
        assert!(
            e.starts_with(&format!(
                "workloads/x.toml: field 'crash_between_steps_every' = {bad} is out of range: valid 0..=1000000: 0 (the default) never crashes"
            )),
            "{e}"
        );
        assert!(e.contains("unsafe-setnx-expire only"), "{e}");
    }
    let e = err(&format!("{base}crash_between_steps_every = \"often\""));
    assert!(e.contains("field 'crash_between_steps_every'"), "{e}");
    // Written back only when set, and read back equal either way.
    for n in [0, 3] {
        let w = Workload::from_str(&format!("{base}crash_between_steps_every = {n}"), "x").unwrap();
        let text = toml::to_string(&w.to_table()).unwrap();
        assert_eq!(text.contains("crash_between_steps_every"), n > 0, "{text}");
        assert_eq!(Workload::from_str(&text, "x").unwrap(), w, "{text}");
    }
}

#[test]
fn unsafe_strategies_run_only_when_named() {
    use crate::system::System;
    use crate::workload::Expect::{Safe, Unsafe};
    let base = "clients = 1\nduration = \"5s\"\n";
    let w = Workload::from_str(base, "x").unwrap();
    assert!(
        w.strategies.iter().all(|s| !s.is_unsafe()),
        "{:?}",
        w.strategies
    );
    let w = Workload::from_str(&format!("{base}strategies = [\"unsafe-del\"]"), "x").unwrap();
    assert_eq!(w.strategies, vec![Strategy::UnsafeDel]);

    let load = |n: &str| {
        Workload::from_file(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("workloads/{n}.toml")),
        )
        .unwrap()
    };
    let del = load("broken-del");
    assert_eq!(del.strategies, vec![Strategy::Herd, Strategy::UnsafeDel]);
    assert!(!del.renew && del.lease_ttl == Duration::from_secs(1));
    // Holds must be able to outlast the TTL, or the stale DEL never happens.
    assert!(matches!(del.hold, DurationDist::Uniform { max, .. } if max > del.lease_ttl));
    assert_eq!(del.expect_for(System::Redis, Strategy::UnsafeDel), Unsafe);
    assert_eq!(del.expect_for(System::Redis, Strategy::Herd), Unsafe);
    let setnx = load("broken-setnx-expire");
    assert_eq!(
        setnx.strategies,
        vec![Strategy::Herd, Strategy::UnsafeSetnxExpire]
    );
    assert_eq!(setnx.crash_between_steps_every, 20);
    assert!(setnx.renew);
    assert_eq!(setnx.expect_for(System::Redis, Strategy::Herd), Safe);
    assert_eq!(
        setnx.expect_for(System::Redis, Strategy::UnsafeSetnxExpire),
        Unsafe
    );
    let session = load("broken-shared-session");
    assert_eq!(
        session.strategies,
        vec![Strategy::Herd, Strategy::UnsafeSharedSession]
    );
    assert_eq!(
        session.expect_for(System::Mariadb, Strategy::UnsafeSharedSession),
        Unsafe
    );
    assert_eq!(session.expect_for(System::Mariadb, Strategy::Herd), Safe);
    // Every other shipped workload leaves them out.
    for n in [
        "client-sweep",
        "hot-lock",
        "long-hold",
        "open-loop",
        "stampede",
        "uncontended",
        "zipf-keys",
    ] {
        assert!(load(n).strategies.iter().all(|s| !s.is_unsafe()), "{n}");
    }
}

#[test]
fn lock_kinds_take_their_own_parameters_and_default_to_a_mutex() {
    let base = "clients = 4\nduration = \"5s\"\n";
    let lock = |extra: &str| {
        Workload::from_str(&format!("{base}{extra}"), "x")
            .unwrap()
            .lock
    };
    assert_eq!(lock(""), LockKind::Mutex, "absent = mutex");
    assert_eq!(lock("lock = \"mutex\""), LockKind::Mutex);
    assert_eq!(
        lock("lock = \"reentrant\""),
        LockKind::Reentrant {
            depth: DEFAULT_REENTRY_DEPTH
        }
    );
    assert_eq!(
        lock("lock = \"reentrant\"\nreentry_depth = 3"),
        LockKind::Reentrant { depth: 3 }
    );
    assert_eq!(
        lock("lock = \"rwlock\"\nread_ratio = 0.9"),
        LockKind::RwLock { read_ratio: 0.9 }
    );
    for r in ["0.0", "1.0"] {
        assert!(matches!(
            lock(&format!("lock = \"rwlock\"\nread_ratio = {r}")),
            LockKind::RwLock { .. }
        ));
    }
    assert_eq!(
        lock("lock = \"semaphore\"\npermits = 5"),
        LockKind::Semaphore { permits: 5 }
    );
    // Each kind, written back, reads back equal, its parameter with it.
    for extra in [
        "",
        "lock = \"reentrant\"\nreentry_depth = 4",
        "lock = \"rwlock\"\nread_ratio = 0.25",
        "lock = \"semaphore\"\npermits = 32",
    ] {
        let w = Workload::from_str(&format!("{base}{extra}"), "x").unwrap();
        let text = toml::to_string(&w.to_table()).unwrap();
        // A mutex, the default, is left out, so a mutex workload's files are as before.
        assert_eq!(
            text.contains(&format!("lock = \"{}\"", w.lock)),
            w.lock != LockKind::Mutex,
            "{text}"
        );
        assert_eq!(Workload::from_str(&text, "x").unwrap(), w, "{text}");
    }
}

#[test]
fn lock_errors_name_the_file_the_field_and_the_kind_it_belongs_to() {
    let base = "clients = 4\nduration = \"5s\"\n";
    let e = |extra: &str| err(&format!("{base}{extra}"));
    let x = e("lock = \"spinlock\"");
    assert!(
        x.starts_with("workloads/x.toml: field 'lock' = \"spinlock\" is invalid: valid kinds are mutex (the default), reentrant (with reentry_depth, default 2), rwlock (with read_ratio), semaphore (with permits)"),
        "{x}"
    );
    // A parameter of another kind says which kind it belongs to.
    for (extra, field, owner, kind) in [
        ("read_ratio = 0.5", "read_ratio", "rwlock", "mutex"),
        (
            "lock = \"rwlock\"\nread_ratio = 0.5\npermits = 3",
            "permits",
            "semaphore",
            "rwlock",
        ),
        (
            "lock = \"semaphore\"\npermits = 3\nreentry_depth = 2",
            "reentry_depth",
            "reentrant",
            "semaphore",
        ),
        (
            "lock = \"reentrant\"\nread_ratio = 0.5",
            "read_ratio",
            "rwlock",
            "reentrant",
        ),
    ] {
        let x = e(extra);
        assert!(
            x.starts_with(&format!(
                "workloads/x.toml: field '{field}' applies only to lock = \"{owner}\", and this workload's lock is \"{kind}\": remove '{field}' or set lock = \"{owner}\""
            )),
            "{x}"
        );
    }
    let x = e("lock = \"rwlock\"");
    assert!(
        x.starts_with("workloads/x.toml: field 'read_ratio' is missing: lock = \"rwlock\" needs")
            && x.contains("read_ratio = 0.9"),
        "{x}"
    );
    let x = e("lock = \"semaphore\"");
    assert!(
        x.starts_with("workloads/x.toml: field 'permits' is missing: lock = \"semaphore\" needs")
            && x.contains("1..=4096"),
        "{x}"
    );
    for bad in ["1.5", "-0.1", "nan"] {
        let x = e(&format!("lock = \"rwlock\"\nread_ratio = {bad}"));
        assert!(
            x.starts_with(&format!(
                "workloads/x.toml: field 'read_ratio' = {bad} is out of range: valid 0..=1"
            )) || x.starts_with(
                "workloads/x.toml: field 'read_ratio' = NaN is out of range: valid 0..=1"
            ),
            "{x}"
        );
    }
    for (field, extra, valid) in [
        ("permits", "lock = \"semaphore\"\npermits = 0", "1..=4096"),
        (
            "permits",
            "lock = \"semaphore\"\npermits = 4097",
            "1..=4096",
        ),
        (
            "reentry_depth",
            "lock = \"reentrant\"\nreentry_depth = 0",
            "1..=64",
        ),
        (
            "reentry_depth",
            "lock = \"reentrant\"\nreentry_depth = 65",
            "1..=64",
        ),
    ] {
        let x = e(extra);
        assert!(
            x.contains(&format!("field '{field}'")) && x.contains(&format!("valid {valid}")),
            "{x}"
        );
    }
    // A value of the wrong type: line and column, and the field.
    let x = e("lock = \"semaphore\"\npermits = \"five\"");
    assert!(
        x.starts_with("workloads/x.toml:4:11: field 'permits': "),
        "{x}"
    );
}

#[test]
fn an_acquire_timeout_of_zero_is_a_try_lock_and_written_back_as_such() {
    let w = Workload::from_str(
        "clients = 2\nduration = \"5s\"\nacquire_timeout = \"0s\"",
        "w/try.toml",
    )
    .unwrap();
    assert_eq!(w.acquire_timeout, Duration::ZERO);
    // cell.json's workload_spec says so, which is how statistics know a tryLock cell.
    assert_eq!(w.to_table()["acquire_timeout"].as_str(), Some("0s"));
    let e = err("clients = 1\nduration = \"5s\"\nacquire_timeout = \"2h\"");
    assert!(
        e.contains("'acquire_timeout' = \"2h\" is out of range: valid 0s to 1h"),
        "{e}"
    );
}

#[test]
fn client_latency_defaults_to_none_is_checked_and_written_back() {
    let w = Workload::from_str("clients = 1\nduration = \"5s\"", "x").unwrap();
    assert!(w.client_latency.is_zero());
    assert!(!w.to_table().contains_key("client_latency"));
    let w = Workload::from_str(
        "clients = 1\nduration = \"5s\"\nclient_latency = \"1ms\"\nclient_jitter = \"200us\"",
        "x",
    )
    .unwrap();
    assert_eq!(
        (w.client_latency.base, w.client_latency.jitter),
        (Duration::from_millis(1), Duration::from_micros(200))
    );
    let again = Workload::from_str(&toml::to_string(&w.to_table()).unwrap(), "x").unwrap();
    assert_eq!(again.client_latency, w.client_latency);
    let e = err("clients = 1\nduration = \"5s\"\nclient_latency = \"2s\"");
    assert!(
        e.contains("'client_latency'") && e.contains("out of range") && e.contains("0s to 1s"),
        "{e}"
    );
    let e = err("clients = 1\nduration = \"5s\"\nclient_jitter = \"fast\"");
    assert!(e.contains("'client_jitter'"), "{e}");
}

#[test]
fn peer_latency_defaults_to_none_is_checked_and_written_back() {
    let w = Workload::from_str("clients = 1\nduration = \"5s\"", "x").unwrap();
    assert!(w.peer_latency.is_zero());
    assert!(!w.to_table().contains_key("peer_latency"));
    let w = Workload::from_str(
        "clients = 1\nduration = \"5s\"\npeer_latency = \"2ms\"\npeer_jitter = \"300us\"",
        "x",
    )
    .unwrap();
    assert_eq!(
        (w.peer_latency.base, w.peer_latency.jitter),
        (Duration::from_millis(2), Duration::from_micros(300))
    );
    assert!(
        w.client_latency.is_zero(),
        "peer latency is not the clients'"
    );
    let again = Workload::from_str(&toml::to_string(&w.to_table()).unwrap(), "x").unwrap();
    assert_eq!(again.peer_latency, w.peer_latency);
    let e = err("clients = 1\nduration = \"5s\"\npeer_latency = \"5s\"");
    assert!(
        e.contains("'peer_latency'") && e.contains("out of range"),
        "{e}"
    );
    let e = err("clients = 1\nduration = \"5s\"\npeer_jitter = \"slow\"");
    assert!(e.contains("'peer_jitter'"), "{e}");
}
