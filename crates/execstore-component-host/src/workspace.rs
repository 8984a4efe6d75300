//! The component's `workspace-store` interface as a [`WorkspaceStorage`]: every call crosses
//! into the component and back, so the workspace log's behaviour suite
//! (`execstore::conformance::workspace`) runs through the boundary.
//!
//! What the host adds, because a component cannot block: a workspace's transactions wait
//! for each other here (the component refuses a second `begin` on a held workspace), and
//! [`WorkspaceStorage::wait_for_append`] waits here for a commit through this storage.

use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use execstore::kit::pyjson;
use execstore::workspace::{
    Entry, Envelope, EvaluationError, Lease, LogQuery, RuleProgress, Run, RunPolicy, RunQuery, ScopeState,
    StoredRule, StoredRuleStatus, Timestamp, WorkspaceCapabilities, WorkspaceInfo, WorkspaceRef,
    WorkspaceStorage, WorkspaceTx,
};
use execstore::{executions::JsonObject, StoreError};
use wasmtime::component::ResourceAny;
use wasmtime::Store;

use crate::bindings::exports::execstore::store::workspace_store as wit;
use crate::convert::from_wit::error as store_error;
use crate::{bindings, trap, HostState};

/// Which workspace storage a [`crate::ComponentRuntime::open_workspace`] makes inside the
/// component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkspaceBackend {
    /// The core's in-memory workspace storage.
    Memory,
}

/// One component instance and the workspace storage resource it opened.
pub(crate) struct WorkspaceInstance {
    pub(crate) store: Store<HostState>,
    pub(crate) bindings: bindings::Execstore,
    pub(crate) handle: ResourceAny,
}

struct Shared {
    instance: Mutex<WorkspaceInstance>,
    capabilities: WorkspaceCapabilities,
    // The workspaces a transaction holds; `turn` is signalled when one ends.
    busy: Mutex<HashSet<WorkspaceRef>>,
    turn: Condvar,
    // Commits through this storage so far; `committed` is signalled on each.
    commits: Mutex<u64>,
    committed: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every call into the instance is whole or trapped, so a poisoned guard is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn call<T>(
        &self,
        op: impl FnOnce(
            &mut Store<HostState>,
            &bindings::Execstore,
            ResourceAny,
        ) -> wasmtime::Result<Result<T, wit::StoreError>>,
    ) -> execstore::Result<T> {
        let mut guard = lock(&self.instance);
        let WorkspaceInstance {
            store,
            bindings,
            handle,
        } = &mut *guard;
        op(store, bindings, *handle).map_err(trap)?.map_err(store_error)
    }

    fn release(&self, workspace: &WorkspaceRef) {
        lock(&self.busy).remove(workspace);
        self.turn.notify_all();
    }
}

/// A workspace storage inside a component instance, as a [`WorkspaceStorage`]. `Send + Sync`:
/// calls take turns on the instance; transactions on one workspace wait for each other here.
pub struct ComponentWorkspaceStorage {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ComponentWorkspaceStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentWorkspaceStorage")
            .field("capabilities", &self.shared.capabilities)
            .finish_non_exhaustive()
    }
}

impl ComponentWorkspaceStorage {
    /// Begins a transaction, waiting here while another holds the workspace (the component
    /// cannot wait).
    fn begin_tx(&self, workspace: &WorkspaceRef) -> execstore::Result<ComponentWorkspaceTx> {
        workspace.check()?;
        {
            let mut busy = lock(&self.shared.busy);
            while busy.contains(workspace) {
                busy = self.shared.turn.wait(busy).unwrap_or_else(|p| p.into_inner());
            }
            busy.insert(workspace.clone());
        }
        let arg = wref(workspace);
        match self.call(|api, store, h| api.call_begin(store, h, &arg)) {
            Ok(handle) => Ok(ComponentWorkspaceTx {
                shared: self.shared.clone(),
                handle: Some(handle),
                workspace: workspace.clone(),
            }),
            Err(e) => {
                self.shared.release(workspace);
                Err(e)
            }
        }
    }

    pub(crate) fn new(instance: WorkspaceInstance, capabilities: WorkspaceCapabilities) -> Self {
        ComponentWorkspaceStorage {
            shared: Arc::new(Shared {
                instance: Mutex::new(instance),
                capabilities,
                busy: Mutex::new(HashSet::new()),
                turn: Condvar::new(),
                commits: Mutex::new(0),
                committed: Condvar::new(),
            }),
        }
    }

    fn call<T>(
        &self,
        op: impl FnOnce(
            &wit::GuestWorkspaceStorage<'_>,
            &mut Store<HostState>,
            ResourceAny,
        ) -> wasmtime::Result<Result<T, wit::StoreError>>,
    ) -> execstore::Result<T> {
        self.shared.call(|store, bindings, handle| {
            op(
                &bindings.execstore_store_workspace_store().workspace_storage(),
                store,
                handle,
            )
        })
    }
}

// ---------------------------------------------------------------------------------------
// Conversions. Into the component: the core's records as their JSON text. Out of it: text
// that does not read back is `Corrupt` (the component broke its side of the contract).

fn wref(w: &WorkspaceRef) -> wit::WorkspaceRef {
    wit::WorkspaceRef {
        tenant_id: w.tenant_id.clone(),
        workspace_id: w.workspace_id.clone(),
    }
}

fn wref_back(w: wit::WorkspaceRef) -> WorkspaceRef {
    WorkspaceRef::new(w.tenant_id, w.workspace_id)
}

fn n(value: usize) -> u64 {
    u64::try_from(value).unwrap_or(u64::MAX)
}

fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        what: format!("{what} from the component"),
        reason: e.to_string(),
    }
}

fn object_back(what: &str, text: &str) -> execstore::Result<JsonObject> {
    pyjson::loads_object(text).map_err(|e| corrupt(what, e))
}

fn time_back(what: &str, text: &str) -> execstore::Result<Timestamp> {
    Timestamp::parse_json_text(text).map_err(|e| corrupt(what, e))
}

fn envelopes_back(list: Vec<String>) -> execstore::Result<Vec<Envelope>> {
    list.iter().map(|t| Envelope::from_json(t)).collect()
}

fn runs_back(list: Vec<String>) -> execstore::Result<Vec<Run>> {
    list.iter().map(|t| Run::from_json(t)).collect()
}

fn entry(e: &Entry) -> wit::Entry {
    wit::Entry {
        id: e.id.clone(),
        actor: pyjson::dumps(&e.actor),
        event: pyjson::dumps(&e.event),
        causation: e.causation.as_ref().map(pyjson::dumps),
        correlation_id: e.correlation_id.clone(),
        traceparent: e.traceparent.clone(),
    }
}

fn stored_rule(s: &StoredRule) -> wit::StoredRule {
    wit::StoredRule {
        rule: pyjson::dumps(&s.rule),
        version: s.version,
        status: s.status.as_str().to_owned(),
        provenance: pyjson::dumps(&s.provenance),
    }
}

fn stored_rule_back(s: wit::StoredRule) -> execstore::Result<StoredRule> {
    Ok(StoredRule {
        rule: object_back("stored rule", &s.rule)?,
        version: s.version,
        status: StoredRuleStatus::parse(&s.status).map_err(|e| corrupt("stored rule", e))?,
        provenance: object_back("stored rule", &s.provenance)?,
    })
}

fn set(names: &BTreeSet<String>) -> Vec<String> {
    names.iter().cloned().collect()
}

// ---------------------------------------------------------------------------------------

/// A transaction inside the component. Dropped without a commit, it rolls back (the
/// component's resource is dropped) and frees its workspace.
struct ComponentWorkspaceTx {
    shared: Arc<Shared>,
    handle: Option<ResourceAny>,
    workspace: WorkspaceRef,
}

impl ComponentWorkspaceTx {
    fn call<T>(
        &self,
        op: impl FnOnce(
            &wit::GuestWorkspaceTx<'_>,
            &mut Store<HostState>,
            ResourceAny,
        ) -> wasmtime::Result<Result<T, wit::StoreError>>,
    ) -> execstore::Result<T> {
        let Some(tx) = self.handle else {
            return Err(StoreError::Backend {
                message: "the transaction has ended".into(),
                retryable: false,
                source: None,
            });
        };
        self.shared.call(|store, bindings, _| {
            op(
                &bindings.execstore_store_workspace_store().workspace_tx(),
                store,
                tx,
            )
        })
    }

    /// Drops the component's resource (rolling back what was not committed) and frees the
    /// workspace.
    fn end(&mut self) {
        if let Some(handle) = self.handle.take() {
            let mut guard = lock(&self.shared.instance);
            // A trapped instance cannot drop it; nothing more to undo then.
            let _ = handle.resource_drop(&mut guard.store);
            drop(guard);
            self.shared.release(&self.workspace);
        }
    }
}

impl Drop for ComponentWorkspaceTx {
    fn drop(&mut self) {
        self.end();
    }
}

impl WorkspaceTx for ComponentWorkspaceTx {
    fn append(&mut self, entries: &[Entry]) -> execstore::Result<Vec<Envelope>> {
        let args: Vec<wit::Entry> = entries.iter().map(entry).collect();
        envelopes_back(self.call(|api, store, h| api.call_append(store, h, &args))?)
    }

    fn envelope(&mut self, event_id: &str) -> execstore::Result<Option<Envelope>> {
        self.call(|api, store, h| api.call_envelope(store, h, event_id))?
            .map(|t| Envelope::from_json(&t))
            .transpose()
    }

    fn head_seq(&mut self) -> execstore::Result<i64> {
        self.call(|api, store, h| api.call_head_seq(store, h))
    }

    fn read(&mut self, after_seq: i64, limit: usize) -> execstore::Result<Vec<Envelope>> {
        envelopes_back(self.call(|api, store, h| api.call_read(store, h, after_seq, n(limit)))?)
    }

    fn progress(&mut self, rule: &str) -> execstore::Result<Option<RuleProgress>> {
        self.call(|api, store, h| api.call_progress(store, h, rule))?
            .map(|t| RuleProgress::from_json(&t))
            .transpose()
    }

    fn save_progress(&mut self, rule: &str, progress: &RuleProgress) -> execstore::Result<()> {
        let doc = progress.to_json();
        self.call(|api, store, h| api.call_save_progress(store, h, rule, &doc))
    }

    fn states(&mut self, rule: &str, keys: &[String]) -> execstore::Result<Vec<(String, ScopeState)>> {
        self.call(|api, store, h| api.call_states(store, h, rule, keys))?
            .into_iter()
            .map(|d| Ok((d.name, ScopeState::from_json(&d.doc)?)))
            .collect()
    }

    fn save_states(&mut self, rule: &str, states: &[(String, ScopeState)]) -> execstore::Result<()> {
        let args: Vec<wit::NamedDoc> = states
            .iter()
            .map(|(name, s)| wit::NamedDoc {
                name: name.clone(),
                doc: s.to_json(),
            })
            .collect();
        self.call(|api, store, h| api.call_save_states(store, h, rule, &args))
    }

    fn clear_states(&mut self, rule: &str) -> execstore::Result<()> {
        self.call(|api, store, h| api.call_clear_states(store, h, rule))
    }

    fn run(&mut self, run_id: &str) -> execstore::Result<Option<Run>> {
        self.call(|api, store, h| api.call_run(store, h, run_id))?
            .map(|t| Run::from_json(&t))
            .transpose()
    }

    fn save_runs(&mut self, runs: &[Run]) -> execstore::Result<()> {
        let args: Vec<String> = runs.iter().map(Run::to_json).collect();
        self.call(|api, store, h| api.call_save_runs(store, h, &args))
    }

    fn scope_runs(&mut self, rule: &str, scope_key: &str) -> execstore::Result<Vec<Run>> {
        runs_back(self.call(|api, store, h| api.call_scope_runs(store, h, rule, scope_key))?)
    }

    fn dead_letter(&mut self, errors: &[EvaluationError]) -> execstore::Result<()> {
        let args: Vec<String> = errors.iter().map(EvaluationError::to_json).collect();
        self.call(|api, store, h| api.call_dead_letter(store, h, &args))
    }

    fn schedule(&mut self, name: &str) -> execstore::Result<Option<Timestamp>> {
        self.call(|api, store, h| api.call_schedule(store, h, name))?
            .map(|t| time_back("schedule", &t))
            .transpose()
    }

    fn save_schedule(&mut self, name: &str, at: Timestamp) -> execstore::Result<()> {
        let at = at.to_json_text();
        self.call(|api, store, h| api.call_save_schedule(store, h, name, &at))
    }

    fn stored_rule(&mut self, name: &str) -> execstore::Result<Option<StoredRule>> {
        self.call(|api, store, h| api.call_stored_rule(store, h, name))?
            .map(stored_rule_back)
            .transpose()
    }

    fn stored_rules(&mut self) -> execstore::Result<Vec<StoredRule>> {
        self.call(|api, store, h| api.call_stored_rules(store, h))?
            .into_iter()
            .map(stored_rule_back)
            .collect()
    }

    fn save_stored_rule(&mut self, stored: &StoredRule) -> execstore::Result<()> {
        let arg = stored_rule(stored);
        self.call(|api, store, h| api.call_save_stored_rule(store, h, &arg))
    }

    fn commit(mut self: Box<Self>) -> execstore::Result<()> {
        let result = self.call(|api, store, h| api.call_commit(store, h));
        self.end();
        if result.is_ok() {
            *lock(&self.shared.commits) += 1;
            self.shared.committed.notify_all();
        }
        result
    }
}

impl WorkspaceStorage for ComponentWorkspaceStorage {
    fn capabilities(&self) -> WorkspaceCapabilities {
        self.shared.capabilities
    }

    fn begin(&self, workspace: &WorkspaceRef) -> execstore::Result<Box<dyn WorkspaceTx>> {
        Ok(Box::new(self.begin_tx(workspace)?))
    }

    fn head_seq(&self, workspace: &WorkspaceRef) -> execstore::Result<i64> {
        let w = wref(workspace);
        self.call(|api, store, h| api.call_head_seq(store, h, &w))
    }

    fn read(&self, workspace: &WorkspaceRef, query: &LogQuery) -> execstore::Result<Vec<Envelope>> {
        let w = wref(workspace);
        let q = wit::LogQuery {
            after_seq: query.after_seq,
            before_seq: query.before_seq,
            types: query.types.clone(),
            limit: query.limit.map(n),
            last: query.last.map(n),
        };
        envelopes_back(self.call(|api, store, h| api.call_read(store, h, &w, &q))?)
    }

    fn rule_history(&self, workspace: &WorkspaceRef, name: &str) -> execstore::Result<Vec<Envelope>> {
        let w = wref(workspace);
        envelopes_back(self.call(|api, store, h| api.call_rule_history(store, h, &w, name))?)
    }

    fn envelope(&self, workspace: &WorkspaceRef, event_id: &str) -> execstore::Result<Option<Envelope>> {
        let w = wref(workspace);
        self.call(|api, store, h| api.call_envelope(store, h, &w, event_id))?
            .map(|t| Envelope::from_json(&t))
            .transpose()
    }

    fn run(&self, workspace: &WorkspaceRef, run_id: &str) -> execstore::Result<Option<Run>> {
        let w = wref(workspace);
        self.call(|api, store, h| api.call_run(store, h, &w, run_id))?
            .map(|t| Run::from_json(&t))
            .transpose()
    }

    fn runs(&self, workspace: &WorkspaceRef, query: &RunQuery) -> execstore::Result<Vec<Run>> {
        let w = wref(workspace);
        let q = wit::RunQuery {
            rule: query.rule.clone(),
            status: query.status.map(|s| s.as_str().to_owned()),
            scope_key: query.scope_key.clone(),
            limit: query.limit.map(n),
        };
        runs_back(self.call(|api, store, h| api.call_runs(store, h, &w, &q))?)
    }

    fn dead_letters(
        &self,
        workspace: &WorkspaceRef,
        rule: Option<&str>,
    ) -> execstore::Result<Vec<EvaluationError>> {
        let w = wref(workspace);
        self.call(|api, store, h| api.call_dead_letters(store, h, &w, rule))?
            .iter()
            .map(|t| EvaluationError::from_json(t))
            .collect()
    }

    fn progress(&self, workspace: &WorkspaceRef) -> execstore::Result<Vec<(String, RuleProgress)>> {
        let w = wref(workspace);
        self.call(|api, store, h| api.call_progress(store, h, &w))?
            .into_iter()
            .map(|d| Ok((d.name, RuleProgress::from_json(&d.doc)?)))
            .collect()
    }

    fn schedules(&self, workspace: &WorkspaceRef) -> execstore::Result<Vec<(String, Timestamp)>> {
        let w = wref(workspace);
        self.call(|api, store, h| api.call_schedules(store, h, &w))?
            .into_iter()
            .map(|t| Ok((t.name, time_back("schedule", &t.at)?)))
            .collect()
    }

    fn stored_rules(&self, workspace: &WorkspaceRef) -> execstore::Result<Vec<StoredRule>> {
        let w = wref(workspace);
        self.call(|api, store, h| api.call_stored_rules(store, h, &w))?
            .into_iter()
            .map(stored_rule_back)
            .collect()
    }

    fn workspaces(&self) -> execstore::Result<Vec<WorkspaceRef>> {
        Ok(self
            .call(|api, store, h| api.call_workspaces(store, h))?
            .into_iter()
            .map(wref_back)
            .collect())
    }

    fn workspace_info(&self, workspace: &WorkspaceRef) -> execstore::Result<Option<WorkspaceInfo>> {
        let w = wref(workspace);
        self.call(|api, store, h| api.call_workspace_info(store, h, &w))?
            .map(|i| {
                Ok(WorkspaceInfo {
                    workspace: wref_back(i.workspace),
                    head_seq: i.head_seq,
                    head_ts: i.head_ts.map(|t| time_back("head ts", &t)).transpose()?,
                })
            })
            .transpose()
    }

    fn due_runs(
        &self,
        now: Timestamp,
        limit: usize,
        policy: &RunPolicy,
    ) -> execstore::Result<Vec<(WorkspaceRef, Run)>> {
        let now = now.to_json_text();
        let p = wit::RunPolicy {
            disabled: set(&policy.disabled),
            ordered: set(&policy.ordered),
            blocking: set(&policy.blocking),
        };
        self.call(|api, store, h| api.call_due_runs(store, h, &now, n(limit), &p))?
            .into_iter()
            .map(|d| Ok((wref_back(d.workspace), Run::from_json(&d.run)?)))
            .collect()
    }

    fn acquire_lease(
        &self,
        workspace: &WorkspaceRef,
        key: &str,
        holder: &str,
        ttl: Duration,
    ) -> execstore::Result<bool> {
        let w = wref(workspace);
        let nanos = u64::try_from(ttl.as_nanos()).unwrap_or(u64::MAX);
        self.call(|api, store, h| api.call_acquire_lease(store, h, &w, key, holder, nanos))
    }

    fn release_lease(&self, workspace: &WorkspaceRef, key: &str, holder: &str) -> execstore::Result<()> {
        let w = wref(workspace);
        self.call(|api, store, h| api.call_release_lease(store, h, &w, key, holder))
    }

    fn leases(&self, workspace: &WorkspaceRef) -> execstore::Result<Vec<Lease>> {
        let w = wref(workspace);
        self.call(|api, store, h| api.call_leases(store, h, &w))?
            .into_iter()
            .map(|l| {
                Ok(Lease {
                    expires_at: time_back("lease", &l.expires_at)?,
                    key: l.key,
                    holder: l.holder,
                })
            })
            .collect()
    }

    fn cursor(&self, workspace: &WorkspaceRef, name: &str) -> execstore::Result<i64> {
        let w = wref(workspace);
        self.call(|api, store, h| api.call_cursor(store, h, &w, name))
    }

    fn save_cursor(&self, workspace: &WorkspaceRef, name: &str, seq: i64) -> execstore::Result<()> {
        let w = wref(workspace);
        self.call(|api, store, h| api.call_save_cursor(store, h, &w, name, seq))
    }

    fn cursors(&self, workspace: &WorkspaceRef) -> execstore::Result<Vec<(String, i64)>> {
        let w = wref(workspace);
        Ok(self
            .call(|api, store, h| api.call_cursors(store, h, &w))?
            .into_iter()
            .map(|c| (c.name, c.seq))
            .collect())
    }

    fn wait_for_append(
        &self,
        workspace: &WorkspaceRef,
        after_seq: i64,
        timeout: Duration,
    ) -> execstore::Result<bool> {
        let deadline = Instant::now() + timeout;
        let mut commits = lock(&self.shared.commits);
        loop {
            // Read with the commit counter held: a commit that lands after this read
            // signals the condition only once this thread waits on it.
            if self.head_seq(workspace)? > after_seq {
                return Ok(true);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(false);
            }
            commits = self
                .shared
                .committed
                .wait_timeout(commits, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// The raw WIT surface, for tests that pass what the trait cannot express (JSON text that
/// does not parse) and check that the component refuses it.
impl ComponentWorkspaceStorage {
    /// In one transaction on `workspace`, appends an entry whose event is the raw text
    /// `event_json` (as a host in another language could send it), and commits if that
    /// succeeded. Returns the envelopes' seqs.
    pub fn append_raw_event(
        &self,
        workspace: &WorkspaceRef,
        id: &str,
        event_json: &str,
    ) -> execstore::Result<Vec<i64>> {
        let tx = Box::new(self.begin_tx(workspace)?);
        let arg = [wit::Entry {
            id: id.to_owned(),
            actor: "null".to_owned(),
            event: event_json.to_owned(),
            causation: None,
            correlation_id: None,
            traceparent: None,
        }];
        let envelopes = tx.call(|api, store, h| api.call_append(store, h, &arg))?;
        let seqs = envelopes_back(envelopes)?.iter().map(|e| e.seq).collect();
        tx.commit()?;
        Ok(seqs)
    }
}
