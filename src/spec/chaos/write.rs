//! A validated schedule written back in the schedule file's own syntax, so `plan.toml` and
//! `cell.json` read back equal through [`Schedule::from_str`] (and a user can copy it to a file).

use std::time::Duration;

use toml::{Table, Value};

use super::{ClockSkew, FaultKind, FaultSpec, Schedule, Timing, data_name};
use crate::spec::Expectations;

fn text(d: Duration) -> Value {
    Value::String(humantime::format_duration(d).to_string())
}

fn string(s: &str) -> Value {
    Value::String(s.to_string())
}

/// The kind and its parameters into `t` (a `[[faults]]` table or a mixed entry).
fn put_kind(t: &mut Table, kind: &FaultKind) {
    let mut put = |k: &str, v: Value| {
        t.insert(k.to_string(), v);
    };
    put("kind", string(kind.name()));
    match kind {
        FaultKind::Kill { target, data } => {
            put("target", string(target.name()));
            put("data", string(data_name(*data)));
        }
        FaultKind::Partition { shape, clients } => {
            put("shape", string(shape.name()));
            put("clients", Value::Boolean(*clients));
        }
        FaultKind::PauseNode { target } => put("target", string(target.name())),
        FaultKind::PauseClient { target } => put("target", string(target.name())),
        FaultKind::Clock { target, skew } => {
            put("target", string(target.name()));
            match *skew {
                ClockSkew::Jump { by } => {
                    put("mode", string("jump"));
                    put("by", text(by));
                }
                ClockSkew::Fast { rate } => {
                    put("mode", string("fast"));
                    put("rate", Value::Float(rate));
                }
            }
        }
        FaultKind::Mixed { kinds } => put(
            "kinds",
            Value::Array(
                kinds
                    .iter()
                    .map(|k| {
                        let mut e = Table::new();
                        put_kind(&mut e, k);
                        Value::Table(e)
                    })
                    .collect(),
            ),
        ),
    }
}

fn fault(f: &FaultSpec) -> Value {
    let mut t = Table::new();
    put_kind(&mut t, &f.kind);
    match f.timing {
        Timing::At(at) => {
            t.insert("start".into(), text(at));
        }
        Timing::Every { every, jitter } => {
            t.insert("every".into(), text(every));
            t.insert("jitter".into(), text(jitter));
        }
    }
    let window = match f.kind {
        FaultKind::Kill { .. } => "restart_after",
        _ => "duration",
    };
    t.insert(window.into(), text(f.duration));
    Value::Table(t)
}

/// `expect` as the workload writer writes it: a bare verdict, or a table with `default`.
fn expect(e: &Expectations) -> Value {
    if e.entries.is_empty() {
        return string(e.default.name());
    }
    let mut t = Table::new();
    t.insert("default".into(), string(e.default.name()));
    for &(system, strategy, x) in &e.entries {
        t.insert(Expectations::selector(system, strategy), string(x.name()));
    }
    Value::Table(t)
}

impl Schedule {
    /// The schedule as a table of a schedule file: [`Schedule::from_str`] reads it back equal.
    pub fn to_table(&self) -> Table {
        let mut t = Table::new();
        t.insert("name".into(), string(&self.name));
        t.insert("seed".into(), Value::Integer(self.seed as i64));
        if let Some(systems) = &self.systems {
            let names = systems.iter().map(|s| string(s.name())).collect();
            t.insert("systems".into(), Value::Array(names));
        }
        if let Some(n) = self.cluster_size {
            t.insert("cluster_size".into(), Value::Integer(n as i64));
        }
        if let Some(e) = &self.expect {
            t.insert("expect".into(), expect(e));
        }
        // An empty array of tables is written as `faults = []`, which reads back as no faults.
        t.insert(
            "faults".into(),
            Value::Array(self.faults.iter().map(fault).collect()),
        );
        t
    }
}
