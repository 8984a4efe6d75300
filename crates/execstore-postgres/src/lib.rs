//! The PostgreSQL backend of execstore: many workers on many hosts sharing one server, over
//! the very tables harel 0.9's `PostgresStore` uses, so harel and execstore read each
//! other's data.
//!
//! Each [`Execution`] is one row of `executions`, its JSON in `data` (`TEXT`, so key order
//! and number spelling survive byte for byte) exactly as harel writes it; an event step's
//! effects go to `outbox`, `processed_events`, `timers`, `spawns` and `trace` in the same
//! transaction as the CAS write of the state, which is one
//! `UPDATE ... WHERE id = $3 AND version = $4`: PostgreSQL's row lock makes concurrent
//! writers of one execution queue, and every one but the first finds the version moved on
//! and reports a [`StoreError::Conflict`].
//!
//! Connections come from a pool ([`PgOptions::max_connections`]); every operation takes
//! one for its duration, and each connection keeps its prepared statements.
//!
//! On top of harel's tables the store applies migrations of its own (indexes only, which
//! harel's writes keep valid) and records them in `execstore_migrations`, under harel's
//! schema advisory lock so that concurrent opens are safe.
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
#![deny(missing_docs)]

mod error;
mod schema;
mod sql;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use execstore::validate::{
    check_id, check_limit, check_seq, check_time, prepare_commit, prepare_trace, PreparedBatch,
    PreparedCommit, MAX_PAGE,
};
use execstore::{
    BatchItem, Capabilities, DueTimer, Effects, Event, Execution, ExecutionPage, ExecutionStore,
    ExecutionSummary, JsonObject, ListQuery, OutboxEntry, Result, SpawnEntry, Status, StoreError, TimerOp,
    TraceStep, Work, DEFAULT_TRACE_MAX,
};
use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, NoTls, Row, Statement, Transaction};

use crate::error::{pool_err, Db};
use crate::schema::Tables;
use crate::sql::Stmts;

/// How [`PgStore::open`] connects.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PgOptions {
    /// Names the tables `<prefix>_executions`, `<prefix>_outbox`, ... as harel does (harel's
    /// own default prefix is `"harel"`); `None` uses the bare names `executions`, `outbox`,
    /// .... A prefix is a letter or `_`, then letters, digits or `_`, at most 30 characters.
    pub prefix: Option<String>,
    /// How many trace steps are kept per execution; `None` (or `Some(0)`) keeps them all.
    pub trace_max: Option<u32>,
    /// The most connections the pool holds open at once.
    pub max_connections: u32,
    /// How long opening a connection, or waiting for a free one, may take before the
    /// operation fails with a retryable [`StoreError::Backend`].
    pub connect_timeout: Duration,
    /// Opens the store for reading only (a monitor, a report): no table is created and no
    /// migration applied (tables that are missing are an error), and every session is
    /// `default_transaction_read_only`, so any write fails in the server.
    pub read_only: bool,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            prefix: None,
            trace_max: Some(DEFAULT_TRACE_MAX),
            max_connections: 8,
            connect_timeout: Duration::from_secs(10),
            read_only: false,
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

    /// Sets the pool size (at least 1).
    pub fn max_connections(mut self, max_connections: u32) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// Sets the connect (and pool wait) timeout.
    pub fn connect_timeout(mut self, connect_timeout: Duration) -> Self {
        self.connect_timeout = connect_timeout;
        self
    }

    /// Opens for reading only (see [`PgOptions::read_only`]).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }
}

/// One pooled connection and the statements prepared on it.
struct Conn {
    client: Client,
    statements: HashMap<String, Statement>,
}

/// Makes and checks the pool's connections.
#[derive(Debug)]
struct Manager {
    config: postgres::Config,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = postgres::Error;

    fn connect(&self) -> std::result::Result<Conn, postgres::Error> {
        Ok(Conn {
            client: self.config.connect(NoTls)?,
            statements: HashMap::new(),
        })
    }

    fn is_valid(&self, conn: &mut Conn) -> std::result::Result<(), postgres::Error> {
        conn.client.simple_query("").map(|_| ())
    }

    /// A connection whose socket closed (a server restart, `pg_terminate_backend`) is not
    /// returned to the pool.
    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.client.is_closed()
    }
}

/// `sql` prepared on this connection, once.
fn prepared(
    statements: &mut HashMap<String, Statement>,
    client: &mut impl postgres::GenericClient,
    sql: &str,
) -> Result<Statement> {
    if let Some(stmt) = statements.get(sql) {
        return Ok(stmt.clone());
    }
    let stmt = client.prepare(sql).db()?;
    statements.insert(sql.to_owned(), stmt.clone());
    Ok(stmt)
}

/// An open transaction on a pooled connection, and that connection's statements.
struct Tx<'a> {
    tx: Transaction<'a>,
    statements: &'a mut HashMap<String, Statement>,
    /// The kinds of work this transaction has announced (NOTIFY once per kind).
    notified: Vec<Work>,
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

    fn batch(&mut self, sql: &str) -> Result<()> {
        self.tx.batch_execute(sql).db()
    }

    fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let stmt = prepared(self.statements, &mut self.tx, sql)?;
        self.tx.query(&stmt, params).db()
    }

    /// Wakes the waiters for `work` once this transaction commits (PostgreSQL delivers a
    /// NOTIFY at commit, and drops it on rollback).
    fn announce(&mut self, work: Work, s: &Stmts) -> Result<()> {
        if self.notified.contains(&work) {
            return Ok(());
        }
        self.notified.push(work);
        let channel = s.channels.of(work);
        self.execute(&s.notify, &[&channel]).map(|_| ())
    }
}

/// An [`ExecutionStore`] over one PostgreSQL database, through a pool of connections.
///
/// Share one store per process (it is `Send + Sync`); any number of processes on any number
/// of hosts may open the same database. For many concurrent committers, wrap it in
/// [`execstore::GroupCommit`] so their commits share transactions.
pub struct PgStore {
    pool: r2d2::Pool<Manager>,
    sql: Stmts,
    trace_max: Option<u32>,
    /// How the pool connects, for the listening connections.
    config: postgres::Config,
    /// One LISTENing connection per kind of work, opened by the first wait for it (a
    /// notification read by a waiter for one kind is never lost to a waiter for another).
    listeners: [Mutex<Option<Client>>; 3],
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("pool", &self.pool.state())
            .field("trace_max", &self.trace_max)
            .finish_non_exhaustive()
    }
}

/// The tables of a store under `prefix` (`None`: the bare names): harel's six and execstore's
/// record of its migrations.
pub fn table_names(prefix: Option<&str>) -> Result<Vec<String>> {
    let t = Tables::new(prefix)?;
    Ok(vec![
        t.executions,
        t.outbox,
        t.processed_events,
        t.timers,
        t.spawns,
        t.trace,
        t.migrations,
    ])
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

/// Drops the store under `prefix` from the database at `url`: its tables (with their
/// indexes and every row) and harel's `commit_cas` function, in one transaction. For
/// benchmarks, tests and tearing down; there is no undo.
pub fn drop_store(url: &str, prefix: Option<&str>) -> Result<()> {
    let tables = table_names(prefix)?;
    let function = format!("{}commit_cas", Tables::new(prefix)?.pfx);
    let mut client = Client::connect(url, NoTls).db()?;
    let mut tx = client.transaction().db()?;
    tx.batch_execute(&format!(
        "DROP TABLE IF EXISTS {} CASCADE; DROP FUNCTION IF EXISTS {function}",
        tables.join(", ")
    ))
    .db()?;
    tx.commit().db()
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user@host:port/db?...`, or the
    /// `key=value` form), creates harel's tables if they are missing and applies execstore's
    /// migrations.
    pub fn open(url: &str, options: PgOptions) -> Result<Self> {
        let tables = Tables::new(options.prefix.as_deref())?;
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e: postgres::Error| StoreError::invalid("url", e.to_string()))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.connect_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("execstore");
        }
        if options.read_only {
            let given = config.get_options().unwrap_or_default().to_owned();
            config.options(format!("{given} -c default_transaction_read_only=on").trim_start());
        }
        if options.max_connections == 0 {
            return Err(StoreError::invalid("max_connections", "must be at least 1"));
        }
        let pool = r2d2::Pool::builder()
            .max_size(options.max_connections)
            .min_idle(Some(1))
            // A broken connection is found when it fails (and is dropped then); testing each
            // one on checkout would cost every operation a round trip.
            .test_on_check_out(false)
            .connection_timeout(options.connect_timeout)
            .error_handler(Box::new(r2d2::NopErrorHandler))
            .build(Manager {
                config: config.clone(),
            })
            .map_err(pool_err)?;
        {
            let mut conn = pool.get().map_err(pool_err)?;
            if options.read_only {
                schema::check_present(&mut conn.client, &tables)?;
            } else {
                schema::migrate(&mut conn.client, &tables)?;
            }
        }
        Ok(PgStore {
            pool,
            sql: Stmts::new(&tables),
            trace_max: options.trace_max.filter(|n| *n > 0),
            config,
            listeners: Default::default(),
        })
    }

    /// The highest execstore migration applied to this database (1 for this build's
    /// schema; more if a newer build migrated it).
    pub fn schema_version(&self) -> Result<i64> {
        let row = self.query_one(&self.sql.schema_version, &[])?;
        Ok(row.get(0))
    }

    fn conn(&self) -> Result<r2d2::PooledConnection<Manager>> {
        self.pool.get().map_err(pool_err)
    }

    fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let mut conn = self.conn()?;
        let Conn { client, statements } = &mut *conn;
        let stmt = prepared(statements, client, sql)?;
        client.query(&stmt, params).db()
    }

    fn query_one(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row> {
        let mut conn = self.conn()?;
        let Conn { client, statements } = &mut *conn;
        let stmt = prepared(statements, client, sql)?;
        client.query_one(&stmt, params).db()
    }

    /// Runs `f` in one transaction and commits it if `f` succeeds; an error (from `f` or the
    /// commit) or a panic rolls everything back.
    fn write<T>(&self, f: impl FnOnce(&mut Tx<'_>, &Stmts) -> Result<T>) -> Result<T> {
        let mut conn = self.conn()?;
        let Conn { client, statements } = &mut *conn;
        let tx = client.transaction().db()?;
        let mut tx = Tx {
            tx,
            statements,
            notified: Vec::new(),
        };
        let out = f(&mut tx, &self.sql)?;
        tx.tx.commit().db()?;
        Ok(out)
    }

    /// One event step's statements, in the open transaction `tx`: the CAS write of `p`, then
    /// its outbox, dedupe, spawn, timer and trace rows. A lost CAS is a `Conflict`, found
    /// before anything is written (and without an SQL error, so the transaction stays
    /// usable). `commit` and `commit_batch` both run this.
    fn apply(&self, tx: &mut Tx<'_>, p: &PreparedCommit) -> Result<Vec<i64>> {
        let s = &self.sql;
        let w = &p.write;
        let updated = tx.execute(&s.update_cas, &[&w.data, &w.version, &w.id, &w.expected])?;
        if updated == 0 {
            let conflict = |found: Option<i64>| StoreError::Conflict {
                id: w.id.clone(),
                expected: w.expected,
                found,
            };
            let found: Option<i64> = tx.query_opt(&s.select_version, &[&w.id])?.map(|r| r.get(0));
            if found.is_some() || w.expected != 0 {
                return Err(conflict(found));
            }
            let inserted = tx.execute(
                &s.insert_execution,
                &[&w.id, &w.definition_id, &w.data, &w.version],
            )?;
            if inserted == 0 {
                // Another writer inserted it since: its row is committed and visible now.
                let found: Option<i64> = tx.query_opt(&s.select_version, &[&w.id])?.map(|r| r.get(0));
                return Err(conflict(found));
            }
        }
        let mut seqs = Vec::with_capacity(p.emits.len());
        for (target_id, event) in &p.emits {
            seqs.push(tx.query_one(&s.insert_outbox, &[target_id, event])?.get(0));
        }
        if !p.emits.is_empty() {
            tx.announce(Work::Outbox, s)?;
        }
        if !p.spawns.is_empty() {
            tx.announce(Work::Spawns, s)?;
        }
        if p.timers.iter().any(|op| matches!(op, TimerOp::Schedule { .. })) {
            tx.announce(Work::Timers, s)?;
        }
        if let Some(event_id) = &p.processed_event_id {
            tx.execute(&s.insert_processed, &[&w.id, event_id])?;
        }
        for spawn in &p.spawns {
            tx.execute(
                &s.insert_spawn,
                &[&w.id, &spawn.child_id, &spawn.root_path, &spawn.context],
            )?;
        }
        for op in &p.timers {
            match op {
                TimerOp::Schedule { path, fire_at } => {
                    tx.execute(&s.upsert_timer, &[&w.id, path, fire_at])?;
                }
                TimerOp::Cancel { path } => {
                    tx.execute(&s.cancel_timer, &[&w.id, path])?;
                }
            }
        }
        if let Some(entry) = &p.trace {
            self.append_trace_in(tx, &w.id, entry)?;
        }
        Ok(seqs)
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
    /// The listening connection for `work`, locked for this waiter.
    fn listener(&self, work: Work) -> MutexGuard<'_, Option<Client>> {
        let slot = match work {
            Work::Outbox => &self.listeners[0],
            Work::Spawns => &self.listeners[1],
            Work::Timers => &self.listeners[2],
        };
        // A waiter that panicked left at worst a connection with queued notifications.
        slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
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
    conn: r2d2::PooledConnection<Manager>,
    unlock_sql: &'a str,
}

impl TimerClaims<'_> {
    fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
        let Conn { client, statements } = &mut *self.conn;
        let stmt = prepared(statements, client, sql)?;
        client.query(&stmt, params).db()
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

fn outbox_entry(row: &Row) -> Result<OutboxEntry> {
    let seq: i64 = col(row, 0)?;
    let event: String = col(row, 2)?;
    let event: Event = serde_json::from_str(&event).map_err(|e| corrupt(format!("outbox entry {seq}"), e))?;
    Ok(OutboxEntry {
        seq,
        target_id: col(row, 1)?,
        event,
    })
}

fn spawn_entry(row: &Row) -> Result<SpawnEntry> {
    let seq: i64 = col(row, 0)?;
    let context: String = col(row, 4)?;
    // Python's json.dumps may have written NaN or Infinity: read them as null.
    let context: JsonObject = execstore::pyjson::loads_object(&context)
        .map_err(|e| corrupt(format!("spawn entry {seq} context"), e))?;
    Ok(SpawnEntry {
        seq,
        parent_id: col(row, 1)?,
        child_id: col(row, 2)?,
        root_path: col(row, 3)?,
        context,
    })
}

fn due_timer(row: &Row) -> Result<DueTimer> {
    Ok(DueTimer {
        execution_id: col(row, 0)?,
        path: col(row, 1)?,
        fire_at: col(row, 2)?,
    })
}

fn corrupt(what: String, err: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        what,
        reason: err.to_string(),
    }
}

fn parse_execution(id: &str, data: &str) -> Result<Execution> {
    serde_json::from_str(data).map_err(|e| corrupt(format!("execution {id}"), e))
}

/// A column of `row`, or `Corrupt` if it does not hold the expected type.
fn col<'a, T: postgres::types::FromSql<'a>>(row: &'a Row, idx: usize) -> Result<T> {
    row.try_get(idx).map_err(|e| corrupt("row".into(), e))
}

/// The least string greater than every string that starts with `prefix` (in code-point order,
/// which is the `"C"` collation's byte order over UTF-8), or `None` if there is none.
fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = match last {
            '\u{D7FF}' => Some('\u{E000}'),
            c => char::from_u32(u32::from(c) + 1),
        };
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

fn limit_param(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

impl ExecutionStore for PgStore {
    fn capabilities(&self) -> Capabilities {
        Capabilities::DURABLE.with_exclusive_claims().with_wakeups()
    }

    fn trace_max(&self) -> Option<u32> {
        self.trace_max
    }

    fn commit(&self, exe: &mut Execution, effects: &Effects) -> Result<Vec<i64>> {
        let p = prepare_commit(exe, effects)?;
        let seqs = self.write(|tx, _| self.apply(tx, &p))?;
        exe.version = p.write.version;
        Ok(seqs)
    }

    /// Checks every item first (an invalid one gets its `InvalidInput` and is left out), then
    /// writes the rest in one transaction, each item under a savepoint: a lost CAS rolls back
    /// to it and the batch goes on. One COMMIT for them all; the committed items' versions
    /// move only once it succeeded. Any other failure fails the whole batch.
    fn commit_batch(&self, items: &mut [BatchItem]) -> Result<Vec<Result<Vec<i64>>>> {
        let mut batch = PreparedBatch::new(items);
        if batch.has_writes() {
            self.write(|tx, _| {
                for (p, result) in batch.to_write() {
                    tx.batch("SAVEPOINT execstore_item")?;
                    match self.apply(tx, p) {
                        Ok(seqs) => *result = Ok(seqs),
                        Err(conflict @ StoreError::Conflict { .. }) => {
                            tx.batch("ROLLBACK TO SAVEPOINT execstore_item")?;
                            *result = Err(conflict);
                        }
                        Err(e) => return Err(e),
                    }
                    tx.batch("RELEASE SAVEPOINT execstore_item")?;
                }
                Ok(())
            })?;
        }
        Ok(batch.finish(items))
    }

    fn load(&self, id: &str) -> Result<Option<Execution>> {
        let rows = self.query(&self.sql.load, &[&id])?;
        match rows.first() {
            Some(row) => Ok(Some(parse_execution(id, &col::<String>(row, 0)?)?)),
            None => Ok(None),
        }
    }

    fn load_for_event(&self, id: &str, event_id: &str) -> Result<(Option<Execution>, bool)> {
        let row = self.query_one(&self.sql.load_for_event, &[&id, &event_id])?;
        let data: Option<String> = col(&row, 0)?;
        match data {
            Some(data) => Ok((Some(parse_execution(id, &data)?), col(&row, 1)?)),
            None => Ok((None, false)),
        }
    }

    fn is_processed(&self, execution_id: &str, event_id: &str) -> Result<bool> {
        let row = self.query_one(&self.sql.is_processed, &[&execution_id, &event_id])?;
        col(&row, 0)
    }

    fn list_executions(&self, query: &ListQuery) -> Result<ExecutionPage> {
        let after = query.validated_after()?;
        let mut statuses: Vec<&'static str> = Vec::new();
        if let Some(set) = &query.status {
            if set.is_empty() {
                return Ok(ExecutionPage::default());
            }
            statuses = set.iter().map(|s| s.as_str()).collect();
            statuses.sort_unstable();
            statuses.dedup();
        }
        let sql = self.sql.list(
            after.is_some(),
            query.definition_id.is_some(),
            statuses.len(),
            query.roots_only,
        );
        let limit = limit_param(query.limit.saturating_add(1));
        let mut args: Vec<&(dyn ToSql + Sync)> = Vec::with_capacity(3 + statuses.len());
        if let Some(after) = &after {
            args.push(after);
        }
        if let Some(definition_id) = &query.definition_id {
            args.push(definition_id);
        }
        for status in &statuses {
            args.push(status);
        }
        args.push(&limit);

        let rows = self.query(&sql, &args)?;
        let mut items = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: String = col(row, 0)?;
            let status = match col::<Option<String>>(row, 3)? {
                Some(s) => s
                    .parse::<Status>()
                    .map_err(|e| corrupt(format!("execution {id} status"), e))?,
                None => Status::Pending,
            };
            items.push(ExecutionSummary {
                definition_id: col(row, 1)?,
                version: col(row, 2)?,
                status,
                outcome: col(row, 4)?,
                active_path: col(row, 5)?,
                parent_id: col(row, 6)?,
                finished_at: col(row, 7)?,
                updated_at: col(row, 8)?,
                id,
            });
        }
        let next_cursor = if items.len() > query.limit {
            items.truncate(query.limit);
            items.last().map(|last| execstore::encode_cursor(&last.id))
        } else {
            None
        };
        Ok(ExecutionPage { items, next_cursor })
    }

    fn pending_outbox(&self, after: Option<i64>, limit: usize) -> Result<Vec<OutboxEntry>> {
        check_limit("limit", limit)?;
        let rows = self.query(
            &self.sql.pending_outbox,
            &[&after.unwrap_or(i64::MIN), &limit_param(limit)],
        )?;
        rows.iter().map(outbox_entry).collect()
    }

    fn ack_outbox(&self, seq: i64) -> Result<()> {
        self.delete_by_seq(seq, "outbox entry", &self.sql.ack_outbox)
    }

    /// One statement, in its own transaction, for the whole batch of acks.
    fn ack_outbox_many(&self, seqs: &[i64]) -> Result<usize> {
        for &seq in seqs {
            check_seq("seqs", seq)?;
        }
        if seqs.is_empty() {
            return Ok(0);
        }
        let seqs = seqs.to_vec();
        let removed = self.write(|tx, s| tx.execute(&s.ack_outbox_many, &[&seqs]))?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }

    fn pending_spawns(&self, after: Option<i64>, limit: usize) -> Result<Vec<SpawnEntry>> {
        check_limit("limit", limit)?;
        let rows = self.query(
            &self.sql.pending_spawns,
            &[&after.unwrap_or(i64::MIN), &limit_param(limit)],
        )?;
        rows.iter().map(spawn_entry).collect()
    }

    fn ack_spawn(&self, seq: i64) -> Result<()> {
        self.delete_by_seq(seq, "spawn entry", &self.sql.ack_spawn)
    }

    fn due_timers(&self, now: f64, after: Option<&DueTimer>, limit: usize) -> Result<Vec<DueTimer>> {
        check_time("now", now)?;
        check_limit("limit", limit)?;
        if let Some(after) = after {
            check_time("after.fire_at", after.fire_at)?;
        }
        let limit = limit_param(limit);
        let rows = match after {
            None => self.query(&self.sql.due_timers, &[&now, &limit])?,
            Some(a) => self.query(
                &self.sql.due_timers_after,
                &[&now, &a.fire_at, &a.execution_id, &a.path, &limit],
            )?,
        };
        rows.iter().map(due_timer).collect()
    }

    fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> Result<bool> {
        check_time("fire_at", fire_at)?;
        self.write(|tx, s| Ok(tx.execute(&s.delete_timer, &[&execution_id, &path, &fire_at])? > 0))
    }

    fn read_trace(&self, execution_id: &str) -> Result<Vec<TraceStep>> {
        let rows = self.query(&self.sql.read_trace, &[&execution_id])?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let idx: i64 = col(row, 0)?;
            let entry: String = col(row, 1)?;
            let mut step: TraceStep = execstore::pyjson::loads_object(&entry)
                .map_err(|e| corrupt(format!("trace step {idx} of {execution_id}"), e))?;
            step.insert("index".into(), idx.into());
            out.push(step);
        }
        Ok(out)
    }

    fn append_trace(&self, execution_id: &str, step: &TraceStep) -> Result<i64> {
        check_id("execution_id", execution_id)?;
        let entry = prepare_trace(step)?;
        self.write(|tx, s| {
            if tx.query_opt(&s.lock_execution, &[&execution_id])?.is_none() {
                return Err(StoreError::NotFound {
                    what: "execution",
                    key: execution_id.to_owned(),
                });
            }
            self.append_trace_in(tx, execution_id, &entry)
        })
    }

    fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        let rows = match prefix_upper_bound(prefix) {
            Some(upper) => self.query(&self.sql.ids_between, &[&prefix, &upper])?,
            None => self.query(&self.sql.ids_from, &[&prefix])?,
        };
        let mut ids = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: String = col(row, 0)?;
            // The range is exact in the "C" collation; the filter is a second guard.
            if id.starts_with(prefix) {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    fn purge(&self, execution_id: &str, expected_version: i64) -> Result<bool> {
        check_id("execution_id", execution_id)?;
        self.write(|tx, s| {
            let deleted = tx.execute(&s.purge_execution, &[&execution_id, &expected_version])?;
            if deleted == 0 && tx.query_opt(&s.exists, &[&execution_id])?.is_some() {
                // It moved on: touch nothing (the transaction holds no change to commit).
                return Ok(false);
            }
            for sql in &s.purge_companions {
                tx.execute(sql, &[&execution_id])?;
            }
            Ok(deleted > 0)
        })
    }

    /// `FOR UPDATE SKIP LOCKED` on the outbox rows: other relays skip them until this
    /// transaction, which also deletes what was delivered, ends.
    fn relay_outbox(
        &self,
        limit: usize,
        deliver: &mut dyn FnMut(&[OutboxEntry]) -> Vec<i64>,
    ) -> Result<usize> {
        let s = &self.sql;
        self.relay(
            limit,
            &s.claim_outbox,
            &s.ack_outbox_many,
            outbox_entry,
            |e| e.seq,
            deliver,
        )
    }

    fn relay_spawns(&self, limit: usize, create: &mut dyn FnMut(&[SpawnEntry]) -> Vec<i64>) -> Result<usize> {
        let s = &self.sql;
        self.relay(
            limit,
            &s.claim_spawns,
            &s.ack_spawns_many,
            spawn_entry,
            |e| e.seq,
            create,
        )
    }

    /// Session advisory locks, one per timer, held on one pooled connection while `fire`
    /// runs; then a fresh read drops the timers another sweeper fired meanwhile.
    fn sweep_timers(&self, now: f64, limit: usize, fire: &mut dyn FnMut(&[DueTimer])) -> Result<usize> {
        check_time("now", now)?;
        check_limit("limit", limit)?;
        let s = &self.sql;
        let mut claims = TimerClaims {
            conn: self.conn()?,
            unlock_sql: &s.unlock_claims,
        };
        // Look past timers other sweepers hold, up to a bound.
        let candidates = limit_param(limit.saturating_mul(4).clamp(1, MAX_PAGE));
        let locked = claims.query(
            &s.claim_timers,
            &[&now, &limit_param(limit), &candidates, &s.timer_lock_space],
        )?;
        if locked.is_empty() {
            return Ok(0);
        }
        let locked = locked.iter().map(due_timer).collect::<Result<Vec<_>>>()?;
        let ids: Vec<&str> = locked.iter().map(|t| t.execution_id.as_str()).collect();
        let paths: Vec<&str> = locked.iter().map(|t| t.path.as_str()).collect();
        let fire_ats: Vec<f64> = locked.iter().map(|t| t.fire_at).collect();
        let mut due = claims
            .query(&s.timers_still_due, &[&ids, &paths, &fire_ats])?
            .iter()
            .map(due_timer)
            .collect::<Result<Vec<_>>>()?;
        due.sort_by(|a, b| {
            a.fire_at
                .total_cmp(&b.fire_at)
                .then_with(|| a.execution_id.cmp(&b.execution_id))
                .then_with(|| a.path.cmp(&b.path))
        });
        if !due.is_empty() {
            fire(&due);
        }
        drop(claims);
        Ok(due.len())
    }

    fn wait_for_work(&self, work: Work, timeout: Duration) -> Result<bool> {
        let mut listener = self.listener(work);
        // Taken out while in use: a connection that fails is not put back.
        let mut client = match listener.take() {
            Some(client) if !client.is_closed() => client,
            _ => {
                let mut client = self.config.connect(NoTls).db()?;
                let channel = self.sql.channels.of(work);
                client
                    .batch_execute(&format!("LISTEN \"{}\"", channel.replace('"', "\"\"")))
                    .db()?;
                *listener = Some(client);
                // Whatever was committed before the LISTEN was not announced to us: the
                // caller looks before it waits.
                return Ok(true);
            }
        };
        let woken = client
            .notifications()
            .timeout_iter(timeout)
            .next()
            .db()?
            .is_some();
        // Commits that came together wake the caller once: drop what is already queued.
        {
            let mut notifications = client.notifications();
            let mut queued = notifications.iter();
            while let Ok(Some(_)) = queued.next() {}
        }
        if client.is_closed() {
            if !woken {
                return Err(StoreError::Backend {
                    message: "the listening connection closed".into(),
                    retryable: true,
                    source: None,
                });
            }
        } else {
            *listener = Some(client);
        }
        Ok(woken)
    }

    fn status_counts(&self, definition_id: Option<&str>, roots_only: bool) -> Result<Vec<(Status, u64)>> {
        if let Some(definition_id) = definition_id {
            check_id("definition_id", definition_id)?;
        }
        let sql = self.sql.status_counts(definition_id.is_some(), roots_only);
        let rows = match definition_id {
            Some(definition_id) => self.query(&sql, &[&definition_id])?,
            None => self.query(&sql, &[])?,
        };
        let mut counts = [0u64; Status::ALL.len()];
        for row in &rows {
            // A row without a status reads as PENDING, as in the listing.
            let status = match col::<Option<String>>(row, 0)? {
                Some(s) => s
                    .parse::<Status>()
                    .map_err(|e| corrupt("an execution's status".to_owned(), e))?,
                None => Status::Pending,
            };
            let n: i64 = col(row, 1)?;
            if let Some(slot) = Status::ALL.iter().position(|s| *s == status) {
                counts[slot] += u64::try_from(n).unwrap_or(0);
            }
        }
        Ok(Status::ALL.into_iter().zip(counts).collect())
    }

    /// The server's transaction snapshot (`xmin:xmax:in-progress`): every transaction that
    /// writes takes an id below the next `xmax` or leaves the in-progress list when it
    /// commits, so a commit to these tables always moves it. Writes elsewhere on the server
    /// move it too (a harmless extra re-read).
    fn change_token(&self) -> Result<String> {
        let row = self.query_one("SELECT txid_current_snapshot()::text", &[])?;
        Ok(format!("pg:{}", col::<String>(&row, 0)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Sql;

    #[test]
    fn upper_bounds() {
        assert_eq!(prefix_upper_bound("ab").as_deref(), Some("ac"));
        assert_eq!(prefix_upper_bound("").as_deref(), None);
        assert_eq!(prefix_upper_bound("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        assert_eq!(prefix_upper_bound("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_upper_bound("\u{10FFFF}").as_deref(), None);
    }

    #[test]
    fn listing_spells_the_indexed_expression() {
        let s = Stmts::new(&Tables::new(Some("harel")).unwrap());
        let sql = s.list(true, true, 1, true);
        let status = format!("({}->>'status')", schema::JSON_OF_DATA);
        assert!(
            sql.contains(&format!("({status}, (id COLLATE \"C\")) > ($3, $1)")),
            "{sql}"
        );
        assert!(sql.contains(&format!("{status} <= $3")), "{sql}");
        assert!(sql.ends_with("LIMIT $4::int8"), "{sql}");
        let several = s.list(false, false, 3, false);
        assert_eq!(several.matches(" UNION ALL ").count(), 2, "{several}");
        for p in ["$1", "$2", "$3"] {
            assert!(several.contains(&format!("->>'status') >= {p}")), "{several}");
        }
        assert!(
            several.ends_with("ORDER BY (id COLLATE \"C\") LIMIT $4::int8"),
            "{several}"
        );
        let index = Tables::new(Some("harel"))
            .unwrap()
            .sql(schema::MIGRATIONS[0].statements[1]);
        assert!(
            index.contains(&format!("(({}->>'status')", schema::JSON_OF_DATA)),
            "{index}"
        );
    }
}
