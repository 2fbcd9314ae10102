//! etcd cluster on real containers: readiness, a write and read through etcd-client, leader
//! failover, a 1|2 partition (majority writes, the isolated member cannot), heal and catch-up,
//! and the clients cut off from the isolated member with the majority.

mod common;

use std::time::{Duration, Instant};

use etcd_client::{Client, ConnectOptions, GetOptions};
use lockbench::fault::partition::Grudge;
use lockbench::{Cluster, System};

async fn client(endpoints: &[String]) -> Client {
    let opts = ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(2))
        .with_timeout(Duration::from_secs(3));
    let urls: Vec<String> = endpoints.iter().map(|e| format!("http://{e}")).collect();
    Client::connect(urls, Some(opts))
        .await
        .expect("connect to etcd")
}

/// One serializable read on `endpoint` over a fresh connection, within 3 s.
async fn read_once(endpoint: &str) -> Result<(), String> {
    let r = tokio::time::timeout(Duration::from_secs(3), async {
        let opts = ConnectOptions::new().with_connect_timeout(Duration::from_secs(2));
        let mut c = Client::connect([format!("http://{endpoint}")], Some(opts)).await?;
        c.get("after-heal", Some(GetOptions::new().with_serializable()))
            .await
    })
    .await;
    match r {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no answer within 3 s".into()),
    }
}

async fn put_with_deadline(
    c: &mut Client,
    key: &str,
    value: &str,
    limit: Duration,
) -> Result<(), String> {
    match tokio::time::timeout(limit, c.put(key, value, None)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {limit:?}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_serves_fails_over_partitions_and_tears_down() {
    let cluster = common::start(System::Etcd, Some(3)).await;
    let mut c = client(&cluster.endpoints()).await;
    c.put("probe", "hello", None).await.expect("put");
    let got = c.get("probe", None).await.expect("get");
    assert_eq!(got.kvs()[0].value(), b"hello");
    assert_fails_over(&cluster).await;

    // Partition 1|2: isolate one member.
    let names: Vec<String> = cluster.servers().map(|n| n.name().to_string()).collect();
    let isolated = names[0].clone();
    let majority: Vec<String> = names[1..].to_vec();
    cluster
        .partition(&[vec![isolated.clone()], majority.clone()])
        .await
        .unwrap();
    let iso_ep = cluster.node(&isolated).unwrap().endpoint();
    let maj_eps: Vec<String> = majority
        .iter()
        .map(|n| cluster.node(n).unwrap().endpoint())
        .collect();
    let mut m = client(&maj_eps).await;
    let within_20s = || Instant::now() + Duration::from_secs(20);
    assert!(
        put_until(&mut m, "split", "majority", within_20s()).await,
        "the majority side could not write"
    );
    let mut iso = client(std::slice::from_ref(&iso_ep)).await;
    let res = put_with_deadline(&mut iso, "split", "isolated", Duration::from_secs(5)).await;
    assert!(res.is_err(), "the isolated member accepted a write");

    // Heal: the isolated member catches up (a local, serializable read there sees the value).
    // The isolated side's put timed out, yet its forwarded proposal may still land once TCP
    // retransmits it after the heal (an indeterminate write, as Jepsen calls it); so the value to
    // catch up with is a fresh one the majority writes after the heal, not "majority".
    cluster.heal().await.unwrap();
    assert!(
        put_until(&mut m, "after-heal", "healed", within_20s()).await,
        "the majority could not write after the heal"
    );
    assert_catches_up(&cluster, &isolated, &iso_ep).await;

    // The same split with the clients on the majority's side: the isolated member no longer
    // answers them (a fresh connection cannot even be made), the majority does; after the heal
    // the isolated member answers again.
    assert_clients_cut_off(&cluster, &names, &iso_ep).await;
    common::teardown_and_assert_gone(cluster).await;
}

/// Puts `key` until a put succeeds (each given 2 s) or `until` passes; whether one did.
async fn put_until(c: &mut Client, key: &str, value: &str, until: Instant) -> bool {
    while Instant::now() < until {
        if put_with_deadline(c, key, value, Duration::from_secs(2))
            .await
            .is_ok()
        {
            return true;
        }
    }
    false
}

/// Kill the leader: a new one is elected and a write succeeds again; the old leader then
/// rejoins with its data.
async fn assert_fails_over(cluster: &Cluster) {
    let leader = cluster.leader().await.unwrap().expect("leader");
    let killed_at = Instant::now();
    cluster.kill(&leader).await.unwrap();
    let (new_leader, elected_in) = cluster
        .wait_new_leader(&leader, Duration::from_secs(30))
        .await
        .unwrap();
    let survivors: Vec<String> = cluster
        .servers()
        .filter(|n| n.name() != leader)
        .map(|n| n.endpoint())
        .collect();
    let mut s = client(&survivors).await;
    let until = killed_at + Duration::from_secs(30);
    assert!(
        put_until(&mut s, "after-failover", "1", until).await,
        "no write succeeded after the leader was killed"
    );
    eprintln!(
        "etcd: leader {leader} killed; {new_leader} leads after {:.2} s; writes ok after {:.2} s",
        elected_in.as_secs_f64(),
        killed_at.elapsed().as_secs_f64()
    );
    cluster
        .restart(&leader, lockbench::cluster::DataOnRestart::Keep)
        .await
        .unwrap();
    cluster
        .wait_ready(Duration::from_secs(60))
        .await
        .expect("member rejoins with its data");
}

/// The healed member `isolated` (at `iso_ep`) reads the value written after the heal within
/// 45 s; otherwise the test fails with its log's last lines.
async fn assert_catches_up(cluster: &Cluster, isolated: &str, iso_ep: &str) {
    let t = Instant::now();
    let mut caught_up = false;
    let mut last = String::new();
    while t.elapsed() < Duration::from_secs(45) {
        // A fresh connection each time, so a channel left broken by the partition cannot hide
        // a member that has caught up.
        let r = tokio::time::timeout(Duration::from_secs(3), async {
            let opts = ConnectOptions::new().with_connect_timeout(Duration::from_secs(2));
            let mut c = Client::connect([format!("http://{iso_ep}")], Some(opts)).await?;
            c.get("after-heal", Some(GetOptions::new().with_serializable()))
                .await
        })
        .await;
        match r {
            Ok(Ok(r)) if r.kvs().first().map(|kv| kv.value()) == Some(b"healed".as_slice()) => {
                caught_up = true;
                break;
            }
            Ok(Ok(r)) => {
                last = format!(
                    "read {:?}",
                    r.kvs()
                        .first()
                        .map(|kv| kv.value_str().unwrap_or("?").to_string())
                )
            }
            Ok(Err(e)) => last = format!("error {e}"),
            Err(_) => last = "no answer within 2 s".to_string(),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if !caught_up {
        let logs = cluster.logs(isolated).await.unwrap_or_default();
        let tail: Vec<&str> = logs.lines().rev().take(30).collect();
        panic!(
            "the isolated member did not catch up after heal (last: {last}); its log ends:\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    eprintln!(
        "etcd: isolated member caught up {:.2} s after heal",
        t.elapsed().as_secs_f64()
    );
}

/// The split again with the clients on the majority's side: the isolated member does not
/// answer them, the majority does, and after the heal the isolated member answers again.
async fn assert_clients_cut_off(cluster: &Cluster, names: &[String], iso_ep: &str) {
    let isolated = names[0].clone();
    let majority: Vec<String> = names[1..].to_vec();
    let known = names.iter().cloned().collect();
    let grudge = Grudge::from_groups(&[vec![isolated.clone()], majority.clone()], &known)
        .unwrap()
        .with_clients_beside(&majority[0]);
    cluster.partition_grudge(&grudge).await.unwrap();
    let maj_ep = cluster.node(&majority[0]).unwrap().endpoint();
    assert!(
        read_once(iso_ep).await.is_err(),
        "the isolated member still answers clients cut off from it"
    );
    read_once(&maj_ep)
        .await
        .expect("the majority answers the clients on its side");
    cluster.heal().await.unwrap();
    let t = Instant::now();
    let mut back = read_once(iso_ep).await;
    while back.is_err() && t.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        back = read_once(iso_ep).await;
    }
    back.expect("the isolated member answers clients again after the heal");
}
