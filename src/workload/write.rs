//! A validated workload written back in the workload file's own syntax, so `plan.toml` and
//! `cell.json` can be read again by the same parser (and a user can copy a cell into a file).

use std::time::Duration;

use toml::{Table, Value};

use super::{Arrival, ClientsAs, Expectations, Stop, Workload};
use crate::workload::{DurationDist, KeyDistribution};

fn text(d: Duration) -> Value {
    Value::String(humantime::format_duration(d).to_string())
}

fn table<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Table(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn dist(d: &DurationDist) -> Value {
    let kind = |k: &str| Value::String(k.to_string());
    match *d {
        DurationDist::Fixed(v) => table([("kind", kind("fixed")), ("value", text(v))]),
        DurationDist::Uniform { min, max } => table([
            ("kind", kind("uniform")),
            ("min", text(min)),
            ("max", text(max)),
        ]),
        DurationDist::Exponential { mean } => {
            table([("kind", kind("exponential")), ("mean", text(mean))])
        }
    }
}

impl Workload {
    /// The workload as a table of a workload file: [`Workload::from_str`] reads it back equal.
    pub fn to_table(&self) -> Table {
        let mut t = Table::new();
        let mut put = |k: &str, v: Value| {
            t.insert(k.to_string(), v);
        };
        put("name", Value::String(self.name.clone()));
        put("clients", Value::Integer(i64::from(self.clients)));
        put("keys", Value::Integer(i64::from(self.keys)));
        put(
            "key_distribution",
            match self.key_distribution {
                KeyDistribution::Uniform => Value::String("uniform".into()),
                KeyDistribution::Zipf { exponent } => table([
                    ("kind", Value::String("zipf".into())),
                    ("exponent", Value::Float(exponent)),
                ]),
            },
        );
        put("hold", dist(&self.hold));
        if self.arrival == Arrival::Closed {
            // Open arrival has no think time: the schedule sets the pace, and the file refuses one.
            put("think", dist(&self.think));
        }
        put(
            "arrival",
            match self.arrival {
                Arrival::Closed => Value::String("closed".into()),
                Arrival::Open { rate_per_s } => table([
                    ("kind", Value::String("open".into())),
                    ("rate_per_s", Value::Float(rate_per_s)),
                ]),
            },
        );
        match (self.stampede, self.stop) {
            // With a stampede the rounds end the run; the file states no stop of its own.
            (Some(s), _) => put(
                "stampede",
                table([("rounds", Value::Integer(i64::from(s.rounds)))]),
            ),
            (None, Stop::Duration(d)) => put("duration", text(d)),
            (None, Stop::Acquisitions(n)) => put("acquisitions", Value::Integer(n as i64)),
        }
        put("warmup", text(self.warmup));
        put("lease_ttl", text(self.lease_ttl));
        put("renew", Value::Boolean(self.renew));
        put("acquire_timeout", text(self.acquire_timeout));
        put("retry_backoff", text(self.retry.initial));
        put("retry_backoff_max", text(self.retry.max));
        put("resolve_timeout", text(self.resolve_timeout));
        put("poll_interval", text(self.poll_interval));
        // Written only when set, so a workload without relays reads as it always did.
        if !self.client_latency.base.is_zero() {
            put("client_latency", text(self.client_latency.base));
        }
        if !self.client_latency.jitter.is_zero() {
            put("client_jitter", text(self.client_latency.jitter));
        }
        if !self.peer_latency.base.is_zero() {
            put("peer_latency", text(self.peer_latency.base));
        }
        if !self.peer_latency.jitter.is_zero() {
            put("peer_jitter", text(self.peer_latency.jitter));
        }
        put(
            "strategies",
            Value::Array(
                self.strategies
                    .iter()
                    .map(|s| Value::String(s.name().to_string()))
                    .collect(),
            ),
        );
        put("seed", Value::Integer(self.seed as i64));
        put("clients_as", Value::String(self.clients_as.name().into()));
        if let ClientsAs::Processes { per_process } = self.clients_as {
            put(
                "clients_per_process",
                Value::Integer(i64::from(per_process)),
            );
        }
        put("resource", Value::String(self.resource.name().into()));
        let expect = &self.expect;
        if expect.entries.is_empty() {
            put("expect", Value::String(expect.default.name().into()));
        } else {
            let mut e = toml::map::Map::new();
            e.insert(
                "default".into(),
                Value::String(expect.default.name().into()),
            );
            for &(system, strategy, x) in &expect.entries {
                e.insert(
                    Expectations::selector(system, strategy),
                    Value::String(x.name().into()),
                );
            }
            put("expect", Value::Table(e));
        }
        if self.crash_between_steps_every > 0 {
            // Absent means never: only a workload that crashes says so.
            put(
                "crash_between_steps_every",
                Value::Integer(i64::from(self.crash_between_steps_every)),
            );
        }
        self.lock.put(&mut t);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_workload_reads_back_equal() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "toml") {
                continue;
            }
            let w = Workload::from_file(&path).unwrap();
            let text = toml::to_string(&w.to_table()).unwrap();
            let back = Workload::from_str(&text, "written")
                .unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()));
            assert_eq!(back, w, "{}", path.display());
            n += 1;
        }
        assert!(n >= 7, "only {n} workloads found");
    }

    #[test]
    fn open_loop_zipf_and_odd_durations_read_back_equal() {
        let src = r#"
            clients = 3
            keys = 9
            key_distribution = { kind = "zipf", exponent = 1.25 }
            hold = { kind = "exponential", mean = "1ms 250us" }
            arrival = { kind = "open", rate_per_s = 123.5 }
            acquisitions = 1000
            lease_ttl = "2s"
            renew = false
            strategies = ["predecessor", "native"]
            seed = 42
            clients_as = "processes"
            clients_per_process = 2
            resource = "unfenced"
            expect = { default = "unsafe", redis = "safe", "etcd/native" = "safe" }
            crash_between_steps_every = 7
        "#;
        let w = Workload::from_str(src, "odd").unwrap();
        let text = toml::to_string(&w.to_table()).unwrap();
        assert!(text.contains("mean = \"1ms 250us\""), "{text}");
        assert!(text.contains("clients_per_process = 2"), "{text}");
        assert!(text.contains("crash_between_steps_every = 7"), "{text}");
        assert_eq!(Workload::from_str(&text, "odd").unwrap(), w, "{text}");
        let closed = src
            .replace("arrival = { kind = \"open\", rate_per_s = 123.5 }", "")
            .replace(
                "lease_ttl",
                "think = { kind = \"uniform\", min = \"0s\", max = \"1500us\" }\nlease_ttl",
            );
        let w = Workload::from_str(&closed, "closed").unwrap();
        let text = toml::to_string(&w.to_table()).unwrap();
        assert!(text.contains("max = \"1ms 500us\""), "{text}");
        assert_eq!(Workload::from_str(&text, "closed").unwrap(), w, "{text}");
    }
}
