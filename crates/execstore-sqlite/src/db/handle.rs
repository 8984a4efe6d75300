//! [`Db`]: one SQLite database opened once, its connections and their settings, which both
//! contracts' stores are built on ([`SqliteStore::on`](crate::SqliteStore::on),
//! [`SqliteWorkspaceStorage::on`](crate::SqliteWorkspaceStorage::on)), after sqlx's
//! `ConnectOptions`: the connection settings live here once, each contract keeps only its
//! own options.
//!
//! A file has one writer connection and one `query_only` reader; `:memory:`, a read-only open
//! and a VFS's database have one connection for both. Whoever writes takes a turn on the
//! writer first (a ticket lock, first come first served), so an execution store's commit and
//! a workspace transaction on one `Db` never interleave their statements on the connection.

use std::collections::BTreeSet;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use execstore::{Result, StoreError};
use rusqlite::Connection;

use super::error::Db as _;
use super::{Snapshot, Synchronous};

/// How [`Db::open`] connects: the settings of every connection to the database, whichever
/// contract uses it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// `PRAGMA synchronous` of the writer; see [`Synchronous`].
    pub synchronous: Synchronous,
    /// How long a write waits for another connection's write lock before failing with a
    /// retryable [`StoreError::Backend`] (and a read on the one connection for an open
    /// transaction).
    pub busy_timeout: Duration,
    /// Opens an existing database for reading only, with a SQLite read-only connection
    /// (`SQLITE_OPEN_READONLY`): nothing is created, migrated or switched to WAL, every write
    /// fails, and SQLite's own recovery never runs: the file, its `-wal` and its `-journal`
    /// are left byte for byte as they were, whatever a crashed writer left (only a `-shm`
    /// index may be built or updated beside a `-wal`). A hot `-journal` is refused with a
    /// [`ReadOnlyRefusal`](crate::ReadOnlyRefusal) as the error's source; a file with neither
    /// `-wal` nor `-journal` is read as it is (`immutable=1`, creating no file) until a writer
    /// shows up. For tools that look at a file they do not own, such as the CLI on a database
    /// harel keeps writing.
    pub read_only: bool,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(5),
            read_only: false,
        }
    }
}

impl ConnectOptions {
    /// The defaults: [`Synchronous::Full`], a 5 s busy timeout, read-write.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The builders of the connection settings, written once for every options type that carries
/// a [`ConnectOptions`]: the handle's own and each contract's (whose `open` makes a [`Db`]
/// with them). `connect_builders!(Type)` for [`ConnectOptions`] itself,
/// `connect_builders!(Type, field)` for a type that keeps them in `field`.
macro_rules! connect_builders {
    ($ty:ty $(, $field:ident)?) => {
        impl $ty {
            /// Sets `PRAGMA synchronous` (a connection setting: see [`ConnectOptions`]).
            pub fn synchronous(mut self, synchronous: $crate::Synchronous) -> Self {
                self$(.$field)?.synchronous = synchronous;
                self
            }

            /// Sets how long a write waits for the write lock (a connection setting).
            pub fn busy_timeout(mut self, busy_timeout: std::time::Duration) -> Self {
                self$(.$field)?.busy_timeout = busy_timeout;
                self
            }

            /// Opens for reading only (see [`ConnectOptions::read_only`]).
            pub fn read_only(mut self, read_only: bool) -> Self {
                self$(.$field)?.read_only = read_only;
                self
            }
        }
    };
}
pub(crate) use connect_builders;

connect_builders!(ConnectOptions);

/// Where a [`Db`]'s database lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A file: a writer and a reader (or one read-only connection).
    File(PathBuf),
    /// A private in-memory database: one connection.
    Memory,
    /// A database of a SQLite VFS (wasm32): one connection, exclusive locking.
    #[cfg_attr(not(all(target_family = "wasm", target_os = "unknown")), allow(dead_code))]
    Vfs,
}

/// One SQLite database, opened once: the writer, the reader of a file, a read-only open's
/// snapshot, the connection settings, and the turns on the writer. Cheap to clone (the clones
/// share everything); build each contract's store on it with its `on` constructor, and both
/// share one writer, one reader and one set of connection settings:
///
/// ```no_run
/// use execstore_sqlite::{ConnectOptions, Db, SqliteOptions, SqliteStore};
/// use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage};
///
/// let db = Db::open("app.db", ConnectOptions::new())?;
/// let runs = SqliteStore::on(&db, SqliteOptions::new().prefix("harel"))?;
/// let log = SqliteWorkspaceStorage::on(&db, SqliteWorkspaceOptions::new())?;
/// # Ok::<(), execstore::StoreError>(())
/// ```
///
/// The file closes when the last store and the last clone are dropped.
#[derive(Clone)]
pub struct Db {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("kind", &self.shared.kind)
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

/// What a [`Db`]'s clones share.
pub(crate) struct Shared {
    // Declared (so dropped) before the writer: the writer closes last, checkpointing the WAL
    // into the file and removing it, as a single connection's close does.
    /// The `query_only` reader of a writable file; `None` when the writer is the only one.
    reader: Option<Mutex<Connection>>,
    /// Every write, and every read where there is no reader.
    writer: Mutex<Connection>,
    /// A read-only file opened as a snapshot, until a writer shows up (see `Snapshot`).
    snapshot: Option<Snapshot>,
    /// Who owns the writer, and who waits.
    busy: Mutex<Turns>,
    turn: Condvar,
    kind: Kind,
    options: ConnectOptions,
    /// Whether the writer runs SQLite's triggers (see `triggers.rs`).
    pub(crate) triggers: super::triggers::TriggerSwitch,
}

impl Db {
    /// Opens (creating if needed) the database file at `path` and sets it to WAL mode, with a
    /// writer and a `query_only` reader; with [`ConnectOptions::read_only`], opens an existing
    /// file read-only and changes nothing (see there). The path `":memory:"` opens a private
    /// in-memory database, as [`Db::open_in_memory`]. No table is created here: each
    /// contract's `on` creates its own.
    pub fn open(path: impl AsRef<Path>, options: ConnectOptions) -> Result<Db> {
        let path = path.as_ref();
        if path.as_os_str() == ":memory:" {
            return Self::open_in_memory(options);
        }
        if path.as_os_str().is_empty() {
            return Err(StoreError::invalid("path", "must not be empty"));
        }
        let kind = Kind::File(path.to_owned());
        if options.read_only {
            let (conn, snapshot) = super::open_read_only(path, options.busy_timeout)?;
            super::configure(&conn, options.busy_timeout, true)?;
            return Ok(Self::new(conn, None, snapshot, kind, options));
        }
        let conn = super::open_file(path)?;
        super::configure(&conn, options.busy_timeout, false)?;
        super::make_writer(&conn, options.busy_timeout, options.synchronous)?;
        // Opened once the writer made the file WAL.
        let reader = super::open_reader(path, options.busy_timeout)?;
        Ok(Self::new(conn, Some(reader), None, kind, options))
    }

    /// Opens a private in-memory database, one connection for reads and writes: everything is
    /// lost when the last store on it and the last clone are dropped.
    pub fn open_in_memory(options: ConnectOptions) -> Result<Db> {
        let conn = Connection::open_in_memory().db()?;
        super::set_new_page_size(&conn)?;
        super::configure(&conn, options.busy_timeout, options.read_only)?;
        if !options.read_only {
            super::set_synchronous(&conn, options.synchronous)?;
        }
        Ok(Self::new(conn, None, None, Kind::Memory, options))
    }

    /// wasm32 only: opens (creating if needed, unless read-only) the database `name` kept by
    /// the SQLite VFS registered as `vfs`, such as sqlite-wasm-vfs's `sahpool` over the
    /// browser's Origin Private File System (the caller installs the VFS first). One
    /// connection for reads and writes (such a VFS serves one connection per file, and
    /// nothing runs concurrently in a worker), holding the file in exclusive locking mode: so
    /// WAL works without shared memory (which these VFSs lack; the WAL index stays in the
    /// connection's memory) and a commit costs one sync, not a rollback journal's several. A
    /// VFS that cannot do WAL keeps its rollback journal.
    #[cfg(all(target_family = "wasm", target_os = "unknown"))]
    pub fn open_in_vfs(name: &str, vfs: &str, options: ConnectOptions) -> Result<Db> {
        use rusqlite::OpenFlags;
        if name.is_empty() {
            return Err(StoreError::invalid("name", "must not be empty"));
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if !options.read_only {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let conn = super::open_in_vfs(name, flags, vfs)?;
        super::configure(&conn, options.busy_timeout, options.read_only)?;
        if !options.read_only {
            super::set_new_page_size(&conn)?;
            conn.execute_batch("PRAGMA locking_mode = EXCLUSIVE").db()?;
            // Answers the mode in force: `wal`, or the VFS's journal if it cannot do WAL.
            conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get::<_, String>(0))
                .db()?;
            super::set_synchronous(&conn, options.synchronous)?;
        }
        Ok(Self::new(conn, None, None, Kind::Vfs, options))
    }

    fn new(
        writer: Connection,
        reader: Option<Connection>,
        snapshot: Option<Snapshot>,
        kind: Kind,
        options: ConnectOptions,
    ) -> Db {
        Db {
            shared: Arc::new(Shared {
                reader: reader.map(Mutex::new),
                writer: Mutex::new(writer),
                snapshot,
                busy: Mutex::new(Turns::default()),
                turn: Condvar::new(),
                kind,
                options,
                triggers: super::triggers::TriggerSwitch::new(),
            }),
        }
    }

    /// The settings the database was opened with.
    pub fn options(&self) -> &ConnectOptions {
        &self.shared.options
    }

    /// Whether the database was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.shared.options.read_only
    }

    /// Whether both contracts' stores built on `self` and on `other` share their connections
    /// (one is a clone of the other).
    pub fn same(&self, other: &Db) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    pub(crate) fn kind(&self) -> &Kind {
        &self.shared.kind
    }

    /// The file's path, for a file database.
    #[cfg_attr(all(target_family = "wasm", target_os = "unknown"), allow(dead_code))]
    pub(crate) fn path(&self) -> Option<&Path> {
        match &self.shared.kind {
            Kind::File(path) => Some(path),
            _ => None,
        }
    }

    /// Whether there is a reader beside the writer (a writable file).
    pub(crate) fn has_reader(&self) -> bool {
        self.shared.reader.is_some()
    }
}

impl Shared {
    /// The writer connection, locked, owning no turn (a poisoned lock is taken over: whatever
    /// a panic left open is rolled back by its owner's drop, or at the next turn).
    pub(crate) fn writer(&self) -> MutexGuard<'_, Connection> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The writer's mutex itself (tests poison it).
    #[cfg(test)]
    pub(crate) fn writer_mutex(&self) -> &Mutex<Connection> {
        &self.writer
    }

    /// The `query_only` reader, if there is one.
    pub(crate) fn reader(&self) -> Option<MutexGuard<'_, Connection>> {
        self.reader
            .as_ref()
            .map(|reader| reader.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The one connection of a read-only database, locked, its snapshot refreshed first.
    pub(crate) fn read_only_conn(&self) -> MutexGuard<'_, Connection> {
        let mut conn = self.writer();
        if let Some(snapshot) = &self.snapshot {
            snapshot.refresh(&mut conn);
        }
        conn
    }

    /// Waits until nothing owns the writer, then owns it: one owner at a time, whichever
    /// thread it moves to, in the order they asked. End it with [`Shared::end_turn`].
    pub(crate) fn take_turn(&self) -> Result<()> {
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

    /// [`Shared::take_turn`], giving up after `wait` with a retryable error (a read on the
    /// one connection, which the thread holding the open transaction may itself be making).
    pub(crate) fn take_turn_within(&self, wait: Duration) -> Result<()> {
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

    /// Hands the writer to the next owner.
    pub(crate) fn end_turn(&self) {
        self.busy.lock().unwrap_or_else(PoisonError::into_inner).advance();
        self.turn.notify_all();
    }

    /// The writer, owning no turn, if no one holds it right now and no transaction is open on
    /// it (a point read borrows it between commits).
    pub(crate) fn idle_writer(&self) -> Option<Held<'_>> {
        let conn = self.writer.try_lock().ok()?;
        conn.is_autocommit().then_some(Held { conn, _turn: None })
    }

    /// The writer, owning a turn until the guard drops: any transaction left open on it (by
    /// a panic) is rolled back first.
    pub(crate) fn held_writer(&self) -> Result<Held<'_>> {
        self.take_turn()?;
        let turn = TurnGuard(self);
        let conn = super::take_over(&self.writer);
        Ok(Held {
            conn,
            _turn: Some(turn),
        })
    }

    /// The connection for reads outside transactions: the `query_only` reader; a read-only
    /// database's one connection; or the one connection of a writable database once no one
    /// owns it (a transaction a panic left open on it is rolled back first; so a read never sees another owner's uncommitted writes: it waits for that
    /// transaction to end, giving up after the busy timeout, or on wasm32-unknown-unknown,
    /// where waiting would never end, is refused).
    pub(crate) fn read(&self) -> Result<Held<'_>> {
        if let Some(conn) = self.reader() {
            return Ok(Held { conn, _turn: None });
        }
        if self.options.read_only {
            return Ok(Held {
                conn: self.read_only_conn(),
                _turn: None,
            });
        }
        self.take_turn_within(self.options.busy_timeout)?;
        let turn = TurnGuard(self);
        // Owning the turn, no transaction can be open: one that still is was left by a panic.
        Ok(Held {
            conn: super::take_over(&self.writer),
            _turn: Some(turn),
        })
    }
}

/// Ends a turn when dropped.
struct TurnGuard<'a>(&'a Shared);

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        self.0.end_turn();
    }
}

/// A connection, locked; where it is the writer owned for a turn, the turn ends when this is
/// dropped (after the connection's lock is released).
pub(crate) struct Held<'a> {
    conn: MutexGuard<'a, Connection>,
    _turn: Option<TurnGuard<'a>>,
}

impl Deref for Held<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.conn
    }
}

impl DerefMut for Held<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

/// The writer's turns, first come first served (a ticket lock): the owner holds ticket
/// `serving`; tickets up to `next` wait in order; a waiter that gave up leaves its ticket in
/// `abandoned`, skipped when its turn comes.
#[derive(Default)]
struct Turns {
    next: u64,
    serving: u64,
    abandoned: BTreeSet<u64>,
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
