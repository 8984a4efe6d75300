//! WIT records to the core's types and back.

use execstore::{executions::JsonObject, StoreError};

use crate::wit;

/// Into the core's types: what the host passed. JSON text that is not one JSON object is
/// `InvalidInput` naming its field; a repeated key in `children` or `invoke-seq` too.
pub mod from_wit {
    use super::*;
    use indexmap::IndexMap;

    /// Parses the JSON text of `field`, which must be one JSON object.
    pub fn json_object(field: &str, text: &str) -> execstore::Result<JsonObject> {
        serde_json::from_str(text)
            .map_err(|e| StoreError::invalid(field, format!("not the JSON text of one object: {e}")))
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
                return Err(StoreError::invalid(
                    field,
                    format!("the key {key:?} appears twice"),
                ));
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

    pub fn list_query(query: wit::ListQuery) -> execstore::executions::ListQuery {
        let mut out = execstore::executions::ListQuery::new()
            .roots_only(query.roots_only)
            .limit(crate::limit(query.limit))
            .cursor(query.cursor)
            .created_between(query.created_after, query.created_before)
            .updated_between(query.updated_after, query.updated_before)
            .finished_between(query.finished_after, query.finished_before);
        out.search = query.search;
        if let Some(statuses) = query.status {
            out = out.status(statuses.into_iter().map(status));
        }
        if let Some(definition_id) = query.definition_id {
            out = out.definition(definition_id);
        }
        out
    }

    pub fn due_timer(timer: wit::DueTimer) -> execstore::executions::DueTimer {
        execstore::executions::DueTimer {
            execution_id: timer.execution_id,
            path: timer.path,
            fire_at: timer.fire_at,
        }
    }
}

/// Out to the boundary: what the store returns.
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

    pub fn event(event: execstore::executions::Event) -> wit::Event {
        wit::Event {
            data: json(&event.data),
            extra: json(&event.extra),
            id: event.id,
            kind: event.kind,
            created_time: event.created_time,
            received_time: event.received_time,
        }
    }

    pub fn execution(exe: execstore::Execution) -> wit::Execution {
        wit::Execution {
            history: json(&exe.history),
            context: json(&exe.context),
            extra: json(&exe.extra),
            id: exe.id,
            definition_id: exe.definition_id,
            definition_fqn: exe.definition_fqn,
            root_path: exe.root_path,
            status: status(exe.status),
            outcome: exe.outcome,
            error: exe.error,
            active_path: exe.active_path,
            processed_events: exe.processed_events,
            version: exe.version,
            priority: exe.priority,
            parent_id: exe.parent_id,
            child_id: exe.child_id,
            deferred: exe.deferred.into_iter().map(event).collect(),
            children: exe
                .children
                .into_iter()
                .map(|(child_id, state)| wit::ChildEntry {
                    child_id,
                    state: wit::ChildState {
                        result: json(&state.result),
                        extra: json(&state.extra),
                        root_path: state.root_path,
                        finished: state.finished,
                        outcome: state.outcome,
                        submachine: state.submachine,
                        key: state.key,
                    },
                })
                .collect(),
            invoke_seq: exe
                .invoke_seq
                .into_iter()
                .map(|(path, count)| wit::InvokeCount { path, count })
                .collect(),
            created_at: exe.created_at,
            updated_at: exe.updated_at,
            finished_at: exe.finished_at,
            expires_at: exe.expires_at,
        }
    }

    pub fn page(page: execstore::executions::ExecutionPage) -> wit::Page {
        wit::Page {
            items: page
                .items
                .into_iter()
                .map(|s| wit::Summary {
                    id: s.id,
                    definition_id: s.definition_id,
                    status: status(s.status),
                    outcome: s.outcome,
                    active_path: s.active_path,
                    version: s.version,
                    parent_id: s.parent_id,
                    finished_at: s.finished_at,
                    updated_at: s.updated_at,
                })
                .collect(),
            next_cursor: page.next_cursor,
        }
    }

    pub fn outbox_entry(entry: execstore::executions::OutboxEntry) -> wit::OutboxEntry {
        wit::OutboxEntry {
            seq: entry.seq,
            target_id: entry.target_id,
            event: event(entry.event),
        }
    }

    pub fn spawn_entry(entry: execstore::executions::SpawnEntry) -> wit::SpawnEntry {
        wit::SpawnEntry {
            context: json(&entry.context),
            seq: entry.seq,
            parent_id: entry.parent_id,
            child_id: entry.child_id,
            root_path: entry.root_path,
        }
    }

    pub fn due_timer(timer: execstore::executions::DueTimer) -> wit::DueTimer {
        wit::DueTimer {
            execution_id: timer.execution_id,
            path: timer.path,
            fire_at: timer.fire_at,
        }
    }
}
