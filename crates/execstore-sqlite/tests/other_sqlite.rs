//! Another copy of SQLite in the same process (Python's `sqlite3`) beside the store: its POSIX
//! locks must conflict with the store's, and its closing a descriptor of the file must not drop
//! the store's locks (64-bit Linux, where the store's SQLite takes open-file-description locks).
//!
//! The other copy is played by raw `fcntl` POSIX locks and a plain open and close of the file,
//! which is all a second SQLite does to the store's locks; the other process is this test
//! binary run again with `OTHER_SQLITE_PROBE` set (see `probe_child`).
#![cfg(all(target_os = "linux", target_pointer_width = "64"))]

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

use execstore::{
    executions::{ListQuery, Status},
    Execution, ExecutionStore,
};
use execstore_sqlite::{other_sqlite_safe, SqliteOptions, SqliteStore};

/// SQLite's lock bytes in the database file: the pending byte, the reserved byte, then the
/// 510 bytes of the shared range (a shared lock reads one of them, an exclusive lock writes all).
const PENDING_BYTE: i64 = 0x4000_0000;
const SHARED_FIRST: i64 = PENDING_BYTE + 2;
const SHARED_SIZE: i64 = 510;
/// The dead-man-switch byte of the `-shm` file: every connection read-locks it while it has the
/// file open; the first to open it write-locks it to reset the file.
const SHM_DMS: i64 = 128;

/// The child's environment: `db-path` of the file whose locks it tries.
const PROBE_ENV: &str = "OTHER_SQLITE_PROBE";

/// A store on `path` that has written and read, so its connections hold their shared locks
/// (a WAL connection keeps the database's shared lock and the `-shm` read lock while open).
fn busy_store(path: &Path) -> SqliteStore {
    let store = SqliteStore::open(path, SqliteOptions::new()).unwrap();
    let mut exe = Execution::new("order-1", "orders");
    exe.status = Status::Running;
    store.save(&mut exe).unwrap();
    assert_eq!(store.list_executions(&ListQuery::new()).unwrap().items.len(), 1);
    store
}

fn shm(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-shm");
    PathBuf::from(name)
}

/// A POSIX (process-owned) write lock on `len` bytes at `start` of `file`, not waiting:
/// whether it was granted.
fn posix_write_lock(file: &File, start: i64, len: i64) -> bool {
    // SAFETY: `lock` is a plain struct the call reads; `file` is open.
    unsafe {
        let mut lock: libc::flock = std::mem::zeroed();
        lock.l_type = libc::F_WRLCK as _;
        lock.l_whence = libc::SEEK_SET as _;
        lock.l_start = start;
        lock.l_len = len;
        libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &lock) == 0
    }
}

fn open_rw(path: &Path) -> File {
    OpenOptions::new().read(true).write(true).open(path).unwrap()
}

/// Runs this test binary again as another process that tries SQLite's exclusive lock on the
/// database (what a closing connection takes before it checkpoints and deletes the WAL) and the
/// `-shm` reset lock; answers which it got.
fn other_process_locks(path: &Path) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "probe_child", "--nocapture", "--test-threads=1"])
        .env(PROBE_ENV, path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "probe failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .find_map(|l| l.split_once("PROBE ").map(|(_, probe)| probe))
        .unwrap_or_else(|| panic!("no probe line in {stdout}"))
        .to_string()
}

/// The other process's side of `other_process_locks` (a no-op in a normal run).
#[test]
fn probe_child() {
    let Some(path) = std::env::var_os(PROBE_ENV) else {
        return;
    };
    let path = PathBuf::from(path);
    let db = posix_write_lock(&open_rw(&path), SHARED_FIRST, SHARED_SIZE);
    let dms = posix_write_lock(&open_rw(&shm(&path)), SHM_DMS, 1);
    println!("PROBE exclusive={db} shm-reset={dms}");
}

#[test]
fn this_build_shares_the_process_with_another_sqlite() {
    assert!(other_sqlite_safe(), "64-bit Linux takes OFD locks");
}

#[test]
fn another_copys_exclusive_lock_in_this_process_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = busy_store(&path);
    // What Python's copy does when its last connection closes: an exclusive lock on the
    // database, then a checkpoint and the deletion of -wal and -shm. POSIX locks of one process
    // never conflict with each other, so without OFD locks this is granted under the store.
    let other = open_rw(&path);
    assert!(
        !posix_write_lock(&other, SHARED_FIRST, SHARED_SIZE),
        "another SQLite in this process got the exclusive lock while the store reads the file"
    );
    // And it sees the store's -shm: its first open would reset the file under the store.
    let other_shm = open_rw(&shm(&path));
    assert!(
        !posix_write_lock(&other_shm, SHM_DMS, 1),
        "another SQLite would reset the store's -shm"
    );
    drop((other, other_shm));
    assert_eq!(store.list_executions(&ListQuery::new()).unwrap().items.len(), 1);
}

#[test]
fn closing_another_descriptor_keeps_the_stores_locks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = busy_store(&path);
    assert_eq!(
        other_process_locks(&path),
        "exclusive=false shm-reset=false",
        "with nothing closed"
    );
    // Another SQLite in this process opening and closing the file (sqlite3.connect + close):
    // a POSIX close drops every POSIX lock the process holds on the file.
    drop(File::open(&path).unwrap());
    drop(File::open(shm(&path)).unwrap());
    assert_eq!(
        other_process_locks(&path),
        "exclusive=false shm-reset=false",
        "after this process closed other descriptors of the file, another process got the locks the store holds"
    );
    assert_eq!(store.list_executions(&ListQuery::new()).unwrap().items.len(), 1);
}

/// Each file's lock descriptor lives as long as SQLite has a descriptor of it: opening and
/// closing many stores leaves no descriptor of their files open.
#[test]
fn no_descriptor_is_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let open_in_dir = || {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target.starts_with(dir.path()))
            .count()
    };
    for i in 0..50 {
        let store = busy_store(&dir.path().join(format!("s{i}.db")));
        assert!(open_in_dir() > 0);
        drop(store);
    }
    assert_eq!(open_in_dir(), 0);
}
