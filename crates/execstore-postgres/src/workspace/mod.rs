//! The workspace log: [`PgWorkspaceStorage`] over reflexr 0.1.1's `reflexr_*` tables.
//!
//! A transaction is a `BEGIN` on a pooled connection that names its tenant to row-level
//! security, creates the workspace's row if it is new and locks it (`SELECT ... FOR UPDATE`)
//! until it ends: transactions on one workspace run one at a time across processes, other
//! workspaces' in parallel. The log's head and the workspace's position counter are read with
//! the lock and written back once, at commit, with a `NOTIFY` of the new head that wakes
//! [`WorkspaceStorage::wait_for_append`](execstore::workspace::WorkspaceStorage::wait_for_append)
//! in every process.

mod rows;
mod schema;
mod search;
mod sql;
mod storage;
mod tx;

use std::sync::Arc;

use execstore::workspace::{AsWorkspaceFront, Clock, SystemClock, WorkspaceFront, WorkspaceRef};
use execstore::{Result, StoreError};
use postgres::{Client, NoTls};

use crate::db::handle::{ConnectOptions, Db};
use crate::db::{self, pool_err, Listener, Pool, Pooled};

pub use schema::REFLEXR_SCHEMA_VERSION;

/// The workspace log's options, for [`PgWorkspaceStorage::on`] (and the connection
/// settings [`PgWorkspaceStorage::open`] opens its [`Db`] with).
#[derive(Clone)]
#[non_exhaustive]
pub struct PgWorkspaceOptions {
    /// Where envelope timestamps and lease expiry come from (default: [`SystemClock`]).
    pub clock: Arc<dyn Clock>,
    /// The connection settings [`PgWorkspaceStorage::open`] opens its [`Db`] with (pool size,
    /// connect timeout, read-only, and the schema that holds the tables, made every
    /// connection's `search_path`; see [`ConnectOptions`]). [`PgWorkspaceStorage::on`] does not
    /// read them: the `Db`'s own are in force. Read-only: nothing is created (missing tables
    /// are [`StoreError::NotFound`] `"reflexr tables"`).
    pub connect: ConnectOptions,
}

impl Default for PgWorkspaceOptions {
    fn default() -> Self {
        PgWorkspaceOptions {
            clock: Arc::new(SystemClock),
            connect: ConnectOptions::default(),
        }
    }
}

impl std::fmt::Debug for PgWorkspaceOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgWorkspaceOptions")
            .field("connect", &self.connect)
            .finish_non_exhaustive()
    }
}

impl PgWorkspaceOptions {
    /// The defaults: the system clock, 8 connections, a 10 s connect timeout, writable, the
    /// connection's own schema.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Sets every connection setting at once (see [`PgWorkspaceOptions::connect`]).
    pub fn connect(mut self, connect: ConnectOptions) -> Self {
        self.connect = connect;
        self
    }
}

crate::db::handle::connect_builders!(PgWorkspaceOptions, connect);

/// What a transaction shares with its storage (it outlives any borrow of it).
pub(crate) struct Shared {
    /// The `NOTIFY` channel of appends to this schema's logs.
    pub(crate) channel: String,
    /// Whether the role is held by reflexr's row-level security policies, so that every read
    /// must first name its tenant.
    pub(crate) held_by_policies: bool,
    /// Whether lease keys sort as bytes in the column's collation, so that a page of leases
    /// is a range of the primary key ([`schema::keys_sort_as_bytes`]).
    pub(crate) keys_sort_as_bytes: bool,
}

/// A [`WorkspaceStorage`](execstore::workspace::WorkspaceStorage) over one PostgreSQL
/// database (and schema), through a pool of connections: reflexr 0.1.1's tables, which
/// reflexr's own `SqlStorage` reads and writes alongside.
///
/// Share one per process (it is `Send + Sync`); any number of processes may open the same
/// tables. The reads across tenants ([`workspaces`] and [`due_runs`]) need a role that
/// reflexr's row-level security policies do not hold (the tables' owner, as reflexr's
/// `across_tenants` engine); every other operation names its tenant to them.
///
/// [`workspaces`]: execstore::workspace::WorkspaceStorage::workspaces
/// [`due_runs`]: execstore::workspace::WorkspaceStorage::due_runs
///
/// The contract's checks, clock reads and envelope numbering are the core's
/// [`WorkspaceFront`]; this crate's part is the [`PgWorkspaceDriver`] behind it.
pub struct PgWorkspaceStorage(WorkspaceFront<PgWorkspaceDriver>);

impl AsWorkspaceFront for PgWorkspaceStorage {
    type Driver = PgWorkspaceDriver;
    fn front(&self) -> &WorkspaceFront<PgWorkspaceDriver> {
        &self.0
    }
}

/// The PostgreSQL backend's [`WorkspaceDriver`](execstore::workspace::WorkspaceDriver): the
/// statements on pooled connections, nothing else.
pub struct PgWorkspaceDriver {
    pool: Pool,
    shared: Arc<Shared>,
    schema: String,
    /// The connection that listens for appends, opened by the first wait.
    listener: Listener,
    /// The database the pool belongs to.
    db: Db,
}

impl std::fmt::Debug for PgWorkspaceStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let driver = self.0.driver();
        f.debug_struct("PgWorkspaceStorage")
            .field("pool", &driver.pool.state())
            .field("schema", &driver.schema)
            .finish_non_exhaustive()
    }
}

impl PgWorkspaceStorage {
    /// Connects to the database at `url` (`postgres://user@host:port/db?...`, or the
    /// `key=value` form) and creates reflexr's tables at version
    /// [`REFLEXR_SCHEMA_VERSION`] if they are missing (recording it in
    /// `reflexr_alembic_version`, as reflexr's `migrate()` does). Tables at another version
    /// are an error.
    pub fn open(url: &str, options: PgWorkspaceOptions) -> Result<Self> {
        let db = Db::open(url, options.connect.clone())?;
        Self::on(&db, options)
    }

    /// The workspace log on `db`, with the options of this contract (the clock; the
    /// connection settings, the schema among them, are `db`'s, [`PgWorkspaceOptions::connect`]
    /// is not read): creates `db`'s schema and reflexr's tables as
    /// [`PgWorkspaceStorage::open`] says, unless `db` is read-only. An execution store on the
    /// same `db` draws from the same pool.
    pub fn on(db: &Db, options: PgWorkspaceOptions) -> Result<Self> {
        let pool = db.pool.clone();
        let config = db.config.clone();
        let (schema, held_by_policies, keys_sort_as_bytes) = {
            let mut conn = db.conn()?;
            let found = schema::open(
                &mut conn.client,
                db.options().schema.as_deref(),
                db.is_read_only(),
            )?;
            (
                found.schema,
                schema::held_by_policies(&mut conn.client)?,
                schema::keys_sort_as_bytes(&mut conn.client)?,
            )
        };
        let channel = channel(&schema);
        let driver = PgWorkspaceDriver {
            listener: Listener::new(config, channel.clone()),
            shared: Arc::new(Shared {
                channel,
                held_by_policies,
                keys_sort_as_bytes,
            }),
            pool,
            schema,
            db: db.clone(),
        };
        Ok(PgWorkspaceStorage(WorkspaceFront::new(driver, options.clock)))
    }

    /// The database this storage is built on (to build an execution store on it too).
    pub fn db(&self) -> &Db {
        &self.0.driver().db
    }

    /// The schema that holds the tables.
    pub fn schema(&self) -> &str {
        &self.0.driver().schema
    }
}

impl PgWorkspaceDriver {
    /// A pooled connection whose session names `tenant` to row-level security (`None`: no
    /// tenant, for the reads across tenants), where the policies hold this role.
    fn conn(&self, tenant: Option<&str>) -> Result<Pooled> {
        let mut conn = self.pool.get().map_err(pool_err)?;
        if self.shared.held_by_policies {
            let wanted = tenant.unwrap_or("");
            if conn.tenant.as_deref() != Some(wanted) {
                conn.tenant = None;
                conn.query("SELECT set_config('lattice.tenant_id', $1, false)", &[&wanted])?;
                conn.tenant = Some(wanted.to_owned());
            }
        }
        Ok(conn)
    }

    /// A connection for a read or a single-statement write of `workspace`.
    fn conn_for(&self, workspace: &WorkspaceRef) -> Result<Pooled> {
        self.conn(Some(&workspace.tenant_id))
    }
}

/// The `NOTIFY` channel of one schema's appends: stores on other schemas of the database are
/// not woken by them.
fn channel(schema: &str) -> String {
    let name = format!("execstore_reflexr_{schema}");
    if name.len() <= 63 {
        return name;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in schema.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("execstore_reflexr_{hash:016x}")
}

/// The payload of an append's `NOTIFY`: `tenant/workspace/head` (empty when it would not fit
/// in PostgreSQL's 8000 bytes: every waiter then looks).
pub(crate) fn payload(workspace: &WorkspaceRef, head: i64) -> String {
    let text = format!("{}/{}/{head}", workspace.tenant_id, workspace.workspace_id);
    if text.len() < 7900 {
        text
    } else {
        String::new()
    }
}

/// Whether an append's payload may mean that `workspace`'s log grew past `after_seq`.
pub(crate) fn announces(payload: &str, workspace: &WorkspaceRef, after_seq: i64) -> bool {
    let Some((who, head)) = payload.rsplit_once('/') else {
        return true;
    };
    let Ok(head) = head.parse::<i64>() else {
        return true;
    };
    head > after_seq
        && who.len() == workspace.tenant_id.len() + 1 + workspace.workspace_id.len()
        && who.starts_with(workspace.tenant_id.as_str())
        && who[workspace.tenant_id.len()..].starts_with('/')
        && who.ends_with(workspace.workspace_id.as_str())
}

/// Whether the database at `url` holds any of reflexr's tables (or its version record) in
/// `schema`, or (`None`) in the connection's current schema, `public` unless the URL or the
/// role says otherwise.
pub fn has_workspace_tables(url: &str, schema: Option<&str>) -> Result<bool> {
    let names: Vec<&str> = schema::TABLES
        .iter()
        .copied()
        .chain([schema::VERSION_TABLE])
        .collect();
    let mut client = Client::connect(url, NoTls).map_err(crate::db::map_err)?;
    let row = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = coalesce($1::text, current_schema()) AND c.relname = ANY($2))",
            &[&schema, &names],
        )
        .map_err(crate::db::map_err)?;
    Ok(row.get(0))
}

/// Drops the workspace log of the database at `url` kept in `schema`: the schema itself and
/// everything in it, or, for `public` (never dropped), reflexr's tables only. For tests and
/// tearing down; there is no undo.
pub fn drop_workspace_schema(url: &str, schema: &str) -> Result<()> {
    db::check_schema_name(schema)?;
    let mut client = Client::connect(url, NoTls).map_err(crate::db::map_err)?;
    let sql = if schema == "public" {
        let tables: Vec<String> = schema::TABLES
            .iter()
            .chain([&schema::VERSION_TABLE])
            .map(|t| format!("public.{t}"))
            .collect();
        format!("DROP TABLE IF EXISTS {} CASCADE", tables.join(", "))
    } else {
        format!("DROP SCHEMA IF EXISTS {schema} CASCADE")
    };
    client.batch_execute(&sql).map_err(crate::db::map_err)
}

/// The error for a transaction that can no longer be used.
pub(crate) fn finished() -> StoreError {
    StoreError::Backend {
        message: "the transaction failed or ended: nothing more can be done in it (drop it and begin \
                  another)"
            .into(),
        retryable: true,
        source: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_name_the_workspace_and_head() {
        let w = WorkspaceRef::new("t/1", "w");
        let p = payload(&w, 7);
        assert_eq!(p, "t/1/w/7");
        assert!(announces(&p, &w, 6));
        assert!(!announces(&p, &w, 7));
        assert!(!announces(&p, &WorkspaceRef::new("t", "w"), 0));
        assert!(!announces("t/1/x/9", &w, 0));
        assert!(announces("", &w, 100), "an empty payload wakes everyone");
        let long = WorkspaceRef::new("t".repeat(4000), "w".repeat(4000));
        assert_eq!(payload(&long, 1), "");
        assert!(channel(&"s".repeat(60)).len() <= 63);
        assert_eq!(channel("public"), "execstore_reflexr_public");
    }
}
