//! Group commit: concurrent callers' commits gathered into one batch, so that a backend
//! writes them in one transaction with one sync.
//!
//! [`GroupCommit`] wraps any [`ExecutionStore`]. Its `commit` (and so `save`) queues the
//! caller's step; if no batch is in flight the caller becomes the *leader*: it takes every
//! queued step (up to `max_batch`), hands them to the wrapped store's
//! [`ExecutionStore::commit_batch`] in one call, publishes each step's outcome to the
//! caller waiting for it, and returns. Callers that arrive while a batch is in flight wait
//! and are committed together by the next leader. A leader whose step is the only one queued
//! commits it with the wrapped store's plain [`ExecutionStore::commit`] (same outcome, no
//! copy of the step), so an uncontended caller pays almost nothing. No background thread:
//! the lone caller of a single-threaded program (wasm) is always the leader and never waits.
//!
//! The durability promise is the wrapped store's: a call returns only after the batch that
//! holds its step has been committed, and its outcome is exactly what a plain
//! [`ExecutionStore::commit`] would have given it (its outbox seqs and its new version, or
//! its own `Conflict` or `InvalidInput`). A failure of the whole batch (a backend error) is
//! returned to every caller of that batch.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use crate::error::{Result, StoreError};
use crate::executions::model::{
    DueTimer, Effects, Execution, ExecutionPage, OutboxEntry, SpawnEntry, TraceStep,
};
use crate::executions::query::ListQuery;
use crate::executions::store::{BatchItem, Capabilities, ExecutionStore, Work};

/// How many steps one batch takes at most unless told otherwise.
pub const DEFAULT_MAX_BATCH: usize = 256;

/// An [`ExecutionStore`] that commits concurrent callers' steps together: one
/// [`ExecutionStore::commit_batch`] of the wrapped store (one transaction, one sync) for all
/// the steps queued while the previous batch was being committed. Every other operation,
/// `commit_batch` included, goes straight to the wrapped store.
///
/// The wrapped store must not call back into this wrapper from its `commit_batch`.
pub struct GroupCommit<S: ExecutionStore> {
    inner: S,
    max_batch: usize,
    state: Mutex<State>,
}

/// What a [`GroupCommit`] did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupCommitStats {
    /// Batches committed: calls of the wrapped store's `commit_batch`, and of its `commit`
    /// for a lone step (a batch of one).
    pub batches: u64,
    /// Steps those batches carried, whatever each one's outcome.
    pub items: u64,
    /// The most steps one batch carried.
    pub largest_batch: u64,
}

impl GroupCommitStats {
    /// Steps per batch on average (0 before the first batch).
    pub fn mean_batch_size(&self) -> f64 {
        if self.batches == 0 {
            0.0
        } else {
            self.items as f64 / self.batches as f64
        }
    }
}

/// A step's outcome as published to its caller: the outbox seqs and the new version.
type Outcome = Result<(Vec<i64>, i64)>;

/// A caller's step waiting for a leader, and how to wake the caller.
struct Queued {
    ticket: u64,
    item: BatchItem,
    wake: Arc<Condvar>,
}

#[derive(Default)]
struct State {
    next_ticket: u64,
    /// Steps waiting for a leader, oldest first.
    queue: VecDeque<Queued>,
    /// Whether a leader is committing a batch now.
    leading: bool,
    /// Outcomes not yet collected by their callers.
    done: HashMap<u64, Outcome>,
    stats: GroupCommitStats,
}

impl<S: ExecutionStore> GroupCommit<S> {
    /// Wraps `inner`, taking at most [`DEFAULT_MAX_BATCH`] (256) steps per batch.
    pub fn new(inner: S) -> Self {
        Self::with_max_batch(inner, DEFAULT_MAX_BATCH)
    }

    /// Wraps `inner`, taking at most `max_batch` steps per batch (0 is taken as 1).
    pub fn with_max_batch(inner: S, max_batch: usize) -> Self {
        GroupCommit {
            inner,
            max_batch: max_batch.max(1),
            state: Mutex::new(State::default()),
        }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Unwraps the store.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// How many batches were committed and how many steps they carried.
    pub fn stats(&self) -> GroupCommitStats {
        self.lock().stats
    }

    /// The state. Nothing panics while holding it, but a poisoned lock is taken over rather
    /// than spreading one caller's panic to every other.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Commits one batch as its leader and publishes every step's outcome, even if the
    /// wrapped store panics (then the others get an error and the panic goes on here).
    fn lead(&self, leader: u64, batch: Vec<Queued>) {
        let mut tickets = Vec::with_capacity(batch.len());
        let mut wakes = Vec::with_capacity(batch.len());
        let mut items = Vec::with_capacity(batch.len());
        for queued in batch {
            tickets.push(queued.ticket);
            wakes.push(queued.wake);
            items.push(queued.item);
        }
        let mut batch = Batch {
            group: self,
            leader,
            tickets,
            wakes,
            items,
            published: false,
        };
        let outcome = self.inner.commit_batch(&mut batch.items);
        batch.publish(outcome);
    }

    /// Ends the batch in flight (its outcomes already published): counts it (`size`, if it
    /// was committed), lets the next caller lead and wakes the oldest queued one to do so.
    fn end_batch(&self, mut state: MutexGuard<'_, State>, size: Option<u64>) {
        if let Some(n) = size {
            state.stats.batches += 1;
            state.stats.items += n;
            state.stats.largest_batch = state.stats.largest_batch.max(n);
        }
        state.leading = false;
        let next = state.queue.front().map(|queued| Arc::clone(&queued.wake));
        drop(state);
        if let Some(next) = next {
            next.notify_one();
        }
    }
}

/// A batch in the hands of its leader. Dropped unpublished (the wrapped store panicked), it
/// still publishes, so no caller waits forever and the next caller can lead.
struct Batch<'a, S: ExecutionStore> {
    group: &'a GroupCommit<S>,
    leader: u64,
    tickets: Vec<u64>,
    wakes: Vec<Arc<Condvar>>,
    items: Vec<BatchItem>,
    published: bool,
}

impl<S: ExecutionStore> Batch<'_, S> {
    fn publish(&mut self, outcome: Result<Vec<Result<Vec<i64>>>>) {
        let outcomes: Vec<Outcome> = match outcome {
            Ok(results) => {
                let mut results = results.into_iter();
                self.items
                    .iter()
                    .map(|item| match results.next() {
                        Some(Ok(seqs)) => Ok((seqs, item.execution.version)),
                        Some(Err(e)) => Err(e),
                        None => Err(StoreError::Backend {
                            message: "the store's commit_batch returned no result for this step".into(),
                            retryable: false,
                            source: None,
                        }),
                    })
                    .collect()
            }
            Err(e) => {
                // The original error (with its source) goes to the leader if the batch holds
                // its step, else to the first; the others get an equivalent without source.
                let keep = self.tickets.iter().position(|t| *t == self.leader).unwrap_or(0);
                let mut outcomes: Vec<Outcome> = self.tickets.iter().map(|_| Err(duplicate(&e))).collect();
                if let Some(slot) = outcomes.get_mut(keep) {
                    *slot = Err(e);
                }
                outcomes
            }
        };
        self.finish(outcomes, true);
    }

    /// Hands every outcome to its caller, ends the batch and wakes the batch's callers and
    /// the oldest queued caller, who leads the next batch.
    fn finish(&mut self, outcomes: Vec<Outcome>, committed: bool) {
        self.published = true;
        let mut state = self.group.lock();
        for (ticket, outcome) in self.tickets.iter().zip(outcomes) {
            state.done.insert(*ticket, outcome);
        }
        let size = committed.then_some(self.tickets.len() as u64);
        self.group.end_batch(state, size);
        for wake in &self.wakes {
            wake.notify_one();
        }
    }
}

/// A lone caller committing its step directly (no batch was in flight and none was queued).
/// Dropped unfinished (the wrapped store panicked), it still ends the batch, so the next
/// caller can lead.
struct Solo<'a, S: ExecutionStore> {
    group: &'a GroupCommit<S>,
    finished: bool,
}

impl<S: ExecutionStore> Solo<'_, S> {
    fn finish(mut self) {
        self.finished = true;
        self.group.end_batch(self.group.lock(), Some(1));
    }
}

impl<S: ExecutionStore> Drop for Solo<'_, S> {
    fn drop(&mut self) {
        if !self.finished {
            self.group.end_batch(self.group.lock(), None);
        }
    }
}

impl<S: ExecutionStore> Drop for Batch<'_, S> {
    fn drop(&mut self) {
        if !self.published {
            let outcomes = self
                .tickets
                .iter()
                .map(|_| {
                    Err(StoreError::Backend {
                        message: "the store panicked while committing this step's batch; \
                                  whether it was committed is unknown"
                            .into(),
                        retryable: false,
                        source: None,
                    })
                })
                .collect();
            self.finish(outcomes, false);
        }
    }
}

/// An equivalent of `e` for another caller (`StoreError` is not `Clone`: its backend source
/// is dropped, its message kept).
fn duplicate(e: &StoreError) -> StoreError {
    match e {
        StoreError::Conflict { id, expected, found } => StoreError::Conflict {
            id: id.clone(),
            expected: *expected,
            found: *found,
        },
        StoreError::InvalidInput { field, reason } => StoreError::InvalidInput {
            field: field.clone(),
            reason: reason.clone(),
        },
        StoreError::NotFound { what, key } => StoreError::NotFound {
            what,
            key: key.clone(),
        },
        StoreError::AlreadyExists { what, key } => StoreError::AlreadyExists {
            what,
            key: key.clone(),
        },
        StoreError::Corrupt { what, reason } => StoreError::Corrupt {
            what: what.clone(),
            reason: reason.clone(),
        },
        StoreError::Backend {
            message, retryable, ..
        } => StoreError::Backend {
            message: message.clone(),
            retryable: *retryable,
            source: None,
        },
    }
}

impl<S: ExecutionStore + fmt::Debug> fmt::Debug for GroupCommit<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupCommit")
            .field("inner", &self.inner)
            .field("max_batch", &self.max_batch)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

// Every method written out: a default method of the trait would bypass the wrapped store's
// own (a full scan instead of its cheap read, no claims), so a new one must fail clippy here.
#[deny(clippy::missing_trait_methods)]
impl<S: ExecutionStore> ExecutionStore for GroupCommit<S> {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn trace_max(&self) -> Option<u32> {
        self.inner.trace_max()
    }

    /// A commit without effects, grouped as [`GroupCommit::commit`] groups it.
    fn save(&self, exe: &mut Execution) -> Result<()> {
        self.commit(exe, &Effects::new()).map(|_| ())
    }

    /// Queues the step and returns once the batch holding it is committed (leading that
    /// batch if no other caller is committing one).
    fn commit(&self, exe: &mut Execution, effects: &Effects) -> Result<Vec<i64>> {
        let mut state = self.lock();
        if !state.leading && state.queue.is_empty() {
            // Nobody else is committing: lead a batch of this one step, committed in place
            // (no copy of the step). Callers arriving meanwhile queue for the next batch.
            state.leading = true;
            drop(state);
            let solo = Solo {
                group: self,
                finished: false,
            };
            let outcome = self.inner.commit(exe, effects);
            solo.finish();
            return outcome;
        }
        drop(state);
        let item = BatchItem::new(exe.clone(), effects.clone());
        let wake = Arc::new(Condvar::new());
        let mut state = self.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.queue.push_back(Queued {
            ticket,
            item,
            wake: Arc::clone(&wake),
        });
        loop {
            if let Some(outcome) = state.done.remove(&ticket) {
                drop(state);
                let (seqs, version) = outcome?;
                exe.version = version;
                return Ok(seqs);
            }
            if !state.leading {
                // Not published and no batch in flight: the step is still queued (a batch's
                // outcomes are published before `leading` is cleared), so this batch is not
                // empty. It may not hold this step if more than `max_batch` are queued ahead.
                state.leading = true;
                let take = state.queue.len().min(self.max_batch);
                let batch: Vec<Queued> = state.queue.drain(..take).collect();
                drop(state);
                self.lead(ticket, batch);
                state = self.lock();
                continue;
            }
            // A batch is in flight. Its end wakes the callers it held and the oldest queued
            // one; every wait re-checks both conditions, so a spurious or early wake is
            // harmless and no wake is needed that is not sent.
            state = wake.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn commit_batch(&self, items: &mut [BatchItem]) -> Result<Vec<Result<Vec<i64>>>> {
        self.inner.commit_batch(items)
    }

    fn load(&self, id: &str) -> Result<Option<Execution>> {
        self.inner.load(id)
    }

    fn load_for_event(&self, id: &str, event_id: &str) -> Result<(Option<Execution>, bool)> {
        self.inner.load_for_event(id, event_id)
    }

    fn is_processed(&self, execution_id: &str, event_id: &str) -> Result<bool> {
        self.inner.is_processed(execution_id, event_id)
    }

    fn list_executions(&self, query: &ListQuery) -> Result<ExecutionPage> {
        self.inner.list_executions(query)
    }

    fn attributes(&self) -> Result<Vec<crate::executions::SearchAttribute>> {
        self.inner.attributes()
    }

    fn declare_attribute(&self, path: &str) -> Result<crate::executions::SearchAttribute> {
        self.inner.declare_attribute(path)
    }

    fn drop_attribute(&self, path: &str) -> Result<bool> {
        self.inner.drop_attribute(path)
    }

    fn put_definition(&self, doc: &crate::executions::DefinitionDoc) -> Result<bool> {
        self.inner.put_definition(doc)
    }

    fn get_definition(&self, id: &str, fqn: &str) -> Result<Option<crate::executions::DefinitionDoc>> {
        self.inner.get_definition(id, fqn)
    }

    fn pending_outbox(&self, after: Option<i64>, limit: usize) -> Result<Vec<OutboxEntry>> {
        self.inner.pending_outbox(after, limit)
    }

    fn enqueue_outbox(&self, target_id: &str, event: &crate::executions::Event) -> Result<i64> {
        self.inner.enqueue_outbox(target_id, event)
    }

    fn ack_outbox(&self, seq: i64) -> Result<()> {
        self.inner.ack_outbox(seq)
    }

    fn ack_outbox_many(&self, seqs: &[i64]) -> Result<usize> {
        self.inner.ack_outbox_many(seqs)
    }

    fn pending_spawns(&self, after: Option<i64>, limit: usize) -> Result<Vec<SpawnEntry>> {
        self.inner.pending_spawns(after, limit)
    }

    fn ack_spawn(&self, seq: i64) -> Result<()> {
        self.inner.ack_spawn(seq)
    }

    fn due_timers(&self, now: f64, after: Option<&DueTimer>, limit: usize) -> Result<Vec<DueTimer>> {
        self.inner.due_timers(now, after, limit)
    }

    fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> Result<bool> {
        self.inner.delete_timer(execution_id, path, fire_at)
    }

    fn read_trace(&self, execution_id: &str) -> Result<Vec<TraceStep>> {
        self.inner.read_trace(execution_id)
    }

    fn append_trace(&self, execution_id: &str, step: &TraceStep) -> Result<i64> {
        self.inner.append_trace(execution_id, step)
    }

    fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        self.inner.ids_with_prefix(prefix)
    }

    fn purge(&self, execution_id: &str, expected_version: i64) -> Result<bool> {
        self.inner.purge(execution_id, expected_version)
    }

    // The claims and wake-ups are the inner store's: its defaults would lose them.
    fn relay_outbox(
        &self,
        limit: usize,
        deliver: &mut dyn FnMut(&[OutboxEntry]) -> Vec<i64>,
    ) -> Result<usize> {
        self.inner.relay_outbox(limit, deliver)
    }

    fn relay_spawns(&self, limit: usize, create: &mut dyn FnMut(&[SpawnEntry]) -> Vec<i64>) -> Result<usize> {
        self.inner.relay_spawns(limit, create)
    }

    fn sweep_timers(&self, now: f64, limit: usize, fire: &mut dyn FnMut(&[DueTimer])) -> Result<usize> {
        self.inner.sweep_timers(now, limit, fire)
    }

    fn wait_for_work(&self, work: Work, timeout: std::time::Duration) -> Result<bool> {
        self.inner.wait_for_work(work, timeout)
    }

    // The monitor's reads: the inner store's cheap ones, not the defaults' scans.
    fn count_by_status(&self, query: &ListQuery) -> Result<Vec<(crate::executions::Status, u64)>> {
        self.inner.count_by_status(query)
    }

    fn graph_figures(&self, definition: &str, max_traces: usize) -> Result<crate::executions::GraphFigures> {
        self.inner.graph_figures(definition, max_traces)
    }

    fn change_token(&self) -> Result<String> {
        self.inner.change_token()
    }

    fn unreadable_executions(&self, limit: usize) -> Result<Vec<crate::executions::UnreadableRow>> {
        self.inner.unreadable_executions(limit)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
