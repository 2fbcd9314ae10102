//! The schedule file's shapes as serde reads them: every field optional and loosely typed, so
//! range, unit and per-kind errors come from validation with the field's path
//! (`faults[2].target`).
//!
//! A `[[faults]]` table takes `kind`, the timing fields, and the parameters of every registered
//! fault kind ([`crate::fault::KINDS`]), each read as the type its kind declares. Any other field
//! is refused by serde, with its line and the valid names, as `deny_unknown_fields` would.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};

use crate::fault::KINDS;
use crate::fault::ParamType;
use crate::workload::raw::{FromBare, StrOrTable};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSchedule {
    pub(super) name: Option<String>,
    pub(super) seed: Option<i64>,
    pub(super) systems: Option<Vec<String>>,
    pub(super) skipped_because: Option<String>,
    pub(super) cluster_size: Option<i64>,
    pub(super) expect: Option<toml::Value>,
    pub(super) faults: Option<Vec<RawFault>>,
}

/// One `[[faults]]` table, and also one entry of a mixed fault's `kinds` (which takes no
/// timing and no `kinds`: validation says so with the entry's path).
#[derive(Debug, Default)]
pub(super) struct RawFault {
    pub(super) kind: Option<String>,
    /// The kinds' parameters given, by their index in [`fields`] (so in the order the registry
    /// first names them).
    pub(super) params: BTreeMap<usize, RawValue>,
    // Timing.
    pub(super) start: Option<String>,
    pub(super) every: Option<String>,
    pub(super) jitter: Option<String>,
    pub(super) duration: Option<String>,
}

/// A parameter's value, as its kind declared its type.
#[derive(Debug)]
pub(super) enum RawValue {
    Text(String),
    Flag(bool),
    Number(f64),
    Kinds(Vec<RawFault>),
}

const TIMING: [&str; 4] = ["start", "every", "jitter", "duration"];

/// A chaos file's top-level fields, and the timing fields of a `[[faults]]` table (the kinds'
/// own parameters are [`crate::fault::KINDS`]').
pub(super) fn file_fields() -> (&'static [&'static str], &'static [&'static str]) {
    (
        crate::workload::raw::struct_fields::<RawSchedule>(),
        &TIMING,
    )
}

/// Every field a `[[faults]]` table takes: `kind`, each registered kind's parameters (each name
/// once, first kind first), then the timing; with each parameter's type.
fn fields() -> &'static (Vec<&'static str>, Vec<Option<ParamType>>) {
    static FIELDS: LazyLock<(Vec<&'static str>, Vec<Option<ParamType>>)> = LazyLock::new(|| {
        let mut names = vec!["kind"];
        let mut types = vec![None];
        for p in KINDS.iter().flat_map(|k| k.parameters) {
            if !names.contains(&p.name) {
                names.push(p.name);
                types.push(Some(p.ty));
            }
        }
        names.extend(TIMING);
        types.extend(TIMING.map(|_| None));
        (names, types)
    });
    &FIELDS
}

/// The field names as serde's unknown-field error lists them.
fn field_names() -> &'static [&'static str] {
    static NAMES: LazyLock<&'static [&'static str]> =
        LazyLock::new(|| Box::leak(fields().0.clone().into_boxed_slice()));
    &NAMES
}

/// A key of a `[[faults]]` table, as its index in [`fields`]; unknown keys fail here, on the
/// key, so the error points at its line.
struct Field(usize);

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("field identifier")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Field, E> {
                field_names()
                    .iter()
                    .position(|n| *n == s)
                    .map(Field)
                    .ok_or_else(|| E::unknown_field(s, field_names()))
            }
        }
        d.deserialize_identifier(V)
    }
}

impl<'de> Deserialize<'de> for RawFault {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawFault;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("struct RawFault")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawFault, A::Error> {
                let mut out = RawFault::default();
                while let Some(Field(i)) = map.next_key()? {
                    let slot = match fields().0[i] {
                        "kind" => &mut out.kind,
                        "start" => &mut out.start,
                        "every" => &mut out.every,
                        "jitter" => &mut out.jitter,
                        "duration" => &mut out.duration,
                        _ => {
                            let value = match fields().1[i] {
                                Some(ParamType::Flag) => RawValue::Flag(map.next_value()?),
                                Some(ParamType::Number) => RawValue::Number(map.next_value()?),
                                Some(ParamType::Kinds) => RawValue::Kinds(
                                    map.next_value::<Vec<StrOrTable<RawFault>>>()?
                                        .into_iter()
                                        .map(|e| e.0)
                                        .collect(),
                                ),
                                Some(ParamType::Text) | None => RawValue::Text(map.next_value()?),
                            };
                            out.params.insert(i, value);
                            continue;
                        }
                    };
                    *slot = Some(map.next_value()?);
                }
                Ok(out)
            }
        }
        d.deserialize_struct("RawFault", field_names(), V)
    }
}

impl FromBare for RawFault {
    fn from_bare(kind: String) -> Self {
        RawFault {
            kind: Some(kind),
            ..RawFault::default()
        }
    }
}

impl RawFault {
    /// The parameters given, by name, so a parameter that does not apply to a kind is named.
    pub(super) fn given_parameters(&self) -> Vec<&'static str> {
        self.params.keys().map(|&i| fields().0[i]).collect()
    }

    /// The value of parameter `name`, if given.
    pub(super) fn param(&self, name: &str) -> Option<&RawValue> {
        let i = fields().0.iter().position(|n| *n == name)?;
        self.params.get(&i)
    }

    /// The timing fields given, by name.
    pub(super) fn given_timing(&self) -> Vec<&'static str> {
        [
            ("start", self.start.is_some()),
            ("every", self.every.is_some()),
            ("jitter", self.jitter.is_some()),
            ("duration", self.duration.is_some()),
        ]
        .into_iter()
        .filter_map(|(n, given)| given.then_some(n))
        .collect()
    }
}
