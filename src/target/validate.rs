//! Turns the raw target file into a [`Target`]: each error names the field and what would be
//! valid.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use super::raw::{RawAuth, RawCommands, RawNode, RawSentinel, RawTarget, RawTls};
use super::{Auth, Commands, PLACEHOLDERS, Secret, Sentinel, Target, TargetNode, Tls};
use crate::spec_error::SpecError;
use crate::system::System;
use crate::workload::validate::Validator;

/// The longest prefix accepted (keys are built under it).
const MAX_PREFIX: usize = 128;

/// The default and the range of a command's deadline.
const COMMAND_TIMEOUT: (Duration, Duration, Duration) = (
    Duration::from_secs(30),
    Duration::from_secs(1),
    Duration::from_secs(600),
);

pub(super) fn target(origin: &str, raw: RawTarget) -> Result<Target, SpecError> {
    let v = Validator { origin };
    let system = system(&v, raw.system)?;
    let endpoints = addresses(&v, "endpoints", raw.endpoints, true)?;
    let prefix = prefix(&v, raw.prefix)?;
    let sentinel = raw.sentinel.map(|s| sentinel(&v, system, s)).transpose()?;
    let auth = raw.auth.map(|a| auth(&v, system, a)).transpose()?;
    let tls = raw.tls.map(|t| tls(&v, system, t)).transpose()?;
    let nodes = nodes(&v, raw.nodes.unwrap_or_default())?;
    let commands = raw.commands.map(|c| commands(&v, c)).transpose()?;
    let faults = raw.faults.unwrap_or(false);
    if commands.is_some() && nodes.is_empty() {
        return Err(v.conflict(
            "[commands] act on nodes, and the file names none: add [[nodes]] entries (name and \
             address) for the servers the commands reach, or remove [commands]"
                .into(),
        ));
    }
    if faults && commands.as_ref().is_none_or(|c| c.primitives().is_empty()) {
        return Err(v.conflict(
            "faults = true, but no [commands] give a fault primitive: add kill and restart, \
             pause and resume, or isolate and heal, or set faults = false"
                .into(),
        ));
    }
    let name = std::path::Path::new(origin)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("target")
        .to_string();
    Ok(Target {
        name,
        system,
        endpoints,
        prefix,
        allow_existing: raw.allow_existing.unwrap_or(false),
        sentinel,
        auth,
        tls,
        nodes,
        commands,
        faults,
    })
}

fn system(v: &Validator, raw: Option<String>) -> Result<System, SpecError> {
    let names: Vec<&str> = crate::system::FACTS.iter().map(|f| f.name).collect();
    let text = raw.ok_or_else(|| {
        v.missing(
            "system",
            &format!("name the cluster's system, one of {}", names.join(", ")),
        )
    })?;
    text.parse::<System>().map_err(|_| {
        v.invalid(
            "system",
            format!("\"{text}\""),
            &format!("valid systems are {}", names.join(", ")),
        )
    })
}

/// `host:port` entries: non-empty host, port 1 to 65535, no duplicates.
fn addresses(
    v: &Validator,
    field: &str,
    raw: Option<Vec<String>>,
    required: bool,
) -> Result<Vec<String>, SpecError> {
    let list = match raw {
        Some(l) => l,
        None if required => {
            return Err(v.missing(
                field,
                "list the servers as \"host:port\", e.g. [\"10.0.0.1:2379\"]",
            ));
        }
        None => Vec::new(),
    };
    if list.is_empty() {
        return Err(v.invalid(field, "[]", "list at least one server as \"host:port\""));
    }
    let mut seen = BTreeSet::new();
    for (i, a) in list.iter().enumerate() {
        let path = format!("{field}[{i}]");
        let ok = a.trim().rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
        });
        if !ok {
            return Err(v.invalid(
                &path,
                format!("\"{a}\""),
                "write \"host:port\" (a host name or IP, then a port from 1 to 65535)",
            ));
        }
        if !seen.insert(a.trim()) {
            return Err(v.invalid(&path, format!("\"{a}\""), "each server once"));
        }
    }
    Ok(list.into_iter().map(|a| a.trim().to_string()).collect())
}

/// `/` then path segments of letters, digits, `.`, `_` and `-`; no `..`, no trailing `/`: a
/// ZooKeeper path, an etcd key prefix and a Redis key prefix alike, with nothing a glob reads.
fn prefix(v: &Validator, raw: Option<String>) -> Result<String, SpecError> {
    let p = raw.ok_or_else(|| {
        v.missing(
            "prefix",
            "give the key prefix lockbench owns on this cluster, e.g. \"/lockbench\": every \
             key it writes lives under it, and it touches nothing else",
        )
    })?;
    let segment_ok = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    let ok = p.len() <= MAX_PREFIX
        && p.strip_prefix('/')
            .is_some_and(|rest| rest.split('/').all(segment_ok));
    if !ok {
        return Err(v.invalid(
            "prefix",
            format!("\"{p}\""),
            &format!(
                "write '/' then path segments of letters, digits, '.', '_' or '-', such as \
                 \"/lockbench\" or \"/team/bench\" (not \"/\" alone, no \"..\", no trailing \
                 '/', at most {MAX_PREFIX} characters)"
            ),
        ));
    }
    Ok(p)
}

fn sentinel(v: &Validator, system: System, raw: RawSentinel) -> Result<Sentinel, SpecError> {
    if system != System::Redis {
        return Err(v.conflict(format!(
            "[sentinel] is for Redis with Sentinel, and this target's system is {system}: \
             remove [sentinel], or set system = \"redis\""
        )));
    }
    let addresses = addresses(v, "sentinel.addresses", raw.addresses, true)?;
    let master = raw.master.filter(|m| !m.trim().is_empty()).ok_or_else(|| {
        v.missing(
            "sentinel.master",
            "give the master's name as the Sentinels know it (sentinel monitor NAME ...)",
        )
    })?;
    let mut nat_map = std::collections::BTreeMap::new();
    for (reported, reachable) in raw.nat_map.unwrap_or_default() {
        let field = format!("sentinel.nat_map.\"{reported}\"");
        let pair = self::addresses(
            v,
            &field,
            Some(vec![reported.clone(), reachable.clone()]),
            true,
        )
        .map_err(|_| {
            v.invalid(
                &field,
                format!("\"{reported}\" = \"{reachable}\""),
                "map \"host:port\" as the Sentinels report a server to the \"host:port\" \
                     this machine reaches it at, e.g. \"redis-0:6379\" = \"10.0.1.5:6379\"",
            )
        })?;
        nat_map.insert(pair[0].clone(), pair[1].clone());
    }
    Ok(Sentinel {
        addresses,
        master,
        nat_map,
    })
}

fn auth(v: &Validator, system: System, raw: RawAuth) -> Result<Auth, SpecError> {
    if system == System::Memcached {
        return Err(v.conflict(
            "[auth]: lockbench's Memcached client speaks the text protocol, which has no \
             authentication: remove [auth]"
                .into(),
        ));
    }
    let password = match (raw.password, raw.password_env) {
        (Some(_), Some(_)) => {
            return Err(v.conflict(
                "[auth] gives both 'password' and 'password_env': keep one (password_env \
                 keeps the secret out of the file)"
                    .into(),
            ));
        }
        (Some(p), None) => Secret::Inline(p),
        (None, Some(var)) => {
            let ok = !var.is_empty()
                && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !var.starts_with(|c: char| c.is_ascii_digit());
            if !ok {
                return Err(v.invalid(
                    "auth.password_env",
                    format!("\"{var}\""),
                    "name an environment variable: letters, digits and '_', not starting \
                     with a digit",
                ));
            }
            Secret::Env(var)
        }
        (None, None) => {
            return Err(v.missing(
                "auth.password",
                "give 'password_env' (the variable that holds it) or 'password'",
            ));
        }
    };
    let user = raw.user.filter(|u| !u.trim().is_empty());
    let needs_user = [
        System::Zookeeper,
        System::Etcd,
        System::Postgres,
        System::Mariadb,
    ];
    if user.is_none() && needs_user.contains(&system) {
        return Err(v.missing(
            "auth.user",
            &format!("{system} authenticates a user and a password: add user = \"...\""),
        ));
    }
    Ok(Auth { user, password })
}

fn tls(v: &Validator, system: System, raw: RawTls) -> Result<Tls, SpecError> {
    if !matches!(system, System::Etcd | System::Redis | System::Redlock) {
        return Err(v.conflict(format!(
            "[tls]: TLS is supported for etcd, redis and redlock targets, and this target's \
             system is {system}: remove [tls]"
        )));
    }
    let path = |field: &str, p: Option<String>| {
        p.filter(|s| !s.trim().is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| {
                v.missing(
                    field,
                    "give the path of a PEM file (relative to where lockbench runs)",
                )
            })
    };
    let ca = path("tls.ca", raw.ca)?;
    let client = match (raw.cert, raw.key) {
        (None, None) => None,
        (cert, key) => Some((path("tls.cert", cert)?, path("tls.key", key)?)),
    };
    Ok(Tls { ca, client })
}

fn nodes(v: &Validator, raw: Vec<RawNode>) -> Result<Vec<TargetNode>, SpecError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (i, n) in raw.into_iter().enumerate() {
        let field = |f: &str| format!("nodes[{i}].{f}");
        let name = n
            .name
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| v.missing(&field("name"), "name the node ({node} in the commands)"))?;
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            return Err(v.invalid(
                &field("name"),
                format!("\"{name}\""),
                "use letters, digits, '.', '_' or '-' (it is put into shell commands)",
            ));
        }
        if !seen.insert(name.clone()) {
            return Err(v.invalid(&field("name"), format!("\"{name}\""), "each name once"));
        }
        let address = n.address.filter(|s| !s.trim().is_empty()).ok_or_else(|| {
            v.missing(
                &field("address"),
                "give the host name or IP the commands reach it at ({address})",
            )
        })?;
        if !address
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':'))
        {
            return Err(v.invalid(
                &field("address"),
                format!("\"{address}\""),
                "give a host name or IP: letters, digits, '.', '_', '-' or ':' (it is put into \
                 shell commands)",
            ));
        }
        let endpoint = match n.endpoint {
            None => None,
            Some(e) => Some(
                addresses(v, &field("endpoint"), Some(vec![e]), true)?
                    .pop()
                    .expect("one address in, one out"),
            ),
        };
        out.push(TargetNode {
            name,
            address,
            endpoint,
        });
    }
    Ok(out)
}

fn commands(v: &Validator, raw: RawCommands) -> Result<Commands, SpecError> {
    let pair = |(a, an): (Option<String>, &str), (b, bn): (Option<String>, &str)| {
        let check = |field: &str, t: &String| -> Result<(), SpecError> {
            placeholders(v, &format!("commands.{field}"), t)
        };
        match (a, b) {
            (None, None) => Ok(None),
            (Some(a), Some(b)) => {
                check(an, &a)?;
                check(bn, &b)?;
                Ok(Some((a, b)))
            }
            (Some(_), None) => Err(v.missing(
                &format!("commands.{bn}"),
                &format!("'{an}' needs its undo '{bn}': lockbench always undoes a fault"),
            )),
            (None, Some(_)) => Err(v.missing(
                &format!("commands.{an}"),
                &format!("'{bn}' is the undo of '{an}': give '{an}' too, or remove '{bn}'"),
            )),
        }
    };
    let (default, min, max) = COMMAND_TIMEOUT;
    Ok(Commands {
        kill: pair((raw.kill, "kill"), (raw.restart, "restart"))?,
        pause: pair((raw.pause, "pause"), (raw.resume, "resume"))?,
        isolate: pair((raw.isolate, "isolate"), (raw.heal, "heal"))?,
        timeout: v.opt_duration(
            "commands.timeout",
            raw.timeout.as_deref(),
            default,
            min,
            max,
        )?,
    })
}

/// A template uses only [`PLACEHOLDERS`], and is not empty.
fn placeholders(v: &Validator, field: &str, template: &str) -> Result<(), SpecError> {
    if template.trim().is_empty() {
        return Err(v.invalid(field, "\"\"", "give the command to run"));
    }
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').map(|c| open + c + 1);
        let Some(close) = close else {
            return Err(v.invalid(
                field,
                format!("\"{template}\""),
                "a '{' opens no placeholder: close it, e.g. {node}",
            ));
        };
        let found = &rest[open..close];
        if !PLACEHOLDERS.contains(&found) {
            return Err(v.invalid(
                field,
                format!("\"{template}\""),
                &format!("{found} is no placeholder: use {}", PLACEHOLDERS.join(", ")),
            ));
        }
        rest = &rest[close..];
    }
    Ok(())
}
