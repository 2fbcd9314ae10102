//! A `[[faults]]` table (or one entry of a mixed fault's `kinds`) as the fault kinds read it:
//! [`Table`] is the [`ParamSource`] behind their [`crate::fault::Params`], answering from the
//! raw table with the schedule's validator, so every error names the file and the field.

use std::time::Duration;

use super::raw::{RawFault, RawValue};
use crate::fault::{FaultKind, ParamSource};
use crate::workload::SpecError;
use crate::workload::validate::Validator;

/// One fault's table, with its path and the validator of its file.
pub(super) struct Table<'a> {
    v: &'a Validator<'a>,
    path: String,
    kind: &'a str,
    raw: &'a RawFault,
}

impl<'a> Table<'a> {
    pub(super) fn new(
        v: &'a Validator<'a>,
        path: String,
        kind: &'a str,
        raw: &'a RawFault,
    ) -> Self {
        Table { v, path, kind, raw }
    }
}

impl ParamSource for Table<'_> {
    fn kind(&self) -> &str {
        self.kind
    }

    fn path(&self) -> &str {
        &self.path
    }

    fn given(&self, name: &str) -> bool {
        self.raw.param(name).is_some() || self.raw.given_timing().contains(&name)
    }

    fn text(&self, name: &str) -> Option<&str> {
        match self.raw.param(name) {
            Some(RawValue::Text(s)) => Some(s),
            _ => None,
        }
    }

    fn flag(&self, name: &str) -> Option<bool> {
        match self.raw.param(name) {
            Some(RawValue::Flag(b)) => Some(*b),
            _ => None,
        }
    }

    fn number(&self, name: &str) -> Option<f64> {
        match self.raw.param(name) {
            Some(RawValue::Number(n)) => Some(*n),
            _ => None,
        }
    }

    fn duration_text(&self) -> Option<&str> {
        self.raw.duration.as_deref()
    }

    fn kinds(&self, name: &str) -> Option<Result<Vec<FaultKind>, SpecError>> {
        let Some(RawValue::Kinds(entries)) = self.raw.param(name) else {
            return None;
        };
        let field = format!("{}.{name}", self.path);
        Some(
            entries
                .iter()
                .enumerate()
                .map(|(j, e)| super::validate::kind(self.v, &format!("{field}[{j}]"), e, true))
                .collect(),
        )
    }

    fn invalid(&self, field: &str, value: &str, expected: &str) -> SpecError {
        self.v.invalid(field, value, expected)
    }

    fn missing(&self, field: &str, hint: &str) -> SpecError {
        self.v.missing(field, hint)
    }

    fn out_of_range(&self, field: &str, value: &str, valid: &str) -> SpecError {
        self.v.out_of_range(field, value, valid)
    }

    fn conflict(&self, message: String) -> SpecError {
        self.v.conflict(message)
    }

    fn duration(
        &self,
        field: &str,
        text: &str,
        min: Duration,
        max: Duration,
    ) -> Result<Duration, SpecError> {
        self.v.duration(field, text, min, max)
    }
}
