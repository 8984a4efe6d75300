//! One snapshot of the figures, read from the stores through their contracts only.
//!
//! Every read is bounded: a listing reads at most a cap of rows and says so in
//! [`Snapshot::truncated`] when it hit it. What each read costs on a large store is written
//! beside it (and in docs/metrics.md).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use execstore::executions::{paging, ListQuery, Status};
use execstore::kit::validate::MAX_PAGE;
use execstore::workspace::{RunQuery, RunStatus, Timestamp, WorkspaceRef, WorkspaceStorage};
use execstore::ExecutionStore;
use serde::Serialize;

use crate::params::Params;
use crate::{ApiError, Stores, ALL_TIMERS};

/// The window the started and finished figures count over, in seconds.
pub const RATE_WINDOW: f64 = 60.0;
/// The most rows one window read (started, finished, changed) pages through.
pub const WINDOW_CAP: usize = 20_000;
/// The most entries one queue read (outbox, spawns, timers) counts.
pub const QUEUE_CAP: usize = 100_000;
/// The most runs of one status, in one workspace, that are counted.
pub const RUNS_CAP: usize = 10_000;
/// The most definitions whose executions are counted by status one by one.
pub const MAX_DEFINITIONS: usize = 100;
/// Up to this many executions in the store, every sample counts each definition's executions
/// by status; past it, a ring counts them at most every [`DEFINITION_COUNTS_EVERY`] seconds
/// (each count reads every document of its definition: about 2 s per 200,000 executions on
/// SQLite) and carries the last counts in between, and a snapshot on its own leaves them out.
pub const DEFINITION_COUNTS_MAX: u64 = 100_000;
/// How often a ring counts by definition when the store holds more than
/// [`DEFINITION_COUNTS_MAX`] executions, in seconds.
pub const DEFINITION_COUNTS_EVERY: f64 = 600.0;

/// Everything one sample holds. Maps are keyed by name, so the JSON is in a stable order.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Snapshot {
    /// When it was taken, epoch seconds (the server's clock).
    pub at: f64,
    /// The execution store's figures, when the target holds executions.
    pub executions: Option<ExecutionFigures>,
    /// Per workspace of the log, when the target holds one (by tenant, then workspace).
    pub workspaces: Option<Vec<WorkspaceFigures>>,
    /// The reads that stopped at their cap (their figures are lower bounds).
    pub truncated: Vec<String>,
}

/// The execution store's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ExecutionFigures {
    /// Every execution of the store, by status (every status, zeros included).
    pub by_status: BTreeMap<String, u64>,
    /// By definition, then status: the definitions the sampler knows of (see docs/metrics.md).
    pub by_definition: BTreeMap<String, BTreeMap<String, u64>>,
    /// When `by_definition` was counted (this sample, or an earlier one of the ring whose
    /// counts it carries); `None`: not counted (see [`DEFINITION_COUNTS_MAX`]).
    pub by_definition_at: Option<f64>,
    /// Executions created in the last [`RATE_WINDOW`] seconds, by definition.
    pub started_last_minute: BTreeMap<String, u64>,
    /// Executions finished in the last [`RATE_WINDOW`] seconds, by definition, then status.
    pub finished_last_minute: BTreeMap<String, BTreeMap<String, u64>>,
    /// Outbox entries not acknowledged yet.
    pub outbox_depth: u64,
    /// Age in seconds of the oldest outbox entry (its event's `created_time`); `None`: empty,
    /// or its event has no readable time.
    pub outbox_oldest_age_seconds: Option<f64>,
    /// Spawn intents not acknowledged yet.
    pub spawns_pending: u64,
    /// Armed timers, due or not.
    pub timers_armed: u64,
    /// Armed timers whose `fire_at` has passed.
    pub timers_due: u64,
    /// How late the oldest due timer is (now minus its `fire_at`); 0 when none is due.
    pub timer_lag_seconds: f64,
    /// The definitions this sample saw (the ring counts them in later samples).
    #[serde(skip)]
    pub(crate) seen: BTreeSet<String>,
}

/// One workspace's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WorkspaceFigures {
    /// The tenant.
    pub tenant: String,
    /// The workspace.
    pub workspace: String,
    /// The log's head: the seq of its last envelope (0: none).
    pub head_seq: i64,
    /// Envelopes appended per minute since the previous sample (`None` in the first sample
    /// of a series, or when answered on its own).
    pub log_rate_per_minute: Option<f64>,
    /// Each cursor's lag: the head minus the cursor's seq.
    pub cursor_lag: BTreeMap<String, i64>,
    /// Runs by status (every status, zeros included; each at most [`RUNS_CAP`]).
    pub runs: BTreeMap<String, u64>,
    /// Runs due now under the stored rules' policy.
    pub due_runs: u64,
    /// Dead letters (evaluation errors kept).
    pub dead_letters: u64,
    /// Leases held.
    pub leases: u64,
    /// Leases whose expiry has passed and that nobody released.
    pub lapsed_leases: u64,
}

/// Takes a snapshot at `now`. `known` are the definitions counted by status one by one
/// (beside those seen changing in the last minute); an empty set first reads one page of
/// the listing to learn some. Executions are counted by definition when the store holds at
/// most `definitions_up_to` of them (`u64::MAX`: always).
pub(crate) fn take(
    stores: Stores<'_>,
    now: f64,
    known: &BTreeSet<String>,
    definitions_up_to: u64,
) -> Result<Snapshot, ApiError> {
    let mut truncated = Vec::new();
    let executions = match stores.executions {
        Some(store) => Some(executions(store, now, known, definitions_up_to, &mut truncated)?),
        None => None,
    };
    let workspaces = match stores.workspaces {
        Some(storage) => Some(workspaces(storage, now, &mut truncated)?),
        None => None,
    };
    Ok(Snapshot {
        at: now,
        executions,
        workspaces,
        truncated,
    })
}

fn status_map(counts: impl IntoIterator<Item = (Status, u64)>) -> BTreeMap<String, u64> {
    counts
        .into_iter()
        .map(|(s, n)| (s.as_str().to_owned(), n))
        .collect()
}

/// Pages through `query` (at most [`WINDOW_CAP`] rows), calling `each` with every summary's
/// definition and status. Records `name` in `truncated` when it stopped at the cap.
fn window(
    store: &dyn ExecutionStore,
    query: ListQuery,
    name: &str,
    truncated: &mut Vec<String>,
    mut each: impl FnMut(&str, Status),
) -> Result<(), ApiError> {
    let mut read = 0;
    for page in paging::execution_pages(store, query.limit(MAX_PAGE)) {
        let page = page?;
        read += page.items.len();
        for s in &page.items {
            each(&s.definition_id, s.status);
        }
        if read >= WINDOW_CAP && page.next_cursor.is_some() {
            truncated.push(name.to_owned());
            break;
        }
    }
    Ok(())
}

/// Counts the entries of `pages`, at most [`QUEUE_CAP`] (then `name` goes in `truncated`).
fn count<T>(
    pages: impl Iterator<Item = execstore::Result<Vec<T>>>,
    name: &str,
    truncated: &mut Vec<String>,
    mut first: impl FnMut(&T),
) -> Result<u64, ApiError> {
    let mut n = 0usize;
    for page in pages {
        let page = page?;
        if n == 0 {
            if let Some(head) = page.first() {
                first(head);
            }
        }
        n += page.len();
        if n >= QUEUE_CAP && page.len() == MAX_PAGE {
            truncated.push(name.to_owned());
            break;
        }
    }
    Ok(n as u64)
}

/// An ISO 8601 time as epoch seconds (an aware one; a naive one is read as UTC).
fn iso_seconds(text: &str) -> Option<f64> {
    let parsed = Timestamp::parse_json_text(text)
        .or_else(|_| Timestamp::parse_json_text(&format!("{text}Z")))
        .ok()?;
    Some(parsed.micros() as f64 / 1e6)
}

fn executions(
    store: &dyn ExecutionStore,
    now: f64,
    known: &BTreeSet<String>,
    definitions_up_to: u64,
    truncated: &mut Vec<String>,
) -> Result<ExecutionFigures, ApiError> {
    let mut figures = ExecutionFigures {
        // One aggregate query on the SQL backends (the status index).
        by_status: status_map(store.count_by_status(&ListQuery::new())?),
        ..ExecutionFigures::default()
    };
    let since = now - RATE_WINDOW;
    let mut definitions = known.clone();
    // The three windows are ranges of the created_at, finished_at and updated_at indexes.
    window(
        store,
        ListQuery::new().created_between(Some(since), None),
        "started",
        truncated,
        |d, _| *figures.started_last_minute.entry(d.to_owned()).or_default() += 1,
    )?;
    window(
        store,
        ListQuery::new().finished_between(Some(since), None),
        "finished",
        truncated,
        |d, s| {
            *figures
                .finished_last_minute
                .entry(d.to_owned())
                .or_default()
                .entry(s.as_str().to_owned())
                .or_default() += 1;
        },
    )?;
    window(
        store,
        ListQuery::new().updated_between(Some(since), None),
        "changed",
        truncated,
        |d, _| {
            definitions.insert(d.to_owned());
        },
    )?;
    if known.is_empty() {
        // Nothing known yet: learn the definitions of the first page by id.
        let page = store.list_executions(&ListQuery::new().limit(MAX_PAGE))?;
        definitions.extend(page.items.into_iter().map(|s| s.definition_id));
    }
    if definitions.len() > MAX_DEFINITIONS {
        truncated.push("definitions".to_owned());
    }
    let total: u64 = figures.by_status.values().sum();
    if total <= definitions_up_to {
        for definition in definitions.iter().take(MAX_DEFINITIONS) {
            // One aggregate each over the definition index; it reads each execution's
            // document for its status.
            let counts = status_map(store.count_by_status(&ListQuery::new().definition(definition))?);
            if counts.values().any(|n| *n > 0) {
                figures.by_definition.insert(definition.clone(), counts);
            }
        }
        figures.by_definition_at = Some(now);
    }
    figures.seen = definitions;
    // Queues: keyset pages by seq (the primary key), counted up to QUEUE_CAP.
    let mut oldest = None;
    figures.outbox_depth = count(
        paging::outbox_pages(store, None, MAX_PAGE),
        "outbox",
        truncated,
        |e| oldest = e.event.created_time.as_deref().and_then(iso_seconds),
    )?;
    figures.outbox_oldest_age_seconds = oldest.map(|t| (now - t).max(0.0));
    figures.spawns_pending = count(
        paging::spawn_pages(store, None, MAX_PAGE),
        "spawns",
        truncated,
        |_| {},
    )?;
    // Timers: pages of the fire_at index.
    figures.timers_armed = count(
        paging::timer_pages(store, ALL_TIMERS, None, MAX_PAGE),
        "timers",
        truncated,
        |_| {},
    )?;
    let mut soonest = None;
    figures.timers_due = count(
        paging::timer_pages(store, now, None, MAX_PAGE),
        "timers_due",
        truncated,
        |t| soonest = Some(t.fire_at),
    )?;
    figures.timer_lag_seconds = soonest.map_or(0.0, |t| (now - t).max(0.0));
    Ok(figures)
}

fn workspaces(
    storage: &dyn WorkspaceStorage,
    now: f64,
    truncated: &mut Vec<String>,
) -> Result<Vec<WorkspaceFigures>, ApiError> {
    let at = Timestamp::from_secs_f64(now).map_err(ApiError::from)?;
    let list = storage.workspaces()?;
    // Due runs across every workspace in one read (the due index), judged by the stored
    // rules' policy as the runs listing judges them.
    let params = Params::new("", &[], now)?;
    let policy = crate::workspaces::stored_policy(storage, None, &params)?;
    let mut due: HashMap<WorkspaceRef, u64> = HashMap::new();
    let due_runs = storage.due_runs(at, QUEUE_CAP, &policy)?;
    if due_runs.len() >= QUEUE_CAP {
        truncated.push("due_runs".to_owned());
    }
    for (ws, _) in due_runs {
        *due.entry(ws).or_default() += 1;
    }
    let mut out = Vec::with_capacity(list.len());
    let mut runs_capped = BTreeSet::new();
    for ws in list {
        let head_seq = storage.workspace_info(&ws)?.map_or(0, |i| i.head_seq);
        let cursor_lag = storage
            .cursors(&ws)?
            .into_iter()
            .map(|(name, seq)| (name, head_seq - seq))
            .collect();
        let mut runs = BTreeMap::new();
        for status in RunStatus::ALL {
            // The (tenant, workspace, position) index, filtered by status: reads up to
            // RUNS_CAP + 1 rows.
            let query = RunQuery {
                status: Some(status),
                limit: Some(RUNS_CAP + 1),
                ..RunQuery::default()
            };
            let mut n = storage.runs(&ws, &query)?.len();
            if n > RUNS_CAP {
                n = RUNS_CAP;
                runs_capped.insert(format!("runs:{}", status.as_str()));
            }
            runs.insert(status.as_str().to_owned(), n as u64);
        }
        let leases = storage.leases(&ws)?;
        out.push(WorkspaceFigures {
            due_runs: due.get(&ws).copied().unwrap_or(0),
            // Every dead letter of the workspace is read: the contract has no count.
            dead_letters: storage.dead_letters(&ws, None)?.len() as u64,
            leases: leases.len() as u64,
            lapsed_leases: leases.iter().filter(|l| l.expires_at <= at).count() as u64,
            tenant: ws.tenant_id,
            workspace: ws.workspace_id,
            head_seq,
            log_rate_per_minute: None,
            cursor_lag,
            runs,
        });
    }
    truncated.extend(runs_capped);
    Ok(out)
}
