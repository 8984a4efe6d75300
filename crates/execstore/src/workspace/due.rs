//! `due_runs` as reflexr 0.1.1 defines it, over runs in memory: the in-memory storage's
//! answer, and the reference the behaviour suite checks every backend's against.

use super::model::{Run, RunStatus, WorkspaceRef};
use super::policy::RunPolicy;
use super::time::Timestamp;
use std::collections::HashMap;

/// A run with what `due_runs` needs to know of it.
pub struct Candidate<'a> {
    /// Its workspace.
    pub workspace: &'a WorkspaceRef,
    /// Its creation order within the workspace.
    pub position: i64,
    /// The run.
    pub run: &'a Run,
    /// When its run lease (`run:<id>`) lapses, if it has one.
    pub lease_expires_at: Option<Timestamp>,
}

/// The runs to attempt at `now` under `policy`, at most `limit`, ordered by due time, tenant,
/// workspace and creation.
pub fn due_runs<'a>(
    candidates: impl Iterator<Item = Candidate<'a>>,
    now: Timestamp,
    limit: usize,
    policy: &RunPolicy,
) -> Vec<(WorkspaceRef, Run)> {
    let all: Vec<Candidate<'a>> = candidates.collect();
    // The first run of each scope that holds it, in firing order (fired seq, then creation).
    let mut first: HashMap<(&WorkspaceRef, &str, &str), (i64, i64)> = HashMap::new();
    for c in &all {
        if policy.holds(c.run) {
            let key = (c.workspace, c.run.rule(), c.run.scope_key());
            let order = (c.run.fired_seq(), c.position);
            first
                .entry(key)
                .and_modify(|o| {
                    if order < *o {
                        *o = order
                    }
                })
                .or_insert(order);
        }
    }
    let mut due: Vec<&Candidate<'a>> = all
        .iter()
        .filter(|c| {
            let run = c.run;
            if policy.disabled.contains(run.rule()) {
                return false;
            }
            if run.status() == RunStatus::Running {
                return c.lease_expires_at.is_none_or(|at| at <= now);
            }
            if !run.status().is_waiting() || run.next_attempt_at() > now {
                return false;
            }
            if !policy.ordered.contains(run.rule()) {
                return true;
            }
            let key = (c.workspace, run.rule(), run.scope_key());
            first.get(&key) == Some(&(run.fired_seq(), c.position))
        })
        .collect();
    due.sort_by(|a, b| {
        (a.run.next_attempt_at(), a.workspace, a.position).cmp(&(
            b.run.next_attempt_at(),
            b.workspace,
            b.position,
        ))
    });
    due.into_iter()
        .take(limit)
        .map(|c| (c.workspace.clone(), c.run.clone()))
        .collect()
}
