//! [`MemoryWorkspaceStorage`]: every workspace in process memory, a [`WorkspaceDriver`]
//! behind the [`WorkspaceFront`].

use super::driver::{DriverTx, WorkspaceDriver};
use super::due;
use super::front::{AsWorkspaceFront, WorkspaceFront};
use super::model::{
    Envelope, EvaluationError, Lease, RuleProgress, Run, ScopeState, StoredRule, StoredRuleStatus,
    WorkspaceInfo, WorkspaceRef,
};
use super::policy::RunPolicy;
use super::search::RunRow;
use super::storage::{LogQuery, RunQuery, WorkspaceCapabilities};
use super::time::{Clock, Timestamp};
use crate::error::Result;
use crate::kit::filter::Filter;
use indexmap::IndexMap;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

#[derive(Default)]
struct Data {
    // Whether a transaction on it committed (reflexr's workspace row exists); leases and
    // cursors alone do not make one.
    row: bool,
    log: Vec<Envelope>,
    ids: HashMap<String, usize>,
    progress: IndexMap<String, RuleProgress>,
    states: HashMap<String, IndexMap<String, ScopeState>>,
    runs: IndexMap<String, Run>,
    dead_letters: Vec<EvaluationError>,
    schedules: IndexMap<String, Timestamp>,
    leases: BTreeMap<String, Lease>,
    cursors: BTreeMap<String, i64>,
    rules: BTreeMap<String, StoredRule>,
}

struct Inner {
    // Every workspace that a transaction began on, by tenant then workspace.
    data: Mutex<BTreeMap<WorkspaceRef, Data>>,
    // The workspaces a transaction holds now; `turn` is signalled when one ends or commits.
    busy: Mutex<std::collections::HashSet<WorkspaceRef>>,
    turn: Condvar,
    appended: Condvar,
}

/// Workspaces kept in process memory: the whole contract, nothing kept across restarts, not
/// shared between processes. Clones share the same workspaces.
#[derive(Clone)]
pub struct MemoryWorkspaceStorage(WorkspaceFront<MemoryWorkspaceDriver>);

impl MemoryWorkspaceStorage {
    /// An empty storage on `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        MemoryWorkspaceStorage(WorkspaceFront::new(MemoryWorkspaceDriver::new(), clock))
    }
}

impl AsWorkspaceFront for MemoryWorkspaceStorage {
    type Driver = MemoryWorkspaceDriver;
    fn front(&self) -> &WorkspaceFront<MemoryWorkspaceDriver> {
        &self.0
    }
}

/// The memory backend's driver: maps under a lock. Clones share the same workspaces.
#[derive(Clone)]
pub struct MemoryWorkspaceDriver {
    inner: Arc<Inner>,
}

impl MemoryWorkspaceDriver {
    /// No workspaces yet.
    pub fn new() -> Self {
        MemoryWorkspaceDriver {
            inner: Arc::new(Inner {
                data: Mutex::new(BTreeMap::new()),
                busy: Mutex::new(Default::default()),
                turn: Condvar::new(),
                appended: Condvar::new(),
            }),
        }
    }

    fn data(&self) -> MutexGuard<'_, BTreeMap<WorkspaceRef, Data>> {
        self.inner.data.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn with<T>(&self, ws: &WorkspaceRef, f: impl FnOnce(Option<&Data>) -> T) -> Result<T> {
        Ok(f(self.data().get(ws)))
    }
}

impl Default for MemoryWorkspaceDriver {
    fn default() -> Self {
        Self::new()
    }
}

/// A transaction of [`MemoryWorkspaceDriver`]: its writes, kept aside until the commit.
pub struct MemoryTx {
    inner: Arc<Inner>,
    ws: WorkspaceRef,
    log: Vec<Envelope>,
    progress: IndexMap<String, RuleProgress>,
    states: HashMap<String, IndexMap<String, ScopeState>>,
    cleared: Vec<String>,
    runs: IndexMap<String, Run>,
    dead_letters: Vec<EvaluationError>,
    schedules: IndexMap<String, Timestamp>,
    rules: BTreeMap<String, StoredRule>,
    done: bool,
}

impl MemoryTx {
    fn committed<T>(&self, f: impl FnOnce(&Data) -> T) -> T {
        let data = self.inner.data.lock().unwrap_or_else(|p| p.into_inner());
        // A workspace no transaction committed on reads as empty.
        f(data.get(&self.ws).unwrap_or(&Data::default()))
    }

    fn release(&mut self) {
        if !self.done {
            self.done = true;
            let mut busy = self.inner.busy.lock().unwrap_or_else(|p| p.into_inner());
            busy.remove(&self.ws);
            self.inner.turn.notify_all();
        }
    }
}

impl Drop for MemoryTx {
    fn drop(&mut self) {
        self.release();
    }
}

impl DriverTx for MemoryTx {
    fn head(&mut self) -> Result<(i64, Option<Timestamp>)> {
        Ok(match self.log.last() {
            Some(last) => (last.seq, Some(last.ts)),
            None => self.committed(|d| (d.log.len() as i64, d.log.last().map(|e| e.ts))),
        })
    }

    fn taken_ids(&mut self, ids: &[&str]) -> Result<Vec<String>> {
        let mut taken = Vec::new();
        for id in ids {
            if self.envelope(id)?.is_some() {
                taken.push((*id).to_owned());
            }
        }
        Ok(taken)
    }

    fn insert_envelopes(&mut self, envelopes: &[Envelope]) -> Result<()> {
        self.log.extend(envelopes.iter().cloned());
        Ok(())
    }

    fn envelope(&mut self, event_id: &str) -> Result<Option<Envelope>> {
        if let Some(e) = self.log.iter().find(|e| e.id == event_id) {
            return Ok(Some(e.clone()));
        }
        Ok(self.committed(|d| d.ids.get(event_id).map(|&i| d.log[i].clone())))
    }

    fn read(&mut self, after_seq: i64, limit: usize) -> Result<Vec<Envelope>> {
        let mut out: Vec<Envelope> = self.committed(|d| {
            d.log
                .iter()
                .skip(after_seq as usize)
                .take(limit)
                .cloned()
                .collect()
        });
        let rest = limit - out.len();
        out.extend(self.log.iter().filter(|e| e.seq > after_seq).take(rest).cloned());
        Ok(out)
    }

    fn progress(&mut self, rule: &str) -> Result<Option<RuleProgress>> {
        if let Some(p) = self.progress.get(rule) {
            return Ok(Some(p.clone()));
        }
        Ok(self.committed(|d| d.progress.get(rule).cloned()))
    }

    fn save_progress(&mut self, rule: &str, progress: &RuleProgress) -> Result<()> {
        self.progress.insert(rule.to_owned(), progress.clone());
        Ok(())
    }

    fn states(&mut self, rule: &str, keys: &[&str]) -> Result<Vec<(String, ScopeState)>> {
        let cleared = self.cleared.iter().any(|r| r == rule);
        let pending = self.states.get(rule);
        let mut out = Vec::new();
        for &key in keys {
            let found = pending.and_then(|p| p.get(key)).cloned().or_else(|| {
                if cleared {
                    None
                } else {
                    self.committed(|d| d.states.get(rule).and_then(|s| s.get(key)).cloned())
                }
            });
            if let Some(state) = found {
                out.push((key.to_owned(), state));
            }
        }
        Ok(out)
    }

    fn save_states(&mut self, rule: &str, states: &[(&str, &ScopeState)]) -> Result<()> {
        let pending = self.states.entry(rule.to_owned()).or_default();
        for &(key, state) in states {
            pending.insert(key.to_owned(), state.clone());
        }
        Ok(())
    }

    fn clear_states(&mut self, rule: &str) -> Result<()> {
        if !self.cleared.iter().any(|r| r == rule) {
            self.cleared.push(rule.to_owned());
        }
        self.states.remove(rule);
        Ok(())
    }

    fn run(&mut self, run_id: &str) -> Result<Option<Run>> {
        if let Some(r) = self.runs.get(run_id) {
            return Ok(Some(r.clone()));
        }
        Ok(self.committed(|d| d.runs.get(run_id).cloned()))
    }

    fn save_runs(&mut self, runs: &[&Run]) -> Result<()> {
        for &run in runs {
            self.runs.insert(run.id().to_owned(), run.clone());
        }
        Ok(())
    }

    fn scope_runs(&mut self, rule: &str, scope_key: &str) -> Result<Vec<Run>> {
        let mut merged: IndexMap<String, Run> = self.committed(|d| d.runs.clone());
        for (id, run) in &self.runs {
            merged.insert(id.clone(), run.clone());
        }
        let mut found: Vec<Run> = merged
            .into_values()
            .filter(|r| {
                r.rule() == rule
                    && r.scope_key() == scope_key
                    && r.status() != super::model::RunStatus::Succeeded
            })
            .collect();
        // Stable: runs fired at the same seq keep their creation order.
        found.sort_by_key(|r| r.fired_seq());
        Ok(found)
    }

    fn dead_letter(&mut self, errors: &[EvaluationError]) -> Result<()> {
        self.dead_letters.extend(errors.iter().cloned());
        Ok(())
    }

    fn schedule(&mut self, name: &str) -> Result<Option<Timestamp>> {
        if let Some(at) = self.schedules.get(name) {
            return Ok(Some(*at));
        }
        Ok(self.committed(|d| d.schedules.get(name).copied()))
    }

    fn save_schedule(&mut self, name: &str, at: Timestamp) -> Result<()> {
        self.schedules.insert(name.to_owned(), at);
        Ok(())
    }

    fn stored_rule(&mut self, name: &str) -> Result<Option<StoredRule>> {
        if let Some(r) = self.rules.get(name) {
            return Ok(Some(r.clone()));
        }
        Ok(self.committed(|d| d.rules.get(name).cloned()))
    }

    fn stored_rules(&mut self) -> Result<Vec<StoredRule>> {
        let mut all = self.committed(|d| d.rules.clone());
        for (name, rule) in &self.rules {
            all.insert(name.clone(), rule.clone());
        }
        Ok(active(all.into_values()))
    }

    fn save_stored_rule(&mut self, stored: &StoredRule) -> Result<()> {
        self.rules.insert(stored.name().to_owned(), stored.clone());
        Ok(())
    }

    fn commit(mut self) -> Result<()> {
        {
            let mut all = self.inner.data.lock().unwrap_or_else(|p| p.into_inner());
            let data = all.entry(self.ws.clone()).or_default();
            data.row = true;
            for e in std::mem::take(&mut self.log) {
                data.ids.insert(e.id.clone(), data.log.len());
                data.log.push(e);
            }
            for (rule, p) in std::mem::take(&mut self.progress) {
                data.progress.insert(rule, p);
            }
            for rule in std::mem::take(&mut self.cleared) {
                data.states.remove(&rule);
            }
            for (rule, states) in std::mem::take(&mut self.states) {
                let into = data.states.entry(rule).or_default();
                for (k, s) in states {
                    into.insert(k, s);
                }
            }
            for (id, run) in std::mem::take(&mut self.runs) {
                data.runs.insert(id, run);
            }
            data.dead_letters.append(&mut self.dead_letters);
            for (name, at) in std::mem::take(&mut self.schedules) {
                data.schedules.insert(name, at);
            }
            for (name, rule) in std::mem::take(&mut self.rules) {
                data.rules.insert(name, rule);
            }
        }
        self.release();
        self.inner.appended.notify_all();
        Ok(())
    }
}

fn active(rules: impl Iterator<Item = StoredRule>) -> Vec<StoredRule> {
    let mut out: Vec<StoredRule> = rules.filter(|r| r.status == StoredRuleStatus::Active).collect();
    out.sort_by(|a, b| a.name().cmp(b.name()));
    out
}

impl WorkspaceDriver for MemoryWorkspaceDriver {
    type Tx = MemoryTx;

    fn capabilities(&self) -> WorkspaceCapabilities {
        WorkspaceCapabilities::new(false, false)
    }

    fn begin(&self, workspace: &WorkspaceRef) -> Result<MemoryTx> {
        {
            let mut busy = self.inner.busy.lock().unwrap_or_else(|p| p.into_inner());
            while busy.contains(workspace) {
                busy = self.inner.turn.wait(busy).unwrap_or_else(|p| p.into_inner());
            }
            busy.insert(workspace.clone());
        }
        Ok(MemoryTx {
            inner: self.inner.clone(),
            ws: workspace.clone(),
            log: Vec::new(),
            progress: IndexMap::new(),
            states: HashMap::new(),
            cleared: Vec::new(),
            runs: IndexMap::new(),
            dead_letters: Vec::new(),
            schedules: IndexMap::new(),
            rules: BTreeMap::new(),
            done: false,
        })
    }

    fn head_seq(&self, workspace: &WorkspaceRef) -> Result<i64> {
        self.with(workspace, |d| d.map_or(0, |d| d.log.len() as i64))
    }

    fn read(&self, workspace: &WorkspaceRef, query: &LogQuery) -> Result<Vec<Envelope>> {
        self.with(workspace, |d| {
            let Some(d) = d else { return Vec::new() };
            let start = (query.after_seq.max(0) as usize).min(d.log.len());
            let end = match query.before_seq {
                Some(b) => ((b - 1).max(0) as usize).min(d.log.len()).max(start),
                None => d.log.len(),
            };
            let found: Vec<&Envelope> = d.log[start..end]
                .iter()
                .filter(|e| {
                    query
                        .types
                        .as_ref()
                        .is_none_or(|t| t.iter().any(|t| t == e.event_type()))
                })
                .collect();
            let found: Vec<&Envelope> = match (query.limit, query.last) {
                (_, Some(last)) => found[found.len().saturating_sub(last)..].to_vec(),
                (Some(limit), None) => found.into_iter().take(limit).collect(),
                (None, None) => found,
            };
            found.into_iter().cloned().collect()
        })
    }

    fn rule_history(&self, workspace: &WorkspaceRef, name: &str) -> Result<Vec<Envelope>> {
        self.with(workspace, |d| {
            d.map(|d| {
                d.log
                    .iter()
                    .filter(|e| e.stored_rule() == Some(name))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
        })
    }

    fn envelope(&self, workspace: &WorkspaceRef, event_id: &str) -> Result<Option<Envelope>> {
        self.with(workspace, |d| {
            d.and_then(|d| d.ids.get(event_id).map(|&i| d.log[i].clone()))
        })
    }

    fn run(&self, workspace: &WorkspaceRef, run_id: &str) -> Result<Option<Run>> {
        self.with(workspace, |d| d.and_then(|d| d.runs.get(run_id).cloned()))
    }

    fn runs(&self, workspace: &WorkspaceRef, query: &RunQuery) -> Result<Vec<Run>> {
        self.with(workspace, |d| {
            let Some(d) = d else { return Vec::new() };
            d.runs
                .values()
                .rev()
                .filter(|r| {
                    query.rule.as_deref().is_none_or(|x| r.rule() == x)
                        && query.status.is_none_or(|s| r.status() == s)
                        && query.scope_key.as_deref().is_none_or(|k| r.scope_key() == k)
                })
                .take(query.limit.unwrap_or(usize::MAX))
                .cloned()
                .collect()
        })
    }

    fn run_rows(
        &self,
        workspace: &WorkspaceRef,
        _filter: &Filter,
        before: Option<i64>,
        scan: usize,
        with_event: bool,
    ) -> Result<Vec<RunRow>> {
        // A run's position is its place in the map (from 1); an update keeps it.
        self.with(workspace, |d| {
            let Some(d) = d else { return Vec::new() };
            let end = before.map_or(d.runs.len(), |b| (b.max(1) as usize - 1).min(d.runs.len()));
            (0..end)
                .rev()
                .take(scan)
                .filter_map(|i| {
                    let (_, run) = d.runs.get_index(i)?;
                    let fired = with_event
                        .then(|| {
                            usize::try_from(run.fired_seq() - 1)
                                .ok()
                                .and_then(|s| d.log.get(s))
                        })
                        .flatten()
                        .cloned();
                    Some(RunRow {
                        position: i as i64 + 1,
                        candidate: Some((run.clone(), fired)),
                    })
                })
                .collect()
        })
    }

    fn dead_letters(&self, workspace: &WorkspaceRef, rule: Option<&str>) -> Result<Vec<EvaluationError>> {
        self.with(workspace, |d| {
            d.map(|d| {
                d.dead_letters
                    .iter()
                    .filter(|l| rule.is_none_or(|r| l.rule() == r))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
        })
    }

    fn progress(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, RuleProgress)>> {
        self.with(workspace, |d| {
            d.map(|d| d.progress.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default()
        })
    }

    fn schedules(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, Timestamp)>> {
        self.with(workspace, |d| {
            d.map(|d| d.schedules.iter().map(|(k, v)| (k.clone(), v.to_utc())).collect())
                .unwrap_or_default()
        })
    }

    fn stored_rules(&self, workspace: &WorkspaceRef) -> Result<Vec<StoredRule>> {
        self.with(workspace, |d| {
            d.map(|d| active(d.rules.values().cloned())).unwrap_or_default()
        })
    }

    fn workspaces(&self) -> Result<Vec<WorkspaceRef>> {
        Ok(self
            .data()
            .iter()
            .filter(|(_, d)| !d.log.is_empty())
            .map(|(ws, _)| ws.clone())
            .collect())
    }

    fn workspace_info(&self, workspace: &WorkspaceRef) -> Result<Option<WorkspaceInfo>> {
        self.with(workspace, |d| {
            d.filter(|d| d.row).map(|d| WorkspaceInfo {
                workspace: workspace.clone(),
                head_seq: d.log.len() as i64,
                head_ts: d.log.last().map(|e| e.ts.to_utc()),
            })
        })
    }

    fn due_runs(&self, now: Timestamp, limit: usize, policy: &RunPolicy) -> Result<Vec<(WorkspaceRef, Run)>> {
        let all = self.data();
        let candidates = all.iter().flat_map(|(ws, d)| {
            d.runs
                .values()
                .enumerate()
                .map(move |(position, run)| due::Candidate {
                    workspace: ws,
                    position: position as i64,
                    run,
                    lease_expires_at: d
                        .leases
                        .get(&super::model::run_lease(run.id()))
                        .map(|l| l.expires_at),
                })
        });
        Ok(due::due_runs(candidates, now, limit, policy))
    }

    fn acquire_lease(
        &self,
        workspace: &WorkspaceRef,
        key: &str,
        holder: &str,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> Result<bool> {
        let mut all = self.data();
        let leases = &mut all.entry(workspace.clone()).or_default().leases;
        if let Some(current) = leases.get(key) {
            if current.holder != holder && current.expires_at > now {
                return Ok(false);
            }
        }
        leases.insert(
            key.to_owned(),
            Lease {
                key: key.to_owned(),
                holder: holder.to_owned(),
                expires_at,
            },
        );
        Ok(true)
    }

    fn release_lease(&self, workspace: &WorkspaceRef, key: &str, holder: &str) -> Result<()> {
        let mut all = self.data();
        if let Some(d) = all.get_mut(workspace) {
            if d.leases.get(key).is_some_and(|l| l.holder == holder) {
                d.leases.remove(key);
            }
        }
        Ok(())
    }

    fn leases(&self, workspace: &WorkspaceRef) -> Result<Vec<Lease>> {
        self.with(workspace, |d| {
            d.map(|d| d.leases.values().cloned().collect())
                .unwrap_or_default()
        })
    }

    fn leases_page(
        &self,
        workspace: &WorkspaceRef,
        after_key: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Lease>> {
        use std::ops::Bound;
        let from = after_key.map_or(Bound::Unbounded, Bound::Excluded);
        self.with(workspace, |d| {
            d.map(|d| {
                d.leases
                    .range::<str, _>((from, Bound::Unbounded))
                    .take(limit)
                    .map(|(_, l)| l.clone())
                    .collect()
            })
            .unwrap_or_default()
        })
    }

    fn cursor(&self, workspace: &WorkspaceRef, name: &str) -> Result<i64> {
        self.with(workspace, |d| {
            d.and_then(|d| d.cursors.get(name).copied()).unwrap_or(0)
        })
    }

    fn save_cursor(&self, workspace: &WorkspaceRef, name: &str, seq: i64) -> Result<()> {
        let mut all = self.data();
        let cursors = &mut all.entry(workspace.clone()).or_default().cursors;
        let saved = cursors.entry(name.to_owned()).or_insert(seq);
        *saved = (*saved).max(seq);
        Ok(())
    }

    fn cursors(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, i64)>> {
        self.with(workspace, |d| {
            d.map(|d| d.cursors.iter().map(|(k, v)| (k.clone(), *v)).collect())
                .unwrap_or_default()
        })
    }

    fn wait_for_append(&self, workspace: &WorkspaceRef, after_seq: i64, timeout: Duration) -> Result<bool> {
        let grown = |all: &BTreeMap<WorkspaceRef, Data>| {
            all.get(workspace).is_some_and(|d| d.log.len() as i64 > after_seq)
        };
        let all = self.data();
        if grown(&all) {
            return Ok(true);
        }
        if cfg!(all(target_family = "wasm", target_os = "unknown")) {
            // No threads: nothing can commit while this waits.
            return Ok(false);
        }
        let (all, result) = self
            .inner
            .appended
            .wait_timeout_while(all, timeout, |all| !grown(all))
            .unwrap_or_else(|p| p.into_inner());
        drop(all);
        Ok(!result.timed_out())
    }
}
