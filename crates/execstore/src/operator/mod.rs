//! The operator's records, kept beside the data: the audit log (who did what to which
//! execution or workspace, why, and how it ended) and the team's saved views (a named
//! filter set of the monitor's list). A sibling of [`crate::executions`] and
//! [`crate::workspace`]: its own tables, which harel and reflexr never read.
//!
//! * [`OperatorStore::record_audit`] appends one [`AuditEntry`] and returns its id (ids
//!   increase in the order entries are recorded); [`OperatorStore::list_audit`] lists them
//!   newest first, filtered by an [`AuditQuery`] (target, actor, time window) and paged by
//!   keyset ([`AuditQuery::before`]: the last id of the previous page).
//! * [`OperatorStore::list_views`], [`OperatorStore::put_view`] and
//!   [`OperatorStore::delete_view`] keep [`SavedView`]s by name.
//!
//! Every argument is checked here ([`check_entry`], [`check_query`], [`check_view`]) before
//! a backend writes: bad input is [`StoreError::InvalidInput`] and changes nothing.
//! [`MemoryOperatorStore`] keeps them in memory; `execstore-sqlite` and `execstore-postgres`
//! in their `execstore_audit` and `execstore_views` tables. The behaviour suite is
//! `execstore::conformance::operator` (feature `conformance`).

mod memory;

pub use memory::MemoryOperatorStore;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Result, StoreError};
use crate::kit::validate::{check_time, MAX_PAGE};

/// The longest reason, in characters.
pub const MAX_REASON_CHARS: usize = 500;
/// The longest actor, role, action or view name, in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// The longest target, outcome message or view query, in bytes.
pub const MAX_TEXT_BYTES: usize = 8192;
/// The most bytes an entry's parameters take as JSON.
pub const MAX_PARAMS_BYTES: usize = 16 * 1024;

/// The outcome of an action that succeeded.
pub const OK: &str = "ok";

/// The outcome an entry is recorded with before its action runs; set to the real outcome
/// ([`OperatorStore::set_audit_outcome`]) once the action has ended. An entry still
/// `PENDING` after its process is gone records an action whose outcome is unknown: it may
/// or may not have been made ([`PENDING_MEANS`]).
pub const PENDING: &str = "PENDING";

/// What a [`PENDING`] entry means, as every surface shows it.
pub const PENDING_MEANS: &str = "outcome unknown (the process stopped before it was recorded)";

/// One audit entry: one write the monitor was asked to make.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Its id, given by the store when recorded (ignored by [`OperatorStore::record_audit`]).
    pub id: i64,
    /// When, in epoch seconds.
    pub at: f64,
    /// Who: the token's name, or `anonymous` when the request named no known token.
    pub actor: String,
    /// The actor's role (`read`, `act`, `admin`), or empty when unknown.
    pub role: String,
    /// What: the action (`suspend`, `bulk.terminate`, `outbox.ack`, `views.put`...).
    pub action: String,
    /// On what: an execution id, a workspace path, an outbox seq, a view's name (empty: none).
    pub target: String,
    /// Why, as the operator wrote it (empty when the request carried none and was refused).
    pub reason: String,
    /// How it ended: [`OK`], or the error's code (`CONFLICT`, `FORBIDDEN`...); [`PENDING`]
    /// while the action runs, and for good if the process stopped before recording it.
    pub outcome: String,
    /// The error's message, when it failed.
    pub message: Option<String>,
    /// The request's parameters (`expected_version`, a bulk action's targets...).
    pub params: Map<String, Value>,
}

/// Which entries [`OperatorStore::list_audit`] lists: all of them filtered by every field
/// set, newest first, at most `limit`.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditQuery {
    /// Only entries on this target.
    pub target: Option<String>,
    /// Only entries by this actor.
    pub actor: Option<String>,
    /// Only entries at or after this time (epoch seconds).
    pub since: Option<f64>,
    /// Only entries before this time (epoch seconds).
    pub until: Option<f64>,
    /// Only entries with an id below this one (the keyset: the previous page's last id).
    pub before: Option<i64>,
    /// The most entries (1..=[`MAX_PAGE`]).
    pub limit: usize,
}

impl Default for AuditQuery {
    fn default() -> Self {
        AuditQuery {
            target: None,
            actor: None,
            since: None,
            until: None,
            before: None,
            limit: 50,
        }
    }
}

impl AuditQuery {
    /// Every entry, newest first, 50 to a page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `entry` is one this query lists (`before` and `limit` aside).
    pub fn matches(&self, entry: &AuditEntry) -> bool {
        self.target.as_ref().is_none_or(|t| *t == entry.target)
            && self.actor.as_ref().is_none_or(|a| *a == entry.actor)
            && self.since.is_none_or(|s| entry.at >= s)
            && self.until.is_none_or(|u| entry.at < u)
            && self.before.is_none_or(|b| entry.id < b)
    }
}

/// A saved view: a name for a filter set of the monitor's list (the list URL's query).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedView {
    /// Its name, unique in the store.
    pub name: String,
    /// The list URL's query, without the `?` (`status=FAILED&definition=order`).
    pub query: String,
    /// Who saved it last (a token's name).
    pub owner: String,
    /// When it was saved last, in epoch seconds.
    pub updated_at: f64,
}

/// The operator's records (module docs). All methods take `&self`, so one store is shared
/// between threads.
pub trait OperatorStore: Send + Sync {
    /// Appends `entry` (its `id` is ignored) and returns the id it was given, larger than
    /// every id recorded before in this store.
    fn record_audit(&self, entry: &AuditEntry) -> Result<i64>;

    /// Sets the outcome (and the error's message, `None` for a success) of the entry `id`,
    /// recorded [`PENDING`] before its action ran; `false` if there is no entry `id`. Only a
    /// `PENDING` entry changes: an entry whose outcome is already set is refused
    /// ([`StoreError::InvalidInput`], field `id`), so a record, once complete, stays as it was.
    fn set_audit_outcome(&self, id: i64, outcome: &str, message: Option<&str>) -> Result<bool>;

    /// The entries `query` selects, newest (largest id) first.
    fn list_audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>>;

    /// Every saved view, by name.
    fn list_views(&self) -> Result<Vec<SavedView>>;

    /// Saves `view`, replacing the one of the same name.
    fn put_view(&self, view: &SavedView) -> Result<()>;

    /// Removes the view `name`; `false` if there was none.
    fn delete_view(&self, name: &str) -> Result<bool>;
}

/// A shared store is a store.
impl<T: OperatorStore + ?Sized> OperatorStore for std::sync::Arc<T> {
    fn record_audit(&self, entry: &AuditEntry) -> Result<i64> {
        (**self).record_audit(entry)
    }
    fn set_audit_outcome(&self, id: i64, outcome: &str, message: Option<&str>) -> Result<bool> {
        (**self).set_audit_outcome(id, outcome, message)
    }
    fn list_audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>> {
        (**self).list_audit(query)
    }
    fn list_views(&self) -> Result<Vec<SavedView>> {
        (**self).list_views()
    }
    fn put_view(&self, view: &SavedView) -> Result<()> {
        (**self).put_view(view)
    }
    fn delete_view(&self, name: &str) -> Result<bool> {
        (**self).delete_view(name)
    }
}

fn check_chars(field: &str, value: &str, max: usize, empty_ok: bool) -> Result<()> {
    if !empty_ok && value.is_empty() {
        return Err(StoreError::invalid(field, "must not be empty"));
    }
    let n = value.chars().count();
    if n > max {
        return Err(StoreError::invalid(
            field,
            format!("{n} characters is more than {max}"),
        ));
    }
    if value.chars().any(|c| c == '\0') {
        return Err(StoreError::invalid(field, "must not hold a NUL character"));
    }
    Ok(())
}

fn check_bytes(field: &str, value: &str, max: usize) -> Result<()> {
    if value.len() > max {
        return Err(StoreError::invalid(
            field,
            format!("{} bytes is more than {max}", value.len()),
        ));
    }
    if value.contains('\0') {
        return Err(StoreError::invalid(field, "must not hold a NUL character"));
    }
    Ok(())
}

/// Checks an entry before it is recorded; returns its parameters as the JSON text a backend
/// stores.
pub fn check_entry(entry: &AuditEntry) -> Result<String> {
    check_time("at", entry.at)?;
    check_chars("actor", &entry.actor, MAX_NAME_CHARS, false)?;
    check_chars("role", &entry.role, MAX_NAME_CHARS, true)?;
    check_chars("action", &entry.action, MAX_NAME_CHARS, false)?;
    check_bytes("target", &entry.target, MAX_TEXT_BYTES)?;
    check_chars("reason", &entry.reason, MAX_REASON_CHARS, true)?;
    check_chars("outcome", &entry.outcome, MAX_NAME_CHARS, false)?;
    if let Some(message) = &entry.message {
        check_bytes("message", message, MAX_TEXT_BYTES)?;
    }
    let params =
        serde_json::to_string(&entry.params).map_err(|e| StoreError::invalid("params", e.to_string()))?;
    if params.len() > MAX_PARAMS_BYTES {
        return Err(StoreError::invalid(
            "params",
            format!("{} bytes of JSON is more than {MAX_PARAMS_BYTES}", params.len()),
        ));
    }
    if params.contains("\\u0000") {
        return Err(StoreError::invalid("params", "must not hold a NUL character"));
    }
    Ok(params)
}

/// Checks [`OperatorStore::set_audit_outcome`]'s arguments: a positive id, an outcome that
/// is a recorded one (not empty, not [`PENDING`]), a message within bounds.
pub fn check_outcome(id: i64, outcome: &str, message: Option<&str>) -> Result<()> {
    if id < 1 {
        return Err(StoreError::invalid("id", format!("{id} is not a positive id")));
    }
    check_chars("outcome", outcome, MAX_NAME_CHARS, false)?;
    if outcome == PENDING {
        return Err(StoreError::invalid(
            "outcome",
            "PENDING is the outcome before the action, not one to set",
        ));
    }
    if let Some(message) = message {
        check_bytes("message", message, MAX_TEXT_BYTES)?;
    }
    Ok(())
}

/// The refusal of [`OperatorStore::set_audit_outcome`] on an entry whose outcome is set.
pub fn outcome_already_set(id: i64, outcome: &str) -> StoreError {
    StoreError::invalid(
        "id",
        format!("audit entry {id} already has the outcome {outcome:?}: only a PENDING entry is completed"),
    )
}

/// Checks a listing's query.
pub fn check_query(query: &AuditQuery) -> Result<()> {
    if query.limit == 0 || query.limit > MAX_PAGE {
        return Err(StoreError::invalid(
            "limit",
            format!("{} is not in 1..={MAX_PAGE}", query.limit),
        ));
    }
    if let Some(t) = &query.target {
        check_bytes("target", t, MAX_TEXT_BYTES)?;
    }
    if let Some(a) = &query.actor {
        check_chars("actor", a, MAX_NAME_CHARS, false)?;
    }
    for (field, t) in [("since", query.since), ("until", query.until)] {
        if let Some(t) = t {
            check_time(field, t)?;
        }
    }
    if let Some(b) = query.before {
        if b < 1 {
            return Err(StoreError::invalid("before", format!("{b} is not a positive id")));
        }
    }
    Ok(())
}

/// Checks a view's name.
pub fn check_view_name(name: &str) -> Result<()> {
    check_chars("name", name, MAX_NAME_CHARS, false)?;
    if name.chars().any(char::is_control) {
        return Err(StoreError::invalid("name", "must not hold control characters"));
    }
    if name.trim() != name {
        return Err(StoreError::invalid(
            "name",
            "must not start or end with white space",
        ));
    }
    Ok(())
}

/// Checks a view before it is saved.
pub fn check_view(view: &SavedView) -> Result<()> {
    check_view_name(&view.name)?;
    check_bytes("query", &view.query, MAX_TEXT_BYTES)?;
    check_chars("owner", &view.owner, MAX_NAME_CHARS, false)?;
    check_time("updated_at", view.updated_at)
}

/// Reads a stored entry's parameters back (a backend's rows); not a JSON object is corrupt.
pub fn parse_params(id: i64, text: &str) -> Result<Map<String, Value>> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(StoreError::Corrupt {
            what: "audit entry".into(),
            reason: format!("entry {id}: params is not a JSON object"),
        }),
        Err(e) => Err(StoreError::Corrupt {
            what: "audit entry".into(),
            reason: format!("entry {id}: params: {e}"),
        }),
    }
}
