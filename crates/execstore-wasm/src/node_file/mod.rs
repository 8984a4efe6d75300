//! SQLite store files on the local file system, in Node: `await Store.openFile(path)`.
//!
//! The file is a plain SQLite database with the native store's tables (the same adapter,
//! [`SqliteStore::open_in_vfs`], and SQL), so the native `execstore --db FILE` reads what
//! Node wrote once Node closed it, and a file the native CLI or harel wrote opens here. Its
//! I/O goes through the VFS of [`vfs`], whose file operations are Node's synchronous `fs`
//! calls, handed in by the package's Node entry ([`host`]).
//!
//! # One owner
//!
//! One process at a time owns a file: the lock file `<file>-lock` (see [`lock`]), taken
//! before the database is opened and removed when the store is closed. Another opener (a
//! second process, or this one) waits up to `wait_ms`, then fails with `LOCKED`. A lock
//! left by a process that was killed is detected (its pid is gone, or reused) and taken
//! over. Other programs that open the file (the native CLI, harel) do not look at the lock
//! file: open the file with them once the Node store is closed.
//!
//! # Journal mode and durability
//!
//! WAL, in SQLite's exclusive locking mode ([`SqliteStore::open_in_vfs`]): the file has one
//! connection, so the WAL index lives in its memory and no `-shm` file or shared-memory
//! locks are needed (Node has neither `mmap` nor file locks), and a commit is one append
//! to the `-wal` file and, under `synchronous` "full", one `fsync` of it: fewer syncs than
//! a rollback journal's (the journal, then the database) for the same promise. Closing
//! checkpoints the WAL into the database and removes it, leaving one file in WAL mode that
//! the native store opens as its own.
//!
//! * "full" (the default): a commit that returned is on the device (`fsync` of the
//!   `-wal`, and of its directory after the file was created): it survives the process
//!   killed, and a power loss or OS crash.
//! * "normal": a commit is written to the `-wal` and returns without a sync (the WAL is
//!   synced before each checkpoint, the database after it). It survives the process killed
//!   (its bytes are with the operating system); a power loss or OS crash may lose the
//!   commits since the last checkpoint, never half of one.
//!
//! A file a crash left with its `-wal` (or a hot `-journal`, from a rollback-mode writer)
//! is recovered by the next open, as SQLite always does.

mod host;
mod lock;
mod vfs;

use execstore_sqlite::{
    SqliteOptions, SqliteStore, SqliteWorkspaceOptions, SqliteWorkspaceStorage, Synchronous,
};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use crate::errors::{backend, invalid, WasmError};
use crate::opfs::sleep_ms;
use host::Host;
use lock::FileLock;

/// The first 16 bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Installs Node's `fs`, `path` and `process` (`{fs, path, process}`) for file stores; the
/// package's Node entry calls it once, at import.
#[wasm_bindgen(js_name = installNodeFileSystem, skip_typescript)]
pub fn install_node_file_system(host: JsValue) -> Result<(), JsValue> {
    host::install(&host).map_err(JsValue::from)
}

/// How [`NodeFile::open`] opens a file.
#[derive(Clone, Debug)]
pub struct FileOptions {
    /// How long to wait for a file another process (or store) holds, in milliseconds; `0`
    /// fails at once with `LOCKED`.
    pub wait_ms: f64,
    /// `Full` (the default) or `Normal` (see the module's "Journal mode and durability").
    pub synchronous: Synchronous,
}

impl Default for FileOptions {
    /// Waits up to 5 s, as an OPFS store; `synchronous` "full".
    fn default() -> Self {
        FileOptions {
            wait_ms: 5000.0,
            synchronous: Synchronous::Full,
        }
    }
}

/// A store file, checked and owned by this process (its lock file held) until dropped.
pub struct NodeFile {
    path: String,
    lock: FileLock,
}

impl std::fmt::Debug for NodeFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl NodeFile {
    /// Takes the file at `path` (relative to the working directory, or absolute): checks
    /// it (a regular writable file holding a SQLite database, or missing: created), then
    /// takes its lock, waiting up to `options.wait_ms`. Bad paths are `INVALID_INPUT` and
    /// change nothing; a file another owner holds past the wait is `LOCKED`.
    pub async fn take(path: &str, options: &FileOptions) -> Result<NodeFile, WasmError> {
        if !(options.wait_ms >= 0.0 && options.wait_ms.is_finite()) {
            return Err(invalid(
                "options.waitMs",
                "must be a finite number of milliseconds, 0 or more",
            ));
        }
        if !matches!(options.synchronous, Synchronous::Full | Synchronous::Normal) {
            return Err(invalid("options.synchronous", "must be \"full\" or \"normal\""));
        }
        if path.is_empty() {
            return Err(invalid("path", "must not be empty"));
        }
        if path.contains('\0') {
            return Err(invalid("path", "must not contain a NUL character"));
        }
        let host = host::host()?;
        let path = host
            .resolve(path)
            .map_err(|e| invalid("path", format!("{path:?}: {e}")))?;
        check_path(&host, &path)?;
        let started = js_sys::Date::now();
        let lock = loop {
            match FileLock::try_take(&host, &path)? {
                Ok(lock) => break lock,
                Err(held) => {
                    let waited = js_sys::Date::now() - started;
                    if waited >= options.wait_ms {
                        return Err(WasmError::FileLocked {
                            path,
                            pid: held.pid,
                            waited_ms: waited,
                        });
                    }
                    sleep_ms((options.wait_ms - waited).min(25.0)).await?;
                }
            }
        };
        // Owned now, so what the file holds cannot change under the checks.
        check_path(&host, &path)?;
        check_header(&host, &path)?;
        Ok(NodeFile { path, lock })
    }

    /// The file's absolute path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The execution store on the file (`options`' `prefix` and `trace_max`; the
    /// connection's settings are taken from `file_options`). A file with the store's
    /// tables under another prefix, and none under this one, is `INVALID_INPUT`
    /// (`options.prefix`) and changes nothing.
    pub fn store(
        &self,
        options: SqliteOptions,
        file_options: &FileOptions,
    ) -> Result<SqliteStore, WasmError> {
        let vfs = vfs::registered()?;
        let options = options.synchronous(file_options.synchronous).read_only(false);
        check_prefix(&*host::host()?, &self.path, vfs, &options)?;
        Ok(SqliteStore::open_in_vfs(&self.path, vfs, options)?)
    }

    /// The workspace log (reflexr's tables) on the file.
    pub fn workspaces(
        &self,
        options: SqliteWorkspaceOptions,
        file_options: &FileOptions,
    ) -> Result<SqliteWorkspaceStorage, WasmError> {
        let vfs = vfs::registered()?;
        let options = options.synchronous(file_options.synchronous).read_only(false);
        Ok(SqliteWorkspaceStorage::open_in_vfs(&self.path, vfs, options)?)
    }

    /// Lets the file go (its lock file removed); the store on it must be closed first.
    pub fn release(self) {
        drop(self.lock);
    }
}

/// A SQLite execution store in a file on the local file system, owned by this process
/// until dropped.
pub struct NodeFileStore {
    // Declared (so dropped) before the file: the database closes before the lock goes.
    store: Option<SqliteStore>,
    options: SqliteOptions,
    file_options: FileOptions,
    file: NodeFile,
}

impl std::fmt::Debug for NodeFileStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeFileStore")
            .field("path", &self.file.path)
            .finish_non_exhaustive()
    }
}

impl NodeFileStore {
    /// Opens (creating if needed) the store file at `path`: [`NodeFile::take`], then the
    /// SQLite store on it with `sqlite`'s `prefix` and `trace_max`.
    pub async fn open(path: &str, sqlite: SqliteOptions, options: FileOptions) -> Result<Self, WasmError> {
        let file = NodeFile::take(path, &options).await?;
        let store = file.store(sqlite.clone(), &options)?;
        Ok(NodeFileStore {
            store: Some(store),
            options: sqlite,
            file_options: options,
            file,
        })
    }

    /// The SQLite store; `BACKEND` only after a failed [`NodeFileStore::reopen`].
    pub fn store(&self) -> Result<&SqliteStore, WasmError> {
        self.store
            .as_ref()
            .ok_or_else(|| backend("the store file could not be reopened; open it again"))
    }

    /// The file's absolute path.
    pub fn path(&self) -> &str {
        self.file.path()
    }

    /// Closes the database connection and opens it again on the same file, still owning it
    /// (what a durable harness's reopen does: everything read afterwards comes from disk).
    pub fn reopen(&mut self) -> Result<(), WasmError> {
        self.store = None;
        self.store = Some(self.file.store(self.options.clone(), &self.file_options)?);
        Ok(())
    }
}

/// `INVALID_INPUT` unless `path` is missing or a regular file with write permission.
fn check_path(host: &Host, path: &str) -> Result<(), WasmError> {
    let stat = host
        .stat(path)
        .map_err(|e| invalid("path", format!("{path:?}: {e}")))?;
    let Some(stat) = stat else {
        let dir = host.dirname(path);
        return match host.stat(&dir) {
            Ok(Some(d)) if d.is_directory => Ok(()),
            _ => Err(invalid(
                "path",
                format!("{path:?}: its directory {dir:?} does not exist"),
            )),
        };
    };
    if stat.is_directory {
        return Err(invalid(
            "path",
            format!("{path:?} is a directory, not a store file"),
        ));
    }
    if !stat.is_file {
        return Err(invalid("path", format!("{path:?} is not a regular file")));
    }
    if stat.mode & 0o222 == 0 {
        return Err(invalid(
            "path",
            format!(
                "{path:?} is read-only (mode {:o}): a store file must be writable",
                stat.mode & 0o7777
            ),
        ));
    }
    Ok(())
}

/// `INVALID_INPUT` unless the file is empty or starts with SQLite's header.
fn check_header(host: &Host, path: &str) -> Result<(), WasmError> {
    let fd = match host.open(path, host::Open::Read) {
        Ok(fd) => fd,
        Err(e) if e.is("ENOENT") => return Ok(()),
        Err(e) => return Err(invalid("path", format!("{path:?}: {e}"))),
    };
    let mut head = [0u8; 16];
    let read = host.read_at(fd, &mut head, 0);
    let _ = host.close(fd);
    let n = read.map_err(|e| invalid("path", format!("{path:?}: {e}")))?;
    if n == 0 || head == *SQLITE_HEADER {
        Ok(())
    } else {
        Err(invalid("path", format!("{path:?} is not a SQLite database file")))
    }
}

/// `INVALID_INPUT` (`options.prefix`) when the database has the store's tables under other
/// prefixes and not under `options`' one: opening would add a second, empty store beside
/// them, which is never what was meant. Read only: nothing is written.
fn check_prefix(host: &Host, path: &str, vfs: &str, options: &SqliteOptions) -> Result<(), WasmError> {
    use rusqlite::{Connection, OpenFlags};
    // A new (or empty) file holds nothing yet.
    match host.stat(path) {
        Ok(Some(stat)) if stat.size > 0 => {}
        _ => return Ok(()),
    }
    let mine = format!(
        "{}executions",
        options
            .prefix
            .as_deref()
            .map(|p| format!("{p}_"))
            .unwrap_or_default()
    );
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags_and_vfs(path, flags, vfs)
        .map_err(|e| backend(format!("cannot read {path:?}: {e}")))?;
    let sql_error = |e: rusqlite::Error| backend(format!("cannot read the tables of {path:?}: {e}"));
    conn.execute_batch("PRAGMA locking_mode = EXCLUSIVE")
        .map_err(sql_error)?;
    let mut stmt = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND (name = 'executions' OR name LIKE '%\\_executions' ESCAPE '\\')",
        )
        .map_err(sql_error)?;
    let tables: Vec<String> = stmt
        .query_map([], |row| row.get(0))
        .map_err(sql_error)?
        .collect::<Result<_, _>>()
        .map_err(sql_error)?;
    if tables.is_empty() || tables.contains(&mine) {
        return Ok(());
    }
    let others: Vec<String> = tables
        .iter()
        .map(|t| match t.strip_suffix("_executions") {
            Some(prefix) => format!("{prefix:?}"),
            None => "none".to_owned(),
        })
        .collect();
    Err(invalid(
        "options.prefix",
        format!(
            "{path:?} holds a store under the prefix {} and none under {}: pass that prefix",
            others.join(", "),
            options
                .prefix
                .as_deref()
                .map_or("none".to_owned(), |p| format!("{p:?}"))
        ),
    ))
}
