//! A VFS shim that hands each commit's WAL frames to the VFS below it in one `xWrite`.
//!
//! SQLite appends a WAL frame as two writes, the 24-byte frame header and then the page, so a
//! commit of 16 pages is 32 `xWrite` calls: 32 `pwrite`s natively, 32 access-handle `write()`s
//! on OPFS, and those calls, not the CPU, bound a commit. [`over`] registers, once per base VFS,
//! the VFS `<base>+coalesce` over another one (natively SQLite's default `unix`; in the browser
//! the `sahpool` or `memvfs` the caller installed). A file opened with `SQLITE_OPEN_WAL` gathers
//! contiguous appends in memory and writes them to the base file in one call; every other file
//! is the base VFS's own file (its `xOpen` fills the memory SQLite allocated, its methods serve
//! it), and every VFS method is forwarded. The bytes written, their offsets and their order are
//! SQLite's; only the number of calls changes.
//!
//! What a WAL file holds goes to the base file (a *flush*):
//! * right after the page of a frame whose header marks a commit (bytes 4..8 of the 24-byte
//!   header, the database size, nonzero), so a commit's frames have reached the base VFS's
//!   `xWrite` before the write of its last frame returns: before SQLite publishes the commit in
//!   the wal-index, and before its `COMMIT` returns. Padding frames (`synchronous = FULL` on a
//!   VFS without power-safe overwrite) carry the commit mark too, so each goes out at once;
//! * before every other method of the file that can answer an error (`xRead`, `xSync`,
//!   `xTruncate`, `xFileSize`, the locks, `xFileControl`, shared memory, `xFetch`/`xUnfetch`,
//!   `xClose`): SQLite never reads, sizes, syncs or truncates a WAL while bytes are held (a
//!   transaction that spills pages before its commit reads them back through `xRead`);
//! * before a write that does not continue what is held, and before the held bytes would
//!   outgrow [`CAP`] (128 KiB).
//!
//! A write over bytes this file already wrote since the log last started (SQLite rewriting a
//! frame of the open transaction in place, or its checksums at commit) is not held: it goes to
//! the base file at once, after what was held. So nothing but appends is ever held, and at the
//! end of a commit nothing is: its last append is its commit frame.
//!
//! A failed flush drops what it held (writes of the transaction SQLite was told had succeeded)
//! and its error is the answer of the call that caused it, so SQLite fails and rolls back that
//! transaction; it is never swallowed. `xSectorSize`, `xDeviceCharacteristics` and
//! `xShmBarrier` cannot answer an error and do not see the file's bytes: they are forwarded
//! without a flush (and a WAL file gets no shared-memory calls: SQLite makes them on the
//! database file).
//!
//! A crash loses at most what is held, which is a suffix of the writes of a transaction that
//! has not committed: the base file then holds what it would hold had the process died before
//! those writes, which SQLite's recovery already handles (it stops at the last valid commit
//! frame).
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::mem::size_of;
use std::ptr::{self, addr_of};
use std::sync::{Mutex, PoisonError};

use execstore::{Result, StoreError};
use rusqlite::ffi;

/// Appended to the base VFS's name to name the shim over it.
const SUFFIX: &str = "+coalesce";

/// At most this many bytes are held per WAL file, and so written in one call; a transaction
/// larger than this goes out in pieces of at most this size (its commit frame with the last).
/// It is the most SQLite's `unix` VFS writes in one `xWrite`: its `seekAndWriteFd` keeps only
/// the low 17 bits of the size (SQLite itself never writes more than a 64 KiB page at once), so
/// a larger write fails there with `SQLITE_FULL`. A W1 commit (about 16 frames of 4 KiB pages,
/// 66 KB) fits in one write.
pub(crate) const CAP: usize = 0x1ffff;

/// The WAL header's size; frame `k` (from 0) starts at `WAL_HEADER + k * (page + FRAME_HEADER)`.
const WAL_HEADER: i64 = 32;

/// A WAL frame header's size: page number, database size after a commit (else 0), salts,
/// checksums.
const FRAME_HEADER: usize = 24;

/// The shims registered in this process, one per base VFS.
static REGISTERED: Mutex<Vec<Registered>> = Mutex::new(Vec::new());

struct Registered {
    /// The base VFS's name.
    base_name: String,
    /// The base VFS it was registered over (an address: a pointer is not `Send`).
    base: usize,
    /// The shim's `sqlite3_vfs`, leaked: SQLite and open connections keep pointers to it.
    shim: usize,
}

/// The name of the coalescing VFS over the VFS named `base` (`None`: SQLite's default VFS),
/// registering it the first time it is asked for in this process. The base VFS must be
/// registered; if another VFS was registered under its name since, the shim is registered
/// again over that one.
pub(crate) fn over(base: Option<&str>) -> Result<String> {
    let c_base = base
        .map(CString::new)
        .transpose()
        .map_err(|_| StoreError::invalid("vfs", "must not contain a NUL byte"))?;
    // SAFETY: `sqlite3_vfs_find` takes a NUL-terminated name or null (the default VFS), and
    // initialises SQLite if it has not been; it returns null or a VFS of SQLite's list.
    let base_vfs = unsafe { ffi::sqlite3_vfs_find(c_base.as_ref().map_or(ptr::null(), |c| c.as_ptr())) };
    if base_vfs.is_null() {
        return Err(StoreError::Backend {
            message: format!("no such vfs: {}", base.unwrap_or("(the default)")),
            retryable: false,
            source: None,
        });
    }
    // SAFETY: a registered VFS's `zName` is a NUL-terminated string that lives as long as the
    // registration.
    let base_name = unsafe { CStr::from_ptr((*base_vfs).zName) }
        .to_string_lossy()
        .into_owned();
    let name = format!("{base_name}{SUFFIX}");
    let mut registered = REGISTERED.lock().unwrap_or_else(PoisonError::into_inner);
    let known = registered.iter().position(|r| r.base_name == base_name);
    if let Some(i) = known {
        if registered[i].base == base_vfs as usize {
            return Ok(name);
        }
        // Retired, not freed: a connection opened over the old base may still point to it.
        // SAFETY: `shim` is the VFS this module registered (leaked, so still valid); unregistering
        // only takes it off SQLite's list.
        unsafe { ffi::sqlite3_vfs_unregister(registered[i].shim as *mut ffi::sqlite3_vfs) };
        registered.remove(i);
    }
    let c_name =
        CString::new(name.clone()).map_err(|_| StoreError::invalid("vfs", "must not contain a NUL byte"))?;
    // SAFETY: `base_vfs` is registered (found above), so its fields are readable.
    let vfs = unsafe { shim_vfs(base_vfs, c_name.into_raw()) }?;
    let shim = Box::into_raw(Box::new(vfs));
    // SAFETY: `shim` is a complete VFS that is never freed (SQLite keeps the pointer), its name
    // is a leaked C string, and its `pAppData` is the base VFS its methods forward to.
    let rc = unsafe { ffi::sqlite3_vfs_register(shim, 0) };
    if rc != ffi::SQLITE_OK {
        return Err(StoreError::Backend {
            message: format!("cannot register the SQLite VFS {name} (code {rc})"),
            retryable: false,
            source: None,
        });
    }
    registered.push(Registered {
        base_name,
        base: base_vfs as usize,
        shim: shim as usize,
    });
    Ok(name)
}

/// Where the base VFS's file starts in the memory SQLite allocates for a WAL file of the shim:
/// right after ours, 16-aligned (more than any `sqlite3_file` of SQLite's VFSs needs).
const BASE_OFFSET: usize = size_of::<WalFile>().next_multiple_of(16);

/// `ours` where the base has the method, else none (so SQLite sees the base's abilities).
fn present<T>(base: Option<T>, ours: T) -> Option<T> {
    base.map(|_| ours)
}

/// The method `$field` of the C struct at `$ptr` (a VFS, or a file's method table) if its
/// `$version` is at least `$since` (the version that added the field), else `None`. Only for a
/// `$ptr` valid up to the fields its version declares: each field is read through the pointer,
/// so a shorter struct of an older version is never read past its end.
macro_rules! declared {
    ($ptr:expr, $version:expr, $field:ident, $since:expr) => {
        if $version >= $since {
            // SAFETY: the macro's condition: `$ptr` is valid up to the fields of `$version`,
            // and this field is one of them.
            unsafe { addr_of!((*$ptr).$field).read() }
        } else {
            None
        }
    };
}

/// The shim's VFS over `base`: the base's limits and abilities, room for our file before the
/// base's, and our methods forwarding to it.
///
/// # Safety
/// `base` must point to a valid VFS.
unsafe fn shim_vfs(base: *mut ffi::sqlite3_vfs, name: *const c_char) -> Result<ffi::sqlite3_vfs> {
    // SAFETY: the caller's promise.
    let (version, sz_os_file, mx_pathname) =
        unsafe { ((*base).iVersion, (*base).szOsFile, (*base).mxPathname) };
    // `base` is valid up to the fields of its version: the caller's promise.
    macro_rules! base {
        ($field:ident, $since:expr) => {
            declared!(base, version, $field, $since)
        };
    }
    let size = usize::try_from(sz_os_file)
        .ok()
        .and_then(|n| n.checked_add(BASE_OFFSET))
        .and_then(|n| c_int::try_from(n).ok())
        .ok_or_else(|| StoreError::invalid("vfs", format!("bad szOsFile {sz_os_file}")))?;
    Ok(ffi::sqlite3_vfs {
        iVersion: version,
        szOsFile: size,
        mxPathname: mx_pathname,
        pNext: ptr::null_mut(),
        zName: name,
        pAppData: base.cast(),
        xOpen: present(base!(xOpen, 1), vfs_open as _),
        xDelete: present(base!(xDelete, 1), vfs_delete as _),
        xAccess: present(base!(xAccess, 1), vfs_access as _),
        xFullPathname: present(base!(xFullPathname, 1), vfs_full_pathname as _),
        xDlOpen: present(base!(xDlOpen, 1), vfs_dl_open as _),
        xDlError: present(base!(xDlError, 1), vfs_dl_error as _),
        xDlSym: present(base!(xDlSym, 1), vfs_dl_sym as _),
        xDlClose: present(base!(xDlClose, 1), vfs_dl_close as _),
        xRandomness: present(base!(xRandomness, 1), vfs_randomness as _),
        xSleep: present(base!(xSleep, 1), vfs_sleep as _),
        xCurrentTime: present(base!(xCurrentTime, 1), vfs_current_time as _),
        xGetLastError: present(base!(xGetLastError, 1), vfs_get_last_error as _),
        xCurrentTimeInt64: present(base!(xCurrentTimeInt64, 2), vfs_current_time_int64 as _),
        xSetSystemCall: present(base!(xSetSystemCall, 3), vfs_set_system_call as _),
        xGetSystemCall: present(base!(xGetSystemCall, 3), vfs_get_system_call as _),
        xNextSystemCall: present(base!(xNextSystemCall, 3), vfs_next_system_call as _),
    })
}

/// The base VFS under the shim `vfs`.
///
/// # Safety
/// `vfs` must be a shim registered by [`over`] (its `pAppData` is the base VFS).
unsafe fn base_of(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    // SAFETY: the caller's promise.
    unsafe { (*vfs).pAppData.cast() }
}

/// A VFS method that forwards to the base VFS's: same arguments, the base VFS for ours.
macro_rules! forward_vfs {
    ($name:ident, $field:ident, ($($arg:ident: $ty:ty),*) -> $ret:ty, $missing:expr) => {
        unsafe extern "C" fn $name(vfs: *mut ffi::sqlite3_vfs, $($arg: $ty),*) -> $ret {
            // SAFETY: SQLite calls a VFS's methods with that VFS, a shim of `over` whose
            // `pAppData` is the base VFS (never changed); the base has this method (ours is
            // installed only where it does) and gets the caller's arguments unchanged, under
            // the same contract.
            unsafe {
                let base = base_of(vfs);
                match (*base).$field {
                    Some(f) => f(base, $($arg),*),
                    None => $missing,
                }
            }
        }
    };
}

forward_vfs!(vfs_delete, xDelete, (name: *const c_char, sync_dir: c_int) -> c_int, ffi::SQLITE_IOERR_DELETE);
forward_vfs!(
    vfs_access,
    xAccess,
    (name: *const c_char, flags: c_int, out: *mut c_int) -> c_int,
    ffi::SQLITE_IOERR_ACCESS
);
forward_vfs!(
    vfs_full_pathname,
    xFullPathname,
    (name: *const c_char, n: c_int, out: *mut c_char) -> c_int,
    ffi::SQLITE_CANTOPEN
);
forward_vfs!(vfs_dl_open, xDlOpen, (name: *const c_char) -> *mut c_void, ptr::null_mut());
forward_vfs!(vfs_dl_error, xDlError, (n: c_int, out: *mut c_char) -> (), ());
forward_vfs!(
    vfs_dl_sym,
    xDlSym,
    (handle: *mut c_void, symbol: *const c_char)
        -> Option<unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *mut c_void, *const c_char)>,
    None
);
forward_vfs!(vfs_dl_close, xDlClose, (handle: *mut c_void) -> (), ());
forward_vfs!(vfs_randomness, xRandomness, (n: c_int, out: *mut c_char) -> c_int, 0);
forward_vfs!(vfs_sleep, xSleep, (micros: c_int) -> c_int, 0);
forward_vfs!(vfs_current_time, xCurrentTime, (out: *mut f64) -> c_int, ffi::SQLITE_ERROR);
forward_vfs!(vfs_get_last_error, xGetLastError, (n: c_int, out: *mut c_char) -> c_int, 0);
forward_vfs!(
    vfs_current_time_int64,
    xCurrentTimeInt64,
    (out: *mut ffi::sqlite3_int64) -> c_int,
    ffi::SQLITE_ERROR
);
forward_vfs!(
    vfs_set_system_call,
    xSetSystemCall,
    (name: *const c_char, call: ffi::sqlite3_syscall_ptr) -> c_int,
    ffi::SQLITE_NOTFOUND
);
forward_vfs!(
    vfs_get_system_call,
    xGetSystemCall,
    (name: *const c_char) -> ffi::sqlite3_syscall_ptr,
    None
);
forward_vfs!(vfs_next_system_call, xNextSystemCall, (name: *const c_char) -> *const c_char, ptr::null());

/// `xOpen`: a WAL file is ours with the base's after it; any other file is the base's own.
unsafe extern "C" fn vfs_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: `vfs` is a shim of `over` (SQLite calls a VFS's methods with it).
    let base = unsafe { base_of(vfs) };
    // SAFETY: the base is a valid VFS; the shim has `xOpen` only if the base has.
    let Some(open) = (unsafe { (*base).xOpen }) else {
        return ffi::SQLITE_CANTOPEN;
    };
    if flags & ffi::SQLITE_OPEN_WAL == 0 {
        // SAFETY: SQLite allocated `file` with the shim's `szOsFile`, which is more than the
        // base's: the base's file fits at its start, and the base's methods serve it from then on
        // (SQLite calls them with this very pointer), as if the base had opened it.
        return unsafe { open(base, name, file, flags, out_flags) };
    }
    // SAFETY: the shim's `szOsFile` is `BASE_OFFSET` plus the base's, so the base's file fits at
    // `BASE_OFFSET`, 16-aligned from SQLite's 8-aligned allocation start.
    let real = unsafe { file.cast::<u8>().add(BASE_OFFSET).cast::<ffi::sqlite3_file>() };
    // SAFETY: the base opens its file in memory it can use, with SQLite's own arguments.
    let rc = unsafe { open(base, name, real, flags, out_flags) };
    // SAFETY: the base's xOpen set its `pMethods`, whether it succeeded or not (VFS contract).
    let methods = unsafe { (*real).pMethods };
    if methods.is_null() {
        // Failed with nothing to close: SQLite will not call xClose either.
        // SAFETY: `file` is SQLite's allocation of at least a `sqlite3_file`.
        unsafe { (*file).pMethods = ptr::null() };
        return if rc == ffi::SQLITE_OK {
            ffi::SQLITE_CANTOPEN
        } else {
            rc
        };
    }
    let wal = file.cast::<WalFile>();
    // SAFETY: `file` is SQLite's allocation of `szOsFile` bytes, 8-aligned (SQLite's malloc),
    // with room for a `WalFile` before `BASE_OFFSET`; nothing was there to drop. `methods` is the
    // base's valid method table.
    unsafe {
        ptr::write(
            wal,
            WalFile {
                file: ffi::sqlite3_file {
                    pMethods: ptr::null(),
                },
                methods: wal_methods(methods),
                base: real,
                held: Held::default(),
            },
        );
        // The table lives in the file itself, valid until xClose (SQLite clears `pMethods`
        // then). Set even when the base failed but left its methods set: SQLite then calls our
        // xClose, which closes the base's file.
        (*wal).file.pMethods = addr_of!((*wal).methods);
    }
    rc
}

/// A WAL file of the shim: SQLite's view (`file`, first), our methods, the base VFS's file
/// (right after this struct, at [`BASE_OFFSET`]) and what is held for it.
#[repr(C)]
struct WalFile {
    file: ffi::sqlite3_file,
    methods: ffi::sqlite3_io_methods,
    base: *mut ffi::sqlite3_file,
    held: Held,
}

/// The appends held for a WAL file and what is known of its frames.
#[derive(Default)]
struct Held {
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

/// Our method table for a WAL file whose base file has `base`: the base's version and methods,
/// each ours.
fn wal_methods(base: *const ffi::sqlite3_io_methods) -> ffi::sqlite3_io_methods {
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
        xClose: present(base!(xClose, 1), wal_close as _),
        xRead: present(base!(xRead, 1), wal_read as _),
        xWrite: present(base!(xWrite, 1), wal_write as _),
        xTruncate: present(base!(xTruncate, 1), wal_truncate as _),
        xSync: present(base!(xSync, 1), wal_sync as _),
        xFileSize: present(base!(xFileSize, 1), wal_file_size as _),
        xLock: present(base!(xLock, 1), wal_lock as _),
        xUnlock: present(base!(xUnlock, 1), wal_unlock as _),
        xCheckReservedLock: present(base!(xCheckReservedLock, 1), wal_check_reserved_lock as _),
        xFileControl: present(base!(xFileControl, 1), wal_file_control as _),
        xSectorSize: present(base!(xSectorSize, 1), wal_sector_size as _),
        xDeviceCharacteristics: present(base!(xDeviceCharacteristics, 1), wal_device_characteristics as _),
        xShmMap: present(base!(xShmMap, 2), wal_shm_map as _),
        xShmLock: present(base!(xShmLock, 2), wal_shm_lock as _),
        xShmBarrier: present(base!(xShmBarrier, 2), wal_shm_barrier as _),
        xShmUnmap: present(base!(xShmUnmap, 2), wal_shm_unmap as _),
        xFetch: present(base!(xFetch, 3), wal_fetch as _),
        xUnfetch: present(base!(xUnfetch, 3), wal_unfetch as _),
    }
}

/// The `WalFile` SQLite calls a method of.
///
/// # Safety
/// `file` must be a WAL file `vfs_open` made (its methods are the only ones that call this), not
/// yet closed, and used by one thread at a time (SQLite's rule for a file).
unsafe fn wal_file<'a>(file: *mut ffi::sqlite3_file) -> &'a mut WalFile {
    // SAFETY: the caller's promise; the `WalFile` starts at `file` (`repr(C)`, `file` first).
    unsafe { &mut *file.cast::<WalFile>() }
}

impl WalFile {
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

    /// Writes what is held, if anything, and forgets it whatever the outcome.
    fn flush(&mut self) -> c_int {
        if self.held.buf.is_empty() {
            return ffi::SQLITE_OK;
        }
        let rc = self.base_write(&self.held.buf, self.held.start);
        self.held.buf.clear();
        rc
    }

    /// `xWrite`: holds an append, writes a rewrite through, flushes at the end of a commit.
    fn write(&mut self, bytes: &[u8], offset: i64) -> c_int {
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
            tests::REWRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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

unsafe extern "C" fn wal_write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    n: c_int,
    offset: i64,
) -> c_int {
    // SAFETY: SQLite calls this method only on a WAL file `vfs_open` made, one thread at a time.
    let wal = unsafe { wal_file(file) };
    let Ok(len) = usize::try_from(n) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    if len == 0 {
        return wal.flush();
    }
    if data.is_null() || offset < 0 {
        return ffi::SQLITE_IOERR_WRITE;
    }
    // SAFETY: SQLite passes `n` readable bytes at `data` for the call.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) };
    wal.write(bytes, offset)
}

/// A WAL file method that flushes, then forwards to the base file's.
macro_rules! flush_then_forward {
    ($name:ident, $field:ident, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, $($arg: $ty),*) -> c_int {
            // SAFETY: SQLite calls this method only on a WAL file `vfs_open` made, one thread at
            // a time.
            let wal = unsafe { wal_file(file) };
            let rc = wal.flush();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            match wal.base_methods().$field {
                // SAFETY: the base file is open and has this method (ours is installed only
                // where it does); SQLite's arguments are passed unchanged, under the same
                // contract.
                Some(f) => unsafe { f(wal.base, $($arg),*) },
                None => ffi::SQLITE_IOERR,
            }
        }
    };
}

flush_then_forward!(wal_read, xRead, (buf: *mut c_void, n: c_int, offset: i64));
flush_then_forward!(wal_sync, xSync, (flags: c_int));
flush_then_forward!(wal_file_size, xFileSize, (size: *mut i64));
flush_then_forward!(wal_lock, xLock, (level: c_int));
flush_then_forward!(wal_unlock, xUnlock, (level: c_int));
flush_then_forward!(wal_check_reserved_lock, xCheckReservedLock, (out: *mut c_int));
flush_then_forward!(wal_file_control, xFileControl, (op: c_int, arg: *mut c_void));
flush_then_forward!(wal_shm_map, xShmMap, (page: c_int, size: c_int, extend: c_int, out: *mut *mut c_void));
flush_then_forward!(wal_shm_lock, xShmLock, (offset: c_int, n: c_int, flags: c_int));
flush_then_forward!(wal_shm_unmap, xShmUnmap, (delete: c_int));
flush_then_forward!(wal_fetch, xFetch, (offset: i64, n: c_int, out: *mut *mut c_void));
flush_then_forward!(wal_unfetch, xUnfetch, (offset: i64, p: *mut c_void));

unsafe extern "C" fn wal_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    // SAFETY: SQLite calls this method only on a WAL file `vfs_open` made, one thread at a time.
    let wal = unsafe { wal_file(file) };
    let rc = wal.flush();
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    wal.held.high = wal.held.high.min(size);
    wal.held.header_at = None;
    match wal.base_methods().xTruncate {
        // SAFETY: the base file is open; SQLite's argument passed unchanged.
        Some(truncate) => unsafe { truncate(wal.base, size) },
        None => ffi::SQLITE_IOERR_TRUNCATE,
    }
}

unsafe extern "C" fn wal_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls this method only on a WAL file `vfs_open` made, one thread at a time.
    let wal = unsafe { wal_file(file) };
    match wal.base_methods().xSectorSize {
        // SAFETY: the base file is open.
        Some(f) => unsafe { f(wal.base) },
        None => 0,
    }
}

unsafe extern "C" fn wal_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls this method only on a WAL file `vfs_open` made, one thread at a time.
    let wal = unsafe { wal_file(file) };
    match wal.base_methods().xDeviceCharacteristics {
        // SAFETY: the base file is open.
        Some(f) => unsafe { f(wal.base) },
        None => 0,
    }
}

unsafe extern "C" fn wal_shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: SQLite calls this method only on a WAL file `vfs_open` made, one thread at a time.
    let wal = unsafe { wal_file(file) };
    if let Some(f) = wal.base_methods().xShmBarrier {
        // SAFETY: the base file is open.
        unsafe { f(wal.base) }
    }
}

unsafe extern "C" fn wal_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite calls this method only on a WAL file `vfs_open` made, once, one thread at a
    // time.
    let wal = unsafe { wal_file(file) };
    let flushed = wal.flush();
    let closed = match wal.base_methods().xClose {
        // SAFETY: the base file is open, and closed only here.
        Some(close) => unsafe { close(wal.base) },
        None => ffi::SQLITE_OK,
    };
    // Frees the buffer; the rest is plain data SQLite's allocation holds until it frees it (the
    // method table stays readable until SQLite clears `pMethods`, right after this returns).
    drop(std::mem::take(&mut wal.held));
    if flushed != ffi::SQLITE_OK {
        flushed
    } else {
        closed
    }
}

#[cfg(test)]
mod tests;
