//! The workspace log's records, each field for field the JSON reflexr 0.1.1 stores.
//!
//! Records that reflexr's engine owns (runs, rule progress, scope states, dead letters, the
//! rule inside a stored rule) are kept as their JSON documents, so unknown and future fields
//! survive; each checks on the way in the few fields a storage reads (a run's status and
//! due time, a dead letter's rule). Their text is Python's `json.dumps` of pydantic's
//! `model_dump(mode="json")`, as SQLAlchemy's JSON columns write it ([`crate::kit::pyjson`]).

use super::time::Timestamp;
use crate::error::{Result, StoreError};
use crate::executions::JsonObject;
use crate::kit::pyjson;
use crate::kit::validate::check_id;
use serde_json::Value;
use std::fmt;

/// A tenant's workspace: the unit of isolation, ordering and locking.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkspaceRef {
    /// The tenant.
    pub tenant_id: String,
    /// The workspace within the tenant.
    pub workspace_id: String,
}

impl WorkspaceRef {
    /// A workspace reference.
    pub fn new(tenant_id: impl Into<String>, workspace_id: impl Into<String>) -> Self {
        WorkspaceRef {
            tenant_id: tenant_id.into(),
            workspace_id: workspace_id.into(),
        }
    }

    /// Checks both ids (not empty, not over-long, no NUL).
    pub fn check(&self) -> Result<()> {
        check_id("tenant_id", &self.tenant_id)?;
        check_id("workspace_id", &self.workspace_id)
    }
}

impl fmt::Display for WorkspaceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.tenant_id, self.workspace_id)
    }
}

/// An event to append. The storage assigns its `seq` and `ts`.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The event's id, unique in the workspace's log.
    pub id: String,
    /// Who published it (reflexr's `Actor` as JSON, e.g. `{"kind": "source", "name": "mon"}`).
    pub actor: Value,
    /// The event: a JSON object whose `"type"` is its qualified type name.
    pub event: JsonObject,
    /// What caused it (reflexr's `Causation` as JSON), if a run emitted it.
    pub causation: Option<Value>,
    /// Its causal chain; `None` starts a new chain named by the entry's own id.
    pub correlation_id: Option<String>,
    /// The W3C trace context of the publishing span.
    pub traceparent: Option<String>,
}

impl Entry {
    /// An entry with no causation, correlation or trace context.
    pub fn new(id: impl Into<String>, actor: Value, event: JsonObject) -> Self {
        Entry {
            id: id.into(),
            actor,
            event,
            causation: None,
            correlation_id: None,
            traceparent: None,
        }
    }
}

/// A stored event with its position and attribution: reflexr's `Envelope`.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    /// Its position in the workspace's log, gap-free from 1.
    pub seq: i64,
    /// The event's id.
    pub id: String,
    /// When it was appended; never decreases within a workspace.
    pub ts: Timestamp,
    /// The workspace (not the tenant: reflexr's envelope names only the workspace).
    pub workspace_id: String,
    /// Who published it.
    pub actor: Value,
    /// What caused it, if a run emitted it.
    pub causation: Option<Value>,
    /// The id of the first event of its causal chain.
    pub correlation_id: String,
    /// The W3C trace context of the publishing span.
    pub traceparent: Option<String>,
    /// The event, with its `"type"`.
    pub event: JsonObject,
}

/// The event type of a reflexr fact that is a version of a stored rule.
pub const RULE_INSTALLED: &str = "reflexr:rule_installed";
/// The event type of a reflexr fact that archives a stored rule.
pub const RULE_ARCHIVED: &str = "reflexr:rule_archived";

impl Envelope {
    /// The event's type name (its `"type"`).
    pub fn event_type(&self) -> &str {
        self.event.get("type").and_then(Value::as_str).unwrap_or("")
    }

    /// The stored rule this envelope is a version of (a `rule_installed` or `rule_archived`
    /// fact), or `None`.
    pub fn stored_rule(&self) -> Option<&str> {
        match self.event_type() {
            RULE_INSTALLED | RULE_ARCHIVED => self.event.get("rule").and_then(Value::as_str),
            _ => None,
        }
    }

    /// The envelope as a JSON object, keys in reflexr's order.
    pub fn to_value(&self) -> Value {
        let mut map = JsonObject::new();
        map.insert("seq".into(), Value::from(self.seq));
        map.insert("id".into(), Value::from(self.id.clone()));
        map.insert("ts".into(), Value::from(self.ts.to_json_text()));
        map.insert("workspace_id".into(), Value::from(self.workspace_id.clone()));
        map.insert("actor".into(), self.actor.clone());
        map.insert("causation".into(), self.causation.clone().unwrap_or(Value::Null));
        map.insert("correlation_id".into(), Value::from(self.correlation_id.clone()));
        map.insert(
            "traceparent".into(),
            self.traceparent.clone().map(Value::from).unwrap_or(Value::Null),
        );
        map.insert("event".into(), Value::Object(self.event.clone()));
        Value::Object(map)
    }

    /// The envelope's JSON text exactly as reflexr stores it.
    pub fn to_json(&self) -> String {
        pyjson::dumps(&self.to_value())
    }

    /// Reads an envelope from its stored JSON.
    pub fn from_json(text: &str) -> Result<Self> {
        let value = pyjson::loads(text).map_err(|e| corrupt("envelope", e))?;
        Envelope::from_value(&value).map_err(|e| match e {
            StoreError::InvalidInput { field, reason } => StoreError::Corrupt {
                what: format!("envelope ({field})"),
                reason,
            },
            other => other,
        })
    }

    /// Reads an envelope from a JSON object.
    pub fn from_value(value: &Value) -> Result<Self> {
        let map = as_object("envelope", value)?;
        let seq = int_field(map, "seq")?;
        let event = match map.get("event") {
            Some(Value::Object(event)) => event.clone(),
            _ => return Err(StoreError::invalid("event", "must be a JSON object")),
        };
        check_event(&event)?;
        Ok(Envelope {
            seq,
            id: str_field(map, "id")?.to_owned(),
            ts: Timestamp::parse_json_text(str_field(map, "ts")?)?,
            workspace_id: str_field(map, "workspace_id")?.to_owned(),
            actor: map.get("actor").cloned().unwrap_or(Value::Null),
            causation: map.get("causation").filter(|v| !v.is_null()).cloned(),
            correlation_id: str_field(map, "correlation_id")?.to_owned(),
            traceparent: opt_str_field(map, "traceparent")?,
            event,
        })
    }
}

/// Checks an event object: a non-empty string `"type"`.
pub fn check_event(event: &JsonObject) -> Result<()> {
    match event.get("type") {
        Some(Value::String(t)) if !t.is_empty() => check_id("event.type", t),
        _ => Err(StoreError::invalid(
            "event.type",
            "an event must be a JSON object with a non-empty string \"type\"",
        )),
    }
}

/// Where a run is in its lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RunStatus {
    /// Waiting for its first attempt.
    Pending,
    /// An attempt is under way.
    Running,
    /// Waiting for a later attempt.
    Retrying,
    /// Finished well.
    Succeeded,
    /// Dead-lettered: out of attempts.
    Dead,
    /// Cancelled.
    Cancelled,
    /// Given up on while waiting.
    Skipped,
}

impl RunStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [RunStatus; 7] = [
        RunStatus::Pending,
        RunStatus::Running,
        RunStatus::Retrying,
        RunStatus::Succeeded,
        RunStatus::Dead,
        RunStatus::Cancelled,
        RunStatus::Skipped,
    ];

    /// The status as reflexr writes it (`pending`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Pending => "pending",
            RunStatus::Running => "running",
            RunStatus::Retrying => "retrying",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Dead => "dead",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Skipped => "skipped",
        }
    }

    /// Parses reflexr's spelling.
    pub fn parse(text: &str) -> Result<Self> {
        RunStatus::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| StoreError::invalid("status", format!("{text:?} is not a run status")))
    }

    /// Waiting for an attempt to start (`pending`, `retrying`).
    pub fn is_waiting(self) -> bool {
        matches!(self, RunStatus::Pending | RunStatus::Retrying)
    }

    /// Holds back the later runs of its scope under ordering (`pending`, `retrying`, `running`).
    pub fn is_holding(self) -> bool {
        self.is_waiting() || self == RunStatus::Running
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One firing's action: reflexr's `Run`, kept as its JSON document.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    doc: JsonObject,
    status: RunStatus,
    fired_seq: i64,
    next_attempt_at: Timestamp,
}

/// What a new pending run is made of ([`Run::pending`]).
#[derive(Clone, Debug)]
pub struct NewRun {
    /// The firing's id, also the run's.
    pub id: String,
    /// The rule that fired.
    pub rule: String,
    /// Its scope's key.
    pub scope_key: String,
    /// Its scope's field values.
    pub scope: JsonObject,
    /// The seq of the envelope that fired it.
    pub fired_seq: i64,
    /// The seqs of the envelopes it matched.
    pub matched: Vec<i64>,
    /// The causal chain.
    pub correlation_id: String,
    /// How many runs lie before it in its chain.
    pub depth: i64,
    /// When it was created (also its first due time).
    pub now: Timestamp,
}

impl Run {
    /// A pending run, every field as reflexr's `create_run` writes it.
    pub fn pending(new: NewRun) -> Result<Run> {
        let now = Value::from(new.now.to_json_text());
        let mut doc = JsonObject::new();
        doc.insert("id".into(), new.id.into());
        doc.insert("rule".into(), new.rule.into());
        doc.insert("scope_key".into(), new.scope_key.into());
        doc.insert("scope".into(), Value::Object(new.scope));
        doc.insert("fired_seq".into(), new.fired_seq.into());
        doc.insert(
            "matched".into(),
            Value::Array(new.matched.into_iter().map(Value::from).collect()),
        );
        doc.insert("correlation_id".into(), new.correlation_id.into());
        doc.insert("depth".into(), new.depth.into());
        doc.insert("status".into(), "pending".into());
        doc.insert("attempts".into(), 0.into());
        doc.insert("next_attempt_at".into(), now.clone());
        doc.insert("created_at".into(), now.clone());
        doc.insert("updated_at".into(), now);
        for key in ["error", "reason", "checkpoint", "step"] {
            doc.insert(key.into(), Value::Null);
        }
        doc.insert("checkpoints".into(), 0.into());
        doc.insert("output".into(), Value::Null);
        doc.insert("trace_ids".into(), Value::Array(Vec::new()));
        doc.insert("epoch".into(), 0.into());
        Run::from_doc(doc)
    }

    /// A run from its JSON document, checking the fields a storage reads.
    pub fn from_doc(doc: JsonObject) -> Result<Run> {
        for key in ["id", "rule", "scope_key"] {
            check_id(key, str_field(&doc, key)?)?;
        }
        let status = RunStatus::parse(str_field(&doc, "status")?)?;
        let fired_seq = int_field(&doc, "fired_seq")?;
        let next_attempt_at = Timestamp::parse_json_text(str_field(&doc, "next_attempt_at")?)
            .map_err(|e| retag(e, "next_attempt_at"))?;
        Ok(Run {
            doc,
            status,
            fired_seq,
            next_attempt_at,
        })
    }

    /// A run from its stored JSON text.
    pub fn from_json(text: &str) -> Result<Run> {
        let value = pyjson::loads(text).map_err(|e| corrupt("run", e))?;
        match value {
            Value::Object(doc) => Run::from_doc(doc).map_err(|e| into_corrupt("run", e)),
            _ => Err(corrupt("run", "not a JSON object")),
        }
    }

    /// This run with some fields replaced (keys keep their place; new keys go last), e.g.
    /// `{"status": "running", "attempts": 1, "updated_at": ...}`.
    pub fn with(&self, changes: JsonObject) -> Result<Run> {
        let mut doc = self.doc.clone();
        for (k, v) in changes {
            doc.insert(k, v);
        }
        Run::from_doc(doc)
    }

    /// The run's id.
    pub fn id(&self) -> &str {
        self.doc["id"].as_str().unwrap_or("")
    }
    /// Its rule.
    pub fn rule(&self) -> &str {
        self.doc["rule"].as_str().unwrap_or("")
    }
    /// Its scope's key.
    pub fn scope_key(&self) -> &str {
        self.doc["scope_key"].as_str().unwrap_or("")
    }
    /// Its status.
    pub fn status(&self) -> RunStatus {
        self.status
    }
    /// The seq of the envelope that fired it.
    pub fn fired_seq(&self) -> i64 {
        self.fired_seq
    }
    /// When its next attempt is due.
    pub fn next_attempt_at(&self) -> Timestamp {
        self.next_attempt_at
    }
    /// The whole document.
    pub fn doc(&self) -> &JsonObject {
        &self.doc
    }
    /// The JSON text reflexr stores.
    pub fn to_json(&self) -> String {
        pyjson::dumps(&self.doc)
    }
}

macro_rules! document {
    ($(#[$meta:meta])* $name:ident, $what:literal) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name(JsonObject);

        impl $name {
            /// From its JSON document.
            pub fn from_doc(doc: JsonObject) -> Self {
                $name(doc)
            }
            /// From its stored JSON text.
            pub fn from_json(text: &str) -> Result<Self> {
                match pyjson::loads(text).map_err(|e| corrupt($what, e))? {
                    Value::Object(doc) => Ok($name(doc)),
                    _ => Err(corrupt($what, "not a JSON object")),
                }
            }
            /// The whole document.
            pub fn doc(&self) -> &JsonObject {
                &self.0
            }
            /// The JSON text reflexr stores.
            pub fn to_json(&self) -> String {
                pyjson::dumps(&self.0)
            }
        }
    };
}

document!(
    /// Where a rule is in a workspace's log: reflexr's `RuleProgress`, as its document.
    RuleProgress,
    "rule progress"
);
document!(
    /// What a rule remembers about one scope: reflexr's `ScopeState`, as its document.
    ScopeState,
    "scope state"
);

/// A rule could not evaluate one envelope: reflexr's `EvaluationError` (a dead letter).
#[derive(Clone, Debug, PartialEq)]
pub struct EvaluationError(JsonObject);

impl EvaluationError {
    /// A dead letter with reflexr's three fields.
    pub fn new(rule: impl Into<String>, seq: i64, error: impl Into<String>) -> Self {
        let mut doc = JsonObject::new();
        doc.insert("rule".into(), Value::from(rule.into()));
        doc.insert("seq".into(), Value::from(seq));
        doc.insert("error".into(), Value::from(error.into()));
        EvaluationError(doc)
    }
    /// From its document, which must name its `rule`.
    pub fn from_doc(doc: JsonObject) -> Result<Self> {
        check_id("rule", str_field(&doc, "rule")?)?;
        Ok(EvaluationError(doc))
    }
    /// From its stored JSON text.
    pub fn from_json(text: &str) -> Result<Self> {
        match pyjson::loads(text).map_err(|e| corrupt("dead letter", e))? {
            Value::Object(doc) => EvaluationError::from_doc(doc).map_err(|e| into_corrupt("dead letter", e)),
            _ => Err(corrupt("dead letter", "not a JSON object")),
        }
    }
    /// The rule that failed.
    pub fn rule(&self) -> &str {
        self.0["rule"].as_str().unwrap_or("")
    }
    /// The whole document.
    pub fn doc(&self) -> &JsonObject {
        &self.0
    }
    /// The JSON text reflexr stores.
    pub fn to_json(&self) -> String {
        pyjson::dumps(&self.0)
    }
}

/// Whether a stored rule runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoredRuleStatus {
    /// It runs.
    Active,
    /// It stays stored but does not run.
    Archived,
}

impl StoredRuleStatus {
    /// reflexr's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            StoredRuleStatus::Active => "active",
            StoredRuleStatus::Archived => "archived",
        }
    }
    /// Parses reflexr's spelling.
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "active" => Ok(StoredRuleStatus::Active),
            "archived" => Ok(StoredRuleStatus::Archived),
            other => Err(StoreError::invalid(
                "status",
                format!("{other:?} is not active or archived"),
            )),
        }
    }
}

/// A rule installed in one workspace at runtime: reflexr's `StoredRule`.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRule {
    /// The rule as JSON (reflexr's `Rule.model_dump(mode="json")`); its `"name"` is the key.
    pub rule: JsonObject,
    /// The current version, from 1.
    pub version: i64,
    /// Active or archived.
    pub status: StoredRuleStatus,
    /// Where the change came from: opaque JSON kept as given.
    pub provenance: JsonObject,
}

impl StoredRule {
    /// The rule's name.
    pub fn name(&self) -> &str {
        self.rule.get("name").and_then(Value::as_str).unwrap_or("")
    }
    /// Checks the name and version.
    pub fn check(&self) -> Result<()> {
        match self.rule.get("name") {
            Some(Value::String(name)) => check_id("rule.name", name)?,
            _ => {
                return Err(StoreError::invalid(
                    "rule.name",
                    "a stored rule's rule needs a string \"name\"",
                ))
            }
        }
        if self.version < 1 {
            return Err(StoreError::invalid(
                "version",
                format!("{} is not a version (1 or more)", self.version),
            ));
        }
        // reflexr's column is an `Integer`: 32 bits in PostgreSQL.
        if i32::try_from(self.version).is_err() {
            return Err(StoreError::invalid(
                "version",
                format!("{} is beyond a stored rule's versions", self.version),
            ));
        }
        Ok(())
    }
}

/// An exclusive, expiring claim on a key.
#[derive(Clone, Debug, PartialEq)]
pub struct Lease {
    /// The key (`run:<id>` for a run's).
    pub key: String,
    /// Who holds it.
    pub holder: String,
    /// When it lapses.
    pub expires_at: Timestamp,
}

/// The lease key an executor holds on a run while it runs it.
pub fn run_lease(run_id: &str) -> String {
    format!("run:{run_id}")
}

/// A workspace's row: its log's head and counters.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkspaceInfo {
    /// Which workspace.
    pub workspace: WorkspaceRef,
    /// The seq of the latest envelope, or 0.
    pub head_seq: i64,
    /// The ts of the latest envelope.
    pub head_ts: Option<Timestamp>,
}

/// A workspace at a glance: what the monitor's workspace list and change token show of it,
/// from [`WorkspaceStorage::workspace_summaries`](super::WorkspaceStorage::workspace_summaries).
#[derive(Clone, Debug, PartialEq)]
pub struct WorkspaceSummary {
    /// Its head.
    pub info: WorkspaceInfo,
    /// Every cursor, by name.
    pub cursors: Vec<(String, i64)>,
    /// How many lease rows it has (expired ones included).
    pub leases: usize,
    /// How many dead letters it has.
    pub dead_letters: usize,
}

pub(crate) fn corrupt(what: &str, reason: impl fmt::Display) -> StoreError {
    StoreError::Corrupt {
        what: what.to_owned(),
        reason: reason.to_string(),
    }
}

fn into_corrupt(what: &str, e: StoreError) -> StoreError {
    match e {
        StoreError::InvalidInput { field, reason } => StoreError::Corrupt {
            what: format!("{what} ({field})"),
            reason,
        },
        other => other,
    }
}

fn retag(e: StoreError, field: &str) -> StoreError {
    match e {
        StoreError::InvalidInput { reason, .. } => StoreError::invalid(field, reason),
        other => other,
    }
}

fn as_object<'a>(what: &str, value: &'a Value) -> Result<&'a JsonObject> {
    value
        .as_object()
        .ok_or_else(|| StoreError::invalid(what, "must be a JSON object"))
}

fn str_field<'a>(map: &'a JsonObject, key: &str) -> Result<&'a str> {
    map.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| StoreError::invalid(key, "must be a string"))
}

pub(super) fn opt_str_field(map: &JsonObject, key: &str) -> Result<Option<String>> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(StoreError::invalid(key, "must be a string or null")),
    }
}

fn int_field(map: &JsonObject, key: &str) -> Result<i64> {
    map.get(key)
        .and_then(Value::as_i64)
        .ok_or_else(|| StoreError::invalid(key, "must be an integer"))
}
