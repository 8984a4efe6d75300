//! [`AsyncTransaction`]: a [`WorkspaceTx`] driven from async code, rolled back when its owner
//! goes away.
//!
//! The backend's transaction sits in a slot shared by the async handle and the blocking
//! calls. Every call locks the slot on the blocking pool, so calls run one after another and
//! a rollback queued by a cancellation waits for the call in flight to end. A cancellation
//! first raises `abandoned` (seen by any call that has not started yet, which then rolls back
//! instead of running) and then, unless the slot can be settled at once without I/O, queues a
//! rollback on the blocking pool. Dropping the backend's transaction is its rollback, so that
//! too happens on the blocking pool, never on an async worker.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use execstore::workspace::{
    Entry, Envelope, EvaluationError, RuleProgress, Run, ScopeState, StoredRule, Timestamp, WorkspaceRef,
    WorkspaceStorage, WorkspaceTx,
};
use execstore::{Result, StoreError};
use tokio::runtime::Handle;

/// Where a transaction is in its life.
enum Slot {
    /// Its `begin` is under way.
    Beginning,
    /// Begun: the backend's transaction.
    Open(Box<dyn WorkspaceTx>),
    /// Committed (or its commit failed, which rolled it back).
    Committed,
    /// Rolled back; why, for the error of a later call.
    RolledBack(&'static str),
}

pub(crate) struct Shared {
    slot: Mutex<Slot>,
    abandoned: AtomicBool,
}

const CANCELLED: &str = "a call on it was cancelled or its owner dropped it";
const ROLLED_BACK: &str = "it was rolled back";

fn ended(why: &str) -> StoreError {
    crate::own_error(&format!("the workspace transaction has ended: {why}"), false)
}

impl Shared {
    fn new() -> Arc<Self> {
        Arc::new(Shared {
            slot: Mutex::new(Slot::Beginning),
            abandoned: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Slot> {
        // A call that panicked leaves the slot as it was; the panic's own unwinding abandons
        // the transaction, so the slot stays usable for that rollback.
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn is_abandoned(&self) -> bool {
        self.abandoned.load(Ordering::Acquire)
    }

    /// Ends the transaction, if open, as rolled back. Blocking: run on the blocking pool.
    fn roll_back(&self, why: &'static str) {
        let taken = {
            let mut slot = self.lock();
            match &*slot {
                Slot::Beginning | Slot::Open(_) => std::mem::replace(&mut *slot, Slot::RolledBack(why)),
                Slot::Committed | Slot::RolledBack(_) => return,
            }
        };
        // Dropped outside the lock: the backend's rollback.
        drop(taken);
    }

    /// The owner is gone: no call that has not started will run, and the transaction is rolled
    /// back after the call in flight. Only the first abandonment acts.
    fn abandon(self: &Arc<Self>, handle: &Handle) {
        if self.abandoned.swap(true, Ordering::AcqRel) {
            return;
        }
        match self.slot.try_lock() {
            Ok(mut slot) => match &*slot {
                Slot::Open(_) => {}
                // The blocking begin finds its caller gone and rolls back itself.
                Slot::Beginning => {
                    *slot = Slot::RolledBack(CANCELLED);
                    return;
                }
                Slot::Committed | Slot::RolledBack(_) => return,
            },
            // A call is in flight (or one panicked): roll back after it.
            Err(TryLockError::WouldBlock) | Err(TryLockError::Poisoned(_)) => {}
        }
        let shared = self.clone();
        // If the runtime is shutting down the task is dropped unrun, and with it this handle:
        // the last handle's drop rolls the transaction back wherever it happens.
        drop(handle.spawn_blocking(move || shared.roll_back(CANCELLED)));
    }
}

/// Abandons a transaction when dropped, unless disarmed: the guard of an in-flight future.
struct Abandon<'a> {
    shared: &'a Arc<Shared>,
    handle: &'a Handle,
    armed: bool,
}

impl<'a> Abandon<'a> {
    fn new(shared: &'a Arc<Shared>, handle: &'a Handle) -> Self {
        Abandon {
            shared,
            handle,
            armed: true,
        }
    }

    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.shared.abandon(self.handle);
        }
    }
}

/// Begins a transaction on the blocking pool (waiting there for the workspace). A caller that
/// went away meanwhile finds the slot no longer `Beginning`, and the new transaction is
/// rolled back at once.
pub(crate) async fn begin(
    storage: Arc<dyn WorkspaceStorage>,
    workspace: &WorkspaceRef,
) -> Result<AsyncTransaction> {
    let handle = crate::runtime()?;
    let shared = Shared::new();
    let guard = Abandon::new(&shared, &handle);
    let ws = workspace.clone();
    let in_task = shared.clone();
    let begun = crate::join(handle.spawn_blocking(move || {
        let tx = storage.begin(&ws)?;
        let mut slot = in_task.lock();
        if matches!(*slot, Slot::Beginning) && !in_task.is_abandoned() {
            *slot = Slot::Open(tx);
            return Ok(());
        }
        drop(slot);
        drop(tx);
        Err(ended(CANCELLED))
    }))
    .await;
    guard.disarm();
    begun?;
    Ok(AsyncTransaction {
        shared,
        handle,
        workspace: workspace.clone(),
        owner: true,
        done: false,
    })
}

/// A workspace transaction driven from async code: [`WorkspaceTx`]'s operations as
/// `async fn`s, each on the blocking pool, one at a time.
///
/// From its begin until it ends, no other transaction on its workspace runs. It ends with
/// [`AsyncTransaction::commit`] or [`AsyncTransaction::rollback`]; dropped before either, or
/// once a future of one of its calls is dropped before it completed, it is **rolled back**
/// as soon as its in-flight call (if any) has finished, and its workspace is free again. A
/// call after that fails with a [`StoreError::Backend`] and changes nothing. A call that
/// returns a backend error leaves it usable, as [`WorkspaceTx`] says.
///
/// A cancelled [`AsyncTransaction::commit`] may have committed if its blocking commit had
/// begun: see the crate's "Cancellation".
pub struct AsyncTransaction {
    shared: Arc<Shared>,
    handle: Handle,
    workspace: WorkspaceRef,
    // Whether dropping this handle rolls back (false for the one lent to a closure).
    owner: bool,
    done: bool,
}

impl Drop for AsyncTransaction {
    fn drop(&mut self) {
        if self.owner && !self.done {
            self.shared.abandon(&self.handle);
        }
    }
}

impl std::fmt::Debug for AsyncTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncTransaction")
            .field("workspace", &self.workspace)
            .field("abandoned", &self.shared.is_abandoned())
            .finish_non_exhaustive()
    }
}

impl AsyncTransaction {
    /// The workspace it holds.
    pub fn workspace(&self) -> &WorkspaceRef {
        &self.workspace
    }

    /// A handle to the same transaction whose drop does not end it (the closure form's).
    pub(crate) fn lend(&self) -> AsyncTransaction {
        AsyncTransaction {
            shared: self.shared.clone(),
            handle: self.handle.clone(),
            workspace: self.workspace.clone(),
            owner: false,
            done: false,
        }
    }

    /// Runs `f` on the open transaction, on the blocking pool.
    async fn call<T, F>(&mut self, f: F) -> Result<T>
    where
        F: FnOnce(&mut dyn WorkspaceTx) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        if self.shared.is_abandoned() {
            return Err(ended(CANCELLED));
        }
        let shared = self.shared.clone();
        let guard = Abandon::new(&self.shared, &self.handle);
        let result = crate::join(self.handle.spawn_blocking(move || {
            let mut slot = shared.lock();
            if shared.is_abandoned() {
                drop(slot);
                shared.roll_back(CANCELLED);
                return Err(ended(CANCELLED));
            }
            match &mut *slot {
                Slot::Open(tx) => f(&mut **tx),
                Slot::Beginning | Slot::Committed => Err(ended("it was committed")),
                Slot::RolledBack(why) => Err(ended(why)),
            }
        }))
        .await;
        guard.disarm();
        result
    }

    /// Makes every write of the transaction durable and visible at once, and frees the
    /// workspace. Cancelled before its blocking commit began, it rolls back instead; after,
    /// the commit completes unobserved.
    pub async fn commit(mut self) -> Result<()> {
        if self.shared.is_abandoned() {
            return Err(ended(CANCELLED));
        }
        let shared = self.shared.clone();
        // Dropped mid-await, `self` abandons the transaction (see `Drop`).
        let result = crate::join(self.handle.spawn_blocking(move || {
            let mut slot = shared.lock();
            if shared.is_abandoned() {
                drop(slot);
                shared.roll_back(CANCELLED);
                return Err(ended(CANCELLED));
            }
            match std::mem::replace(&mut *slot, Slot::Committed) {
                Slot::Open(tx) => tx.commit(),
                // Only the closure form's commit finds these: the closure ended the
                // transaction itself, through the handle it was lent.
                Slot::Committed => Ok(()),
                Slot::RolledBack(ROLLED_BACK) => {
                    *slot = Slot::RolledBack(ROLLED_BACK);
                    Ok(())
                }
                Slot::RolledBack(why) => {
                    *slot = Slot::RolledBack(why);
                    Err(ended(why))
                }
                Slot::Beginning => {
                    *slot = Slot::RolledBack(CANCELLED);
                    Err(ended(CANCELLED))
                }
            }
        }))
        .await;
        self.done = true;
        result
    }

    /// Rolls the transaction back and frees the workspace, returning once both are done
    /// (dropping the transaction does the same without waiting).
    pub async fn rollback(mut self) -> Result<()> {
        let shared = self.shared.clone();
        let result = crate::join(self.handle.spawn_blocking(move || {
            shared.roll_back(ROLLED_BACK);
            Ok(())
        }))
        .await;
        self.done = true;
        result
    }

    /// [`WorkspaceTx::append`]: appends events with the next seqs.
    pub async fn append(&mut self, entries: &[Entry]) -> Result<Vec<Envelope>> {
        let entries = entries.to_vec();
        self.call(move |tx| tx.append(&entries)).await
    }

    /// [`WorkspaceTx::envelope`].
    pub async fn envelope(&mut self, event_id: &str) -> Result<Option<Envelope>> {
        let id = event_id.to_owned();
        self.call(move |tx| tx.envelope(&id)).await
    }

    /// [`WorkspaceTx::head_seq`].
    pub async fn head_seq(&mut self) -> Result<i64> {
        self.call(|tx| tx.head_seq()).await
    }

    /// [`WorkspaceTx::read`].
    pub async fn read(&mut self, after_seq: i64, limit: usize) -> Result<Vec<Envelope>> {
        self.call(move |tx| tx.read(after_seq, limit)).await
    }

    /// [`WorkspaceTx::progress`].
    pub async fn progress(&mut self, rule: &str) -> Result<Option<RuleProgress>> {
        let rule = rule.to_owned();
        self.call(move |tx| tx.progress(&rule)).await
    }

    /// [`WorkspaceTx::save_progress`].
    pub async fn save_progress(&mut self, rule: &str, progress: &RuleProgress) -> Result<()> {
        let (rule, progress) = (rule.to_owned(), progress.clone());
        self.call(move |tx| tx.save_progress(&rule, &progress)).await
    }

    /// [`WorkspaceTx::states`].
    pub async fn states(&mut self, rule: &str, keys: &[String]) -> Result<Vec<(String, ScopeState)>> {
        let (rule, keys) = (rule.to_owned(), keys.to_vec());
        self.call(move |tx| tx.states(&rule, &keys)).await
    }

    /// [`WorkspaceTx::save_states`].
    pub async fn save_states(&mut self, rule: &str, states: &[(String, ScopeState)]) -> Result<()> {
        let (rule, states) = (rule.to_owned(), states.to_vec());
        self.call(move |tx| tx.save_states(&rule, &states)).await
    }

    /// [`WorkspaceTx::clear_states`].
    pub async fn clear_states(&mut self, rule: &str) -> Result<()> {
        let rule = rule.to_owned();
        self.call(move |tx| tx.clear_states(&rule)).await
    }

    /// [`WorkspaceTx::run`].
    pub async fn run(&mut self, run_id: &str) -> Result<Option<Run>> {
        let id = run_id.to_owned();
        self.call(move |tx| tx.run(&id)).await
    }

    /// [`WorkspaceTx::save_runs`].
    pub async fn save_runs(&mut self, runs: &[Run]) -> Result<()> {
        let runs = runs.to_vec();
        self.call(move |tx| tx.save_runs(&runs)).await
    }

    /// [`WorkspaceTx::scope_runs`].
    pub async fn scope_runs(&mut self, rule: &str, scope_key: &str) -> Result<Vec<Run>> {
        let (rule, key) = (rule.to_owned(), scope_key.to_owned());
        self.call(move |tx| tx.scope_runs(&rule, &key)).await
    }

    /// [`WorkspaceTx::dead_letter`].
    pub async fn dead_letter(&mut self, errors: &[EvaluationError]) -> Result<()> {
        let errors = errors.to_vec();
        self.call(move |tx| tx.dead_letter(&errors)).await
    }

    /// [`WorkspaceTx::schedule`].
    pub async fn schedule(&mut self, name: &str) -> Result<Option<Timestamp>> {
        let name = name.to_owned();
        self.call(move |tx| tx.schedule(&name)).await
    }

    /// [`WorkspaceTx::save_schedule`].
    pub async fn save_schedule(&mut self, name: &str, at: Timestamp) -> Result<()> {
        let name = name.to_owned();
        self.call(move |tx| tx.save_schedule(&name, at)).await
    }

    /// [`WorkspaceTx::stored_rule`].
    pub async fn stored_rule(&mut self, name: &str) -> Result<Option<StoredRule>> {
        let name = name.to_owned();
        self.call(move |tx| tx.stored_rule(&name)).await
    }

    /// [`WorkspaceTx::stored_rules`].
    pub async fn stored_rules(&mut self) -> Result<Vec<StoredRule>> {
        self.call(|tx| tx.stored_rules()).await
    }

    /// [`WorkspaceTx::save_stored_rule`].
    pub async fn save_stored_rule(&mut self, stored: &StoredRule) -> Result<()> {
        let stored = stored.clone();
        self.call(move |tx| tx.save_stored_rule(&stored)).await
    }
}

/// The closure form: begins, runs `f` with the transaction, commits if it returned `Ok` and
/// rolls back if it returned `Err` (or if this future is dropped). The transaction `f` gets
/// does not end when `f` drops it; `f` may still commit or roll it back itself.
pub(crate) async fn run<T, F, Fut>(
    storage: Arc<dyn WorkspaceStorage>,
    workspace: &WorkspaceRef,
    f: F,
) -> Result<T>
where
    F: FnOnce(AsyncTransaction) -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let tx = begin(storage, workspace).await?;
    match f(tx.lend()).await {
        Ok(value) => tx.commit().await.map(|()| value),
        Err(e) => {
            // The closure's error is the one to report, not a failed rollback's.
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}
