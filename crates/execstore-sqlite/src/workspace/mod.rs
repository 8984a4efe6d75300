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

use crate::db::error::Db;
use crate::db::{self, Synchronous};

/// How [`SqliteWorkspaceStorage::open`] opens a database.
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
    /// `PRAGMA synchronous` of the writer; see [`Synchronous`].
    pub synchronous: Synchronous,
    /// How long a transaction waits for another process's write lock before failing with a
    /// retryable [`StoreError::Backend`].
    pub busy_timeout: Duration,
    /// Opens an existing database for reading only, with a SQLite read-only connection: nothing
    /// is created, migrated or switched to WAL, every write is refused, and SQLite's recovery
    /// never runs (the file, its `-wal` and `-journal` are left as they are; a hot journal is
    /// refused). As [`SqliteOptions::read_only`](crate::SqliteOptions::read_only) says.
    pub read_only: bool,
    /// With [`read_only`](Self::read_only): open tables recorded at a schema version other
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
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(5),
            read_only: false,
            any_version: false,
        }
    }
}

impl fmt::Debug for SqliteWorkspaceOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteWorkspaceOptions")
            .field("clock", &self.clock.as_ref().map_or("system", |_| "injected"))
            .field("poll_interval", &self.poll_interval)
            .field("synchronous", &self.synchronous)
            .field("busy_timeout", &self.busy_timeout)
            .field("read_only", &self.read_only)
            .field("any_version", &self.any_version)
            .finish()
    }
}

impl SqliteWorkspaceOptions {
    /// The defaults: the system clock, a 500 ms poll interval, [`Synchronous::Full`], a 5 s
    /// busy timeout, read-write.
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

    /// Sets `PRAGMA synchronous`.
    pub fn synchronous(mut self, synchronous: Synchronous) -> Self {
        self.synchronous = synchronous;
        self
    }

    /// Sets how long a write waits for another process's lock.
    pub fn busy_timeout(mut self, busy_timeout: Duration) -> Self {
        self.busy_timeout = busy_timeout;
        self
    }

    /// Opens for reading only (see [`SqliteWorkspaceOptions::read_only`]).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
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

/// What the storage and its transactions share.
pub(crate) struct Inner {
    // Declared (so dropped) before the writer: the writer closes last, checkpointing the WAL.
    /// The `query_only` reader; `None` when the writer is the only connection (read-only).
    reader: Option<Mutex<Connection>>,
    /// Every write, and every read of a read-only storage.
    writer: Mutex<Connection>,
    /// A read-only file opened as a snapshot, until a writer shows up (see `db::Snapshot`).
    snapshot: Option<db::Snapshot>,
    /// Who owns the writer (a transaction, a lease or cursor write, or a read on the one
    /// connection), and who waits.
    busy: Mutex<Turns>,
    turn: Condvar,
    /// Commits through this storage, for [`Inner::wait_for_commit`].
    commits: Mutex<u64>,
    committed: Condvar,
    poll_interval: Duration,
    /// How long a read on the one connection waits for an open transaction.
    busy_timeout: Duration,
    read_only: bool,
}

impl Inner {
    /// The writer connection, locked (a poisoned lock is taken over: whatever a panic left
    /// open is rolled back by the transaction's drop, or at the next begin).
    pub(crate) fn writer(&self) -> MutexGuard<'_, Connection> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The connection for reads outside transactions: the `query_only` reader; or, with one
    /// connection, the writer once no transaction owns it (so a read never sees another
    /// transaction's uncommitted writes: it waits for that transaction to end, or on
    /// wasm32-unknown-unknown, where waiting would never end, is refused).
    pub(crate) fn reader(&self) -> Result<Reader<'_>> {
        match &self.reader {
            Some(reader) => Ok(Reader {
                conn: reader.lock().unwrap_or_else(PoisonError::into_inner),
                turn: None,
            }),
            None if self.read_only => {
                let mut conn = self.writer();
                if let Some(snapshot) = &self.snapshot {
                    snapshot.refresh(&mut conn);
                }
                Ok(Reader { conn, turn: None })
            }
            None => {
                self.take_turn_within(self.busy_timeout)?;
                Ok(Reader {
                    conn: self.writer(),
                    turn: Some(self),
                })
            }
        }
    }

    fn writable(&self) -> Result<()> {
        if self.read_only {
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
    fn take_turn(&self) -> Result<()> {
        let mut turns = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        if cfg!(all(target_family = "wasm", target_os = "unknown")) && turns.taken() {
            // One thread: waiting would never end.
            return Err(StoreError::Backend {
                message: "a transaction is already open on this storage".into(),
                retryable: false,
                source: None,
            });
        }
        let ticket = turns.ticket();
        while turns.serving != ticket {
            turns = self.turn.wait(turns).unwrap_or_else(PoisonError::into_inner);
        }
        Ok(())
    }

    /// [`Inner::take_turn`], giving up after `wait` with a retryable error (a read on the one
    /// connection, which the thread holding the open transaction may itself be making).
    fn take_turn_within(&self, wait: Duration) -> Result<()> {
        let mut turns = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        let open = || StoreError::Backend {
            message: "a transaction is open on this storage's one connection: a read outside it \
                      must wait for it to end"
                .into(),
            retryable: true,
            source: None,
        };
        if cfg!(all(target_family = "wasm", target_os = "unknown")) {
            // One thread: waiting would never end (and a timed wait reads `Instant`, which
            // wasm32-unknown-unknown lacks: it panics).
            if turns.taken() {
                return Err(open());
            }
            turns.ticket();
            return Ok(());
        }
        let ticket = turns.ticket();
        let (mut turns, _) = self
            .turn
            .wait_timeout_while(turns, wait, |turns| turns.serving != ticket)
            .unwrap_or_else(PoisonError::into_inner);
        if turns.serving != ticket {
            // Its turn is skipped when it comes.
            turns.abandoned.insert(ticket);
            return Err(open());
        }
        Ok(())
    }

    /// Hands the writer to the next transaction.
    pub(crate) fn end_turn(&self) {
        self.busy.lock().unwrap_or_else(PoisonError::into_inner).advance();
        self.turn.notify_all();
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
            let out = f(open.0)?;
            open.0.prepare_cached(sql::COMMIT).db()?.execute([]).db()?;
            Ok(out)
        })();
        self.end_turn();
        out
    }
}

/// The writer's turns, first come first served (a ticket lock): the owner holds ticket
/// `serving`; tickets up to `next` wait in order; a waiter that gave up leaves its ticket in
/// `abandoned`, skipped when its turn comes.
#[derive(Default)]
struct Turns {
    next: u64,
    serving: u64,
    abandoned: std::collections::BTreeSet<u64>,
}

impl Turns {
    /// Whether someone owns the writer (or waits for it).
    fn taken(&self) -> bool {
        self.serving != self.next
    }

    /// The next ticket.
    fn ticket(&mut self) -> u64 {
        let ticket = self.next;
        self.next += 1;
        ticket
    }

    /// Ends the owner's turn: the next ticket not abandoned is served.
    fn advance(&mut self) {
        self.serving += 1;
        while self.abandoned.remove(&self.serving) {
            self.serving += 1;
        }
    }
}

/// A connection for reads, locked; with one connection, it also holds the writer's turn
/// until dropped.
pub(crate) struct Reader<'a> {
    conn: MutexGuard<'a, Connection>,
    turn: Option<&'a Inner>,
}

impl std::ops::Deref for Reader<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Some(inner) = self.turn {
            inner.end_turn();
        }
    }
}

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
            .field("read_only", &inner.read_only)
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
        let path = path.as_ref();
        if path.as_os_str() == ":memory:" {
            return Self::open_in_memory(options);
        }
        let clock = options.take_clock()?;
        if options.read_only {
            let (conn, snapshot) = db::open_read_only(path, options.busy_timeout)?;
            schema::check(&conn, options.any_version)?;
            return Ok(Self::new(conn, None, snapshot, clock, &options));
        }
        let mut conn = db::open_file(path)?;
        db::configure(&conn, options.busy_timeout, false)?;
        db::make_writer(&conn, options.busy_timeout, options.synchronous)?;
        schema::migrate(&mut conn)?;
        let reader = db::open_reader(path, options.busy_timeout)?;
        Ok(Self::new(conn, Some(reader), None, clock, &options))
    }

    /// Opens a private in-memory database with reflexr's tables: everything is lost when the
    /// last clone is dropped. One connection serves reads and writes, so a read outside a
    /// transaction waits for an open transaction to end (on wasm32-unknown-unknown, where
    /// nothing else can end it, such a read is refused with a [`StoreError::Backend`] error).
    /// `read_only` is refused: an empty database has nothing to read.
    pub fn open_in_memory(options: SqliteWorkspaceOptions) -> Result<Self> {
        if options.read_only {
            return Err(StoreError::invalid(
                "read_only",
                "an in-memory database starts empty: open it read-write",
            ));
        }
        let clock = options.take_clock()?;
        let mut conn = Connection::open_in_memory().db()?;
        db::configure(&conn, options.busy_timeout, false)?;
        schema::migrate(&mut conn)?;
        Ok(Self::new(conn, None, None, clock, &options))
    }

    /// wasm32 only: opens (creating if needed) the database `name` kept by the SQLite VFS
    /// registered as `vfs` (sqlite-wasm-vfs's `sahpool` over the Origin Private File System,
    /// or the in-memory `memvfs`; the caller installs it first), with reflexr's tables as
    /// [`SqliteWorkspaceStorage::open`] makes them. One connection serves reads and writes
    /// (such a VFS serves one connection per file), holding the file in exclusive locking
    /// mode, in WAL where the VFS can do it; a read outside a transaction while one is open is
    /// refused (nothing else could end it). `synchronous` applies as on a file. With
    /// `read_only`, the file must hold reflexr's tables and nothing is written.
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    pub fn open_in_vfs(name: &str, vfs: &str, options: SqliteWorkspaceOptions) -> Result<Self> {
        use rusqlite::OpenFlags;
        if name.is_empty() {
            return Err(StoreError::invalid("name", "must not be empty"));
        }
        let clock = options.take_clock()?;
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if !options.read_only {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let mut conn = db::open_in_vfs(name, flags, vfs)?;
        db::configure(&conn, options.busy_timeout, options.read_only)?;
        if options.read_only {
            schema::check(&conn, options.any_version)?;
            return Ok(Self::new(conn, None, None, clock, &options));
        }
        conn.execute_batch("PRAGMA locking_mode = EXCLUSIVE").db()?;
        // Answers the mode in force: `wal`, or the VFS's journal if it cannot do WAL.
        conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get::<_, String>(0))
            .db()?;
        db::set_synchronous(&conn, options.synchronous)?;
        schema::migrate(&mut conn)?;
        Ok(Self::new(conn, None, None, clock, &options))
    }

    fn new(
        writer: Connection,
        reader: Option<Connection>,
        snapshot: Option<db::Snapshot>,
        clock: Arc<dyn Clock>,
        options: &SqliteWorkspaceOptions,
    ) -> Self {
        let driver = SqliteWorkspaceDriver {
            inner: Arc::new(Inner {
                reader: reader.map(Mutex::new),
                writer: Mutex::new(writer),
                snapshot,
                busy: Mutex::new(Turns::default()),
                turn: Condvar::new(),
                commits: Mutex::new(0),
                committed: Condvar::new(),
                poll_interval: options.poll_interval,
                busy_timeout: options.busy_timeout,
                read_only: options.read_only,
            }),
        };
        SqliteWorkspaceStorage(WorkspaceFront::new(driver, clock))
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
