//! Runs the execstore component (`wit/store.wit`, built from crates/execstore-component for
//! `wasm32-wasip2`) in wasmtime, and exposes each store it opens as an [`ExecutionStore`].
//!
//! What for: the behaviour suite (`execstore::conformance::executions`) runs against a
//! [`ComponentStore`] exactly as against a native backend, so every operation, shape and
//! error kind is checked through the component boundary, both ways. It is also the
//! reference for embedding the component in another Rust host.
//!
//! ```no_run
//! use execstore::{Execution, ExecutionStore};
//! use execstore_component_host::{Backend, ComponentRuntime};
//!
//! let runtime = ComponentRuntime::from_file("execstore_component.wasm")?;
//! let store = runtime.open(Backend::Memory, Some(200))?;
//! let mut exe = Execution::new("order-1", "orders");
//! store.save(&mut exe)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The component's second interface, the workspace log (`workspace-store`), is opened with
//! [`ComponentRuntime::open_workspace`] as a [`ComponentWorkspaceStorage`], a
//! `WorkspaceStorage` whose clock is the host's (the component imports it), so the workspace
//! suite (`execstore::conformance::workspace`) runs through the boundary too.
//!
//! Each [`ComponentStore`] is one component instance (its own linear memory), used by one
//! caller at a time behind a mutex: the component is single-threaded, as wasm is. What the
//! WIT does not carry: the claim operations that take a callback (`relay_outbox`,
//! `relay_spawns`, `sweep_timers`) and `wait_for_work` run as the trait's defaults on top of
//! the WIT operations, so a component store has neither exclusive claims nor wake-ups.
#![deny(missing_docs)]

/// The WIT records and the core's, both ways: written once for the component and its host.
#[path = "../../../wit/convert.rs"]
mod convert;
mod workspace;

pub use workspace::{ComponentWorkspaceStorage, WorkspaceBackend};

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use execstore::workspace::{Clock, SystemClock, WorkspaceCapabilities};
use execstore::{
    executions::{
        control::Sent, BatchItem, Capabilities, DueTimer, Event, ExecutionPage, ListQuery, OutboxEntry,
        SearchAttribute, SpawnEntry, TraceStep,
    },
    Effects, Execution, ExecutionStore, StoreError,
};
use wasmtime::component::{Component, HasSelf, Linker, ResourceAny, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::convert::{from_wit, to_wit};

/// The bindings of `wit/store.wit` (private: callers use the [`ExecutionStore`] trait).
mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "execstore",
    });
}

use bindings::exports::execstore::store::execution_store as wit;
use bindings::exports::execstore::store::workspace_store as workspace_wit;

/// Setting up the runtime failed: the component could not be read, compiled or linked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The component file could not be read or compiled (not a component, or not this one).
    #[error("cannot load the component {path}: {message}")]
    Load {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The engine, the WASI imports or the instance could not be set up.
    #[error("cannot set up the component runtime: {0}")]
    Setup(String),
}

/// Which store a [`ComponentRuntime::open`] makes inside the component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    /// The core's in-memory store.
    Memory,
    /// The SQLite adapter on an in-memory database, where the component was built with it
    /// (feature `sqlite`); otherwise opening it is a [`StoreError::Backend`].
    SqliteMemory,
}

/// What each instance's store holds: WASI with nothing granted (no files, network, env or
/// arguments; stderr is inherited so a panic inside the component is readable).
struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    /// What the component's `clock` import answers (the workspace log's time).
    clock: Arc<dyn Clock>,
}

impl bindings::execstore::store::clock::Host for HostState {
    fn now(&mut self) -> i64 {
        self.clock.now().micros()
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// A compiled component, ready to instantiate: compile once, open many stores.
pub struct ComponentRuntime {
    engine: Engine,
    pre: bindings::ExecstorePre<HostState>,
}

impl std::fmt::Debug for ComponentRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentRuntime").finish_non_exhaustive()
    }
}

impl ComponentRuntime {
    /// Compiles the component in `path` (an `execstore_component.wasm`) and links it with
    /// the WASI imports it needs.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, HostError> {
        let path = path.as_ref();
        let engine = Engine::default();
        let component = Component::from_file(&engine, path).map_err(|e| HostError::Load {
            path: path.to_owned(),
            message: format!("{e:?}"),
        })?;
        let mut linker = Linker::<HostState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(|e| HostError::Setup(format!("{e:?}")))?;
        bindings::execstore::store::clock::add_to_linker::<HostState, HasSelf<HostState>>(
            &mut linker,
            |state| state,
        )
        .map_err(|e| HostError::Setup(format!("{e:?}")))?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(bindings::ExecstorePre::new)
            .map_err(|e| HostError::Load {
                path: path.to_owned(),
                message: format!("{e:?}"),
            })?;
        Ok(ComponentRuntime { engine, pre })
    }

    /// A new component instance with an empty store on `backend`, keeping `trace_max` trace
    /// steps per execution (`None`, or `Some(0)`: every step).
    pub fn open(&self, backend: Backend, trace_max: Option<u32>) -> execstore::Result<ComponentStore> {
        // The execution store reads no clock; the system's, should a component ask.
        let (mut store, instance) = self.instantiate(Arc::new(SystemClock))?;
        let options = wit::OpenOptions {
            backend: match backend {
                Backend::Memory => wit::Backend::Memory,
                Backend::SqliteMemory => wit::Backend::SqliteMemory,
            },
            trace_max: trace_max.unwrap_or(0),
        };
        let api = instance.execstore_store_execution_store().store();
        let handle = api
            .call_open(&mut store, options)
            .map_err(trap)?
            .map_err(from_wit::error)?;
        let capabilities = match api.call_capabilities(&mut store, handle).map_err(trap)? {
            wit::Capabilities { durable: true } => Capabilities::DURABLE,
            wit::Capabilities { durable: false } => Capabilities::EPHEMERAL,
        };
        let trace_max = api.call_trace_max(&mut store, handle).map_err(trap)?;
        Ok(ComponentStore {
            instance: Mutex::new(Instance {
                store,
                bindings: instance,
                handle,
            }),
            capabilities,
            trace_max,
        })
    }
}

impl ComponentRuntime {
    fn instantiate(
        &self,
        clock: Arc<dyn Clock>,
    ) -> execstore::Result<(Store<HostState>, bindings::Execstore)> {
        let state = HostState {
            wasi: WasiCtx::builder().inherit_stderr().build(),
            table: ResourceTable::new(),
            clock,
        };
        let mut store = Store::new(&self.engine, state);
        let instance = self.pre.instantiate(&mut store).map_err(trap)?;
        Ok((store, instance))
    }

    /// A new component instance with an empty workspace storage on `backend`, reading time
    /// from `clock` (through the component's `clock` import).
    pub fn open_workspace(
        &self,
        backend: WorkspaceBackend,
        clock: Arc<dyn Clock>,
    ) -> execstore::Result<ComponentWorkspaceStorage> {
        let (mut store, instance) = self.instantiate(clock)?;
        let api = instance.execstore_store_workspace_store().workspace_storage();
        let backend = match backend {
            WorkspaceBackend::Memory => workspace_wit::WorkspaceBackend::Memory,
        };
        let handle = api
            .call_open(&mut store, backend)
            .map_err(trap)?
            .map_err(from_wit::error)?;
        let c = api.call_capabilities(&mut store, handle).map_err(trap)?;
        let capabilities = WorkspaceCapabilities::new(c.durable, c.cross_process_wakeups);
        Ok(ComponentWorkspaceStorage::new(
            workspace::WorkspaceInstance {
                store,
                bindings: instance,
                handle,
            },
            capabilities,
        ))
    }
}

/// One component instance and the store resource it opened. Dropping it drops the
/// instance, and with it everything the store held.
struct Instance {
    store: Store<HostState>,
    bindings: bindings::Execstore,
    handle: ResourceAny,
}

/// A store inside a component instance, as an [`ExecutionStore`]: every call crosses the
/// component boundary (its arguments lowered into the instance's memory, its results lifted
/// back), one call at a time.
pub struct ComponentStore {
    instance: Mutex<Instance>,
    capabilities: Capabilities,
    trace_max: Option<u32>,
}

impl std::fmt::Debug for ComponentStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentStore")
            .field("capabilities", &self.capabilities)
            .field("trace_max", &self.trace_max)
            .finish_non_exhaustive()
    }
}

/// A trap (a panic inside the component, or a broken instance) as a store error: not
/// retryable, since a trapped instance cannot be entered again.
fn trap(error: wasmtime::Error) -> StoreError {
    StoreError::Backend {
        message: format!("the component trapped: {error:?}"),
        retryable: false,
        source: None,
    }
}

impl ComponentStore {
    fn lock(&self) -> MutexGuard<'_, Instance> {
        // A panic on the host side while holding the lock leaves the instance as it was
        // between two calls (every call is whole or trapped), so the guard is still usable.
        self.instance
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Calls one operation of the store resource and maps both failure layers: a trap, and
    /// the store's own error.
    fn call<T>(
        &self,
        op: impl FnOnce(
            &wit::GuestStore<'_>,
            &mut Store<HostState>,
            ResourceAny,
        ) -> wasmtime::Result<Result<T, wit::StoreError>>,
    ) -> execstore::Result<T> {
        let mut guard = self.lock();
        let Instance {
            store,
            bindings,
            handle,
        } = &mut *guard;
        let api = bindings.execstore_store_execution_store().store();
        op(&api, store, *handle).map_err(trap)?.map_err(from_wit::error)
    }
}

/// JSON text arriving here is the component's output: text that is not one object is
/// `Corrupt`.
const RECEIVED: convert::Received = convert::Received::Output;

impl ExecutionStore for ComponentStore {
    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn trace_max(&self) -> Option<u32> {
        self.trace_max
    }

    fn save(&self, exe: &mut Execution) -> execstore::Result<()> {
        let arg = to_wit::execution(exe);
        exe.version = self.call(|api, store, h| api.call_save(store, h, &arg))?;
        Ok(())
    }

    fn commit(&self, exe: &mut Execution, effects: &Effects) -> execstore::Result<Vec<i64>> {
        let (execution, effects) = (to_wit::execution(exe), to_wit::effects(effects));
        let committed = self.call(|api, store, h| api.call_commit(store, h, &execution, &effects))?;
        exe.version = committed.version;
        Ok(committed.outbox_seqs)
    }

    fn commit_batch(&self, items: &mut [BatchItem]) -> execstore::Result<Vec<execstore::Result<Vec<i64>>>> {
        let args: Vec<wit::BatchItem> = items
            .iter()
            .map(|item| wit::BatchItem {
                execution: to_wit::execution(&item.execution),
                effects: to_wit::effects(&item.effects),
            })
            .collect();
        let outcomes = self.call(|api, store, h| api.call_commit_batch(store, h, &args))?;
        if outcomes.len() != items.len() {
            return Err(StoreError::Backend {
                message: format!(
                    "the component returned {} outcomes for {} items",
                    outcomes.len(),
                    items.len()
                ),
                retryable: false,
                source: None,
            });
        }
        Ok(items
            .iter_mut()
            .zip(outcomes)
            .map(|(item, outcome)| match outcome {
                Ok(committed) => {
                    item.execution.version = committed.version;
                    Ok(committed.outbox_seqs)
                }
                Err(e) => Err(from_wit::error(e)),
            })
            .collect())
    }

    fn load(&self, id: &str) -> execstore::Result<Option<Execution>> {
        self.call(|api, store, h| api.call_load(store, h, id))?
            .map(from_wit::execution)
            .transpose()
    }

    fn load_for_event(&self, id: &str, event_id: &str) -> execstore::Result<(Option<Execution>, bool)> {
        let (exe, seen) = self.call(|api, store, h| api.call_load_for_event(store, h, id, event_id))?;
        Ok((exe.map(from_wit::execution).transpose()?, seen))
    }

    fn is_processed(&self, execution_id: &str, event_id: &str) -> execstore::Result<bool> {
        self.call(|api, store, h| api.call_is_processed(store, h, execution_id, event_id))
    }

    fn list_executions(&self, query: &ListQuery) -> execstore::Result<ExecutionPage> {
        let query = to_wit::list_query(query);
        let page = self.call(|api, store, h| api.call_list_executions(store, h, &query))?;
        Ok(from_wit::page(page))
    }

    fn pending_outbox(&self, after: Option<i64>, limit: usize) -> execstore::Result<Vec<OutboxEntry>> {
        self.call(|api, store, h| api.call_pending_outbox(store, h, after, convert::limit_out(limit)))?
            .into_iter()
            .map(from_wit::outbox_entry)
            .collect()
    }

    fn ack_outbox(&self, seq: i64) -> execstore::Result<()> {
        self.call(|api, store, h| api.call_ack_outbox(store, h, seq))
    }

    fn ack_outbox_many(&self, seqs: &[i64]) -> execstore::Result<usize> {
        let removed = self.call(|api, store, h| api.call_ack_outbox_many(store, h, seqs))?;
        usize::try_from(removed).map_err(|_| StoreError::Backend {
            message: format!("the component reported {removed} acks"),
            retryable: false,
            source: None,
        })
    }

    fn pending_spawns(&self, after: Option<i64>, limit: usize) -> execstore::Result<Vec<SpawnEntry>> {
        self.call(|api, store, h| api.call_pending_spawns(store, h, after, convert::limit_out(limit)))?
            .into_iter()
            .map(from_wit::spawn_entry)
            .collect()
    }

    fn ack_spawn(&self, seq: i64) -> execstore::Result<()> {
        self.call(|api, store, h| api.call_ack_spawn(store, h, seq))
    }

    fn due_timers(
        &self,
        now: f64,
        after: Option<&DueTimer>,
        limit: usize,
    ) -> execstore::Result<Vec<DueTimer>> {
        let after = after.map(to_wit::due_timer);
        let timers = self.call(|api, store, h| {
            api.call_due_timers(store, h, now, after.as_ref(), convert::limit_out(limit))
        })?;
        Ok(timers.into_iter().map(from_wit::due_timer).collect())
    }

    fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> execstore::Result<bool> {
        self.call(|api, store, h| api.call_delete_timer(store, h, execution_id, path, fire_at))
    }

    fn read_trace(&self, execution_id: &str) -> execstore::Result<Vec<TraceStep>> {
        self.call(|api, store, h| api.call_read_trace(store, h, execution_id))?
            .iter()
            .map(|step| from_wit::json_object("trace step", step))
            .collect()
    }

    fn append_trace(&self, execution_id: &str, step: &TraceStep) -> execstore::Result<i64> {
        let step = to_wit::json(step);
        self.call(|api, store, h| api.call_append_trace(store, h, execution_id, &step))
    }

    fn ids_with_prefix(&self, prefix: &str) -> execstore::Result<Vec<String>> {
        self.call(|api, store, h| api.call_ids_with_prefix(store, h, prefix))
    }

    fn purge(&self, execution_id: &str, expected_version: i64) -> execstore::Result<bool> {
        self.call(|api, store, h| api.call_purge(store, h, execution_id, expected_version))
    }

    fn count_by_status(
        &self,
        query: &ListQuery,
    ) -> execstore::Result<Vec<(execstore::executions::Status, u64)>> {
        let query = to_wit::list_query(query);
        let counts = self.call(|api, store, h| api.call_count_by_status(store, h, &query))?;
        Ok(counts
            .into_iter()
            .map(|c| (from_wit::status(c.status), c.count))
            .collect())
    }

    fn attributes(&self) -> execstore::Result<Vec<SearchAttribute>> {
        let all = self.call(|api, store, h| api.call_attributes(store, h))?;
        Ok(all
            .into_iter()
            .map(|a| SearchAttribute { path: a.path })
            .collect())
    }

    fn declare_attribute(&self, path: &str) -> execstore::Result<SearchAttribute> {
        let a = self.call(|api, store, h| api.call_declare_attribute(store, h, path))?;
        Ok(SearchAttribute { path: a.path })
    }

    fn drop_attribute(&self, path: &str) -> execstore::Result<bool> {
        self.call(|api, store, h| api.call_drop_attribute(store, h, path))
    }

    fn enqueue_outbox(&self, target_id: &str, event: &Event) -> execstore::Result<i64> {
        let event = to_wit::event(event);
        self.call(|api, store, h| api.call_enqueue_outbox(store, h, target_id, &event))
    }

    fn change_token(&self) -> execstore::Result<String> {
        self.call(|api, store, h| api.call_change_token(store, h))
    }
}

/// The raw WIT surface, for tests that pass what the [`ExecutionStore`] trait cannot express
/// (JSON text that does not parse, a repeated map key) and check that the component refuses
/// it: [`ComponentStore::commit_raw_json`].
impl ComponentStore {
    /// Commits `exe` with its `context` replaced by the raw text `context_json` (no effects),
    /// exactly as a host in another language could send it. Returns the new version.
    pub fn commit_raw_json(&self, exe: &Execution, context_json: &str) -> execstore::Result<i64> {
        let mut arg = to_wit::execution(exe);
        arg.context = context_json.to_owned();
        self.call(|api, store, h| api.call_save(store, h, &arg))
    }

    /// The component's own checked `send` (`control::send` inside it), as a host in another
    /// language calls it; the trait's [`ExecutionStore::enqueue_outbox`] is the unchecked
    /// write the native `control::send` goes through.
    pub fn send(
        &self,
        execution_id: &str,
        event: &Event,
        expected_version: Option<i64>,
    ) -> execstore::Result<Sent> {
        let event = to_wit::event(event);
        let sent =
            self.call(|api, store, h| api.call_send(store, h, execution_id, &event, expected_version))?;
        Ok(Sent {
            seq: sent.seq,
            target_id: sent.target_id,
            event_id: sent.event_id,
        })
    }

    /// Saves `exe` with its `children` sent as given, repeated keys included (the trait's
    /// map cannot hold a repeated key; a host in another language can send one).
    pub fn save_with_children(
        &self,
        exe: &Execution,
        children: &[(String, execstore::executions::ChildState)],
    ) -> execstore::Result<i64> {
        let mut arg = to_wit::execution(exe);
        arg.children = children
            .iter()
            .map(|(id, state)| to_wit::child_entry(id, state))
            .collect();
        self.call(|api, store, h| api.call_save(store, h, &arg))
    }
}
