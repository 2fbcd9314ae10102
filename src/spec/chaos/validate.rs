//! Turns the raw schedule into a [`Schedule`]: kinds and their parameters, targets valid for
//! each kind, timing and ranges, each error naming the field's path and what would be valid.

use std::time::Duration;

use super::raw::{RawFault, RawSchedule};
use super::{
    ClientTarget, ClockSkew, FaultKind, FaultSpec, NO_CHAOS, SHAPES, Schedule, Shape, Timing,
};
use crate::chaos::Target;
use crate::cluster::DataOnRestart;
use crate::spec::SpecError;
use crate::spec::validate::Validator;
use crate::system::{FACTS, System};

const DAY: Duration = Duration::from_secs(86_400);
const MIN_EVERY: Duration = Duration::from_millis(100);
const MIN_WINDOW: Duration = Duration::from_millis(1);
const MAX_RATE: f64 = 1000.0;
const KINDS: &str = "kill, partition, pause-node, pause-client, clock, mixed";

/// The parameters each kind takes, as errors list them.
fn parameters(kind: &str) -> &'static [&'static str] {
    match kind {
        "kill" => &["target", "data", "restart_after"],
        "partition" => &["shape", "clients"],
        "pause-node" | "pause-client" => &["target"],
        "clock" => &["target", "mode", "by", "rate"],
        "mixed" => &["kinds"],
        _ => &[],
    }
}

pub(super) fn schedule(origin: &str, raw: RawSchedule) -> Result<Schedule, SpecError> {
    let v = Validator { origin };
    let name = v.name(raw.name)?;
    let seed = v.range("seed", raw.seed, Some(1), (0, i64::MAX))? as u64;
    let systems = systems(&v, raw.systems)?;
    let cluster_size = match raw.cluster_size {
        None => None,
        Some(n) => Some(cluster_size(&v, n, systems.as_deref())?),
    };
    let expect = match raw.expect {
        None => None,
        Some(e) => Some(v.expect(Some(e))?),
    };
    let faults = raw
        .faults
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, f)| fault(&v, &format!("faults[{i}]"), f))
        .collect::<Result<Vec<_>, _>>()?;
    clock_on_redis_only(&v, systems.as_deref(), &faults)?;
    if name == NO_CHAOS && !faults.is_empty() {
        return Err(v.invalid(
            "name",
            format!("\"{name}\""),
            "\"none\" is the schedule without faults: give a schedule with faults another name",
        ));
    }
    Ok(Schedule {
        name,
        seed,
        systems,
        cluster_size,
        expect,
        faults,
    })
}

/// A clock fault is modelled on Redis (TTLs cut); ZooKeeper sessions and etcd leases are timed
/// on monotonic clocks, so a wall-clock jump would do nothing there while its window read as a
/// fault survived: a schedule with one must name Redis systems only.
fn clock_on_redis_only(
    v: &Validator,
    systems: Option<&[System]>,
    faults: &[FaultSpec],
) -> Result<(), SpecError> {
    let is_clock = |k: &FaultKind| match k {
        FaultKind::Clock { .. } => true,
        FaultKind::Mixed { kinds } => kinds.iter().any(|k| matches!(k, FaultKind::Clock { .. })),
        _ => false,
    };
    let Some(i) = faults.iter().position(|f| is_clock(&f.kind)) else {
        return Ok(());
    };
    let monotonic = [System::Zookeeper, System::Etcd];
    let named: Vec<System> = match systems {
        None => monotonic.to_vec(),
        Some(s) => s
            .iter()
            .copied()
            .filter(|s| monotonic.contains(s))
            .collect(),
    };
    if named.is_empty() {
        return Ok(());
    }
    let value = match systems {
        None => "(absent: every system)".to_string(),
        Some(s) => format!(
            "[{}]",
            s.iter()
                .map(|s| format!("\"{s}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Err(v.invalid(
        "systems",
        value,
        &format!(
            "faults[{i}] is a clock fault, which cannot run on {}: ZooKeeper sessions and etcd \
             leases are timed on monotonic clocks, which a wall-clock jump does not move (the \
             clock fault is modelled on Redis by cutting TTLs). Set systems = [\"redis\", \
             \"redlock\"], or move the clock fault to a schedule of its own",
            named
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(" and ")
        ),
    ))
}

fn systems(v: &Validator, raw: Option<Vec<String>>) -> Result<Option<Vec<System>>, SpecError> {
    let Some(raw) = raw else { return Ok(None) };
    let names: Vec<&str> = FACTS.iter().map(|f| f.name).collect();
    if raw.is_empty() {
        return Err(v.out_of_range(
            "systems",
            "[]",
            &format!(
                "one or more of {} (leave 'systems' out for every system)",
                names.join(", ")
            ),
        ));
    }
    let mut out = Vec::new();
    for s in raw {
        let sys: System = s
            .parse()
            .map_err(|e| v.invalid("systems", format!("\"{s}\""), &format!("{e}")))?;
        if out.contains(&sys) {
            return Err(v.invalid(
                "systems",
                format!("\"{s}\""),
                "listed twice: name each system once",
            ));
        }
        out.push(sys);
    }
    Ok(Some(out))
}

fn cluster_size(v: &Validator, n: i64, systems: Option<&[System]>) -> Result<usize, SpecError> {
    let facts: Vec<_> = FACTS
        .iter()
        .filter(|f| systems.is_none_or(|s| s.contains(&f.system)))
        .collect();
    if n >= 1 && facts.iter().any(|f| f.sizes.contains(&(n as usize))) {
        return Ok(n as usize);
    }
    let valid: Vec<String> = facts
        .iter()
        .map(|f| format!("{} {}", f.name, f.sizes_text))
        .collect();
    Err(v.out_of_range(
        "cluster_size",
        n,
        &format!(
            "a size one of its systems runs ({}); systems that cannot run it are skipped",
            valid.join("; ")
        ),
    ))
}

fn duration(v: &Validator, field: &str, text: &str, min: Duration) -> Result<Duration, SpecError> {
    v.duration(field, text, min, DAY)
}

fn fault(v: &Validator, f: &str, raw: RawFault) -> Result<FaultSpec, SpecError> {
    let kind = kind(v, f, &raw, false)?;
    let is_kill = matches!(kind, FaultKind::Kill { .. });
    let window = match (is_kill, &raw.duration, &raw.restart_after) {
        (true, Some(_), _) => {
            return Err(v.conflict(format!(
                "field '{f}.duration' does not apply to kind \"kill\": a kill lasts until its \
                 restart, set 'restart_after' (how long the node stays down; \"0s\", the \
                 default, restarts it at once)"
            )));
        }
        (true, None, None) => Duration::ZERO,
        (true, None, Some(t)) => duration(v, &format!("{f}.restart_after"), t, Duration::ZERO)?,
        (false, Some(t), _) => duration(v, &format!("{f}.duration"), t, MIN_WINDOW)?,
        (false, None, _) => {
            return Err(v.missing(
                &format!("{f}.duration"),
                &format!(
                    "say how long the {} lasts until it is undone, e.g. duration = \"5s\"",
                    kind.name()
                ),
            ));
        }
    };
    let timing = match (&raw.start, &raw.every) {
        (Some(_), Some(_)) => {
            return Err(v.conflict(format!(
                "fields '{f}.start' and '{f}.every' are both set: keep exactly one (start: once \
                 at an offset; every: repeatedly)"
            )));
        }
        (None, None) => {
            return Err(v.missing(
                &format!("{f}.start"),
                "set exactly one of 'start' (once, at an offset such as \"5s\") or 'every' \
                 (repeatedly, at an interval such as \"10s\", with optional 'jitter')",
            ));
        }
        (Some(t), None) => {
            if raw.jitter.is_some() {
                return Err(v.conflict(format!(
                    "field '{f}.jitter' applies only with 'every': a fault at 'start' happens once, \
                     at that offset"
                )));
            }
            Timing::At(duration(v, &format!("{f}.start"), t, Duration::ZERO)?)
        }
        (None, Some(t)) => {
            let every = duration(v, &format!("{f}.every"), t, MIN_EVERY)?;
            let jitter = match &raw.jitter {
                None => Duration::ZERO,
                Some(j) => {
                    let field = format!("{f}.jitter");
                    v.duration(&field, j, Duration::ZERO, every)?
                }
            };
            if window + jitter > every {
                return Err(v.conflict(format!(
                    "{f}: {} plus jitter ({}) is longer than every ({}): an occurrence would start \
                     before the previous one is undone; shorten them or raise 'every'",
                    if is_kill { "restart_after" } else { "duration" },
                    humantime::format_duration(jitter),
                    humantime::format_duration(every),
                )));
            }
            Timing::Every { every, jitter }
        }
    };
    Ok(FaultSpec {
        kind,
        timing,
        duration: window,
    })
}

/// A fault's kind with its parameters; `in_mixed` for an entry of a mixed fault's `kinds`.
fn kind(v: &Validator, f: &str, raw: &RawFault, in_mixed: bool) -> Result<FaultKind, SpecError> {
    let name = raw
        .kind
        .as_deref()
        .map(str::trim)
        .ok_or_else(|| v.missing(&format!("{f}.kind"), &format!("valid kinds are {KINDS}")))?;
    let allowed = parameters(name);
    if allowed.is_empty() {
        return Err(v.invalid(
            &format!("{f}.kind"),
            format!("\"{name}\""),
            &format!("valid kinds are {KINDS}"),
        ));
    }
    for p in raw.given_parameters() {
        if !allowed.contains(&p) {
            return Err(v.conflict(format!(
                "field '{f}.{p}' does not apply to kind \"{name}\": it takes {}",
                allowed.join(", ")
            )));
        }
    }
    if in_mixed {
        if name == "mixed" {
            return Err(v.invalid(
                &format!("{f}.kind"),
                "\"mixed\"",
                "a mixed fault draws from plain kinds: list kill, partition, pause-node, \
                 pause-client or clock",
            ));
        }
        let timing = raw.given_timing();
        if let Some(t) = raw
            .restart_after
            .as_ref()
            .map(|_| "restart_after")
            .or(timing.first().copied())
        {
            return Err(v.conflict(format!(
                "field '{f}.{t}' does not belong in a mixed fault's kinds: every drawn kind \
                 starts and lasts as the mixed fault's start/every, jitter and duration say"
            )));
        }
    }
    let target = |valid: &[Target], default: Target| -> Result<Target, SpecError> {
        let field = format!("{f}.target");
        let names: Vec<&str> = valid.iter().map(|t| t.name()).collect();
        let expected = format!("valid targets of kind \"{name}\" are {}", names.join(", "));
        let Some(text) = &raw.target else {
            return Ok(default);
        };
        let t: Target = text
            .parse()
            .map_err(|_| v.invalid(&field, format!("\"{text}\""), &expected))?;
        if !valid.contains(&t) {
            return Err(v.invalid(&field, format!("\"{text}\""), &expected));
        }
        Ok(t)
    };
    use Target::{All, Leader, Majority, Minority, One};
    Ok(match name {
        "kill" => FaultKind::Kill {
            target: target(&[One, Minority, Majority, Leader], One)?,
            data: match raw.data.as_deref().map(str::trim) {
                None | Some("keep") => DataOnRestart::Keep,
                Some("wipe") => DataOnRestart::Wipe,
                Some(other) => {
                    return Err(v.invalid(
                        &format!("{f}.data"),
                        format!("\"{other}\""),
                        "valid values are keep (the restarted node finds its data, the default), \
                         wipe (it starts empty, as a Redis without persistence would)",
                    ));
                }
            },
        },
        "partition" => FaultKind::Partition {
            shape: match raw.shape.as_deref().map(str::trim) {
                None => Shape::Halves,
                Some(s) => SHAPES.into_iter().find(|x| x.name() == s).ok_or_else(|| {
                    let names: Vec<&str> = SHAPES.iter().map(|x| x.name()).collect();
                    v.invalid(
                        &format!("{f}.shape"),
                        format!("\"{s}\""),
                        &format!("valid shapes are {}", names.join(", ")),
                    )
                })?,
            },
            clients: raw.clients.unwrap_or(false),
        },
        "pause-node" => FaultKind::PauseNode {
            target: target(&[Leader, One], One)?,
        },
        "pause-client" => FaultKind::PauseClient {
            target: match raw.target.as_deref().map(str::trim) {
                None | Some("random") => ClientTarget::Random,
                Some("holder") => ClientTarget::Holder,
                Some(other) => {
                    return Err(v.invalid(
                        &format!("{f}.target"),
                        format!("\"{other}\""),
                        "valid targets of kind \"pause-client\" are holder (a client holding a \
                         lock at that moment), random",
                    ));
                }
            },
        },
        "clock" => FaultKind::Clock {
            // A majority of Redlock's masters jumping at once is what breaks it.
            target: target(&[One, Minority, Majority, Leader, All], One)?,
            skew: clock_skew(v, f, raw)?,
        },
        _ => FaultKind::Mixed {
            kinds: mixed_kinds(v, f, raw)?,
        },
    })
}

fn clock_skew(v: &Validator, f: &str, raw: &RawFault) -> Result<ClockSkew, SpecError> {
    match raw.mode.as_deref().map(str::trim) {
        None | Some("jump") => {
            if raw.rate.is_some() {
                return Err(v.conflict(format!(
                    "field '{f}.rate' applies only to mode = \"fast\": a jump moves the clock by 'by'"
                )));
            }
            let by = raw.by.as_deref().ok_or_else(|| {
                v.missing(
                    &format!("{f}.by"),
                    "a clock jump needs its size, e.g. by = \"30s\" (longer than the lease TTL \
                     expires every lock key on that server)",
                )
            })?;
            Ok(ClockSkew::Jump {
                by: duration(v, &format!("{f}.by"), by, MIN_WINDOW)?,
            })
        }
        Some("fast") => {
            if raw.by.is_some() {
                return Err(v.conflict(format!(
                    "field '{f}.by' applies only to mode = \"jump\": a fast clock runs at 'rate'"
                )));
            }
            let field = format!("{f}.rate");
            let rate = raw.rate.ok_or_else(|| {
                v.missing(
                    &field,
                    "a fast clock needs its rate, e.g. rate = 2.0 (twice as fast)",
                )
            })?;
            if !(rate > 1.0 && rate <= MAX_RATE) {
                return Err(v.out_of_range(&field, rate, &format!("above 1 up to {MAX_RATE}")));
            }
            Ok(ClockSkew::Fast { rate })
        }
        Some(other) => Err(v.invalid(
            &format!("{f}.mode"),
            format!("\"{other}\""),
            "valid modes are jump (forward by 'by' at once, the default), fast (running at 'rate')",
        )),
    }
}

fn mixed_kinds(v: &Validator, f: &str, raw: &RawFault) -> Result<Vec<FaultKind>, SpecError> {
    let field = format!("{f}.kinds");
    let entries = raw.kinds.as_ref().ok_or_else(|| {
        v.missing(
            &field,
            "list the kinds to draw from, e.g. kinds = [\"kill\", { kind = \"partition\", \
             shape = \"bridge\" }, \"pause-node\"]",
        )
    })?;
    if entries.is_empty() {
        return Err(v.out_of_range(&field, "[]", "one or more kinds to draw from"));
    }
    entries
        .iter()
        .enumerate()
        .map(|(j, e)| kind(v, &format!("{field}[{j}]"), &e.0, true))
        .collect()
}
