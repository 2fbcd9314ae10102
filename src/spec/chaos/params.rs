//! What a fault kind reads its parameters through: one `[[faults]]` table (or one entry of a
//! mixed fault's `kinds`) with its path, and the schedule's validator, so every error a kind
//! raises names the file, the field's path (`faults[2].target`) and what would be valid.

use std::fmt;
use std::time::Duration;

use super::raw::{RawFault, RawValue};
use crate::fault::{FaultKind, KINDS, Target};
use crate::spec::SpecError;
use crate::spec::validate::Validator;

/// The longest duration a schedule field takes.
pub(super) const DAY: Duration = Duration::from_secs(86_400);
/// The shortest window of a fault that has a `duration`.
const MIN_WINDOW: Duration = Duration::from_millis(1);

/// How a parameter's value is written in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// A string (a name or a duration).
    Text,
    /// `true` or `false`.
    Flag,
    /// A number.
    Number,
    /// A list of kinds, each a bare name or a table (a mixed fault's `kinds`).
    Kinds,
}

/// One field a fault kind takes besides `kind` and the timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Its name in the file.
    pub name: &'static str,
    /// How its value is written.
    pub ty: ParamType,
}

impl Param {
    /// A string field.
    pub const fn text(name: &'static str) -> Param {
        Param {
            name,
            ty: ParamType::Text,
        }
    }
    /// A `true`/`false` field.
    pub const fn flag(name: &'static str) -> Param {
        Param {
            name,
            ty: ParamType::Flag,
        }
    }
    /// A number field.
    pub const fn number(name: &'static str) -> Param {
        Param {
            name,
            ty: ParamType::Number,
        }
    }
    /// A list of kinds.
    pub const fn kinds(name: &'static str) -> Param {
        Param {
            name,
            ty: ParamType::Kinds,
        }
    }
}

/// One fault's table as a kind reads it.
pub struct Params<'a> {
    v: &'a Validator<'a>,
    path: String,
    kind: &'a str,
    raw: &'a RawFault,
}

impl<'a> Params<'a> {
    pub(super) fn new(
        v: &'a Validator<'a>,
        path: String,
        kind: &'a str,
        raw: &'a RawFault,
    ) -> Self {
        Params { v, path, kind, raw }
    }

    /// The kind's name as the file gives it.
    pub fn kind(&self) -> &str {
        self.kind
    }

    /// The table's path (`faults[0]`, `faults[0].kinds[1]`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The path of field `name` of this table.
    pub fn field(&self, name: &str) -> String {
        format!("{}.{name}", self.path)
    }

    /// Whether field `name` (a parameter or a timing field) is given.
    pub fn given(&self, name: &str) -> bool {
        self.raw.param(name).is_some() || self.raw.given_timing().contains(&name)
    }

    /// A string parameter, as written.
    pub fn text(&self, name: &str) -> Option<&'a str> {
        match self.raw.param(name) {
            Some(RawValue::Text(s)) => Some(s),
            _ => None,
        }
    }

    /// A `true`/`false` parameter.
    pub fn flag(&self, name: &str) -> Option<bool> {
        match self.raw.param(name) {
            Some(RawValue::Flag(b)) => Some(*b),
            _ => None,
        }
    }

    /// A number parameter.
    pub fn number(&self, name: &str) -> Option<f64> {
        match self.raw.param(name) {
            Some(RawValue::Number(n)) => Some(*n),
            _ => None,
        }
    }

    /// A list of kinds, each read as an entry of a mixed fault (no timing, no nesting), first
    /// error first; `None` when not given.
    pub fn kinds(&self, name: &str) -> Option<Result<Vec<FaultKind>, SpecError>> {
        let Some(RawValue::Kinds(entries)) = self.raw.param(name) else {
            return None;
        };
        Some(
            entries
                .iter()
                .enumerate()
                .map(|(j, e)| {
                    super::validate::kind(self.v, &format!("{}[{j}]", self.field(name)), e, true)
                })
                .collect(),
        )
    }

    /// Field `name` holds `value`, which is not valid: `expected` says what is.
    pub fn invalid(&self, name: &str, value: impl fmt::Display, expected: &str) -> SpecError {
        self.v.invalid(&self.field(name), value, expected)
    }

    /// Field `name` is missing: `hint` says what to set.
    pub fn missing(&self, name: &str, hint: &str) -> SpecError {
        self.v.missing(&self.field(name), hint)
    }

    /// Field `name` holds `value`, outside `valid`.
    pub fn out_of_range(&self, name: &str, value: impl fmt::Display, valid: &str) -> SpecError {
        self.v.out_of_range(&self.field(name), value, valid)
    }

    /// Fields that do not go together, in words.
    pub fn conflict(&self, message: String) -> SpecError {
        self.v.conflict(message)
    }

    /// Field `name`'s `text` as a duration from `min` up to a day.
    pub fn duration(&self, name: &str, text: &str, min: Duration) -> Result<Duration, SpecError> {
        self.v.duration(&self.field(name), text, min, DAY)
    }

    /// The `duration` field, required, at least 1 ms: how long a fault of kind `kind` lasts.
    pub fn duration_field(&self, kind: &str) -> Result<Duration, SpecError> {
        match &self.raw.duration {
            Some(t) => self.duration("duration", t, MIN_WINDOW),
            None => Err(self.missing(
                "duration",
                &format!(
                    "say how long the {kind} lasts until it is undone, e.g. duration = \"5s\""
                ),
            )),
        }
    }

    /// The `target` parameter, one of `valid`, `default` when absent.
    pub fn target(&self, valid: &[Target], default: Target) -> Result<Target, SpecError> {
        let names: Vec<&str> = valid.iter().map(|t| t.name()).collect();
        let expected = format!(
            "valid targets of kind \"{}\" are {}",
            self.kind,
            names.join(", ")
        );
        let Some(text) = self.text("target") else {
            return Ok(default);
        };
        let bad = || self.invalid("target", format!("\"{text}\""), &expected);
        let t: Target = text.parse().map_err(|_| bad())?;
        if !valid.contains(&t) {
            return Err(bad());
        }
        Ok(t)
    }

    /// "valid kinds are ...", every registered kind.
    pub fn valid_kinds(&self) -> String {
        valid_kinds()
    }
}

/// "valid kinds are ...", every registered kind in registry order.
pub(super) fn valid_kinds() -> String {
    let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
    format!("valid kinds are {}", names.join(", "))
}
