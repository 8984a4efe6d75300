//! The shim over a counting VFS (SQLite's default, with every `xWrite` of a WAL file and of a main
//! database file counted, and failed on demand): how many base writes a commit and a checkpoint
//! cost with and without the shim, and that every commit is in the base file's bytes when it
//! returns (a copy of the files taken then, without the shared memory, recovers it).

use std::ffi::{c_int, c_void, CString};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rusqlite::{params, Connection, OpenFlags};

use super::*;

/// A copy of SQLite's default VFS whose WAL files count their writes. The copy's methods are the
/// default VFS's own (they get the copy, which has the same `pAppData`); `xOpen` puts a method
/// table of ours behind the base's file for a WAL.
#[repr(C)]
struct Counter {
    vfs: ffi::sqlite3_vfs,
    base_open: unsafe extern "C" fn(
        *mut ffi::sqlite3_vfs,
        ffi::sqlite3_filename,
        *mut ffi::sqlite3_file,
        c_int,
        *mut c_int,
    ) -> c_int,
    /// Where [`CountingMethods`] starts in a file: after the base's file.
    methods_at: usize,
    /// WAL `xWrite` calls made.
    writes: AtomicUsize,
    /// Fail every WAL write with `SQLITE_IOERR_WRITE`.
    fail: AtomicBool,
    /// Main database `xWrite` calls made.
    db_writes: AtomicUsize,
    /// Fail every main database write with `SQLITE_IOERR_WRITE`.
    fail_db: AtomicBool,
    /// Report no power-safe overwrite, so `synchronous = FULL` pads commits to a sector.
    no_powersafe: bool,
}

/// A WAL or main database file's method table (the base's, with `xWrite`, and for a WAL
/// `xDeviceCharacteristics`, ours) and what they need; `pMethods` points to it.
#[repr(C)]
struct CountingMethods {
    methods: ffi::sqlite3_io_methods,
    counter: *const Counter,
    base: *const ffi::sqlite3_io_methods,
    wal: bool,
}

static COUNTERS: AtomicUsize = AtomicUsize::new(0);

/// Writes the shim sent straight through as rewrites.
pub(super) static REWRITES: AtomicUsize = AtomicUsize::new(0);

/// Registers a fresh counting VFS (a name of its own, so tests running at once count apart).
fn counter(no_powersafe: bool) -> (&'static Counter, String) {
    // The stores other tests of this binary open install the OFD lock wrapper on SQLite's
    // `unix` VFS (once per process, before a store's first open). Installed while this test's
    // connection holds POSIX locks, it would mix the two kinds on one file, and a checkpoint
    // would find its own file locked: install it first, as every store's open does.
    let _ = crate::db::other_sqlite_safe();
    let name = format!("count-{}", COUNTERS.fetch_add(1, Ordering::Relaxed));
    // SAFETY: null finds the default VFS, which SQLite keeps registered.
    let base = unsafe { &*ffi::sqlite3_vfs_find(ptr::null()) };
    let methods_at = (base.szOsFile as usize).next_multiple_of(16);
    let mut vfs = *base;
    vfs.pNext = ptr::null_mut();
    vfs.zName = CString::new(name.clone()).unwrap().into_raw();
    vfs.szOsFile = (methods_at + size_of::<CountingMethods>()) as c_int;
    vfs.xOpen = Some(counting_open);
    let counter: &'static Counter = Box::leak(Box::new(Counter {
        vfs,
        base_open: base.xOpen.unwrap(),
        methods_at,
        writes: AtomicUsize::new(0),
        fail: AtomicBool::new(false),
        db_writes: AtomicUsize::new(0),
        fail_db: AtomicBool::new(false),
        no_powersafe,
    }));
    // SAFETY: the VFS is complete and never freed; its name is a leaked C string.
    let rc = unsafe { ffi::sqlite3_vfs_register(ptr::addr_of!(counter.vfs).cast_mut(), 0) };
    assert_eq!(rc, ffi::SQLITE_OK);
    (counter, name)
}

unsafe extern "C" fn counting_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out: *mut c_int,
) -> c_int {
    // SAFETY: `vfs` is the first field of a leaked `Counter`; the base's file fits at `file`,
    // and a `CountingMethods` at `methods_at` after it (the counter's `szOsFile`).
    unsafe {
        let counter = &*vfs.cast::<Counter>();
        let rc = (counter.base_open)(vfs, name, file, flags, out);
        let wal = flags & ffi::SQLITE_OPEN_WAL != 0;
        if (wal || flags & ffi::SQLITE_OPEN_MAIN_DB != 0) && !(*file).pMethods.is_null() {
            let base = (*file).pMethods;
            let at = file
                .cast::<u8>()
                .add(counter.methods_at)
                .cast::<CountingMethods>();
            let mut methods = *base;
            methods.xWrite = Some(counting_write);
            if wal {
                methods.xDeviceCharacteristics = Some(counting_device);
            }
            ptr::write(
                at,
                CountingMethods {
                    methods,
                    counter,
                    base,
                    wal,
                },
            );
            (*file).pMethods = ptr::addr_of!((*at).methods);
        }
        rc
    }
}

/// The `CountingMethods` of a WAL or main database file of the counter.
unsafe fn counting<'a>(file: *mut ffi::sqlite3_file) -> &'a CountingMethods {
    // SAFETY: `pMethods` of a counted file points to the start of its `CountingMethods`.
    unsafe { &*(*file).pMethods.cast::<CountingMethods>() }
}

unsafe extern "C" fn counting_write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    n: c_int,
    at: i64,
) -> c_int {
    // SAFETY: a counted WAL file; its base methods serve the base's file at `file`.
    unsafe {
        let m = counting(file);
        let counter = &*m.counter;
        let (writes, fail) = if m.wal {
            (&counter.writes, &counter.fail)
        } else {
            (&counter.db_writes, &counter.fail_db)
        };
        writes.fetch_add(1, Ordering::SeqCst);
        if fail.load(Ordering::SeqCst) {
            return ffi::SQLITE_IOERR_WRITE;
        }
        ((*m.base).xWrite.unwrap())(file, data, n, at)
    }
}

unsafe extern "C" fn counting_device(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: as in `counting_write`.
    unsafe {
        let m = counting(file);
        let flags = ((*m.base).xDeviceCharacteristics.unwrap())(file);
        if (*m.counter).no_powersafe {
            flags & !ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE
        } else {
            flags
        }
    }
}

impl Counter {
    fn writes(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }

    fn db_writes(&self) -> usize {
        self.db_writes.load(Ordering::SeqCst)
    }
}

/// A WAL connection to `path` through `vfs`, with a table `t`.
fn open(path: &Path, vfs: &str, synchronous: &str) -> Connection {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
    let conn = Connection::open_with_flags_and_vfs(path, flags, vfs).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {synchronous};
         CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, k TEXT, v BLOB);
         CREATE INDEX IF NOT EXISTS t_k ON t (k);"
    ))
    .unwrap();
    conn
}

/// One transaction of `rows` rows of `size` bytes (a few pages each time: table, index, blobs).
fn step(conn: &Connection, round: usize, rows: usize, size: usize) -> rusqlite::Result<()> {
    let tx = conn.unchecked_transaction()?;
    for r in 0..rows {
        let n = round * 1000 + r;
        tx.execute(
            "INSERT INTO t (id, k, v) VALUES (?1, ?2, ?3)",
            params![
                n as i64,
                format!("{:08x}", n.wrapping_mul(2_654_435_761) % (1 << 32)),
                vec![n as u8; size]
            ],
        )?;
    }
    tx.commit()
}

/// Rows and bytes of `t`, after an integrity check.
fn contents(conn: &Connection) -> (i64, i64) {
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    conn.query_row("SELECT COUNT(*), COALESCE(SUM(LENGTH(v)), 0) FROM t", [], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })
    .unwrap()
}

/// What a crash now would leave: the database and its WAL as the base VFS has them (no shared
/// memory, so SQLite recovers the WAL, checking every frame's checksum), opened elsewhere.
fn crash_image(path: &Path) -> (i64, i64) {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.db");
    std::fs::copy(path, &copy).unwrap();
    let wal = path.with_extension("db-wal");
    if wal.exists() {
        std::fs::copy(&wal, dir.path().join("copy.db-wal")).unwrap();
    }
    contents(&Connection::open(&copy).unwrap())
}

#[test]
fn the_default_vfs_gets_one_shim() {
    let name = over(None).unwrap();
    assert!(name.ends_with("+coalesce"), "{name}");
    assert_eq!(over(None).unwrap(), name);
    // SAFETY: null finds the default VFS.
    let default = unsafe { CStr::from_ptr((*ffi::sqlite3_vfs_find(ptr::null())).zName) };
    assert_eq!(over(Some(default.to_str().unwrap())).unwrap(), name);
    let missing = over(Some("no-such-vfs")).unwrap_err();
    assert!(missing.to_string().contains("no such vfs"), "{missing}");
}

#[test]
fn a_commit_is_one_base_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut per_commit = Vec::new();
    for shim in [false, true] {
        let (counter, base) = counter(false);
        let vfs = if shim { over(Some(&base)).unwrap() } else { base };
        let conn = open(&dir.path().join(format!("{shim}.db")), &vfs, "NORMAL");
        step(&conn, 0, 1, 10).unwrap();
        let mut writes = Vec::new();
        for round in 1..=10 {
            let before = counter.writes();
            step(&conn, round, 6, 1500).unwrap();
            writes.push(counter.writes() - before);
        }
        assert_eq!(contents(&conn), (61, 10 + 60 * 1500));
        per_commit.push(writes);
    }
    // Without the shim a frame is two writes, and each of these commits is several frames.
    assert!(
        per_commit[0].iter().all(|&n| n >= 8 && n % 2 == 0),
        "{:?}",
        per_commit[0]
    );
    assert_eq!(per_commit[1], vec![1; 10]);
}

#[test]
fn every_commit_is_read_and_survives_a_crash() {
    for (synchronous, no_powersafe) in [("NORMAL", false), ("FULL", false), ("FULL", true)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        let (counter, base) = counter(no_powersafe);
        let writer = open(&path, &over(Some(&base)).unwrap(), synchronous);
        // A second connection, through SQLite's default VFS (another process's view).
        let reader = Connection::open(&path).unwrap();
        for round in 0..25 {
            step(&writer, round, 3, 900 + round * 100).unwrap();
            let want = (
                3 * (round as i64 + 1),
                (0..=round).map(|r| 3 * (900 + r as i64 * 100)).sum::<i64>(),
            );
            assert_eq!(contents(&reader), want, "{synchronous} round {round}: reader");
            assert_eq!(
                crash_image(&path),
                want,
                "{synchronous} round {round}: crash image"
            );
        }
        assert!(counter.writes() > 0);
    }
}

#[test]
fn a_transaction_larger_than_the_cap_commits_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.db");
    let (counter, base) = counter(false);
    let writer = open(&path, &over(Some(&base)).unwrap(), "NORMAL");
    step(&writer, 0, 1, 10).unwrap();
    // A small cache spills pages to the WAL before the commit; rewriting rows spilled earlier
    // makes SQLite overwrite their frames in place and rewrite the checksums at commit. No
    // checkpoint after the commit: it would read (so flush) the WAL before the crash image.
    writer
        .execute_batch("PRAGMA cache_size = 20; PRAGMA wal_autocheckpoint = 0")
        .unwrap();
    let rows = 3000;
    let before = counter.writes();
    {
        let tx = writer.unchecked_transaction().unwrap();
        for n in 1..=rows {
            tx.execute(
                "INSERT INTO t (id, k, v) VALUES (?1, 'big', ?2)",
                params![n as i64, vec![7u8; 3000]],
            )
            .unwrap();
        }
        tx.execute(
            "UPDATE t SET v = ?1 WHERE id BETWEEN 1 AND 50",
            params![vec![9u8; 3000]],
        )
        .unwrap();
        tx.commit().unwrap();
    }
    let writes = counter.writes() - before;
    assert!(writes >= 12 * 1024 * 1024 / CAP, "{writes} writes");
    let wal_len = std::fs::metadata(path.with_extension("db-wal")).unwrap().len();
    assert!(wal_len > CAP as u64, "{wal_len}");
    let want = (rows as i64 + 1, 10 + rows as i64 * 3000);
    assert_eq!(contents(&Connection::open(&path).unwrap()), want);
    assert_eq!(crash_image(&path), want);
    assert!(
        REWRITES.load(Ordering::Relaxed) > 0,
        "no frame was rewritten in place"
    );
    let nines: i64 = writer
        .query_row("SELECT COUNT(*) FROM t WHERE v = ?1", [vec![9u8; 3000]], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(nines, 50);
}

#[test]
fn a_failed_flush_fails_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fail.db");
    let (counter, base) = counter(false);
    let writer = open(&path, &over(Some(&base)).unwrap(), "NORMAL");
    for round in 0..3 {
        step(&writer, round, 4, 1000).unwrap();
    }
    counter.fail.store(true, Ordering::SeqCst);
    let before = counter.writes();
    let err = step(&writer, 3, 4, 1000).unwrap_err();
    counter.fail.store(false, Ordering::SeqCst);
    // The one write the commit made (all its frames) failed, and said so.
    assert_eq!(counter.writes() - before, 1);
    assert_eq!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::SystemIoFailure),
        "{err}"
    );
    let want = (12, 12 * 1000);
    assert_eq!(contents(&Connection::open(&path).unwrap()), want);
    assert_eq!(crash_image(&path), want);
    // The connection goes on.
    step(&writer, 4, 4, 1000).unwrap();
    assert_eq!(contents(&Connection::open(&path).unwrap()), (16, 16 * 1000));
}

/// `PRAGMA wal_checkpoint(TRUNCATE)` on `conn`: the main database writes it made.
fn checkpoint(conn: &Connection, counter: &Counter) -> rusqlite::Result<usize> {
    let before = counter.db_writes();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get::<_, i64>(0))?;
    Ok(counter.db_writes() - before)
}

/// The same rounds through the shim and straight on the counter, each on a fresh file, in
/// exclusive locking mode or not: the main database writes of the final checkpoint, and what
/// a crash right after it would leave.
fn checkpoint_writes(exclusive: bool, shim: bool) -> (usize, (i64, i64)) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ckpt.db");
    let (counter, base) = counter(false);
    let vfs = if shim { over(Some(&base)).unwrap() } else { base };
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
    let conn = Connection::open_with_flags_and_vfs(&path, flags, vfs.as_str()).unwrap();
    if exclusive {
        conn.execute_batch("PRAGMA locking_mode = EXCLUSIVE").unwrap();
    }
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; PRAGMA synchronous = NORMAL;
         CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v BLOB); CREATE INDEX t_k ON t (k);",
    )
    .unwrap();
    for round in 0..40 {
        step(&conn, round, 4, 1000).unwrap();
    }
    let writes = checkpoint(&conn, counter).unwrap();
    let image = crash_image(&path);
    assert_eq!(image, (160, 160 * 1000));
    (writes, image)
}

#[test]
fn a_checkpoint_under_an_exclusive_lock_writes_runs_of_pages() {
    let (raw, _) = checkpoint_writes(true, false);
    let (shim, _) = checkpoint_writes(true, true);
    // Straight on the base VFS, one write per page (the table's 40+ pages, the index's few);
    // through the shim, one per run of adjacent pages.
    assert!(raw >= 40, "{raw} base writes without the shim");
    assert!(
        shim * 4 <= raw,
        "{shim} base writes through the shim, {raw} without"
    );
}

#[test]
fn without_an_exclusive_lock_a_checkpoint_writes_through() {
    let (raw, _) = checkpoint_writes(false, false);
    let (shim, _) = checkpoint_writes(false, true);
    assert_eq!(shim, raw, "another connection may read the file: nothing is held");
}

#[test]
fn a_failed_flush_at_the_end_of_a_checkpoint_fails_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ckpt-fail.db");
    let (counter, base) = counter(false);
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
    let conn =
        Connection::open_with_flags_and_vfs(&path, flags, over(Some(&base)).unwrap().as_str()).unwrap();
    conn.execute_batch(
        "PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
         CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v BLOB); CREATE INDEX t_k ON t (k);",
    )
    .unwrap();
    // A new file: every page of the checkpoint is adjacent to the last (pages 1..n, n < 32), so
    // all of it is held until SQLite's CKPT_DONE, whose answer SQLite ignores.
    step(&conn, 0, 12, 1000).unwrap();
    counter.fail_db.store(true, Ordering::SeqCst);
    let before = counter.db_writes();
    let err = checkpoint(&conn, counter).unwrap_err();
    counter.fail_db.store(false, Ordering::SeqCst);
    assert_eq!(
        counter.db_writes() - before,
        1,
        "the whole checkpoint in one write, which failed"
    );
    assert_eq!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::SystemIoFailure),
        "{err}"
    );
    // Not recorded as done: the log still has everything, and the next checkpoint copies it.
    assert_eq!(crash_image(&path), (12, 12 * 1000));
    step(&conn, 1, 4, 1000).unwrap();
    assert!(checkpoint(&conn, counter).unwrap() >= 1);
    assert_eq!(crash_image(&path), (16, 16 * 1000));
    drop(conn);
    assert_eq!(contents(&Connection::open(&path).unwrap()), (16, 16 * 1000));
}

#[test]
fn other_files_are_the_base_vfs_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.db");
    let (counter, base) = counter(false);
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
    let conn =
        Connection::open_with_flags_and_vfs(&path, flags, over(Some(&base)).unwrap().as_str()).unwrap();
    conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT, v BLOB); CREATE INDEX t_k ON t (k);")
        .unwrap();
    for round in 0..3 {
        step(&conn, round, 4, 1000).unwrap();
    }
    conn.execute_batch("VACUUM").unwrap();
    assert_eq!(contents(&conn), (12, 12 * 1000));
    assert_eq!(counter.writes(), 0);
    // The main database file is the shim's, its writes straight through (no checkpoint).
    assert!(counter.db_writes() > 0);
}
