//! The execution store: [`PgStore`] over harel 0.9's tables.
//!
//! Each [`Execution`](execstore::Execution) is one row of `executions`, its JSON in `data` (`TEXT`, so key order
//! and number spelling survive byte for byte) exactly as harel writes it; an event step's
//! effects go to `outbox`, `processed_events`, `timers`, `spawns` and `trace` in the same
//! transaction as the CAS write of the state, which is one
//! `UPDATE ... WHERE id = $3 AND version = $4`: PostgreSQL's row lock makes concurrent
//! writers of one execution queue, and every one but the first finds the version moved on
//! and reports a [`StoreError::Conflict`].
//!
//! A step is one round trip: the server-side function `{prefix}_execstore_step` (migration 6,
//! over migration 4's `{prefix}_execstore_commit`) runs the CAS write, every effect's
//! statement and the execution's listing keys, called as one statement outside any explicit
//! transaction, so that the call is the transaction; `commit_batch` sends all its steps to
//! `{prefix}_execstore_commit_batch`, again one statement (the keys trigger writes their
//! keys). The rows are the ones the separate statements wrote before, byte for byte.
//!
//! On top of harel's tables the store applies migrations of its own (indexes, which harel's
//! writes keep valid, harel's `commit_cas` function where it is missing, the commit
//! functions, and the listing keys with the triggers that keep them for other writers) and
//! records them in `execstore_migrations`, under harel's schema advisory lock so that
//! concurrent opens are safe.

#[cfg(test)]
mod counts_tests;
mod definitions;
mod filters;
mod graph;
#[cfg(test)]
mod graph_tests;
mod mend;
mod order;
mod plain;
mod rows;
mod schema;
mod search;
mod sql;
mod store;
#[cfg(test)]
mod surrogate_tests;
#[cfg(test)]
mod test_support;

pub(crate) use schema::SCHEMA_LOCK;

use std::collections::HashMap;

use execstore::kit::validate::{check_limit, check_seq, PreparedCommit, PreparedWrite};
use execstore::{
    executions::{TimerOp, Work, DEFAULT_TRACE_MAX},
    Result, StoreError,
};
use postgres::types::ToSql;
use postgres::{Client, NoTls, Row, Statement, Transaction};

use crate::db::handle::{ConnectOptions, Db};
use crate::db::{pool_err, prepared, Conn, Db as _, Listener, Pool, Pooled};
use rows::{col, limit_param};
use schema::{Sql as _, Tables};
use sql::Stmts;

/// The execution store's options, for [`PgStore::on`] (and the connection settings
/// [`PgStore::open`] opens its [`Db`] with).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PgOptions {
    /// Names the tables `<prefix>_executions`, `<prefix>_outbox`, ... as harel does (harel's
    /// own default prefix is `"harel"`); `None` uses the bare names `executions`, `outbox`,
    /// .... A prefix is a letter or `_`, then letters, digits or `_`, at most 30 characters.
    pub prefix: Option<String>,
    /// How many trace steps are kept per execution; `None` (or `Some(0)`) keeps them all.
    pub trace_max: Option<u32>,
    /// The connection settings [`PgStore::open`] opens its [`Db`] with (pool size, connect
    /// timeout, read-only; see [`ConnectOptions`]). [`PgStore::on`] does not read them: the
    /// `Db`'s own are in force.
    pub connect: ConnectOptions,
    /// Test-only: relays and sweepers claim without any lock (no `FOR UPDATE SKIP LOCKED`
    /// on the outbox and spawn rows, no advisory lock on timers), so that concurrent workers
    /// are handed the same entries. It exists so that the multi-worker relay tests can show
    /// their exactly-once check failing; never set it otherwise.
    #[doc(hidden)]
    pub unlocked_claims: bool,
    /// Creates harel's tables if they are missing and applies execstore's migrations when
    /// opening: the default. `false` runs no DDL at all, as harel's `create_schema=False`:
    /// the tables must be there already (a migration tool made them, say with
    /// `harel.engine.schema.sql_schema`), and a missing one fails the first operation that
    /// needs it; a role without DDL rights works. Without execstore's migrations (a schema
    /// only harel's DDL made) a step is its statements in one transaction rather than one
    /// function call, and listings read their keys from the documents: the same answers,
    /// more round trips and reads.
    pub create_schema: bool,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            prefix: None,
            trace_max: Some(DEFAULT_TRACE_MAX),
            connect: ConnectOptions::default(),
            unlocked_claims: false,
            create_schema: true,
        }
    }
}

impl PgOptions {
    /// The defaults: no prefix, 200 trace steps, 8 connections, a 10 s connect timeout.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the table prefix.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Sets how many trace steps are kept per execution (`None`: all).
    pub fn trace_max(mut self, trace_max: Option<u32>) -> Self {
        self.trace_max = trace_max;
        self
    }

    /// Sets every connection setting at once (see [`PgOptions::connect`]).
    pub fn connect(mut self, connect: ConnectOptions) -> Self {
        self.connect = connect;
        self
    }

    /// Whether opening creates the tables and applies execstore's migrations (see
    /// [`PgOptions::create_schema`]).
    pub fn create_schema(mut self, create_schema: bool) -> Self {
        self.create_schema = create_schema;
        self
    }

    /// Test-only (see the field): claims that take no lock.
    #[doc(hidden)]
    pub fn unlocked_claims(mut self, unlocked: bool) -> Self {
        self.unlocked_claims = unlocked;
        self
    }
}

crate::db::handle::connect_builders!(PgOptions, connect);

/// An open transaction on a pooled connection, and that connection's statements.
struct Tx<'a> {
    tx: Transaction<'a>,
    statements: &'a mut HashMap<String, Statement>,
}

impl Tx<'_> {
    fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64> {
        let stmt = prepared(self.statements, &mut self.tx, sql)?;
        self.tx.execute(&stmt, params).db()
    }

    fn query_one(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        let stmt = prepared(self.statements, &mut self.tx, sql)?;
        self.tx.query_one(&stmt, params).db()
    }

    fn query_opt(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>> {
        let stmt = prepared(self.statements, &mut self.tx, sql)?;
        self.tx.query_opt(&stmt, params).db()
    }

    fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let stmt = prepared(self.statements, &mut self.tx, sql)?;
        self.tx.query(&stmt, params).db()
    }
}

/// An [`ExecutionStore`](execstore::ExecutionStore) over one PostgreSQL database, through a pool of connections.
///
/// Share one store per process (it is `Send + Sync`); any number of processes on any number
/// of hosts may open the same database. For many concurrent committers, wrap it in
/// [`execstore::executions::GroupCommit`] so their commits share transactions.
pub struct PgStore {
    pool: Pool,
    sql: Stmts,
    trace_max: Option<u32>,
    /// Opened read-only: a commit fails before it reaches the server.
    read_only: bool,
    /// Set when the database lacks execstore's commit functions (opened without
    /// `create_schema` on harel's own schema): steps are then plain statements.
    plain: Option<plain::PlainStmts>,
    /// One LISTENing connection per kind of work, opened by the first wait for it (a
    /// notification read by a waiter for one kind is never lost to a waiter for another).
    listeners: [Listener; 3],
    /// The database the pool belongs to.
    db: Db,
    /// Whether the store may create a table of execstore's (`create_schema` on): the
    /// definition documents' table is created by the first put.
    own_tables: bool,
    /// Whether the kept counts of migration 8 are there (else counts read the keys).
    counted: bool,
    /// Whether the graph figures of migration 9 are kept (see `graph.rs`).
    graphed: bool,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("pool", &self.pool.state())
            .field("trace_max", &self.trace_max)
            .finish_non_exhaustive()
    }
}

/// The tables of a store under `prefix` (`None`: the bare names): harel's six, execstore's
/// record of its migrations, its listing keys, its search attributes and its definition
/// documents.
pub fn table_names(prefix: Option<&str>) -> Result<Vec<String>> {
    let t = Tables::new(prefix)?;
    Ok(vec![
        t.sql("{pfx}execstore_keys"),
        t.sql("{pfx}execstore_attributes"),
        t.sql("{pfx}execstore_definitions"),
        t.sql("{pfx}execstore_counts"),
        t.sql("{pfx}execstore_count_deltas"),
        t.sql("{pfx}execstore_graph"),
        t.sql("{pfx}execstore_graph_deltas"),
        t.sql("{pfx}execstore_functions"),
        t.executions,
        t.outbox,
        t.processed_events,
        t.timers,
        t.spawns,
        t.trace,
        t.migrations,
    ])
}

/// The statements that create harel 0.9's six store tables under `prefix` (`None`: the bare
/// names), idempotently, as harel's own schema does (`harel.engine.schema.store_schema`,
/// without its `commit_cas` function): for a migration tool that owns the schema of a store
/// opened with [`PgOptions::create_schema`] off. No index or table of execstore's.
pub fn harel_schema(prefix: Option<&str>) -> Result<Vec<String>> {
    Ok(schema::harel_tables(&Tables::new(prefix)?))
}

/// The sets of execution tables the database at `url` holds (tables visible on the search
/// path): each prefix (`None`: the bare names) under which all six of harel's tables are
/// there, for a tool that opens a database without being told its prefix
/// (`execstore::kit::names::pick_prefix`). Reads the catalog only.
pub fn execution_prefixes(url: &str) -> Result<Vec<Option<String>>> {
    let how = crate::db::Connect {
        timeout: std::time::Duration::from_secs(10),
        read_only: true,
        search_path: None,
    };
    let mut client = crate::db::config(url, &how)?.connect(NoTls).db()?;
    let rows = client
        .query(
            "SELECT c.relname::text FROM pg_catalog.pg_class c \
             WHERE c.relkind IN ('r', 'p') AND pg_catalog.pg_table_is_visible(c.oid) \
             AND c.relname ~ '(executions|outbox|processed_events|timers|spawns|trace)$'",
            &[],
        )
        .db()?;
    let names: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    Ok(execstore::kit::names::execution_prefixes(
        names.iter().map(String::as_str),
    ))
}

/// Whether any table of the store under `prefix` exists (visible on the search path) in the
/// database at `url`.
pub fn store_exists(url: &str, prefix: Option<&str>) -> Result<bool> {
    let names: Vec<String> = table_names(prefix)?.iter().map(|n| n.to_lowercase()).collect();
    let mut client = Client::connect(url, NoTls).db()?;
    let row = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c \
             WHERE c.relname = ANY($1) AND pg_catalog.pg_table_is_visible(c.oid))",
            &[&names],
        )
        .db()?;
    Ok(row.get(0))
}

/// The disk the store under `prefix` takes in the database at `url`: its tables' heap,
/// indexes and TOAST (`pg_total_relation_size`), dead rows not yet vacuumed included.
pub fn store_bytes(url: &str, prefix: Option<&str>) -> Result<u64> {
    let names = table_names(prefix)?;
    let mut client = Client::connect(url, NoTls).db()?;
    let row = client
        .query_one(
            "SELECT COALESCE(sum(pg_catalog.pg_total_relation_size(pg_catalog.to_regclass(t))), 0)::int8 \
             FROM unnest($1::text[]) AS t",
            &[&names],
        )
        .db()?;
    Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
}

/// The server's WAL insert position, in bytes from the start: what a benchmark subtracts to
/// know how much WAL some commits wrote (every session's writes count).
pub fn wal_position(url: &str) -> Result<i64> {
    let mut client = Client::connect(url, NoTls).db()?;
    let row = client
        .query_one(
            "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::int8",
            &[],
        )
        .db()?;
    Ok(row.get(0))
}

/// Drops the store under `prefix` from the database at `url`: its tables (with their
/// indexes and every row), harel's `commit_cas` function and every function of execstore's
/// under the prefix (`mend::function_names`, in the session's current schema), in one
/// transaction. For benchmarks, tests and tearing down; there is no undo.
pub fn drop_store(url: &str, prefix: Option<&str>) -> Result<()> {
    let names = table_names(prefix)?;
    let tables = Tables::new(prefix)?;
    let mut client = Client::connect(url, NoTls).db()?;
    let mut tx = client.transaction().db()?;
    let functions: Vec<String> = tx
        .query(
            &tables.sql(&format!(
                "SELECT f.oid::regprocedure::text FROM ({}) f",
                mend::FUNCTIONS
            )),
            &[&mend::function_names(&tables)],
        )
        .db()?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut sql = format!(
        "DROP TABLE IF EXISTS {} CASCADE; DROP FUNCTION IF EXISTS {}commit_cas;",
        names.join(", "),
        tables.pfx
    );
    for f in functions {
        sql.push_str(&format!(" DROP FUNCTION IF EXISTS {f} CASCADE;"));
    }
    tx.batch_execute(&sql).db()?;
    tx.commit().db()
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user@host:port/db?...`, or the
    /// `key=value` form), creates harel's tables if they are missing and applies execstore's
    /// migrations (unless [`PgOptions::create_schema`] is off).
    /// [`Db::open`] with [`PgOptions::connect`], then [`PgStore::on`].
    pub fn open(url: &str, options: PgOptions) -> Result<Self> {
        Tables::new(options.prefix.as_deref())?;
        let db = Db::open(url, options.connect.clone())?;
        Self::on(&db, options)
    }

    /// The execution store on `db`, with the options of this contract (prefix, trace steps,
    /// schema; the connection settings are `db`'s, [`PgOptions::connect`] is not read):
    /// creates harel's tables if they are missing and applies execstore's migrations (unless
    /// [`PgOptions::create_schema`] is off, or `db` is read-only, when the tables must be
    /// there). `db`'s schema, if it names one, is created if missing (with `create_schema`).
    /// A workspace storage on the same `db` draws from the same pool.
    pub fn on(db: &Db, options: PgOptions) -> Result<Self> {
        let tables = Tables::new(options.prefix.as_deref())?;
        let read_only = db.is_read_only();
        if options.create_schema {
            db.ensure_schema()?;
        }
        let pool = db.pool.clone();
        let config = &db.config;
        let present = {
            let mut conn = db.conn()?;
            if read_only {
                schema::check_present(&mut conn.client, &tables)?;
            } else if options.create_schema {
                schema::migrate(&mut conn.client, &tables)?;
            }
            schema::present(&mut conn.client, &tables, read_only)?
        };
        let (keyed, counted, graphed) = (present.keys, present.counts, present.graph);
        // Migration 6 made the keys and the step function together.
        let plain = (!keyed).then(|| plain::PlainStmts::new(&tables));
        let mut sql = Stmts::new(&tables, options.unlocked_claims, keyed);
        if present.bounded_folds {
            sql.bound_folds(&tables);
        }
        let listener = |work: Work| Listener::new(config.clone(), sql.channels.of(work).to_owned());
        Ok(PgStore {
            listeners: [
                listener(Work::Outbox),
                listener(Work::Spawns),
                listener(Work::Timers),
            ],
            pool,
            sql,
            trace_max: options.trace_max.filter(|n| *n > 0),
            read_only,
            plain,
            db: db.clone(),
            own_tables: options.create_schema,
            counted,
            graphed,
        })
    }

    /// The database this store is built on (to build a workspace storage on it too).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The highest execstore migration applied to this database (11 for this build's
    /// schema; more if a newer build migrated it).
    pub fn schema_version(&self) -> Result<i64> {
        let row = self.query_one(&self.sql.schema_version, &[])?;
        Ok(row.get(0))
    }

    fn conn(&self) -> Result<Pooled> {
        self.pool.get().map_err(pool_err)
    }

    fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        self.conn()?.query(sql, params)
    }

    fn query_one(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        self.conn()?.query_one(sql, params)
    }

    /// Runs `f` in one transaction and commits it if `f` succeeds; an error (from `f` or the
    /// commit) or a panic rolls everything back.
    fn write<T>(&self, f: impl FnOnce(&mut Tx<'_>, &Stmts) -> Result<T>) -> Result<T> {
        self.in_transaction(|b| b, |tx| f(tx, &self.sql))
    }

    /// Runs `f` in one read-only `REPEATABLE READ` transaction: its statements read one
    /// snapshot.
    fn snapshot<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        self.in_transaction(
            |b| {
                b.isolation_level(postgres::IsolationLevel::RepeatableRead)
                    .read_only(true)
            },
            f,
        )
    }

    /// Runs `f` in a transaction of a pooled connection, started as `begin` makes it, and
    /// commits it if `f` succeeds (dropping it uncommitted rolls it back).
    fn in_transaction<T>(
        &self,
        begin: impl for<'b> FnOnce(postgres::TransactionBuilder<'b>) -> postgres::TransactionBuilder<'b>,
        f: impl FnOnce(&mut Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut conn = self.conn()?;
        let Conn {
            client, statements, ..
        } = &mut *conn;
        let tx = begin(client.build_transaction()).start().db()?;
        let mut tx = Tx { tx, statements };
        let out = f(&mut tx)?;
        tx.tx.commit().db()?;
        Ok(out)
    }

    /// One event step in one round trip: `{pfx}execstore_step` called as one statement,
    /// which PostgreSQL runs as one transaction, with the execution's listing keys. A lost CAS is a `Conflict` (the function
    /// wrote nothing).
    fn commit_step(&self, p: &PreparedCommit) -> Result<Vec<i64>> {
        if let Some(plain) = &self.plain {
            return self
                .commit_plain(plain, &[p])?
                .pop()
                .unwrap_or_else(|| Err(corrupt_reply(0, 1)));
        }
        self.check_writable()?;
        let w = &p.write;
        let step = StepParams::new(p);
        let trace_max = self.trace_max.map(i64::from);
        let active_path = w.keys.active_path.as_deref().map(text_as_read);
        let mut conn = self.conn()?;
        let rows = conn.query(
            &self.sql.commit,
            &[
                &w.id,
                &w.definition_id,
                &w.data,
                &w.version,
                &w.expected,
                &step.targets,
                &step.events,
                &p.processed_event_id,
                &step.children,
                &step.root_paths,
                &step.contexts,
                &step.timer_paths,
                &step.fire_ats,
                &p.trace,
                &trace_max,
                &w.keys.status,
                &w.keys.root,
                &w.keys.created_at,
                &w.keys.updated_at,
                &w.keys.finished_at,
                &active_path,
            ],
        )?;
        match rows.as_slice() {
            [row] => step_outcome(w, row),
            _ => Err(corrupt_reply(rows.len(), 1)),
        }
    }

    /// Every step of a batch in one round trip: `{pfx}execstore_commit_batch`, one statement
    /// and so one transaction, its steps' lists flattened. Returns each step's outcome, in
    /// order; an `Err` means nothing was committed.
    fn commit_steps(&self, steps: &[&PreparedCommit]) -> Result<Vec<Result<Vec<i64>>>> {
        if let Some(plain) = &self.plain {
            return self.commit_plain(plain, steps);
        }
        self.check_writable()?;
        let mut b = BatchParams::default();
        for p in steps {
            b.push(p);
        }
        let trace_max = self.trace_max.map(i64::from);
        let mut conn = self.conn()?;
        let rows = conn.query(
            &self.sql.commit_batch,
            &[
                &b.ids,
                &b.definitions,
                &b.datas,
                &b.versions,
                &b.expecteds,
                &b.emit_counts,
                &b.step.targets,
                &b.step.events,
                &b.processed,
                &b.spawn_counts,
                &b.step.children,
                &b.step.root_paths,
                &b.step.contexts,
                &b.timer_counts,
                &b.step.timer_paths,
                &b.step.fire_ats,
                &b.traces,
                &trace_max,
            ],
        )?;
        if rows.len() != steps.len() {
            return Err(corrupt_reply(rows.len(), steps.len()));
        }
        Ok(steps
            .iter()
            .zip(&rows)
            .map(|(p, row)| step_outcome(&p.write, row))
            .collect())
    }

    /// A read-only store's commit fails here, the same way the server would fail it, without
    /// a round trip (and whether or not the commit functions were ever created).
    fn check_writable(&self) -> Result<()> {
        if self.read_only {
            return Err(StoreError::Backend {
                message: "cannot commit: the store was opened read-only".into(),
                retryable: false,
                source: None,
            });
        }
        Ok(())
    }

    /// An ack: deletes the row `seq` with the statement `sql` picks, in its own transaction;
    /// `NotFound` (naming `what`) if there was none.
    fn delete_by_seq(&self, seq: i64, what: &'static str, sql: &str) -> Result<()> {
        check_seq("seq", seq)?;
        self.write(|tx, _| match tx.execute(sql, &[&seq])? {
            0 => Err(StoreError::NotFound {
                what,
                key: seq.to_string(),
            }),
            _ => Ok(()),
        })
    }

    /// `append_trace` outside a commit (a commit's trace step is the commit function's).
    fn append_trace_in(&self, tx: &mut Tx<'_>, execution_id: &str, entry: &str) -> Result<i64> {
        let idx: i64 = tx
            .query_one(&self.sql.insert_trace, &[&execution_id, &entry])?
            .get(0);
        if let Some(max) = self.trace_max {
            tx.execute(&self.sql.cap_trace, &[&execution_id, &i64::from(max)])?;
        }
        Ok(idx)
    }
}

impl PgStore {
    /// The listening connection for `work`.
    fn listener(&self, work: Work) -> &Listener {
        match work {
            Work::Outbox => &self.listeners[0],
            Work::Spawns => &self.listeners[1],
            Work::Timers => &self.listeners[2],
        }
    }

    /// Claims up to `limit` rows with `claim_sql` (row locks, SKIP LOCKED), lets `handle`
    /// choose which to remove, removes them with `ack_sql` and commits: the claim and the
    /// acks are one transaction.
    fn relay<T>(
        &self,
        limit: usize,
        claim_sql: &str,
        ack_sql: &str,
        parse: impl Fn(&Row) -> Result<T>,
        seq_of: impl Fn(&T) -> i64,
        handle: &mut dyn FnMut(&[T]) -> Vec<i64>,
    ) -> Result<usize> {
        check_limit("limit", limit)?;
        self.write(|tx, _| {
            let rows = tx.query(claim_sql, &[&limit_param(limit)])?;
            if rows.is_empty() {
                return Ok(0);
            }
            let entries = rows.iter().map(&parse).collect::<Result<Vec<T>>>()?;
            let given: std::collections::HashSet<i64> = entries.iter().map(&seq_of).collect();
            let mut done: Vec<i64> = handle(&entries)
                .into_iter()
                .filter(|seq| given.contains(seq))
                .collect();
            done.sort_unstable();
            done.dedup();
            if done.is_empty() {
                return Ok(0);
            }
            let removed = tx.execute(ack_sql, &[&done])?;
            Ok(usize::try_from(removed).unwrap_or(usize::MAX))
        })
    }
}

/// Releases a sweeper's timer locks when the sweep ends, `fire` panicking included, so the
/// pooled connection goes back clean.
struct TimerClaims<'a> {
    conn: Pooled,
    unlock_sql: &'a str,
}

impl TimerClaims<'_> {
    fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        self.conn.query(sql, params)
    }
}

impl Drop for TimerClaims<'_> {
    fn drop(&mut self) {
        if self.conn.client.simple_query(self.unlock_sql).is_err() {
            // The locks die with the session: make sure it ends rather than going back to
            // the pool still holding them.
            let _ = self
                .conn
                .client
                .simple_query("SELECT pg_terminate_backend(pg_backend_pid())");
        }
    }
}

/// One step's lists as the commit functions take them: parallel arrays; a timer cancel is a
/// `NULL` fire time, and each path appears once, with its last change (what applying the
/// changes in order leaves: the function writes them in one statement).
#[derive(Default)]
struct StepParams<'a> {
    targets: Vec<Option<&'a str>>,
    events: Vec<&'a str>,
    children: Vec<&'a str>,
    root_paths: Vec<&'a str>,
    contexts: Vec<&'a str>,
    timer_paths: Vec<&'a str>,
    fire_ats: Vec<Option<f64>>,
}

impl<'a> StepParams<'a> {
    fn new(p: &'a PreparedCommit) -> Self {
        let mut step = StepParams::default();
        step.push(p);
        step
    }

    /// Appends `p`'s lists (a batch flattens its steps' lists this way) and returns how many
    /// timer changes it appended.
    fn push(&mut self, p: &'a PreparedCommit) -> usize {
        for (target, event) in &p.emits {
            self.targets.push(target.as_deref());
            self.events.push(event);
        }
        for spawn in &p.spawns {
            self.children.push(&spawn.child_id);
            self.root_paths.push(&spawn.root_path);
            self.contexts.push(&spawn.context);
        }
        let first = self.timer_paths.len();
        let mut at: HashMap<&str, usize> = HashMap::new();
        for op in &p.timers {
            let (path, fire_at) = match op {
                TimerOp::Schedule { path, fire_at } => (path.as_str(), Some(*fire_at)),
                TimerOp::Cancel { path } => (path.as_str(), None),
            };
            match at.get(path) {
                Some(&i) => self.fire_ats[i] = fire_at,
                None => {
                    at.insert(path, self.timer_paths.len());
                    self.timer_paths.push(path);
                    self.fire_ats.push(fire_at);
                }
            }
        }
        self.timer_paths.len() - first
    }
}

/// A batch's steps as `{pfx}execstore_commit_batch` takes them: one array element per step,
/// and the steps' lists flattened with their lengths.
#[derive(Default)]
struct BatchParams<'a> {
    ids: Vec<&'a str>,
    definitions: Vec<&'a str>,
    datas: Vec<&'a str>,
    versions: Vec<i64>,
    expecteds: Vec<i64>,
    processed: Vec<Option<&'a str>>,
    traces: Vec<Option<&'a str>>,
    emit_counts: Vec<i32>,
    spawn_counts: Vec<i32>,
    timer_counts: Vec<i32>,
    step: StepParams<'a>,
}

impl<'a> BatchParams<'a> {
    fn push(&mut self, p: &'a PreparedCommit) {
        let w = &p.write;
        self.ids.push(&w.id);
        self.definitions.push(&w.definition_id);
        self.datas.push(&w.data);
        self.versions.push(w.version);
        self.expecteds.push(w.expected);
        self.processed.push(p.processed_event_id.as_deref());
        self.traces.push(p.trace.as_deref());
        let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        self.emit_counts.push(count(p.emits.len()));
        self.spawn_counts.push(count(p.spawns.len()));
        let timers = self.step.push(p);
        self.timer_counts.push(count(timers));
    }
}

/// A text key as the listing reads it from the stored document (`schema::json_of`): the
/// document's `\u0000` escapes, a NUL or a backslash followed by `u0000`, read as
/// `\ufffd`. A NUL becomes U+FFFD (a PostgreSQL text cannot hold one), and a backslash
/// followed by `u0000` becomes one followed by `ufffd`.
fn text_as_read(text: &str) -> String {
    text.replace("\\u0000", "\\ufffd").replace('\0', "\u{fffd}")
}

/// A commit function's row for the step `w`: its outbox seqs, or its `Conflict` (with the
/// version the function found, if any).
fn step_outcome(w: &PreparedWrite, row: &Row) -> Result<Vec<i64>> {
    if col::<bool>(row, 0)? {
        Ok(col::<Option<Vec<i64>>>(row, 2)?.unwrap_or_default())
    } else {
        Err(StoreError::Conflict {
            id: w.id.clone(),
            expected: w.expected,
            found: col(row, 1)?,
        })
    }
}

/// A commit function answered with the wrong number of rows (it never does; which of the
/// steps it committed is then unknown).
fn corrupt_reply(got: usize, want: usize) -> StoreError {
    StoreError::Backend {
        message: format!(
            "the commit function returned {got} rows for {want} steps (which of them it committed is \
             unknown)"
        ),
        retryable: false,
        source: None,
    }
}
