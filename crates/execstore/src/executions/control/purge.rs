//! `purge` and `purge_finished`: harel 0.9's permanent deletion of finished execution trees.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::load_expected;
use crate::error::{Result, StoreError};
use crate::executions::model::{Execution, Status};
use crate::executions::query::ListQuery;
use crate::executions::store::ExecutionStore;
use crate::kit::validate::{check_id, check_time};

/// The statuses a purged tree may be in (harel's `_PURGEABLE`): finished for good. A `FAILED`
/// dead letter must be abandoned with [`super::terminate`] first.
pub const PURGEABLE: [Status; 2] = [Status::Done, Status::Cancelled];

/// The page size `purge_finished` lists candidates with (harel's).
const PAGE: usize = 500;

/// The archiver `purge` hands the tree to before deleting anything: harel's archive bundle,
/// `{"root_id", "executions": [every member, root first, parents before children, as stored
/// JSON], "traces": {id: its trace steps with their index}}`. An error it returns aborts the
/// purge with nothing deleted.
pub type ArchiveFn<'a> = &'a mut dyn FnMut(&Value) -> Result<()>;

/// What a purge removed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PurgeOutcome {
    /// The root purged.
    pub root_id: String,
    /// The executions deleted, in the order deleted: descendants (last found first), then the
    /// root.
    pub removed: Vec<String>,
    /// Ids a member listed in `children` that were no longer stored, whose leftovers (dedupe
    /// markers, trace, timers, outbox, spawns) were swept.
    pub swept: Vec<String>,
}

/// Why `purge` refused a tree, as harel words it.
fn refused(reason: String) -> StoreError {
    StoreError::invalid("execution_id", reason)
}

/// Whether `err` is a purge refusal (not a root, or not finished) made by this module.
fn is_refusal(err: &StoreError) -> bool {
    matches!(err, StoreError::InvalidInput { field, reason } if field == "execution_id" && reason.starts_with("purge refused"))
}

/// `root` and its stored descendants, parents first, plus the ids listed in a member's
/// `children` that are not members (harel's `_collect_tree_flow` and `_tree_of`).
fn collect_tree<S: ExecutionStore + ?Sized>(
    store: &S,
    root: &Execution,
) -> Result<(Vec<Execution>, Vec<String>)> {
    let mut found: IndexMap<String, Execution> = IndexMap::new();
    for id in store.ids_with_prefix(&format!("{}:", root.id))? {
        if let Some(e) = store.load(&id)? {
            found.insert(id, e);
        }
    }
    // a parent drops a child it is done with from `children`, and `children` may name ids
    // outside the prefix: both sources, as harel walks them
    let mut frontier: Vec<Execution> = std::iter::once(root.clone())
        .chain(found.values().cloned())
        .collect();
    while let Some(exe) = frontier.pop() {
        for cid in exe.children.keys() {
            if cid != &root.id && !found.contains_key(cid) {
                if let Some(child) = store.load(cid)? {
                    found.insert(cid.clone(), child.clone());
                    frontier.push(child);
                }
            }
        }
    }
    let mut members: IndexMap<String, Execution> = IndexMap::new();
    members.insert(root.id.clone(), root.clone());
    let mut added = true;
    while added {
        added = false;
        for exe in found.values() {
            let joins = exe.parent_id.as_ref().is_some_and(|p| members.contains_key(p));
            if !members.contains_key(&exe.id) && joins {
                members.insert(exe.id.clone(), exe.clone());
                added = true;
            }
        }
    }
    let tree: Vec<Execution> = members.into_values().collect();
    let missing: Vec<String> = tree
        .iter()
        .flat_map(|e| e.children.keys())
        .filter(|cid| !tree.iter().any(|m| &m.id == *cid))
        .cloned()
        .collect();
    Ok((tree, missing))
}

/// harel's `_check_purgeable`: `root` is a root and every member is finished.
fn check_purgeable(root: &Execution, tree: &[Execution]) -> Result<()> {
    if let Some(parent) = &root.parent_id {
        return Err(refused(format!(
            "purge refused: '{}' is a child of '{parent}' — purge its root, which removes the whole tree",
            root.id
        )));
    }
    let live: Vec<&Execution> = tree.iter().filter(|e| !PURGEABLE.contains(&e.status)).collect();
    if !live.is_empty() {
        let listed = live
            .iter()
            .map(|e| format!("{} ({})", e.id, e.status))
            .collect::<Vec<_>>()
            .join(", ");
        let hint = if live.iter().any(|e| e.status == Status::Failed) {
            " — terminate a dead letter to abandon it"
        } else {
            ""
        };
        return Err(refused(format!("purge refused: not finished: {listed}{hint}")));
    }
    Ok(())
}

/// harel's archive bundle of a tree.
fn archive_bundle<S: ExecutionStore + ?Sized>(store: &S, tree: &[Execution]) -> Result<Value> {
    let mut traces = serde_json::Map::new();
    for e in tree {
        let steps = store.read_trace(&e.id)?.into_iter().map(Value::Object).collect();
        traces.insert(e.id.clone(), Value::Array(steps));
    }
    let executions: Vec<Value> = tree
        .iter()
        .map(|e| serde_json::to_value(e).map_err(|err| StoreError::invalid("execution", err.to_string())))
        .collect::<Result<_>>()?;
    Ok(json!({"root_id": tree[0].id, "executions": executions, "traces": traces}))
}

/// The archive bundle `purge` would hand its archiver, for the tree rooted at `id` (the
/// execution and its stored descendants), read without deleting anything and without the
/// purge's check that the tree finished: a live execution's backup in the same shape as an
/// archive written by `purge --archive`. An unknown id is [`StoreError::NotFound`].
pub fn bundle<S: ExecutionStore + ?Sized>(store: &S, id: &str) -> Result<Value> {
    check_id("execution_id", id)?;
    let root = load_expected(store, id, None)?;
    let (tree, _) = collect_tree(store, &root)?;
    archive_bundle(store, &tree)
}

/// Deletes `exe` if it is still at the version it was checked at, else a `Conflict`.
fn purge_one<S: ExecutionStore + ?Sized>(store: &S, exe: &Execution) -> Result<()> {
    if store.purge(&exe.id, exe.version)? {
        return Ok(());
    }
    let found = store.load(&exe.id)?.map(|e| e.version);
    Err(StoreError::Conflict {
        id: exe.id.clone(),
        expected: exe.version,
        found,
    })
}

/// Permanently deletes a finished execution tree (harel's `purge`): the root, every
/// descendant, and everything the store keys by them (dedupe markers, trace, timers,
/// outbox entries addressed to them, spawn intents they issued).
///
/// Refuses, changing nothing: an unknown id ([`StoreError::NotFound`]; harel returns
/// `False`), a child (purge its root) or a tree with a member not `DONE`/`CANCELLED`
/// ([`StoreError::InvalidInput`] on `execution_id`, harel's words in the reason), and a
/// root no longer at `expected_version` when one is given ([`StoreError::Conflict`]).
/// `archive`, when given, receives the bundle before anything is deleted. Descendants are
/// deleted first and the root last, each only if unchanged since it was checked: one that
/// moved is a `Conflict` and stops the purge with the root still stored, so running `purge`
/// again finishes it.
pub fn purge<S: ExecutionStore + ?Sized>(
    store: &S,
    id: &str,
    expected_version: Option<i64>,
    archive: Option<ArchiveFn<'_>>,
) -> Result<PurgeOutcome> {
    check_id("execution_id", id)?;
    let root = load_expected(store, id, expected_version)?;
    purge_loaded(store, root, archive)
}

fn purge_loaded<S: ExecutionStore + ?Sized>(
    store: &S,
    root: Execution,
    archive: Option<ArchiveFn<'_>>,
) -> Result<PurgeOutcome> {
    let (tree, missing) = collect_tree(store, &root)?;
    check_purgeable(&root, &tree)?;
    if let Some(archive) = archive {
        archive(&archive_bundle(store, &tree)?)?;
    }
    let mut removed = Vec::with_capacity(tree.len());
    for exe in tree[1..].iter().rev() {
        purge_one(store, exe)?;
        removed.push(exe.id.clone());
    }
    for cid in &missing {
        // sweep what an interrupted purge left behind (the version is unused when absent)
        store.purge(cid, 0)?;
    }
    purge_one(store, &root)?;
    removed.push(root.id.clone());
    Ok(PurgeOutcome {
        root_id: root.id,
        removed,
        swept: missing,
    })
}

/// What [`purge_finished`] is asked to do (harel's keyword arguments).
#[derive(Clone, Debug, PartialEq)]
pub struct PurgeFinished {
    /// Purge roots that finished more than this many seconds before `now`.
    pub older_than: f64,
    /// The current time, epoch seconds.
    pub now: f64,
    /// The root statuses to purge: a non-empty subset of [`PURGEABLE`].
    pub statuses: Vec<Status>,
    /// Whether a finished root without `finished_at` is purged too (else it is skipped and
    /// counted).
    pub include_undated: bool,
    /// At most this many roots.
    pub limit: Option<usize>,
    /// Only report what would be purged, with the same whole-tree check.
    pub dry_run: bool,
}

impl PurgeFinished {
    /// Both purgeable statuses, undated roots skipped, no limit, not a dry run.
    pub fn new(older_than: f64, now: f64) -> Self {
        PurgeFinished {
            older_than,
            now,
            statuses: PURGEABLE.to_vec(),
            include_undated: false,
            limit: None,
            dry_run: false,
        }
    }
}

/// What [`purge_finished`] did (harel's `PurgeReport`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PurgeReport {
    /// The roots purged (on a dry run: that would be), in id order.
    pub purged: Vec<String>,
    /// Finished roots without `finished_at`, skipped.
    pub skipped_undated: usize,
    /// Roots refused (a member not finished, or changed concurrently), each with the reason.
    pub refused: IndexMap<String, String>,
    /// Whether this was a dry run (nothing deleted).
    pub dry_run: bool,
}

/// Purges every root tree that finished more than `older_than` seconds before `now` (harel's
/// `purge_finished`). Candidates are the roots in `statuses` whose `finished_at` is before the
/// cutoff, all collected before any is deleted. A candidate `purge` refuses (a member still
/// live, or changed concurrently) is recorded in `refused` and the run goes on; any other
/// error, e.g. the archiver's, stops it. Bad arguments are [`StoreError::InvalidInput`] and
/// change nothing.
pub fn purge_finished<S: ExecutionStore + ?Sized>(
    store: &S,
    request: &PurgeFinished,
    mut archive: Option<ArchiveFn<'_>>,
) -> Result<PurgeReport> {
    check_time("older_than", request.older_than)?;
    check_time("now", request.now)?;
    if request.statuses.is_empty() {
        return Err(StoreError::invalid(
            "statuses",
            "name at least one of DONE, CANCELLED",
        ));
    }
    if let Some(bad) = request.statuses.iter().find(|s| !PURGEABLE.contains(s)) {
        return Err(StoreError::invalid(
            "statuses",
            format!("{bad}: only DONE, CANCELLED executions can be purged"),
        ));
    }
    let cutoff = request.now - request.older_than;
    let mut report = PurgeReport {
        dry_run: request.dry_run,
        ..PurgeReport::default()
    };
    let mut candidates: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    while request.limit.is_none_or(|l| candidates.len() < l) {
        let query = ListQuery::new()
            .status(request.statuses.iter().copied())
            .roots_only(true)
            .limit(PAGE)
            .cursor(cursor.take());
        let page = store.list_executions(&query)?;
        for summary in page.items {
            match summary.finished_at {
                None if !request.include_undated => {
                    report.skipped_undated += 1;
                    continue;
                }
                Some(at) if at >= cutoff => continue,
                _ => candidates.push(summary.id),
            }
        }
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    if let Some(limit) = request.limit {
        candidates.truncate(limit);
    }
    for root_id in candidates {
        let Some(root) = store.load(&root_id)? else {
            continue; // gone meanwhile (harel: purge returns False)
        };
        let result = if request.dry_run {
            collect_tree(store, &root).and_then(|(tree, _)| check_purgeable(&root, &tree))
        } else {
            purge_loaded(store, root, archive.as_mut().map(|a| &mut **a as ArchiveFn<'_>)).map(drop)
        };
        match result {
            Ok(()) => report.purged.push(root_id),
            Err(e) if is_refusal(&e) || matches!(e, StoreError::Conflict { .. }) => {
                let reason = match e {
                    StoreError::InvalidInput { reason, .. } => reason,
                    other => other.to_string(),
                };
                report.refused.insert(root_id, reason);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(report)
}
