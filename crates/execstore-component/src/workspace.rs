//! The `workspace-store` interface of `wit/store.wit`: the `workspace-storage` and
//! `workspace-tx` resources over the core's [`MemoryWorkspaceStorage`], reading time from the
//! host's `clock` import.
//!
//! reflexr's records cross as their JSON text, parsed here with the core's Python-compatible
//! JSON ([`execstore::kit::pyjson`]) and checked by the core's own constructors, so a bad record
//! fails here as it fails natively.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use execstore::kit::pyjson;
use execstore::workspace::{
    decode_text, decode_texts, input_object, input_value, Clock, Entry, Envelope, EvaluationError, LogQuery,
    MemoryWorkspaceStorage, RuleProgress, Run, RunPolicy, RunQuery, RunStatus, ScopeState, StoredRule,
    Timestamp, WorkspaceRef, WorkspaceStorage, WorkspaceTx,
};
use execstore::{executions::JsonObject, StoreError};
use serde_json::Value;

use crate::bindings::execstore::store::clock as host_clock;
use crate::bindings::exports::execstore::store::workspace_store as wit;
use crate::convert::to_wit::error as wit_error;

/// The host's clock (the `clock` import).
struct HostClock;

impl Clock for HostClock {
    fn now(&self) -> Timestamp {
        // In range whenever the host's clock is a `Timestamp`; the epoch otherwise.
        Timestamp::from_micros(host_clock::now())
            .or_else(|_| Timestamp::from_micros(0))
            .expect("the epoch is in range")
    }
}

type Out<T> = Result<T, wit::StoreError>;

fn out<T, U>(result: execstore::Result<T>, convert: impl FnOnce(T) -> U) -> Out<U> {
    result.map(convert).map_err(|e| wit_error(&e))
}

fn err(e: StoreError) -> wit::StoreError {
    wit_error(&e)
}

// ---------------------------------------------------------------------------------------
// In: the host's records as the core's.

fn workspace(w: wit::WorkspaceRef) -> WorkspaceRef {
    WorkspaceRef::new(w.tenant_id, w.workspace_id)
}

fn timestamp(field: &str, text: &str) -> execstore::Result<Timestamp> {
    Timestamp::parse_json_text(text).map_err(|e| match e {
        StoreError::InvalidInput { reason, .. } => StoreError::invalid(field, reason),
        other => other,
    })
}

fn count(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// An entry through the core's decoder (the same checks and field names as every surface):
/// its JSON text fields parsed, then read as reflexr's `Entry` object.
fn entry(i: usize, e: wit::Entry) -> execstore::Result<Entry> {
    let at = |name: &str| format!("entries[{i}].{name}");
    let mut map = JsonObject::new();
    map.insert("id".into(), e.id.into());
    map.insert("actor".into(), input_value(&at("actor"), &e.actor)?);
    map.insert("event".into(), input_value(&at("event"), &e.event)?);
    if let Some(c) = e.causation {
        map.insert("causation".into(), input_value(&at("causation"), &c)?);
    }
    map.insert("correlation_id".into(), e.correlation_id.into());
    map.insert("traceparent".into(), e.traceparent.into());
    Entry::from_object(&map).map_err(|e| e.within(|| format!("entries[{i}]")))
}

/// A stored rule through the core's decoder, its JSON text fields parsed.
fn stored_rule(s: wit::StoredRule) -> execstore::Result<StoredRule> {
    let mut map = JsonObject::new();
    map.insert("rule".into(), Value::Object(input_object("rule", &s.rule)?));
    map.insert("version".into(), s.version.into());
    map.insert("status".into(), s.status.into());
    map.insert(
        "provenance".into(),
        Value::Object(input_object("provenance", &s.provenance)?),
    );
    StoredRule::from_object(&map)
}

fn log_query(q: wit::LogQuery) -> LogQuery {
    LogQuery {
        after_seq: q.after_seq,
        before_seq: q.before_seq,
        types: q.types,
        limit: q.limit.map(count),
        last: q.last.map(count),
    }
}

fn run_query(q: wit::RunQuery) -> execstore::Result<RunQuery> {
    Ok(RunQuery {
        rule: q.rule,
        status: q.status.as_deref().map(RunStatus::parse).transpose()?,
        scope_key: q.scope_key,
        limit: q.limit.map(count),
    })
}

fn policy(p: wit::RunPolicy) -> RunPolicy {
    let set = |names: Vec<String>| names.into_iter().collect::<BTreeSet<_>>();
    RunPolicy {
        disabled: set(p.disabled),
        ordered: set(p.ordered),
        blocking: set(p.blocking),
    }
}

// ---------------------------------------------------------------------------------------
// Out: the core's records as text.

fn envelopes(list: Vec<Envelope>) -> Vec<String> {
    list.iter().map(Envelope::to_json).collect()
}

fn runs(list: Vec<Run>) -> Vec<String> {
    list.iter().map(Run::to_json).collect()
}

fn stored_rule_out(s: StoredRule) -> wit::StoredRule {
    wit::StoredRule {
        rule: pyjson::dumps(&s.rule),
        version: s.version,
        status: s.status.as_str().to_owned(),
        provenance: pyjson::dumps(&s.provenance),
    }
}

fn workspace_out(w: WorkspaceRef) -> wit::WorkspaceRef {
    wit::WorkspaceRef {
        tenant_id: w.tenant_id,
        workspace_id: w.workspace_id,
    }
}

// ---------------------------------------------------------------------------------------
// The resources.

/// The workspaces a transaction holds now: the component has no threads, so a `begin` on one
/// of them cannot wait and is refused (the host serializes its transactions).
type Busy = Rc<RefCell<HashSet<WorkspaceRef>>>;

/// A workspace storage inside the component.
pub struct ComponentWorkspaceStorage {
    inner: MemoryWorkspaceStorage,
    busy: Busy,
}

/// A transaction inside the component; `None` once committed.
pub struct ComponentWorkspaceTx {
    tx: RefCell<Option<Box<dyn WorkspaceTx>>>,
    workspace: WorkspaceRef,
    busy: Busy,
}

impl Drop for ComponentWorkspaceTx {
    fn drop(&mut self) {
        // Rolls back (the core's transaction does on drop), then frees the workspace.
        self.tx.borrow_mut().take();
        self.busy.borrow_mut().remove(&self.workspace);
    }
}

impl ComponentWorkspaceTx {
    fn with<T, U>(
        &self,
        f: impl FnOnce(&mut dyn WorkspaceTx) -> execstore::Result<T>,
        convert: impl FnOnce(T) -> U,
    ) -> Out<U> {
        let mut tx = self.tx.borrow_mut();
        let Some(tx) = tx.as_mut() else {
            return Err(err(StoreError::Backend {
                message: "the transaction has ended (committed)".into(),
                retryable: false,
                source: None,
            }));
        };
        out(f(tx.as_mut()), convert)
    }
}

impl wit::GuestWorkspaceTx for ComponentWorkspaceTx {
    fn append(&self, entries: Vec<wit::Entry>) -> Out<Vec<String>> {
        let entries = entries
            .into_iter()
            .enumerate()
            .map(|(i, e)| entry(i, e))
            .collect::<execstore::Result<Vec<_>>>()
            .map_err(err)?;
        self.with(|tx| tx.append(&entries), envelopes)
    }

    fn envelope(&self, event_id: String) -> Out<Option<String>> {
        self.with(|tx| tx.envelope(&event_id), |e| e.map(|e| e.to_json()))
    }

    fn head_seq(&self) -> Out<i64> {
        self.with(|tx| tx.head_seq(), |s| s)
    }

    fn read(&self, after_seq: i64, limit: u64) -> Out<Vec<String>> {
        self.with(|tx| tx.read(after_seq, count(limit)), envelopes)
    }

    fn progress(&self, rule: String) -> Out<Option<String>> {
        self.with(|tx| tx.progress(&rule), |p| p.map(|p| p.to_json()))
    }

    fn save_progress(&self, rule: String, progress: String) -> Out<()> {
        let progress = decode_text("progress", &progress, RuleProgress::from_value).map_err(err)?;
        self.with(|tx| tx.save_progress(&rule, &progress), |()| ())
    }

    fn states(&self, rule: String, keys: Vec<String>) -> Out<Vec<wit::NamedDoc>> {
        self.with(
            |tx| tx.states(&rule, &keys),
            |states| {
                states
                    .into_iter()
                    .map(|(name, s)| wit::NamedDoc {
                        name,
                        doc: s.to_json(),
                    })
                    .collect()
            },
        )
    }

    fn save_states(&self, rule: String, states: Vec<wit::NamedDoc>) -> Out<()> {
        let states = states
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                let state = decode_text(&format!("states[{i}]"), &s.doc, ScopeState::from_value)?;
                Ok((s.name, state))
            })
            .collect::<execstore::Result<Vec<_>>>()
            .map_err(err)?;
        self.with(|tx| tx.save_states(&rule, &states), |()| ())
    }

    fn clear_states(&self, rule: String) -> Out<()> {
        self.with(|tx| tx.clear_states(&rule), |()| ())
    }

    fn run(&self, run_id: String) -> Out<Option<String>> {
        self.with(|tx| tx.run(&run_id), |r| r.map(|r| r.to_json()))
    }

    fn save_runs(&self, list: Vec<String>) -> Out<()> {
        let list = decode_texts("runs", &list, Run::from_value).map_err(err)?;
        self.with(|tx| tx.save_runs(&list), |()| ())
    }

    fn scope_runs(&self, rule: String, scope_key: String) -> Out<Vec<String>> {
        self.with(|tx| tx.scope_runs(&rule, &scope_key), runs)
    }

    fn dead_letter(&self, errors: Vec<String>) -> Out<()> {
        let errors = decode_texts("errors", &errors, EvaluationError::from_value).map_err(err)?;
        self.with(|tx| tx.dead_letter(&errors), |()| ())
    }

    fn schedule(&self, name: String) -> Out<Option<String>> {
        self.with(|tx| tx.schedule(&name), |t| t.map(|t| t.to_json_text()))
    }

    fn save_schedule(&self, name: String, at: String) -> Out<()> {
        let at = timestamp("at", &at).map_err(err)?;
        self.with(|tx| tx.save_schedule(&name, at), |()| ())
    }

    fn stored_rule(&self, name: String) -> Out<Option<wit::StoredRule>> {
        self.with(|tx| tx.stored_rule(&name), |s| s.map(stored_rule_out))
    }

    fn stored_rules(&self) -> Out<Vec<wit::StoredRule>> {
        self.with(
            |tx| tx.stored_rules(),
            |l| l.into_iter().map(stored_rule_out).collect(),
        )
    }

    fn save_stored_rule(&self, stored: wit::StoredRule) -> Out<()> {
        let stored = stored_rule(stored).map_err(|e| err(e.within(|| "stored".into())))?;
        self.with(|tx| tx.save_stored_rule(&stored), |()| ())
    }

    fn commit(&self) -> Out<()> {
        let tx = self.tx.borrow_mut().take();
        let result = match tx {
            Some(tx) => out(tx.commit(), |()| ()),
            None => Err(err(StoreError::Backend {
                message: "the transaction has ended (committed)".into(),
                retryable: false,
                source: None,
            })),
        };
        self.busy.borrow_mut().remove(&self.workspace);
        result
    }
}

impl wit::GuestWorkspaceStorage for ComponentWorkspaceStorage {
    fn open(backend: wit::WorkspaceBackend) -> Out<wit::WorkspaceStorage> {
        match backend {
            wit::WorkspaceBackend::Memory => Ok(wit::WorkspaceStorage::new(ComponentWorkspaceStorage {
                inner: MemoryWorkspaceStorage::new(Arc::new(HostClock)),
                busy: Busy::default(),
            })),
        }
    }

    fn capabilities(&self) -> wit::WorkspaceCapabilities {
        let c = self.inner.capabilities();
        wit::WorkspaceCapabilities {
            durable: c.durable,
            cross_process_wakeups: c.cross_process_wakeups,
        }
    }

    fn begin(&self, w: wit::WorkspaceRef) -> Out<wit::WorkspaceTx> {
        let w = workspace(w);
        w.check().map_err(err)?;
        if self.busy.borrow().contains(&w) {
            return Err(err(StoreError::Backend {
                message: format!("a transaction holds the workspace {w}: the component cannot wait for it"),
                retryable: true,
                source: None,
            }));
        }
        let tx = self.inner.begin(&w).map_err(err)?;
        self.busy.borrow_mut().insert(w.clone());
        Ok(wit::WorkspaceTx::new(ComponentWorkspaceTx {
            tx: RefCell::new(Some(tx)),
            workspace: w,
            busy: self.busy.clone(),
        }))
    }

    fn head_seq(&self, w: wit::WorkspaceRef) -> Out<i64> {
        out(self.inner.head_seq(&workspace(w)), |s| s)
    }

    fn read(&self, w: wit::WorkspaceRef, query: wit::LogQuery) -> Out<Vec<String>> {
        out(self.inner.read(&workspace(w), &log_query(query)), envelopes)
    }

    fn rule_history(&self, w: wit::WorkspaceRef, name: String) -> Out<Vec<String>> {
        out(self.inner.rule_history(&workspace(w), &name), envelopes)
    }

    fn envelope(&self, w: wit::WorkspaceRef, event_id: String) -> Out<Option<String>> {
        out(self.inner.envelope(&workspace(w), &event_id), |e| {
            e.map(|e| e.to_json())
        })
    }

    fn run(&self, w: wit::WorkspaceRef, run_id: String) -> Out<Option<String>> {
        out(self.inner.run(&workspace(w), &run_id), |r| r.map(|r| r.to_json()))
    }

    fn runs(&self, w: wit::WorkspaceRef, query: wit::RunQuery) -> Out<Vec<String>> {
        let query = run_query(query).map_err(err)?;
        out(self.inner.runs(&workspace(w), &query), runs)
    }

    fn dead_letters(&self, w: wit::WorkspaceRef, rule: Option<String>) -> Out<Vec<String>> {
        out(self.inner.dead_letters(&workspace(w), rule.as_deref()), |l| {
            l.iter().map(EvaluationError::to_json).collect()
        })
    }

    fn progress(&self, w: wit::WorkspaceRef) -> Out<Vec<wit::NamedDoc>> {
        out(self.inner.progress(&workspace(w)), |l| {
            l.into_iter()
                .map(|(name, p)| wit::NamedDoc {
                    name,
                    doc: p.to_json(),
                })
                .collect()
        })
    }

    fn schedules(&self, w: wit::WorkspaceRef) -> Out<Vec<wit::NamedTime>> {
        out(self.inner.schedules(&workspace(w)), |l| {
            l.into_iter()
                .map(|(name, at)| wit::NamedTime {
                    name,
                    at: at.to_json_text(),
                })
                .collect()
        })
    }

    fn stored_rules(&self, w: wit::WorkspaceRef) -> Out<Vec<wit::StoredRule>> {
        out(self.inner.stored_rules(&workspace(w)), |l| {
            l.into_iter().map(stored_rule_out).collect()
        })
    }

    fn workspaces(&self) -> Out<Vec<wit::WorkspaceRef>> {
        out(self.inner.workspaces(), |l| {
            l.into_iter().map(workspace_out).collect()
        })
    }

    fn workspace_info(&self, w: wit::WorkspaceRef) -> Out<Option<wit::WorkspaceInfo>> {
        out(self.inner.workspace_info(&workspace(w)), |info| {
            info.map(|i| wit::WorkspaceInfo {
                workspace: workspace_out(i.workspace),
                head_seq: i.head_seq,
                head_ts: i.head_ts.map(|t| t.to_json_text()),
            })
        })
    }

    fn due_runs(&self, now: String, limit: u64, p: wit::RunPolicy) -> Out<Vec<wit::DueRun>> {
        let now = timestamp("now", &now).map_err(err)?;
        out(self.inner.due_runs(now, count(limit), &policy(p)), |l| {
            l.into_iter()
                .map(|(w, r)| wit::DueRun {
                    workspace: workspace_out(w),
                    run: r.to_json(),
                })
                .collect()
        })
    }

    fn acquire_lease(&self, w: wit::WorkspaceRef, key: String, holder: String, ttl_nanos: u64) -> Out<bool> {
        out(
            self.inner
                .acquire_lease(&workspace(w), &key, &holder, Duration::from_nanos(ttl_nanos)),
            |b| b,
        )
    }

    fn release_lease(&self, w: wit::WorkspaceRef, key: String, holder: String) -> Out<()> {
        out(self.inner.release_lease(&workspace(w), &key, &holder), |()| ())
    }

    fn leases(&self, w: wit::WorkspaceRef) -> Out<Vec<wit::Lease>> {
        out(self.inner.leases(&workspace(w)), |l| {
            l.into_iter()
                .map(|l| wit::Lease {
                    key: l.key,
                    holder: l.holder,
                    expires_at: l.expires_at.to_json_text(),
                })
                .collect()
        })
    }

    fn cursor(&self, w: wit::WorkspaceRef, name: String) -> Out<i64> {
        out(self.inner.cursor(&workspace(w), &name), |s| s)
    }

    fn save_cursor(&self, w: wit::WorkspaceRef, name: String, seq: i64) -> Out<()> {
        out(self.inner.save_cursor(&workspace(w), &name, seq), |()| ())
    }

    fn cursors(&self, w: wit::WorkspaceRef) -> Out<Vec<wit::NamedSeq>> {
        out(self.inner.cursors(&workspace(w)), |l| {
            l.into_iter()
                .map(|(name, seq)| wit::NamedSeq { name, seq })
                .collect()
        })
    }
}
