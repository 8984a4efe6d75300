//! [`AsyncExecutionStore`]: every [`ExecutionStore`] operation as an `async fn`.

use std::sync::Arc;
use std::time::Duration;

use execstore::{
    executions::{
        control::{self, Sent},
        BatchItem, Capabilities, DueTimer, Event, ExecutionPage, ListQuery, OutboxEntry, SearchAttribute,
        SpawnEntry, Status, TraceStep, Work,
    },
    Effects, Execution, ExecutionStore, Result,
};

/// An [`ExecutionStore`] whose every operation is an `async fn` run on tokio's blocking pool.
///
/// Arguments are copied into the call, which runs to its end even if its future is dropped
/// (see the crate's "Cancellation"). Cheap to clone: clones share the store. `S` is any
/// backend, or `dyn ExecutionStore` (the default) to pick one at run time.
pub struct AsyncExecutionStore<S: ?Sized = dyn ExecutionStore> {
    store: Arc<S>,
}

impl<S: ?Sized> Clone for AsyncExecutionStore<S> {
    fn clone(&self) -> Self {
        AsyncExecutionStore {
            store: self.store.clone(),
        }
    }
}

impl<S: ExecutionStore + 'static> AsyncExecutionStore<S> {
    /// The async face of `store`.
    pub fn new(store: S) -> Self {
        AsyncExecutionStore {
            store: Arc::new(store),
        }
    }
}

impl AsyncExecutionStore {
    /// The async face of a store chosen at run time.
    pub fn from_dyn(store: Arc<dyn ExecutionStore>) -> Self {
        AsyncExecutionStore { store }
    }
}

impl<S: ExecutionStore + ?Sized + 'static> AsyncExecutionStore<S> {
    /// The async face of a shared store.
    pub fn from_arc(store: Arc<S>) -> Self {
        AsyncExecutionStore { store }
    }

    /// The synchronous store underneath (for a call that must not go through the pool).
    pub fn store(&self) -> &Arc<S> {
        &self.store
    }

    async fn call<T, F>(&self, f: F) -> Result<T>
    where
        F: FnOnce(&S) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let store = self.store.clone();
        crate::blocking(move || f(&store)).await
    }

    /// [`ExecutionStore::capabilities`].
    pub async fn capabilities(&self) -> Result<Capabilities> {
        self.call(|s| Ok(s.capabilities())).await
    }

    /// [`ExecutionStore::trace_max`].
    pub async fn trace_max(&self) -> Result<Option<u32>> {
        self.call(|s| Ok(s.trace_max())).await
    }

    /// [`ExecutionStore::save`]: the CAS write of `exe`. `exe` gets its new version only when
    /// the call completes; a cancelled save may still have written (the next save of the old
    /// version is then a conflict).
    pub async fn save(&self, exe: &mut Execution) -> Result<()> {
        self.commit(exe, Effects::new()).await.map(|_| ())
    }

    /// [`ExecutionStore::commit`]: the event step, all of it or none of it. The call works on
    /// a copy of `exe` and writes it back when it completes (with the new version on
    /// success); a cancelled commit leaves `exe` as it was, whether or not it committed.
    pub async fn commit(&self, exe: &mut Execution, effects: Effects) -> Result<Vec<i64>> {
        let mut copy = exe.clone();
        let (copy, result) = self
            .call(move |s| {
                let result = s.commit(&mut copy, &effects);
                Ok((copy, result))
            })
            .await?;
        *exe = copy;
        result
    }

    /// [`ExecutionStore::commit_batch`]: many event steps durable together. The call works
    /// on a copy of `items` and writes each back when it completes.
    pub async fn commit_batch(&self, items: &mut [BatchItem]) -> Result<Vec<Result<Vec<i64>>>> {
        let mut copy = items.to_vec();
        let (copy, result) = self
            .call(move |s| {
                let result = s.commit_batch(&mut copy);
                Ok((copy, result))
            })
            .await?;
        for (item, done) in items.iter_mut().zip(copy) {
            *item = done;
        }
        result
    }

    /// [`ExecutionStore::load`].
    pub async fn load(&self, id: &str) -> Result<Option<Execution>> {
        let id = id.to_owned();
        self.call(move |s| s.load(&id)).await
    }

    /// [`ExecutionStore::load_for_event`].
    pub async fn load_for_event(&self, id: &str, event_id: &str) -> Result<(Option<Execution>, bool)> {
        let (id, event_id) = (id.to_owned(), event_id.to_owned());
        self.call(move |s| s.load_for_event(&id, &event_id)).await
    }

    /// [`ExecutionStore::is_processed`].
    pub async fn is_processed(&self, execution_id: &str, event_id: &str) -> Result<bool> {
        let (id, event_id) = (execution_id.to_owned(), event_id.to_owned());
        self.call(move |s| s.is_processed(&id, &event_id)).await
    }

    /// [`ExecutionStore::list_executions`].
    pub async fn list_executions(&self, query: &ListQuery) -> Result<ExecutionPage> {
        let query = query.clone();
        self.call(move |s| s.list_executions(&query)).await
    }

    /// [`ExecutionStore::pending_outbox`].
    pub async fn pending_outbox(&self, after: Option<i64>, limit: usize) -> Result<Vec<OutboxEntry>> {
        self.call(move |s| s.pending_outbox(after, limit)).await
    }

    /// [`ExecutionStore::enqueue_outbox`].
    pub async fn enqueue_outbox(&self, target_id: &str, event: &Event) -> Result<i64> {
        let (target_id, event) = (target_id.to_owned(), event.clone());
        self.call(move |s| s.enqueue_outbox(&target_id, &event)).await
    }

    /// [`control::send`]: `event` for the execution `id` through the outbox, as an engine
    /// would receive it (checked: an unknown id is `NotFound`, another version than
    /// `expected_version` a `Conflict`, an execution not `RUNNING` or a bad event
    /// `InvalidInput`; nothing is written then).
    pub async fn send(&self, id: &str, event: &Event, expected_version: Option<i64>) -> Result<Sent> {
        let (id, event) = (id.to_owned(), event.clone());
        self.call(move |s| control::send(s, &id, &event, expected_version))
            .await
    }

    /// [`ExecutionStore::attributes`].
    pub async fn attributes(&self) -> Result<Vec<SearchAttribute>> {
        self.call(|s| s.attributes()).await
    }

    /// [`ExecutionStore::declare_attribute`]: builds the path's index (which may take a while
    /// on a large store; the call holds a blocking-pool thread until it ends, even if its
    /// future is dropped).
    pub async fn declare_attribute(&self, path: &str) -> Result<SearchAttribute> {
        let path = path.to_owned();
        self.call(move |s| s.declare_attribute(&path)).await
    }

    /// [`ExecutionStore::drop_attribute`].
    pub async fn drop_attribute(&self, path: &str) -> Result<bool> {
        let path = path.to_owned();
        self.call(move |s| s.drop_attribute(&path)).await
    }

    /// [`ExecutionStore::ack_outbox`].
    pub async fn ack_outbox(&self, seq: i64) -> Result<()> {
        self.call(move |s| s.ack_outbox(seq)).await
    }

    /// [`ExecutionStore::ack_outbox_many`].
    pub async fn ack_outbox_many(&self, seqs: &[i64]) -> Result<usize> {
        let seqs = seqs.to_vec();
        self.call(move |s| s.ack_outbox_many(&seqs)).await
    }

    /// [`ExecutionStore::pending_spawns`].
    pub async fn pending_spawns(&self, after: Option<i64>, limit: usize) -> Result<Vec<SpawnEntry>> {
        self.call(move |s| s.pending_spawns(after, limit)).await
    }

    /// [`ExecutionStore::ack_spawn`].
    pub async fn ack_spawn(&self, seq: i64) -> Result<()> {
        self.call(move |s| s.ack_spawn(seq)).await
    }

    /// [`ExecutionStore::due_timers`].
    pub async fn due_timers(
        &self,
        now: f64,
        after: Option<&DueTimer>,
        limit: usize,
    ) -> Result<Vec<DueTimer>> {
        let after = after.cloned();
        self.call(move |s| s.due_timers(now, after.as_ref(), limit)).await
    }

    /// [`ExecutionStore::delete_timer`].
    pub async fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> Result<bool> {
        let (id, path) = (execution_id.to_owned(), path.to_owned());
        self.call(move |s| s.delete_timer(&id, &path, fire_at)).await
    }

    /// [`ExecutionStore::read_trace`].
    pub async fn read_trace(&self, execution_id: &str) -> Result<Vec<TraceStep>> {
        let id = execution_id.to_owned();
        self.call(move |s| s.read_trace(&id)).await
    }

    /// [`ExecutionStore::append_trace`].
    pub async fn append_trace(&self, execution_id: &str, step: &TraceStep) -> Result<i64> {
        let (id, step) = (execution_id.to_owned(), step.clone());
        self.call(move |s| s.append_trace(&id, &step)).await
    }

    /// [`ExecutionStore::ids_with_prefix`].
    pub async fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        let prefix = prefix.to_owned();
        self.call(move |s| s.ids_with_prefix(&prefix)).await
    }

    /// [`ExecutionStore::purge`].
    pub async fn purge(&self, execution_id: &str, expected_version: i64) -> Result<bool> {
        let id = execution_id.to_owned();
        self.call(move |s| s.purge(&id, expected_version)).await
    }

    /// [`ExecutionStore::relay_outbox`]. `deliver` runs on the blocking pool, inside the
    /// claim: it is synchronous (for async delivery it may `block_on` a
    /// [`tokio::runtime::Handle`] it captured, which is allowed on the blocking pool). A
    /// cancelled relay step still runs to its end: it may have delivered and acked.
    pub async fn relay_outbox<F>(&self, limit: usize, mut deliver: F) -> Result<usize>
    where
        F: FnMut(&[OutboxEntry]) -> Vec<i64> + Send + 'static,
    {
        self.call(move |s| s.relay_outbox(limit, &mut deliver)).await
    }

    /// [`ExecutionStore::relay_spawns`]; `create` runs on the blocking pool, as
    /// [`AsyncExecutionStore::relay_outbox`]'s `deliver` does.
    pub async fn relay_spawns<F>(&self, limit: usize, mut create: F) -> Result<usize>
    where
        F: FnMut(&[SpawnEntry]) -> Vec<i64> + Send + 'static,
    {
        self.call(move |s| s.relay_spawns(limit, &mut create)).await
    }

    /// [`ExecutionStore::sweep_timers`]; `fire` runs on the blocking pool, inside the claim,
    /// as [`AsyncExecutionStore::relay_outbox`]'s `deliver` does.
    pub async fn sweep_timers<F>(&self, now: f64, limit: usize, mut fire: F) -> Result<usize>
    where
        F: FnMut(&[DueTimer]) + Send + 'static,
    {
        self.call(move |s| s.sweep_timers(now, limit, &mut fire)).await
    }

    /// [`ExecutionStore::wait_for_work`]. The wait holds a blocking-pool thread until it ends,
    /// even if its future is dropped: keep `timeout` short (a second or so) and loop.
    pub async fn wait_for_work(&self, work: Work, timeout: Duration) -> Result<bool> {
        self.call(move |s| s.wait_for_work(work, timeout)).await
    }

    /// [`ExecutionStore::count_by_status`].
    pub async fn count_by_status(&self, query: &ListQuery) -> Result<Vec<(Status, u64)>> {
        let query = query.clone();
        self.call(move |s| s.count_by_status(&query)).await
    }

    /// [`ExecutionStore::change_token`].
    pub async fn change_token(&self) -> Result<String> {
        self.call(|s| s.change_token()).await
    }
}
