//! The raw driver a workspace backend implements: storage code only.
//!
//! A backend of the workspace contract implements [`WorkspaceDriver`] and its
//! [`DriverTx`]; users get [`WorkspaceFront`](super::WorkspaceFront) over it, which
//! implements the public [`WorkspaceStorage`](super::WorkspaceStorage) and
//! [`WorkspaceTx`](super::WorkspaceTx) traits. The front does, once for every backend:
//! every input check (ids and keys, batch sizes, query windows, lease and cursor arguments,
//! stored rules), the refusal of duplicate event ids, envelope numbering (`seq` and `ts`),
//! the reading of the clock, the lease's expiry instant, the version rule of stored rules,
//! and the folding of repeated keys (a run or scope state given twice). A driver receives
//! only values that passed those checks, and `now` as a parameter where time matters; it
//! never reads a clock.
//!
//! What stays in the driver is what only storage can do atomically: the compare-and-set of
//! a lease (taken if free, held by the same holder or expired by `now`), the forward-only
//! save of a cursor, the serialization of transactions per workspace, and the visibility
//! rules of its reads (a transaction sees its own writes; others see them at commit).
//!
//! The behaviour suite (`execstore::conformance::workspace`, feature `conformance`) runs on
//! the front over a driver, so a new backend proves itself the same way as the others.

use std::time::Duration;

use super::model::{
    Envelope, EvaluationError, Lease, RuleProgress, Run, ScopeState, StoredRule, WorkspaceInfo, WorkspaceRef,
    WorkspaceSummary,
};
use super::policy::RunPolicy;
use super::search::RunRow;
use super::storage::{LogQuery, RunQuery, WorkspaceCapabilities};
use super::time::Timestamp;
use crate::error::Result;
use crate::kit::filter::Filter;

/// A workspace backend's storage code, behind [`WorkspaceFront`](super::WorkspaceFront).
///
/// Every `workspace` passed has been checked, every key is a valid id, every query passed
/// its checks. Each method answers as its namesake of
/// [`WorkspaceStorage`](super::WorkspaceStorage) does, with the differences said here.
pub trait WorkspaceDriver: Send + Sync + 'static {
    /// The driver's transaction.
    type Tx: DriverTx + 'static;

    /// What this storage can do.
    fn capabilities(&self) -> WorkspaceCapabilities;
    /// Begins a transaction on `workspace`, waiting for any other on it to end, and creates
    /// the workspace's row if it is new.
    fn begin(&self, workspace: &WorkspaceRef) -> Result<Self::Tx>;
    /// The log's latest seq, or 0.
    fn head_seq(&self, workspace: &WorkspaceRef) -> Result<i64>;
    /// A window of the log. `query` passed [`LogQuery::check`]; its `types`, when given, are
    /// sorted, without repeats and not empty.
    fn read(&self, workspace: &WorkspaceRef, query: &LogQuery) -> Result<Vec<Envelope>>;
    /// A stored rule's `rule_installed` / `rule_archived` facts, oldest first.
    fn rule_history(&self, workspace: &WorkspaceRef, name: &str) -> Result<Vec<Envelope>>;
    /// The envelope of an event id, or `None`.
    fn envelope(&self, workspace: &WorkspaceRef, event_id: &str) -> Result<Option<Envelope>>;
    /// A run, or `None`.
    fn run(&self, workspace: &WorkspaceRef, run_id: &str) -> Result<Option<Run>>;
    /// Runs, newest first, filtered (`query` passed [`RunQuery::check`]).
    fn runs(&self, workspace: &WorkspaceRef, query: &RunQuery) -> Result<Vec<Run>>;
    /// Dead letters, oldest first, of one rule or all.
    fn dead_letters(&self, workspace: &WorkspaceRef, rule: Option<&str>) -> Result<Vec<EvaluationError>>;
    /// Up to `limit` (1 to [`MAX_READ`](super::MAX_READ)) dead letters (of `rule`, checked, or
    /// all) recorded after position `after` (not negative), oldest first, with their
    /// positions. The default numbers [`WorkspaceDriver::dead_letters`] from 1.
    fn dead_letters_page(
        &self,
        workspace: &WorkspaceRef,
        rule: Option<&str>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, EvaluationError)>> {
        Ok(super::storage::number_dead_letters(
            self.dead_letters(workspace, None)?,
            rule,
            after,
            limit,
        ))
    }
    /// Every rule's progress, in the order the rules first saved one.
    fn progress(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, RuleProgress)>>;
    /// Each schedule's last tick (UTC), in the order the schedules first ticked.
    fn schedules(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, Timestamp)>>;
    /// The active stored rules, by name in code-point order.
    fn stored_rules(&self, workspace: &WorkspaceRef) -> Result<Vec<StoredRule>>;
    /// Every workspace with a log, by tenant then workspace.
    fn workspaces(&self) -> Result<Vec<WorkspaceRef>>;
    /// A workspace's head, or `None` until a transaction on it has committed.
    fn workspace_info(&self, workspace: &WorkspaceRef) -> Result<Option<WorkspaceInfo>>;
    /// [`WorkspaceStorage::workspace_summaries`](super::WorkspaceStorage::workspace_summaries)
    /// in the driver's own queries, or `None` (the default) for the front to make the calls.
    fn workspace_summaries(&self) -> Result<Option<Vec<WorkspaceSummary>>> {
        Ok(None)
    }
    /// [`WorkspaceStorage::all_stored_rules`](super::WorkspaceStorage::all_stored_rules) in
    /// the driver's own queries, or `None` (the default) for the front to make the calls.
    fn all_stored_rules(&self) -> Result<Option<Vec<(WorkspaceRef, StoredRule)>>> {
        Ok(None)
    }
    /// The runs to attempt at `now`; `limit` is between 1 and
    /// [`MAX_READ`](super::MAX_READ).
    fn due_runs(&self, now: Timestamp, limit: usize, policy: &RunPolicy) -> Result<Vec<(WorkspaceRef, Run)>>;
    /// Atomically: gives the lease `key` to `holder` until `expires_at` if nobody has it,
    /// `holder` has it, or its holder's expiry is not after `now`; `false` otherwise.
    fn acquire_lease(
        &self,
        workspace: &WorkspaceRef,
        key: &str,
        holder: &str,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> Result<bool>;
    /// Deletes the lease `key` if `holder` has it.
    fn release_lease(&self, workspace: &WorkspaceRef, key: &str, holder: &str) -> Result<()>;
    /// Every lease row of a workspace (expired ones included), by key.
    fn leases(&self, workspace: &WorkspaceRef) -> Result<Vec<Lease>>;
    /// The lease rows of `keys`, by key. The default filters [`WorkspaceDriver::leases`].
    fn leases_of(&self, workspace: &WorkspaceRef, keys: &[String]) -> Result<Vec<Lease>> {
        let keys: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
        Ok(self
            .leases(workspace)?
            .into_iter()
            .filter(|l| keys.contains(l.key.as_str()))
            .collect())
    }
    /// Up to `limit` (1 to [`MAX_READ`](super::MAX_READ)) lease rows whose key is after
    /// `after_key` (a checked key; `None`: from the first), by key. The default filters
    /// [`WorkspaceDriver::leases`].
    fn leases_page(
        &self,
        workspace: &WorkspaceRef,
        after_key: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Lease>> {
        Ok(self
            .leases(workspace)?
            .into_iter()
            .filter(|l| after_key.is_none_or(|after| l.key.as_str() > after))
            .take(limit)
            .collect())
    }
    /// A consumer's saved seq, or 0.
    fn cursor(&self, workspace: &WorkspaceRef, name: &str) -> Result<i64>;
    /// Atomically: saves `seq` (not negative) unless the cursor is already further.
    fn save_cursor(&self, workspace: &WorkspaceRef, name: &str, seq: i64) -> Result<()>;
    /// Every cursor of a workspace, by name.
    fn cursors(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, i64)>>;
    /// Blocks until the log may have grown past `after_seq`, or `timeout` passes.
    fn wait_for_append(&self, workspace: &WorkspaceRef, after_seq: i64, timeout: Duration) -> Result<bool>;
    /// Up to `limit` envelopes with `after < seq <= upto`, oldest first (newest first if
    /// `newest_first`), that may match `filter` (a checked filter over
    /// [`LOG_ROOTS`](super::LOG_ROOTS)): every match among them, and perhaps others, which
    /// the front rules out with the reference matcher. The default hands over every envelope
    /// of the window; a SQL driver narrows them in its query.
    fn log_candidates(
        &self,
        workspace: &WorkspaceRef,
        filter: &Filter,
        after: i64,
        upto: i64,
        newest_first: bool,
        limit: usize,
    ) -> Result<Vec<Envelope>> {
        let _ = filter;
        let query = LogQuery {
            after_seq: after,
            before_seq: Some(upto.saturating_add(1)),
            types: None,
            limit: (!newest_first).then_some(limit),
            last: newest_first.then_some(limit),
        };
        let mut found = self.read(workspace, &query)?;
        if newest_first {
            found.reverse();
        }
        Ok(found)
    }
    /// The window of at most `scan` runs, newest first, whose positions are below `before`
    /// (all, if `None`): each row's position, and the run (with the envelope at its
    /// `fired_seq` when `with_event`) unless the driver ruled it out for `filter` (a checked
    /// filter over [`RUN_ROOTS`](super::RUN_ROOTS)). A driver may hand over every run.
    fn run_rows(
        &self,
        workspace: &WorkspaceRef,
        filter: &Filter,
        before: Option<i64>,
        scan: usize,
        with_event: bool,
    ) -> Result<Vec<RunRow>>;
}

/// One open transaction of a [`WorkspaceDriver`]: every read sees its own writes; a call that
/// returns an error leaves nothing of itself (a savepoint, or nothing written yet). Dropped
/// without [`DriverTx::commit`], it rolls back.
pub trait DriverTx: Send {
    /// The log's head as this transaction sees it: its seq (0 for an empty log) and the
    /// `ts` of that envelope.
    fn head(&mut self) -> Result<(i64, Option<Timestamp>)>;
    /// Which of `ids` (distinct) are already in the log, committed or this transaction's.
    fn taken_ids(&mut self, ids: &[&str]) -> Result<Vec<String>>;
    /// Inserts envelopes numbered by the front after [`DriverTx::head`] (their ids are new),
    /// moving the head to the last: all of them or, on an error, none.
    fn insert_envelopes(&mut self, envelopes: &[Envelope]) -> Result<()>;
    /// The envelope of an event id, or `None`.
    fn envelope(&mut self, event_id: &str) -> Result<Option<Envelope>>;
    /// Up to `limit` envelopes after `after_seq` (not negative), in order.
    fn read(&mut self, after_seq: i64, limit: usize) -> Result<Vec<Envelope>>;
    /// A rule's progress, or `None`.
    fn progress(&mut self, rule: &str) -> Result<Option<RuleProgress>>;
    /// Saves a rule's progress.
    fn save_progress(&mut self, rule: &str, progress: &RuleProgress) -> Result<()>;
    /// The stored states among `keys` (distinct), in any order.
    fn states(&mut self, rule: &str, keys: &[&str]) -> Result<Vec<(String, ScopeState)>>;
    /// Saves states of scopes of a rule (distinct keys).
    fn save_states(&mut self, rule: &str, states: &[(&str, &ScopeState)]) -> Result<()>;
    /// Deletes every scope state of a rule, committed and pending.
    fn clear_states(&mut self, rule: &str) -> Result<()>;
    /// A run, or `None`.
    fn run(&mut self, run_id: &str) -> Result<Option<Run>>;
    /// Inserts or updates runs (distinct ids): a new run takes the next creation position.
    fn save_runs(&mut self, runs: &[&Run]) -> Result<()>;
    /// Every run of a rule's scope that has not succeeded, in firing order (fired seq, then
    /// creation).
    fn scope_runs(&mut self, rule: &str, scope_key: &str) -> Result<Vec<Run>>;
    /// Records dead letters, each at the next creation position.
    fn dead_letter(&mut self, errors: &[EvaluationError]) -> Result<()>;
    /// The time of a schedule's last tick, or `None`.
    fn schedule(&mut self, name: &str) -> Result<Option<Timestamp>>;
    /// Saves the time of a schedule's last tick.
    fn save_schedule(&mut self, name: &str, at: Timestamp) -> Result<()>;
    /// A stored rule, active or archived, or `None`.
    fn stored_rule(&mut self, name: &str) -> Result<Option<StoredRule>>;
    /// The active stored rules, by name in code-point order.
    fn stored_rules(&mut self) -> Result<Vec<StoredRule>>;
    /// Saves a stored rule whose version the front found to be the next one.
    fn save_stored_rule(&mut self, stored: &StoredRule) -> Result<()>;
    /// Makes every write durable and visible at once.
    fn commit(self) -> Result<()>;
}
