//! The registry: one name per kind, parameters that mean one thing across kinds, and what
//! kinds and effects say of themselves.

use super::ParamType;
use super::*;

#[test]
fn every_kind_has_one_name_and_the_names_are_the_files_and_histories() {
    let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
    // The shipped kinds, in the order errors list them; a new kind goes after them.
    assert_eq!(
        names[..6],
        [
            "kill",
            "partition",
            "pause-node",
            "pause-client",
            "clock",
            "mixed"
        ]
    );
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "a name is registered twice");
    assert_eq!(
        plain_kinds(),
        names
            .iter()
            .filter(|n| **n != "mixed")
            .copied()
            .collect::<Vec<_>>()
    );
    assert!(
        entry("pause").is_none(),
        "old history names are history's, not kinds"
    );
    let modelled: Vec<&str> = KINDS
        .iter()
        .filter(|k| k.realism == Realism::Modelled)
        .map(|k| k.name)
        .collect();
    assert_eq!(modelled, ["clock"]);
}

#[test]
fn a_parameter_name_has_one_type_across_kinds() {
    let mut seen: Vec<(&str, ParamType)> = Vec::new();
    for p in KINDS.iter().flat_map(|k| k.parameters) {
        match seen.iter().find(|(n, _)| *n == p.name) {
            Some((_, ty)) => assert_eq!(*ty, p.ty, "{} is read as two types", p.name),
            None => seen.push((p.name, p.ty)),
        }
        let timing = ["kind", "start", "every", "jitter", "duration"];
        assert!(!timing.contains(&p.name), "{} is a schedule field", p.name);
    }
}

#[test]
fn kinds_and_effects_say_what_the_report_says() {
    let clock = FaultKind::from(Clock {
        target: Target::One,
        skew: ClockSkew::Jump {
            by: Duration::from_secs(1),
        },
    });
    assert_eq!(
        (clock.name(), clock.realism()),
        ("clock", Realism::Modelled)
    );
    let kill = FaultKind::from(Kill {
        target: Target::Leader,
        data: crate::cluster::DataOnRestart::Keep,
    });
    assert_eq!(
        (kill.name(), kill.realism(), kill.window_field()),
        ("kill", Realism::Real, "restart_after")
    );
    let paused = Fault::from(PausedClients { workers: vec![2] });
    assert_eq!(
        (paused.kind(), paused.workers()),
        ("pause-client", &[2][..])
    );
    assert!(paused.nodes().is_empty());
    let mixed = FaultKind::from(Mixed {
        kinds: vec![kill, clock],
    });
    assert_eq!(mixed.refusal().map(|r| r.kind), Some("clock"));
    assert!(!mixed.pauses_clients());
}

#[test]
fn a_promotion_runs_only_where_an_operator_fails_over() {
    let promote = FaultKind::from(Promote);
    assert_eq!(
        (promote.name(), promote.realism(), promote.window_field()),
        ("promote", Realism::Real, "restart_after")
    );
    let refusal = promote.refusal().expect("promote is refused somewhere");
    let manual: Vec<_> = crate::system::FACTS
        .iter()
        .filter(|f| f.manual_failover)
        .map(|f| f.system)
        .collect();
    for s in crate::system::ALL_SYSTEMS {
        // Refused exactly where the system fails over by itself or has no replica.
        assert_eq!(refusal.systems.contains(&s), !manual.contains(&s), "{s}");
    }
    for s in ["zookeeper", "etcd", "redis", "redlock"] {
        let s: crate::system::System = s.parse().unwrap();
        assert!(
            refusal.systems.contains(&s),
            "{s} elects or fails over by itself"
        );
    }
    assert!(
        refusal.why.contains("postgres and mariadb"),
        "{}",
        refusal.why
    );
}
