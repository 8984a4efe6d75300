//! execstore as a WebAssembly component: the `store` resource of `wit/store.wit`, each of
//! its operations the [`ExecutionStore`] operation of the same name on one of the core's
//! stores (the in-memory store, or with the `sqlite` feature the SQLite adapter on an
//! in-memory database); and the `workspace-storage` resource, the workspace log's
//! `WorkspaceStorage` over the core's in-memory storage, reading the host's clock
//! (`src/workspace.rs`).
//!
//! Built as a cdylib for `wasm32-wasip2`, that cdylib is the component itself
//! (`execstore_component.wasm`; see Cargo.toml for the command). It compiles natively too,
//! as an rlib, so workspace-wide builds and lints cover it; a native build is of no use
//! beyond that.
//!
//! This crate only converts: WIT records to the core's types on the way in (open-ended JSON
//! arrives as text and is parsed here, refusing what is not one JSON object as
//! `invalid-input`), the core's results and errors to WIT on the way out. Every check of the
//! input is the core's own, so a bad call fails here exactly as it fails natively.
#![deny(missing_docs)]

/// The WIT records and the core's, both ways: written once for the component and its host.
#[path = "../../../wit/convert.rs"]
mod convert;
mod workspace;

use execstore::{executions::BatchItem, ExecutionStore, MemoryStore, StoreError};

use crate::convert::{from_wit, to_wit};

/// The bindings of `wit/store.wit` (private: the component's interface is the WIT, not Rust).
mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "execstore",
    });
}

use bindings::exports::execstore::store::execution_store as wit;

/// The component: its `store` resource is [`ComponentStore`].
struct Component;

impl wit::Guest for Component {
    type Store = ComponentStore;
}

impl bindings::exports::execstore::store::workspace_store::Guest for Component {
    type WorkspaceStorage = workspace::ComponentWorkspaceStorage;
    type WorkspaceTx = workspace::ComponentWorkspaceTx;
}

/// One store inside the component.
struct ComponentStore {
    inner: Box<dyn ExecutionStore>,
}

/// The trace limit of `open-options`: 0 keeps every step.
fn trace_max(option: u32) -> Option<u32> {
    (option > 0).then_some(option)
}

fn open_backend(options: &wit::OpenOptions) -> Result<Box<dyn ExecutionStore>, StoreError> {
    match options.backend {
        wit::Backend::Memory => Ok(Box::new(MemoryStore::with_trace_max(trace_max(
            options.trace_max,
        )))),
        wit::Backend::SqliteMemory => open_sqlite_memory(trace_max(options.trace_max)),
    }
}

#[cfg(feature = "sqlite")]
fn open_sqlite_memory(trace_max: Option<u32>) -> Result<Box<dyn ExecutionStore>, StoreError> {
    let mut options = execstore_sqlite::SqliteOptions::new();
    options.trace_max = trace_max;
    Ok(Box::new(execstore_sqlite::SqliteStore::open(
        ":memory:", options,
    )?))
}

#[cfg(not(feature = "sqlite"))]
fn open_sqlite_memory(_trace_max: Option<u32>) -> Result<Box<dyn ExecutionStore>, StoreError> {
    Err(StoreError::Backend {
        message: "this component was built without SQLite (cargo feature `sqlite`)".into(),
        retryable: false,
        source: None,
    })
}

/// JSON text arriving here is the caller's input: text that is not one object is
/// `invalid-input`.
const RECEIVED: convert::Received = convert::Received::Input;

/// The core's result as the boundary's.
fn out<T, U>(result: execstore::Result<T>, convert: impl FnOnce(T) -> U) -> Result<U, wit::StoreError> {
    result.map(convert).map_err(|e| to_wit::error(&e))
}

impl wit::GuestStore for ComponentStore {
    fn open(options: wit::OpenOptions) -> Result<wit::Store, wit::StoreError> {
        let inner = open_backend(&options).map_err(|e| to_wit::error(&e))?;
        Ok(wit::Store::new(ComponentStore { inner }))
    }

    fn capabilities(&self) -> wit::Capabilities {
        wit::Capabilities {
            durable: self.inner.capabilities().durable,
        }
    }

    fn trace_max(&self) -> Option<u32> {
        self.inner.trace_max()
    }

    fn save(&self, execution: wit::Execution) -> Result<i64, wit::StoreError> {
        let mut exe = from_wit::execution(execution).map_err(|e| to_wit::error(&e))?;
        out(self.inner.save(&mut exe), |()| exe.version)
    }

    fn commit(
        &self,
        execution: wit::Execution,
        effects: wit::Effects,
    ) -> Result<wit::Committed, wit::StoreError> {
        let (mut exe, effects) = from_wit::step(execution, effects).map_err(|e| to_wit::error(&e))?;
        out(self.inner.commit(&mut exe, &effects), |outbox_seqs| {
            wit::Committed {
                version: exe.version,
                outbox_seqs,
            }
        })
    }

    fn commit_batch(
        &self,
        items: Vec<wit::BatchItem>,
    ) -> Result<Vec<Result<wit::Committed, wit::StoreError>>, wit::StoreError> {
        // An item whose JSON does not parse fails alone, as an item the core refuses does:
        // the others go to the core's batch, and the outcomes are put back in item order.
        let mut outcomes: Vec<Option<Result<wit::Committed, wit::StoreError>>> = Vec::new();
        let mut batch = Vec::new();
        let mut slots = Vec::new();
        for item in items {
            match from_wit::step(item.execution, item.effects) {
                Ok((execution, effects)) => {
                    slots.push(outcomes.len());
                    outcomes.push(None);
                    batch.push(BatchItem::new(execution, effects));
                }
                Err(e) => outcomes.push(Some(Err(to_wit::error(&e)))),
            }
        }
        let results = self
            .inner
            .commit_batch(&mut batch)
            .map_err(|e| to_wit::error(&e))?;
        for ((slot, item), result) in slots.into_iter().zip(&batch).zip(results) {
            outcomes[slot] = Some(out(result, |outbox_seqs| wit::Committed {
                version: item.execution.version,
                outbox_seqs,
            }));
        }
        outcomes
            .into_iter()
            .map(|outcome| {
                outcome.ok_or_else(|| {
                    to_wit::error(&StoreError::Backend {
                        message: "the backend returned fewer outcomes than items".into(),
                        retryable: false,
                        source: None,
                    })
                })
            })
            .collect()
    }

    fn load(&self, id: String) -> Result<Option<wit::Execution>, wit::StoreError> {
        out(self.inner.load(&id), |exe| exe.as_ref().map(to_wit::execution))
    }

    fn load_for_event(
        &self,
        id: String,
        event_id: String,
    ) -> Result<(Option<wit::Execution>, bool), wit::StoreError> {
        out(self.inner.load_for_event(&id, &event_id), |(exe, seen)| {
            (exe.as_ref().map(to_wit::execution), seen)
        })
    }

    fn is_processed(&self, execution_id: String, event_id: String) -> Result<bool, wit::StoreError> {
        out(self.inner.is_processed(&execution_id, &event_id), |seen| seen)
    }

    fn list_executions(&self, query: wit::ListQuery) -> Result<wit::Page, wit::StoreError> {
        out(
            from_wit::list_query(query).and_then(|q| self.inner.list_executions(&q)),
            |page| to_wit::page(&page),
        )
    }

    fn pending_outbox(
        &self,
        after: Option<i64>,
        limit: u64,
    ) -> Result<Vec<wit::OutboxEntry>, wit::StoreError> {
        out(
            self.inner.pending_outbox(after, convert::limit_in(limit)),
            |entries| entries.iter().map(to_wit::outbox_entry).collect(),
        )
    }

    fn ack_outbox(&self, seq: i64) -> Result<(), wit::StoreError> {
        out(self.inner.ack_outbox(seq), |()| ())
    }

    fn ack_outbox_many(&self, seqs: Vec<i64>) -> Result<u64, wit::StoreError> {
        out(self.inner.ack_outbox_many(&seqs), |removed| removed as u64)
    }

    fn pending_spawns(
        &self,
        after: Option<i64>,
        limit: u64,
    ) -> Result<Vec<wit::SpawnEntry>, wit::StoreError> {
        out(
            self.inner.pending_spawns(after, convert::limit_in(limit)),
            |entries| entries.iter().map(to_wit::spawn_entry).collect(),
        )
    }

    fn ack_spawn(&self, seq: i64) -> Result<(), wit::StoreError> {
        out(self.inner.ack_spawn(seq), |()| ())
    }

    fn due_timers(
        &self,
        now: f64,
        after: Option<wit::DueTimer>,
        limit: u64,
    ) -> Result<Vec<wit::DueTimer>, wit::StoreError> {
        let after = after.map(from_wit::due_timer);
        out(
            self.inner
                .due_timers(now, after.as_ref(), convert::limit_in(limit)),
            |timers| timers.iter().map(to_wit::due_timer).collect(),
        )
    }

    fn delete_timer(
        &self,
        execution_id: String,
        path: String,
        fire_at: f64,
    ) -> Result<bool, wit::StoreError> {
        out(
            self.inner.delete_timer(&execution_id, &path, fire_at),
            |removed| removed,
        )
    }

    fn read_trace(&self, execution_id: String) -> Result<Vec<String>, wit::StoreError> {
        out(self.inner.read_trace(&execution_id), |steps| {
            steps.iter().map(to_wit::json).collect()
        })
    }

    fn append_trace(&self, execution_id: String, step: String) -> Result<i64, wit::StoreError> {
        let step = from_wit::json_object("step", &step).map_err(|e| to_wit::error(&e))?;
        out(self.inner.append_trace(&execution_id, &step), |index| index)
    }

    fn ids_with_prefix(&self, prefix: String) -> Result<Vec<String>, wit::StoreError> {
        out(self.inner.ids_with_prefix(&prefix), |ids| ids)
    }

    fn purge(&self, execution_id: String, expected_version: i64) -> Result<bool, wit::StoreError> {
        out(self.inner.purge(&execution_id, expected_version), |purged| purged)
    }

    fn count_by_status(&self, query: wit::ListQuery) -> Result<Vec<wit::StatusCount>, wit::StoreError> {
        out(
            from_wit::list_query(query).and_then(|q| self.inner.count_by_status(&q)),
            |counts| {
                counts
                    .into_iter()
                    .map(|(status, count)| wit::StatusCount {
                        status: to_wit::status(status),
                        count,
                    })
                    .collect()
            },
        )
    }

    fn attributes(&self) -> Result<Vec<wit::SearchAttribute>, wit::StoreError> {
        out(self.inner.attributes(), |all| {
            all.into_iter()
                .map(|a| wit::SearchAttribute { path: a.path })
                .collect()
        })
    }

    fn declare_attribute(&self, path: String) -> Result<wit::SearchAttribute, wit::StoreError> {
        out(self.inner.declare_attribute(&path), |a| wit::SearchAttribute {
            path: a.path,
        })
    }

    fn drop_attribute(&self, path: String) -> Result<bool, wit::StoreError> {
        out(self.inner.drop_attribute(&path), |dropped| dropped)
    }

    fn enqueue_outbox(&self, target_id: String, event: wit::Event) -> Result<i64, wit::StoreError> {
        let event = from_wit::event("event", event).map_err(|e| to_wit::error(&e))?;
        out(self.inner.enqueue_outbox(&target_id, &event), |seq| seq)
    }

    fn send(
        &self,
        execution_id: String,
        event: wit::Event,
        expected_version: Option<i64>,
    ) -> Result<wit::Sent, wit::StoreError> {
        let event = from_wit::event("event", event).map_err(|e| to_wit::error(&e))?;
        out(
            execstore::executions::control::send(&*self.inner, &execution_id, &event, expected_version),
            |sent| wit::Sent {
                seq: sent.seq,
                target_id: sent.target_id,
                event_id: sent.event_id,
            },
        )
    }

    fn change_token(&self) -> Result<String, wit::StoreError> {
        out(self.inner.change_token(), |token| token)
    }
}

bindings::export!(Component with_types_in bindings);
