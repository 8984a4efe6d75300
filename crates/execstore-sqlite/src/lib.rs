//! The SQLite backend of execstore: one file, no server, and the very tables harel 0.9's
//! `SqliteStore` uses, so harel and execstore open each other's files.
//!
//! Each [`Execution`] is one row of `executions`, its JSON in `data` exactly as harel writes
//! it; an event step's effects go to `outbox`, `processed_events`, `timers`, `spawns` and
//! `trace` in the same transaction as the CAS write of the state. Every write transaction is
//! `BEGIN IMMEDIATE`, so several processes can share a file: a writer waits for the lock (up
//! to [`SqliteOptions::busy_timeout`]) instead of failing on a stale snapshot.
//!
//! On top of harel's tables the store applies migrations of its own (indexes only, which
//! harel's writes keep valid) and records them in `execstore_migrations`.
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

mod error;
mod schema;
mod sql;

use std::path::Path;
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use execstore::validate::{
    check_id, check_limit, check_seq, check_time, prepare_commit, prepare_trace, PreparedBatch,
    PreparedCommit,
};
use execstore::{
    BatchItem, Capabilities, DueTimer, Effects, Event, Execution, ExecutionPage, ExecutionStore,
    ExecutionSummary, JsonObject, ListQuery, OutboxEntry, Result, SpawnEntry, Status, StoreError, TimerOp,
    TraceStep, DEFAULT_TRACE_MAX,
};
use rusqlite::config::DbConfig;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use crate::error::{map_err, Db};
use crate::schema::Tables;
use crate::sql::Stmts;

/// How many prepared statements a connection keeps (every fixed statement and the listing
/// shapes in use).
const STATEMENT_CACHE: usize = 128;

/// How hard SQLite pushes a commit to stable storage before reporting it done
/// (`PRAGMA synchronous`). The store always runs file databases in WAL mode.
///
/// * [`Synchronous::Full`] (the default) syncs the WAL on every commit: a commit that
///   returned survives a process crash, an OS crash and a power loss. That is the
///   durability contract an engine relies on (a step reported committed is never lost), so
///   it is the default.
/// * [`Synchronous::Normal`] under WAL syncs only at checkpoints: a process crash still
///   loses nothing, but an OS crash or a power loss may roll back the last few committed
///   transactions. The database is never corrupted; it comes back at an earlier committed
///   step, as if those steps had not run. Faster commits, for engines whose callers can
///   tolerate redoing recent steps.
/// * [`Synchronous::Off`] hands writes to the OS without syncing: fastest, and an OS crash or
///   power loss can corrupt the database. For throwaway data only.
/// * [`Synchronous::Extra`] is `Full` plus a sync of the directory after a rollback
///   journal is unlinked; under WAL it behaves as `Full`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// `PRAGMA synchronous = OFF`.
    Off,
    /// `PRAGMA synchronous = NORMAL`.
    Normal,
    /// `PRAGMA synchronous = FULL`.
    #[default]
    Full,
    /// `PRAGMA synchronous = EXTRA`.
    Extra,
}

impl Synchronous {
    /// The value `PRAGMA synchronous` reads back (0 to 3).
    fn level(self) -> i64 {
        match self {
            Synchronous::Off => 0,
            Synchronous::Normal => 1,
            Synchronous::Full => 2,
            Synchronous::Extra => 3,
        }
    }
}

impl FromStr for Synchronous {
    type Err = StoreError;

    /// `off`, `normal`, `full` or `extra`, in any case.
    fn from_str(s: &str) -> Result<Self> {
        [
            ("off", Synchronous::Off),
            ("normal", Synchronous::Normal),
            ("full", Synchronous::Full),
            ("extra", Synchronous::Extra),
        ]
        .into_iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(s))
        .map(|(_, level)| level)
        .ok_or_else(|| {
            StoreError::invalid(
                "synchronous",
                format!("{s:?} is not one of off normal full extra"),
            )
        })
    }
}

/// How [`SqliteStore::open`] opens a database.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// Names the tables `<prefix>_executions`, `<prefix>_outbox`, ... as harel does (harel's
    /// own default prefix is `"harel"`); `None` uses the bare names `executions`, `outbox`,
    /// .... A prefix is a letter or `_`, then letters, digits or `_`, at most 30 characters.
    pub prefix: Option<String>,
    /// `PRAGMA synchronous`; see [`Synchronous`].
    pub synchronous: Synchronous,
    /// How many trace steps are kept per execution; `None` (or `Some(0)`) keeps them all.
    pub trace_max: Option<u32>,
    /// How long a write waits for another connection's write lock before failing with a
    /// retryable [`StoreError::Backend`].
    pub busy_timeout: Duration,
    /// Opens an existing database for reading only: nothing is created, migrated or switched
    /// to WAL, and every write fails (`PRAGMA query_only`). For tools that look at a file
    /// they do not own, such as the CLI on a database harel keeps writing.
    pub read_only: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            prefix: None,
            synchronous: Synchronous::Full,
            trace_max: Some(DEFAULT_TRACE_MAX),
            busy_timeout: Duration::from_secs(5),
            read_only: false,
        }
    }
}

impl SqliteOptions {
    /// The defaults: no prefix, [`Synchronous::Full`], 200 trace steps, a 5 s busy timeout.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the table prefix.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Sets `PRAGMA synchronous`.
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// Sets how many trace steps are kept per execution (`None`: all).
    pub fn trace_max(mut self, trace_max: Option<u32>) -> Self {
        self.trace_max = trace_max;
        self
    }

    /// Sets how long a write waits for the write lock.
    pub fn busy_timeout(mut self, busy_timeout: Duration) -> Self {
        self.busy_timeout = busy_timeout;
        self
    }

    /// Opens for reading only (see [`SqliteOptions::read_only`]).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }
}

/// An [`ExecutionStore`] over one SQLite database (a file, or `:memory:`).
///
/// Two connections to a file, each behind a mutex: the writer, for every write (SQLite has
/// one writer at a time anyway), and a reader (`query_only`) for every read, so that loads,
/// listings and the relay's reads do not wait behind a commit's sync. Under WAL a read sees
/// every commit that returned before it started. `:memory:` and a read-only open use one
/// connection for both. Share the store (it is `Send + Sync`) rather than opening many per
/// process; other processes may open the same file. For many concurrent committers, wrap it
/// in [`execstore::GroupCommit`] so their commits share transactions and syncs.
#[derive(Debug)]
pub struct SqliteStore {
    // Declared (so dropped) before the writer: the writer closes last, checkpointing the WAL
    // into the file and removing it, as a single connection's close does.
    reader: Option<Mutex<Connection>>,
    conn: Mutex<Connection>,
    sql: Stmts,
    trace_max: Option<u32>,
    durable: bool,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, sets it to WAL mode, creates
    /// harel's tables if they are missing and applies execstore's migrations. The path
    /// `":memory:"` opens a private in-memory database, as [`SqliteStore::open_in_memory`].
    pub fn open(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self> {
        let path = path.as_ref();
        if path.as_os_str() == ":memory:" {
            return Self::open_in_memory(options);
        }
        if path.as_os_str().is_empty() {
            return Err(StoreError::invalid("path", "must not be empty"));
        }
        let tables = Tables::new(options.prefix.as_deref())?;
        // No URI flag: a path is a file name, never `file:...?mode=...`. A read-only open
        // never creates the file.
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if !options.read_only {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        } else if !path.exists() {
            return Err(StoreError::NotFound {
                what: "database file",
                key: path.display().to_string(),
            });
        }
        let conn = Connection::open_with_flags(path, flags).db()?;
        let mut store = Self::init(conn, tables, &options, true)?;
        if !options.read_only {
            // Opened once the writer made the file WAL and migrated it.
            let reader = Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .db()?;
            reader.busy_timeout(busy_wait(&options)).db()?;
            stable_plans(&reader)?;
            reader.execute_batch("PRAGMA query_only = ON").db()?;
            reader.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
            store.reader = Some(Mutex::new(reader));
        }
        Ok(store)
    }

    /// Opens a private in-memory database: everything is lost when the store is dropped.
    pub fn open_in_memory(options: SqliteOptions) -> Result<Self> {
        let tables = Tables::new(options.prefix.as_deref())?;
        let conn = Connection::open_in_memory().db()?;
        Self::init(conn, tables, &options, false)
    }

    /// wasm32 only: opens (creating if needed) the database `name` kept by the SQLite VFS
    /// registered as `vfs`, such as sqlite-wasm-vfs's `sahpool` over the browser's Origin
    /// Private File System (the caller installs the VFS first; it is asynchronous and needs a
    /// dedicated worker). Same tables, migrations and statements as [`SqliteStore::open`],
    /// but one connection for reads and writes (such a VFS serves one connection per file,
    /// and nothing runs concurrently in a worker), holding the file in exclusive locking
    /// mode: so WAL works without shared memory (which these VFSs lack; the WAL index stays
    /// in the connection's memory) and a commit costs one sync, not a rollback journal's
    /// several. A VFS that cannot do WAL keeps its rollback journal. Committed data is
    /// durable as far as the VFS is; `synchronous`, `prefix`, `trace_max` and `read_only`
    /// apply as on a file. Close the store before opening the database again.
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    pub fn open_in_vfs(name: &str, vfs: &str, options: SqliteOptions) -> Result<Self> {
        if name.is_empty() {
            return Err(StoreError::invalid("name", "must not be empty"));
        }
        let tables = Tables::new(options.prefix.as_deref())?;
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if !options.read_only {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn = Connection::open_with_flags_and_vfs(name, flags, vfs).db()?;
        if !options.read_only {
            conn.execute_batch("PRAGMA locking_mode = EXCLUSIVE").db()?;
            // Answers the mode in force: `wal`, or the VFS's journal if it cannot do WAL.
            conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get::<_, String>(0))
                .db()?;
        }
        // `false`: not `set_wal` (which needs shared memory); the store is durable all the same.
        let mut store = Self::init(conn, tables, &options, false)?;
        store.durable = true;
        Ok(store)
    }

    /// wasm32 only: recovers the commits of the database `name`'s `-wal` log (kept by the VFS
    /// `vfs`) into the database file, and leaves it in rollback-journal mode, one file. For a
    /// store file imported with its `-wal` sidecar.
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    pub fn merge_wal_in_vfs(name: &str, vfs: &str) -> Result<()> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags_and_vfs(name, flags, vfs).db()?;
        conn.query_row("PRAGMA locking_mode = EXCLUSIVE", [], |_| Ok(()))
            .db()?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get::<_, i64>(0))
            .db()?;
        conn.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))
            .db()?;
        conn.close().map_err(|(_, e)| e).db()
    }

    fn init(mut conn: Connection, tables: Tables, options: &SqliteOptions, durable: bool) -> Result<Self> {
        let wait = busy_wait(options);
        conn.busy_timeout(wait).db()?;
        stable_plans(&conn)?;
        if options.read_only {
            conn.execute_batch("PRAGMA query_only = ON").db()?;
            let present: bool = conn
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
                    [&tables.executions],
                    |row| row.get(0),
                )
                .db()?;
            if !present {
                return Err(StoreError::NotFound {
                    what: "table",
                    key: tables.executions.clone(),
                });
            }
            conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
            return Ok(SqliteStore {
                conn: Mutex::new(conn),
                reader: None,
                sql: Stmts::new(&tables),
                trace_max: options.trace_max.filter(|n| *n > 0),
                durable,
            });
        }
        if durable {
            set_wal(&conn, wait)?;
        }
        conn.execute_batch(&format!("PRAGMA synchronous = {}", options.synchronous.level()))
            .db()?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        schema::migrate(&mut conn, &tables)?;
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            reader: None,
            sql: Stmts::new(&tables),
            trace_max: options.trace_max.filter(|n| *n > 0),
            durable,
        })
    }

    /// The highest execstore migration applied to this database (1 for this build's
    /// schema; more if a newer build migrated the file).
    pub fn schema_version(&self) -> Result<i64> {
        let conn = self.read();
        let version = conn
            .prepare_cached(&self.sql.schema_version)
            .db()?
            .query_row([], |row| row.get(0))
            .db()?;
        Ok(version)
    }

    /// The writer connection. A panic while it was held cannot have left a transaction
    /// applied halfway (the transaction rolls back when unwinding drops it), so a poisoned
    /// lock is taken over; any transaction somehow still open is rolled back first.
    fn lock(&self) -> MutexGuard<'_, Connection> {
        take_over(&self.conn)
    }

    /// The connection reads use: the reader of a file database, else the only one.
    fn read(&self) -> MutexGuard<'_, Connection> {
        match &self.reader {
            Some(reader) => take_over(reader),
            None => self.lock(),
        }
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction and commits it if `f` succeeds; any error
    /// (from `f` or the commit) or a panic rolls everything back. BEGIN and COMMIT are cached
    /// statements like the rest, so a commit parses no SQL.
    fn write<T>(&self, f: impl FnOnce(&Connection, &Stmts) -> Result<T>) -> Result<T> {
        let conn = self.lock();
        conn.prepare_cached(&self.sql.begin_immediate)
            .db()?
            .execute([])
            .db()?;
        let tx = OpenTransaction(&conn);
        let out = f(tx.0, &self.sql)?;
        tx.0.prepare_cached(&self.sql.commit).db()?.execute([]).db()?;
        Ok(out)
    }

    /// One event step's statements, in the open transaction `tx`: the CAS write of `p`, then
    /// its outbox, dedupe, spawn, timer and trace rows. A lost CAS is a `Conflict`, found
    /// before anything is written. `commit` and `commit_batch` both run this.
    fn apply(&self, tx: &Connection, p: &PreparedCommit) -> Result<Vec<i64>> {
        let s = &self.sql;
        let w = &p.write;
        let updated = tx
            .prepare_cached(&s.update_cas)
            .db()?
            .execute(params![w.data, w.version, w.id, w.expected])
            .db()?;
        if updated == 0 {
            let found: Option<i64> = tx
                .prepare_cached(&s.select_version)
                .db()?
                .query_row([&w.id], |row| row.get(0))
                .optional()
                .db()?;
            if found.is_some() || w.expected != 0 {
                return Err(StoreError::Conflict {
                    id: w.id.clone(),
                    expected: w.expected,
                    found,
                });
            }
            tx.prepare_cached(&s.insert_execution)
                .db()?
                .execute(params![w.id, w.definition_id, w.data, w.version])
                .db()?;
        }
        let mut seqs = Vec::with_capacity(p.emits.len());
        if !p.emits.is_empty() {
            let mut stmt = tx.prepare_cached(&s.insert_outbox).db()?;
            for (target_id, event) in &p.emits {
                seqs.push(stmt.insert(params![target_id, event]).db()?);
            }
        }
        if let Some(event_id) = &p.processed_event_id {
            tx.prepare_cached(&s.insert_processed)
                .db()?
                .execute(params![w.id, event_id])
                .db()?;
        }
        if !p.spawns.is_empty() {
            let mut stmt = tx.prepare_cached(&s.insert_spawn).db()?;
            for spawn in &p.spawns {
                stmt.execute(params![w.id, spawn.child_id, spawn.root_path, spawn.context])
                    .db()?;
            }
        }
        for op in &p.timers {
            match op {
                TimerOp::Schedule { path, fire_at } => {
                    tx.prepare_cached(&s.upsert_timer)
                        .db()?
                        .execute(params![w.id, path, fire_at])
                        .db()?;
                }
                TimerOp::Cancel { path } => {
                    tx.prepare_cached(&s.cancel_timer)
                        .db()?
                        .execute(params![w.id, path])
                        .db()?;
                }
            }
        }
        if let Some(entry) = &p.trace {
            tx.prepare_cached(&s.insert_trace)
                .db()?
                .execute(params![w.id, entry])
                .db()?;
            self.cap_trace(tx, &w.id)?;
        }
        Ok(seqs)
    }

    /// An ack: deletes the row `seq` with the statement `sql` picks, in its own transaction;
    /// `NotFound` (naming `what`) if there was none.
    fn delete_by_seq(&self, seq: i64, what: &'static str, sql: impl FnOnce(&Stmts) -> &String) -> Result<()> {
        check_seq("seq", seq)?;
        self.write(
            |tx, s| match tx.prepare_cached(sql(s)).db()?.execute([seq]).db()? {
                0 => Err(StoreError::NotFound {
                    what,
                    key: seq.to_string(),
                }),
                _ => Ok(()),
            },
        )
    }

    fn append_trace_in(&self, tx: &Connection, execution_id: &str, entry: &str) -> Result<i64> {
        let idx = tx
            .prepare_cached(&self.sql.insert_trace_returning)
            .db()?
            .query_row(params![execution_id, entry], |row| row.get(0))
            .db()?;
        self.cap_trace(tx, execution_id)?;
        Ok(idx)
    }

    fn cap_trace(&self, tx: &Connection, execution_id: &str) -> Result<()> {
        if let Some(max) = self.trace_max {
            tx.prepare_cached(&self.sql.cap_trace)
                .db()?
                .execute(params![execution_id, max])
                .db()?;
        }
        Ok(())
    }
}

/// The transaction `SqliteStore::write` opened: rolled back when dropped still open (an
/// error before or at COMMIT, or a panic).
struct OpenTransaction<'a>(&'a Connection);

impl Drop for OpenTransaction<'_> {
    fn drop(&mut self) {
        if !self.0.is_autocommit() {
            let _ = self.0.execute_batch("ROLLBACK");
        }
    }
}

/// Locks `conn`, taking a poisoned lock over and rolling back a transaction left open.
fn take_over(conn: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    let conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
    if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    conn
}

/// Turns on SQLite's query planner stability guarantee: a cached statement keeps its plan
/// whatever values are bound. Without it SQLite re-prepares (re-parses and re-plans) a
/// statement such as the trace ring's `SELECT MAX(idx) ... WHERE execution_id = ?1` on
/// every new binding, which cost a fifth of a commit. Our plans never depend on the values.
fn stable_plans(conn: &Connection) -> Result<()> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .db()?;
    Ok(())
}

/// The busy timeout as SQLite takes it (at most `i32::MAX` ms).
fn busy_wait(options: &SqliteOptions) -> Duration {
    options.busy_timeout.min(Duration::from_millis(i32::MAX as u64))
}

/// Switches a file database to WAL, waiting out connections that hold it locked (a fresh
/// file opened by several processes at once).
fn set_wal(conn: &Connection, wait: Duration) -> Result<()> {
    let deadline = Instant::now() + wait;
    loop {
        match conn.query_row("PRAGMA journal_mode=WAL", [], |row| row.get::<_, String>(0)) {
            Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
            Ok(mode) => {
                return Err(StoreError::Backend {
                    message: format!("the database cannot use WAL mode (journal_mode is {mode})"),
                    retryable: false,
                    source: None,
                })
            }
            Err(err) => {
                let err = map_err(err);
                if !err.is_retryable() || Instant::now() >= deadline {
                    return Err(err);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
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

/// The least string greater than every string that starts with `prefix` (in code-point order,
/// which is SQLite's `BINARY` order over UTF-8), or `None` if there is none.
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

impl ExecutionStore for SqliteStore {
    fn capabilities(&self) -> Capabilities {
        if self.durable {
            Capabilities::DURABLE
        } else {
            Capabilities::EPHEMERAL
        }
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
    /// writes the rest in one `BEGIN IMMEDIATE` transaction, each item under a savepoint: a
    /// lost CAS rolls back to it and the batch goes on. One COMMIT (one sync) for them all;
    /// the committed items' versions move only once it succeeded.
    fn commit_batch(&self, items: &mut [BatchItem]) -> Result<Vec<Result<Vec<i64>>>> {
        let mut batch = PreparedBatch::new(items);
        if batch.has_writes() {
            self.write(|tx, s| {
                for (p, result) in batch.to_write() {
                    tx.prepare_cached(&s.savepoint).db()?.execute([]).db()?;
                    match self.apply(tx, p) {
                        Ok(seqs) => *result = Ok(seqs),
                        Err(conflict @ StoreError::Conflict { .. }) => {
                            tx.prepare_cached(&s.rollback_to_savepoint)
                                .db()?
                                .execute([])
                                .db()?;
                            *result = Err(conflict);
                        }
                        Err(e) => return Err(e),
                    }
                    tx.prepare_cached(&s.release_savepoint).db()?.execute([]).db()?;
                }
                Ok(())
            })?;
        }
        Ok(batch.finish(items))
    }

    fn load(&self, id: &str) -> Result<Option<Execution>> {
        let conn = self.read();
        let data: Option<String> = conn
            .prepare_cached(&self.sql.load)
            .db()?
            .query_row([id], |row| row.get(0))
            .optional()
            .db()?;
        data.map(|data| parse_execution(id, &data)).transpose()
    }

    fn load_for_event(&self, id: &str, event_id: &str) -> Result<(Option<Execution>, bool)> {
        let conn = self.read();
        let (data, processed): (Option<String>, bool) = conn
            .prepare_cached(&self.sql.load_for_event)
            .db()?
            .query_row([id, event_id], |row| Ok((row.get(0)?, row.get(1)?)))
            .db()?;
        match data {
            Some(data) => Ok((Some(parse_execution(id, &data)?), processed)),
            None => Ok((None, false)),
        }
    }

    fn is_processed(&self, execution_id: &str, event_id: &str) -> Result<bool> {
        let conn = self.read();
        let processed = conn
            .prepare_cached(&self.sql.is_processed)
            .db()?
            .exists([execution_id, event_id])
            .db()?;
        Ok(processed)
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
        let mut args: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(statuses.len() + 3);
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

        let conn = self.read();
        let mut stmt = conn.prepare_cached(&sql).db()?;
        let mut rows = stmt.query(args.as_slice()).db()?;
        let mut items = Vec::new();
        while let Some(row) = rows.next().db()? {
            let id: String = row.get(0).db()?;
            let status = match row.get::<_, Option<String>>(3).db()? {
                Some(s) => s
                    .parse::<Status>()
                    .map_err(|e| corrupt(format!("execution {id} status"), e))?,
                None => Status::Pending,
            };
            items.push(ExecutionSummary {
                definition_id: row.get(1).db()?,
                version: row.get(2).db()?,
                status,
                outcome: row.get(4).db()?,
                active_path: row.get(5).db()?,
                parent_id: row.get(6).db()?,
                finished_at: row.get(7).db()?,
                updated_at: row.get(8).db()?,
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
        let conn = self.read();
        let mut stmt = conn.prepare_cached(&self.sql.pending_outbox).db()?;
        let mut rows = stmt
            .query(params![after.unwrap_or(i64::MIN), limit_param(limit)])
            .db()?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().db()? {
            let seq: i64 = row.get(0).db()?;
            let event: String = row.get(2).db()?;
            let event: Event =
                serde_json::from_str(&event).map_err(|e| corrupt(format!("outbox entry {seq}"), e))?;
            out.push(OutboxEntry {
                seq,
                target_id: row.get(1).db()?,
                event,
            });
        }
        Ok(out)
    }

    fn ack_outbox(&self, seq: i64) -> Result<()> {
        self.delete_by_seq(seq, "outbox entry", |s| &s.ack_outbox)
    }

    /// One transaction for all of them: one sync for the whole batch of acks.
    fn ack_outbox_many(&self, seqs: &[i64]) -> Result<usize> {
        for &seq in seqs {
            check_seq("seqs", seq)?;
        }
        if seqs.is_empty() {
            return Ok(0);
        }
        self.write(|tx, s| {
            let mut stmt = tx.prepare_cached(&s.ack_outbox).db()?;
            let mut removed = 0;
            for seq in seqs {
                removed += stmt.execute([seq]).db()?;
            }
            Ok(removed)
        })
    }

    fn pending_spawns(&self, after: Option<i64>, limit: usize) -> Result<Vec<SpawnEntry>> {
        check_limit("limit", limit)?;
        let conn = self.read();
        let mut stmt = conn.prepare_cached(&self.sql.pending_spawns).db()?;
        let mut rows = stmt
            .query(params![after.unwrap_or(i64::MIN), limit_param(limit)])
            .db()?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().db()? {
            let seq: i64 = row.get(0).db()?;
            let context: String = row.get(4).db()?;
            // Python's json.dumps may have written NaN or Infinity: read them as null.
            let context: JsonObject = execstore::pyjson::loads_object(&context)
                .map_err(|e| corrupt(format!("spawn entry {seq} context"), e))?;
            out.push(SpawnEntry {
                seq,
                parent_id: row.get(1).db()?,
                child_id: row.get(2).db()?,
                root_path: row.get(3).db()?,
                context,
            });
        }
        Ok(out)
    }

    fn ack_spawn(&self, seq: i64) -> Result<()> {
        self.delete_by_seq(seq, "spawn entry", |s| &s.ack_spawn)
    }

    fn due_timers(&self, now: f64, after: Option<&DueTimer>, limit: usize) -> Result<Vec<DueTimer>> {
        check_time("now", now)?;
        check_limit("limit", limit)?;
        if let Some(after) = after {
            check_time("after.fire_at", after.fire_at)?;
        }
        let conn = self.read();
        let row_to_timer = |row: &rusqlite::Row<'_>| {
            Ok(DueTimer {
                execution_id: row.get(0)?,
                path: row.get(1)?,
                fire_at: row.get(2)?,
            })
        };
        let rows = match after {
            None => conn
                .prepare_cached(&self.sql.due_timers)
                .db()?
                .query_map(params![now, limit_param(limit)], row_to_timer)
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>(),
            Some(a) => conn
                .prepare_cached(&self.sql.due_timers_after)
                .db()?
                .query_map(
                    params![now, a.fire_at, a.execution_id, a.path, limit_param(limit)],
                    row_to_timer,
                )
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>(),
        };
        rows.db()
    }

    fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> Result<bool> {
        check_time("fire_at", fire_at)?;
        self.write(|tx, s| {
            let n = tx
                .prepare_cached(&s.delete_timer)
                .db()?
                .execute(params![execution_id, path, fire_at])
                .db()?;
            Ok(n > 0)
        })
    }

    fn read_trace(&self, execution_id: &str) -> Result<Vec<TraceStep>> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(&self.sql.read_trace).db()?;
        let mut rows = stmt.query([execution_id]).db()?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().db()? {
            let idx: i64 = row.get(0).db()?;
            let entry: String = row.get(1).db()?;
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
            if !tx.prepare_cached(&s.exists).db()?.exists([execution_id]).db()? {
                return Err(StoreError::NotFound {
                    what: "execution",
                    key: execution_id.to_owned(),
                });
            }
            self.append_trace_in(tx, execution_id, &entry)
        })
    }

    fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        let conn = self.read();
        let upper = prefix_upper_bound(prefix);
        let ids: Vec<String> = match &upper {
            Some(upper) => {
                let mut stmt = conn.prepare_cached(&self.sql.ids_between).db()?;
                let rows = stmt.query_map([prefix, upper], |row| row.get(0)).db()?;
                rows.collect::<rusqlite::Result<_>>().db()?
            }
            None => {
                let mut stmt = conn.prepare_cached(&self.sql.ids_from).db()?;
                let rows = stmt.query_map([prefix], |row| row.get(0)).db()?;
                rows.collect::<rusqlite::Result<_>>().db()?
            }
        };
        // The range is exact; the filter only guards against a collation other than BINARY.
        Ok(ids.into_iter().filter(|id| id.starts_with(prefix)).collect())
    }

    fn purge(&self, execution_id: &str, expected_version: i64) -> Result<bool> {
        check_id("execution_id", execution_id)?;
        self.write(|tx, s| {
            let deleted = tx
                .prepare_cached(&s.purge_execution)
                .db()?
                .execute(params![execution_id, expected_version])
                .db()?;
            if deleted == 0 && tx.prepare_cached(&s.exists).db()?.exists([execution_id]).db()? {
                // It moved on: touch nothing (the transaction holds no change to commit).
                return Ok(false);
            }
            for sql in &s.purge_companions {
                tx.prepare_cached(sql).db()?.execute([execution_id]).db()?;
            }
            Ok(deleted > 0)
        })
    }

    fn status_counts(&self, definition_id: Option<&str>, roots_only: bool) -> Result<Vec<(Status, u64)>> {
        if let Some(definition_id) = definition_id {
            check_id("definition_id", definition_id)?;
        }
        let sql = self.sql.status_counts(definition_id.is_some(), roots_only);
        let conn = self.read();
        let mut stmt = conn.prepare_cached(&sql).db()?;
        let mut rows = match definition_id {
            Some(definition_id) => stmt.query([definition_id]),
            None => stmt.query([]),
        }
        .db()?;
        let mut counts = [0u64; Status::ALL.len()];
        while let Some(row) = rows.next().db()? {
            // A row without a status reads as PENDING, as in the listing.
            let status = match row.get::<_, Option<String>>(0).db()? {
                Some(s) => s
                    .parse::<Status>()
                    .map_err(|e| corrupt("an execution's status".to_owned(), e))?,
                None => Status::Pending,
            };
            let n: i64 = row.get(1).db()?;
            if let Some(slot) = Status::ALL.iter().position(|s| *s == status) {
                counts[slot] += u64::try_from(n).unwrap_or(0);
            }
        }
        Ok(Status::ALL.into_iter().zip(counts).collect())
    }

    /// `PRAGMA data_version` of the reading connection moves with every commit of any other
    /// connection (this store's writer included, or another process), and its
    /// `total_changes` with the writes of a store that has only one connection.
    fn change_token(&self) -> Result<String> {
        let conn = self.read();
        let data_version: i64 = conn.query_row("PRAGMA data_version", [], |row| row.get(0)).db()?;
        Ok(format!("sqlite:{data_version}:{}", conn.total_changes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upper_bounds() {
        assert_eq!(prefix_upper_bound("ab").as_deref(), Some("ac"));
        assert_eq!(prefix_upper_bound("").as_deref(), None);
        assert_eq!(prefix_upper_bound("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        assert_eq!(prefix_upper_bound("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_upper_bound("\u{10FFFF}").as_deref(), None);
    }

    #[test]
    fn synchronous_parses_any_case() {
        assert_eq!("NORMAL".parse::<Synchronous>().unwrap(), Synchronous::Normal);
        assert_eq!("Off".parse::<Synchronous>().unwrap(), Synchronous::Off);
        assert_eq!("extra".parse::<Synchronous>().unwrap(), Synchronous::Extra);
        assert_eq!("full".parse::<Synchronous>().unwrap(), Synchronous::Full);
        let err = "fast".parse::<Synchronous>().unwrap_err();
        assert!(matches!(err, StoreError::InvalidInput { .. }));
    }

    fn pragma(store: &SqliteStore, name: &str) -> String {
        let conn = store.lock();
        conn.query_row(&format!("PRAGMA {name}"), [], |row| {
            row.get::<_, rusqlite::types::Value>(0)
        })
        .map(|v| match v {
            rusqlite::types::Value::Integer(i) => i.to_string(),
            rusqlite::types::Value::Text(t) => t,
            other => format!("{other:?}"),
        })
        .unwrap()
    }

    /// PRAGMA synchronous and busy_timeout belong to the connection, so they are read on the
    /// store's own.
    #[test]
    fn pragmas_read_back_on_the_store_connection() {
        let dir = tempfile::tempdir().unwrap();
        for (i, (level, want)) in [
            (Synchronous::Off, "0"),
            (Synchronous::Normal, "1"),
            (Synchronous::Full, "2"),
            (Synchronous::Extra, "3"),
        ]
        .into_iter()
        .enumerate()
        {
            let options = SqliteOptions::new()
                .synchronous(level)
                .busy_timeout(Duration::from_millis(1234));
            let store = SqliteStore::open(dir.path().join(format!("s{i}.db")), options).unwrap();
            assert_eq!(pragma(&store, "synchronous"), want, "{level:?}");
            assert_eq!(pragma(&store, "journal_mode"), "wal");
            assert_eq!(pragma(&store, "busy_timeout"), "1234");
        }
        let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
        assert_eq!(pragma(&store, "synchronous"), "2");
        assert_eq!(pragma(&store, "busy_timeout"), "5000");
        assert_eq!(pragma(&store, "journal_mode"), "memory");
    }

    fn plan(store: &SqliteStore, sql: &str, args: &[&dyn rusqlite::ToSql]) -> Vec<String> {
        let conn = store.lock();
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let rows = stmt.query_map(args, |row| row.get::<_, String>(3)).unwrap();
        rows.collect::<rusqlite::Result<_>>().unwrap()
    }

    fn assert_uses_index(plan: &[String], table: &str, index: &str, what: &str) {
        assert!(
            plan.iter()
                .any(|step| step.contains(table) && step.contains(index)),
            "{what}: {index} is not used: {plan:?}"
        );
        assert!(
            !plan
                .iter()
                .any(|step| step.starts_with(&format!("SCAN {table}")) && !step.contains("INDEX")),
            "{what}: full table scan: {plan:?}"
        );
    }

    /// The listing filters and the timer sweep are answered from the migration's indexes,
    /// which means their SQL spells the indexed expressions exactly.
    #[test]
    fn reads_use_the_indexes() {
        for (prefix, pfx) in [(None, ""), (Some("harel"), "harel_")] {
            let mut options = SqliteOptions::new();
            options.prefix = prefix.map(str::to_owned);
            let store = SqliteStore::open_in_memory(options).unwrap();
            let executions = format!("{pfx}executions");
            for i in 0..50 {
                let mut exe = Execution::new(format!("e{i:03}"), format!("d{}", i % 5));
                if i % 3 == 0 {
                    exe.parent_id = Some("e000".into());
                }
                exe.status = Status::ALL[i % Status::ALL.len()];
                store.save(&mut exe).unwrap();
            }
            let s = &store.sql;
            let (after, def, running, done, limit) = ("e010", "d1", "RUNNING", "DONE", 11i64);

            let p = plan(&store, &s.list(false, false, 1, false), &[&running, &limit]);
            assert_uses_index(
                &p,
                &executions,
                &format!("{pfx}execstore_executions_by_status"),
                "status",
            );
            let p = plan(
                &store,
                &s.list(true, false, 1, false),
                &[&after, &running, &limit],
            );
            assert_uses_index(
                &p,
                &executions,
                &format!("{pfx}execstore_executions_by_status"),
                "status+cursor",
            );
            let p = plan(
                &store,
                &s.list(false, false, 2, false),
                &[&running, &done, &limit],
            );
            assert_uses_index(
                &p,
                &executions,
                &format!("{pfx}execstore_executions_by_status"),
                "statuses",
            );
            let p = plan(&store, &s.list(false, false, 0, true), &[&limit]);
            assert_uses_index(
                &p,
                &executions,
                &format!("sqlite_autoindex_{executions}_1"),
                "roots (most executions are roots: walking ids finds a page quickly)",
            );
            let p = plan(&store, &s.list(true, false, 0, true), &[&after, &limit]);
            assert_uses_index(
                &p,
                &executions,
                &format!("sqlite_autoindex_{executions}_1"),
                "roots+cursor",
            );
            let p = plan(&store, &s.list(false, true, 0, false), &[&def, &limit]);
            assert_uses_index(
                &p,
                &executions,
                &format!("{pfx}execstore_executions_by_definition"),
                "definition",
            );
            let p = plan(&store, &s.list(true, true, 0, false), &[&after, &def, &limit]);
            assert_uses_index(
                &p,
                &executions,
                &format!("{pfx}execstore_executions_by_definition"),
                "definition+cursor",
            );
            let p = plan(&store, &s.list(true, false, 0, false), &[&after, &limit]);
            assert_uses_index(
                &p,
                &executions,
                &format!("sqlite_autoindex_{executions}_1"),
                "cursor only",
            );

            let p = plan(&store, &s.due_timers, &[&1.0f64, &limit]);
            assert_uses_index(
                &p,
                &format!("{pfx}timers"),
                &format!("{pfx}execstore_timers_by_fire_at"),
                "due timers",
            );
            let p = plan(
                &store,
                &s.due_timers_after,
                &[&1.0f64, &0.5f64, &"a", &"p", &limit],
            );
            assert_uses_index(
                &p,
                &format!("{pfx}timers"),
                &format!("{pfx}execstore_timers_by_fire_at"),
                "due timers after a timer",
            );
            // A purge scans the outbox and spawns: indexes there would cost every commit and
            // every ack a page write, for the sake of a rare purge of tables a relay keeps short.
            let p = plan(&store, &s.ids_between, &[&"e01", &"e02"]);
            assert_uses_index(
                &p,
                &executions,
                &format!("sqlite_autoindex_{executions}_1"),
                "ids_with_prefix",
            );
        }
    }

    /// Every statement of the commit path is prepared once and then reused: none is
    /// re-prepared when new values are bound (the trace ring's MAX subqueries were).
    #[test]
    fn commit_statements_are_prepared_once() {
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteOptions::new().synchronous(Synchronous::Off);
        let store = SqliteStore::open(dir.path().join("p.db"), options).unwrap();
        let mut exe = Execution::new("x", "d");
        for i in 0..20 {
            let mut step = JsonObject::new();
            step.insert("i".into(), i.into());
            let effects = Effects::new()
                .emit(None, Event::new(format!("e{i}"), "E"))
                .processed(format!("p{i}"))
                .schedule("t", f64::from(i))
                .spawn(format!("c{i}"), "root.c", JsonObject::new())
                .trace(step);
            store.commit(&mut exe, &effects).unwrap();
            store.append_trace("x", &JsonObject::new()).unwrap();
            store.read_trace("x").unwrap();
            store.load_for_event("x", &format!("p{i}")).unwrap();
        }
        let s = &store.sql;
        let conn = store.lock();
        for sql in [
            &s.update_cas,
            &s.insert_outbox,
            &s.insert_processed,
            &s.insert_spawn,
            &s.upsert_timer,
            &s.insert_trace,
            &s.insert_trace_returning,
            &s.cap_trace,
        ] {
            let stmt = conn.prepare_cached(sql).unwrap();
            assert!(stmt.get_status(rusqlite::StatementStatus::Run) >= 20, "{sql}");
            let reprepared = stmt.get_status(rusqlite::StatementStatus::RePrepare);
            assert_eq!(reprepared, 0, "re-prepared {reprepared} times: {sql}");
        }
        drop(conn);
        let reader = store.read();
        for sql in [&s.read_trace, &s.load_for_event] {
            let stmt = reader.prepare_cached(sql).unwrap();
            assert_eq!(stmt.get_status(rusqlite::StatementStatus::RePrepare), 0, "{sql}");
        }
    }

    /// A panic while the connection was held poisons the mutex; the store carries on, and a
    /// transaction the panic left open is rolled back rather than committed later.
    #[test]
    fn poisoned_lock_is_recovered() {
        let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
        let mut exe = Execution::new("p1", "d");
        store.save(&mut exe).unwrap();
        std::thread::scope(|scope| {
            let joined = scope
                .spawn(|| {
                    let conn = store.conn.lock().unwrap();
                    conn.execute_batch("BEGIN IMMEDIATE; DELETE FROM executions;")
                        .unwrap();
                    panic!("boom");
                })
                .join();
            assert!(joined.is_err());
        });
        assert!(store.conn.is_poisoned());
        assert_eq!(store.load("p1").unwrap().map(|e| e.version), Some(1));
        store.save(&mut exe).unwrap();
        assert_eq!(store.load("p1").unwrap().map(|e| e.version), Some(2));
    }
}
