//! A VFS shim that hands each commit's WAL frames to the VFS below it in one `xWrite`, and a
//! checkpoint's runs of adjacent pages in one `xWrite` each.
//!
//! SQLite appends a WAL frame as two writes, the 24-byte frame header and then the page, so a
//! commit of 16 pages is 32 `xWrite` calls: 32 `pwrite`s natively, 32 access-handle `write()`s
//! on OPFS, and those calls, not the CPU, bound a commit. [`over`] registers, once per base VFS,
//! the VFS `<base>+coalesce` over another one (natively SQLite's default `unix`; in the browser
//! the `sahpool` or `memvfs` the caller installed). A file opened with `SQLITE_OPEN_WAL` gathers
//! contiguous appends in memory and writes them to the base file in one call; a main database
//! file does so during a checkpoint (see "Checkpoints"); every other file is the base VFS's own
//! file (its `xOpen` fills the memory SQLite allocated, its methods serve it), and every VFS
//! method is forwarded. The bytes written, their offsets and their order are
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
//!
//! # Checkpoints
//!
//! A checkpoint copies the log's pages into the main database file one `xWrite` per page, in
//! page order (on OPFS, one access-handle `write()` each). A main database file is ours too,
//! and between SQLite's `SQLITE_FCNTL_CKPT_START` and `SQLITE_FCNTL_CKPT_DONE` file controls
//! it holds a write that continues what is held (the next page), up to [`CAP`], so each run of
//! adjacent pages goes out in one call. Only under the file's exclusive lock (`locking_mode =
//! EXCLUSIVE`, as the stores in the browser run), where no other connection reads the file;
//! otherwise, and outside checkpoints, its writes go straight through. Any other call on the
//! file flushes first, and `CKPT_DONE` flushes the rest, before SQLite truncates or syncs the
//! file and records the checkpoint as done. SQLite ignores the answer of `CKPT_DONE`, so a
//! failed flush there answers the file's next call instead: under an exclusive lock the
//! checkpoint has copied the whole log, so that call is its truncate, and the checkpoint fails
//! without being recorded. A crash in between loses held pages of a checkpoint not yet
//! recorded, whose log is still whole: the next open replays it.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::mem::size_of;
use std::ptr::{self, addr_of};
use std::sync::{Mutex, PoisonError};

use execstore::{Result, StoreError};
use rusqlite::ffi;

/// Appended to the base VFS's name to name the shim over it.
const SUFFIX: &str = "+coalesce";

/// At most this many bytes are held per file, and so written in one call; a transaction
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

/// Where the base VFS's file starts in the memory SQLite allocates for a file of the shim:
/// right after ours, 16-aligned (more than any `sqlite3_file` of SQLite's VFSs needs).
const BASE_OFFSET: usize = size_of::<ShimFile>().next_multiple_of(16);

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

/// `xOpen`: a WAL file or a main database file is ours with the base's after it; any other file
/// (a rollback journal, a temporary file) is the base's own.
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
    let kind = if flags & ffi::SQLITE_OPEN_WAL != 0 {
        Kind::Wal
    } else if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 {
        Kind::MainDb
    } else {
        // SAFETY: SQLite allocated `file` with the shim's `szOsFile`, which is more than the
        // base's: the base's file fits at its start, and the base's methods serve it from then on
        // (SQLite calls them with this very pointer), as if the base had opened it.
        return unsafe { open(base, name, file, flags, out_flags) };
    };
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
    let shim = file.cast::<ShimFile>();
    // SAFETY: `file` is SQLite's allocation of `szOsFile` bytes, 8-aligned (SQLite's malloc),
    // with room for a `ShimFile` before `BASE_OFFSET`; nothing was there to drop. `methods` is the
    // base's valid method table.
    unsafe {
        ptr::write(
            shim,
            ShimFile {
                file: ffi::sqlite3_file {
                    pMethods: ptr::null(),
                },
                methods: file_methods(methods),
                base: real,
                kind,
                lock: ffi::SQLITE_LOCK_NONE,
                holding: false,
                pending: ffi::SQLITE_OK,
                held: Held::default(),
            },
        );
        // The table lives in the file itself, valid until xClose (SQLite clears `pMethods`
        // then). Set even when the base failed but left its methods set: SQLite then calls our
        // xClose, which closes the base's file.
        (*shim).file.pMethods = addr_of!((*shim).methods);
    }
    rc
}

mod file;
use file::{file_methods, Held, Kind, ShimFile};

#[cfg(test)]
mod tests;
