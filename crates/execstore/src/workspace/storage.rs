//! The workspace contract: [`WorkspaceStorage`] and its [`WorkspaceTx`].

use super::model::{
    Entry, Envelope, EvaluationError, Lease, RuleProgress, Run, RunStatus, ScopeState, StoredRule,
    WorkspaceInfo, WorkspaceRef, WorkspaceSummary,
};
use super::policy::RunPolicy;
use super::search::{search_log_with, search_runs_with, LogPage, LogSearch, RunPage, RunRow, RunSearch};
use super::time::Timestamp;
use crate::error::{Result, StoreError};
use crate::kit::validate::check_id;
use std::time::Duration;

/// The most envelopes or runs one read may ask for (`limit` or `last`).
pub const MAX_READ: usize = 1_000_000;

/// The most entries, runs, states or dead letters one call may write.
pub const MAX_BATCH: usize = 100_000;

/// A window of a workspace's log: `after_seq < seq < before_seq`, some types only, the first
/// `limit` or the last `last` (still oldest first).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogQuery {
    /// Only envelopes after this seq (0: from the start).
    pub after_seq: i64,
    /// Only envelopes before this seq; `None` reads to the head.
    pub before_seq: Option<i64>,
    /// Only envelopes of these event types; `None` reads every type.
    pub types: Option<Vec<String>>,
    /// At most this many: the first that match.
    pub limit: Option<usize>,
    /// At most this many: the last that match, returned oldest first.
    pub last: Option<usize>,
}

impl LogQuery {
    /// The whole log.
    pub fn new() -> Self {
        LogQuery::default()
    }
    /// Only after `seq`.
    pub fn after(mut self, seq: i64) -> Self {
        self.after_seq = seq;
        self
    }
    /// Only before `seq`.
    pub fn before(mut self, seq: i64) -> Self {
        self.before_seq = Some(seq);
        self
    }
    /// Only these event types.
    pub fn types<I: IntoIterator<Item = S>, S: Into<String>>(mut self, types: I) -> Self {
        self.types = Some(types.into_iter().map(Into::into).collect());
        self
    }
    /// The first `n`.
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = Some(n);
        self
    }
    /// The last `n`.
    pub fn last(mut self, n: usize) -> Self {
        self.last = Some(n);
        self
    }

    /// The query as a driver receives it: checked, its `types` sorted and without repeats;
    /// `None` when it asks for no type at all (nothing matches).
    pub fn checked(&self) -> Result<Option<LogQuery>> {
        self.check()?;
        let mut query = self.clone();
        if let Some(types) = &mut query.types {
            if types.is_empty() {
                return Ok(None);
            }
            types.sort_unstable();
            types.dedup();
        }
        Ok(Some(query))
    }

    /// The checks every backend makes before reading.
    pub fn check(&self) -> Result<()> {
        if self.after_seq < 0 {
            return Err(StoreError::invalid(
                "after_seq",
                format!("{} is negative", self.after_seq),
            ));
        }
        if let Some(before) = self.before_seq {
            if before < 0 {
                return Err(StoreError::invalid("before_seq", format!("{before} is negative")));
            }
        }
        if self.limit.is_some() && self.last.is_some() {
            return Err(StoreError::invalid("last", "give at most one of limit and last"));
        }
        for (field, n) in [("limit", self.limit), ("last", self.last)] {
            if let Some(n) = n {
                if n > MAX_READ {
                    return Err(StoreError::invalid(field, format!("{n} is more than {MAX_READ}")));
                }
            }
        }
        if let Some(types) = &self.types {
            for t in types {
                check_id("types", t)?;
            }
        }
        Ok(())
    }
}

/// A filter on a workspace's runs, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// Only this rule's.
    pub rule: Option<String>,
    /// Only runs in this status.
    pub status: Option<RunStatus>,
    /// Only this scope's.
    pub scope_key: Option<String>,
    /// At most this many.
    pub limit: Option<usize>,
}

impl RunQuery {
    /// The filters given, as (column of `reflexr_runs`, value) pairs, in the order `rule`,
    /// `status`, `scope_key`: what a SQL driver binds.
    pub fn filters(&self) -> Vec<(&'static str, &str)> {
        let mut out = Vec::new();
        if let Some(rule) = &self.rule {
            out.push(("rule", rule.as_str()));
        }
        if let Some(status) = self.status {
            out.push(("status", status.as_str()));
        }
        if let Some(scope_key) = &self.scope_key {
            out.push(("scope_key", scope_key.as_str()));
        }
        out
    }

    /// The checks every backend makes before reading.
    pub fn check(&self) -> Result<()> {
        if let Some(n) = self.limit {
            if n > MAX_READ {
                return Err(StoreError::invalid(
                    "limit",
                    format!("{n} is more than {MAX_READ}"),
                ));
            }
        }
        if let Some(r) = &self.rule {
            check_id("rule", r)?;
        }
        if let Some(k) = &self.scope_key {
            check_id("scope_key", k)?;
        }
        Ok(())
    }
}

/// What a workspace storage can do beyond the contract.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkspaceCapabilities {
    /// Keeps what it stores across restarts (and a reopen sees it).
    pub durable: bool,
    /// Another process's commit wakes [`WorkspaceStorage::wait_for_append`] at once (PostgreSQL's
    /// `LISTEN`); without it, such commits are seen within the storage's poll interval.
    pub cross_process_wakeups: bool,
}

impl WorkspaceCapabilities {
    /// Capabilities from their parts.
    pub fn new(durable: bool, cross_process_wakeups: bool) -> Self {
        WorkspaceCapabilities {
            durable,
            cross_process_wakeups,
        }
    }
}

/// One atomic unit of work on a workspace.
///
/// From [`WorkspaceStorage::begin`] until it ends, no other transaction on the same workspace
/// runs, in this process or another. Its writes are visible to its own later reads; they
/// become visible to others all at once on [`WorkspaceTx::commit`]. Dropped without a commit,
/// it rolls back: nothing of it is visible and no counter has moved. A call that returns an
/// error changes nothing and leaves the transaction usable.
pub trait WorkspaceTx: Send {
    /// Appends events, giving each the next `seq` and a `ts` (the later of the clock and the
    /// previous envelope's). An id already in the log, earlier in the transaction or twice in
    /// `entries` is [`StoreError::AlreadyExists`], and then none of `entries` is appended.
    fn append(&mut self, entries: &[Entry]) -> Result<Vec<Envelope>>;
    /// The envelope of an event id, or `None`.
    fn envelope(&mut self, event_id: &str) -> Result<Option<Envelope>>;
    /// The log's latest seq, or 0.
    fn head_seq(&mut self) -> Result<i64>;
    /// Up to `limit` envelopes after `after_seq`, in order (this transaction's included).
    fn read(&mut self, after_seq: i64, limit: usize) -> Result<Vec<Envelope>>;
    /// A rule's progress, or `None`.
    fn progress(&mut self, rule: &str) -> Result<Option<RuleProgress>>;
    /// Saves a rule's progress.
    fn save_progress(&mut self, rule: &str, progress: &RuleProgress) -> Result<()>;
    /// The stored states of some scopes of a rule: the keys found, in the order asked.
    fn states(&mut self, rule: &str, keys: &[String]) -> Result<Vec<(String, ScopeState)>>;
    /// Saves states of scopes of a rule (a key given twice: the last wins).
    fn save_states(&mut self, rule: &str, states: &[(String, ScopeState)]) -> Result<()>;
    /// Deletes every scope state of a rule, committed and pending.
    fn clear_states(&mut self, rule: &str) -> Result<()>;
    /// A run, or `None`.
    fn run(&mut self, run_id: &str) -> Result<Option<Run>>;
    /// Inserts or updates runs (a run given twice: the last version wins, placed where it first
    /// appears).
    fn save_runs(&mut self, runs: &[Run]) -> Result<()>;
    /// Every run of a rule's scope that has not succeeded, in firing order (fired seq, then
    /// creation).
    fn scope_runs(&mut self, rule: &str, scope_key: &str) -> Result<Vec<Run>>;
    /// Records envelopes a rule could not evaluate.
    fn dead_letter(&mut self, errors: &[EvaluationError]) -> Result<()>;
    /// The time of a schedule's last tick, or `None`.
    fn schedule(&mut self, name: &str) -> Result<Option<Timestamp>>;
    /// Saves the time of a schedule's last tick.
    fn save_schedule(&mut self, name: &str, at: Timestamp) -> Result<()>;
    /// A stored rule, active or archived, or `None`.
    fn stored_rule(&mut self, name: &str) -> Result<Option<StoredRule>>;
    /// The active stored rules, by name in code-point order.
    fn stored_rules(&mut self) -> Result<Vec<StoredRule>>;
    /// Saves a stored rule's next version (1 for a new name). Any other version is
    /// [`StoreError::Conflict`], refused before anything is written.
    fn save_stored_rule(&mut self, stored: &StoredRule) -> Result<()>;
    /// Makes every write of the transaction durable and visible at once.
    fn commit(self: Box<Self>) -> Result<()>;
}

/// Persistence for reflexr's workspaces: the second contract, beside
/// [`ExecutionStore`](crate::ExecutionStore). Every method but [`workspaces`] and
/// [`due_runs`] is scoped to one workspace.
///
/// [`workspaces`]: WorkspaceStorage::workspaces
/// [`due_runs`]: WorkspaceStorage::due_runs
pub trait WorkspaceStorage: Send + Sync {
    /// What this storage can do.
    fn capabilities(&self) -> WorkspaceCapabilities;
    /// Begins a transaction, waiting for any other on the same workspace to end. It creates
    /// the workspace's row if the workspace is new, as reflexr does.
    fn begin(&self, workspace: &WorkspaceRef) -> Result<Box<dyn WorkspaceTx>>;
    /// The log's latest seq, or 0.
    fn head_seq(&self, workspace: &WorkspaceRef) -> Result<i64>;
    /// A window of the log, filtered in the store.
    fn read(&self, workspace: &WorkspaceRef, query: &LogQuery) -> Result<Vec<Envelope>>;
    /// A stored rule's versions (its `rule_installed` / `rule_archived` facts), oldest first.
    fn rule_history(&self, workspace: &WorkspaceRef, name: &str) -> Result<Vec<Envelope>>;
    /// The envelope of an event id, or `None`.
    fn envelope(&self, workspace: &WorkspaceRef, event_id: &str) -> Result<Option<Envelope>>;
    /// A run, or `None`.
    fn run(&self, workspace: &WorkspaceRef, run_id: &str) -> Result<Option<Run>>;
    /// Runs, newest first, filtered.
    fn runs(&self, workspace: &WorkspaceRef, query: &RunQuery) -> Result<Vec<Run>>;
    /// Dead letters, oldest first, of one rule or all.
    fn dead_letters(&self, workspace: &WorkspaceRef, rule: Option<&str>) -> Result<Vec<EvaluationError>>;
    /// One page of [`WorkspaceStorage::dead_letters`]: the first `limit` (1 to [`MAX_READ`])
    /// recorded after position `after` (0: from the first), each with its position, which
    /// grows in the order they were recorded (a backend's own numbering: pass the last one
    /// back for the next page). A `limit` out of range, a negative `after` or a bad rule is
    /// [`StoreError::InvalidInput`]. The default numbers [`WorkspaceStorage::dead_letters`]
    /// from 1; backends read the page off the table's key.
    fn dead_letters_page(
        &self,
        workspace: &WorkspaceRef,
        rule: Option<&str>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, EvaluationError)>> {
        workspace.check()?;
        check_dead_letters_page(rule, after, limit)?;
        Ok(number_dead_letters(
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
    /// A workspace's head, or `None` until a transaction on it has committed (leases and
    /// cursors alone make no workspace).
    fn workspace_info(&self, workspace: &WorkspaceRef) -> Result<Option<WorkspaceInfo>>;
    /// The runs to attempt now, across workspaces, ordered by due time, tenant, workspace and
    /// creation: pending and retrying runs due by `now` that can start under `policy`, and
    /// running runs whose run lease is missing or lapsed by `now`. Runs of disabled rules and
    /// runs held back by an earlier run of their scope do not take up the `limit`.
    fn due_runs(&self, now: Timestamp, limit: usize, policy: &RunPolicy) -> Result<Vec<(WorkspaceRef, Run)>>;
    /// Takes or renews an exclusive lease for `ttl` from the storage's clock; `false` if
    /// another holder has it unexpired. A `ttl` of zero or less is [`StoreError::InvalidInput`].
    fn acquire_lease(&self, workspace: &WorkspaceRef, key: &str, holder: &str, ttl: Duration)
        -> Result<bool>;
    /// Releases a lease if `holder` has it (otherwise does nothing).
    fn release_lease(&self, workspace: &WorkspaceRef, key: &str, holder: &str) -> Result<()>;
    /// Every lease row of a workspace (expired ones included), by key.
    fn leases(&self, workspace: &WorkspaceRef) -> Result<Vec<Lease>>;
    /// The lease rows of some keys (expired ones included), by key: what a page of runs
    /// shows of their run leases. The default filters [`WorkspaceStorage::leases`];
    /// backends look the keys up.
    fn leases_of(&self, workspace: &WorkspaceRef, keys: &[String]) -> Result<Vec<Lease>> {
        let keys: std::collections::HashSet<&str> = keys.iter().map(String::as_str).collect();
        Ok(self
            .leases(workspace)?
            .into_iter()
            .filter(|l| keys.contains(l.key.as_str()))
            .collect())
    }
    /// One page of a workspace's lease rows (expired ones included), by key: the first
    /// `limit` (1 to [`MAX_READ`]) whose key is after `after_key` (`None`: from the first).
    /// Paging on from each page's last key lists [`WorkspaceStorage::leases`], each row once.
    /// A `limit` out of range, or an `after_key` that is no key, is
    /// [`StoreError::InvalidInput`]. The default filters [`WorkspaceStorage::leases`];
    /// backends read the page off the table's key.
    fn leases_page(
        &self,
        workspace: &WorkspaceRef,
        after_key: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Lease>> {
        workspace.check()?;
        check_leases_page(after_key, limit)?;
        Ok(self
            .leases(workspace)?
            .into_iter()
            .filter(|l| after_key.is_none_or(|after| l.key.as_str() > after))
            .take(limit)
            .collect())
    }
    /// How far a named consumer has got: the seq saved, or 0.
    fn cursor(&self, workspace: &WorkspaceRef, name: &str) -> Result<i64>;
    /// Saves a consumer's seq; a cursor only moves forward (the furthest save wins).
    fn save_cursor(&self, workspace: &WorkspaceRef, name: &str, seq: i64) -> Result<()>;
    /// Every cursor of a workspace, by name.
    fn cursors(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, i64)>>;
    /// Blocks until the log may have grown past `after_seq`, or `timeout` passes. A commit
    /// through this storage wakes it at once; another process's within the storage's poll
    /// interval (at once with [`WorkspaceCapabilities::cross_process_wakeups`]). Callers read
    /// again after it returns; `true` means it was woken rather than timed out.
    fn wait_for_append(&self, workspace: &WorkspaceRef, after_seq: i64, timeout: Duration) -> Result<bool>;

    /// Every workspace of [`WorkspaceStorage::workspaces`], in its order, with its head, its
    /// cursors and how many leases and dead letters it has: what the monitor's workspace list
    /// and change token read. The default makes the calls it spares, four per workspace;
    /// backends answer it in a few queries.
    fn workspace_summaries(&self) -> Result<Vec<WorkspaceSummary>> {
        summaries_by_calls(self)
    }

    /// The active stored rules of every workspace of [`WorkspaceStorage::workspaces`], in its
    /// order, each workspace's by name: what a store-wide run policy is made of (the monitor's
    /// due runs). The default makes a [`WorkspaceStorage::stored_rules`] call per workspace;
    /// backends answer it in one query.
    fn all_stored_rules(&self) -> Result<Vec<(WorkspaceRef, StoredRule)>> {
        rules_by_calls(self)
    }

    /// One page of a search of the log (docs/search.md): the envelopes matching
    /// `search.filter`, having examined at most `search.scan` of them, how far it got and
    /// where to go on. A bad search is [`StoreError::InvalidInput`]. The default reads
    /// windows of the log through [`WorkspaceStorage::read`]; backends built on the front
    /// narrow them in their own queries.
    fn search_log(&self, workspace: &WorkspaceRef, search: &LogSearch) -> Result<LogPage> {
        workspace.check()?;
        search.check()?;
        let head = self.head_seq(workspace)?;
        search_log_with(search, head, &mut |after, upto, newest_first, n| {
            let mut query = LogQuery::new().after(after).before(upto.saturating_add(1));
            query = if newest_first {
                query.last(n)
            } else {
                query.limit(n)
            };
            let mut found = self.read(workspace, &query)?;
            if newest_first {
                found.reverse();
            }
            Ok(found)
        })
    }

    /// One page of a search of the runs, newest first: the runs matching `search.filter`
    /// (`event.` paths read the envelope at each run's `fired_seq`), having examined at most
    /// `search.scan` runs, and where to go on. The default pages through
    /// [`WorkspaceStorage::runs`] (its cursor counts the runs examined before).
    fn search_runs(&self, workspace: &WorkspaceRef, search: &RunSearch) -> Result<RunPage> {
        workspace.check()?;
        search.check()?;
        let skip = usize::try_from(search.cursor.unwrap_or(0)).unwrap_or(usize::MAX);
        let want = skip.saturating_add(search.scan).min(MAX_READ);
        let runs = self.runs(
            workspace,
            &RunQuery {
                limit: Some(want),
                ..RunQuery::default()
            },
        )?;
        let with_event = super::search::reads_event(&search.filter);
        let mut rows = Vec::new();
        for (i, run) in runs.into_iter().enumerate().skip(skip) {
            let fired = if with_event {
                self.read(
                    workspace,
                    &LogQuery::new().after((run.fired_seq() - 1).max(0)).limit(1),
                )?
                .into_iter()
                .find(|e| e.seq == run.fired_seq())
            } else {
                None
            };
            rows.push(RunRow {
                position: i64::try_from(i + 1).unwrap_or(i64::MAX),
                candidate: Some((run, fired)),
            });
        }
        Ok(search_runs_with(search, rows))
    }
}

/// [`WorkspaceStorage::all_stored_rules`] by the per-workspace calls it spares.
pub fn rules_by_calls<S: WorkspaceStorage + ?Sized>(storage: &S) -> Result<Vec<(WorkspaceRef, StoredRule)>> {
    let mut out = Vec::new();
    for ws in storage.workspaces()? {
        for rule in storage.stored_rules(&ws)? {
            out.push((ws.clone(), rule));
        }
    }
    Ok(out)
}

/// Keeps the rules of `workspaces` (each workspace's in their order), ordered as they are:
/// what a backend's one query over every stored rule narrows to
/// [`WorkspaceStorage::all_stored_rules`]'s answer.
pub fn rules_of(
    workspaces: &[WorkspaceRef],
    rules: Vec<(WorkspaceRef, StoredRule)>,
) -> Vec<(WorkspaceRef, StoredRule)> {
    let mut by_workspace: std::collections::HashMap<WorkspaceRef, Vec<StoredRule>> =
        std::collections::HashMap::new();
    for (ws, rule) in rules {
        by_workspace.entry(ws).or_default().push(rule);
    }
    workspaces
        .iter()
        .flat_map(|ws| {
            by_workspace
                .remove(ws)
                .unwrap_or_default()
                .into_iter()
                .map(move |rule| (ws.clone(), rule))
        })
        .collect()
}

/// [`WorkspaceStorage::workspace_summaries`] by the per-workspace calls it spares.
pub fn summaries_by_calls<S: WorkspaceStorage + ?Sized>(storage: &S) -> Result<Vec<WorkspaceSummary>> {
    let mut out = Vec::new();
    for ws in storage.workspaces()? {
        let info = storage.workspace_info(&ws)?.unwrap_or(WorkspaceInfo {
            workspace: ws.clone(),
            head_seq: 0,
            head_ts: None,
        });
        out.push(WorkspaceSummary {
            info,
            cursors: storage.cursors(&ws)?,
            leases: storage.leases(&ws)?.len(),
            dead_letters: storage.dead_letters(&ws, None)?.len(),
        });
    }
    Ok(out)
}

/// Checks a lease's arguments.
pub fn check_lease(key: &str, holder: &str, ttl: Option<Duration>) -> Result<()> {
    check_id("key", key)?;
    check_id("holder", holder)?;
    if let Some(ttl) = ttl {
        if ttl.is_zero() {
            return Err(StoreError::invalid("ttl", "a lease needs a ttl above zero"));
        }
        if ttl.as_secs() > 100 * 365 * 24 * 3600 {
            return Err(StoreError::invalid("ttl", "longer than 100 years"));
        }
    }
    Ok(())
}

/// Checks a page of leases' arguments: `limit` between 1 and [`MAX_READ`], `after_key` a
/// key (as [`check_lease`] checks one).
pub fn check_leases_page(after_key: Option<&str>, limit: usize) -> Result<()> {
    if let Some(after) = after_key {
        check_id("after_key", after)?;
    }
    if !(1..=MAX_READ).contains(&limit) {
        return Err(StoreError::invalid(
            "limit",
            format!("{limit} is not between 1 and {MAX_READ}"),
        ));
    }
    Ok(())
}

/// Checks a page of dead letters' arguments: `rule` a key, `after` not negative, `limit`
/// between 1 and [`MAX_READ`].
pub fn check_dead_letters_page(rule: Option<&str>, after: i64, limit: usize) -> Result<()> {
    if let Some(rule) = rule {
        check_id("rule", rule)?;
    }
    if after < 0 {
        return Err(StoreError::invalid("after", format!("{after} is negative")));
    }
    if !(1..=MAX_READ).contains(&limit) {
        return Err(StoreError::invalid(
            "limit",
            format!("{limit} is not between 1 and {MAX_READ}"),
        ));
    }
    Ok(())
}

/// The default page of dead letters: `all` (every dead letter of the workspace, oldest first)
/// numbered from 1, those of `rule` after `after`, the first `limit`.
pub(crate) fn number_dead_letters(
    all: Vec<EvaluationError>,
    rule: Option<&str>,
    after: i64,
    limit: usize,
) -> Vec<(i64, EvaluationError)> {
    (1i64..)
        .zip(all)
        .filter(|(position, l)| *position > after && rule.is_none_or(|r| l.rule() == r))
        .take(limit)
        .collect()
}

/// Checks a cursor's arguments.
pub fn check_cursor(name: &str, seq: Option<i64>) -> Result<()> {
    check_id("name", name)?;
    if let Some(seq) = seq {
        if seq < 0 {
            return Err(StoreError::invalid("seq", format!("{seq} is negative")));
        }
    }
    Ok(())
}

/// Checks entries before an append: ids, events, and no id twice in the call.
pub fn check_entries(entries: &[Entry]) -> Result<()> {
    if entries.len() > MAX_BATCH {
        return Err(StoreError::invalid("entries", format!("more than {MAX_BATCH}")));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, entry) in entries.iter().enumerate() {
        check_id(&format!("entries[{i}].id"), &entry.id)?;
        super::model::check_event(&entry.event)?;
        if let Some(c) = &entry.correlation_id {
            check_id(&format!("entries[{i}].correlation_id"), c)?;
        }
        if !seen.insert(entry.id.as_str()) {
            return Err(StoreError::AlreadyExists {
                what: "event",
                key: entry.id.clone(),
            });
        }
    }
    Ok(())
}
