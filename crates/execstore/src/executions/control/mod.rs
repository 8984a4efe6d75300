//! The control plane: `suspend`, `resume`, `terminate`, `purge` and `purge_finished` over any
//! [`ExecutionStore`], with exactly the effects of harel 0.9's `harel.engine.control`.
//!
//! Each command is a run of CAS writes ([`ExecutionStore::commit`] with no effects, or the
//! guarded [`ExecutionStore::purge`]), never SQL, so it works on every backend. Time comes in
//! as an argument (`now`, epoch seconds); nothing here reads a clock.
//!
//! What each command changes, as harel does it:
//!
//! * [`suspend`]: a `RUNNING` execution becomes `SUSPENDED`; any other status is a silent
//!   no-op. Then every region child (the ids in `children`, recursively) that is not
//!   finished (`DONE`/`CANCELLED`) becomes `SUSPENDED` too, whatever its own status.
//! * [`resume`]: `SUSPENDED` to `RUNNING`, the same way.
//! * [`terminate`]: any status but `DONE`/`CANCELLED` becomes `CANCELLED` (a finished
//!   execution is left alone), and then, even when the execution itself was already
//!   finished, its unfinished descendants become `CANCELLED`.
//! * Every write stamps the execution as harel's `stamp` does: `updated_at = now`,
//!   `created_at` if unset, `finished_at = now` on becoming `CANCELLED` (kept if already set)
//!   and cleared on leaving a finished status. Nothing else changes: context, history, the
//!   outbox backlog, timers and traces are preserved.
//!
//! Refusals change nothing: an unknown id is [`StoreError::NotFound`]; a bad id or time is
//! [`StoreError::InvalidInput`]. A concurrent change is [`StoreError::Conflict`]: the root is
//! written once, at the version it was loaded at (or at the caller's `expected_version`, so
//! a monitor acting on what it showed learns the execution moved), and a conflict there
//! writes nothing. Region children are reloaded and retried on a conflict as harel does (up
//! to 5 attempts); a child that keeps conflicting ends the command with its `Conflict`,
//! the writes already made staying made (each execution is its own record, as in harel).
//!
//! `purge` and `purge_finished` are in [`purge`] (re-exported here); [`send`] (an
//! event through the outbox) and [`redrive`] (harel's retry of a `FAILED` execution) in
//! `recover.rs`.

mod purge;
mod recover;

pub use self::recover::{redrive, send, Sent, ENGINE_EVENT_KINDS};

pub use self::purge::{
    bundle, purge, purge_finished, ArchiveFn, PurgeFinished, PurgeOutcome, PurgeReport, PURGEABLE,
};

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::executions::model::{Effects, Execution, Status};
use crate::executions::store::ExecutionStore;
use crate::kit::validate::{check_id, check_time};

/// How many times a region child's write is retried on a conflict (harel's `_RETRIES`).
pub const RETRIES: usize = 5;

/// The statuses past which no control command changes an execution (harel's `_TERMINAL`).
pub const FINISHED: [Status; 2] = [Status::Cancelled, Status::Done];

/// One execution a command moved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StatusChange {
    /// The execution.
    pub id: String,
    /// Its status before the write.
    pub from: Status,
    /// Its status after it.
    pub to: Status,
    /// Its stored version after the write.
    pub version: i64,
}

/// What a status command did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ControlOutcome {
    /// The executions written, in the order they were written (the named one first, when it
    /// changed). Empty when the command was a silent no-op.
    pub changed: Vec<StatusChange>,
}

/// The lifecycle commands that move a status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Command {
    /// `RUNNING` to `SUSPENDED`.
    Suspend,
    /// `SUSPENDED` to `RUNNING`.
    Resume,
    /// Anything unfinished to `CANCELLED`.
    Terminate,
}

impl Command {
    /// The command's name (`"suspend"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Suspend => "suspend",
            Command::Resume => "resume",
            Command::Terminate => "terminate",
        }
    }
}

/// Pauses a `RUNNING` execution and its regions (harel's `suspend`). A no-op unless the
/// execution is `RUNNING`.
pub fn suspend<S: ExecutionStore + ?Sized>(
    store: &S,
    id: &str,
    expected_version: Option<i64>,
    now: f64,
) -> Result<ControlOutcome> {
    run(store, Command::Suspend, id, expected_version, now)
}

/// Unpauses a `SUSPENDED` execution and its regions (harel's `resume`). A no-op unless the
/// execution is `SUSPENDED`.
pub fn resume<S: ExecutionStore + ?Sized>(
    store: &S,
    id: &str,
    expected_version: Option<i64>,
    now: f64,
) -> Result<ControlOutcome> {
    run(store, Command::Resume, id, expected_version, now)
}

/// Forcefully cancels an execution and its regions (harel's `terminate`): no hooks run, the
/// backlog stays (the engine ignores it). A finished execution is left alone, but its
/// unfinished descendants are still cancelled.
pub fn terminate<S: ExecutionStore + ?Sized>(
    store: &S,
    id: &str,
    expected_version: Option<i64>,
    now: f64,
) -> Result<ControlOutcome> {
    run(store, Command::Terminate, id, expected_version, now)
}

/// Runs `command` on `id` (what [`suspend`], [`resume`] and [`terminate`] call).
pub fn run<S: ExecutionStore + ?Sized>(
    store: &S,
    command: Command,
    id: &str,
    expected_version: Option<i64>,
    now: f64,
) -> Result<ControlOutcome> {
    check_id("execution_id", id)?;
    check_time("now", now)?;
    let exe = load_expected(store, id, expected_version)?;
    let (required, target) = match command {
        Command::Suspend => (Some(Status::Running), Status::Suspended),
        Command::Resume => (Some(Status::Suspended), Status::Running),
        Command::Terminate => (None, Status::Cancelled),
    };
    let mut outcome = ControlOutcome::default();
    if required.is_some_and(|r| exe.status != r) {
        return Ok(outcome); // harel: "No-op if not RUNNING" / "not SUSPENDED"
    }
    if let Some(change) = write_status(store, exe, target, now)? {
        outcome.changed.push(change);
    }
    let mut seen = HashSet::from([id.to_owned()]);
    propagate(store, id, target, now, &mut outcome, &mut seen)?;
    Ok(outcome)
}

/// Loads `id`, refusing an unknown id and, when the caller names the version it acts on, a
/// stored version that moved past it.
pub(crate) fn load_expected<S: ExecutionStore + ?Sized>(
    store: &S,
    id: &str,
    expected_version: Option<i64>,
) -> Result<Execution> {
    let exe = store.load(id)?.ok_or_else(|| StoreError::NotFound {
        what: "execution",
        key: id.to_owned(),
    })?;
    match expected_version {
        Some(v) if v != exe.version => Err(StoreError::Conflict {
            id: id.to_owned(),
            expected: v,
            found: Some(exe.version),
        }),
        _ => Ok(exe),
    }
}

/// harel's `stamp`: the bookkeeping times of a write at `now`.
pub(crate) fn stamp(exe: &mut Execution, now: f64) {
    if exe.created_at.is_none() {
        exe.created_at = Some(now);
    }
    exe.updated_at = Some(now);
    if !FINISHED.contains(&exe.status) {
        exe.finished_at = None;
    } else if exe.finished_at.is_none() {
        exe.finished_at = Some(now);
    }
}

/// One CAS write of `exe` (as loaded) to `target`, unless it is finished. `None` when it was
/// left alone.
fn write_status<S: ExecutionStore + ?Sized>(
    store: &S,
    mut exe: Execution,
    target: Status,
    now: f64,
) -> Result<Option<StatusChange>> {
    if FINISHED.contains(&exe.status) {
        return Ok(None); // already finished: no control command changes it further
    }
    let from = exe.status;
    exe.status = target;
    stamp(&mut exe, now);
    store.commit(&mut exe, &Effects::new())?;
    Ok(Some(StatusChange {
        id: exe.id,
        from,
        to: target,
        version: exe.version,
    }))
}

/// A region child's write, reloaded and retried on a conflict (harel's
/// `_commit_status_flow`).
fn write_child<S: ExecutionStore + ?Sized>(
    store: &S,
    id: &str,
    target: Status,
    now: f64,
) -> Result<Option<StatusChange>> {
    let mut last = None;
    for _ in 0..RETRIES {
        let exe = store.load(id)?.ok_or_else(|| StoreError::NotFound {
            what: "execution",
            key: id.to_owned(),
        })?;
        match write_status(store, exe, target, now) {
            Err(e @ StoreError::Conflict { .. }) => last = Some(e),
            other => return other,
        }
    }
    Err(last.unwrap_or_else(|| StoreError::invalid("retries", "no attempt was made")))
}

/// harel's `_propagate_flow`: every stored child of `parent_id` gets `target` (unless
/// finished), and then its own children, whether or not it was written itself. `seen` guards
/// against a stored cycle of `children` (harel would recurse forever).
fn propagate<S: ExecutionStore + ?Sized>(
    store: &S,
    parent_id: &str,
    target: Status,
    now: f64,
    outcome: &mut ControlOutcome,
    seen: &mut HashSet<String>,
) -> Result<()> {
    let Some(parent) = store.load(parent_id)? else {
        return Ok(());
    };
    for child_id in parent.children.keys() {
        if store.load(child_id)?.is_none() || !seen.insert(child_id.clone()) {
            continue;
        }
        if let Some(change) = write_child(store, child_id, target, now)? {
            outcome.changed.push(change);
        }
        propagate(store, child_id, target, now, outcome, seen)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
