//! The rendered resources read back into Chaos Mesh's own types (kopium's bindings of its
//! CRDs), strictly: every field written is a field of the type (a round trip through the type
//! gives back the same document), and the fields say what the fault does.

use std::path::Path;

use kcr_chaos_mesh_org::v1alpha1::networkchaos::{NetworkChaos, NetworkChaosAction};
use kcr_chaos_mesh_org::v1alpha1::podchaos::{PodChaos, PodChaosAction, PodChaosMode};
use kcr_chaos_mesh_org::v1alpha1::timechaos::TimeChaos;

use super::*;

use super::strict::read_strictly;

/// The YAML documents of `text`.
fn documents(text: &str) -> Vec<serde_norway::Value> {
    super::strict::documents(text).unwrap()
}

/// `doc` read into `T` strictly, or the test fails naming the field.
fn strictly<T: serde::de::DeserializeOwned + serde::Serialize>(doc: &serde_norway::Value) -> T {
    read_strictly(doc).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_strict_reading_finds_a_misspelt_field() {
    let doc = documents(&render_primitive(
        &Primitive::Kill { container: None },
        "etcd-0",
        "ns",
    ))[0]
        .clone();
    let mut bad = doc.clone();
    bad["spec"]["gracePeriod"] = serde_norway::Value::from(5);
    drop(strictly::<PodChaos>(&bad));
    bad["spec"]["gracePeriode"] = serde_norway::Value::from(5);
    let e = read_strictly::<PodChaos>(&bad).unwrap_err();
    assert!(e.contains(".spec.gracePeriode"), "{e}");
}

fn shipped(name: &str) -> Schedule {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("chaos");
    Schedule::from_file(&dir.join(format!("{name}.toml"))).unwrap()
}

fn etcd_pods() -> Scope {
    Scope {
        namespace: "lockbench".into(),
        pods: Pods::Labelled([("app".to_string(), "etcd".to_string())].into()),
        container: None,
    }
}

#[test]
fn a_partition_and_a_slow_schedule_render_as_typed_network_chaos() {
    let yaml = render_schedule(&shipped("isolate-leader"), &etcd_pods()).unwrap();
    let docs = documents(&yaml);
    assert_eq!(docs.len(), 1, "{yaml}");
    let n: NetworkChaos = strictly(&docs[0]);
    assert_eq!(
        docs[0]["apiVersion"].as_str(),
        Some("chaos-mesh.org/v1alpha1")
    );
    assert_eq!(docs[0]["kind"].as_str(), Some("NetworkChaos"));
    assert_eq!(n.metadata.namespace.as_deref(), Some("lockbench"));
    assert_eq!(n.spec.action, NetworkChaosAction::Partition);
    assert_eq!(docs[0]["spec"]["direction"].as_str(), Some("both"));
    assert_eq!(docs[0]["spec"]["mode"].as_str(), Some("one"));
    assert_eq!(n.spec.duration.as_deref(), Some("11000ms"));
    let target = n.spec.target.as_ref().expect("cut from the others");
    assert_eq!(
        target.selector.label_selectors.as_ref().unwrap()["app"],
        "etcd"
    );
    assert!(yaml.contains("# faults[0]: every 14s"), "{yaml}");

    let yaml = render_schedule(&shipped("slow-clients"), &etcd_pods()).unwrap();
    let n: NetworkChaos = strictly(&documents(&yaml)[0]);
    assert_eq!(n.spec.action, NetworkChaosAction::Delay);
    let delay = n.spec.delay.as_ref().unwrap();
    assert_eq!(
        (delay.latency.as_str(), delay.jitter.as_deref()),
        ("25ms", Some("5ms"))
    );
    assert_eq!(n.spec.duration.as_deref(), Some("3000ms"));
}

#[test]
fn a_clock_jump_is_a_real_time_chaos() {
    let schedule = Schedule::from_str(
        "systems = [\"redis\"]\n[[faults]]\nkind = \"clock\"\ntarget = \"all\"\nby = \"30s\"\n\
         start = \"2s\"\nduration = \"5s\"\n",
        "clock-all",
    )
    .unwrap();
    let yaml = render_schedule(&schedule, &etcd_pods()).unwrap();
    let docs = documents(&yaml);
    let t: TimeChaos = strictly(&docs[0]);
    assert_eq!(docs[0]["kind"].as_str(), Some("TimeChaos"));
    assert_eq!(t.spec.time_offset, "30000ms");
    assert_eq!(docs[0]["spec"]["mode"].as_str(), Some("all"));
    // The shipped ones aim at the leader, or at a majority of Redlock's masters.
    for name in ["clock-jump", "clock-jump-majority"] {
        assert!(
            render_schedule(&shipped(name), &etcd_pods()).is_err(),
            "{name}"
        );
    }
}

#[test]
fn what_chaos_mesh_cannot_express_is_refused_with_the_reason() {
    for (name, words) in [
        ("kill-leader", "target leader has no Chaos Mesh mode"),
        ("partition-halves", "shape halves"),
        (
            "pause-clients",
            "pause-client acts on lockbench's own clients",
        ),
        ("mixed", "mixed"),
    ] {
        let e = render_schedule(&shipped(name), &etcd_pods())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{name}: faults[0]")) && e.contains(words),
            "{name}: {e}"
        );
    }
}

#[test]
fn every_primitive_is_one_named_resource_on_its_pod() {
    let kill = render_primitive(&Primitive::Kill { container: None }, "etcd-0", "lockbench");
    let p: PodChaos = strictly(&documents(&kill)[0]);
    assert_eq!(p.metadata.name.as_deref(), Some("lockbench-kill-etcd-0"));
    assert_eq!(p.spec.action, PodChaosAction::PodKill);
    assert_eq!(p.spec.mode, PodChaosMode::All);
    assert_eq!(
        p.spec.selector.pods.as_ref().unwrap()["lockbench"],
        vec!["etcd-0".to_string()]
    );
    let pause: PodChaos =
        strictly(&documents(&render_primitive(&Primitive::Pause, "etcd-1", "lockbench"))[0]);
    assert_eq!(pause.spec.action, PodChaosAction::PodFailure);
    assert_eq!(pause.spec.duration, None, "until the undo deletes it");

    let isolate = render_primitive(
        &Primitive::Isolate {
            peers: vec!["etcd-1".into(), "etcd-2".into()],
        },
        "etcd-0",
        "lockbench",
    );
    let docs = documents(&isolate);
    let n: NetworkChaos = strictly(&docs[0]);
    assert_eq!(n.metadata.name.as_deref(), Some("lockbench-isolate-etcd-0"));
    assert_eq!(docs[0]["spec"]["direction"].as_str(), Some("both"));
    assert_eq!(
        n.spec.target.unwrap().selector.pods.unwrap()["lockbench"],
        vec!["etcd-1".to_string(), "etcd-2".to_string()]
    );

    let slow = render_primitive(
        &Primitive::Slow {
            latency: Duration::from_micros(1500),
            jitter: Duration::ZERO,
        },
        "etcd-0",
        "ns",
    );
    let n: NetworkChaos = strictly(&documents(&slow)[0]);
    assert_eq!(n.spec.delay.unwrap().latency, "1500us");
    let clock = render_primitive(
        &Primitive::Clock {
            offset: Duration::from_secs(30),
            back: true,
        },
        "etcd-0",
        "ns",
    );
    let t: TimeChaos = strictly(&documents(&clock)[0]);
    assert_eq!(t.spec.time_offset, "-30000ms");
}

#[test]
fn a_kill_with_a_container_named_renders_as_container_kill_of_it() {
    let one = Primitive::Kill {
        container: Some("etcd".into()),
    };
    let doc = documents(&render_primitive(&one, "etcd-0", "lockbench"))[0].clone();
    let p: PodChaos = strictly(&doc);
    assert_eq!(p.spec.action, PodChaosAction::ContainerKill);
    assert_eq!(p.spec.container_names, Some(vec!["etcd".to_string()]));
    assert_eq!(p.metadata.name.as_deref(), Some("lockbench-kill-etcd-0"));
    // A schedule's kills likewise; its other faults take no container.
    let scope = Scope {
        container: Some("etcd".into()),
        ..etcd_pods()
    };
    let yaml = render_schedule(&shipped("kill-leader"), &scope);
    let refused = yaml.expect_err("kill-leader targets the leader, which a selector cannot pick");
    assert!(refused.why.contains("leader"), "{refused}");
    let kill_one = Schedule::from_str(
        "[[faults]]\nkind = \"kill\"\ntarget = \"one\"\nstart = \"5s\"\nrestart_after = \"3s\"\n",
        "kill-one",
    )
    .unwrap();
    let docs = documents(&render_schedule(&kill_one, &scope).unwrap());
    let p: PodChaos = strictly(&docs[0]);
    assert_eq!(p.spec.action, PodChaosAction::ContainerKill);
    assert_eq!(p.spec.container_names, Some(vec!["etcd".to_string()]));
    let pod_wide = documents(&render_schedule(&kill_one, &etcd_pods()).unwrap());
    let p: PodChaos = strictly(&pod_wide[0]);
    assert_eq!(
        (p.spec.action, p.spec.container_names),
        (PodChaosAction::PodKill, None)
    );
}
