//! Field-level validation errors, collected (not short-circuited) so a NACK
//! names every problem in a resource, as gRPC's ValidationErrors does.

use std::fmt;

/// Every problem found in one resource: `(field path, message)` pairs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValidationErrors {
    /// The message type validated, e.g. "Cluster".
    pub resource: &'static str,
    pub errors: Vec<(String, String)>,
}

impl ValidationErrors {
    pub fn new(resource: &'static str) -> Self {
        ValidationErrors {
            resource,
            errors: Vec::new(),
        }
    }

    pub fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.errors.push((field.into(), message.into()));
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// The parsed value if nothing was wrong, else these errors. A parser
    /// that gave up without saying why still yields an error, so an invalid
    /// resource can never pass silently.
    pub(super) fn into_result<T>(mut self, value: Option<T>) -> Result<T, ValidationErrors> {
        match value {
            Some(value) if self.is_empty() => Ok(value),
            None if self.is_empty() => {
                self.add("", "resource could not be parsed");
                Err(self)
            }
            _ => Err(self),
        }
    }
}

impl fmt::Display for ValidationErrors {
    /// `errors validating Cluster resource: [field:lb_policy error:...; ...]`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "errors validating {} resource: [", self.resource)?;
        for (i, (field, message)) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "field:{field} error:{message}")?;
        }
        f.write_str("]")
    }
}

/// A position in a resource being validated: errors added here are recorded
/// under the field path built so far. Nesting mirrors C-core's
/// `ValidationErrors::ScopedField`, so paths read the same as gRPC's NACKs:
/// `root.at(".virtual_hosts[0]").at(".domains")` is `virtual_hosts[0].domains`
/// (a top-level field loses its leading dot, as in C-core).
pub(super) struct FieldScope<'a> {
    errors: &'a mut ValidationErrors,
    path: String,
}

impl<'a> FieldScope<'a> {
    pub(super) fn root(errors: &'a mut ValidationErrors) -> Self {
        FieldScope {
            errors,
            path: String::new(),
        }
    }

    /// The scope of a sub-field: `ext` is appended as written (`.name`,
    /// `[3]`, `.value[type]`).
    pub(super) fn at(&mut self, ext: &str) -> FieldScope<'_> {
        let ext = if self.path.is_empty() {
            ext.strip_prefix('.').unwrap_or(ext)
        } else {
            ext
        };
        FieldScope {
            errors: self.errors,
            path: format!("{}{ext}", self.path),
        }
    }

    pub(super) fn error(&mut self, message: impl Into<String>) {
        self.errors.add(self.path.clone(), message);
    }

    /// How many errors the whole resource has so far; comparing two counts
    /// tells whether a sub-parse failed, as C-core's `errors->size()` does.
    pub(super) fn error_count(&self) -> usize {
        self.errors.errors.len()
    }
}
