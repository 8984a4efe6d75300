//! The stored shapes, field for field those of harel 0.9, so that a harel database and an
//! execstore database hold the same JSON.
//!
//! Field order is declaration order and is the JSON key order (`Execution.model_dump_json()`
//! in harel). Fields a newer engine adds are kept in `extra` and written back after the
//! known ones, so a round trip through execstore loses nothing.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::str::FromStr;

use crate::error::{Result, StoreError};

/// A JSON object whose keys keep their order (as Python dicts do).
pub type JsonObject = Map<String, Value>;

/// One step of an execution's timeline as the engine records it: a JSON object such as
/// `{"event_kind", "event_data", "from_path", "to_path", "actions", "context_out",
/// "timestamp"}`. [`crate::ExecutionStore::read_trace`] adds its `index`.
pub type TraceStep = JsonObject;

/// The lifecycle status of an execution (harel's `Status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    /// Created, not started.
    Pending,
    /// Started and not finished.
    Running,
    /// Reached a modelled terminal state.
    Done,
    /// Cancelled.
    Cancelled,
    /// Paused by the control plane.
    Suspended,
    /// A cooperative cancel is in flight.
    Cancelling,
    /// Aborted on an unhandled action error; `error` says which.
    Failed,
}

impl Status {
    /// Every status, in harel's declaration order.
    pub const ALL: [Status; 7] = [
        Status::Pending,
        Status::Running,
        Status::Done,
        Status::Cancelled,
        Status::Suspended,
        Status::Cancelling,
        Status::Failed,
    ];

    /// The stored spelling (`"RUNNING"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "PENDING",
            Status::Running => "RUNNING",
            Status::Done => "DONE",
            Status::Cancelled => "CANCELLED",
            Status::Suspended => "SUSPENDED",
            Status::Cancelling => "CANCELLING",
            Status::Failed => "FAILED",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = StoreError;

    /// Parses the stored spelling, case-insensitively.
    fn from_str(s: &str) -> Result<Self> {
        Status::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                StoreError::invalid(
                    "status",
                    format!("{s:?} is not one of PENDING RUNNING DONE CANCELLED SUSPENDED CANCELLING FAILED"),
                )
            })
    }
}

/// A stimulus processed by a state machine (harel's `Event`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The dedupe key under at-least-once delivery.
    pub id: String,
    /// The event's kind, e.g. `"Checkout"`.
    pub kind: String,
    /// When it was created: an ISO 8601 date-time as pydantic writes it, kept verbatim.
    #[serde(default)]
    pub created_time: Option<String>,
    /// When it was received: an ISO 8601 date-time, kept verbatim.
    #[serde(default)]
    pub received_time: Option<String>,
    /// The payload.
    #[serde(default)]
    pub data: JsonObject,
    /// Fields of a newer engine, kept and written back.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Event {
    /// An event with the given id and kind and no payload.
    pub fn new(id: impl Into<String>, kind: impl Into<String>) -> Self {
        Event {
            id: id.into(),
            kind: kind.into(),
            created_time: None,
            received_time: None,
            data: JsonObject::new(),
            extra: JsonObject::new(),
        }
    }

    /// The same event carrying `data`.
    pub fn with_data(mut self, data: JsonObject) -> Self {
        self.data = data;
        self
    }
}

/// A region spawned by an orthogonal parent (harel's `ChildState`): the join counter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChildState {
    /// The branch node the child runs.
    pub root_path: String,
    /// Whether it reported `Finished`.
    #[serde(default)]
    pub finished: bool,
    /// Its terminal outcome, carried on `Finished`.
    #[serde(default)]
    pub outcome: Option<String>,
    /// Its carried context.
    #[serde(default)]
    pub result: JsonObject,
    /// True for an `invoke` child (another definition).
    #[serde(default)]
    pub submachine: bool,
    /// Stable region key.
    #[serde(default)]
    pub key: String,
    /// Fields of a newer engine, kept and written back.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ChildState {
    /// A region child as its parent records it at the fork: running `root_path` under the
    /// region key `key`, not finished, nothing carried.
    pub fn region(root_path: impl Into<String>, key: impl Into<String>) -> Self {
        ChildState {
            root_path: root_path.into(),
            finished: false,
            outcome: None,
            result: JsonObject::new(),
            submachine: false,
            key: key.into(),
            extra: JsonObject::new(),
        }
    }
}

/// The serializable running instance of a definition (harel's `Execution`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Execution {
    /// Its id (harel: a uuid hex; a child's id extends its parent's).
    pub id: String,
    /// The definition it runs.
    pub definition_id: String,
    /// A submachine child's definition FQN.
    #[serde(default)]
    pub definition_fqn: Option<String>,
    /// The node it runs (`""` for a root execution).
    #[serde(default)]
    pub root_path: String,
    /// Lifecycle status.
    #[serde(default = "default_status")]
    pub status: Status,
    /// The result label of the terminal reached.
    #[serde(default)]
    pub outcome: Option<String>,
    /// With `FAILED`: the unhandled error.
    #[serde(default)]
    pub error: Option<String>,
    /// The full path of the active leaf state.
    #[serde(default)]
    pub active_path: Option<String>,
    /// Composite path to last active child path.
    #[serde(default)]
    pub history: JsonObject,
    /// The user context.
    #[serde(default)]
    pub context: JsonObject,
    /// How many events it processed.
    #[serde(default)]
    pub processed_events: i64,
    /// The optimistic-concurrency token: a write commits `version + 1` iff the stored row is
    /// still at `version`.
    #[serde(default)]
    pub version: i64,
    /// 0 (normal) to 4 (highest).
    #[serde(default)]
    pub priority: i64,
    /// On a child: the parent to notify.
    #[serde(default)]
    pub parent_id: Option<String>,
    /// On a child: its key in the parent's `children`.
    #[serde(default)]
    pub child_id: Option<String>,
    /// Events held by a `defer` state.
    #[serde(default)]
    pub deferred: Vec<Event>,
    /// On a parent: child id to join state.
    #[serde(default)]
    pub children: IndexMap<String, ChildState>,
    /// Spawn-site path to times entered.
    #[serde(default)]
    pub invoke_seq: IndexMap<String, i64>,
    /// First commit, epoch seconds.
    #[serde(default)]
    pub created_at: Option<f64>,
    /// Latest commit, epoch seconds.
    #[serde(default)]
    pub updated_at: Option<f64>,
    /// When it became DONE or CANCELLED.
    #[serde(default)]
    pub finished_at: Option<f64>,
    /// When its inactivity budget runs out.
    #[serde(default)]
    pub expires_at: Option<f64>,
    /// Fields of a newer engine, kept and written back.
    #[serde(flatten)]
    pub extra: JsonObject,
}

fn default_status() -> Status {
    Status::Pending
}

impl Execution {
    /// A new `PENDING` execution at version 0 (not stored yet).
    pub fn new(id: impl Into<String>, definition_id: impl Into<String>) -> Self {
        Execution {
            id: id.into(),
            definition_id: definition_id.into(),
            definition_fqn: None,
            root_path: String::new(),
            status: Status::Pending,
            outcome: None,
            error: None,
            active_path: None,
            history: JsonObject::new(),
            context: JsonObject::new(),
            processed_events: 0,
            version: 0,
            priority: 0,
            parent_id: None,
            child_id: None,
            deferred: Vec::new(),
            children: IndexMap::new(),
            invoke_seq: IndexMap::new(),
            created_at: None,
            updated_at: None,
            finished_at: None,
            expires_at: None,
            extra: JsonObject::new(),
        }
    }

    /// Parses an execution from its JSON; malformed or mistyped JSON is
    /// [`StoreError::InvalidInput`].
    pub fn from_json(json: &str) -> Result<Self> {
        serde_json::from_str(json).map_err(|e| StoreError::invalid("execution", e.to_string()))
    }

    /// The JSON as harel writes it (compact, fields in declaration order).
    pub fn to_json(&self) -> String {
        // Serializing these types cannot fail: every map key is a string.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A lightweight projection of an execution for list views (harel's `ExecutionSummary`,
/// plus `updated_at` for monitors).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExecutionSummary {
    /// Its id.
    pub id: String,
    /// Its definition.
    pub definition_id: String,
    /// Its status.
    pub status: Status,
    /// Its outcome.
    pub outcome: Option<String>,
    /// Its active leaf.
    pub active_path: Option<String>,
    /// Its stored version.
    pub version: i64,
    /// `None` for a root.
    pub parent_id: Option<String>,
    /// When it finished.
    pub finished_at: Option<f64>,
    /// Its latest commit time, when the engine stamped one.
    pub updated_at: Option<f64>,
    /// When it was created, when the engine stamped it (the key of
    /// [`crate::executions::ListOrder::CreatedDesc`]).
    #[serde(default)]
    pub created_at: Option<f64>,
}

impl ExecutionSummary {
    /// The summary of a full execution.
    pub fn of(exe: &Execution) -> Self {
        ExecutionSummary {
            id: exe.id.clone(),
            definition_id: exe.definition_id.clone(),
            status: exe.status,
            outcome: exe.outcome.clone(),
            active_path: exe.active_path.clone(),
            version: exe.version,
            parent_id: exe.parent_id.clone(),
            finished_at: exe.finished_at,
            updated_at: exe.updated_at,
            created_at: exe.created_at,
        }
    }
}

/// A stored execution that cannot be read, as
/// [`crate::ExecutionStore::unreadable_executions`] names it: which row, which field, what is
/// wrong.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UnreadableRow {
    /// The execution's id.
    pub id: String,
    /// The stored field that cannot be read (`data`: harel's JSON document).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

/// One page of [`crate::ExecutionStore::list_executions`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutionPage {
    /// Up to `limit` summaries, ordered by id.
    pub items: Vec<ExecutionSummary>,
    /// Pass back as the query's cursor for the next page; `None` when this page is the last.
    pub next_cursor: Option<String>,
    /// The paths of the query's `where` filter that the store answered by a scan (not a
    /// declared search attribute); empty when every path is indexed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scan: Vec<String>,
}

impl ExecutionPage {
    /// The page of a listing that read up to `limit + 1` summaries in id order: the first
    /// `limit` of them, and a cursor after the last of those only if there was one more (so
    /// the last page has none, and no page is read just to find it empty).
    pub fn from_overfetch(mut items: Vec<ExecutionSummary>, limit: usize) -> Self {
        let next_cursor = if items.len() > limit {
            items.truncate(limit);
            items
                .last()
                .map(|last| crate::executions::cursor::encode_cursor(&last.id))
        } else {
            None
        };
        ExecutionPage {
            items,
            next_cursor,
            scan: Vec::new(),
        }
    }

    /// This page with these items and cursor.
    pub fn with_items(mut self, items: Vec<ExecutionSummary>, next_cursor: Option<String>) -> Self {
        self.items = items;
        self.next_cursor = next_cursor;
        self
    }

    /// This page, saying that `scan` (see [`ExecutionPage::scan`]) were scanned.
    pub fn scanned(mut self, scan: Vec<String>) -> Self {
        self.scan = scan;
        self
    }
}

/// An event a commit emitted, awaiting delivery.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboxEntry {
    /// Monotonic delivery order; the ack key.
    pub seq: i64,
    /// The execution to deliver to (`None`: no specific target).
    pub target_id: Option<String>,
    /// The event.
    pub event: Event,
}

/// A pending child creation (an orthogonal fork) awaiting the relay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpawnEntry {
    /// Monotonic order; the ack key.
    pub seq: i64,
    /// The forking parent.
    pub parent_id: String,
    /// The deterministic id of the child to create.
    pub child_id: String,
    /// The branch node the child runs.
    pub root_path: String,
    /// The child's seed context.
    pub context: JsonObject,
}

/// A timer that is due.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DueTimer {
    /// The execution that armed it.
    pub execution_id: String,
    /// The state that armed it.
    pub path: String,
    /// When it fires, epoch seconds. Pass it back to `delete_timer`.
    pub fire_at: f64,
}

/// A durable-timer change applied with a commit (harel's `TimerOp`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub enum TimerOp {
    /// Arm (or re-arm, replacing `fire_at`) the timer of `path`.
    Schedule {
        /// The state's full path.
        path: String,
        /// Epoch seconds.
        fire_at: f64,
    },
    /// Disarm the timer of `path`.
    Cancel {
        /// The state's full path.
        path: String,
    },
}

/// An event to put in the outbox with a commit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Emit {
    /// The execution to deliver to (`None`: no specific target).
    pub target_id: Option<String>,
    /// The event.
    pub event: Event,
}

/// A child to create after a commit (an orthogonal fork).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spawn {
    /// The deterministic child id.
    pub child_id: String,
    /// The branch node it runs.
    pub root_path: String,
    /// Its seed context.
    pub context: JsonObject,
}

/// Everything one event step defers, committed atomically with the execution's new state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Effects {
    /// Events for the outbox, in order.
    #[serde(default)]
    pub emits: Vec<Emit>,
    /// The event this step handled, recorded for dedupe.
    #[serde(default)]
    pub processed_event_id: Option<String>,
    /// Timer arms and disarms.
    #[serde(default)]
    pub timers: Vec<TimerOp>,
    /// Children to create.
    #[serde(default)]
    pub spawns: Vec<Spawn>,
    /// A timeline step to append.
    #[serde(default)]
    pub trace: Option<TraceStep>,
}

impl Effects {
    /// No effects: a commit with these is a plain CAS write.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an outbox event.
    pub fn emit(mut self, target_id: Option<&str>, event: Event) -> Self {
        self.emits.push(Emit {
            target_id: target_id.map(str::to_owned),
            event,
        });
        self
    }

    /// Records `event_id` as processed.
    pub fn processed(mut self, event_id: impl Into<String>) -> Self {
        self.processed_event_id = Some(event_id.into());
        self
    }

    /// Arms the timer of `path` at `fire_at`.
    pub fn schedule(mut self, path: impl Into<String>, fire_at: f64) -> Self {
        self.timers.push(TimerOp::Schedule {
            path: path.into(),
            fire_at,
        });
        self
    }

    /// Disarms the timer of `path`.
    pub fn cancel(mut self, path: impl Into<String>) -> Self {
        self.timers.push(TimerOp::Cancel { path: path.into() });
        self
    }

    /// Adds a child to create.
    pub fn spawn(
        mut self,
        child_id: impl Into<String>,
        root_path: impl Into<String>,
        context: JsonObject,
    ) -> Self {
        self.spawns.push(Spawn {
            child_id: child_id.into(),
            root_path: root_path.into(),
            context,
        });
        self
    }

    /// Appends a timeline step.
    pub fn trace(mut self, step: TraceStep) -> Self {
        self.trace = Some(step);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_has_a_cursor_only_when_more_was_read() {
        let summaries = |n: usize| -> Vec<ExecutionSummary> {
            (0..n)
                .map(|i| ExecutionSummary::of(&Execution::new(format!("e{i}"), "d")))
                .collect()
        };
        let page = ExecutionPage::from_overfetch(summaries(4), 3);
        let ids: Vec<&str> = page.items.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["e0", "e1", "e2"]);
        let cursor = page.next_cursor.expect("a fourth summary was read");
        assert_eq!(crate::executions::cursor::decode_cursor(&cursor).unwrap(), "e2");
        for (read, limit) in [(3, 3), (2, 3), (0, 3), (0, 0)] {
            let page = ExecutionPage::from_overfetch(summaries(read), limit);
            assert_eq!(page.items.len(), read);
            assert_eq!(page.next_cursor, None, "{read} read, limit {limit}");
        }
        let page = ExecutionPage::from_overfetch(summaries(1), 0);
        assert!(page.items.is_empty());
        assert_eq!(page.next_cursor, None, "nothing kept, nothing to resume after");
    }
}
