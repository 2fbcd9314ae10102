//! What a fault kind reads its parameters through: one `[[faults]]` table (or one entry of a
//! mixed fault's `kinds`) with its path, so every error a kind raises names the file, the
//! field's path (`faults[2].target`) and what would be valid. The table itself is the schedule
//! reader's ([`crate::nemesis::schedule`]), behind [`ParamSource`]: the kinds need nothing from the
//! reader but this, so `fault` does not import `spec` (the schedule imports the kinds).

use std::fmt;
use std::time::Duration;

use super::{FaultKind, KINDS, Target};
use crate::spec_error::SpecError;

/// The longest duration a schedule field takes.
pub const DAY: Duration = Duration::from_secs(86_400);
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

/// One fault's table as the schedule reader holds it: its values as written, and the reader's
/// errors, each naming the file and the field's path.
pub trait ParamSource {
    /// The kind's name as the file gives it.
    fn kind(&self) -> &str;
    /// The table's path (`faults[0]`, `faults[0].kinds[1]`).
    fn path(&self) -> &str;
    /// Whether field `name` (a parameter or a timing field) is given.
    fn given(&self, name: &str) -> bool;
    /// A string parameter, as written.
    fn text(&self, name: &str) -> Option<&str>;
    /// A `true`/`false` parameter.
    fn flag(&self, name: &str) -> Option<bool>;
    /// A number parameter.
    fn number(&self, name: &str) -> Option<f64>;
    /// The `duration` timing field, as written.
    fn duration_text(&self) -> Option<&str>;
    /// A list of kinds at field `name`, each read as an entry of a mixed fault (no timing, no
    /// nesting), first error first; `None` when not given.
    fn kinds(&self, name: &str) -> Option<Result<Vec<FaultKind>, SpecError>>;
    /// Field path `field` holds `value`, which is not valid: `expected` says what is.
    fn invalid(&self, field: &str, value: &str, expected: &str) -> SpecError;
    /// Field path `field` is missing: `hint` says what to set.
    fn missing(&self, field: &str, hint: &str) -> SpecError;
    /// Field path `field` holds `value`, outside `valid`.
    fn out_of_range(&self, field: &str, value: &str, valid: &str) -> SpecError;
    /// Fields that do not go together, in words.
    fn conflict(&self, message: String) -> SpecError;
    /// Field path `field`'s `text` as a duration from `min` to `max`.
    fn duration(
        &self,
        field: &str,
        text: &str,
        min: Duration,
        max: Duration,
    ) -> Result<Duration, SpecError>;
}

/// One fault's table as a kind reads it.
#[derive(Clone, Copy)]
pub struct Params<'a> {
    src: &'a dyn ParamSource,
}

impl<'a> Params<'a> {
    /// The parameters in `src`.
    pub fn new(src: &'a dyn ParamSource) -> Self {
        Params { src }
    }

    /// The kind's name as the file gives it.
    pub fn kind(&self) -> &'a str {
        self.src.kind()
    }

    /// The table's path (`faults[0]`, `faults[0].kinds[1]`).
    pub fn path(&self) -> &'a str {
        self.src.path()
    }

    /// The path of field `name` of this table.
    pub fn field(&self, name: &str) -> String {
        format!("{}.{name}", self.path())
    }

    /// Whether field `name` (a parameter or a timing field) is given.
    pub fn given(&self, name: &str) -> bool {
        self.src.given(name)
    }

    /// A string parameter, as written.
    pub fn text(&self, name: &str) -> Option<&'a str> {
        self.src.text(name)
    }

    /// A `true`/`false` parameter.
    pub fn flag(&self, name: &str) -> Option<bool> {
        self.src.flag(name)
    }

    /// A number parameter.
    pub fn number(&self, name: &str) -> Option<f64> {
        self.src.number(name)
    }

    /// A list of kinds, each read as an entry of a mixed fault (no timing, no nesting), first
    /// error first; `None` when not given.
    pub fn kinds(&self, name: &str) -> Option<Result<Vec<FaultKind>, SpecError>> {
        self.src.kinds(name)
    }

    /// Field `name` holds `value`, which is not valid: `expected` says what is.
    pub fn invalid(&self, name: &str, value: impl fmt::Display, expected: &str) -> SpecError {
        self.src
            .invalid(&self.field(name), &value.to_string(), expected)
    }

    /// Field `name` is missing: `hint` says what to set.
    pub fn missing(&self, name: &str, hint: &str) -> SpecError {
        self.src.missing(&self.field(name), hint)
    }

    /// Field `name` holds `value`, outside `valid`.
    pub fn out_of_range(&self, name: &str, value: impl fmt::Display, valid: &str) -> SpecError {
        self.src
            .out_of_range(&self.field(name), &value.to_string(), valid)
    }

    /// Fields that do not go together, in words.
    pub fn conflict(&self, message: String) -> SpecError {
        self.src.conflict(message)
    }

    /// Field `name`'s `text` as a duration from `min` up to a day.
    pub fn duration(&self, name: &str, text: &str, min: Duration) -> Result<Duration, SpecError> {
        self.src.duration(&self.field(name), text, min, DAY)
    }

    /// The `duration` field, required, at least 1 ms: how long a fault of kind `kind` lasts.
    pub fn duration_field(&self, kind: &str) -> Result<Duration, SpecError> {
        match self.src.duration_text() {
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
            self.kind(),
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
pub fn valid_kinds() -> String {
    let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
    format!("valid kinds are {}", names.join(", "))
}
