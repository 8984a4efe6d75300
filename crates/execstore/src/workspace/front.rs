//! [`WorkspaceFront`]: the checks, numbering, clock and lease expiry of the workspace
//! contract, once, in front of a backend's [`WorkspaceDriver`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use super::driver::{DriverTx, WorkspaceDriver};
use super::model::{
    Entry, Envelope, EvaluationError, Lease, RuleProgress, Run, ScopeState, StoredRule, WorkspaceInfo,
    WorkspaceRef, WorkspaceSummary,
};
use super::policy::RunPolicy;
use super::search::{reads_event, search_log_with, search_runs_with, LogPage, LogSearch, RunPage, RunSearch};
use super::storage::{
    check_cursor, check_dead_letters_page, check_entries, check_lease, check_leases_page, LogQuery, RunQuery,
    WorkspaceCapabilities, WorkspaceStorage, WorkspaceTx,
};
use super::time::{Clock, Timestamp};
use super::{check_batch, check_due_limit, check_key, wrong_version};
use crate::error::{Result, StoreError};

/// The workspace contract over a driver: implements [`WorkspaceStorage`] for every backend,
/// making every check, reading the clock and numbering envelopes itself, and handing the
/// driver checked values (see [`WorkspaceDriver`]).
///
/// Backends give users a thin type over it ([`MemoryWorkspaceStorage`](super::MemoryWorkspaceStorage),
/// `SqliteWorkspaceStorage`, `PgWorkspaceStorage`) through [`AsWorkspaceFront`].
pub struct WorkspaceFront<D> {
    driver: D,
    clock: Arc<dyn Clock>,
}

impl<D: Clone> Clone for WorkspaceFront<D> {
    fn clone(&self) -> Self {
        WorkspaceFront {
            driver: self.driver.clone(),
            clock: self.clock.clone(),
        }
    }
}

impl<D: std::fmt::Debug> std::fmt::Debug for WorkspaceFront<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceFront")
            .field("driver", &self.driver)
            .finish_non_exhaustive()
    }
}

/// A backend's public storage type: a thin wrapper of a [`WorkspaceFront`], which gives it
/// [`WorkspaceStorage`].
pub trait AsWorkspaceFront: Send + Sync {
    /// The backend's driver.
    type Driver: WorkspaceDriver;
    /// The front it wraps.
    fn front(&self) -> &WorkspaceFront<Self::Driver>;
}

impl<D: WorkspaceDriver> AsWorkspaceFront for WorkspaceFront<D> {
    type Driver = D;
    fn front(&self) -> &WorkspaceFront<D> {
        self
    }
}

impl<D: WorkspaceDriver> WorkspaceFront<D> {
    /// The front over `driver`, reading `clock` for envelope timestamps and lease expiry.
    pub fn new(driver: D, clock: Arc<dyn Clock>) -> Self {
        WorkspaceFront { driver, clock }
    }

    /// The driver behind it (for what a backend offers beyond the contract).
    pub fn driver(&self) -> &D {
        &self.driver
    }

    /// The clock it reads.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// [`WorkspaceStorage::begin`], answering the front's own transaction type (whose
    /// [`FrontTx::append_at`] takes the time per call).
    pub fn begin_tx(&self, workspace: &WorkspaceRef) -> Result<FrontTx<D::Tx>> {
        workspace.check()?;
        Ok(FrontTx {
            tx: self.driver.begin(workspace)?,
            workspace: workspace.clone(),
            clock: self.clock.clone(),
        })
    }

    /// [`WorkspaceStorage::acquire_lease`] at `now` rather than the clock's reading.
    pub fn acquire_lease_at(
        &self,
        workspace: &WorkspaceRef,
        key: &str,
        holder: &str,
        ttl: Duration,
        now: Timestamp,
    ) -> Result<bool> {
        workspace.check()?;
        check_lease(key, holder, Some(ttl))?;
        let micros =
            i64::try_from(ttl.as_micros()).map_err(|_| StoreError::invalid("ttl", "out of range"))?;
        let expires_at = now.plus_micros(micros)?.to_utc();
        self.driver.acquire_lease(workspace, key, holder, now, expires_at)
    }
}

/// A workspace storage that also takes the caller's instants: an engine that reads its own
/// clock (reflexr's, from Python) hands its readings down with each call instead of the
/// storage calling back up for the time. Every [`AsWorkspaceFront`] is one, so every backend
/// built on the front is, behind a `dyn` too.
pub trait TimedWorkspace: WorkspaceStorage {
    /// [`WorkspaceStorage::begin`], answering a transaction whose appends take instants.
    fn begin_timed(&self, workspace: &WorkspaceRef) -> Result<Box<dyn TimedWorkspaceTx>>;
    /// [`WorkspaceStorage::acquire_lease`] at `now`, or at the clock's reading if `None`.
    fn acquire_lease_timed(
        &self,
        workspace: &WorkspaceRef,
        key: &str,
        holder: &str,
        ttl: Duration,
        now: Option<Timestamp>,
    ) -> Result<bool>;
}

/// A transaction of a [`TimedWorkspace`].
pub trait TimedWorkspaceTx: WorkspaceTx {
    /// [`WorkspaceTx::append`], the envelopes stamped with `nows` in order, then with the
    /// storage clock's readings once they run out.
    fn append_timed(&mut self, entries: &[Entry], nows: Vec<Timestamp>) -> Result<Vec<Envelope>>;
}

impl<S: AsWorkspaceFront + 'static> TimedWorkspace for S {
    fn begin_timed(&self, workspace: &WorkspaceRef) -> Result<Box<dyn TimedWorkspaceTx>> {
        Ok(Box::new(self.front().begin_tx(workspace)?))
    }

    fn acquire_lease_timed(
        &self,
        workspace: &WorkspaceRef,
        key: &str,
        holder: &str,
        ttl: Duration,
        now: Option<Timestamp>,
    ) -> Result<bool> {
        let front = self.front();
        let now = now.unwrap_or_else(|| front.clock().now());
        front.acquire_lease_at(workspace, key, holder, ttl, now)
    }
}

impl<T: DriverTx + 'static> TimedWorkspaceTx for FrontTx<T> {
    fn append_timed(&mut self, entries: &[Entry], nows: Vec<Timestamp>) -> Result<Vec<Envelope>> {
        let clock = self.clock.clone();
        let mut nows = nows.into_iter();
        self.append_at(entries, &mut || nows.next().unwrap_or_else(|| clock.now()))
    }
}

/// Checks a workspace, then asks the driver.
macro_rules! checked {
    ($ws:ident $(, $check:expr)*; $call:expr) => {{
        $ws.check()?;
        $($check?;)*
        $call
    }};
}

impl<S: AsWorkspaceFront> WorkspaceStorage for S {
    fn capabilities(&self) -> WorkspaceCapabilities {
        self.front().driver.capabilities()
    }

    fn begin(&self, workspace: &WorkspaceRef) -> Result<Box<dyn WorkspaceTx>> {
        Ok(Box::new(self.front().begin_tx(workspace)?))
    }

    fn head_seq(&self, workspace: &WorkspaceRef) -> Result<i64> {
        checked!(workspace; self.front().driver.head_seq(workspace))
    }

    fn read(&self, workspace: &WorkspaceRef, query: &LogQuery) -> Result<Vec<Envelope>> {
        checked!(workspace; match query.checked()? {
            Some(query) => self.front().driver.read(workspace, &query),
            None => Ok(Vec::new()),
        })
    }

    fn rule_history(&self, workspace: &WorkspaceRef, name: &str) -> Result<Vec<Envelope>> {
        checked!(workspace, check_key("name", name); self.front().driver.rule_history(workspace, name))
    }

    fn envelope(&self, workspace: &WorkspaceRef, event_id: &str) -> Result<Option<Envelope>> {
        checked!(workspace, check_key("event_id", event_id);
            self.front().driver.envelope(workspace, event_id))
    }

    fn run(&self, workspace: &WorkspaceRef, run_id: &str) -> Result<Option<Run>> {
        checked!(workspace, check_key("run_id", run_id); self.front().driver.run(workspace, run_id))
    }

    fn runs(&self, workspace: &WorkspaceRef, query: &RunQuery) -> Result<Vec<Run>> {
        checked!(workspace, query.check(); self.front().driver.runs(workspace, query))
    }

    fn dead_letters(&self, workspace: &WorkspaceRef, rule: Option<&str>) -> Result<Vec<EvaluationError>> {
        checked!(workspace, rule.map_or(Ok(()), |r| check_key("rule", r));
            self.front().driver.dead_letters(workspace, rule))
    }

    fn dead_letters_page(
        &self,
        workspace: &WorkspaceRef,
        rule: Option<&str>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, EvaluationError)>> {
        checked!(workspace, check_dead_letters_page(rule, after, limit);
            self.front().driver.dead_letters_page(workspace, rule, after, limit))
    }

    fn progress(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, RuleProgress)>> {
        checked!(workspace; self.front().driver.progress(workspace))
    }

    fn schedules(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, Timestamp)>> {
        checked!(workspace; self.front().driver.schedules(workspace))
    }

    fn stored_rules(&self, workspace: &WorkspaceRef) -> Result<Vec<StoredRule>> {
        checked!(workspace; self.front().driver.stored_rules(workspace))
    }

    fn workspaces(&self) -> Result<Vec<WorkspaceRef>> {
        self.front().driver.workspaces()
    }

    fn workspace_info(&self, workspace: &WorkspaceRef) -> Result<Option<WorkspaceInfo>> {
        checked!(workspace; self.front().driver.workspace_info(workspace))
    }

    fn workspace_summaries(&self) -> Result<Vec<WorkspaceSummary>> {
        match self.front().driver.workspace_summaries()? {
            Some(summaries) => Ok(summaries),
            None => super::storage::summaries_by_calls(self),
        }
    }

    fn all_stored_rules(&self) -> Result<Vec<(WorkspaceRef, StoredRule)>> {
        match self.front().driver.all_stored_rules()? {
            Some(rules) => Ok(rules),
            None => super::storage::rules_by_calls(self),
        }
    }

    fn due_runs(&self, now: Timestamp, limit: usize, policy: &RunPolicy) -> Result<Vec<(WorkspaceRef, Run)>> {
        check_due_limit(limit)?;
        if limit == 0 {
            return Ok(Vec::new());
        }
        self.front().driver.due_runs(now, limit, policy)
    }

    fn acquire_lease(
        &self,
        workspace: &WorkspaceRef,
        key: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool> {
        let front = self.front();
        front.acquire_lease_at(workspace, key, holder, ttl, front.clock.now())
    }

    fn release_lease(&self, workspace: &WorkspaceRef, key: &str, holder: &str) -> Result<()> {
        checked!(workspace, check_lease(key, holder, None);
            self.front().driver.release_lease(workspace, key, holder))
    }

    fn leases(&self, workspace: &WorkspaceRef) -> Result<Vec<Lease>> {
        checked!(workspace; self.front().driver.leases(workspace))
    }

    fn leases_of(&self, workspace: &WorkspaceRef, keys: &[String]) -> Result<Vec<Lease>> {
        checked!(workspace; self.front().driver.leases_of(workspace, keys))
    }

    fn leases_page(
        &self,
        workspace: &WorkspaceRef,
        after_key: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Lease>> {
        checked!(workspace, check_leases_page(after_key, limit);
            self.front().driver.leases_page(workspace, after_key, limit))
    }

    fn cursor(&self, workspace: &WorkspaceRef, name: &str) -> Result<i64> {
        checked!(workspace, check_cursor(name, None); self.front().driver.cursor(workspace, name))
    }

    fn save_cursor(&self, workspace: &WorkspaceRef, name: &str, seq: i64) -> Result<()> {
        checked!(workspace, check_cursor(name, Some(seq));
            self.front().driver.save_cursor(workspace, name, seq))
    }

    fn cursors(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, i64)>> {
        checked!(workspace; self.front().driver.cursors(workspace))
    }

    fn wait_for_append(&self, workspace: &WorkspaceRef, after_seq: i64, timeout: Duration) -> Result<bool> {
        checked!(workspace; self.front().driver.wait_for_append(workspace, after_seq, timeout))
    }

    fn search_log(&self, workspace: &WorkspaceRef, search: &LogSearch) -> Result<LogPage> {
        workspace.check()?;
        search.check()?;
        let driver = &self.front().driver;
        let head = driver.head_seq(workspace)?;
        search_log_with(search, head, &mut |after, upto, newest_first, n| {
            driver.log_candidates(workspace, &search.filter, after, upto, newest_first, n)
        })
    }

    fn search_runs(&self, workspace: &WorkspaceRef, search: &RunSearch) -> Result<RunPage> {
        workspace.check()?;
        search.check()?;
        let with_event = reads_event(&search.filter);
        let rows = self.front().driver.run_rows(
            workspace,
            &search.filter,
            search.cursor,
            search.scan,
            with_event,
        )?;
        Ok(search_runs_with(search, rows))
    }
}

/// A transaction through the front: [`WorkspaceTx`] over a driver's [`DriverTx`].
pub struct FrontTx<T> {
    tx: T,
    workspace: WorkspaceRef,
    clock: Arc<dyn Clock>,
}

impl<T: DriverTx> FrontTx<T> {
    /// [`WorkspaceTx::append`], taking each envelope's time from `now` (called once per
    /// entry, in order) rather than the clock.
    pub fn append_at(
        &mut self,
        entries: &[Entry],
        now: &mut dyn FnMut() -> Timestamp,
    ) -> Result<Vec<Envelope>> {
        check_entries(entries)?;
        let ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
        let taken: HashSet<String> = self.tx.taken_ids(&ids)?.into_iter().collect();
        if let Some(id) = ids.iter().find(|id| taken.contains(**id)) {
            return Err(StoreError::AlreadyExists {
                what: "event",
                key: (*id).to_owned(),
            });
        }
        let (head_seq, head_ts) = self.tx.head()?;
        let envelopes = number(&self.workspace, entries, head_seq, head_ts, now);
        if !envelopes.is_empty() {
            self.tx.insert_envelopes(&envelopes)?;
        }
        Ok(envelopes)
    }
}

/// The envelopes of `entries` after a log whose head is `head_seq` at `head_ts`: seq and ts
/// as reflexr assigns them, the ts the later of `now()` and the previous envelope's.
pub(crate) fn number(
    workspace: &WorkspaceRef,
    entries: &[Entry],
    head_seq: i64,
    head_ts: Option<Timestamp>,
    now: &mut dyn FnMut() -> Timestamp,
) -> Vec<Envelope> {
    let mut seq = head_seq;
    let mut last = head_ts;
    entries
        .iter()
        .map(|entry| {
            let now = now();
            // Python's max(now, last) keeps `now` on a tie.
            let ts = match last {
                Some(last) if last > now => last,
                _ => now,
            };
            seq += 1;
            last = Some(ts);
            Envelope {
                seq,
                id: entry.id.clone(),
                ts,
                workspace_id: workspace.workspace_id.clone(),
                actor: entry.actor.clone(),
                causation: entry.causation.clone(),
                correlation_id: entry.correlation_id.clone().unwrap_or_else(|| entry.id.clone()),
                traceparent: entry.traceparent.clone(),
                event: entry.event.clone(),
            }
        })
        .collect()
}

/// `items` without repeated keys: each key where it first appears, with its last value.
fn first_place_last_value<'a, V>(items: impl Iterator<Item = (&'a str, V)>) -> Vec<(&'a str, V)> {
    let mut out: Vec<(&'a str, V)> = Vec::new();
    let mut at: HashMap<&'a str, usize> = HashMap::new();
    for (key, value) in items {
        match at.get(key) {
            Some(&i) => out[i].1 = value,
            None => {
                at.insert(key, out.len());
                out.push((key, value));
            }
        }
    }
    out
}

impl<T: DriverTx> WorkspaceTx for FrontTx<T> {
    fn append(&mut self, entries: &[Entry]) -> Result<Vec<Envelope>> {
        let clock = self.clock.clone();
        self.append_at(entries, &mut || clock.now())
    }

    fn envelope(&mut self, event_id: &str) -> Result<Option<Envelope>> {
        check_key("event_id", event_id)?;
        self.tx.envelope(event_id)
    }

    fn head_seq(&mut self) -> Result<i64> {
        Ok(self.tx.head()?.0)
    }

    fn read(&mut self, after_seq: i64, limit: usize) -> Result<Vec<Envelope>> {
        if after_seq < 0 {
            return Err(StoreError::invalid(
                "after_seq",
                format!("{after_seq} is negative"),
            ));
        }
        self.tx.read(after_seq, limit)
    }

    fn progress(&mut self, rule: &str) -> Result<Option<RuleProgress>> {
        check_key("rule", rule)?;
        self.tx.progress(rule)
    }

    fn save_progress(&mut self, rule: &str, progress: &RuleProgress) -> Result<()> {
        check_key("rule", rule)?;
        self.tx.save_progress(rule, progress)
    }

    fn states(&mut self, rule: &str, keys: &[String]) -> Result<Vec<(String, ScopeState)>> {
        check_key("rule", rule)?;
        check_batch("keys", keys.len())?;
        let mut seen = HashSet::new();
        let asked: Vec<&str> = keys
            .iter()
            .map(String::as_str)
            .filter(|k| seen.insert(*k))
            .collect();
        let mut found: HashMap<String, ScopeState> = self.tx.states(rule, &asked)?.into_iter().collect();
        Ok(asked
            .into_iter()
            .filter_map(|k| found.remove(k).map(|s| (k.to_owned(), s)))
            .collect())
    }

    fn save_states(&mut self, rule: &str, states: &[(String, ScopeState)]) -> Result<()> {
        check_key("rule", rule)?;
        check_batch("states", states.len())?;
        for (key, _) in states {
            check_key("scope_key", key)?;
        }
        let latest = first_place_last_value(states.iter().map(|(k, s)| (k.as_str(), s)));
        self.tx.save_states(rule, &latest)
    }

    fn clear_states(&mut self, rule: &str) -> Result<()> {
        check_key("rule", rule)?;
        self.tx.clear_states(rule)
    }

    fn run(&mut self, run_id: &str) -> Result<Option<Run>> {
        check_key("run_id", run_id)?;
        self.tx.run(run_id)
    }

    fn save_runs(&mut self, runs: &[Run]) -> Result<()> {
        check_batch("runs", runs.len())?;
        let latest: Vec<&Run> = first_place_last_value(runs.iter().map(|r| (r.id(), r)))
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        self.tx.save_runs(&latest)
    }

    fn scope_runs(&mut self, rule: &str, scope_key: &str) -> Result<Vec<Run>> {
        check_key("rule", rule)?;
        check_key("scope_key", scope_key)?;
        self.tx.scope_runs(rule, scope_key)
    }

    fn dead_letter(&mut self, errors: &[EvaluationError]) -> Result<()> {
        check_batch("errors", errors.len())?;
        self.tx.dead_letter(errors)
    }

    fn schedule(&mut self, name: &str) -> Result<Option<Timestamp>> {
        check_key("name", name)?;
        self.tx.schedule(name)
    }

    fn save_schedule(&mut self, name: &str, at: Timestamp) -> Result<()> {
        check_key("name", name)?;
        self.tx.save_schedule(name, at)
    }

    fn stored_rule(&mut self, name: &str) -> Result<Option<StoredRule>> {
        check_key("name", name)?;
        self.tx.stored_rule(name)
    }

    fn stored_rules(&mut self) -> Result<Vec<StoredRule>> {
        self.tx.stored_rules()
    }

    fn save_stored_rule(&mut self, stored: &StoredRule) -> Result<()> {
        stored.check()?;
        let name = stored.name();
        let following = self.tx.stored_rule(name)?.map_or(1, |r| r.version + 1);
        if stored.version != following {
            return Err(wrong_version(name, following, stored.version));
        }
        self.tx.save_stored_rule(stored)
    }

    fn commit(self: Box<Self>) -> Result<()> {
        self.tx.commit()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn repeated_keys_keep_the_first_place_and_last_value() {
        let got = super::first_place_last_value([("a", 1), ("b", 2), ("a", 3)].into_iter());
        assert_eq!(got, [("a", 3), ("b", 2)]);
    }
}
