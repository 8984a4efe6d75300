//! Read-only opens of a file: SQLite read-only connections (`SQLITE_OPEN_READONLY`), which
//! never write the database file, its `-wal` or its `-journal`, whatever a crashed writer
//! left there. A read-write connection, even one with `PRAGMA query_only`, runs SQLite's
//! own recovery: it checkpoints a `-wal` into the file and deletes it when it closes, rolls
//! a hot `-journal` back, and drops the frames of a `-wal` after a damaged one. A read-only
//! connection does none of that:
//!
//! * A `-wal` (with or without `-shm`, as a killed writer leaves it) is read as SQLite reads
//!   it, without being written: its committed frames are seen, up to a damaged frame if one
//!   is (the valid prefix). SQLite may build or update the `-shm` index beside it (creating
//!   it if it is missing and the directory can be written): the one file a read may change.
//!   With a `-wal`, no `-shm` and a directory that cannot be written, the `-wal` cannot be
//!   read: [`ReadOnlyRefusal::WalIndexMissing`] says so and what to do.
//! * A hot `-journal` (a rollback-journal writer stopped mid-transaction) must be rolled back
//!   before the file can be read, which a read-only connection never does: SQLite answers
//!   `SQLITE_READONLY_ROLLBACK`, turned into [`ReadOnlyRefusal::HotJournal`].
//! * A file with neither `-wal` nor `-journal` has nothing to replay or roll back: it is
//!   opened `immutable=1`, so SQLite reads the file alone and creates nothing (a read-only
//!   connection to a WAL file would otherwise create an empty `-wal` and a `-shm`, and leave
//!   them behind, since it may not checkpoint and delete them when it closes). Such a
//!   snapshot takes no locks, so before each read the store looks again: once a `-wal` or a
//!   `-journal` appears (a writer opened the file; in WAL mode it writes nothing to the file
//!   itself before its WAL exists), the snapshot is replaced by a connection that follows
//!   the WAL as above; if the file's length or modification time changed (a writer came,
//!   checkpointed and went between two reads), by a fresh snapshot. What this leaves: a
//!   writer that opens the file and checkpoints into it during one read (a few
//!   milliseconds) can make that one read fail as corrupt or see a mix; the next read sees
//!   the file as it is.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use execstore::{Result, StoreError};
use rusqlite::{ffi, Connection, ErrorCode, OpenFlags};

use super::configure;
use super::error::Db;

/// Why a read-only open cannot read a file without writing to it. Carried as the source of
/// the [`StoreError::Backend`] the open returns (`retryable: false`), whose message is this
/// error's text.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadOnlyRefusal {
    /// The file has a hot rollback journal (`<file>-journal`): a writer stopped in the middle
    /// of a transaction and left pages of it in the file. Only a read-write open can roll it
    /// back; a read-only open leaves both files as they are.
    HotJournal {
        /// The database file.
        path: PathBuf,
    },
    /// The file has a `-wal` log but no `-shm` index, and the index cannot be created (the
    /// directory or the medium is read-only). The log is left as it is.
    WalIndexMissing {
        /// The database file.
        path: PathBuf,
    },
}

impl std::fmt::Display for ReadOnlyRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadOnlyRefusal::HotJournal { path } => write!(
                f,
                "{p} has a hot rollback journal ({p}-journal): a writer stopped in the middle of \
                 a transaction, and the file must be rolled back before it can be read. A \
                 read-only open never rolls back, so both files are left as they were: open the \
                 file once read-write (run the application that writes it, or `sqlite3 {p} \
                 'PRAGMA quick_check'` as a user who can write the file and its directory), \
                 then read it again",
                p = path.display()
            ),
            ReadOnlyRefusal::WalIndexMissing { path } => write!(
                f,
                "{p}-wal holds commits that reading needs a {p}-shm index for, and there is \
                 none and it cannot be created (the directory is not writable). A read-only \
                 open writes nothing there: copy {p} and {p}-wal to a directory you can write \
                 and read the copy, or open the file once read-write where it is",
                p = path.display()
            ),
        }
    }
}

impl std::error::Error for ReadOnlyRefusal {}

impl ReadOnlyRefusal {
    fn into_store_error(self) -> StoreError {
        StoreError::Backend {
            message: self.to_string(),
            retryable: false,
            source: Some(Box::new(self)),
        }
    }
}

/// `path` with `suffix` appended to its file name (`-wal`, `-shm`, `-journal`).
pub(crate) fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Whether a `-wal` or a `-journal` is beside `path`: something a read may have to replay or
/// roll back, or a writer that has the file open.
fn has_log(path: &Path) -> bool {
    sidecar(path, "-wal").exists() || sidecar(path, "-journal").exists()
}

/// What a look at the file finds without opening it: its length and modification time. A
/// writer that commits to it (even one that opens, writes and closes between two reads,
/// leaving no `-wal` behind) changes them.
type Stamp = Option<(u64, Option<SystemTime>)>;

fn stamp(path: &Path) -> Stamp {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()))
}

/// A read-only connection opened as a snapshot (`immutable=1`): how to replace it once the
/// file changes or a writer shows up.
#[derive(Debug)]
pub(crate) struct Snapshot {
    path: PathBuf,
    busy_timeout: Duration,
    /// `None` once replaced by a connection that follows the WAL; else the file as the
    /// snapshot found it.
    seen: Mutex<Option<Stamp>>,
}

impl Snapshot {
    /// Called with `conn` (the snapshot connection) locked, before a read: if a `-wal` or a
    /// `-journal` has appeared since the open, replaces `conn` by a read-only connection
    /// that follows it; else if the file changed (a writer came and went), by a new snapshot
    /// of it. If that open fails, the connection stays and the next read tries again.
    pub(crate) fn refresh(&self, conn: &mut Connection) {
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(stamp_then) = *seen else {
            return;
        };
        if has_log(&self.path) {
            if let Ok(following) = open_following(&self.path, self.busy_timeout) {
                *conn = following;
                *seen = None;
            }
            return;
        }
        let stamp_now = stamp(&self.path);
        if stamp_now != stamp_then {
            if let Some(Ok(again)) =
                immutable_uri(&self.path).map(|uri| open_immutable(&self.path, &uri, self.busy_timeout))
            {
                *conn = again;
                *seen = Some(stamp_now);
            }
        }
    }
}

/// Opens the existing file `path` read-only, configured (busy timeout, stable plans, the
/// statement cache): a snapshot when there is neither `-wal` nor `-journal` (returned with
/// its [`Snapshot`]), else a connection that follows the WAL. Reads the schema once, so a
/// file that cannot be read is refused here: a hot journal or a `-wal` without a possible
/// `-shm` with a [`ReadOnlyRefusal`], a missing file with [`StoreError::NotFound`].
pub(crate) fn open_read_only(path: &Path, busy_timeout: Duration) -> Result<(Connection, Option<Snapshot>)> {
    if path.as_os_str().is_empty() {
        return Err(StoreError::invalid("path", "must not be empty"));
    }
    if !path.exists() {
        return Err(StoreError::NotFound {
            what: "database file",
            key: path.display().to_string(),
        });
    }
    if !has_log(path) {
        if let Some(uri) = immutable_uri(path) {
            // Looked at before the open, so a change during it shows at the first read.
            let seen = stamp(path);
            let mut conn = open_immutable(path, &uri, busy_timeout)?;
            let snapshot = Snapshot {
                path: path.to_owned(),
                busy_timeout,
                seen: Mutex::new(Some(seen)),
            };
            // A writer that opened the file between the look and the open: follow it now.
            snapshot.refresh(&mut conn);
            return Ok((conn, Some(snapshot)));
        }
    }
    Ok((open_following(path, busy_timeout)?, None))
}

/// A snapshot connection: `immutable=1`, no lock, no sidecar.
fn open_immutable(path: &Path, uri: &str, busy_timeout: Duration) -> Result<Connection> {
    open_checked(path, uri, OpenFlags::SQLITE_OPEN_URI, busy_timeout)
}

/// A read-only connection that reads the WAL (and never writes it).
fn open_following(path: &Path, busy_timeout: Duration) -> Result<Connection> {
    open_checked(path, path, OpenFlags::empty(), busy_timeout)
}

fn open_checked(
    path: &Path,
    name: impl AsRef<Path>,
    extra: OpenFlags,
    busy_timeout: Duration,
) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | extra;
    let conn = Connection::open_with_flags_and_vfs(name.as_ref(), flags, super::file_vfs()?.as_str()).db()?;
    configure(&conn, busy_timeout, true)?;
    // SQLite opens lazily: the first read is where a hot journal or a missing index shows.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .map_err(|e| refusal(path, e))?;
    Ok(conn)
}

/// A first read's error: a [`ReadOnlyRefusal`] where SQLite says reading would need a write,
/// else the usual mapping.
fn refusal(path: &Path, err: rusqlite::Error) -> StoreError {
    if let rusqlite::Error::SqliteFailure(e, _) = &err {
        let path = path.to_owned();
        if e.extended_code == ffi::SQLITE_READONLY_ROLLBACK {
            return ReadOnlyRefusal::HotJournal { path }.into_store_error();
        }
        let no_index = matches!(
            e.extended_code,
            ffi::SQLITE_READONLY_DIRECTORY | ffi::SQLITE_READONLY_CANTINIT
        ) || e.code == ErrorCode::CannotOpen;
        if no_index && sidecar(&path, "-wal").exists() && !sidecar(&path, "-shm").exists() {
            return ReadOnlyRefusal::WalIndexMissing { path }.into_store_error();
        }
    }
    super::error::map_err(err)
}

/// `file:PATH?immutable=1`, the path percent-encoded; `None` for a path that is not UTF-8
/// (then the file is opened to follow its WAL instead).
fn immutable_uri(path: &Path) -> Option<String> {
    let text = path.to_str()?;
    let mut uri = String::from(if text.starts_with('/') { "file://" } else { "file:" });
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    Some(uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn immutable_uris_escape_what_a_uri_would_read() {
        assert_eq!(
            immutable_uri(Path::new("/a b/x?y#z%.db")).unwrap(),
            "file:///a%20b/x%3Fy%23z%25.db?immutable=1"
        );
        assert_eq!(
            immutable_uri(Path::new("rel/s.db")).unwrap(),
            "file:rel/s.db?immutable=1"
        );
        assert_eq!(
            immutable_uri(Path::new("//twice")).unwrap(),
            "file:////twice?immutable=1"
        );
    }
}
