//! The example redis-py driver (drivers/example-redis-py) on a real Redis cluster through
//! `lockbench run --clients-from`: its cell runs beside the recipe's, and its history records
//! the library's acquisitions and releases, with no token (redis-py's Lock has none). Needs
//! Docker, the lockbench/redis image, and PyPI on first use (the driver's virtual environment).

use std::path::PathBuf;
use std::process::Command;

#[test]
fn redis_py_acquires_and_releases_on_a_real_cluster() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("lockbench-driver-redis-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let workload = out.join("w.toml");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(
        &workload,
        "clients = 4\nkeys = 1\nhold = { kind = \"fixed\", value = \"2ms\" }\n\
         think = { kind = \"fixed\", value = \"0ms\" }\nduration = \"5s\"\nwarmup = \"0s\"\n\
         lease_ttl = \"10s\"\nacquire_timeout = \"5s\"\nresource = \"unfenced\"\n\
         strategies = [\"predecessor\"]\nseed = 1\n",
    )
    .unwrap();
    let res = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .current_dir(&root)
        .args(["run", "--systems", "redis", "--floor-samples", "0"])
        .args(["--clients-from", "drivers/example-redis-py", "--workload"])
        .arg(&workload)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run lockbench");
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{stderr}");
    let run = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.is_dir())
        .expect("a run folder");
    let cell = run.join("cells/redis-redis-py-w-c4");
    let history = std::fs::read_to_string(cell.join("history.jsonl")).expect("the library's cell");
    let events: Vec<serde_json::Value> = history
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let count = |kind: &str, op: &str| {
        events
            .iter()
            .filter(|e| e["kind"] == kind && e["op"] == op)
            .count()
    };
    assert!(count("ok", "acquire") > 10, "{stderr}");
    assert!(count("ok", "release") > 10, "{stderr}");
    assert!(count("ok", "write") > 10, "the register's writes landed");
    assert!(
        events
            .iter()
            .filter(|e| e["kind"] == "ok" && e["op"] == "acquire")
            .all(|e| e.get("token").is_none() && e.get("wakeups").is_none()),
        "redis-py shows neither a token nor its wake-ups"
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cell.join("driver.json")).unwrap()).unwrap();
    assert_eq!(record["reported_version"], "5.0.8");
    assert!(record["broken"].as_array().unwrap().is_empty(), "{record}");
    assert!(
        record["round_trip_p50_us"].as_u64().unwrap() > 0,
        "{record}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cell.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["safety"]["verdict"], "safe", "{summary}");
}
