//! The execution store's records between the core's types and `store.wit`'s, both ways, written
//! once for both sides of the component boundary: the component (crates/execstore-component,
//! whose bindings wit-bindgen makes) and its wasmtime host (crates/execstore-component-host,
//! whose bindings wasmtime's `bindgen!` makes) each include this file as their `convert`
//! module (`#[path]`). The two generators make different Rust types from the same WIT, with
//! the same names and fields, so the same text compiles against either.
//!
//! The including crate provides:
//! - `crate::wit`: its bindings of the `execution-store` interface;
//! - `crate::RECEIVED`: what JSON text arriving from the other side is on this side
//!   ([`Received`]), which decides the error for text that is not one JSON object.
//!
//! Each side calls some functions in each direction (the component reads executions and
//! writes pages; the host the other way round), so the unused ones are allowed.
#![allow(dead_code)]

use execstore::{executions::JsonObject, StoreError};

use crate::wit;

/// What JSON text arriving from the other side of the boundary is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// The caller's input (in the component): text that is not one JSON object is
    /// `InvalidInput` naming its field.
    Input,
    /// The component's output (in the host): such text is `Corrupt`, the component broke its
    /// side of the contract.
    Output,
}

/// A page size or count from the boundary (`u64`); one beyond `usize` saturates, and the core's
/// own check refuses it as `invalid-input` like any other limit above the page maximum.
pub fn limit_in(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

/// A page size or count to the boundary (`u64` there, so no host size is cut short).
pub fn limit_out(limit: usize) -> u64 {
    u64::try_from(limit).unwrap_or(u64::MAX)
}

/// Into the core's types: what the other side sent. JSON text that is not one JSON object is
/// refused as [`Received`] says, naming its field (`deferred[0].data`); a repeated key in
/// `children` or `invoke-seq` too.
pub mod from_wit {
    use super::*;
    use indexmap::IndexMap;
    use std::collections::BTreeSet;
    use std::sync::{Mutex, OnceLock};

    fn refused(field: &str, reason: String) -> StoreError {
        match crate::RECEIVED {
            Received::Input => StoreError::invalid(field, reason),
            Received::Output => StoreError::Corrupt {
                what: format!("{field} from the component"),
                reason,
            },
        }
    }

    /// Parses the JSON text of `field`, which must be one JSON object.
    pub fn json_object(field: &str, text: &str) -> execstore::Result<JsonObject> {
        serde_json::from_str(text)
            .map_err(|e| refused(field, format!("not the JSON text of one object: {e}")))
    }

    /// `kind` as the `&'static str` that [`StoreError::NotFound`] and
    /// [`StoreError::AlreadyExists`] hold: the core's own kinds are matched, and any other
    /// (from a newer component) is interned once, so repeated errors do not grow memory.
    pub fn static_kind(kind: &str) -> &'static str {
        const KNOWN: [&str; 7] = [
            "execution",
            "outbox entry",
            "spawn entry",
            "table",
            "database file",
            "row",
            "event",
        ];
        if let Some(known) = KNOWN.iter().find(|k| **k == kind) {
            return known;
        }
        static INTERNED: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
        let mut interned = INTERNED
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(found) = interned.get(kind) {
            return found;
        }
        let leaked: &'static str = Box::leak(kind.to_owned().into_boxed_str());
        interned.insert(leaked);
        leaked
    }

    pub fn error(error: wit::StoreError) -> StoreError {
        match error {
            wit::StoreError::Conflict(c) => StoreError::Conflict {
                id: c.id,
                expected: c.expected,
                found: c.found,
            },
            wit::StoreError::InvalidInput(i) => StoreError::InvalidInput {
                field: i.field,
                reason: i.reason,
            },
            wit::StoreError::NotFound(n) => StoreError::NotFound {
                what: static_kind(&n.what),
                key: n.key,
            },
            wit::StoreError::AlreadyExists(a) => StoreError::AlreadyExists {
                what: static_kind(&a.what),
                key: a.key,
            },
            wit::StoreError::Corrupt(c) => StoreError::Corrupt {
                what: c.what,
                reason: c.reason,
            },
            wit::StoreError::Backend(b) => StoreError::Backend {
                message: b.message,
                retryable: b.retryable,
                source: None,
            },
        }
    }

    pub fn status(status: wit::Status) -> execstore::executions::Status {
        match status {
            wit::Status::Pending => execstore::executions::Status::Pending,
            wit::Status::Running => execstore::executions::Status::Running,
            wit::Status::Done => execstore::executions::Status::Done,
            wit::Status::Cancelled => execstore::executions::Status::Cancelled,
            wit::Status::Suspended => execstore::executions::Status::Suspended,
            wit::Status::Cancelling => execstore::executions::Status::Cancelling,
            wit::Status::Failed => execstore::executions::Status::Failed,
        }
    }

    pub fn event(field: &str, event: wit::Event) -> execstore::Result<execstore::executions::Event> {
        let mut out = execstore::executions::Event::new(event.id, event.kind);
        out.created_time = event.created_time;
        out.received_time = event.received_time;
        out.data = json_object(&format!("{field}.data"), &event.data)?;
        out.extra = json_object(&format!("{field}.extra"), &event.extra)?;
        Ok(out)
    }

    fn child_state(
        field: &str,
        child: wit::ChildState,
    ) -> execstore::Result<execstore::executions::ChildState> {
        Ok(execstore::executions::ChildState {
            root_path: child.root_path,
            finished: child.finished,
            outcome: child.outcome,
            result: json_object(&format!("{field}.result"), &child.result)?,
            submachine: child.submachine,
            key: child.key,
            extra: json_object(&format!("{field}.extra"), &child.extra)?,
        })
    }

    /// Collects `(key, value)` pairs in order, refusing a repeated key (a map cannot hold it,
    /// and dropping one silently would store something the caller did not write).
    fn unique<V>(
        field: &str,
        pairs: impl IntoIterator<Item = execstore::Result<(String, V)>>,
    ) -> execstore::Result<IndexMap<String, V>> {
        let mut map = IndexMap::new();
        for pair in pairs {
            let (key, value) = pair?;
            if map.contains_key(&key) {
                return Err(refused(field, format!("the key {key:?} appears twice")));
            }
            map.insert(key, value);
        }
        Ok(map)
    }

    pub fn execution(exe: wit::Execution) -> execstore::Result<execstore::Execution> {
        let mut out = execstore::Execution::new(exe.id, exe.definition_id);
        out.definition_fqn = exe.definition_fqn;
        out.root_path = exe.root_path;
        out.status = status(exe.status);
        out.outcome = exe.outcome;
        out.error = exe.error;
        out.active_path = exe.active_path;
        out.history = json_object("history", &exe.history)?;
        out.context = json_object("context", &exe.context)?;
        out.processed_events = exe.processed_events;
        out.version = exe.version;
        out.priority = exe.priority;
        out.parent_id = exe.parent_id;
        out.child_id = exe.child_id;
        out.deferred = exe
            .deferred
            .into_iter()
            .enumerate()
            .map(|(i, ev)| event(&format!("deferred[{i}]"), ev))
            .collect::<execstore::Result<_>>()?;
        out.children = unique(
            "children",
            exe.children.into_iter().enumerate().map(|(i, entry)| {
                let state = child_state(&format!("children[{i}]"), entry.state)?;
                Ok((entry.child_id, state))
            }),
        )?;
        out.invoke_seq = unique(
            "invoke_seq",
            exe.invoke_seq
                .into_iter()
                .map(|entry| Ok((entry.path, entry.count))),
        )?;
        out.created_at = exe.created_at;
        out.updated_at = exe.updated_at;
        out.finished_at = exe.finished_at;
        out.expires_at = exe.expires_at;
        out.extra = json_object("extra", &exe.extra)?;
        Ok(out)
    }

    pub fn effects(effects: wit::Effects) -> execstore::Result<execstore::Effects> {
        let mut out = execstore::Effects::new();
        for (i, emit) in effects.emits.into_iter().enumerate() {
            let ev = event(&format!("emits[{i}].event"), emit.event)?;
            out = out.emit(emit.target_id.as_deref(), ev);
        }
        if let Some(id) = effects.processed_event_id {
            out = out.processed(id);
        }
        for op in effects.timers {
            out = match op {
                wit::TimerOp::Schedule(s) => out.schedule(s.path, s.fire_at),
                wit::TimerOp::Cancel(path) => out.cancel(path),
            };
        }
        for (i, spawn) in effects.spawns.into_iter().enumerate() {
            let context = json_object(&format!("spawns[{i}].context"), &spawn.context)?;
            out = out.spawn(spawn.child_id, spawn.root_path, context);
        }
        if let Some(step) = effects.trace {
            out = out.trace(json_object("trace", &step)?);
        }
        Ok(out)
    }

    /// An event step's execution and effects.
    pub fn step(
        exe: wit::Execution,
        effects: wit::Effects,
    ) -> execstore::Result<(execstore::Execution, execstore::Effects)> {
        Ok((execution(exe)?, self::effects(effects)?))
    }

    /// A bad filter text is `InvalidInput` (a host sends the canonical text of a checked filter).
    pub fn list_query(query: wit::ListQuery) -> execstore::Result<execstore::executions::ListQuery> {
        let mut out = execstore::executions::ListQuery::new()
            .roots_only(query.roots_only)
            .limit(limit_in(query.limit))
            .cursor(query.cursor)
            .created_between(query.created_after, query.created_before)
            .updated_between(query.updated_after, query.updated_before)
            .finished_between(query.finished_after, query.finished_before)
            .order(match query.order {
                wit::ListOrder::Id => execstore::executions::ListOrder::Id,
                wit::ListOrder::UpdatedDesc => execstore::executions::ListOrder::UpdatedDesc,
                wit::ListOrder::CreatedDesc => execstore::executions::ListOrder::CreatedDesc,
            });
        out.search = query.search;
        if let Some(statuses) = query.status {
            out = out.status(statuses.into_iter().map(status));
        }
        if let Some(definition_id) = query.definition_id {
            out = out.definition(definition_id);
        }
        if let Some(text) = query.filter {
            out.filter = Some(execstore::executions::parse_where(&text, 0.0)?);
        }
        Ok(out)
    }

    pub fn page(page: wit::Page) -> execstore::executions::ExecutionPage {
        let items = page
            .items
            .into_iter()
            .map(|s| execstore::executions::ExecutionSummary {
                id: s.id,
                definition_id: s.definition_id,
                status: status(s.status),
                outcome: s.outcome,
                active_path: s.active_path,
                version: s.version,
                parent_id: s.parent_id,
                finished_at: s.finished_at,
                updated_at: s.updated_at,
                created_at: s.created_at,
            })
            .collect();
        execstore::executions::ExecutionPage::default()
            .with_items(items, page.next_cursor)
            .scanned(page.scan)
    }

    pub fn outbox_entry(entry: wit::OutboxEntry) -> execstore::Result<execstore::executions::OutboxEntry> {
        Ok(execstore::executions::OutboxEntry {
            seq: entry.seq,
            target_id: entry.target_id,
            event: event("event", entry.event)?,
        })
    }

    pub fn spawn_entry(entry: wit::SpawnEntry) -> execstore::Result<execstore::executions::SpawnEntry> {
        Ok(execstore::executions::SpawnEntry {
            context: json_object("context", &entry.context)?,
            seq: entry.seq,
            parent_id: entry.parent_id,
            child_id: entry.child_id,
            root_path: entry.root_path,
        })
    }

    pub fn due_timer(timer: wit::DueTimer) -> execstore::executions::DueTimer {
        execstore::executions::DueTimer {
            execution_id: timer.execution_id,
            path: timer.path,
            fire_at: timer.fire_at,
        }
    }
}

/// Out to the boundary: the core's values as the WIT's records.
pub mod to_wit {
    use super::*;

    /// The compact JSON text of an object.
    pub fn json(object: &JsonObject) -> String {
        // Serializing a JSON map cannot fail: its keys are strings and its numbers finite.
        serde_json::to_string(object).unwrap_or_else(|_| "{}".to_owned())
    }

    pub fn status(status: execstore::executions::Status) -> wit::Status {
        match status {
            execstore::executions::Status::Pending => wit::Status::Pending,
            execstore::executions::Status::Running => wit::Status::Running,
            execstore::executions::Status::Done => wit::Status::Done,
            execstore::executions::Status::Cancelled => wit::Status::Cancelled,
            execstore::executions::Status::Suspended => wit::Status::Suspended,
            execstore::executions::Status::Cancelling => wit::Status::Cancelling,
            execstore::executions::Status::Failed => wit::Status::Failed,
        }
    }

    pub fn error(error: &StoreError) -> wit::StoreError {
        match error {
            StoreError::Conflict { id, expected, found } => wit::StoreError::Conflict(wit::Conflict {
                id: id.clone(),
                expected: *expected,
                found: *found,
            }),
            StoreError::InvalidInput { field, reason } => wit::StoreError::InvalidInput(wit::InvalidInput {
                field: field.clone(),
                reason: reason.clone(),
            }),
            StoreError::NotFound { what, key } => wit::StoreError::NotFound(wit::NotFound {
                what: (*what).to_owned(),
                key: key.clone(),
            }),
            StoreError::AlreadyExists { what, key } => wit::StoreError::AlreadyExists(wit::AlreadyExists {
                what: (*what).to_owned(),
                key: key.clone(),
            }),
            StoreError::Corrupt { what, reason } => wit::StoreError::Corrupt(wit::Corrupt {
                what: what.clone(),
                reason: reason.clone(),
            }),
            // `Backend`, and any kind a later core adds: the message and whether to retry.
            other => wit::StoreError::Backend(wit::BackendFailure {
                message: match other {
                    StoreError::Backend { message, .. } => message.clone(),
                    _ => other.to_string(),
                },
                retryable: other.is_retryable(),
            }),
        }
    }

    pub fn event(event: &execstore::executions::Event) -> wit::Event {
        wit::Event {
            id: event.id.clone(),
            kind: event.kind.clone(),
            created_time: event.created_time.clone(),
            received_time: event.received_time.clone(),
            data: json(&event.data),
            extra: json(&event.extra),
        }
    }

    pub fn child_entry(child_id: &str, state: &execstore::executions::ChildState) -> wit::ChildEntry {
        wit::ChildEntry {
            child_id: child_id.to_owned(),
            state: wit::ChildState {
                root_path: state.root_path.clone(),
                finished: state.finished,
                outcome: state.outcome.clone(),
                result: json(&state.result),
                submachine: state.submachine,
                key: state.key.clone(),
                extra: json(&state.extra),
            },
        }
    }

    pub fn execution(exe: &execstore::Execution) -> wit::Execution {
        wit::Execution {
            id: exe.id.clone(),
            definition_id: exe.definition_id.clone(),
            definition_fqn: exe.definition_fqn.clone(),
            root_path: exe.root_path.clone(),
            status: status(exe.status),
            outcome: exe.outcome.clone(),
            error: exe.error.clone(),
            active_path: exe.active_path.clone(),
            history: json(&exe.history),
            context: json(&exe.context),
            processed_events: exe.processed_events,
            version: exe.version,
            priority: exe.priority,
            parent_id: exe.parent_id.clone(),
            child_id: exe.child_id.clone(),
            deferred: exe.deferred.iter().map(event).collect(),
            children: exe
                .children
                .iter()
                .map(|(child_id, state)| child_entry(child_id, state))
                .collect(),
            invoke_seq: exe
                .invoke_seq
                .iter()
                .map(|(path, count)| wit::InvokeCount {
                    path: path.clone(),
                    count: *count,
                })
                .collect(),
            created_at: exe.created_at,
            updated_at: exe.updated_at,
            finished_at: exe.finished_at,
            expires_at: exe.expires_at,
            extra: json(&exe.extra),
        }
    }

    pub fn effects(effects: &execstore::Effects) -> wit::Effects {
        wit::Effects {
            emits: effects
                .emits
                .iter()
                .map(|emit| wit::Emit {
                    target_id: emit.target_id.clone(),
                    event: event(&emit.event),
                })
                .collect(),
            processed_event_id: effects.processed_event_id.clone(),
            timers: effects
                .timers
                .iter()
                .map(|op| match op {
                    execstore::executions::TimerOp::Schedule { path, fire_at } => {
                        wit::TimerOp::Schedule(wit::Schedule {
                            path: path.clone(),
                            fire_at: *fire_at,
                        })
                    }
                    execstore::executions::TimerOp::Cancel { path } => wit::TimerOp::Cancel(path.clone()),
                })
                .collect(),
            spawns: effects
                .spawns
                .iter()
                .map(|spawn| wit::Spawn {
                    child_id: spawn.child_id.clone(),
                    root_path: spawn.root_path.clone(),
                    context: json(&spawn.context),
                })
                .collect(),
            trace: effects.trace.as_ref().map(json),
        }
    }

    pub fn list_query(query: &execstore::executions::ListQuery) -> wit::ListQuery {
        wit::ListQuery {
            status: query
                .status
                .as_ref()
                .map(|set| set.iter().copied().map(status).collect()),
            definition_id: query.definition_id.clone(),
            roots_only: query.roots_only,
            limit: limit_out(query.limit),
            cursor: query.cursor.clone(),
            created_after: query.created.after,
            created_before: query.created.before,
            updated_after: query.updated.after,
            updated_before: query.updated.before,
            finished_after: query.finished.after,
            finished_before: query.finished.before,
            search: query.search.clone(),
            order: match query.order {
                execstore::executions::ListOrder::Id => wit::ListOrder::Id,
                execstore::executions::ListOrder::UpdatedDesc => wit::ListOrder::UpdatedDesc,
                execstore::executions::ListOrder::CreatedDesc => wit::ListOrder::CreatedDesc,
            },
            filter: query.filter.as_ref().map(|f| f.to_string()),
        }
    }

    pub fn page(page: &execstore::executions::ExecutionPage) -> wit::Page {
        wit::Page {
            items: page
                .items
                .iter()
                .map(|s| wit::Summary {
                    id: s.id.clone(),
                    definition_id: s.definition_id.clone(),
                    status: status(s.status),
                    outcome: s.outcome.clone(),
                    active_path: s.active_path.clone(),
                    version: s.version,
                    parent_id: s.parent_id.clone(),
                    finished_at: s.finished_at,
                    updated_at: s.updated_at,
                    created_at: s.created_at,
                })
                .collect(),
            next_cursor: page.next_cursor.clone(),
            scan: page.scan.clone(),
        }
    }

    pub fn outbox_entry(entry: &execstore::executions::OutboxEntry) -> wit::OutboxEntry {
        wit::OutboxEntry {
            seq: entry.seq,
            target_id: entry.target_id.clone(),
            event: event(&entry.event),
        }
    }

    pub fn spawn_entry(entry: &execstore::executions::SpawnEntry) -> wit::SpawnEntry {
        wit::SpawnEntry {
            context: json(&entry.context),
            seq: entry.seq,
            parent_id: entry.parent_id.clone(),
            child_id: entry.child_id.clone(),
            root_path: entry.root_path.clone(),
        }
    }

    pub fn due_timer(timer: &execstore::executions::DueTimer) -> wit::DueTimer {
        wit::DueTimer {
            execution_id: timer.execution_id.clone(),
            path: timer.path.clone(),
            fire_at: timer.fire_at,
        }
    }
}
