//! `examples/kubernetes/`, Docker-free: every object of its YAML files read strictly into its
//! Kubernetes type (k8s-openapi), and its targets parsed as lockbench targets whose render
//! commands, filled in for a pod, are commands this lockbench accepts. No Kubernetes runs here.

use std::path::Path;

use lockbench::chaos_mesh::strict::{documents, read_strictly};

fn strictly<T: serde::de::DeserializeOwned + serde::Serialize>(doc: &serde_norway::Value) -> T {
    read_strictly(doc).unwrap_or_else(|e| panic!("{e}"))
}

/// `doc` as the Kubernetes type its `kind` names, strictly.
fn kubernetes_object(doc: &serde_norway::Value) -> String {
    use k8s_openapi::api::rbac::v1 as rbac;
    use k8s_openapi::api::{apps::v1 as apps, batch::v1 as batch, core::v1 as core};
    let kind = doc["kind"].as_str().unwrap_or_default().to_string();
    match kind.as_str() {
        "Service" => drop(strictly::<core::Service>(doc)),
        "StatefulSet" => drop(strictly::<apps::StatefulSet>(doc)),
        "Job" => drop(strictly::<batch::Job>(doc)),
        "ServiceAccount" => drop(strictly::<core::ServiceAccount>(doc)),
        "PersistentVolumeClaim" => drop(strictly::<core::PersistentVolumeClaim>(doc)),
        "Role" => drop(strictly::<rbac::Role>(doc)),
        "RoleBinding" => drop(strictly::<rbac::RoleBinding>(doc)),
        other => panic!("examples/kubernetes: no check for kind {other}"),
    }
    kind
}

#[test]
fn the_kubernetes_examples_are_valid_objects_and_their_targets_valid_commands() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kubernetes");
    let mut kinds = Vec::new();
    for file in ["zookeeper", "etcd", "redis", "lockbench-job"] {
        let text = std::fs::read_to_string(dir.join(format!("{file}.yaml"))).unwrap();
        for doc in documents(&text).unwrap() {
            assert_eq!(
                doc["metadata"]["namespace"].as_str(),
                Some("lockbench"),
                "{file}"
            );
            kinds.push(kubernetes_object(&doc));
        }
    }
    assert_eq!(kinds.iter().filter(|k| *k == "StatefulSet").count(), 4);
    assert!(kinds.contains(&"Job".to_string()));
    for system in ["zookeeper", "etcd", "redis"] {
        let path = dir.join(format!("targets/{system}.toml"));
        let t = lockbench::target::Target::from_file(&path).unwrap();
        assert!(t.faults, "{system}");
        let commands = t.commands.as_ref().unwrap();
        // Each lockbench command a primitive runs is one this lockbench accepts and renders.
        for (primitive, template) in [
            ("kill", &commands.kill),
            ("pause", &commands.pause),
            ("isolate", &commands.isolate),
        ] {
            let (template, _undo) = template
                .as_ref()
                .unwrap_or_else(|| panic!("{system} {primitive}"));
            let line = template.replace("{node}", &t.nodes[0].name).replace(
                "{peers}",
                &format!("{},{}", t.nodes[1].name, t.nodes[2].name),
            );
            let render = line.split('|').next().unwrap();
            let words: Vec<&str> = render.split_whitespace().collect();
            let cli = <lockbench::cli::Cli as clap::Parser>::try_parse_from(&words)
                .unwrap_or_else(|e| panic!("{system} {primitive}: {render}: {e}"));
            let lockbench::cli::Command::Chaos(lockbench::cli::ChaosCommand::Render(args)) =
                cli.command
            else {
                panic!("{system} {primitive}: not a render: {render}")
            };
            assert_eq!(args.pod.as_deref(), Some(t.nodes[0].name.as_str()));
            // A container-kill names a container its system's StatefulSet has.
            if let Some(container) = &args.container {
                let spec = std::fs::read_to_string(dir.join(format!("{system}.yaml"))).unwrap();
                assert!(
                    spec.contains(&format!("- name: {container}\n")),
                    "{system} {primitive}: no container '{container}' in {system}.yaml"
                );
            }
            assert_eq!(args.namespace, "lockbench");
            assert!(line.contains("| kubectl apply -f -"), "{line}");
        }
    }
}
