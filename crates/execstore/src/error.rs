//! The one error type every store returns.

use std::error::Error as StdError;
use std::fmt;

/// What went wrong, in terms a caller can act on.
///
/// Backends map their own failures into these kinds; the original error stays reachable
/// through [`std::error::Error::source`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A CAS write lost: the stored execution is not at the version the caller loaded.
    /// Nothing of the write was applied and the caller's in-memory version is unchanged;
    /// reload and retry, or drop the stale work.
    #[error("stale write to {id}: expected version {expected}, found {}", Found(*found))]
    Conflict {
        /// The execution written.
        id: String,
        /// The version the caller loaded (and the write required).
        expected: i64,
        /// The version stored now; `None` when no such execution is stored.
        found: Option<i64>,
    },
    /// The caller passed something the store cannot accept. Nothing was changed.
    #[error("invalid input: {field}: {reason}")]
    InvalidInput {
        /// Which argument or field, e.g. `timers[1].fire_at`.
        field: String,
        /// Why it was refused.
        reason: String,
    },
    /// The operation names something that is not stored.
    #[error("not found: {what} {key}")]
    NotFound {
        /// The kind of thing (`execution`, `outbox entry`, ...).
        what: &'static str,
        /// Its key as given.
        key: String,
    },
    /// The operation would create something that already exists: an event id already in a
    /// workspace's log. Nothing was changed.
    #[error("already exists: {what} {key}")]
    AlreadyExists {
        /// The kind of thing (`event`, ...).
        what: &'static str,
        /// Its key as given.
        key: String,
    },
    /// Stored data could not be read back (not JSON, or not of the expected shape).
    #[error("stored data is unreadable: {what}: {reason}")]
    Corrupt {
        /// Which stored record.
        what: String,
        /// The parse failure.
        reason: String,
    },
    /// The backend failed. `retryable` says whether the same call may succeed later
    /// (a lock held too long, a dropped connection) or not (a full disk, a read-only file).
    #[error("backend failure ({}): {message}", if *retryable { "retryable" } else { "permanent" })]
    Backend {
        /// What the backend said.
        message: String,
        /// Whether retrying the same call can help.
        retryable: bool,
        /// The backend's own error.
        #[source]
        source: Option<Box<dyn StdError + Send + Sync>>,
    },
}

struct Found(Option<i64>);

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(v) => write!(f, "{v}"),
            None => f.write_str("none"),
        }
    }
}

impl StoreError {
    /// An [`StoreError::InvalidInput`] for `field`.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        StoreError::InvalidInput {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The same error with an [`StoreError::InvalidInput`]'s field put under `prefix`
    /// (`"id"` under `"emits[0].event"`: `"emits[0].event.id"`); any other error unchanged.
    /// Checks name a field relative to what they check, and the path is built only when one
    /// fails.
    pub fn within(self, prefix: impl FnOnce() -> String) -> Self {
        match self {
            StoreError::InvalidInput { field, reason } => StoreError::InvalidInput {
                field: format!("{}.{field}", prefix()),
                reason,
            },
            other => other,
        }
    }

    /// A [`StoreError::Backend`] wrapping `source`.
    pub fn backend(source: impl StdError + Send + Sync + 'static, retryable: bool) -> Self {
        StoreError::Backend {
            message: source.to_string(),
            retryable,
            source: Some(Box::new(source)),
        }
    }

    /// Whether the same call may succeed if tried again. A [`StoreError::Conflict`] is
    /// retryable only after reloading, so it answers `false` here.
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Backend { retryable: true, .. })
    }

    /// Every kind's [`StoreError::code`], in the order of the variants: the one list the
    /// surfaces outside Rust derive theirs from or are checked against (the wasm package's
    /// errors and `types.d.ts`, `wit/store.wit`'s `store-error`, the monitor API's statuses,
    /// [`crate::executions::GroupCommit`]'s copy of an error for each waiting caller; see
    /// `tests/error_codes.rs`).
    pub const CODES: &'static [&'static str] = &[
        "CONFLICT",
        "INVALID_INPUT",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "CORRUPT",
        "BACKEND",
    ];

    /// One error of each kind, in [`StoreError::CODES`] order: what a surface's tests map to
    /// check that they cover every kind (a backend failure here is retryable).
    pub fn examples() -> Vec<StoreError> {
        let all = vec![
            StoreError::Conflict {
                id: "exe-1".into(),
                expected: 2,
                found: Some(3),
            },
            StoreError::invalid("timers[0].fire_at", "NaN is not a finite number of seconds"),
            StoreError::NotFound {
                what: "execution",
                key: "exe-2".into(),
            },
            StoreError::AlreadyExists {
                what: "event",
                key: "ev-1".into(),
            },
            StoreError::Corrupt {
                what: "execution exe-3".into(),
                reason: "expected value at line 1 column 1".into(),
            },
            StoreError::Backend {
                message: "database is locked".into(),
                retryable: true,
                source: None,
            },
        ];
        // A new kind fails to compile here: add an example of it above, and its code to CODES.
        for e in &all {
            match e {
                StoreError::Conflict { .. }
                | StoreError::InvalidInput { .. }
                | StoreError::NotFound { .. }
                | StoreError::AlreadyExists { .. }
                | StoreError::Corrupt { .. }
                | StoreError::Backend { .. } => {}
            }
        }
        all
    }

    /// A stable upper-case code for the kind, as surfaces outside Rust report it: one of
    /// [`StoreError::CODES`].
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Conflict { .. } => "CONFLICT",
            StoreError::InvalidInput { .. } => "INVALID_INPUT",
            StoreError::NotFound { .. } => "NOT_FOUND",
            StoreError::AlreadyExists { .. } => "ALREADY_EXISTS",
            StoreError::Corrupt { .. } => "CORRUPT",
            StoreError::Backend { .. } => "BACKEND",
        }
    }
}

/// The result of every store operation.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_example_and_one_distinct_code_per_kind() {
        let codes: Vec<&str> = StoreError::examples().iter().map(StoreError::code).collect();
        assert_eq!(codes, StoreError::CODES, "examples() follows CODES, kind by kind");
        let distinct: std::collections::BTreeSet<&str> = codes.iter().copied().collect();
        assert_eq!(distinct.len(), codes.len());
        assert!(codes
            .iter()
            .all(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')));
    }
}
