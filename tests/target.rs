//! `lockbench run --target FILE` against clusters started with `lockbench up`, given as a user
//! gives them: the endpoints `up` printed, a login where the cluster asks for one (etcd with
//! authentication on and a user whose role reaches only the prefix; Redis with an ACL user
//! confined to the prefix's keys and channels; ZooKeeper with a digest user, the only one the
//! prefix node's ACL lets in), TLS with client certificates on etcd and Redis (`up --tls`: the
//! targets name only the TLS ports, which answer nothing but a TLS client the CA signed; and a
//! single Redis master without Sentinel, behind `requirepass` alone), and a key prefix. Each test checks the rules
//! of a run on a target: the cells run and are judged safe; nothing outside the prefix is
//! touched (a key planted outside it survives, and the servers themselves refuse the users any
//! other key); what the run wrote is gone afterwards; a prefix holding a key lockbench did not
//! write is refused, and that key is left alone; no file of the run holds the password.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::cli_run::{latest, scratch, summary, write};
use common::up::Up;
use serde_json::Value;

/// `lockbench run --target FILE ARGS` with 4 clients and (unless ARGS say) 3 s cells, the
/// password in `env`.
fn run_on_target(
    out: &Path,
    target: &Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockbench"));
    cmd.arg("run")
        .arg("--target")
        .arg(target)
        .args(["--clients", "4"])
        .args(args)
        .arg("--out")
        .arg(out);
    if !args.contains(&"--duration") {
        cmd.args(["--duration", "3s"]);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run lockbench")
}

/// Every cell of the run in `out/latest` acquired and was judged safe; no file of the run
/// holds `password`; environment.json records the target named `name` with user `user`.
fn assert_run_is_sound(out: &Path, name: &str, user: Option<&str>, password: &str) {
    let run = latest(out);
    let cells: Vec<String> = std::fs::read_dir(run.join("cells"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(cells.len(), 2, "both strategies' cells: {cells:?}");
    for c in &cells {
        let s = summary(&run, c);
        assert!(
            s["acquisitions"].as_u64().unwrap_or(0) > 0,
            "{c} acquired nothing: {s}"
        );
        assert_eq!(s["safety"]["verdict"], "safe", "{c}: {}", s["safety"]);
    }
    let env: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("environment.json")).unwrap())
            .unwrap();
    assert_eq!(env["target"][0]["name"], name, "{env}");
    if let Some(user) = user {
        assert_eq!(env["target"][0]["auth"]["user"], user, "{env}");
    }
    if !password.is_empty() {
        for file in files(&run) {
            let bytes = std::fs::read(&file).unwrap();
            assert!(
                !bytes
                    .windows(password.len())
                    .any(|w| w == password.as_bytes()),
                "{} holds the password",
                file.display()
            );
        }
    }
}

/// Every key of a Redis server under `/bench`.
async fn bench_keys(conn: &mut redis::aio::MultiplexedConnection) -> Vec<String> {
    redis::cmd("KEYS")
        .arg("/bench*")
        .query_async(conn)
        .await
        .unwrap()
}

/// `run_on_target` into `dir/out` that must succeed, then [`assert_run_is_sound`].
fn run_soundly(
    dir: &Path,
    target: &Path,
    env: &[(&str, &str)],
    args: &[&str],
    (name, user, password): (&str, Option<&str>, &str),
) {
    let out = &dir.join("out");
    let run = run_on_target(out, target, env, args);
    assert!(
        run.status.success(),
        "run on target {name}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_run_is_sound(out, name, user, password);
}

fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The run refused the prefix because of `key`, before any cell ran.
fn assert_refused_for(out: &std::process::Output, key: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "a run on a used prefix must fail: {err}"
    );
    assert!(
        err.contains("already holds keys") && err.contains(key) && err.contains("allow_existing"),
        "the refusal names the key and the fix: {err}"
    );
}

#[test]
fn etcd_target_with_authentication_over_tls_keeps_to_its_prefix_and_cleans_up() {
    use etcd_client::{Client, ConnectOptions, GetOptions, Permission};
    let dir = scratch("target-etcd");
    let tls_dir = dir.join("tls");
    let up = Up::start(&["etcd", "--tls", tls_dir.to_str().unwrap()]);
    let endpoints = up.strings("endpoints");
    let (root_pw, bench_pw) = ("root-pw-7f3a", "bench-pw-91c2");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let urls: Vec<String> = endpoints.iter().map(|e| format!("http://{e}")).collect();
    let as_root = || {
        let urls = urls.clone();
        async move {
            let opts = ConnectOptions::new().with_user("root", root_pw);
            Client::connect(&urls, Some(opts))
                .await
                .expect("root login")
        }
    };
    rt.block_on(async {
        let mut c = Client::connect(&urls, None).await.unwrap();
        c.put("/other/keep", "theirs", None).await.unwrap();
        c.user_add("root", root_pw, None).await.unwrap();
        c.user_grant_role("root", "root").await.unwrap();
        c.role_add("bench").await.unwrap();
        c.role_grant_permission("bench", Permission::read_write("/bench/").with_prefix())
            .await
            .unwrap();
        c.user_add("bench", bench_pw, None).await.unwrap();
        c.user_grant_role("bench", "bench").await.unwrap();
        c.auth_enable().await.unwrap();
    });
    // The TLS ports only, with (or, refused, without) the client certificate the servers ask
    // for.
    let etcd_target = |file: &str, client_cert: bool| {
        write(
            &dir,
            file,
            &format!(
                "system = \"etcd\"\nendpoints = {}\nprefix = \"/bench\"\n\n[auth]\nuser = \
                 \"bench\"\npassword_env = \"LB_TEST_ETCD_PASSWORD\"\n\n{}",
                up.toml_list("tls_endpoints"),
                tls_section(&tls_dir, client_cert)
            ),
        )
    };
    let target = etcd_target("my-etcd.toml", true);
    let env = [("LB_TEST_ETCD_PASSWORD", bench_pw)];
    run_soundly(
        &dir,
        &target,
        &env,
        &[],
        ("my-etcd", Some("bench"), bench_pw),
    );
    rt.block_on(async {
        let mut c = as_root().await;
        let left = c
            .get(
                "/bench",
                Some(GetOptions::new().with_prefix().with_keys_only()),
            )
            .await
            .unwrap();
        let keys: Vec<_> = left
            .kvs()
            .iter()
            .map(|kv| kv.key_str().unwrap().to_string())
            .collect();
        assert!(keys.is_empty(), "the run left keys: {keys:?}");
        let theirs = c.get("/other/keep", None).await.unwrap();
        assert_eq!(theirs.kvs()[0].value(), b"theirs");
        // The user's role reaches nothing else: the server itself keeps the run inside.
        let opts = ConnectOptions::new().with_user("bench", bench_pw);
        let mut bench = Client::connect(&urls, Some(opts)).await.unwrap();
        assert!(bench.get("/other/keep", None).await.is_err());
        c.put("/bench/someone-elses", "x", None).await.unwrap();
    });
    let out = run_on_target(&dir.join("out2"), &target, &env, &[]);
    assert_refused_for(&out, "/bench/someone-elses");
    rt.block_on(async {
        let mut c = as_root().await;
        let kept = c.get("/bench/someone-elses", None).await.unwrap();
        assert_eq!(kept.kvs().len(), 1, "a refused run removes nothing");
    });
    // A wrong password is refused with the server's answer, before any cell.
    let out = run_on_target(
        &dir.join("out3"),
        &target,
        &[("LB_TEST_ETCD_PASSWORD", "wrong")],
        &[],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("authentication failed"), "{err}");
    // Without the client certificate the TLS port lets nobody in, with or without a password.
    let no_cert = etcd_target("no-cert.toml", false);
    let out = run_on_target(&dir.join("out4"), &no_cert, &env, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "no client certificate, yet: {err}");
    assert!(
        !latest_exists(&dir.join("out4")),
        "refused before any run folder: {err}"
    );
}

/// A target's `[tls]` naming the files `up --tls DIR` wrote, with or without the client pair.
fn tls_section(dir: &Path, client: bool) -> String {
    let mut s = format!("[tls]\nca = \"{}\"\n", dir.join("ca.pem").display());
    if client {
        s += &format!(
            "cert = \"{}\"\nkey = \"{}\"\n",
            dir.join("client.pem").display(),
            dir.join("client-key.pem").display()
        );
    }
    s
}

fn latest_exists(out: &Path) -> bool {
    out.join("latest").exists()
}

#[test]
fn redis_target_with_an_acl_user_over_tls_keeps_to_its_prefix_and_cleans_up() {
    let dir = scratch("target-redis");
    let tls_dir = dir.join("tls");
    let up = Up::start(&["redis", "--tls", tls_dir.to_str().unwrap()]);
    let bench_pw = "bench-pw-5d81";
    let servers: Vec<&Value> = up.info["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["role"] != "sentinel")
        .collect();
    assert!(servers.len() >= 2, "{}", up.info);
    let rt = tokio::runtime::Runtime::new().unwrap();
    // The ACL user on every server (a replica may be promoted), confined to the prefix.
    rt.block_on(async {
        for n in &servers {
            let ep = n["endpoint"].as_str().unwrap();
            let c = redis::Client::open(format!("redis://{ep}/")).unwrap();
            let mut conn = c.get_multiplexed_async_connection().await.unwrap();
            let _: () = redis::cmd("ACL")
                .arg("SETUSER")
                .arg("bench")
                .arg("on")
                .arg(format!(">{bench_pw}"))
                .arg("~/bench/*")
                .arg("&/bench/*")
                .arg("+@all")
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    });
    let master_ep = servers[0]["endpoint"].as_str().unwrap().to_string();
    let default_conn = || {
        let ep = master_ep.clone();
        async move {
            let c = redis::Client::open(format!("redis://{ep}/")).unwrap();
            c.get_multiplexed_async_connection().await.unwrap()
        }
    };
    rt.block_on(async {
        let mut conn = default_conn().await;
        let _: () = redis::cmd("SET")
            .arg("other:keep")
            .arg("theirs")
            .query_async(&mut conn)
            .await
            .unwrap();
    });
    // Sentinel names the master's plain port; the map sends the clients to its TLS port.
    let nat: Vec<String> = servers
        .iter()
        .map(|n| {
            format!(
                "\"{}:6379\" = \"{}\"",
                n["hostname"].as_str().unwrap(),
                n["tls_endpoint"].as_str().unwrap()
            )
        })
        .collect();
    let target = write(
        &dir,
        "my-redis.toml",
        &format!(
            "system = \"redis\"\nendpoints = {}\nprefix = \"/bench\"\n\n[auth]\nuser = \
             \"bench\"\npassword_env = \"LB_TEST_REDIS_PASSWORD\"\n\n[sentinel]\naddresses = \
             {}\nmaster = \"mymaster\"\nnat_map = {{ {} }}\n\n{}",
            up.toml_list("tls_endpoints"),
            up.toml_list("sentinel_endpoints"),
            nat.join(", "),
            tls_section(&tls_dir, true)
        ),
    );
    let env = [("LB_TEST_REDIS_PASSWORD", bench_pw)];
    // Clients in worker processes: the login reaches them over their stdin.
    let out = run_on_target(
        &dir.join("out"),
        &target,
        &env,
        &["--clients-as", "processes"],
    );
    assert!(
        out.status.success(),
        "run on the Redis target: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_run_is_sound(&dir.join("out"), "my-redis", Some("bench"), bench_pw);
    rt.block_on(async {
        let mut conn = default_conn().await;
        let left = bench_keys(&mut conn).await;
        assert!(left.is_empty(), "the run left keys: {left:?}");
        let theirs: String = redis::cmd("GET")
            .arg("other:keep")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(theirs, "theirs");
        // The ACL refused the user nothing: every key the run touched was its own.
        let denied: Vec<Value> = redis::cmd("ACL")
            .arg("LOG")
            .query_async::<redis::Value>(&mut conn)
            .await
            .map(|v| match v {
                redis::Value::Array(a) => {
                    a.iter().map(|e| Value::String(format!("{e:?}"))).collect()
                }
                _ => Vec::new(),
            })
            .unwrap();
        assert!(denied.is_empty(), "the ACL denied the run: {denied:?}");
        let _: () = redis::cmd("SET")
            .arg("/bench/someone-elses")
            .arg("x")
            .query_async(&mut conn)
            .await
            .unwrap();
    });
    let out = run_on_target(&dir.join("out2"), &target, &env, &[]);
    assert_refused_for(&out, "/bench/someone-elses");
    rt.block_on(async {
        let mut conn = default_conn().await;
        let kept: Option<String> = redis::cmd("GET")
            .arg("/bench/someone-elses")
            .query_async(&mut conn)
            .await
            .unwrap();
        assert_eq!(kept.as_deref(), Some("x"), "a refused run removes nothing");
    });
}

#[test]
fn zookeeper_target_with_a_digest_login_keeps_its_acl_prefix_node() {
    use zookeeper_client as zk;
    let up = Up::start(&["zookeeper"]);
    let eps = up.strings("endpoints").join(",");
    let password = "zk-pw-3e1a";
    let rt = tokio::runtime::Runtime::new().unwrap();
    // The user's prefix node: only `bench` (digest) may read it or create under it.
    let admin = rt.block_on(async {
        let c = zk::Client::connector()
            .with_auth("digest", format!("bench:{password}").as_bytes())
            .connect(&eps)
            .await
            .unwrap();
        let acl = zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all());
        c.create("/bench", b"", &acl).await.unwrap();
        c
    });
    let dir = scratch("target-zookeeper");
    let file = |name: &str, auth: &str| {
        write(
            &dir,
            name,
            &format!(
                "system = \"zookeeper\"\nendpoints = {}\nprefix = \"/bench\"\n{auth}",
                up.toml_list("endpoints")
            ),
        )
    };
    let target = file(
        "zk.toml",
        &format!("[auth]\nuser = \"bench\"\npassword = \"{password}\"\n"),
    );
    let out = run_on_target(&dir.join("out"), &target, &[], &[]);
    assert!(
        out.status.success(),
        "run on the ZooKeeper target: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_run_is_sound(&dir.join("out"), "zk", Some("bench"), password);
    rt.block_on(async {
        admin.sync("/bench").await.unwrap();
        let left = admin.list_children("/bench").await.unwrap();
        assert!(left.is_empty(), "the run left {left:?} under /bench");
        // The prefix node is the user's: kept, with its ACL.
        let (acl, _) = admin.get_acl("/bench").await.unwrap();
        assert!(
            acl.iter()
                .all(|a| a.scheme() == "digest" && a.id().starts_with("bench:")),
            "{acl:?}"
        );
    });
    // Without the login the prefix cannot even be listed: refused before the run.
    let anonymous = file("anon.toml", "");
    let out = run_on_target(&dir.join("out2"), &anonymous, &[], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("not authorized"), "{err}");
    assert!(
        !dir.join("out2").exists(),
        "a refused run made a folder: {err}"
    );
}

#[test]
fn redlock_target_cleans_up_after_a_run_ctrl_c_and_a_killed_run() {
    let (system, prefix) = ("redlock", "/bench");
    let up = Up::start(&[system]);
    let dir = scratch(&format!("target-{system}"));
    let target = write(
        &dir,
        "plain.toml",
        &format!(
            "system = \"{system}\"\nendpoints = {}\nprefix = \"{prefix}\"\n",
            up.toml_list("endpoints")
        ),
    );
    let out = run_on_target(&dir.join("out"), &target, &[], &[]);
    assert!(
        out.status.success(),
        "run on the {system} target: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_run_is_sound(&dir.join("out"), "plain", None, "");
    let rt = tokio::runtime::Runtime::new().unwrap();
    assert_eq!(
        rt.block_on(redlock_keys(&up)),
        Vec::<String>::new(),
        "the run left keys"
    );
    // Ctrl-C in the middle of a cell: the clients stop and what they wrote goes.
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockbench"))
        .arg("run")
        .arg("--target")
        .arg(&target)
        .args(["--duration", "60s", "--clients", "4", "--out"])
        .arg(dir.join("out-interrupted"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let writing = rt.block_on(async {
        for _ in 0..100 {
            if !redlock_keys(&up).await.is_empty() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    });
    assert!(writing, "the interrupted run never wrote a key");
    let code = common::interrupt_and_wait(&mut child, "INT", "lockbench run --target");
    assert_eq!(code, Some(130), "an interrupted run exits 130");
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.contains("key(s) this run left under /bench/"), "{err}");
    rt.block_on(async {
        // Long enough for a detached client to have written again.
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(
            redlock_keys(&up).await,
            Vec::<String>::new(),
            "after Ctrl-C"
        );
    });
    // What a killed run leaves, removed by hand: one run's keys, then the prefix's.
    let first = up.strings("endpoints")[0].clone();
    rt.block_on(async {
        let c = redis::Client::open(format!("redis://{first}/")).unwrap();
        let mut conn = c.get_multiplexed_async_connection().await.unwrap();
        for k in [
            "/bench/0badc0de/k",
            "/bench/0badc0de/k:fence",
            "/bench/feed/k",
        ] {
            let _: () = redis::cmd("SET")
                .arg(k)
                .arg(1)
                .query_async(&mut conn)
                .await
                .unwrap();
        }
    });
    let clean = |run: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockbench"));
        cmd.args(["clean", "--target"]).arg(&target);
        if let Some(r) = run {
            cmd.args(["--run", r]);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["removed"].clone()
    };
    assert_eq!(clean(Some("0badc0de")), 2);
    assert_eq!(
        rt.block_on(redlock_keys(&up)).len(),
        1,
        "only that run's keys"
    );
    assert_eq!(clean(None), 1);
    assert!(rt.block_on(redlock_keys(&up)).is_empty());
}

/// Every key on every Redlock master of `up`.
async fn redlock_keys(up: &Up) -> Vec<String> {
    let mut all = Vec::new();
    for ep in up.strings("endpoints") {
        let c = redis::Client::open(format!("redis://{ep}/")).unwrap();
        let mut conn = c.get_multiplexed_async_connection().await.unwrap();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("*")
            .query_async(&mut conn)
            .await
            .unwrap();
        all.extend(keys.into_iter().map(|k| format!("{k} (on {ep})")));
    }
    all
}

/// The iptables of the images, as the built-in partition picks it (`cluster/partition.rs`).
const IPT: &str = "IPT=iptables; $IPT -w -L -n >/dev/null 2>&1 || IPT=iptables-legacy";

/// The path of the shipped schedule `chaos/<name>.toml`.
fn chaos_file(name: &str) -> String {
    format!("{}/chaos/{name}.toml", env!("CARGO_MANIFEST_DIR"))
}

/// The runs both etcd fault tests make: `chaos/kill-leader.toml` and `chaos/isolate-leader.toml`,
/// predecessor, 26 s cells.
fn etcd_fault_args() -> Vec<String> {
    [
        "--chaos",
        &chaos_file("kill-leader"),
        "--chaos",
        &chaos_file("isolate-leader"),
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(["--strategies", "predecessor", "--duration", "26s"].map(String::from))
    .collect()
}

/// What both etcd fault tests must find, by command on a target and built in on lockbench's
/// own cluster: each schedule's cell safe, with its fault started (and, by `verdicts_and_faults`,
/// the node it hit named).
fn assert_etcd_fault_verdicts(found: &[(String, String, Vec<String>)]) {
    let verdicts: Vec<(&str, &str)> = found
        .iter()
        .map(|(c, s, _)| (c.as_str(), s.as_str()))
        .collect();
    assert_eq!(
        verdicts,
        [("isolate-leader", "safe"), ("kill-leader", "safe")],
        "{found:?}"
    );
    for (cell, _, kinds) in found {
        assert!(!kinds.is_empty(), "{cell}: no fault started");
    }
}

/// The faults of `chaos/kill-leader.toml` and `chaos/isolate-leader.toml`, played on an etcd
/// target through Docker commands (kill and start a container, iptables inside it), judged as
/// the same schedules on lockbench's own etcd cluster are (`etcd_built_in_faults_of_the_same_
/// schedules_are_safe`, a test of its own so that the two runs go side by side): both cells
/// safe, the killed or isolated node the leader the protocol named, every command logged, the
/// nodes all back afterwards. A schedule needing a primitive the commands lack is refused
/// naming it.
#[test]
fn etcd_faults_by_docker_commands_give_the_built_in_verdicts() {
    let up = Up::start(&["etcd"]);
    let nodes: Vec<String> = up.info["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            format!(
                "[[nodes]]\nname = \"{}\"\naddress = \"{}\"\nendpoint = \"{}\"\n",
                n["hostname"].as_str().unwrap(),
                n["network_ip"].as_str().unwrap(),
                n["endpoint"].as_str().unwrap()
            )
        })
        .collect();
    let isolate = format!(
        "docker exec {{node}} sh -c '{IPT}; $IPT -A INPUT -s {{peers}} -j DROP; $IPT -A OUTPUT \
         -d {{peers}} -j DROP'"
    );
    let heal = format!("docker exec {{node}} sh -c '{IPT}; $IPT -F INPUT; $IPT -F OUTPUT'");
    let dir = scratch("target-etcd-faults");
    let target = write(
        &dir,
        "etcd-docker.toml",
        &format!(
            "system = \"etcd\"\nendpoints = {}\nprefix = \"/bench\"\nfaults = true\n\n{}\n\
             [commands]\nkill = \"docker kill {{node}}\"\nrestart = \"docker start \
             {{node}}\"\nisolate = \"{}\"\nheal = \"{}\"\npause = \"docker pause \
             {{node}}\"\nresume = \"docker unpause {{node}}\"\ntimeout = \"30s\"\n",
            up.toml_list("endpoints"),
            nodes.join("\n"),
            isolate.replace('"', "\\\""),
            heal.replace('"', "\\\"")
        ),
    );
    let args = etcd_fault_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_on_target(&dir.join("out"), &target, &[], &args);
    assert!(
        out.status.success(),
        "faults by command on the etcd target: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let by_command = verdicts_and_faults(&latest(&dir.join("out")));
    let log = std::fs::read_to_string(latest(&dir.join("out")).join("commands.jsonl")).unwrap();
    for needle in ["docker kill", "docker start", "-j DROP", "-F INPUT"] {
        assert!(
            log.contains(needle),
            "commands.jsonl has no `{needle}`: {log}"
        );
    }
    let failed: Vec<&str> = log.lines().filter(|l| !l.contains("\"exit\":0")).collect();
    assert!(failed.is_empty(), "commands that failed: {failed:?}");
    // Every container is running again (the undo ran).
    for n in up.info["nodes"].as_array().unwrap() {
        let name = n["hostname"].as_str().unwrap();
        let state = Command::new("docker")
            .args(["inspect", "-f", "{{.State.Running}}", name])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&state.stdout).trim(),
            "true",
            "{name}"
        );
    }
    assert_etcd_fault_verdicts(&by_command);
    assert_pause_by_command(&dir, &target);
    // A pause needs pause commands, which a target without them does not give.
    let text = std::fs::read_to_string(&target).unwrap();
    let no_pause: String = text
        .lines()
        .filter(|l| !l.starts_with("pause =") && !l.starts_with("resume ="))
        .map(|l| format!("{l}\n"))
        .collect();
    let without = write(&dir, "etcd-docker.toml", &no_pause);
    let out = run_on_target(
        &dir.join("out2"),
        &without,
        &[],
        &["--chaos", &chaos_file("pause-node")],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("needs pause on target 'etcd-docker'") && err.contains("cover kill, isolate"),
        "{err}"
    );
}

/// The schedules of `etcd_faults_by_docker_commands_give_the_built_in_verdicts` on lockbench's
/// own etcd cluster, with the built-in faults: the verdicts the faults by command must match.
#[test]
fn etcd_built_in_faults_of_the_same_schedules_are_safe() {
    let dir = scratch("target-etcd-built-in");
    let mut own = Command::new(env!("CARGO_BIN_EXE_lockbench"));
    own.args([
        "run",
        "--systems",
        "etcd",
        "--clients",
        "4",
        "--floor-samples",
        "0",
    ])
    .args(etcd_fault_args())
    .arg("--out")
    .arg(dir.join("own"));
    let own = own.output().unwrap();
    assert!(
        own.status.success(),
        "{}",
        String::from_utf8_lossy(&own.stderr)
    );
    assert_etcd_fault_verdicts(&verdicts_and_faults(&latest(&dir.join("own"))));
}

/// docker pause as the guide's Docker example gives it
/// (docs/book/src/own-clusters.md#faults-through-your-own-tools), through `target`'s commands: the
/// leader frozen once (10-12 s in, for 5 s), with the verdict the schedule expects of etcd
/// (safe, as the built-in pause is), both commands logged with exit 0.
fn assert_pause_by_command(dir: &Path, target: &Path) {
    let chaos = chaos_file("pause-node");
    let pause_args = [
        "--chaos",
        &chaos,
        "--strategies",
        "predecessor",
        "--duration",
        "18s",
    ];
    let out = run_on_target(&dir.join("paused"), target, &[], &pause_args);
    assert!(
        out.status.success(),
        "a pause by command on the etcd target: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let paused = verdicts_and_faults(&latest(&dir.join("paused")));
    assert_eq!(paused.len(), 1, "{paused:?}");
    let (_, verdict, kinds) = &paused[0];
    assert_eq!(verdict, "safe", "{paused:?}");
    assert!(
        kinds.len() == 1 && kinds[0].starts_with("pause-node"),
        "{paused:?}"
    );
    let log = std::fs::read_to_string(latest(&dir.join("paused")).join("commands.jsonl")).unwrap();
    for needle in ["docker pause", "docker unpause"] {
        assert!(
            log.contains(needle),
            "commands.jsonl has no `{needle}`: {log}"
        );
    }
    assert!(
        log.lines().all(|l| l.contains("\"exit\":0")),
        "a pause command failed: {log}"
    );
}

/// Each cell of the run at `run` (by its chaos schedule): its verdict, and the kinds of the
/// faults that started, each with the leader it hit (`kill etcd2`).
fn verdicts_and_faults(run: &Path) -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(run.join("cells")).unwrap() {
        let cell = e.unwrap().file_name().to_string_lossy().into_owned();
        let s = summary(run, &cell);
        let started: Vec<String> = s["faults"]
            .as_array()
            .map(|fs| {
                fs.iter()
                    .filter(|f| f["started"] == true)
                    .map(|f| format!("{} {}", f["kind"].as_str().unwrap(), f["targets"]))
                    .collect()
            })
            .unwrap_or_default();
        let chaos = s["chaos"].as_str().unwrap().to_string();
        out.push((
            chaos,
            s["safety"]["verdict"].as_str().unwrap().to_string(),
            started,
        ));
    }
    out.sort();
    out
}

#[test]
fn redis_target_without_sentinel_logs_in_with_requirepass_alone() {
    // One independent master (a Redlock node of one): no Sentinel, no replica.
    let up = Up::start(&["redlock", "--size", "1"]);
    let endpoint = up.strings("endpoints")[0].clone();
    let password = "requirepass-only-3e7b";
    let rt = tokio::runtime::Runtime::new().unwrap();
    let connect = |login: bool| {
        let ep = endpoint.clone();
        async move {
            let url = if login {
                format!("redis://:{password}@{ep}/")
            } else {
                format!("redis://{ep}/")
            };
            let c = redis::Client::open(url).unwrap();
            c.get_multiplexed_async_connection().await.unwrap()
        }
    };
    rt.block_on(async {
        let mut conn = connect(false).await;
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("requirepass")
            .arg(password)
            .query_async(&mut conn)
            .await
            .unwrap();
    });
    let dir = scratch("target-redis-single");
    let target = write(
        &dir,
        "one-redis.toml",
        &format!(
            "system = \"redis\"\nendpoints = [\"{endpoint}\"]\nprefix = \"/bench\"\n\n[auth]\n\
             password_env = \"LB_TEST_REDIS_PASSWORD\"\n"
        ),
    );
    let env = [("LB_TEST_REDIS_PASSWORD", password)];
    run_soundly(&dir, &target, &env, &[], ("one-redis", None, password));
    rt.block_on(async {
        let mut conn = connect(true).await;
        let left = bench_keys(&mut conn).await;
        assert!(left.is_empty(), "the run left keys: {left:?}");
    });
    // Without the password the server refuses the prefix check, before any run folder.
    let no_login = write(
        &dir,
        "no-login.toml",
        &format!("system = \"redis\"\nendpoints = [\"{endpoint}\"]\nprefix = \"/bench\"\n"),
    );
    let out = run_on_target(&dir.join("out2"), &no_login, &[], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("NOAUTH"), "{err}");
    assert!(!latest_exists(&dir.join("out2")), "{err}");
}
