//! Open-file-description locks for SQLite's `unix` VFS (64-bit Linux), so that another copy of
//! SQLite in the same process (Python's `sqlite3`, a C library linking the system's) cannot
//! break the store's locks, nor the store its.
//!
//! SQLite locks a file with POSIX advisory locks (`fcntl(F_SETLK)`), which belong to the
//! *process*: a lock one copy of SQLite takes never conflicts with a lock the other copy takes
//! in the same process, and closing *any* descriptor of the file drops *all* the process's locks
//! on it. So Python's copy, closing its last connection to a WAL database the store has open,
//! gets the exclusive lock the store's shared lock should have denied it, checkpoints, and
//! deletes `-wal` and `-shm` under the store's connections (its next read fails with "disk I/O
//! error"); and the store's locks vanish whenever Python closes its descriptor, so another
//! process can write at the same time as the store.
//!
//! Linux's open-file-description locks (`F_OFD_SETLK`, `F_OFD_GETLK`) belong to an open file
//! description instead: they conflict with POSIX locks, the same process's included, and only
//! the last close of *that* description drops them. [`install`] replaces the `fcntl` of SQLite's
//! `unix` VFS (its system-call table, `xSetSystemCall`) with [`execstore_ofd_fcntl`], which
//! takes every lock of this copy of SQLite as an OFD lock, and its `close` with [`ofd_close`].
//!
//! One copy of SQLite coalesces the locks of all its connections to a file (its
//! `unixInodeInfo`: one set of locks per inode, issued on whichever connection's descriptor asks)
//! and relies on POSIX semantics for that: a lock taken through one descriptor is released
//! through another. So the wrapper takes every lock of a file on one *lock descriptor* per
//! inode (keyed by `st_dev` and `st_ino`): the file opened again through
//! `/proc/self/fd/<fd>` of the first descriptor SQLite locked it through, a description of its
//! own. Within this copy the locks then behave as POSIX locks of one process, and towards every
//! other lock holder (another process, or Python's copy in this one) as the locks of another
//! process. The lock descriptor is counted: each descriptor of the file that SQLite locked
//! through holds it, and when SQLite closes the last one the lock descriptor is closed too, so
//! a process opening many files keeps no descriptor it no longer needs. Every other `fcntl`
//! command goes to the descriptor SQLite named, unchanged.
//!
//! After a `fork` the child inherits the lock descriptors, and with them the parent's open file
//! descriptions and their locks. The first lock call in a child forgets them (closing its copies
//! releases nothing: the parent still holds them) and opens its own, so parent and child lock
//! each other out as two processes do, and a connection the child inherited and closes cannot
//! release the parent's locks (its descriptor is not a lock descriptor, it never held any). A
//! child that uses a connection it inherited holds no lock with it, as with POSIX locks, which
//! a child does not inherit: SQLite's rule stands, a connection must not cross a `fork`.
//!
//! What it does not change: any `close` of a descriptor of the file in this process still drops
//! the *other* copy's POSIX locks (those are the process's), as it always did; the store closes
//! its descriptors of a file only when it is closed.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::sync::{Mutex, OnceLock, PoisonError};

use rusqlite::ffi;

/// Set to `1` in the environment, [`install`] leaves SQLite's POSIX locks as they are (to test
/// what happens without OFD locks, and what the Python package does then).
pub(crate) const POSIX_LOCKS_ENV: &str = "EXECSTORE_SQLITE_POSIX_LOCKS";

/// An inode: `(st_dev, st_ino)`.
type Inode = (u64, u64);

/// The lock descriptor of an inode and how many of SQLite's descriptors use it.
struct LockFd {
    fd: c_int,
    users: usize,
}

/// Which inode each descriptor SQLite locked through belongs to, and each inode's lock descriptor.
struct Table {
    /// The process the lock descriptors belong to (see the module: after a `fork`).
    pid: libc::pid_t,
    fds: HashMap<c_int, Inode>,
    inodes: HashMap<Inode, LockFd>,
}

impl Table {
    /// This process's table: the one it has, or, in a child that inherited its parent's, an
    /// empty one (the inherited lock descriptors closed: the parent keeps their locks).
    fn of_this_process(slot: &mut Option<Table>) -> &mut Table {
        // SAFETY: `getpid` has no preconditions.
        let pid = unsafe { libc::getpid() };
        if slot.as_ref().is_some_and(|t| t.pid != pid) {
            if let Some(inherited) = slot.take() {
                for lock in inherited.inodes.values() {
                    // SAFETY: the child's copy of a lock descriptor this module opened; closing
                    // it releases nothing (the parent's copy keeps the description alive).
                    unsafe { libc::close(lock.fd) };
                }
            }
        }
        slot.get_or_insert_with(|| Table {
            pid,
            fds: HashMap::new(),
            inodes: HashMap::new(),
        })
    }
}

static TABLE: Mutex<Option<Table>> = Mutex::new(None);

/// Whether [`install`] put the wrapper in place (asked once per process).
static ACTIVE: OnceLock<bool> = OnceLock::new();

extern "C" {
    /// The C trampoline (`fcntl.c`): SQLite's variadic `fcntl` signature, forwarding to
    /// [`execstore_ofd_fcntl`] with its optional argument as a pointer.
    fn execstore_ofd_fcntl_variadic(fd: c_int, op: c_int, ...) -> c_int;
}

/// Installs the wrapper once per process, before this copy of SQLite opens a file through the
/// store (every store's open calls it first); answers whether it is in place: `false` when the
/// kernel has no OFD locks, when `EXECSTORE_SQLITE_POSIX_LOCKS=1`, or when SQLite's `unix` VFS
/// refuses the override.
pub(crate) fn install() -> bool {
    *ACTIVE.get_or_init(|| {
        if std::env::var_os(POSIX_LOCKS_ENV).is_some_and(|v| v == "1") || !kernel_has_ofd() {
            return false;
        }
        // SAFETY: `sqlite3_vfs_find` takes a NUL-terminated name and initialises SQLite if it
        // has not been; it returns null or a registered VFS.
        let unix = unsafe { ffi::sqlite3_vfs_find(c"unix".as_ptr()) };
        if unix.is_null() {
            return false;
        }
        // SAFETY: a registered VFS is valid; `xSetSystemCall` exists from version 3, checked.
        let Some(set) = (unsafe { ((*unix).iVersion >= 3).then(|| (*unix).xSetSystemCall).flatten() }) else {
            return false;
        };
        // SAFETY: the two replacements have the signatures SQLite calls them with (the variadic
        // `int fcntl(int, int, ...)` and `int close(int)`; `sqlite3_syscall_ptr` is SQLite's
        // type-erased function pointer, cast back at its call sites). Called once, before this
        // module's caller opens its first file; the table is SQLite's process-wide static.
        unsafe {
            let fcntl = std::mem::transmute::<
                unsafe extern "C" fn(c_int, c_int, ...) -> c_int,
                unsafe extern "C" fn(),
            >(execstore_ofd_fcntl_variadic);
            let close = std::mem::transmute::<unsafe extern "C" fn(c_int) -> c_int, unsafe extern "C" fn()>(
                ofd_close,
            );
            if set(unix, c"fcntl".as_ptr(), Some(fcntl)) != ffi::SQLITE_OK {
                return false;
            }
            if set(unix, c"close".as_ptr(), Some(close)) != ffi::SQLITE_OK {
                // Back to the default fcntl: no close hook, no OFD locks.
                set(unix, c"fcntl".as_ptr(), None);
                return false;
            }
        }
        true
    })
}

/// Whether the kernel takes OFD locks: an `F_OFD_GETLK` on a fresh memory file succeeds
/// (Linux 3.15 and later; memfd is 3.17).
fn kernel_has_ofd() -> bool {
    // SAFETY: plain system calls on a descriptor this function owns and closes; `lock` is a valid
    // `flock` for the duration of the call.
    unsafe {
        let fd = libc::memfd_create(c"execstore-ofd-probe".as_ptr(), libc::MFD_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let mut lock: libc::flock = std::mem::zeroed();
        lock.l_type = libc::F_WRLCK as _;
        lock.l_whence = libc::SEEK_SET as _;
        let ok = libc::fcntl(fd, libc::F_OFD_GETLK, &mut lock) == 0;
        libc::close(fd);
        ok
    }
}

/// The lock descriptor of the inode of `fd`, opened (see [`reopen`]) the first time one of its
/// descriptors asks; `fd` is then counted as one of its users. `Err(errno)` if `fstat` or the
/// open fails.
fn lock_fd(fd: c_int) -> Result<c_int, c_int> {
    let mut guard = TABLE.lock().unwrap_or_else(PoisonError::into_inner);
    let table = Table::of_this_process(&mut guard);
    if let Some(inode) = table.fds.get(&fd) {
        if let Some(lock) = table.inodes.get(inode) {
            return Ok(lock.fd);
        }
    }
    // SAFETY: `stat` is plain memory the call fills; `fd` is SQLite's open descriptor.
    let inode = unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut stat) != 0 {
            return Err(errno());
        }
        (stat.st_dev, stat.st_ino)
    };
    let lock = match table.inodes.get_mut(&inode) {
        Some(lock) => {
            lock.users += 1;
            lock.fd
        }
        None => {
            let fresh = reopen(fd)?;
            table.inodes.insert(inode, LockFd { fd: fresh, users: 1 });
            fresh
        }
    };
    table.fds.insert(fd, inode);
    Ok(lock)
}

/// `fd`'s file opened again, with its access mode, close-on-exec: a new open file description
/// (a `dup` would share `fd`'s). Never below 3, as SQLite keeps its descriptors off stdin,
/// stdout and stderr.
fn reopen(fd: c_int) -> Result<c_int, c_int> {
    let path = std::ffi::CString::new(format!("/proc/self/fd/{fd}")).map_err(|_| libc::EINVAL)?;
    // SAFETY: plain system calls: `fd` is SQLite's open descriptor, `path` a C string.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 {
            return Err(errno());
        }
        let opened = libc::open(
            path.as_ptr(),
            (flags & libc::O_ACCMODE) | libc::O_CLOEXEC | libc::O_NOCTTY,
        );
        if opened < 0 {
            return Err(errno());
        }
        if opened >= 3 {
            return Ok(opened);
        }
        let moved = libc::fcntl(opened, libc::F_DUPFD_CLOEXEC, 3);
        let e = errno();
        libc::close(opened);
        if moved < 0 {
            Err(e)
        } else {
            Ok(moved)
        }
    }
}

fn errno() -> c_int {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn set_errno(value: c_int) {
    // SAFETY: `__errno_location` is the calling thread's errno.
    unsafe { *libc::__errno_location() = value };
}

/// SQLite's `fcntl`: a lock command (`F_SETLK`, `F_SETLKW`, `F_GETLK`) becomes its OFD twin on
/// the inode's lock descriptor; every other command goes to `fd` unchanged.
///
/// # Safety
/// Called by SQLite (through the trampoline) as `fcntl(fd, op, arg)`: for a lock command `arg`
/// points to a `struct flock` SQLite owns.
#[no_mangle]
pub unsafe extern "C" fn execstore_ofd_fcntl(fd: c_int, op: c_int, arg: *mut c_void) -> c_int {
    let ofd = match op {
        libc::F_SETLK => libc::F_OFD_SETLK,
        libc::F_SETLKW => libc::F_OFD_SETLKW,
        libc::F_GETLK => libc::F_OFD_GETLK,
        // SAFETY: the caller's own command and argument, passed on as they came.
        _ => return unsafe { libc::fcntl(fd, op, arg) },
    };
    let lock = arg.cast::<libc::flock>();
    if lock.is_null() {
        set_errno(libc::EFAULT);
        return -1;
    }
    match lock_fd(fd) {
        // SAFETY: `lock` is SQLite's `struct flock` (the caller's promise); OFD commands require
        // `l_pid` 0 (SQLite does not always clear it, and reads back only `l_type`).
        Ok(lock_fd) => unsafe {
            (*lock).l_pid = 0;
            libc::fcntl(lock_fd, ofd, lock)
        },
        Err(e) => {
            set_errno(e);
            -1
        }
    }
}

/// SQLite's `close`: forgets `fd` as a user of its inode's lock descriptor (closing that when it
/// was the last), then closes `fd`.
unsafe extern "C" fn ofd_close(fd: c_int) -> c_int {
    let last = {
        let mut guard = TABLE.lock().unwrap_or_else(PoisonError::into_inner);
        let table = Table::of_this_process(&mut guard);
        table.fds.remove(&fd).and_then(|inode| {
            let lock = table.inodes.get_mut(&inode)?;
            lock.users -= 1;
            (lock.users == 0)
                .then(|| table.inodes.remove(&inode).map(|l| l.fd))
                .flatten()
        })
    };
    if let Some(lock_fd) = last {
        // SAFETY: a lock descriptor this module opened, used by no descriptor of SQLite any more.
        unsafe { libc::close(lock_fd) };
    }
    // SAFETY: SQLite's own descriptor, closed as SQLite asked.
    unsafe { libc::close(fd) }
}
