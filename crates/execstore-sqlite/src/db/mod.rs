//! The private database layer both contracts share: how a connection is opened (file flags,
//! read-only, the reader), its pragmas (WAL, `synchronous`, busy timeout, stable plans),
//! rolling back what a panic or an error left open, and read-only probes of what a file
//! holds; every file is opened through the VFS shim of `coalesce`; and [`Db`], the handle
//! that owns a database's connections, which both contracts' stores are built on. No table of
//! either contract is named here.

mod coalesce;
pub(crate) mod error;
pub(crate) mod handle;
mod read_only;
mod triggers;

pub use handle::{ConnectOptions, Db};
pub(crate) use handle::{Held, Kind};
pub use read_only::ReadOnlyRefusal;
pub(crate) use read_only::{open_read_only, Snapshot};
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
mod ofd;

use std::path::Path;
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use execstore::{Result, StoreError};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use self::error::{map_err, Db as _};

/// How many prepared statements a connection keeps (every fixed statement and the listing
/// shapes in use).
pub(crate) const STATEMENT_CACHE: usize = 128;

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
    pub(crate) fn level(self) -> i64 {
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

/// A transaction the execution store's `write` opened: rolled back when dropped still open (an
/// error before or at COMMIT, or a panic).
pub(crate) struct OpenTransaction<'a>(pub(crate) &'a Connection);

impl Drop for OpenTransaction<'_> {
    fn drop(&mut self) {
        if !self.0.is_autocommit() {
            let _ = self.0.execute_batch("ROLLBACK");
        }
    }
}

/// Locks `conn`, taking a poisoned lock over and rolling back a transaction left open.
pub(crate) fn take_over(conn: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
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
pub(crate) fn stable_plans(conn: &Connection) -> Result<()> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .db()?;
    Ok(())
}

/// The page size of the databases the store creates: SQLite's usual 4 KiB, as harel's files
/// and the native build have. The wasm32 build of SQLite (sqlite-wasm-rs) defaults to 8 KiB,
/// which doubles what a commit writes: a W1 step changes about a dozen pages whatever their
/// size (measured in Chromium over OPFS: 96 KiB per step at 8 KiB, half that at 4 KiB).
pub(crate) const PAGE_SIZE: u32 = 4096;

/// Sets [`PAGE_SIZE`] for a database not written yet; an existing one keeps its own (SQLite
/// ignores the pragma once the file has pages, and in WAL mode).
pub(crate) fn set_new_page_size(conn: &Connection) -> Result<()> {
    conn.execute_batch(&format!("PRAGMA page_size = {PAGE_SIZE}"))
        .db()
}

/// The busy timeout as SQLite takes it (at most `i32::MAX` ms).
pub(crate) fn busy_wait(busy_timeout: Duration) -> Duration {
    busy_timeout.min(Duration::from_millis(i32::MAX as u64))
}

/// Switches a file database to WAL, waiting out connections that hold it locked (a fresh
/// file opened by several processes at once).
pub(crate) fn set_wal(conn: &Connection, wait: Duration) -> Result<()> {
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

/// Opens the file database at `path` for a store that writes: read-write, created if
/// missing. (Read-only opens are [`open_read_only`]'s.) No URI flag: a path is a file name,
/// never `file:...?mode=...`. Through the coalescing VFS over SQLite's default one (see
/// `coalesce`), which writes each commit's WAL frames in one call.
pub(crate) fn open_file(path: &Path) -> Result<Connection> {
    if path.as_os_str().is_empty() {
        return Err(StoreError::invalid("path", "must not be empty"));
    }
    let flags =
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_CREATE;
    Connection::open_with_flags_and_vfs(path, flags, file_vfs()?.as_str()).db()
}

/// The VFS every file is opened through: the coalescing shim over SQLite's `unix`, whose locks
/// are open-file-description locks where [`other_sqlite_safe`] says so (installed here, before
/// the first file opens).
pub(crate) fn file_vfs() -> Result<String> {
    other_sqlite_safe();
    coalesce::over(None)
}

/// Whether another copy of SQLite in this process (Python's `sqlite3`, a C library's) can open
/// the store's files safely while the store has them open: on 64-bit Linux (kernel 3.15 or
/// later) the store's copy of SQLite takes open-file-description locks, which conflict with the
/// other copy's POSIX locks and survive its closing its descriptors (see the README's "Python's
/// sqlite3 in the same process"). Elsewhere, or with `EXECSTORE_SQLITE_POSIX_LOCKS=1` in the
/// environment, `false`: both copies take POSIX locks, which do not see each other in one
/// process, and a second copy can delete the WAL under the store or write at the same time.
pub fn other_sqlite_safe() -> bool {
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    {
        ofd::install()
    }
    #[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
    {
        false
    }
}

/// wasm32: opens the database `name` of the SQLite VFS `vfs` (installed by the caller) through
/// the coalescing shim over it, which writes each commit's WAL frames in one call.
#[cfg(all(target_family = "wasm", target_os = "unknown"))]
pub(crate) fn open_in_vfs(name: &str, flags: OpenFlags, vfs: &str) -> Result<Connection> {
    Connection::open_with_flags_and_vfs(name, flags, coalesce::over(Some(vfs))?.as_str()).db()
}

/// Sets a connection's busy timeout and stable plans; with `query_only`, it refuses every
/// write (`PRAGMA query_only`).
pub(crate) fn configure(conn: &Connection, busy_timeout: Duration, query_only: bool) -> Result<()> {
    conn.busy_timeout(busy_wait(busy_timeout)).db()?;
    stable_plans(conn)?;
    if query_only {
        conn.execute_batch("PRAGMA query_only = ON").db()?;
    }
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(())
}

/// Makes a writer connection to a file durable as `synchronous` says, in WAL mode.
pub(crate) fn make_writer(conn: &Connection, busy_timeout: Duration, synchronous: Synchronous) -> Result<()> {
    set_wal(conn, busy_wait(busy_timeout))?;
    set_synchronous(conn, synchronous)
}

/// `PRAGMA synchronous`.
pub(crate) fn set_synchronous(conn: &Connection, synchronous: Synchronous) -> Result<()> {
    conn.execute_batch(&format!("PRAGMA synchronous = {}", synchronous.level()))
        .db()
}

/// The `query_only` reader of a file a writer has already made WAL and migrated: reads on it
/// never wait for the writer's transactions, and see every commit that returned.
pub(crate) fn open_reader(path: &Path, busy_timeout: Duration) -> Result<Connection> {
    let reader = Connection::open_with_flags_and_vfs(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        file_vfs()?.as_str(),
    )
    .db()?;
    configure(&reader, busy_timeout, true)?;
    Ok(reader)
}

/// Whether the database of `conn` has a table (or a view, which reads as one) named `name`.
pub(crate) fn has_table(conn: &Connection, name: &str) -> Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?1)",
        [name],
        |row| row.get(0),
    )
    .db()
}

/// Whether the database of `conn` has the index `name`.
pub(crate) fn has_index(conn: &Connection, name: &str) -> Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?1)",
        [name],
        |row| row.get(0),
    )
    .db()
}

/// The sets of execution tables the database of `conn` holds (see
/// `execstore::kit::names::execution_prefixes`).
pub(crate) fn execution_prefixes_of(conn: &Connection) -> Result<Vec<Option<String>>> {
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .db()?;
    let names = stmt
        .query_map([], |row| row.get::<_, String>(0))
        .db()?
        .collect::<std::result::Result<Vec<String>, _>>()
        .db()?;
    Ok(execstore::kit::names::execution_prefixes(
        names.iter().map(String::as_str),
    ))
}

/// Opens an existing file only to look at it, as [`open_read_only`] does: nothing is created
/// or written (a missing file is [`StoreError::NotFound`]).
pub(crate) fn probe(path: &Path) -> Result<Connection> {
    Ok(open_read_only(path, Duration::from_secs(5))?.0)
}

/// Opens the existing SQLite file at `path` read-write once, creating, migrating and
/// switching nothing, and reads its schema, so that SQLite's own recovery runs as it would
/// for any writer: a hot `-journal` is rolled back; a `-wal` is checkpointed into the file
/// and removed when the connection closes (unless another connection has the file open).
/// For tools about to write a file that a read-only open refused with
/// [`ReadOnlyRefusal::HotJournal`] (the CLI's write commands call it first). A missing file
/// is [`StoreError::NotFound`].
pub fn recover(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    if path.as_os_str().is_empty() {
        return Err(StoreError::invalid("path", "must not be empty"));
    }
    if !path.exists() {
        return Err(StoreError::NotFound {
            what: "database file",
            key: path.display().to_string(),
        });
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags_and_vfs(path, flags, file_vfs()?.as_str()).db()?;
    conn.busy_timeout(Duration::from_secs(5)).db()?;
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .db()?;
    conn.close().map_err(|(_, e)| e).db()
}
