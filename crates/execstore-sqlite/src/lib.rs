//! The SQLite backend of execstore: one file, no server, and two contracts over it, each in
//! the very tables of the Python engine it serves, so either program opens the other's files.
//!
//! * The execution store ([`SqliteStore`], [`execstore::ExecutionStore`]): harel 0.9's
//!   tables. Each [`Execution`](execstore::Execution) is one row of `executions`, its JSON in
//!   `data` exactly as harel writes it; an event step's effects go to `outbox`,
//!   `processed_events`, `timers`, `spawns` and `trace` in the same transaction as the CAS
//!   write of the state. On top of harel's tables the store applies migrations of its own
//!   (indexes only, which harel's writes keep valid) and records them in
//!   `execstore_migrations`.
//! * The workspace log ([`SqliteWorkspaceStorage`], [`execstore::workspace::WorkspaceStorage`]):
//!   reflexr 0.1.1's `reflexr_*` tables at its schema version `0008`, recorded in
//!   `reflexr_alembic_version` as reflexr's own migrations record it.
//!
//! Every write transaction is `BEGIN IMMEDIATE`, so several processes can share a file: a
//! writer waits for the lock (up to the busy timeout) instead of failing on a stale snapshot.
//! One file may hold both contracts' tables, and both stores may be open on it at once.
//!
//! ```no_run
//! use execstore::{Effects, Execution, ExecutionStore};
//! use execstore_sqlite::{SqliteOptions, SqliteStore};
//!
//! let store = SqliteStore::open("runs.db", SqliteOptions::new().prefix("harel"))?;
//! let mut exe = Execution::new("run-1", "checkout");
//! store.commit(&mut exe, &Effects::new().schedule("root.waiting", 1_700_000_000.0))?;
//! assert_eq!(store.load("run-1")?.map(|e| e.version), Some(1));
//! # Ok::<(), execstore::StoreError>(())
//! ```
#![deny(missing_docs)]

mod db;
mod executions;
mod operator;
mod transport;
mod workspace;

pub use db::{other_sqlite_safe, recover, ConnectOptions, Db, ReadOnlyRefusal, Synchronous};
pub use executions::{
    execution_prefixes, execution_prefixes_in_vfs, harel_schema, has_execution_tables, SqliteOptions,
    SqliteStore, DEFAULT_CHECKPOINT_PAGES,
};
pub use operator::SqliteOperatorStore;
pub use transport::{SqliteTransport, SqliteTransportOptions};
pub use workspace::{
    has_workspace_tables, SqliteWorkspaceDriver, SqliteWorkspaceOptions, SqliteWorkspaceStorage,
    WORKSPACE_SCHEMA_VERSION,
};

/// The crate's README (its crates.io page): its examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
