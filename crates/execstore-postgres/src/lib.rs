//! The PostgreSQL backend of execstore: many workers on many hosts sharing one server.
//!
//! Two contracts, each over the tables of the engine it serves, so that engine and execstore
//! read each other's data:
//!
//! - [`PgStore`], an [`ExecutionStore`](execstore::ExecutionStore) over the very tables harel
//!   0.9's `PostgresStore` uses (with execstore's own indexes, recorded in
//!   `execstore_migrations`);
//! - [`PgWorkspaceStorage`], a [`WorkspaceStorage`](execstore::workspace::WorkspaceStorage)
//!   over reflexr 0.1.1's `reflexr_*` tables at its schema version `0008` (recorded, as
//!   reflexr does, in `reflexr_alembic_version`).
//!
//! Connections come from a pool; every operation takes one for its duration, and each
//! connection keeps its prepared statements.
//!
//! ```no_run
//! use execstore::{Effects, Execution, ExecutionStore};
//! use execstore_postgres::{PgOptions, PgStore};
//!
//! let store = PgStore::open("postgres://app@db.internal/app", PgOptions::new().prefix("harel"))?;
//! let mut exe = Execution::new("run-1", "checkout");
//! store.commit(&mut exe, &Effects::new().schedule("root.waiting", 1_700_000_000.0))?;
//! assert_eq!(store.load("run-1")?.map(|e| e.version), Some(1));
//! # Ok::<(), execstore::StoreError>(())
//! ```
//!
//! The workspace log, in the same database (or a schema of its own):
//!
//! ```no_run
//! use execstore::workspace::{Entry, LogQuery, WorkspaceRef, WorkspaceStorage};
//! use execstore_postgres::{PgWorkspaceOptions, PgWorkspaceStorage};
//! use serde_json::json;
//!
//! let log = PgWorkspaceStorage::open("postgres://app@db.internal/app", PgWorkspaceOptions::new())?;
//! let ws = WorkspaceRef::new("acme", "main");
//! let mut tx = log.begin(&ws)?; // holds the workspace until it ends
//! let event = json!({"type": "app:order.placed", "order": "o-1"});
//! let entry = Entry::new("evt-1", json!({"kind": "source", "name": "shop"}), event.as_object().unwrap().clone());
//! tx.append(&[entry])?;
//! tx.commit()?; // wakes wait_for_append in every process
//! assert_eq!(log.read(&ws, &LogQuery::new().last(1))?[0].id, "evt-1");
//! # Ok::<(), execstore::StoreError>(())
//! ```
#![deny(missing_docs)]

mod db;
mod executions;
mod operator;
mod transport;
mod workspace;

pub use db::handle::{ConnectOptions, Db};
pub use executions::{
    drop_store, execution_prefixes, harel_schema, store_bytes, store_exists, table_names, wal_position,
    PgOptions, PgStore,
};
pub use operator::PgOperatorStore;
pub use transport::{drop_transport, PgTransport, PgTransportOptions};
pub use workspace::{
    drop_workspace_schema, has_workspace_tables, PgWorkspaceDriver, PgWorkspaceOptions, PgWorkspaceStorage,
    REFLEXR_SCHEMA_VERSION,
};

/// The crate's README (its crates.io page): its examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
