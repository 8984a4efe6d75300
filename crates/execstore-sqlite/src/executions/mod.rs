//! The execution store: harel 0.9's tables, [`SqliteStore`] and its options. The contract's
//! operations are in `store`, the tables and execstore's own migrations in `schema`, every
//! statement in `sql`.

mod attributes;
#[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
mod checkpointer;
#[cfg(test)]
mod counts_tests;
mod definitions;
mod filters;
mod graph;
#[cfg(test)]
mod graph_tests;
mod keys;
mod mend;
mod order;
mod plan;
mod schema;
mod sql;
mod store;
#[cfg(test)]
mod tests;
mod where_sql;

use std::path::Path;

use execstore::kit::validate::{check_seq, PreparedCommit, PreparedWrite};
use execstore::{
    executions::{TimerOp, DEFAULT_TRACE_MAX},
    Execution, Result, StoreError,
};
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
use rusqlite::OpenFlags;
use rusqlite::{params, Connection, OptionalExtension};

use crate::db::error::Db as _;
use crate::db::{self, ConnectOptions, Db, Held, Kind, OpenTransaction};
use schema::Tables;
use sql::Stmts;

/// The execution store's options, for [`SqliteStore::on`] (and the connection settings
/// [`SqliteStore::open`] opens its [`Db`] with).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SqliteOptions {
    /// Names the tables `<prefix>_executions`, `<prefix>_outbox`, ... as harel does (harel's
    /// own default prefix is `"harel"`); `None` uses the bare names `executions`, `outbox`,
    /// .... A prefix is a letter or `_`, then letters, digits or `_`, at most 30 characters.
    pub prefix: Option<String>,
    /// How many trace steps are kept per execution; `None` (or `Some(0)`) keeps them all.
    pub trace_max: Option<u32>,
    /// The connection settings [`SqliteStore::open`] opens its [`Db`] with (`synchronous`,
    /// the busy timeout, read-only; see [`ConnectOptions`]). [`SqliteStore::on`] does not
    /// read them: the `Db`'s own are in force.
    pub connect: ConnectOptions,
    /// How many pages the WAL may hold before a commit copies them into the database file
    /// (`PRAGMA wal_autocheckpoint`). SQLite's default is 1,000 (4 MiB of 4 KiB pages); the
    /// store's is [`DEFAULT_CHECKPOINT_PAGES`]: a checkpoint writes each page once however
    /// many commits changed it since the last one, so a longer interval writes fewer pages
    /// in all (W1: about 1.5x the commits per second), for a larger `-wal` file (up to this
    /// many pages, reused rather than shrunk) and a longer recovery after a crash. A file
    /// store also checkpoints from a thread of its own, with its own connection, a few
    /// milliseconds after commits (a `PASSIVE` checkpoint: it never blocks a commit or a
    /// read), so that the commit that crosses this many pages finds little left to copy.
    /// `0` turns both off and leaves checkpoints to whoever runs `PRAGMA wal_checkpoint`
    /// (harel, another process).
    pub checkpoint_pages: u32,
    /// Creates harel's tables if they are missing and applies execstore's migrations (its
    /// listing indexes and its record of them) when opening: the default. `false` runs no
    /// DDL at all, as harel's `create_schema=False`: the tables must be there already (made
    /// by a migration tool, say, with `harel.engine.schema.sql_schema`), and a missing one
    /// fails the first operation that needs it. Without execstore's indexes, listings by
    /// status, definition or time read more rows; they answer the same.
    pub create_schema: bool,
}

/// The store's [`SqliteOptions::checkpoint_pages`]: 10,000 pages (40 MiB of 4 KiB pages).
pub const DEFAULT_CHECKPOINT_PAGES: u32 = 10_000;

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            prefix: None,
            trace_max: Some(DEFAULT_TRACE_MAX),
            connect: ConnectOptions::default(),
            checkpoint_pages: DEFAULT_CHECKPOINT_PAGES,
            create_schema: true,
        }
    }
}

impl SqliteOptions {
    /// The defaults: no prefix, [`Synchronous::Full`](crate::Synchronous::Full), 200 trace
    /// steps, a 5 s busy timeout.
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

    /// Sets every connection setting at once (see [`SqliteOptions::connect`]).
    pub fn connect(mut self, connect: ConnectOptions) -> Self {
        self.connect = connect;
        self
    }

    /// Whether opening creates the tables and applies execstore's migrations (see
    /// [`SqliteOptions::create_schema`]).
    pub fn create_schema(mut self, create_schema: bool) -> Self {
        self.create_schema = create_schema;
        self
    }

    /// Sets how many WAL pages a commit may leave before it checkpoints (see
    /// [`SqliteOptions::checkpoint_pages`]).
    pub fn checkpoint_pages(mut self, pages: u32) -> Self {
        self.checkpoint_pages = pages;
        self
    }
}

crate::db::handle::connect_builders!(SqliteOptions, connect);

/// An [`ExecutionStore`](execstore::ExecutionStore) over one SQLite database (a file, or `:memory:`).
///
/// Built on a [`Db`] (two connections to a file: the writer, for every write (SQLite has one
/// writer at a time anyway), and a reader (`query_only`) for every read, so that loads,
/// listings and the relay's reads do not wait behind a commit's sync). Under WAL a read sees
/// every commit that returned before it started. `:memory:` and a read-only open use one
/// connection for both. Share the store (it is `Send + Sync`) rather than opening many per
/// process; other processes may open the same file, and a workspace storage may share its
/// `Db`. For many concurrent committers, wrap it in [`execstore::executions::GroupCommit`] so their
/// commits share transactions and syncs.
#[derive(Debug)]
pub struct SqliteStore {
    // Declared (so dropped) before the database: the writer closes last, checkpointing the
    // WAL into the file and removing it, as a single connection's close does.
    #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
    checkpointer: Option<checkpointer::Checkpointer>,
    db: Db,
    sql: Stmts,
    trace_max: Option<u32>,
    durable: bool,
    /// Whether the store may create a table of execstore's (not with `create_schema` off,
    /// nor read-only): the definition documents' table is created by the first put.
    own_tables: bool,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, sets it to WAL mode, creates
    /// harel's tables if they are missing and applies execstore's migrations (unless
    /// [`SqliteOptions::create_schema`] is off): [`Db::open`] with
    /// [`SqliteOptions::connect`], then [`SqliteStore::on`]. The path `":memory:"` opens a
    /// private in-memory database, as [`SqliteStore::open_in_memory`].
    pub fn open(path: impl AsRef<Path>, options: SqliteOptions) -> Result<Self> {
        Tables::new(options.prefix.as_deref())?;
        let db = Db::open(path, options.connect.clone())?;
        Self::on(&db, options)
    }

    /// Opens a private in-memory database: everything is lost when the store is dropped.
    pub fn open_in_memory(options: SqliteOptions) -> Result<Self> {
        Tables::new(options.prefix.as_deref())?;
        let db = Db::open_in_memory(options.connect.clone())?;
        Self::on(&db, options)
    }

    /// The execution store on `db`, with the options of this contract (prefix, trace steps,
    /// checkpoints, schema; the connection settings are `db`'s, [`SqliteOptions::connect`] is
    /// not read): creates harel's tables if they are missing and applies execstore's
    /// migrations (unless [`SqliteOptions::create_schema`] is off, or `db` is read-only, when
    /// the tables must be there: a missing one is [`StoreError::NotFound`]). A workspace
    /// storage on the same `db` shares its connections: its transactions and this store's
    /// commits take turns on the one writer.
    pub fn on(db: &Db, options: SqliteOptions) -> Result<Self> {
        let tables = Tables::new(options.prefix.as_deref())?;
        let durable = !matches!(db.kind(), Kind::Memory);
        let trace_max = options.trace_max.filter(|n| *n > 0);
        #[allow(unused_mut)]
        let mut store = SqliteStore {
            #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
            checkpointer: None,
            db: db.clone(),
            sql: Stmts::new(&tables),
            trace_max,
            durable,
            own_tables: options.create_schema && !db.is_read_only(),
        };
        if db.is_read_only() {
            let conn = store.read()?;
            if !db::has_table(&conn, &tables.executions)? {
                return Err(StoreError::NotFound {
                    what: "table",
                    key: tables.executions.clone(),
                });
            }
            // A file no writer of this version opened yet may lack the figures and indexes of
            // the latest migrations: what is missing is scanned or walked otherwise.
            store.sql.detect_migrated(&conn, &tables, true)?;
            drop(conn);
            return Ok(store);
        }
        {
            let mut conn = store.lock()?;
            conn.execute_batch(&format!(
                "PRAGMA wal_autocheckpoint = {}",
                options.checkpoint_pages
            ))
            .db()?;
            if options.create_schema {
                schema::migrate(&mut conn, &tables)?;
                store.keep_counts(&conn, &tables)?;
            }
            store.sql.detect_migrated(&conn, &tables, false)?;
        }
        #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
        if let Some(path) = db
            .path()
            .filter(|_| db.has_reader() && options.checkpoint_pages > 0)
        {
            store.checkpointer = Some(checkpointer::Checkpointer::start(
                path,
                db.options().synchronous,
                options.checkpoint_pages,
            )?);
        }
        Ok(store)
    }

    /// wasm32 only: opens (creating if needed) the database `name` kept by the SQLite VFS
    /// registered as `vfs` ([`Db::open_in_vfs`]), with the same tables, migrations and
    /// statements as [`SqliteStore::open`], one connection for reads and writes.
    /// `synchronous`, `prefix`, `trace_max` and `read_only` apply as on a file. Close the
    /// store before opening the database again.
    ///
    /// What a commit promises is SQLite's WAL contract over the VFS's `xWrite` and `xSync`:
    /// a commit appends its pages to the `-wal` file with `xWrite` before it returns; under
    /// [`Synchronous::Full`] it also calls `xSync` on the `-wal` file, under
    /// [`Synchronous::Normal`] it does not (the WAL is synced only before a checkpoint copies
    /// it into the database, which is synced after). So under `Normal` a committed step
    /// survives whatever keeps the VFS's written bytes (for sahpool: the end of the process
    /// or tab, whose writes already reached the operating system) but may be lost, never
    /// half-applied, with a power loss or OS crash before the next checkpoint.
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    pub fn open_in_vfs(name: &str, vfs: &str, options: SqliteOptions) -> Result<Self> {
        Tables::new(options.prefix.as_deref())?;
        let db = Db::open_in_vfs(name, vfs, options.connect.clone())?;
        Self::on(&db, options)
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

    /// The database this store is built on (to build a workspace storage on it too).
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The highest execstore migration applied to this database (1 for this build's
    /// schema; more if a newer build migrated the file).
    pub fn schema_version(&self) -> Result<i64> {
        let conn = self.read()?;
        let version = conn
            .prepare_cached(&self.sql.schema_version)
            .db()?
            .query_row([], |row| row.get(0))
            .db()?;
        Ok(version)
    }

    /// From migration 12, the store's writer keeps the counts by definition, status and
    /// root-ness in its own statements (a step that keeps its status writes none), and the
    /// writer's connection runs without triggers, so SQLite builds no trigger program into
    /// its writes, while no other trigger is there (`db/triggers.rs`). Every other connection
    /// (harel's, a hand-written statement, an older build) runs the triggers, which keep the
    /// same counts. From migration 13 the writer sets the key columns in its statements too,
    /// and keeps their triggers off as well (`keys.rs`). Only on a file at exactly this
    /// build's latest migration: a newer build's triggers may count otherwise, and are left
    /// to do so.
    fn keep_counts(&self, conn: &Connection, tables: &Tables) -> Result<()> {
        if schema::at_latest(conn, tables)?
            && execstore::kit::migration::latest(schema::MIGRATIONS) >= i64::from(schema::WRITER_KEEPS_COUNTS)
        {
            self.db.shared.triggers.keep(
                self.sql
                    .counts_triggers
                    .iter()
                    .chain(&self.sql.key_triggers)
                    .cloned(),
            );
        }
        Ok(())
    }

    /// The database's page size in bytes (`PRAGMA page_size`): 4096 for a database this store
    /// created, on every target; a file created elsewhere keeps its own.
    pub fn page_size(&self) -> Result<u32> {
        self.read()?
            .query_row("PRAGMA page_size", [], |row| row.get(0))
            .db()
    }

    /// The writer connection, owning its turn (a workspace transaction on the same [`Db`] is
    /// waited for). A panic while it was held cannot have left a transaction applied halfway
    /// (the transaction rolls back when unwinding drops it), so a poisoned lock is taken
    /// over; any transaction somehow still open is rolled back first.
    fn lock(&self) -> Result<Held<'_>> {
        self.db.shared.held_writer()
    }

    /// The connection reads use: the reader of a file database, else the only one (once no
    /// transaction owns it).
    fn read(&self) -> Result<Held<'_>> {
        self.db.shared.read()
    }

    /// The connection a point read (a load, a dedupe check) uses: the writer, when no commit
    /// or transaction holds it, else the reader. Both see every commit that returned; the
    /// writer's page cache stays warm across its own commits, where the reader's is dropped
    /// whenever another connection wrote, so an engine that loads and then commits reads its
    /// pages from memory rather than again from the file. Listings keep to the reader.
    fn point_read(&self) -> Result<Held<'_>> {
        if self.db.has_reader() {
            if let Some(held) = self.db.shared.idle_writer() {
                return Ok(held);
            }
        }
        self.read()
    }

    /// Runs `f` in one `BEGIN IMMEDIATE` transaction and commits it if `f` succeeds; any error
    /// (from `f` or the commit) or a panic rolls everything back. BEGIN and COMMIT are cached
    /// statements like the rest, so a commit parses no SQL.
    fn write<T>(&self, f: impl FnOnce(&Connection, &Stmts) -> Result<T>) -> Result<T> {
        let conn = self.lock()?;
        conn.prepare_cached(&self.sql.begin_immediate)
            .db()?
            .execute([])
            .db()?;
        let tx = OpenTransaction(&conn);
        self.db.shared.triggers.began(tx.0)?;
        let out = f(tx.0, &self.sql)?;
        tx.0.prepare_cached(&self.sql.commit).db()?.execute([]).db()?;
        drop(tx);
        drop(conn);
        #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.committed();
        }
        Ok(out)
    }

    /// One event step's statements, in the open transaction `tx`: the CAS write of `p`, then
    /// its outbox, dedupe, spawn, timer and trace rows. A lost CAS is a `Conflict`, found
    /// before anything is written. `commit` and `commit_batch` both run this.
    fn apply(&self, tx: &Connection, p: &PreparedCommit) -> Result<Vec<i64>> {
        let s = &self.sql;
        let writes = s.writes();
        let w = &p.write;
        let cas = |sql: &str| -> Result<usize> {
            tx.prepare_cached(sql)
                .db()?
                .execute(params![w.data, w.version, w.id, w.expected, w.definition_id])
                .db()
        };
        let mut updated;
        if w.expected == 0 && self.insert_new(tx, w, writes.insert_execution)? {
            // A new execution: one INSERT (and its count), as harel saves version 0.
            updated = 1;
        } else if self.keeps_counts() {
            // The step of an execution that stays counted where it was writes no count. (The
            // writer keeps the counts only at the latest migration, so the key columns are
            // there.)
            updated = tx
                .prepare_cached(&s.keyed.update_cas_same_counts)
                .db()?
                .execute(params![
                    w.data,
                    w.version,
                    w.id,
                    w.expected,
                    w.definition_id,
                    w.keys.status,
                    w.keys.root
                ])
                .db()?;
            // Else a change of definition, status or root-ness, or a conflict.
            if updated == 0 && self.uncount(tx, &w.id, w.expected)? {
                self.count(tx, w)?;
                updated = cas(writes.update_cas_moved)?;
            }
        } else {
            updated = cas(writes.update_cas)?;
            // Else a change of definition (the triggers move its counts), or a conflict.
            if updated == 0 {
                updated = cas(writes.update_cas_moved)?;
            }
        }
        // A new execution was inserted above, or its id was taken: none written is a conflict.
        if updated == 0 {
            let found: Option<i64> = tx
                .prepare_cached(&s.select_version)
                .db()?
                .query_row([&w.id], |row| row.get(0))
                .optional()
                .db()?;
            return Err(StoreError::Conflict {
                id: w.id.clone(),
                expected: w.expected,
                found,
            });
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

    /// Whether this store's writer keeps the counts itself (see [`SqliteStore::keep_counts`]):
    /// inside a write transaction.
    fn keeps_counts(&self) -> bool {
        self.db.shared.triggers.off()
    }

    /// Counts the execution `w` writes where its keys say (for a writer that keeps the
    /// counts).
    fn count(&self, tx: &Connection, w: &PreparedWrite) -> Result<()> {
        tx.prepare_cached(&self.sql.counts_add)
            .db()?
            .execute(params![w.definition_id, w.keys.status, w.keys.root, 1])
            .db()?;
        Ok(())
    }

    /// The INSERT of a new execution (`expected` 0), counted where the writer keeps the
    /// counts; `false`, having written nothing, when the id is taken (the CAS path then finds
    /// the conflict, or a row a hand stored at version 0, which it overwrites as the memory
    /// store does).
    fn insert_new(&self, tx: &Connection, w: &PreparedWrite, insert: &str) -> Result<bool> {
        let inserted =
            tx.prepare_cached(insert)
                .db()?
                .execute(params![w.id, w.definition_id, w.data, w.version]);
        match inserted {
            Ok(_) => {}
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::ConstraintViolation
                    && tx.prepare_cached(&self.sql.exists).db()?.exists([&w.id]).db()? =>
            {
                return Ok(false)
            }
            Err(e) => return Err(e).db(),
        }
        if self.keeps_counts() {
            self.count(tx, w)?;
        }
        Ok(true)
    }

    /// Takes the execution `id`, if it is at `version`, out of the counts, when this store's
    /// writer keeps them; whether it did (false for a row that is not JSON, never counted).
    fn uncount(&self, tx: &Connection, id: &str, version: i64) -> Result<bool> {
        if !self.keeps_counts() {
            return Ok(false);
        }
        let s = &self.sql;
        let counted: Option<(String, String, bool)> = tx
            .prepare_cached(&s.counted_as)
            .db()?
            .query_row(params![id, version], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()
            .db()?;
        let Some((definition, status, root)) = counted else {
            return Ok(false);
        };
        tx.prepare_cached(&s.counts_add)
            .db()?
            .execute(params![definition, status, root, -1])
            .db()?;
        Ok(true)
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

/// The statements that create harel 0.9's six store tables under `prefix` (`None`: the bare
/// names), idempotently, as harel's own schema does (`harel.engine.schema.store_schema`): for
/// a migration tool that owns the schema of a store opened with
/// [`SqliteOptions::create_schema`] off. No index or table of execstore's.
pub fn harel_schema(prefix: Option<&str>) -> Result<Vec<String>> {
    Ok(schema::harel_tables(&Tables::new(prefix)?))
}

/// The sets of execution tables the SQLite file at `path` holds: each prefix (`None`: the
/// bare names) under which all six of harel's tables are there, for a tool that opens a file
/// without being told its prefix (`execstore::kit::names::pick_prefix`). A read-only probe:
/// nothing is created or changed. A missing file is [`StoreError::NotFound`].
pub fn execution_prefixes(path: impl AsRef<Path>) -> Result<Vec<Option<String>>> {
    let conn = db::probe(path.as_ref())?;
    db::execution_prefixes_of(&conn)
}

/// [`execution_prefixes`] of the database `name` kept by the VFS `vfs` (a wasm image),
/// opened read-only and closed again.
pub fn execution_prefixes_in_vfs(name: &str, vfs: &str) -> Result<Vec<Option<String>>> {
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags_and_vfs(name, flags, vfs).db()?;
    let found = db::execution_prefixes_of(&conn);
    conn.close().map_err(|(_, e)| e).db()?;
    found
}

/// Whether the SQLite file at `path` holds the execution store's tables under `prefix`
/// (`None`: the bare names; `Some("harel")`: harel's), judged by its `executions` table. A
/// read-only probe: nothing is created or changed. A missing file is
/// [`StoreError::NotFound`], a prefix that is not a valid one [`StoreError::InvalidInput`].
pub fn has_execution_tables(path: impl AsRef<Path>, prefix: Option<&str>) -> Result<bool> {
    let tables = Tables::new(prefix)?;
    let conn = db::probe(path.as_ref())?;
    db::has_table(&conn, &tables.executions)
}
