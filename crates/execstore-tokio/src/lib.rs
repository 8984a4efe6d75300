//! A tokio face for execstore's two contracts, safe to cancel at any await.
//!
//! [`ExecutionStore`] and [`WorkspaceStorage`] are synchronous: their backends block on a
//! file or a socket. This crate runs every call on tokio's blocking pool
//! ([`tokio::task::spawn_blocking`]), so an async engine never blocks its workers:
//!
//! - [`AsyncExecutionStore`]: every [`ExecutionStore`] operation as an `async fn`;
//! - [`AsyncWorkspaceStorage`]: every [`WorkspaceStorage`] operation as an `async fn`,
//!   [`AsyncWorkspaceStorage::transaction`] for an [`AsyncTransaction`] (every
//!   [`WorkspaceTx`] operation as an `async fn`), the closure form
//!   [`AsyncWorkspaceStorage::run_transaction`], and [`AsyncWorkspaceStorage::subscribe`], a
//!   [`Stream`](futures_core::Stream) of the log that replays and then follows it.
//!
//! # Cancellation
//!
//! Any future of this crate may be dropped at any await (a `tokio::time::timeout`, an
//! aborted task, a `select!` that chose another branch). What that leaves behind:
//!
//! - **No statement cut in half.** Once a future has been polled, the storage call it handed
//!   to the blocking pool runs to its end whether or not anyone still waits for it; only its
//!   result is thrown away. (Outside a transaction, a call handed over but not yet started
//!   still runs.)
//! - **No half-applied transaction, no held workspace.** An [`AsyncTransaction`] dropped
//!   before [`AsyncTransaction::commit`] returned, or one whose call future was dropped before
//!   it finished, is rolled back (its [`WorkspaceTx`] dropped, on the blocking pool) as soon as
//!   its in-flight call, if any, has finished. Its later calls fail and change nothing. A call
//!   on it that had not started when it was cancelled does not run at all.
//! - **No workspace taken by a cancelled `begin`.** A [`AsyncWorkspaceStorage::transaction`]
//!   dropped while it waits for the workspace leaves the blocking `begin` waiting; when that
//!   `begin` gets the workspace it finds its caller gone and rolls back at once.
//! - **No lock or connection kept.** Locks and connections belong to the backend's
//!   [`WorkspaceTx`] or to the one call that uses them, and both end as above.
//!
//! What a cancelled call **may still have done**, since it ran to its end:
//!
//! - [`AsyncTransaction::commit`] cancelled after its blocking commit began **may have
//!   committed** (cancelled before it began, it rolls back instead). Read the log (e.g. look
//!   for an appended event id) to know.
//! - Every call outside a transaction takes effect or not as its synchronous twin would:
//!   a cancelled [`AsyncExecutionStore::commit`] may have committed (the caller's
//!   [`Execution`](execstore::Execution) then keeps its old version, and its next commit is a
//!   [`StoreError::Conflict`]: reload), a cancelled `acquire_lease` may hold the lease, a
//!   cancelled `ack_outbox` may have acked, a cancelled `relay_outbox` may have delivered and
//!   acked. All of it is all-or-nothing, as the contracts say.
//! - A cancelled wait ([`AsyncExecutionStore::wait_for_work`],
//!   [`AsyncWorkspaceStorage::wait_for_append`], a `begin` waiting for its workspace) keeps
//!   its blocking-pool thread until the wait ends by itself (its timeout, or the workspace
//!   being freed). Keep such timeouts short.
//!
//! Every waiting call (a `begin` behind another transaction, a wait for work or for an
//! append, a live [`EnvelopeStream`]) occupies a blocking-pool thread, and so does each
//! queued rollback until it ran. Size the pool (`max_blocking_threads`, 512 by default) above
//! the most of these that can be waiting at once, or a transaction holding a workspace may
//! find no thread for its next call while others wait for it.
//!
//! A caller's `&mut` argument ([`AsyncExecutionStore::commit`]'s execution,
//! [`AsyncExecutionStore::commit_batch`]'s items) is written back only when the call
//! completes: the call works on a copy.
//!
//! # Runtime
//!
//! The futures must be polled inside a tokio runtime (any flavour: the blocking pool is in
//! both); polled outside one they fail with [`StoreError::Backend`] instead of panicking. A
//! storage call that panics panics the awaiting task, as the synchronous call would, and a
//! transaction it was in is rolled back. When the runtime shuts down, calls that have not
//! started yet are dropped unstarted and a transaction whose owner is gone is rolled back
//! wherever its last handle is dropped.
//!
//! [`ExecutionStore`]: execstore::ExecutionStore
//! [`WorkspaceStorage`]: execstore::workspace::WorkspaceStorage
//! [`WorkspaceTx`]: execstore::workspace::WorkspaceTx

#![deny(missing_docs)]

mod execution;
mod subscribe;
mod transaction;
mod workspace;

pub use execution::AsyncExecutionStore;
pub use subscribe::{EnvelopeStream, FOLLOW_WAIT, STREAM_BUFFER};
pub use transaction::AsyncTransaction;
pub use workspace::AsyncWorkspaceStorage;

use execstore::{Result, StoreError};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

/// A [`StoreError::Backend`] raised by this crate itself (not by a backend).
pub(crate) fn own_error(message: &str, retryable: bool) -> StoreError {
    StoreError::Backend {
        message: format!("execstore-tokio: {message}"),
        retryable,
        source: None,
    }
}

/// The runtime the calling task runs on.
pub(crate) fn runtime() -> Result<Handle> {
    Handle::try_current().map_err(|_| own_error("polled outside a tokio runtime", false))
}

/// Awaits a blocking task: its result, its panic resumed, or an error if the runtime shut down
/// before it ran.
pub(crate) async fn join<T>(task: JoinHandle<Result<T>>) -> Result<T> {
    match task.await {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => Err(own_error("the runtime shut down before the call ran", false)),
    }
}

/// Runs `f` on the blocking pool and awaits it; dropping the future leaves `f` running to its
/// end.
pub(crate) async fn blocking<T, F>(f: F) -> Result<T>
where
    F: FnOnce() -> Result<T> + Send + 'static,
    T: Send + 'static,
{
    join(runtime()?.spawn_blocking(f)).await
}

/// The crate's README (its crates.io page): its examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
