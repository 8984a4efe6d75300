//! The workspace log on SQLite: [`SqliteWorkspaceStorage`], reflexr 0.1.1's `SqlStorage` over
//! the same `reflexr_*` tables. The schema is in `schema`, the statements in `sql`, a
//! transaction in `tx`, the reads outside transactions in `reads` and `due_runs` in `due`.
//!
//! One writer connection serves every write: a transaction owns it from `begin` to its end
//! (a gate, so the transaction can be moved between threads), and is one `BEGIN IMMEDIATE`
//! transaction of SQLite, which also serializes it with other processes' writers. Reads
//! outside transactions go to a second, `query_only` connection, so they never wait for an
//! open transaction and see every commit that returned.

mod due;
mod reads;
mod schema;
mod search;
mod sql;
#[cfg(test)]
mod tests;
mod tx;

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use execstore::workspace::{AsWorkspaceFront, Clock, WorkspaceFront};
use execstore::{Result, StoreError};
use rusqlite::Connection;

use crate::db::error::Db as _;
use crate::db::{self, ConnectOptions, Db};

/// The workspace log's options, for [`SqliteWorkspaceStorage::on`] (and the connection
/// settings [`SqliteWorkspaceStorage::open`] opens its [`Db`] with).
#[derive(Clone)]
#[non_exhaustive]
pub struct SqliteWorkspaceOptions {
    /// Where envelope timestamps and lease expiry come from; `None` is the system clock in
    /// UTC ([`execstore::workspace::SystemClock`]), which `wasm32-unknown-unknown` lacks (a
    /// clock is needed there).
    pub clock: Option<Arc<dyn Clock>>,
    /// How often [`wait_for_append`](execstore::workspace::WorkspaceStorage::wait_for_append)
    /// looks for another process's commits; this storage's own commits wake it at once.
    pub poll_interval: Duration,
    /// The connection settings [`SqliteWorkspaceStorage::open`] opens its [`Db`] with
    /// (`synchronous`, the busy timeout, read-only; see [`ConnectOptions`]).
    /// [`SqliteWorkspaceStorage::on`] does not read them: the `Db`'s own are in force.
    pub connect: ConnectOptions,
    /// With a read-only [`Db`]: open tables recorded at a schema version other
    /// than the one this build knows too (a newer reflexr's), reading them as that one's;
    /// [`SqliteWorkspaceStorage::schema_version`] says which version the file records, so the
    /// caller can warn that what it shows may be misread. Ignored when writing.
    pub any_version: bool,
}

impl Default for SqliteWorkspaceOptions {
    fn default() -> Self {
        SqliteWorkspaceOptions {
            clock: None,
            poll_interval: Duration::from_millis(500),
            connect: ConnectOptions::default(),
            any_version: false,
        }
    }
}

impl fmt::Debug for SqliteWorkspaceOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteWorkspaceOptions")
            .field("clock", &self.clock.as_ref().map_or("system", |_| "injected"))
            .field("poll_interval", &self.poll_interval)
            .field("connect", &self.connect)
            .field("any_version", &self.any_version)
            .finish()
    }
}

impl SqliteWorkspaceOptions {
    /// The defaults: the system clock, a 500 ms poll interval,
    /// [`Synchronous::Full`](crate::Synchronous::Full), a 5 s busy timeout, read-write.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Sets how often a wait looks for other processes' commits.
    pub fn poll_interval(mut self, poll_interval: Duration) -> Self {
        self.poll_interval = poll_interval;
        self
    }

    /// Sets every connection setting at once (see [`SqliteWorkspaceOptions::connect`]).
    pub fn connect(mut self, connect: ConnectOptions) -> Self {
        self.connect = connect;
        self
    }

    /// Reads tables at another schema version too (see [`SqliteWorkspaceOptions::any_version`]).
    pub fn any_version(mut self, any_version: bool) -> Self {
        self.any_version = any_version;
        self
    }

    fn take_clock(&self) -> Result<Arc<dyn Clock>> {
        match &self.clock {
            Some(clock) => Ok(clock.clone()),
            #[cfg(not(all(target_family = "wasm", target_os = "unknown")))]
            None => Ok(Arc::new(execstore::workspace::SystemClock)),
            #[cfg(all(target_family = "wasm", target_os = "unknown"))]
            None => Err(StoreError::invalid(
                "clock",
                "wasm32-unknown-unknown has no system clock: pass one",
            )),
        }
    }
}

crate::db::handle::connect_builders!(SqliteWorkspaceOptions, connect);

/// What the storage and its transactions share.
pub(crate) struct Inner {
    /// The database: its writer (every write, and every read where there is no reader), its
    /// reader, and the turns on the writer (one transaction, lease or cursor write, or read
    /// on the one connection at a time; an execution store on the same `Db` takes turns too).
    db: Db,
    /// Commits through this storage, for [`Inner::wait_for_commit`].
    commits: Mutex<u64>,
    committed: Condvar,
    poll_interval: Duration,
}

impl Inner {
    /// The writer connection, locked (a poisoned lock is taken over: whatever a panic left
    /// open is rolled back by the transaction's drop, or at the next begin).
    pub(crate) fn writer(&self) -> MutexGuard<'_, Connection> {
        self.db.shared.writer()
    }

    /// The connection for reads outside transactions: the `query_only` reader; or, with one
    /// connection, the writer once no transaction owns it (so a read never sees another
    /// transaction's uncommitted writes: it waits for that transaction to end, or on
    /// wasm32-unknown-unknown, where waiting would never end, is refused).
    pub(crate) fn reader(&self) -> Result<Reader<'_>> {
        self.db.shared.read()
    }

    fn writable(&self) -> Result<()> {
        if self.db.is_read_only() {
            return Err(StoreError::Backend {
                message: "the workspace storage was opened read-only: writes are refused".into(),
                retryable: false,
                source: None,
            });
        }
        Ok(())
    }

    /// Waits until nothing owns the writer, then owns it: one transaction at a time from its
    /// begin to its end, whichever thread it moves to, in the order they asked.
    /// After `BEGIN IMMEDIATE` on the writer `conn`: whether it runs the triggers
    /// (`db/triggers.rs`).
    pub(crate) fn began(&self, conn: &Connection) -> Result<()> {
        self.db.shared.triggers.began(conn)
    }

    fn take_turn(&self) -> Result<()> {
        self.db.shared.take_turn()
    }

    /// Hands the writer to the next transaction.
    pub(crate) fn end_turn(&self) {
        self.db.shared.end_turn();
    }

    /// Wakes every waiter of [`Inner::wait_for_commit`].
    pub(crate) fn notify_commit(&self) {
        *self.commits.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.committed.notify_all();
    }

    /// Returns `Ok(true)` as soon as `grown` says the log grew: at once, or when a commit
    /// through this storage wakes it; otherwise after `min(timeout, poll_interval)`, with
    /// `grown`'s last answer (another process's commits are seen only then).
    pub(crate) fn wait_for_commit(
        &self,
        timeout: Duration,
        grown: impl Fn() -> Result<bool>,
    ) -> Result<bool> {
        let mut seen = *self.commits.lock().unwrap_or_else(PoisonError::into_inner);
        if grown()? {
            return Ok(true);
        }
        if cfg!(all(target_family = "wasm", target_os = "unknown")) {
            // No threads: nothing can commit while this waits.
            return Ok(false);
        }
        let deadline = Instant::now() + timeout.min(self.poll_interval);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return grown();
            }
            let commits = self.commits.lock().unwrap_or_else(PoisonError::into_inner);
            let (commits, _) = self
                .committed
                .wait_timeout_while(commits, left, |c| *c == seen)
                .unwrap_or_else(PoisonError::into_inner);
            if *commits != seen {
                seen = *commits;
                drop(commits);
                if grown()? {
                    return Ok(true);
                }
            }
        }
    }

    /// Runs `f` on the writer, owning it, in one `BEGIN IMMEDIATE` transaction committed if
    /// `f` succeeds (lease and cursor writes).
    fn write<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        self.writable()?;
        self.take_turn()?;
        let out = (|| {
            let conn = self.writer();
            tx::reset(&conn)?;
            conn.prepare_cached(sql::BEGIN_IMMEDIATE).db()?.execute([]).db()?;
            let open = db::OpenTransaction(&conn);
            self.db.shared.triggers.began(open.0)?;
            let out = f(open.0)?;
            open.0.prepare_cached(sql::COMMIT).db()?.execute([]).db()?;
            Ok(out)
        })();
        self.end_turn();
        out
    }
}

/// A connection for reads, locked; with one connection, it also holds the writer's turn
/// until dropped.
pub(crate) type Reader<'a> = db::Held<'a>;

/// reflexr's workspaces in a SQLite file: [`execstore::workspace::WorkspaceStorage`] over
/// reflexr 0.1.1's `reflexr_*` tables, byte for byte what reflexr's `SqlStorage` writes, so
/// reflexr and execstore read and write each other's files.
///
/// Share one per process (it is `Send + Sync`, and [`Clone`]s share everything): its
/// transactions take turns on one writer connection, in the order they begin, and other
/// processes' transactions wait for SQLite's write lock. A transaction must end before the
/// same thread begins another or writes a lease or cursor, which would wait for it. Reads
/// outside transactions never wait for one.
///
/// The contract's checks, clock reads and envelope numbering are the core's
/// [`WorkspaceFront`]; this crate's part is the [`SqliteWorkspaceDriver`] behind it.
#[derive(Clone)]
pub struct SqliteWorkspaceStorage(WorkspaceFront<SqliteWorkspaceDriver>);

impl fmt::Debug for SqliteWorkspaceStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.0.driver().inner;
        f.debug_struct("SqliteWorkspaceStorage")
            .field("db", &inner.db)
            .field("poll_interval", &inner.poll_interval)
            .finish_non_exhaustive()
    }
}

impl AsWorkspaceFront for SqliteWorkspaceStorage {
    type Driver = SqliteWorkspaceDriver;
    fn front(&self) -> &WorkspaceFront<SqliteWorkspaceDriver> {
        &self.0
    }
}

/// The SQLite backend's [`WorkspaceDriver`](execstore::workspace::WorkspaceDriver): the
/// statements on the writer and reader connections, nothing else.
#[derive(Clone)]
pub struct SqliteWorkspaceDriver {
    inner: Arc<Inner>,
}

impl SqliteWorkspaceStorage {
    /// Opens (creating if needed) the database at `path`, sets it to WAL mode and creates
    /// reflexr's tables at schema version `0008` if it has none (recording the version in
    /// `reflexr_alembic_version`, as reflexr's `migrate()` does). A file whose tables are at
    /// another version is refused with an error naming both. With
    /// [`read_only`](SqliteWorkspaceOptions::read_only) nothing is created or changed, and a
    /// file without reflexr's tables is [`StoreError::NotFound`] (`"reflexr tables"`). The
    /// path `":memory:"` opens a private in-memory database, as
    /// [`SqliteWorkspaceStorage::open_in_memory`].
    pub fn open(path: impl AsRef<Path>, options: SqliteWorkspaceOptions) -> Result<Self> {
        options.take_clock()?;
        let db = Db::open(path, options.connect.clone())?;
        Self::on(&db, options)
    }

    /// Opens a private in-memory database with reflexr's tables: everything is lost when the
    /// last clone is dropped. One connection serves reads and writes, so a read outside a
    /// transaction waits for an open transaction to end (on wasm32-unknown-unknown, where
    /// nothing else can end it, such a read is refused with a [`StoreError::Backend`] error).
    /// `read_only` is refused: an empty database has nothing to read.
    pub fn open_in_memory(options: SqliteWorkspaceOptions) -> Result<Self> {
        if options.connect.read_only {
            return Err(memory_read_only());
        }
        options.take_clock()?;
        let db = Db::open_in_memory(options.connect.clone())?;
        Self::on(&db, options)
    }

    /// The workspace log on `db`, with the options of this contract (clock, poll interval,
    /// `any_version`; the connection settings are `db`'s, [`SqliteWorkspaceOptions::connect`]
    /// is not read): creates reflexr's tables at schema version `0008` if it has none, as
    /// [`SqliteWorkspaceStorage::open`] says; on a read-only `db` nothing is created, and a
    /// database without reflexr's tables is [`StoreError::NotFound`] (`"reflexr tables"`).
    /// An execution store on the same `db` shares its connections: its commits and this
    /// storage's transactions take turns on the one writer.
    pub fn on(db: &Db, options: SqliteWorkspaceOptions) -> Result<Self> {
        let clock = options.take_clock()?;
        if db.is_read_only() {
            if matches!(db.kind(), db::Kind::Memory) {
                return Err(memory_read_only());
            }
            schema::check(&*db.shared.read()?, options.any_version)?;
        } else {
            schema::migrate(&mut *db.shared.held_writer()?)?;
        }
        let driver = SqliteWorkspaceDriver {
            inner: Arc::new(Inner {
                db: db.clone(),
                commits: Mutex::new(0),
                committed: Condvar::new(),
                poll_interval: options.poll_interval,
            }),
        };
        Ok(SqliteWorkspaceStorage(WorkspaceFront::new(driver, clock)))
    }

    /// wasm32 only: opens (creating if needed) the database `name` kept by the SQLite VFS
    /// registered as `vfs` (sqlite-wasm-vfs's `sahpool` over the Origin Private File System,
    /// or the in-memory `memvfs`; the caller installs it first; see [`Db::open_in_vfs`]),
    /// with reflexr's tables as [`SqliteWorkspaceStorage::open`] makes them. One connection
    /// serves reads and writes (such a VFS serves one connection per file), holding the file
    /// in exclusive locking mode, in WAL where the VFS can do it; a read outside a
    /// transaction while one is open is refused (nothing else could end it). `synchronous`
    /// applies as on a file. With `read_only`, the file must hold reflexr's tables and
    /// nothing is written.
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    pub fn open_in_vfs(name: &str, vfs: &str, options: SqliteWorkspaceOptions) -> Result<Self> {
        if name.is_empty() {
            return Err(StoreError::invalid("name", "must not be empty"));
        }
        options.take_clock()?;
        let db = Db::open_in_vfs(name, vfs, options.connect.clone())?;
        Self::on(&db, options)
    }

    /// The database this storage is built on (to build an execution store on it too).
    pub fn db(&self) -> &Db {
        &self.0.driver().inner.db
    }

    /// The schema version the database records (`"0008"`, or another one when opened with
    /// [`any_version`](SqliteWorkspaceOptions::any_version)).
    pub fn schema_version(&self) -> Result<String> {
        let conn = self.0.driver().inner.reader()?;
        conn.query_row("SELECT version_num FROM reflexr_alembic_version", [], |row| {
            row.get(0)
        })
        .db()
    }
}

/// The reflexr schema version (`reflexr_alembic_version`) this build reads and writes.
pub const WORKSPACE_SCHEMA_VERSION: &str = schema::SCHEMA_VERSION;

/// Whether the SQLite file at `path` holds reflexr's workspace tables (`reflexr_workspaces`).
/// A read-only probe: nothing is created or changed. A missing file is
/// [`StoreError::NotFound`].
pub fn has_workspace_tables(path: impl AsRef<Path>) -> Result<bool> {
    let conn = db::probe(path.as_ref())?;
    db::has_table(&conn, schema::TABLES[0])
}

/// An in-memory database opened read-only: refused.
fn memory_read_only() -> StoreError {
    StoreError::invalid(
        "read_only",
        "an in-memory database starts empty: open it read-write",
    )
}
