//! The contract every backend implements.

use crate::error::Result;
use crate::model::{DueTimer, Effects, Execution, ExecutionPage, OutboxEntry, SpawnEntry, TraceStep};
use crate::query::ListQuery;
use crate::StoreError;

/// How many trace steps a store keeps per execution unless told otherwise (harel's
/// `DEFAULT_TRACE_MAX`).
pub const DEFAULT_TRACE_MAX: u32 = 200;

/// What a backend can do beyond the contract every backend meets; the behaviour suite runs
/// the checks that need a capability only where it is present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Capabilities {
    /// Committed data survives closing and reopening the store.
    pub durable: bool,
}

impl Capabilities {
    /// The capabilities of a store that keeps nothing across a restart.
    pub const EPHEMERAL: Capabilities = Capabilities { durable: false };
    /// The capabilities of a store that keeps what it committed.
    pub const DURABLE: Capabilities = Capabilities { durable: true };
}

/// One event step of a [`ExecutionStore::commit_batch`]: an execution and its step's effects.
/// On success the execution carries its new version.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchItem {
    /// The execution, at the version it was loaded at.
    pub execution: Execution,
    /// What the step defers.
    pub effects: Effects,
}

impl BatchItem {
    /// An item committing `execution` with `effects`.
    pub fn new(execution: Execution, effects: Effects) -> Self {
        BatchItem { execution, effects }
    }
}

/// The durable execution store: an execution's state and every effect of one event step,
/// written in one all-or-nothing transaction guarded by an optimistic version check, and the
/// reads the relay, the timer sweep and a monitor need.
///
/// Operations are synchronous and take `&self`: a store is shared between threads (a
/// worker and its relay, a monitor's request handlers) and serializes what it must itself.
/// An async facade runs these on a blocking pool; the wasm surface calls them directly.
///
/// Every operation checks its input before touching storage: bad input is
/// [`crate::StoreError::InvalidInput`] and changes nothing.
pub trait ExecutionStore: Send + Sync {
    /// What this backend can do.
    fn capabilities(&self) -> Capabilities;

    /// How many trace steps are kept per execution (`None`: all of them).
    fn trace_max(&self) -> Option<u32>;

    /// Writes `exe` at `exe.version + 1` iff the stored row is still at `exe.version` (a new
    /// execution is written from version 0). On success `exe.version` is the new version; on
    /// [`crate::StoreError::Conflict`] nothing is written and `exe.version` is unchanged.
    fn save(&self, exe: &mut Execution) -> Result<()> {
        self.commit(exe, &Effects::new()).map(|_| ())
    }

    /// The event step: the CAS write of `exe` and, in the same transaction, the outbox rows of
    /// `effects.emits`, the dedupe marker, the timer changes, the spawn intents and the trace
    /// step. All of it is applied or none of it. Returns the outbox seq of each emit, in order.
    fn commit(&self, exe: &mut Execution, effects: &Effects) -> Result<Vec<i64>>;

    /// Commits many event steps, of one execution or many, as [`ExecutionStore::commit`]
    /// would one by one, but durable together: one transaction and one sync where the backend
    /// can. Each item is CAS-checked and applied on its own: a `Conflict` or `InvalidInput`
    /// fails that item only and leaves no trace of it, and a later item of the same execution
    /// sees the earlier one's write. Returns each item's outbox seqs or error, in order; a
    /// committed item's execution carries its new version.
    ///
    /// An `Err` from the call itself means nothing of the batch was committed. (This default
    /// commits item by item, so it reports a backend failure per item instead.)
    fn commit_batch(&self, items: &mut [BatchItem]) -> Result<Vec<Result<Vec<i64>>>> {
        Ok(items
            .iter_mut()
            .map(|item| self.commit(&mut item.execution, &item.effects))
            .collect())
    }

    /// The stored execution, or `None`.
    fn load(&self, id: &str) -> Result<Option<Execution>>;

    /// The stored execution and whether it already processed `event_id`, read together
    /// (`(None, false)` when no execution is stored under `id`).
    fn load_for_event(&self, id: &str, event_id: &str) -> Result<(Option<Execution>, bool)>;

    /// Whether `execution_id` already processed `event_id`.
    fn is_processed(&self, execution_id: &str, event_id: &str) -> Result<bool>;

    /// One page of summaries, ordered by id.
    fn list_executions(&self, query: &ListQuery) -> Result<ExecutionPage>;

    /// Undelivered outbox entries with `seq > after`, oldest first, at most `limit`.
    fn pending_outbox(&self, after: Option<i64>, limit: usize) -> Result<Vec<OutboxEntry>>;

    /// Removes the delivered outbox entry `seq` in its own transaction.
    /// [`crate::StoreError::NotFound`] if there is none (already acked, or never made).
    fn ack_outbox(&self, seq: i64) -> Result<()>;

    /// Removes the delivered outbox entries `seqs` in one transaction where the backend can,
    /// and returns how many were removed: a seq already acked (or never made) is skipped, not
    /// an error, so a relay may re-ack a batch after a crash. A seq that cannot be one (below
    /// 1) is [`crate::StoreError::InvalidInput`] and nothing is removed.
    fn ack_outbox_many(&self, seqs: &[i64]) -> Result<usize> {
        for &seq in seqs {
            crate::validate::check_seq("seqs", seq)?;
        }
        let mut removed = 0;
        for &seq in seqs {
            match self.ack_outbox(seq) {
                Ok(()) => removed += 1,
                Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(removed)
    }

    /// Pending child creations with `seq > after`, oldest first, at most `limit`.
    fn pending_spawns(&self, after: Option<i64>, limit: usize) -> Result<Vec<SpawnEntry>>;

    /// Removes the done spawn intent `seq`. [`crate::StoreError::NotFound`] if there is none.
    fn ack_spawn(&self, seq: i64) -> Result<()>;

    /// Timers with `fire_at <= now`, soonest first (ties by execution id, then path), at most
    /// `limit`, starting strictly after `after` (the last timer of the previous page).
    fn due_timers(&self, now: f64, after: Option<&DueTimer>, limit: usize) -> Result<Vec<DueTimer>>;

    /// Removes the timer of `(execution_id, path)` only if it still fires at `fire_at`, so a
    /// timer re-armed after the sweep read it survives. Returns whether a timer was removed.
    fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> Result<bool>;

    /// The execution's kept trace steps, oldest first, each with its `index`.
    fn read_trace(&self, execution_id: &str) -> Result<Vec<TraceStep>>;

    /// Appends a trace step outside an event step and returns its index.
    /// [`crate::StoreError::NotFound`] if no execution is stored under `execution_id`.
    fn append_trace(&self, execution_id: &str, step: &TraceStep) -> Result<i64>;

    /// The ids of every stored execution whose id starts with `prefix`, ordered.
    fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>>;

    /// Deletes the execution and everything keyed by it (dedupe markers, trace, timers, outbox
    /// entries addressed to it, spawn intents it issued) iff it is still at
    /// `expected_version`, and returns `true`. Returns `false` and touches nothing if it moved
    /// on. If no execution is stored, leftover rows keyed by the id are removed and `false`
    /// is returned.
    fn purge(&self, execution_id: &str, expected_version: i64) -> Result<bool>;
}
