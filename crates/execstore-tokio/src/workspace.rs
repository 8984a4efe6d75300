//! [`AsyncWorkspaceStorage`]: every [`WorkspaceStorage`] operation as an `async fn`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use execstore::workspace::{
    Envelope, EvaluationError, Lease, LogQuery, RuleProgress, Run, RunPolicy, RunQuery, StoredRule,
    Timestamp, WorkspaceCapabilities, WorkspaceInfo, WorkspaceRef, WorkspaceStorage,
};
use execstore::Result;

use crate::subscribe::EnvelopeStream;
use crate::transaction::AsyncTransaction;

/// A [`WorkspaceStorage`] whose every operation is an `async fn` run on tokio's blocking
/// pool, with async transactions ([`AsyncTransaction`]) and log subscriptions
/// ([`EnvelopeStream`]).
///
/// Arguments are copied into the call, which runs to its end even if its future is dropped
/// (see the crate's "Cancellation"). Cheap to clone: clones share the storage.
#[derive(Clone)]
pub struct AsyncWorkspaceStorage {
    storage: Arc<dyn WorkspaceStorage>,
}

impl AsyncWorkspaceStorage {
    /// The async face of a shared storage.
    pub fn new(storage: Arc<dyn WorkspaceStorage>) -> Self {
        AsyncWorkspaceStorage { storage }
    }

    /// The async face of `storage`.
    pub fn from_storage<S: WorkspaceStorage + 'static>(storage: S) -> Self {
        AsyncWorkspaceStorage::new(Arc::new(storage))
    }

    /// The synchronous storage underneath.
    pub fn storage(&self) -> &Arc<dyn WorkspaceStorage> {
        &self.storage
    }

    async fn call<T, F>(&self, f: F) -> Result<T>
    where
        F: FnOnce(&dyn WorkspaceStorage) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let storage = self.storage.clone();
        crate::blocking(move || f(&*storage)).await
    }

    async fn on<T, F>(&self, workspace: &WorkspaceRef, f: F) -> Result<T>
    where
        F: FnOnce(&dyn WorkspaceStorage, &WorkspaceRef) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let ws = workspace.clone();
        self.call(move |s| f(s, &ws)).await
    }

    /// [`WorkspaceStorage::capabilities`].
    pub async fn capabilities(&self) -> Result<WorkspaceCapabilities> {
        self.call(|s| Ok(s.capabilities())).await
    }

    /// Begins a transaction ([`WorkspaceStorage::begin`]), waiting on the blocking pool for
    /// any other on the workspace to end. Dropped while it waits, it leaves the workspace
    /// free: the `begin` still under way rolls back as soon as it gets the workspace.
    pub async fn transaction(&self, workspace: &WorkspaceRef) -> Result<AsyncTransaction> {
        crate::transaction::begin(self.storage.clone(), workspace).await
    }

    /// The closure form of [`AsyncWorkspaceStorage::transaction`]: begins, runs `f`, commits
    /// when `f` returns `Ok` and rolls back when it returns `Err` or when this future is
    /// dropped. The transaction lent to `f` does not end when `f` drops it, but `f` may end it
    /// itself. A commit that fails is this call's error.
    ///
    /// ```no_run
    /// # async fn demo(s: execstore_tokio::AsyncWorkspaceStorage, ws: execstore::workspace::WorkspaceRef,
    /// #               entries: Vec<execstore::workspace::Entry>) -> execstore::Result<()> {
    /// let head = s
    ///     .run_transaction(&ws, |mut tx| async move {
    ///         tx.append(&entries).await?;
    ///         tx.head_seq().await
    ///     })
    ///     .await?;
    /// # let _ = head; Ok(()) }
    /// ```
    pub async fn run_transaction<T, F, Fut>(&self, workspace: &WorkspaceRef, f: F) -> Result<T>
    where
        F: FnOnce(AsyncTransaction) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        crate::transaction::run(self.storage.clone(), workspace, f).await
    }

    /// Replays the log after `after_seq`, then follows it as transactions commit: every
    /// envelope once, in seq order (see [`EnvelopeStream`]).
    pub fn subscribe(&self, workspace: &WorkspaceRef, after_seq: i64) -> EnvelopeStream {
        EnvelopeStream::start(self.storage.clone(), workspace.clone(), after_seq)
    }

    /// [`WorkspaceStorage::head_seq`].
    pub async fn head_seq(&self, workspace: &WorkspaceRef) -> Result<i64> {
        self.on(workspace, |s, w| s.head_seq(w)).await
    }

    /// [`WorkspaceStorage::read`].
    pub async fn read(&self, workspace: &WorkspaceRef, query: &LogQuery) -> Result<Vec<Envelope>> {
        let query = query.clone();
        self.on(workspace, move |s, w| s.read(w, &query)).await
    }

    /// [`WorkspaceStorage::rule_history`].
    pub async fn rule_history(&self, workspace: &WorkspaceRef, name: &str) -> Result<Vec<Envelope>> {
        let name = name.to_owned();
        self.on(workspace, move |s, w| s.rule_history(w, &name)).await
    }

    /// [`WorkspaceStorage::envelope`].
    pub async fn envelope(&self, workspace: &WorkspaceRef, event_id: &str) -> Result<Option<Envelope>> {
        let id = event_id.to_owned();
        self.on(workspace, move |s, w| s.envelope(w, &id)).await
    }

    /// [`WorkspaceStorage::run`].
    pub async fn run(&self, workspace: &WorkspaceRef, run_id: &str) -> Result<Option<Run>> {
        let id = run_id.to_owned();
        self.on(workspace, move |s, w| s.run(w, &id)).await
    }

    /// [`WorkspaceStorage::runs`].
    pub async fn runs(&self, workspace: &WorkspaceRef, query: &RunQuery) -> Result<Vec<Run>> {
        let query = query.clone();
        self.on(workspace, move |s, w| s.runs(w, &query)).await
    }

    /// [`WorkspaceStorage::dead_letters`].
    pub async fn dead_letters(
        &self,
        workspace: &WorkspaceRef,
        rule: Option<&str>,
    ) -> Result<Vec<EvaluationError>> {
        let rule = rule.map(str::to_owned);
        self.on(workspace, move |s, w| s.dead_letters(w, rule.as_deref()))
            .await
    }

    /// [`WorkspaceStorage::dead_letters_page`].
    pub async fn dead_letters_page(
        &self,
        workspace: &WorkspaceRef,
        rule: Option<&str>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, EvaluationError)>> {
        let rule = rule.map(str::to_owned);
        self.on(workspace, move |s, w| {
            s.dead_letters_page(w, rule.as_deref(), after, limit)
        })
        .await
    }

    /// [`WorkspaceStorage::progress`].
    pub async fn progress(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, RuleProgress)>> {
        self.on(workspace, |s, w| s.progress(w)).await
    }

    /// [`WorkspaceStorage::schedules`].
    pub async fn schedules(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, Timestamp)>> {
        self.on(workspace, |s, w| s.schedules(w)).await
    }

    /// [`WorkspaceStorage::stored_rules`].
    pub async fn stored_rules(&self, workspace: &WorkspaceRef) -> Result<Vec<StoredRule>> {
        self.on(workspace, |s, w| s.stored_rules(w)).await
    }

    /// [`WorkspaceStorage::workspaces`].
    pub async fn workspaces(&self) -> Result<Vec<WorkspaceRef>> {
        self.call(|s| s.workspaces()).await
    }

    /// [`WorkspaceStorage::workspace_info`].
    pub async fn workspace_info(&self, workspace: &WorkspaceRef) -> Result<Option<WorkspaceInfo>> {
        self.on(workspace, |s, w| s.workspace_info(w)).await
    }

    /// [`WorkspaceStorage::due_runs`].
    pub async fn due_runs(
        &self,
        now: Timestamp,
        limit: usize,
        policy: &RunPolicy,
    ) -> Result<Vec<(WorkspaceRef, Run)>> {
        let policy = policy.clone();
        self.call(move |s| s.due_runs(now, limit, &policy)).await
    }

    /// [`WorkspaceStorage::acquire_lease`]. Cancelled, it may still have taken the lease.
    pub async fn acquire_lease(
        &self,
        workspace: &WorkspaceRef,
        key: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool> {
        let (key, holder) = (key.to_owned(), holder.to_owned());
        self.on(workspace, move |s, w| s.acquire_lease(w, &key, &holder, ttl))
            .await
    }

    /// [`WorkspaceStorage::release_lease`].
    pub async fn release_lease(&self, workspace: &WorkspaceRef, key: &str, holder: &str) -> Result<()> {
        let (key, holder) = (key.to_owned(), holder.to_owned());
        self.on(workspace, move |s, w| s.release_lease(w, &key, &holder))
            .await
    }

    /// [`WorkspaceStorage::leases`].
    pub async fn leases(&self, workspace: &WorkspaceRef) -> Result<Vec<Lease>> {
        self.on(workspace, |s, w| s.leases(w)).await
    }

    /// [`WorkspaceStorage::leases_page`].
    pub async fn leases_page(
        &self,
        workspace: &WorkspaceRef,
        after_key: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Lease>> {
        let after_key = after_key.map(str::to_owned);
        self.on(workspace, move |s, w| {
            s.leases_page(w, after_key.as_deref(), limit)
        })
        .await
    }

    /// [`WorkspaceStorage::cursor`].
    pub async fn cursor(&self, workspace: &WorkspaceRef, name: &str) -> Result<i64> {
        let name = name.to_owned();
        self.on(workspace, move |s, w| s.cursor(w, &name)).await
    }

    /// [`WorkspaceStorage::save_cursor`].
    pub async fn save_cursor(&self, workspace: &WorkspaceRef, name: &str, seq: i64) -> Result<()> {
        let name = name.to_owned();
        self.on(workspace, move |s, w| s.save_cursor(w, &name, seq)).await
    }

    /// [`WorkspaceStorage::cursors`].
    pub async fn cursors(&self, workspace: &WorkspaceRef) -> Result<Vec<(String, i64)>> {
        self.on(workspace, |s, w| s.cursors(w)).await
    }

    /// [`WorkspaceStorage::wait_for_append`]. The wait holds a blocking-pool thread until it
    /// ends, even if its future is dropped: keep `timeout` short and loop (or use
    /// [`AsyncWorkspaceStorage::subscribe`]).
    pub async fn wait_for_append(
        &self,
        workspace: &WorkspaceRef,
        after_seq: i64,
        timeout: Duration,
    ) -> Result<bool> {
        self.on(workspace, move |s, w| s.wait_for_append(w, after_seq, timeout))
            .await
    }
}
