//! Workload files (`workloads/*.toml`): parsed strictly, validated into a [`Workload`] before
//! any container starts, with errors that name the file, the field and the valid values.

use std::fmt;
use std::marker::PhantomData;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor, value::MapAccessDeserializer};

use crate::recipe::{BOTH_STRATEGIES, Strategy};
use crate::workload::{DurationDist, KeyDistribution};

/// Why a workload file was refused; every message names the file and says what would be valid.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file could not be read.
    #[error("{origin}: cannot read the workload file: {source}")]
    Read {
        origin: String,
        source: std::io::Error,
    },
    /// TOML syntax, an unknown field, or a value of the wrong type.
    #[error("{origin}:{line}:{column}: {message}")]
    Parse {
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// A number or duration outside what lockbench accepts.
    #[error("{origin}: field '{field}' = {value} is out of range: valid {valid}")]
    OutOfRange {
        origin: String,
        field: String,
        value: String,
        valid: String,
    },
    /// A value that does not parse or is not one of the allowed ones.
    #[error("{origin}: field '{field}' = {value} is invalid: {expected}")]
    Invalid {
        origin: String,
        field: String,
        value: String,
        expected: String,
    },
    /// A required field is absent.
    #[error("{origin}: field '{field}' is missing: {hint}")]
    Missing {
        origin: String,
        field: String,
        hint: String,
    },
    /// Fields that cannot be used together.
    #[error("{origin}: {message}")]
    Conflict { origin: String, message: String },
}

/// How operations are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrival {
    /// Each client starts its next acquisition when the previous one (and its think time) ends.
    Closed,
    /// Acquisitions start on a fixed schedule of `rate_per_s` in total, whether or not earlier
    /// ones have finished; latency is measured from the scheduled start.
    Open { rate_per_s: f64 },
}

/// When a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this much time past the start (warm-up included).
    Duration(Duration),
    /// After this many acquisitions in total over all clients.
    Acquisitions(u64),
}

/// Thundering-herd rounds: every client waits at a barrier, all are released at once, each
/// takes the lock once; repeated `rounds` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stampede {
    /// How many times the barrier opens.
    pub rounds: u32,
}

/// A validated workload: every value is in range and every combination makes sense.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Name used in result folders and reports (defaults to the file stem).
    pub name: String,
    /// Concurrent lock clients.
    pub clients: u32,
    /// Number of distinct lock keys.
    pub keys: u32,
    /// How acquisitions spread over the keys.
    pub key_distribution: KeyDistribution,
    /// Time a holder keeps the lock before releasing.
    pub hold: DurationDist,
    /// Closed loop: pause after a release before the next acquire.
    pub think: DurationDist,
    /// Closed or open loop.
    pub arrival: Arrival,
    /// When the run ends.
    pub stop: Stop,
    /// Events before this point are excluded from the statistics.
    pub warmup: Duration,
    /// Lease TTL or session timeout given to the recipes.
    pub lease_ttl: Duration,
    /// Keep leases alive while held.
    pub renew: bool,
    /// Give up an acquisition after this long (recorded as a timeout).
    pub acquire_timeout: Duration,
    /// Waiting strategies to run, in order; `native` is only valid on etcd (checked by the plan).
    pub strategies: Vec<Strategy>,
    /// Seed of every random choice.
    pub seed: u64,
    /// Barrier rounds instead of free-running clients.
    pub stampede: Option<Stampede>,
}

const CLIENTS: (i64, i64) = (1, 4096);
const KEYS: (i64, i64) = (1, 100_000);
const ACQUISITIONS: (i64, i64) = (1, 1_000_000_000);
const ROUNDS: (i64, i64) = (1, 1_000_000);
const MAX_RATE: f64 = 1_000_000.0;
const MAX_EXPONENT: f64 = 10.0;
const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(86_400);

impl Workload {
    /// Reads and validates a workload file; the name defaults to the file stem.
    pub fn from_file(path: &Path) -> Result<Workload, SpecError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
            origin: origin.clone(),
            source,
        })?;
        Workload::from_str(&text, &origin)
    }

    /// Parses and validates workload text; `origin` (a path or a label) names it in errors and
    /// gives the default name.
    #[allow(clippy::should_implement_trait)] // FromStr cannot carry the origin.
    pub fn from_str(text: &str, origin: &str) -> Result<Workload, SpecError> {
        let raw: RawWorkload = toml::from_str(text).map_err(|e| parse_error(origin, text, &e))?;
        Validator { origin }.workload(raw)
    }

    /// Open loop: when client `client`'s `n`-th acquisition (from 0) is due, counted from the
    /// run start. Clients take turns on one global schedule of `rate_per_s`, so the total rate
    /// is fixed whatever the number of clients. `None` in closed loop.
    pub fn intended_start(&self, client: u32, n: u64) -> Option<Duration> {
        match self.arrival {
            Arrival::Closed => None,
            Arrival::Open { rate_per_s } => {
                let slot = n as f64 * f64::from(self.clients) + f64::from(client);
                Some(Duration::from_secs_f64(slot / rate_per_s))
            }
        }
    }
}

/// Turns a toml error into one with line, column and, where it can be read, the field.
fn parse_error(origin: &str, text: &str, e: &toml::de::Error) -> SpecError {
    let (line, column) = match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            (line, column)
        }
        None => (0, 0),
    };
    let message = e.message().trim().replace('`', "'");
    // Type errors do not say which key they are about; the line they point at does.
    let key = text
        .lines()
        .nth(line.wrapping_sub(1))
        .and_then(|l| l.split_once('='))
        .map(|(k, _)| k.trim().trim_matches('"'))
        .filter(|k| !k.is_empty() && !k.contains(' ') && !message.contains(&format!("'{k}'")));
    let message = match key {
        Some(k) => format!("field '{k}': {message}"),
        None => message,
    };
    SpecError::Parse {
        origin: origin.to_string(),
        line,
        column,
        message,
    }
}

// ---- raw file shapes -------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    name: Option<String>,
    clients: Option<i64>,
    keys: Option<i64>,
    key_distribution: Option<StrOrTable<RawKind>>,
    hold: Option<StrOrTable<RawDist>>,
    think: Option<StrOrTable<RawDist>>,
    arrival: Option<StrOrTable<RawKind>>,
    duration: Option<String>,
    acquisitions: Option<i64>,
    warmup: Option<String>,
    lease_ttl: Option<String>,
    renew: Option<bool>,
    acquire_timeout: Option<String>,
    strategies: Option<Vec<String>>,
    seed: Option<i64>,
    stampede: Option<RawStampede>,
}

/// `key_distribution` and `arrival`: a bare kind (`"uniform"`) or a table with its parameter.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKind {
    kind: String,
    exponent: Option<f64>,
    rate_per_s: Option<f64>,
}

/// `hold` and `think`: a bare duration (fixed) or `{ kind = ..., ... }`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDist {
    kind: String,
    value: Option<String>,
    min: Option<String>,
    max: Option<String>,
    mean: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStampede {
    rounds: Option<i64>,
}

/// What a bare string stands for in a field that also takes a table.
trait FromBare {
    fn from_bare(s: String) -> Self;
}
impl FromBare for RawKind {
    fn from_bare(kind: String) -> Self {
        RawKind {
            kind,
            ..RawKind::default()
        }
    }
}
impl FromBare for RawDist {
    fn from_bare(value: String) -> Self {
        RawDist {
            kind: "fixed".into(),
            value: Some(value),
            ..RawDist::default()
        }
    }
}

#[derive(Debug)]
struct StrOrTable<T>(T);

impl<'de, T: Deserialize<'de> + FromBare> Deserialize<'de> for StrOrTable<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de> + FromBare> Visitor<'de> for V<T> {
            type Value = StrOrTable<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a table such as { kind = \"...\" }")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(StrOrTable(T::from_bare(s.to_string())))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(StrOrTable)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

// ---- validation ------------------------------------------------------------------------------

struct Validator<'a> {
    origin: &'a str,
}

impl Validator<'_> {
    fn range(
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

    fn out_of_range(&self, field: &str, value: impl fmt::Display, valid: &str) -> SpecError {
        SpecError::OutOfRange {
            origin: self.origin.into(),
            field: field.into(),
            value: value.to_string(),
            valid: valid.into(),
        }
    }

    fn invalid(&self, field: &str, value: impl fmt::Display, expected: &str) -> SpecError {
        SpecError::Invalid {
            origin: self.origin.into(),
            field: field.into(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }

    fn missing(&self, field: &str, hint: &str) -> SpecError {
        SpecError::Missing {
            origin: self.origin.into(),
            field: field.into(),
            hint: hint.into(),
        }
    }

    fn conflict(&self, message: String) -> SpecError {
        SpecError::Conflict {
            origin: self.origin.into(),
            message,
        }
    }

    /// A humantime duration within `[min, max]`.
    fn duration(
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

    fn opt_duration(
        &self,
        field: &str,
        text: Option<&str>,
        default: Duration,
        min: Duration,
        max: Duration,
    ) -> Result<Duration, SpecError> {
        text.map_or(Ok(default), |t| self.duration(field, t, min, max))
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
                "one or more of herd, predecessor, native (etcd only)",
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

    fn name(&self, raw: Option<String>) -> Result<String, SpecError> {
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

    fn workload(&self, raw: RawWorkload) -> Result<Workload, SpecError> {
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
        let stop = match (raw.duration.as_deref(), raw.acquisitions, stampede) {
            (None, None, Some(s)) => Stop::Acquisitions(u64::from(s.rounds) * u64::from(clients)),
            (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => {
                return Err(self.conflict("with [stampede], leave out 'duration' and 'acquisitions': rounds × clients acquisitions end the run".into()));
            }
            (Some(d), None, None) => {
                Stop::Duration(self.duration("duration", d, Duration::from_secs(1), DAY)?)
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
        };
        let max_warmup = match stop {
            Stop::Duration(d) => d,
            Stop::Acquisitions(_) => HOUR,
        };
        let warmup = self.opt_duration(
            "warmup",
            raw.warmup.as_deref(),
            Duration::ZERO,
            Duration::ZERO,
            max_warmup,
        )?;
        if matches!(stop, Stop::Duration(d) if warmup >= d) {
            return Err(self.out_of_range(
                "warmup",
                humantime::format_duration(warmup),
                "shorter than 'duration'",
            ));
        }
        let lease_ttl = self.opt_duration(
            "lease_ttl",
            raw.lease_ttl.as_deref(),
            Duration::from_secs(10),
            Duration::from_secs(1),
            HOUR,
        )?;
        let acquire_timeout = self.opt_duration(
            "acquire_timeout",
            raw.acquire_timeout.as_deref(),
            Duration::from_secs(10),
            Duration::from_millis(1),
            HOUR,
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
            lease_ttl,
            renew: raw.renew.unwrap_or(true),
            acquire_timeout,
            strategies: self.strategies(raw.strategies)?,
            seed: self.range("seed", raw.seed, Some(1), (0, i64::MAX))? as u64,
            stampede,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        Workload::from_str(text, "workloads/x.toml")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn every_shipped_workload_parses() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let w = Workload::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
                names.push(w.name);
            }
        }
        names.sort();
        assert_eq!(
            names,
            [
                "hot-lock",
                "long-hold",
                "open-loop",
                "stampede",
                "uncontended",
                "zipf-keys"
            ]
        );
    }

    #[test]
    fn shipped_workloads_mean_what_they_say() {
        let load = |n: &str| {
            Workload::from_file(
                &Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("workloads/{n}.toml")),
            )
            .unwrap()
        };
        let hot = load("hot-lock");
        assert_eq!(
            (hot.clients, hot.keys, hot.arrival),
            (16, 1, Arrival::Closed)
        );
        assert_eq!(
            hot.hold,
            DurationDist::Uniform {
                min: Duration::from_millis(1),
                max: Duration::from_millis(5)
            }
        );
        assert_eq!(hot.think, DurationDist::Fixed(Duration::ZERO));
        assert_eq!(hot.strategies, BOTH_STRATEGIES.to_vec());
        let zipf = load("zipf-keys");
        assert_eq!((zipf.clients, zipf.keys), (64, 16));
        assert_eq!(
            zipf.key_distribution,
            KeyDistribution::Zipf { exponent: 1.1 }
        );
        let st = load("stampede");
        assert_eq!(st.stampede, Some(Stampede { rounds: 20 }));
        assert_eq!(st.stop, Stop::Acquisitions(20 * 32));
        let long = load("long-hold");
        assert!(long.renew && long.hold.max() > long.lease_ttl);
        let open = load("open-loop");
        assert_eq!(open.arrival, Arrival::Open { rate_per_s: 200.0 });
        // 32 clients share 200/s: client 1's 2nd op is slot 33, at 165 ms.
        assert_eq!(open.intended_start(1, 1), Some(Duration::from_millis(165)));
        assert_eq!(load("uncontended").clients, 1);
    }

    #[test]
    fn defaults_fill_the_optional_fields() {
        let w = Workload::from_str("clients = 2\nacquisitions = 10\n", "w/plain.toml").unwrap();
        assert_eq!(w.name, "plain");
        assert_eq!(w.keys, 1);
        assert_eq!(w.stop, Stop::Acquisitions(10));
        assert_eq!(w.lease_ttl, Duration::from_secs(10));
        assert!(w.renew);
        assert_eq!(w.seed, 1);
        assert_eq!(w.stampede, None);
        let w = Workload::from_str(
            "name = \"n1\"\nclients = 1\nduration = \"2s\"\nstrategies = [\"native\"]",
            "x",
        )
        .unwrap();
        assert_eq!(w.name, "n1");
        assert_eq!(w.strategies, vec![Strategy::Native]);
    }

    #[test]
    fn out_of_range_names_file_field_and_range() {
        assert_eq!(
            err("clients = 0\nduration = \"5s\""),
            "workloads/x.toml: field 'clients' = 0 is out of range: valid 1..=4096"
        );
        assert!(err("clients = 5000\nduration = \"5s\"").contains("valid 1..=4096"));
        let e = err(
            "clients = 1\nduration = \"5s\"\nkey_distribution = { kind = \"zipf\", exponent = -1.0 }",
        );
        assert!(
            e.contains("'key_distribution.exponent' = -1 is out of range"),
            "{e}"
        );
        let e = err("clients = 1\nduration = \"5s\"\nwarmup = \"5s\"");
        assert!(
            e.contains("'warmup'") && e.contains("shorter than 'duration'"),
            "{e}"
        );
        let e = err("clients = 1\nduration = \"5s\"\nlease_ttl = \"10ms\"");
        assert!(
            e.contains("'lease_ttl' = \"10ms\" is out of range: valid 1s to 1h"),
            "{e}"
        );
    }

    #[test]
    fn unknown_field_lists_valid_ones_with_position() {
        let e = err("clients = 1\nduration = \"5s\"\nholdd = \"1ms\"\n");
        assert!(e.starts_with("workloads/x.toml:3:1: "), "{e}");
        assert!(
            e.contains("unknown field 'holdd'") && e.contains("'hold'") && e.contains("'think'"),
            "{e}"
        );
        let e = err("clients = 1\nduration = \"5s\"\nhold = { kind = \"fixed\", vale = \"1ms\" }");
        assert!(
            e.contains("unknown field 'vale'") && e.contains("'value'"),
            "{e}"
        );
    }

    #[test]
    fn syntax_and_type_errors_give_line_and_column() {
        let e = err("clients = 1\nduration = \"5s\nkeys = 2");
        assert!(e.starts_with("workloads/x.toml:2:"), "{e}");
        let e = err("clients = \"many\"\nduration = \"5s\"");
        assert!(
            e.starts_with("workloads/x.toml:1:11: field 'clients': "),
            "{e}"
        );
    }

    #[test]
    fn bad_values_and_combinations_say_what_is_valid() {
        let e = err("clients = 1\nduration = \"5 parsecs\"");
        assert!(
            e.contains("field 'duration'") && e.contains("\"250ms\""),
            "{e}"
        );
        let e = err("clients = 1\nduration = \"5s\"\nhold = { kind = \"normal\", mean = \"1ms\" }");
        assert!(
            e.contains("'hold.kind'")
                && e.contains("fixed (value), uniform (min, max), exponential (mean)"),
            "{e}"
        );
        let e = err(
            "clients = 1\nduration = \"5s\"\nhold = { kind = \"uniform\", min = \"5ms\", max = \"1ms\" }",
        );
        assert!(e.contains("min (5ms) is above max (1ms)"), "{e}");
        let e = err("clients = 1\nduration = \"5s\"\nhold = { kind = \"uniform\", min = \"5ms\" }");
        assert!(e.contains("'hold.max' is missing"), "{e}");
        let e = err("clients = 1");
        assert!(e.contains("exactly one of 'duration'"), "{e}");
        let e = err("clients = 1\nduration = \"5s\"\nacquisitions = 3");
        assert!(e.contains("keep exactly one"), "{e}");
        let e = err("clients = 1\nduration = \"5s\"\nstrategies = [\"fair\"]");
        assert!(
            e.contains("valid strategies are herd, predecessor, native"),
            "{e}"
        );
        let e = err("clients = 1\nduration = \"5s\"\narrival = { kind = \"open\" }");
        assert!(e.contains("'arrival.rate_per_s' is missing"), "{e}");
        let e = err(
            "clients = 1\nduration = \"5s\"\narrival = { kind = \"open\", rate_per_s = 5 }\nthink = \"1ms\"",
        );
        assert!(e.contains("'think' does not apply to open arrival"), "{e}");
        let e = err("clients = 1\nduration = \"5s\"\n[stampede]\nrounds = 3");
        assert!(e.contains("with [stampede], leave out 'duration'"), "{e}");
        let e = err("clients = 1\nname = \"a b\"\nduration = \"5s\"");
        assert!(e.contains("field 'name'"), "{e}");
    }

    #[test]
    fn read_error_names_the_file() {
        let e = Workload::from_file(Path::new("workloads/nope.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("workloads/nope.toml: cannot read"), "{e}");
    }
}
