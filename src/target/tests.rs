use std::path::PathBuf;
use std::time::Duration;

use super::*;

const ETCD: &str = r#"
system = "etcd"
endpoints = ["10.0.0.1:2379", "10.0.0.2:2379", "10.0.0.3:2379"]
prefix = "/lockbench"
faults = true
[auth]
user = "bench"
password = "s3cret-inline"
[tls]
ca = "certs/ca.pem"
cert = "certs/client.pem"
key = "certs/client-key.pem"
[[nodes]]
name = "etcd1"
address = "10.0.0.1"
[[nodes]]
name = "etcd2"
address = "10.0.0.2"
[commands]
kill = "ssh {address} sudo systemctl kill etcd"
restart = "ssh {address} sudo systemctl start etcd"
isolate = "ssh {address} sudo iptables -A INPUT -s {peers} -j DROP"
heal = "ssh {address} sudo iptables -F INPUT"
timeout = "20s"
"#;

fn err(text: &str) -> String {
    Target::from_str(text, "t/x.toml").unwrap_err().to_string()
}

#[test]
fn a_full_etcd_target_reads_back_as_written() {
    let t = Target::from_str(ETCD, "targets/prod-etcd.toml").unwrap();
    assert_eq!(t.name, "prod-etcd");
    assert_eq!(t.system, System::Etcd);
    assert_eq!(t.endpoints.len(), 3);
    assert_eq!(t.prefix, "/lockbench");
    assert!(
        !t.allow_existing,
        "a prefix with data is refused unless told"
    );
    assert!(t.faults);
    let auth = t.auth.clone().unwrap();
    assert_eq!(auth.user.as_deref(), Some("bench"));
    assert_eq!(auth.password.reveal().unwrap(), "s3cret-inline");
    assert_eq!(
        t.tls.clone().unwrap().client,
        Some((
            PathBuf::from("certs/client.pem"),
            PathBuf::from("certs/client-key.pem")
        ))
    );
    let c = t.commands.clone().unwrap();
    assert_eq!(c.primitives(), ["kill", "isolate"]);
    assert_eq!(c.timeout, Duration::from_secs(20));
    // {peers} is every other node's address.
    let peers: Vec<&TargetNode> = t.nodes[1..].iter().collect();
    assert_eq!(
        render(&c.isolate.unwrap().0, &t.nodes[0], &peers),
        "ssh 10.0.0.1 sudo iptables -A INPUT -s 10.0.0.2 -j DROP"
    );
}

#[test]
fn the_record_names_the_target_and_never_its_secret() {
    let t = Target::from_str(ETCD, "t/etcd.toml").unwrap();
    let text = t.record().to_string();
    assert!(!text.contains("s3cret-inline"), "{text}");
    assert!(text.contains("(given in the file; not recorded)"), "{text}");
    assert!(text.contains("\"prefix\":\"/lockbench\""), "{text}");
    assert!(
        text.contains("\"fault_primitives\":[\"kill\",\"isolate\"]"),
        "{text}"
    );
    // Nor does Debug print it.
    assert!(!format!("{t:?}").contains("s3cret-inline"));
    let env = ETCD.replace(
        "password = \"s3cret-inline\"",
        "password_env = \"LB_TEST_TARGET_PW_UNSET\"",
    );
    let t = Target::from_str(&env, "t/etcd.toml").unwrap();
    assert!(
        t.record()
            .to_string()
            .contains("(from $LB_TEST_TARGET_PW_UNSET; not recorded)")
    );
    let e = t.auth.unwrap().password.reveal().unwrap_err();
    assert!(
        e.contains("$LB_TEST_TARGET_PW_UNSET") && e.contains("export"),
        "{e}"
    );
}

#[test]
fn a_redis_target_with_sentinel_and_a_bare_password() {
    let t = Target::from_str(
        "system = \"redis\"\nendpoints = [\"r1:6379\", \"r2:6379\"]\nprefix = \"/team/bench\"\n\
         [sentinel]\naddresses = [\"s1:26379\"]\nmaster = \"mymaster\"\n\
         [auth]\npassword_env = \"REDIS_PW\"\n",
        "t/r.toml",
    )
    .unwrap();
    assert_eq!(t.sentinel.unwrap().master, "mymaster");
    assert_eq!(t.auth.unwrap().user, None, "requirepass alone");
    assert!(!t.faults && t.commands.is_none() && t.nodes.is_empty());
}

#[test]
fn a_sentinel_nat_map_maps_reported_addresses_to_reachable_ones() {
    let t = Target::from_str(
        "system = \"redis\"\nendpoints = [\"127.0.0.1:7001\"]\nprefix = \"/b\"\n\
         [sentinel]\naddresses = [\"127.0.0.1:7101\"]\nmaster = \"m\"\n\
         nat_map = { \"redis-0:6379\" = \"127.0.0.1:7001\" }\n",
        "t/r.toml",
    )
    .unwrap();
    let s = t.sentinel.as_ref().unwrap();
    assert_eq!(s.nat_map["redis-0:6379"], "127.0.0.1:7001");
    assert_eq!(
        t.record()["sentinel"]["nat_map"]["redis-0:6379"],
        "127.0.0.1:7001"
    );
    let e = err(
        "system = \"redis\"\nendpoints = [\"a:1\"]\nprefix = \"/b\"\n[sentinel]\n\
         addresses = [\"s:1\"]\nmaster = \"m\"\nnat_map = { \"redis-0\" = \"a:1\" }\n",
    );
    assert!(
        e.contains("sentinel.nat_map.\"redis-0\"") && e.contains("host:port"),
        "{e}"
    );
}

#[test]
fn missing_and_malformed_fields_name_the_file_the_field_and_the_fix() {
    let e = err("endpoints = [\"a:1\"]\nprefix = \"/p\"\n");
    assert!(
        e.starts_with("t/x.toml: field 'system' is missing") && e.contains("etcd"),
        "{e}"
    );
    let e = err("system = \"consul\"\nendpoints = [\"a:1\"]\nprefix = \"/p\"\n");
    assert!(e.contains("field 'system' = \"consul\" is invalid"), "{e}");
    let e = err("system = \"etcd\"\nprefix = \"/p\"\n");
    assert!(
        e.contains("'endpoints' is missing") && e.contains("host:port"),
        "{e}"
    );
    for bad in [
        "[]",
        "[\"nohost\"]",
        "[\"h:0\"]",
        "[\"h:99999\"]",
        "[\":80\"]",
    ] {
        let e = err(&format!(
            "system = \"etcd\"\nendpoints = {bad}\nprefix = \"/p\"\n"
        ));
        assert!(e.contains("field 'endpoints"), "{bad}: {e}");
    }
    let e = err("system = \"etcd\"\nendpoints = [\"a:1\", \"a:1\"]\nprefix = \"/p\"\n");
    assert!(
        e.contains("'endpoints[1]'") && e.contains("each server once"),
        "{e}"
    );
    let e = err("system = \"etcd\"\nendpoints = [\"a:1\"]\n");
    assert!(
        e.contains("'prefix' is missing") && e.contains("touches nothing else"),
        "{e}"
    );
    for bad in ["/", "lockbench", "/a/", "/a/../b", "/a b", "/a*", "//a"] {
        let e = err(&format!(
            "system = \"etcd\"\nendpoints = [\"a:1\"]\nprefix = \"{bad}\"\n"
        ));
        assert!(
            e.contains("field 'prefix'") && e.contains("\"/lockbench\""),
            "{bad}: {e}"
        );
    }
    let e = err("system = \"etcd\"\nendpoints = [\"a:1\"]\nprefix = \"/p\"\nport = 1\n");
    assert!(e.starts_with("t/x.toml:4:") && e.contains("port"), "{e}");
}

#[test]
fn auth_tls_and_sentinel_are_checked_against_the_system() {
    let base = |system: &str, extra: &str| {
        format!("system = \"{system}\"\nendpoints = [\"a:1\"]\nprefix = \"/p\"\n{extra}")
    };
    let e = err(&base(
        "etcd",
        "[sentinel]\naddresses = [\"s:1\"]\nmaster = \"m\"\n",
    ));
    assert!(
        e.contains("[sentinel] is for Redis") && e.contains("system is etcd"),
        "{e}"
    );
    let e = err(&base("redis", "[sentinel]\naddresses = [\"s:1\"]\n"));
    assert!(e.contains("'sentinel.master' is missing"), "{e}");
    let e = err(&base("zookeeper", "[tls]\nca = \"ca.pem\"\n"));
    assert!(
        e.contains("[tls]") && e.contains("etcd, redis and redlock"),
        "{e}"
    );
    let e = err(&base("etcd", "[tls]\ncert = \"c.pem\"\n"));
    assert!(e.contains("'tls.ca' is missing"), "{e}");
    let e = err(&base("etcd", "[tls]\nca = \"ca.pem\"\ncert = \"c.pem\"\n"));
    assert!(e.contains("'tls.key' is missing"), "{e}");
    let e = err(&base("etcd", "[auth]\npassword = \"x\"\n"));
    assert!(e.contains("'auth.user' is missing"), "{e}");
    let e = err(&base("zookeeper", "[auth]\nuser = \"u\"\n"));
    assert!(
        e.contains("'auth.password' is missing") && e.contains("password_env"),
        "{e}"
    );
    let e = err(&base(
        "redis",
        "[auth]\npassword = \"x\"\npassword_env = \"X\"\n",
    ));
    assert!(e.contains("both 'password' and 'password_env'"), "{e}");
    let e = err(&base("redis", "[auth]\npassword_env = \"1BAD-NAME\"\n"));
    assert!(e.contains("'auth.password_env'"), "{e}");
    let e = err(&base("memcached", "[auth]\npassword = \"x\"\n"));
    assert!(e.contains("no authentication"), "{e}");
}

#[test]
fn commands_need_nodes_their_undo_and_known_placeholders() {
    let base = |extra: &str| {
        format!(
            "system = \"zookeeper\"\nendpoints = [\"a:1\"]\nprefix = \"/p\"\n\
             [[nodes]]\nname = \"zk1\"\naddress = \"a\"\n{extra}"
        )
    };
    let e = err(&base("[commands]\nkill = \"docker kill {node}\"\n"));
    assert!(
        e.contains("'commands.restart' is missing") && e.contains("undo"),
        "{e}"
    );
    let e = err(&base("[commands]\nresume = \"docker unpause {node}\"\n"));
    assert!(e.contains("'commands.pause' is missing"), "{e}");
    let e = err(&base(
        "[commands]\npause = \"docker pause {host}\"\nresume = \"docker unpause {node}\"\n",
    ));
    assert!(
        e.contains("{host} is no placeholder") && e.contains("{peers}"),
        "{e}"
    );
    let e = err(&base(
        "[commands]\npause = \"docker pause {node\"\nresume = \"docker unpause {node}\"\n",
    ));
    assert!(
        e.contains("'commands.pause'") && e.contains("opens no placeholder"),
        "{e}"
    );
    let e = err(&base(
        "[commands]\npause = \"p {node}\"\nresume = \"r {node}\"\ntimeout = \"0s\"\n",
    ));
    assert!(e.contains("'commands.timeout'"), "{e}");
    // Faults only when asked, and only with a primitive to run.
    let e = err(&format!("faults = true\n{}", base("")));
    assert!(
        e.contains("faults = true") && e.contains("kill and restart"),
        "{e}"
    );
    let t = Target::from_str(
        &base("[commands]\npause = \"docker pause {node}\"\nresume = \"docker unpause {node}\"\n"),
        "t/z.toml",
    )
    .unwrap();
    assert!(!t.faults, "commands alone do not turn faults on");
    assert_eq!(t.commands.unwrap().primitives(), ["pause"]);
    // Commands without nodes act on nothing.
    let e = err(
        "system = \"etcd\"\nendpoints = [\"a:1\"]\nprefix = \"/p\"\n\
         [commands]\nkill = \"k {node}\"\nrestart = \"r {node}\"\n",
    );
    assert!(e.contains("add [[nodes]]"), "{e}");
    let e = err(&format!(
        "{}[[nodes]]\nname = \"zk1\"\naddress = \"b\"\n",
        base("")
    ));
    assert!(
        e.contains("'nodes[1].name'") && e.contains("each name once"),
        "{e}"
    );
    let e = err(&format!(
        "{}[[nodes]]\nname = \"zk 2\"\naddress = \"b\"\n",
        base("")
    ));
    assert!(e.contains("shell"), "{e}");
    let e = err(&format!("{}[[nodes]]\nname = \"zk2\"\n", base("")));
    assert!(e.contains("'nodes[1].address' is missing"), "{e}");
}

#[test]
fn an_unreadable_file_says_so() {
    let e = Target::from_file(std::path::Path::new("t/none.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("t/none.toml: cannot read the target file"),
        "{e}"
    );
}
