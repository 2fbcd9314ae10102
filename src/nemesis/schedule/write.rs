//! A validated schedule written back in the schedule file's own syntax, so `plan.toml` and
//! `cell.json` read back equal through [`Schedule::from_str`] (and a user can copy it to a file).

use std::time::Duration;

use toml::{Table, Value};

use super::{FaultSpec, Schedule, Timing};
use crate::fault;
use crate::workload::Expectations;

fn text(d: Duration) -> Value {
    Value::String(humantime::format_duration(d).to_string())
}

fn string(s: &str) -> Value {
    Value::String(s.to_string())
}

fn fault_table(f: &FaultSpec) -> Value {
    let mut t = Table::new();
    fault::write(&mut t, &f.kind);
    match f.timing {
        Timing::At(at) => {
            t.insert("start".into(), text(at));
        }
        Timing::Every { every, jitter } => {
            t.insert("every".into(), text(every));
            t.insert("jitter".into(), text(jitter));
        }
    }
    t.insert(f.kind.window_field().into(), text(f.duration));
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
        if let Some(why) = &self.skipped_because {
            t.insert("skipped_because".into(), string(why));
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
            Value::Array(self.faults.iter().map(fault_table).collect()),
        );
        t
    }
}
