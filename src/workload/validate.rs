//! Turns the raw file into a [`Workload`]: ranges, units, kinds and combinations, each error
//! naming the field and what would be valid.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use super::expect::{parse_expect, parse_selector};
use super::raw::{RawDist, RawKind, RawWorkload};
use super::{
    Arrival, CLIENTS, ClientsAs, Expectations, RUN_DURATION, SpecError, Stampede, Stop, Workload,
};
use crate::recipe::{BOTH_STRATEGIES, Strategy};
use crate::resource::ResourceMode;
use crate::workload::{DurationDist, KeyDistribution};

const KEYS: (i64, i64) = (1, 100_000);
const ACQUISITIONS: (i64, i64) = (1, 1_000_000_000);
const ROUNDS: (i64, i64) = (1, 1_000_000);
const CRASH_EVERY: (i64, i64) = (0, 1_000_000);
const MAX_RATE: f64 = 1_000_000.0;
const MAX_EXPONENT: f64 = 10.0;
const HOUR: Duration = Duration::from_secs(3600);

pub(crate) struct Validator<'a> {
    pub(crate) origin: &'a str,
}

impl Validator<'_> {
    pub(crate) fn range(
        &self,
        field: &str,
        v: Option<i64>,
        default: Option<i64>,
        r: (i64, i64),
    ) -> Result<i64, SpecError> {
        let v = match (v, default) {
            (Some(v), _) | (None, Some(v)) => v,
            (None, None) => {
                return Err(
                    self.missing(field, &format!("set it to a number in {}..={}", r.0, r.1))
                );
            }
        };
        if v < r.0 || v > r.1 {
            return Err(self.out_of_range(field, v, &format!("{}..={}", r.0, r.1)));
        }
        Ok(v)
    }

    pub(crate) fn out_of_range(
        &self,
        field: &str,
        value: impl fmt::Display,
        valid: &str,
    ) -> SpecError {
        SpecError::OutOfRange {
            origin: self.origin.into(),
            field: field.into(),
            value: value.to_string(),
            valid: valid.into(),
        }
    }

    pub(crate) fn invalid(
        &self,
        field: &str,
        value: impl fmt::Display,
        expected: &str,
    ) -> SpecError {
        SpecError::Invalid {
            origin: self.origin.into(),
            field: field.into(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }

    pub(crate) fn missing(&self, field: &str, hint: &str) -> SpecError {
        SpecError::Missing {
            origin: self.origin.into(),
            field: field.into(),
            hint: hint.into(),
        }
    }

    pub(crate) fn conflict(&self, message: String) -> SpecError {
        SpecError::Conflict {
            origin: self.origin.into(),
            message,
        }
    }

    /// A humantime duration within `[min, max]`.
    pub(crate) fn duration(
        &self,
        field: &str,
        text: &str,
        min: Duration,
        max: Duration,
    ) -> Result<Duration, SpecError> {
        let d = humantime::parse_duration(text.trim()).map_err(|e| {
            self.invalid(
                field,
                format!("\"{text}\""),
                &format!("{e}; write a duration such as \"250ms\" or \"2s\""),
            )
        })?;
        if d < min || d > max {
            let valid = format!(
                "{} to {}",
                humantime::format_duration(min),
                humantime::format_duration(max)
            );
            return Err(self.out_of_range(field, format!("\"{text}\""), &valid));
        }
        Ok(d)
    }

    pub(crate) fn opt_duration(
        &self,
        field: &str,
        text: Option<&str>,
        default: Duration,
        min: Duration,
        max: Duration,
    ) -> Result<Duration, SpecError> {
        text.map_or(Ok(default), |t| self.duration(field, t, min, max))
    }

    /// A one-way delay and its jitter, each `(field, text)`, each 0 to 1 s ([`super::CLIENT_LATENCY`]).
    fn delay(
        &self,
        (base_field, base): (&str, Option<&str>),
        (jitter_field, jitter): (&str, Option<&str>),
    ) -> Result<crate::latency::Delay, SpecError> {
        let (min, max) = super::CLIENT_LATENCY;
        Ok(crate::latency::Delay {
            base: self.opt_duration(base_field, base, min, min, max)?,
            jitter: self.opt_duration(jitter_field, jitter, min, min, max)?,
        })
    }

    fn dist(
        &self,
        field: &str,
        raw: Option<RawDist>,
        default: DurationDist,
    ) -> Result<DurationDist, SpecError> {
        let Some(raw) = raw else { return Ok(default) };
        let kinds = "fixed (value), uniform (min, max), exponential (mean)";
        let allowed: &[&str] = match raw.kind.as_str() {
            "fixed" => &["value"],
            "uniform" => &["min", "max"],
            "exponential" => &["mean"],
            other => {
                return Err(self.invalid(
                    &format!("{field}.kind"),
                    format!("\"{other}\""),
                    &format!("valid kinds are {kinds}"),
                ));
            }
        };
        let given = [
            ("value", &raw.value),
            ("min", &raw.min),
            ("max", &raw.max),
            ("mean", &raw.mean),
        ];
        for (name, v) in given {
            if v.is_some() && !allowed.contains(&name) {
                return Err(self.conflict(format!(
                    "field '{field}.{name}' does not apply to kind \"{}\": it takes {}",
                    raw.kind,
                    allowed.join(", ")
                )));
            }
        }
        let get = |name: &str, v: &Option<String>| -> Result<Duration, SpecError> {
            let f = format!("{field}.{name}");
            let t = v.as_deref().ok_or_else(|| {
                self.missing(
                    &f,
                    &format!("kind \"{}\" needs {}", raw.kind, allowed.join(" and ")),
                )
            })?;
            self.duration(&f, t, Duration::ZERO, HOUR)
        };
        Ok(match raw.kind.as_str() {
            "fixed" => DurationDist::Fixed(get("value", &raw.value)?),
            "uniform" => {
                let (min, max) = (get("min", &raw.min)?, get("max", &raw.max)?);
                if min > max {
                    return Err(self.conflict(format!(
                        "field '{field}': min ({}) is above max ({}): swap them",
                        humantime::format_duration(min),
                        humantime::format_duration(max)
                    )));
                }
                DurationDist::Uniform { min, max }
            }
            _ => {
                let mean = get("mean", &raw.mean)?;
                if mean.is_zero() {
                    return Err(self.out_of_range(
                        &format!("{field}.mean"),
                        "\"0s\"",
                        "above 0 up to 1h (use kind = \"fixed\" for zero)",
                    ));
                }
                DurationDist::Exponential { mean }
            }
        })
    }

    fn key_distribution(&self, raw: Option<RawKind>) -> Result<KeyDistribution, SpecError> {
        let Some(raw) = raw else {
            return Ok(KeyDistribution::Uniform);
        };
        if raw.rate_per_s.is_some() {
            return Err(self.conflict("field 'key_distribution.rate_per_s' does not belong here: it is a field of 'arrival'".into()));
        }
        match raw.kind.as_str() {
            "uniform" if raw.exponent.is_none() => Ok(KeyDistribution::Uniform),
            "uniform" => Err(self.conflict(
                "field 'key_distribution.exponent' applies only to kind \"zipf\"".into(),
            )),
            "zipf" => {
                let f = "key_distribution.exponent";
                let e = raw.exponent.ok_or_else(|| {
                    self.missing(
                        f,
                        "zipf needs an exponent, e.g. { kind = \"zipf\", exponent = 1.1 }",
                    )
                })?;
                if !(e > 0.0 && e <= MAX_EXPONENT) {
                    return Err(self.out_of_range(f, e, &format!("above 0 up to {MAX_EXPONENT}")));
                }
                Ok(KeyDistribution::Zipf { exponent: e })
            }
            other => Err(self.invalid(
                "key_distribution.kind",
                format!("\"{other}\""),
                "valid kinds are uniform, zipf (with exponent)",
            )),
        }
    }

    fn arrival(&self, raw: Option<RawKind>) -> Result<Arrival, SpecError> {
        let Some(raw) = raw else {
            return Ok(Arrival::Closed);
        };
        if raw.exponent.is_some() {
            return Err(self.conflict("field 'arrival.exponent' does not belong here: it is a field of 'key_distribution'".into()));
        }
        match raw.kind.as_str() {
            "closed" if raw.rate_per_s.is_none() => Ok(Arrival::Closed),
            "closed" => {
                Err(self
                    .conflict("field 'arrival.rate_per_s' applies only to kind \"open\"".into()))
            }
            "open" => {
                let f = "arrival.rate_per_s";
                let r = raw.rate_per_s.ok_or_else(|| {
                    self.missing(
                        f,
                        "open arrival needs a rate, e.g. { kind = \"open\", rate_per_s = 200 }",
                    )
                })?;
                if !(r > 0.0 && r <= MAX_RATE) {
                    return Err(self.out_of_range(f, r, &format!("above 0 up to {MAX_RATE}")));
                }
                Ok(Arrival::Open { rate_per_s: r })
            }
            other => Err(self.invalid(
                "arrival.kind",
                format!("\"{other}\""),
                "valid kinds are closed, open (with rate_per_s)",
            )),
        }
    }

    fn strategies(&self, raw: Option<Vec<String>>) -> Result<Vec<Strategy>, SpecError> {
        let Some(raw) = raw else {
            return Ok(BOTH_STRATEGIES.to_vec());
        };
        if raw.is_empty() {
            return Err(self.out_of_range(
                "strategies",
                "[]",
                "one or more of herd, predecessor, native (etcd, postgres, mariadb), unsafe-del (redis, memcached), \
                 unsafe-setnx-expire (redis only; unsafe, for calibration)",
            ));
        }
        let mut out = Vec::new();
        for s in raw {
            let st: Strategy = s
                .parse()
                .map_err(|e: String| self.invalid("strategies", format!("\"{s}\""), &e))?;
            if out.contains(&st) {
                return Err(self.invalid(
                    "strategies",
                    format!("\"{s}\""),
                    "listed twice: name each strategy once",
                ));
            }
            out.push(st);
        }
        Ok(out)
    }

    fn clients_as(&self, kind: Option<String>, per: Option<i64>) -> Result<ClientsAs, SpecError> {
        match kind.as_deref().map(str::trim) {
            None | Some("tasks") if per.is_some() => Err(self.conflict(
                "field 'clients_per_process' applies only to clients_as = \"processes\": add that or remove it".into(),
            )),
            None | Some("tasks") => Ok(ClientsAs::Tasks),
            Some("processes") => Ok(ClientsAs::Processes {
                per_process: self.range("clients_per_process", per, Some(1), CLIENTS)? as u32,
            }),
            Some(other) => Err(self.invalid(
                "clients_as",
                format!("\"{other}\""),
                "valid values are tasks (in the runner's process, the default), processes (`lockbench worker` processes of clients_per_process clients each)",
            )),
        }
    }

    fn resource(&self, raw: Option<String>) -> Result<ResourceMode, SpecError> {
        match raw.as_deref().map(str::trim) {
            None | Some("fenced") => Ok(ResourceMode::Fenced),
            Some("unfenced") => Ok(ResourceMode::Unfenced),
            Some(other) => Err(self.invalid(
                "resource",
                format!("\"{other}\""),
                "valid values are fenced (the register refuses tokens lower than one it has seen, the default), unfenced (it accepts every access)",
            )),
        }
    }

    pub(crate) fn expect(&self, raw: Option<toml::Value>) -> Result<Expectations, SpecError> {
        const VALUES: &str = "valid values are \"safe\" (the default) and \"unsafe\"";
        let one = |field: &str, v: &toml::Value| match v.as_str().and_then(parse_expect) {
            Some(e) => Ok(e),
            None => Err(self.invalid(field, v, VALUES)),
        };
        match raw {
            None => Ok(Expectations::default()),
            Some(v @ toml::Value::String(_)) => Ok(Expectations::all(one("expect", &v)?)),
            Some(toml::Value::Table(t)) => {
                let mut out = Expectations::default();
                for (k, v) in &t {
                    let field = format!("expect.{k}");
                    let e = one(&field, v)?;
                    if k == "default" {
                        out.default = e;
                        continue;
                    }
                    let (system, strategy) = parse_selector(k).map_err(|why| {
                        self.invalid(
                            &field,
                            format!("\"{k}\""),
                            &format!("{why}; name a system (\"redis\") or a system/strategy pair (\"redis/herd\"), or \"default\""),
                        )
                    })?;
                    out.entries.push((system, strategy, e));
                }
                Ok(out)
            }
            Some(other) => Err(self.invalid(
                "expect",
                other,
                "write \"safe\" or \"unsafe\", or a table such as { default = \"safe\", \"redis/herd\" = \"unsafe\" }",
            )),
        }
    }

    fn crash_every(&self, raw: Option<i64>) -> Result<u32, SpecError> {
        let n = raw.unwrap_or(0);
        if !(CRASH_EVERY.0..=CRASH_EVERY.1).contains(&n) {
            return Err(self.out_of_range(
                "crash_between_steps_every",
                n,
                &format!(
                    "{}..={}: 0 (the default) never crashes, N crashes every N-th acquisition of \
                     each client between SETNX and PEXPIRE (unsafe-setnx-expire only)",
                    CRASH_EVERY.0, CRASH_EVERY.1
                ),
            ));
        }
        Ok(n as u32)
    }

    pub(crate) fn name(&self, raw: Option<String>) -> Result<String, SpecError> {
        let name = raw.unwrap_or_else(|| {
            Path::new(self.origin)
                .file_stem()
                .map_or_else(|| "workload".into(), |s| s.to_string_lossy().into_owned())
        });
        let ok = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !ok {
            return Err(self.invalid(
                "name",
                format!("\"{name}\""),
                "use 1 to 64 letters, digits, '-' or '_' (it names result folders)",
            ));
        }
        Ok(name)
    }

    pub(super) fn workload(&self, raw: RawWorkload) -> Result<Workload, SpecError> {
        let name = self.name(raw.name)?;
        let clients = self.range("clients", raw.clients, None, CLIENTS)? as u32;
        let keys = self.range("keys", raw.keys, Some(1), KEYS)? as u32;
        let key_distribution = self.key_distribution(raw.key_distribution.map(|k| k.0))?;
        let hold = self.dist(
            "hold",
            raw.hold.map(|d| d.0),
            DurationDist::Fixed(Duration::from_millis(1)),
        )?;
        let think_given = raw.think.is_some();
        let think = self.dist(
            "think",
            raw.think.map(|d| d.0),
            DurationDist::Fixed(Duration::ZERO),
        )?;
        let arrival = self.arrival(raw.arrival.map(|a| a.0))?;
        let stampede = match raw.stampede {
            None => None,
            Some(s) => Some(Stampede {
                rounds: self.range("stampede.rounds", s.rounds, None, ROUNDS)? as u32,
            }),
        };
        let stop = self.stop(raw.duration.as_deref(), raw.acquisitions, stampede, clients)?;
        let warmup = self.warmup(raw.warmup.as_deref(), stop)?;
        let lease_ttl = self.opt_duration(
            "lease_ttl",
            raw.lease_ttl.as_deref(),
            Duration::from_secs(10),
            Duration::from_secs(1),
            HOUR,
        )?;
        // 0 is tryLock: one try, no wait.
        let acquire_timeout = self.opt_duration(
            "acquire_timeout",
            raw.acquire_timeout.as_deref(),
            Duration::from_secs(10),
            Duration::ZERO,
            HOUR,
        )?;
        let retry = self.retry(
            raw.retry_backoff.as_deref(),
            raw.retry_backoff_max.as_deref(),
        )?;
        let resolve_timeout = self.opt_duration(
            "resolve_timeout",
            raw.resolve_timeout.as_deref(),
            crate::recipe::DEFAULT_RESOLVE_TIMEOUT,
            Duration::ZERO,
            HOUR,
        )?;
        let poll_interval = self.opt_duration(
            "poll_interval",
            raw.poll_interval.as_deref(),
            crate::recipe::DEFAULT_POLL_INTERVAL,
            Duration::from_millis(1),
            Duration::from_secs(60),
        )?;
        let client_latency = self.delay(
            ("client_latency", raw.client_latency.as_deref()),
            ("client_jitter", raw.client_jitter.as_deref()),
        )?;
        let peer_latency = self.delay(
            ("peer_latency", raw.peer_latency.as_deref()),
            ("peer_jitter", raw.peer_jitter.as_deref()),
        )?;
        if let Arrival::Open { .. } = arrival {
            if think_given {
                return Err(self.conflict("field 'think' does not apply to open arrival (the schedule sets the pace): remove it or use kind = \"closed\"".into()));
            }
            if stampede.is_some() {
                return Err(self.conflict("[stampede] needs closed arrival (the barrier sets the pace): remove 'arrival' or [stampede]".into()));
            }
        }
        Ok(Workload {
            name,
            clients,
            keys,
            key_distribution,
            hold,
            think,
            arrival,
            stop,
            warmup,
            poll_interval,
            lease_ttl,
            renew: raw.renew.unwrap_or(true),
            acquire_timeout,
            retry,
            resolve_timeout,
            strategies: self.strategies(raw.strategies)?,
            seed: self.range("seed", raw.seed, Some(1), (0, i64::MAX))? as u64,
            stampede,
            clients_as: self.clients_as(raw.clients_as, raw.clients_per_process)?,
            resource: self.resource(raw.resource)?,
            expect: self.expect(raw.expect)?,
            crash_between_steps_every: self.crash_every(raw.crash_between_steps_every)?,
            lock: self.lock(super::lock::RawLock {
                lock: raw.lock.as_deref(),
                read_ratio: raw.read_ratio,
                permits: raw.permits,
                reentry_depth: raw.reentry_depth,
            })?,
            client_latency,
            peer_latency,
            origin: super::Origin(self.origin.to_string()),
        })
    }

    /// How the run ends: after `duration`, after `acquisitions`, or, with a stampede, after
    /// its rounds × `clients` acquisitions; exactly one.
    fn stop(
        &self,
        duration: Option<&str>,
        acquisitions: Option<i64>,
        stampede: Option<Stampede>,
        clients: u32,
    ) -> Result<Stop, SpecError> {
        Ok(match (duration, acquisitions, stampede) {
            (None, None, Some(s)) => Stop::Acquisitions(u64::from(s.rounds) * u64::from(clients)),
            (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => {
                return Err(self.conflict("with [stampede], leave out 'duration' and 'acquisitions': rounds × clients acquisitions end the run".into()));
            }
            (Some(d), None, None) => {
                let (min, max) = RUN_DURATION;
                Stop::Duration(self.duration("duration", d, min, max)?)
            }
            (None, Some(n), None) => {
                Stop::Acquisitions(self.range("acquisitions", Some(n), None, ACQUISITIONS)? as u64)
            }
            (Some(_), Some(_), None) => {
                return Err(self.conflict(
                    "fields 'duration' and 'acquisitions' are both set: keep exactly one".into(),
                ));
            }
            (None, None, None) => {
                return Err(self.missing(
                    "duration",
                    "set exactly one of 'duration' (e.g. \"30s\") or 'acquisitions' (e.g. 10000)",
                ));
            }
        })
    }

    /// The warm-up: none by default, shorter than a run of fixed duration.
    fn warmup(&self, warmup: Option<&str>, stop: Stop) -> Result<Duration, SpecError> {
        let max_warmup = match stop {
            Stop::Duration(d) => d,
            Stop::Acquisitions(_) => HOUR,
        };
        let warmup =
            self.opt_duration("warmup", warmup, Duration::ZERO, Duration::ZERO, max_warmup)?;
        if matches!(stop, Stop::Duration(d) if warmup >= d) {
            return Err(self.out_of_range(
                "warmup",
                humantime::format_duration(warmup),
                "shorter than 'duration'",
            ));
        }
        Ok(warmup)
    }

    /// The retry back-off after a failed attempt: `retry_backoff` at first, at most
    /// `retry_backoff_max` (which must not be below it).
    fn retry(
        &self,
        backoff: Option<&str>,
        backoff_max: Option<&str>,
    ) -> Result<crate::recipe::RetryPolicy, SpecError> {
        let defaults = crate::recipe::RetryPolicy::default();
        let initial = self.opt_duration(
            "retry_backoff",
            backoff,
            defaults.initial,
            Duration::from_millis(1),
            Duration::from_secs(10),
        )?;
        let max = self.opt_duration(
            "retry_backoff_max",
            backoff_max,
            defaults.max.max(initial),
            Duration::from_millis(1),
            Duration::from_secs(60),
        )?;
        if max < initial {
            return Err(self.out_of_range(
                "retry_backoff_max",
                humantime::format_duration(max),
                "at least 'retry_backoff'",
            ));
        }
        Ok(crate::recipe::RetryPolicy { initial, max })
    }
}
