//! The core's types to WIT records and back, on the host side.

use execstore::{executions::JsonObject, StoreError};

use crate::wit;

/// Into the component: what the caller passed.
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
            limit: crate::limit(query.limit),
            cursor: query.cursor.clone(),
            created_after: query.created.after,
            created_before: query.created.before,
            updated_after: query.updated.after,
            updated_before: query.updated.before,
            finished_after: query.finished.after,
            finished_before: query.finished.before,
            search: query.search.clone(),
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

/// Out of the component: what the store returned. JSON text the component sent that does
/// not parse is [`StoreError::Corrupt`]: the component broke its side of the contract.
pub mod from_wit {
    use super::*;

    /// Parses JSON text the component returned for `what`.
    pub fn json_object(what: &str, text: &str) -> execstore::Result<JsonObject> {
        serde_json::from_str(text).map_err(|e| StoreError::Corrupt {
            what: format!("{what} from the component"),
            reason: e.to_string(),
        })
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
                what: crate::static_kind(&n.what),
                key: n.key,
            },
            wit::StoreError::AlreadyExists(a) => StoreError::AlreadyExists {
                what: crate::static_kind(&a.what),
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

    pub fn event(event: wit::Event) -> execstore::Result<execstore::executions::Event> {
        let mut out = execstore::executions::Event::new(event.id, event.kind);
        out.created_time = event.created_time;
        out.received_time = event.received_time;
        out.data = json_object("event data", &event.data)?;
        out.extra = json_object("event extra", &event.extra)?;
        Ok(out)
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
            .map(event)
            .collect::<execstore::Result<_>>()?;
        for entry in exe.children {
            let state = entry.state;
            let child = execstore::executions::ChildState {
                root_path: state.root_path,
                finished: state.finished,
                outcome: state.outcome,
                result: json_object("child result", &state.result)?,
                submachine: state.submachine,
                key: state.key,
                extra: json_object("child extra", &state.extra)?,
            };
            out.children.insert(entry.child_id, child);
        }
        out.invoke_seq = exe
            .invoke_seq
            .into_iter()
            .map(|entry| (entry.path, entry.count))
            .collect();
        out.created_at = exe.created_at;
        out.updated_at = exe.updated_at;
        out.finished_at = exe.finished_at;
        out.expires_at = exe.expires_at;
        out.extra = json_object("execution extra", &exe.extra)?;
        Ok(out)
    }

    pub fn page(page: wit::Page) -> execstore::executions::ExecutionPage {
        execstore::executions::ExecutionPage {
            items: page
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
                })
                .collect(),
            next_cursor: page.next_cursor,
        }
    }

    pub fn outbox_entry(entry: wit::OutboxEntry) -> execstore::Result<execstore::executions::OutboxEntry> {
        Ok(execstore::executions::OutboxEntry {
            seq: entry.seq,
            target_id: entry.target_id,
            event: event(entry.event)?,
        })
    }

    pub fn spawn_entry(entry: wit::SpawnEntry) -> execstore::Result<execstore::executions::SpawnEntry> {
        Ok(execstore::executions::SpawnEntry {
            context: json_object("spawn context", &entry.context)?,
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
