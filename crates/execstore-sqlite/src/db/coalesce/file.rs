//! The shim's files: a WAL file or a main database file, its method table (each method
//! ours, flushing what is held before it forwards to the base VFS's file) and what it holds.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

use std::ffi::{c_int, c_void};
use std::ptr::addr_of;

use rusqlite::ffi;

use super::{present, CAP, FRAME_HEADER, WAL_HEADER};

/// A file of the shim: SQLite's view (`file`, first), our methods, the base VFS's file (right
/// after this struct, at [`super::BASE_OFFSET`]) and what is held for it.
#[repr(C)]
pub(super) struct ShimFile {
    pub(super) file: ffi::sqlite3_file,
    pub(super) methods: ffi::sqlite3_io_methods,
    pub(super) base: *mut ffi::sqlite3_file,
    pub(super) kind: Kind,
    /// The lock SQLite holds on the base file (as its last successful xLock or xUnlock set).
    pub(super) lock: c_int,
    /// A main database file inside a checkpoint under an exclusive lock: its writes are held.
    pub(super) holding: bool,
    /// The error of the flush at the end of a checkpoint (`SQLITE_FCNTL_CKPT_DONE`, whose
    /// answer SQLite ignores), answered by the file's next method instead; `SQLITE_OK` if none.
    pub(super) pending: c_int,
    pub(super) held: Held,
}

/// What SQLite opened a file of the shim as.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Wal,
    MainDb,
}

/// The bytes a file holds, and for a WAL file what is known of its frames.
#[derive(Default)]
pub(super) struct Held {
    /// The bytes held, to be written at `start`.
    buf: Vec<u8>,
    start: i64,
    /// The end of the furthest write since the log last started (its header written at 0):
    /// a write before it is a rewrite.
    high: i64,
    /// The page size (from the WAL header, or from a frame header and the page after it).
    page: Option<i64>,
    /// Where the last frame header written starts, and whether it marks a commit.
    header_at: Option<i64>,
    commit: bool,
}

/// Our method table for a file whose base file has `base`: the base's version and methods,
/// each ours.
pub(super) fn file_methods(base: *const ffi::sqlite3_io_methods) -> ffi::sqlite3_io_methods {
    // SAFETY: `base` is the valid method table of an open file.
    let version = unsafe { (*base).iVersion };
    // `base` is a valid table up to the fields of its version (an open file's).
    macro_rules! base {
        ($field:ident, $since:expr) => {
            declared!(base, version, $field, $since)
        };
    }
    ffi::sqlite3_io_methods {
        iVersion: version,
        xClose: present(base!(xClose, 1), file_close as _),
        xRead: present(base!(xRead, 1), file_read as _),
        xWrite: present(base!(xWrite, 1), file_write as _),
        xTruncate: present(base!(xTruncate, 1), file_truncate as _),
        xSync: present(base!(xSync, 1), file_sync as _),
        xFileSize: present(base!(xFileSize, 1), file_file_size as _),
        xLock: present(base!(xLock, 1), file_lock as _),
        xUnlock: present(base!(xUnlock, 1), file_unlock as _),
        xCheckReservedLock: present(base!(xCheckReservedLock, 1), file_check_reserved_lock as _),
        xFileControl: present(base!(xFileControl, 1), file_file_control as _),
        xSectorSize: present(base!(xSectorSize, 1), file_sector_size as _),
        xDeviceCharacteristics: present(base!(xDeviceCharacteristics, 1), file_device_characteristics as _),
        xShmMap: present(base!(xShmMap, 2), file_shm_map as _),
        xShmLock: present(base!(xShmLock, 2), file_shm_lock as _),
        xShmBarrier: present(base!(xShmBarrier, 2), file_shm_barrier as _),
        xShmUnmap: present(base!(xShmUnmap, 2), file_shm_unmap as _),
        xFetch: present(base!(xFetch, 3), file_fetch as _),
        xUnfetch: present(base!(xUnfetch, 3), file_unfetch as _),
    }
}

/// The `ShimFile` SQLite calls a method of.
///
/// # Safety
/// `file` must be a file `vfs_open` made (its methods are the only ones that call this), not
/// yet closed, and used by one thread at a time (SQLite's rule for a file).
unsafe fn shim_file<'a>(file: *mut ffi::sqlite3_file) -> &'a mut ShimFile {
    // SAFETY: the caller's promise; the `ShimFile` starts at `file` (`repr(C)`, `file` first).
    unsafe { &mut *file.cast::<ShimFile>() }
}

impl ShimFile {
    /// The base file's methods.
    fn base_methods(&self) -> &ffi::sqlite3_io_methods {
        // SAFETY: the base file is open (until our xClose) and its table valid while it is.
        unsafe { &*(*self.base).pMethods }
    }

    /// The base file's `xWrite` of `bytes` at `offset`.
    fn base_write(&self, bytes: &[u8], offset: i64) -> c_int {
        let Ok(n) = c_int::try_from(bytes.len()) else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        match self.base_methods().xWrite {
            // SAFETY: the base file is open; `bytes` is valid for `n` bytes for the call.
            Some(write) => unsafe { write(self.base, bytes.as_ptr().cast(), n, offset) },
            None => ffi::SQLITE_IOERR_WRITE,
        }
    }

    /// Writes what is held, if anything, and forgets it whatever the outcome; or answers the
    /// error a checkpoint's last flush left pending.
    fn flush(&mut self) -> c_int {
        if self.pending != ffi::SQLITE_OK {
            return std::mem::replace(&mut self.pending, ffi::SQLITE_OK);
        }
        if self.held.buf.is_empty() {
            return ffi::SQLITE_OK;
        }
        let rc = self.base_write(&self.held.buf, self.held.start);
        self.held.buf.clear();
        rc
    }

    /// `xWrite`.
    fn write(&mut self, bytes: &[u8], offset: i64) -> c_int {
        match self.kind {
            Kind::Wal => self.write_wal(bytes, offset),
            Kind::MainDb => self.write_db(bytes, offset),
        }
    }

    /// A main database file's `xWrite`: inside a checkpoint under an exclusive lock, holds a
    /// write that continues what is held; otherwise writes through.
    fn write_db(&mut self, bytes: &[u8], offset: i64) -> c_int {
        let held_end = self.held.start + self.held.buf.len() as i64;
        let joins = self.holding && offset == held_end && self.held.buf.len() + bytes.len() <= CAP;
        // (A flush also answers an error a checkpoint's end left pending.)
        if self.pending != ffi::SQLITE_OK || (!self.held.buf.is_empty() && !joins) {
            let rc = self.flush();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
        }
        if !self.holding || bytes.len() > CAP || self.held.buf.try_reserve(bytes.len()).is_err() {
            return self.base_write(bytes, offset);
        }
        if self.held.buf.is_empty() {
            self.held.start = offset;
        }
        self.held.buf.extend_from_slice(bytes);
        ffi::SQLITE_OK
    }

    /// A WAL file's `xWrite`: holds an append, writes a rewrite through, flushes at the end of a
    /// commit.
    fn write_wal(&mut self, bytes: &[u8], offset: i64) -> c_int {
        let end = offset + bytes.len() as i64;
        if offset == 0 {
            // The WAL header: the log starts (again, after a checkpoint) from the top.
            let rc = self.flush();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            self.held.high = 0;
            self.held.header_at = None;
            self.held.commit = false;
            if let Some(page) = wal_header_page_size(bytes) {
                self.held.page = Some(page);
            }
        }
        let held_end = self.held.start + self.held.buf.len() as i64;
        if !self.held.buf.is_empty() && offset != held_end {
            let rc = self.flush();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
        }
        if offset < self.held.high {
            // A rewrite (what is held ended at `high`, so it is out by now): never held, so a
            // commit's checksum rewrites are out when it returns.
            #[cfg(test)]
            super::tests::REWRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.held.header_at = None;
            return self.base_write(bytes, offset);
        }
        if bytes.len() == FRAME_HEADER {
            self.held.header_at = Some(offset);
            self.held.commit = bytes[4..8] != [0; 4];
        } else if self.held.page.is_none() && self.held.header_at == Some(offset - FRAME_HEADER as i64) {
            self.held.page = page_size(bytes.len());
        }
        if self.held.buf.len() + bytes.len() > CAP {
            let rc = self.flush();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
        }
        self.held.high = self.held.high.max(end);
        if bytes.len() > CAP || self.held.buf.try_reserve(bytes.len()).is_err() {
            return self.base_write(bytes, offset);
        }
        if self.held.buf.is_empty() {
            self.held.start = offset;
        }
        self.held.buf.extend_from_slice(bytes);
        if self.held.commit && self.ends_frame(end) {
            return self.flush();
        }
        ffi::SQLITE_OK
    }

    /// Whether a write ending at `end` completes a frame.
    fn ends_frame(&self, end: i64) -> bool {
        self.held
            .page
            .is_some_and(|page| end > WAL_HEADER && (end - WAL_HEADER) % (page + FRAME_HEADER as i64) == 0)
    }
}

/// The page size a WAL header records (bytes 8..12, big-endian), if `bytes` is one.
fn wal_header_page_size(bytes: &[u8]) -> Option<i64> {
    let magic = u32::from_be_bytes(bytes.get(0..4)?.try_into().ok()?);
    if magic & !1 != 0x377f_0682 {
        return None;
    }
    page_size(u32::from_be_bytes(bytes.get(8..12)?.try_into().ok()?) as usize)
}

/// `n` if it is a valid SQLite page size.
fn page_size(n: usize) -> Option<i64> {
    ((512..=65536).contains(&n) && n.is_power_of_two()).then_some(n as i64)
}

unsafe extern "C" fn file_write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    n: c_int,
    offset: i64,
) -> c_int {
    // SAFETY: SQLite calls this method only on a file `vfs_open` made, one thread at a time.
    let file = unsafe { shim_file(file) };
    let Ok(len) = usize::try_from(n) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    if len == 0 {
        return file.flush();
    }
    if data.is_null() || offset < 0 {
        return ffi::SQLITE_IOERR_WRITE;
    }
    // SAFETY: SQLite passes `n` readable bytes at `data` for the call.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
    file.write(bytes, offset)
}

/// A file method that flushes, then forwards to the base file's.
macro_rules! flush_then_forward {
    ($name:ident, $field:ident, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, $($arg: $ty),*) -> c_int {
            // SAFETY: SQLite calls this method only on a file `vfs_open` made, one thread at
            // a time.
            let file = unsafe { shim_file(file) };
            let rc = file.flush();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            match file.base_methods().$field {
                // SAFETY: the base file is open and has this method (ours is installed only
                // where it does); SQLite's arguments are passed unchanged, under the same
                // contract.
                Some(f) => unsafe { f(file.base, $($arg),*) },
                None => ffi::SQLITE_IOERR,
            }
        }
    };
}

flush_then_forward!(file_read, xRead, (buf: *mut c_void, n: c_int, offset: i64));
flush_then_forward!(file_sync, xSync, (flags: c_int));
flush_then_forward!(file_file_size, xFileSize, (size: *mut i64));
flush_then_forward!(file_check_reserved_lock, xCheckReservedLock, (out: *mut c_int));
flush_then_forward!(file_shm_map, xShmMap, (page: c_int, size: c_int, extend: c_int, out: *mut *mut c_void));
flush_then_forward!(file_shm_lock, xShmLock, (offset: c_int, n: c_int, flags: c_int));
flush_then_forward!(file_shm_unmap, xShmUnmap, (delete: c_int));
flush_then_forward!(file_fetch, xFetch, (offset: i64, n: c_int, out: *mut *mut c_void));
flush_then_forward!(file_unfetch, xUnfetch, (offset: i64, p: *mut c_void));

/// `xLock` and `xUnlock`: flush, forward, and remember the lock the file is left with.
macro_rules! flush_then_lock {
    ($name:ident, $field:ident) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
            // SAFETY: SQLite calls this method only on a file `vfs_open` made, one thread at a
            // time.
            let file = unsafe { shim_file(file) };
            let rc = file.flush();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            let rc = match file.base_methods().$field {
                // SAFETY: the base file is open and has this method; SQLite's argument passed
                // unchanged.
                Some(f) => unsafe { f(file.base, level) },
                None => ffi::SQLITE_IOERR,
            };
            if rc == ffi::SQLITE_OK {
                file.lock = level;
            }
            rc
        }
    };
}

flush_then_lock!(file_lock, xLock);
flush_then_lock!(file_unlock, xUnlock);

/// `xFileControl`: on a main database file, a checkpoint's start (`SQLITE_FCNTL_CKPT_START`)
/// starts holding its writes if SQLite holds the file's exclusive lock, and its end
/// (`SQLITE_FCNTL_CKPT_DONE`) flushes them; any other call flushes, then forwards.
unsafe extern "C" fn file_file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    // SAFETY: SQLite calls this method only on a file `vfs_open` made, one thread at a time.
    let file = unsafe { shim_file(file) };
    let rc = file.flush();
    if file.kind == Kind::MainDb && op == ffi::SQLITE_FCNTL_CKPT_DONE {
        file.holding = false;
        // SQLite ignores this call's answer: a failed flush is the answer of the file's next
        // call, its truncate or sync before it records the checkpoint (which, under an
        // exclusive lock, always backfills the whole log and so always makes them).
        file.pending = rc;
    } else if rc != ffi::SQLITE_OK {
        return rc;
    } else if file.kind == Kind::MainDb && op == ffi::SQLITE_FCNTL_CKPT_START {
        file.holding = file.lock == ffi::SQLITE_LOCK_EXCLUSIVE;
    }
    match file.base_methods().xFileControl {
        // SAFETY: the base file is open and has this method; SQLite's arguments passed unchanged.
        Some(f) => unsafe { f(file.base, op, arg) },
        None => ffi::SQLITE_NOTFOUND,
    }
}

unsafe extern "C" fn file_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    // SAFETY: SQLite calls this method only on a file `vfs_open` made, one thread at a time.
    let file = unsafe { shim_file(file) };
    let rc = file.flush();
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    file.held.high = file.held.high.min(size);
    file.held.header_at = None;
    match file.base_methods().xTruncate {
        // SAFETY: the base file is open; SQLite's argument passed unchanged.
        Some(truncate) => unsafe { truncate(file.base, size) },
        None => ffi::SQLITE_IOERR_TRUNCATE,
    }
}

unsafe extern "C" fn file_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls this method only on a file `vfs_open` made, one thread at a time.
    let file = unsafe { shim_file(file) };
    match file.base_methods().xSectorSize {
        // SAFETY: the base file is open.
        Some(f) => unsafe { f(file.base) },
        None => 0,
    }
}

unsafe extern "C" fn file_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls this method only on a file `vfs_open` made, one thread at a time.
    let file = unsafe { shim_file(file) };
    match file.base_methods().xDeviceCharacteristics {
        // SAFETY: the base file is open.
        Some(f) => unsafe { f(file.base) },
        None => 0,
    }
}

unsafe extern "C" fn file_shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: SQLite calls this method only on a file `vfs_open` made, one thread at a time.
    let file = unsafe { shim_file(file) };
    if let Some(f) = file.base_methods().xShmBarrier {
        // SAFETY: the base file is open.
        unsafe { f(file.base) }
    }
}

unsafe extern "C" fn file_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls this method only on a file `vfs_open` made, once, one thread at a
    // time.
    let file = unsafe { shim_file(file) };
    let flushed = file.flush();
    let closed = match file.base_methods().xClose {
        // SAFETY: the base file is open, and closed only here.
        Some(close) => unsafe { close(file.base) },
        None => ffi::SQLITE_OK,
    };
    // Frees the buffer; the rest is plain data SQLite's allocation holds until it frees it (the
    // method table stays readable until SQLite clears `pMethods`, right after this returns).
    drop(std::mem::take(&mut file.held));
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        closed
    }
}
