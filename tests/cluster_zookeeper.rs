//! ZooKeeper ensemble on real containers: readiness, a write and read through zookeeper-client,
//! leader failover, an even (2|2) split that leaves no quorum, clean teardown, and the server
//! settings an ensemble reports with lockbench's settings and with the package's defaults.

mod common;

use std::time::{Duration, Instant};

use lockbench::System;

async fn zk_connect(
    endpoints: &[String],
) -> Result<zookeeper_client::Client, zookeeper_client::Error> {
    zookeeper_client::Client::connector()
        .with_session_timeout(Duration::from_secs(6))
        .with_connection_timeout(Duration::from_secs(2))
        .connect(&endpoints.join(","))
        .await
}

/// Retries a write until it succeeds or `limit` passes; returns how long it took.
async fn write_until_ok(endpoints: &[String], path: &str, limit: Duration) -> Duration {
    let start = Instant::now();
    let opts =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    loop {
        let attempt = async {
            let c = zk_connect(endpoints).await.map_err(|e| e.to_string())?;
            c.create(path, b"after-failover", &opts)
                .await
                .map_err(|e| e.to_string())
        };
        match tokio::time::timeout(Duration::from_secs(5), attempt).await {
            Ok(Ok(_)) => return start.elapsed(),
            Ok(Err(e)) if start.elapsed() > limit => panic!("write never succeeded: {e}"),
            Err(_) if start.elapsed() > limit => panic!("write never succeeded: timed out"),
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensemble_serves_fails_over_and_tears_down() {
    let cluster = common::start(System::Zookeeper, Some(3)).await;
    let endpoints = cluster.endpoints();
    assert_eq!(endpoints.len(), 3);
    assert!(endpoints.iter().all(|e| e.starts_with("127.0.0.1:")));

    // Exactly one leader, and a value written through the client reads back.
    let leader = cluster
        .leader()
        .await
        .unwrap()
        .expect("a leader after readiness");
    let client = zk_connect(&endpoints).await.expect("connect");
    let opts =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    client
        .create("/lockbench-probe", b"hello", &opts)
        .await
        .expect("create");
    let (data, _) = client.get_data("/lockbench-probe").await.expect("get");
    assert_eq!(data, b"hello");
    drop(client);

    // Kill the leader: another node is elected and writes succeed again.
    let killed_at = Instant::now();
    cluster.kill(&leader).await.unwrap();
    let (new_leader, elected_in) = cluster
        .wait_new_leader(&leader, Duration::from_secs(30))
        .await
        .unwrap();
    assert_ne!(new_leader, leader);
    let survivors: Vec<String> = cluster
        .servers()
        .filter(|n| n.name() != leader)
        .map(|n| n.endpoint())
        .collect();
    write_until_ok(&survivors, "/after-failover", Duration::from_secs(30)).await;
    eprintln!(
        "zookeeper: leader {leader} killed; {new_leader} leads after {:.2} s; writes ok after {:.2} s",
        elected_in.as_secs_f64(),
        killed_at.elapsed().as_secs_f64()
    );

    // The old leader comes back with its data and follows.
    cluster
        .restart(&leader, lockbench::cluster::DataOnRestart::Keep)
        .await
        .unwrap();
    cluster
        .wait_ready(Duration::from_secs(60))
        .await
        .expect("ensemble whole again");
    let logs = cluster.logs(&leader).await.unwrap();
    assert!(
        logs.contains("lockbench-entrypoint: starting zookeeper"),
        "logs: {logs}"
    );

    common::teardown_and_assert_gone(cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn even_split_of_four_leaves_no_quorum_until_healed() {
    let cluster = common::start(System::Zookeeper, Some(4)).await;
    let names: Vec<String> = cluster.servers().map(|n| n.name().to_string()).collect();
    let groups = vec![names[..2].to_vec(), names[2..].to_vec()];
    cluster.partition(&groups).await.unwrap();

    // With 2|2 neither side has 3 of 4 votes: no node may serve writes.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut leaderless = false;
    while Instant::now() < deadline {
        if cluster.leader().await.unwrap().is_none() {
            leaderless = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(
        leaderless,
        "a leader survived a 2|2 split of a 4-node ensemble"
    );
    let opts =
        zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    let attempt = async {
        let c = zk_connect(&cluster.endpoints()[..1])
            .await
            .map_err(|e| e.to_string())?;
        c.create("/split-write", b"x", &opts)
            .await
            .map_err(|e| e.to_string())
    };
    let res = tokio::time::timeout(Duration::from_secs(8), attempt).await;
    assert!(
        !matches!(res, Ok(Ok(_))),
        "a write succeeded without quorum: {res:?}"
    );

    // A node killed and restarted while the split lasts comes back with a fresh network
    // namespace: it gets its cuts again (and its peers cut its new address), so the split holds.
    let drops = |out: String| out.lines().filter(|l| l.contains("-j DROP")).count();
    let rules = "IPT=iptables; $IPT -w -L -n >/dev/null 2>&1 || IPT=iptables-legacy; \
                 $IPT -w -S LOCKBENCH 2>/dev/null || true";
    let node = cluster.node(&names[0]).unwrap();
    assert_eq!(
        drops(node.exec_script(rules).await.unwrap()),
        4,
        "cut from 2 peers both ways"
    );
    cluster.kill(&names[0]).await.unwrap();
    cluster
        .restart(&names[0], lockbench::cluster::DataOnRestart::Keep)
        .await
        .unwrap();
    assert!(
        drops(node.exec_script(rules).await.unwrap()) >= 4,
        "the restarted node lost its cuts"
    );
    assert!(
        cluster.leader().await.unwrap().is_none(),
        "a leader after the restart: the split did not hold"
    );
    // A second partition on top (its window overlapping the split's): ending it removes its
    // own cut and leaves exactly the split's.
    let known = names.iter().cloned().collect();
    let extra = lockbench::fault::Grudge::from_groups(
        &[vec![names[0].clone()], vec![names[1].clone()]],
        &known,
    )
    .unwrap();
    cluster.partition_grudge(&extra).await.unwrap();
    assert!(drops(node.exec_script(rules).await.unwrap()) >= 6);
    cluster.heal_grudge(&extra).await.unwrap();
    assert_eq!(
        drops(node.exec_script(rules).await.unwrap()),
        4,
        "the split's cuts alone"
    );
    assert!(
        cluster.leader().await.unwrap().is_none(),
        "the split still holds"
    );

    cluster.heal().await.unwrap();
    assert_eq!(drops(node.exec_script(rules).await.unwrap()), 0, "healed");
    cluster
        .wait_ready(Duration::from_secs(60))
        .await
        .expect("one leader after heal");
    common::teardown_and_assert_gone(cluster).await;
}

/// `key=value` of a `conf` reply.
fn conf_value(conf: &str, key: &str) -> Option<String> {
    conf.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{key}=")))
        .map(str::to_string)
}

/// Every server's `conf`, with the JVM's command line (where the election's wait is given).
async fn confs(cluster: &lockbench::Cluster) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for n in cluster.servers() {
        let conf = lockbench::service::zookeeper::four_letter_word(&n.endpoint(), "conf")
            .await
            .unwrap_or_else(|e| panic!("conf of {}: {e}", n.name()));
        let cmdline = n
            .exec_script("tr '\\0' ' ' < /proc/1/cmdline")
            .await
            .unwrap_or_else(|e| panic!("the command line of {}: {e}", n.name()));
        out.push((n.name().to_string(), conf, cmdline));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_run_the_settings_table_or_the_packages_defaults() {
    use lockbench::system::settings::Source;
    let table = System::Zookeeper.facts().settings;
    for server_defaults in [true, false] {
        let opts = lockbench::ClusterOptions {
            server_defaults,
            ..Default::default()
        };
        let run_id = lockbench::docker::new_run_id();
        let cluster = common::start_with_options(System::Zookeeper, opts, &run_id)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let record = cluster.settings();
        assert_eq!(record.server_defaults, server_defaults);
        for (node, conf, cmdline) in confs(&cluster).await {
            let tick = conf_value(&conf, "tickTime");
            eprintln!(
                "zookeeper {node} (server_defaults {server_defaults}): tickTime {tick:?}, \
                 minSessionTimeout {:?}, maxSessionTimeout {:?}",
                conf_value(&conf, "minSessionTimeout"),
                conf_value(&conf, "maxSessionTimeout")
            );
            if server_defaults {
                // The package's: its zoo.cfg's 2 s ticks, and sessions of 2 to 20 ticks.
                assert_eq!(tick.as_deref(), Some("2000"), "{node}: {conf}");
                assert_eq!(conf_value(&conf, "syncLimit").as_deref(), Some("5"));
                assert_eq!(conf_value(&conf, "initLimit").as_deref(), Some("10"));
                assert_eq!(
                    conf_value(&conf, "minSessionTimeout").as_deref(),
                    Some("4000")
                );
                assert_eq!(
                    conf_value(&conf, "maxSessionTimeout").as_deref(),
                    Some("40000")
                );
                assert!(
                    !cmdline.contains("maxNotificationInterval"),
                    "{node}: {cmdline}"
                );
                assert!(record.differ.iter().all(|s| !s.tuned), "{record:?}");
            } else {
                assert_eq!(tick.as_deref(), Some("250"), "{node}: {conf}");
                // Every tuned setting as the table gives it: in zoo.cfg, or the JVM's property.
                for s in table {
                    let Source::Env { value, .. } = s.source else {
                        continue;
                    };
                    match conf_value(&conf, s.name) {
                        Some(v) => assert_eq!(v, value, "{node}: {}", s.name),
                        None => assert!(
                            cmdline.contains(&format!("-D{}={value}", s.name)),
                            "{node}: {} is neither in conf nor on the command line: {cmdline}",
                            s.name
                        ),
                    }
                }
                assert_eq!(record.differ.len(), table.len());
            }
        }
        common::teardown_and_assert_gone(cluster).await;
    }
}
