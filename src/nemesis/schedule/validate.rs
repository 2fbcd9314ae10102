//! Turns the raw schedule into a [`Schedule`]: the schedule's own fields, each fault's timing
//! and window, and the checks every kind shares, each error naming the field's path and what
//! would be valid. A kind's own parameters are read by the kind ([`crate::fault::Kind::read`]).

use std::time::Duration;

use super::params::Table;
use super::raw::{RawFault, RawSchedule};
use super::{FaultKind, FaultSpec, NO_CHAOS, Schedule, Timing};
use crate::fault;
use crate::fault::{DAY, Params, valid_kinds};
use crate::system::{FACTS, System};
use crate::workload::SpecError;
use crate::workload::validate::Validator;

const MIN_EVERY: Duration = Duration::from_millis(100);

pub(super) fn schedule(origin: &str, raw: RawSchedule) -> Result<Schedule, SpecError> {
    let v = Validator { origin };
    let name = v.name(raw.name)?;
    let seed = v.range("seed", raw.seed, Some(1), (0, i64::MAX))? as u64;
    let systems = systems(&v, raw.systems)?;
    let skipped_because = match (raw.skipped_because, &systems) {
        (None, _) => None,
        (Some(w), _) if w.trim().is_empty() => {
            return Err(v.invalid(
                "skipped_because",
                "\"\"",
                "a sentence saying why the systems not in 'systems' are left out",
            ));
        }
        (Some(_), None) => {
            return Err(v.conflict(
                "field 'skipped_because' says why systems are left out, and 'systems' leaves \
                 none out: add systems = [...] naming the ones it runs on, or remove \
                 'skipped_because'"
                    .into(),
            ));
        }
        (Some(w), Some(_)) => Some(w.trim().to_string()),
    };
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
    refusals(&v, systems.as_deref(), &faults)?;
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
        skipped_because,
        cluster_size,
        expect,
        faults,
    })
}

/// A kind that cannot run on some systems (the clock fault, modelled on Redis by cutting TTLs:
/// ZooKeeper sessions and etcd leases are timed on monotonic clocks, so a wall-clock jump would
/// do nothing there while its window read as a fault survived) refuses a schedule that may put it
/// there: the schedule must name only systems it runs on.
fn refusals(
    v: &Validator,
    systems: Option<&[System]>,
    faults: &[FaultSpec],
) -> Result<(), SpecError> {
    for (i, f) in faults.iter().enumerate() {
        let Some(refusal) = f.kind.refusal() else {
            continue;
        };
        let named: Vec<System> = match systems {
            None => refusal.systems.clone(),
            Some(s) => s
                .iter()
                .copied()
                .filter(|s| refusal.systems.contains(s))
                .collect(),
        };
        if named.is_empty() {
            continue;
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
        return Err(v.invalid(
            "systems",
            value,
            &format!(
                "faults[{i}] is a {} fault, which cannot run on {}: {}",
                refusal.kind,
                named
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(" and "),
                refusal.why
            ),
        ));
    }
    Ok(())
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
    let name = raw.kind.as_deref().map(str::trim).unwrap_or_default();
    let entry = fault::entry(name).expect("kind() read a registered kind");
    let window = (entry.window)(&Params::new(&Table::new(v, f.to_string(), name, &raw)))?;
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
                    entry.window_field,
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

/// A fault's kind with its parameters; `in_mixed` for an entry of a mixed fault's `kinds`. The
/// checks every kind shares come first (a kind is named and registered, the parameters given
/// are its own, a mixed entry has no timing and does not draw again); then the kind reads its
/// parameters.
pub(super) fn kind(
    v: &Validator,
    f: &str,
    raw: &RawFault,
    in_mixed: bool,
) -> Result<FaultKind, SpecError> {
    let name = raw
        .kind
        .as_deref()
        .map(str::trim)
        .ok_or_else(|| v.missing(&format!("{f}.kind"), &valid_kinds()))?;
    let Some(entry) = fault::entry(name) else {
        return Err(v.invalid(&format!("{f}.kind"), format!("\"{name}\""), &valid_kinds()));
    };
    let allowed = entry.parameter_names();
    for p in raw.given_parameters() {
        if !allowed.contains(&p) {
            return Err(v.conflict(format!(
                "field '{f}.{p}' does not apply to kind \"{name}\": it takes {}",
                allowed.join(", ")
            )));
        }
    }
    if in_mixed {
        if entry.composite {
            let plain = fault::plain_kinds();
            let (last, rest) = plain.split_last().expect("plain kinds are registered");
            return Err(v.invalid(
                &format!("{f}.kind"),
                format!("\"{name}\""),
                &format!(
                    "a {name} fault draws from plain kinds: list {} or {last}",
                    rest.join(", ")
                ),
            ));
        }
        // Its own window field (a kill's restart_after) first, then the timing, in file order.
        let window = (entry.window_field != "duration" && raw.param(entry.window_field).is_some())
            .then_some(entry.window_field);
        if let Some(t) = window.or(raw.given_timing().first().copied()) {
            return Err(v.conflict(format!(
                "field '{f}.{t}' does not belong in a mixed fault's kinds: every drawn kind \
                 starts and lasts as the mixed fault's start/every, jitter and duration say"
            )));
        }
    }
    fault::read(&Params::new(&Table::new(v, f.to_string(), name, raw)))
}
