//! The SQLite VFS `execstore-node-file`: each file SQLite opens by name (the database, its
//! `-wal` and `-journal`) is a file on the local file system, read and written through
//! Node's synchronous `fs` calls; anonymous temporary files stay in wasm memory. Built on
//! sqlite-wasm-rs's VFS framework (`rsqlite-vfs`), as its memory VFS and sqlite-wasm-vfs's
//! `sahpool` are.
//!
//! No shared memory and no OS locks: the store holds its file exclusively, in SQLite's
//! exclusive locking mode (so WAL needs no `-shm`, its index lives in the connection's
//! memory), and one process at a time owns the file through the store's lock file (see
//! `lock`). SQLite's lock levels are only remembered, for `xCheckReservedLock`.
//!
//! Durability is SQLite's over `xSync`: `fsync` (or `fdatasync` when SQLite asks for data
//! only) of the file, and once after a file was created, of its directory (so a new `-wal`
//! is itself on the device before a commit in it counts as synced).

use std::cell::RefCell;
use std::rc::Rc;

use sqlite_wasm_rs::vfs::{
    register_vfs, registered_vfs, AccessMode, DeviceCharacteristics, LockLevel, MemChunksFile, OpenAccess,
    OpenOptions, OpenRequest, OpenedFile, SQLiteIoMethods, SQLiteVfs, SyncOptions, VfsError, VfsErrorCode,
    VfsFile, VfsResult, VfsStore,
};
use sqlite_wasm_rs::WasmOsCallback;

use super::host::{host, FsError, Host, Open};
use crate::errors::{backend, WasmError};

/// The VFS's name.
pub(crate) const VFS: &str = "execstore-node-file";

/// A file SQLite opened.
pub(crate) enum NodeFile {
    /// A file on disk.
    Disk(DiskFile),
    /// An anonymous temporary file, in memory.
    Memory(MemChunksFile),
}

/// A file on disk, open as `fd`.
pub(crate) struct DiskFile {
    host: Rc<Host>,
    fd: f64,
    path: String,
    read_only: bool,
    /// Created by this open: its directory is synced at the first sync.
    new_entry: bool,
    lock: LockLevel,
}

fn fs_error(code: VfsErrorCode, what: &str, path: &str, e: FsError) -> VfsError {
    let code = if e.is("ENOSPC") || e.is("EDQUOT") || e.is("EFBIG") {
        VfsErrorCode::Full
    } else {
        code
    };
    VfsError::new(code, format!("{what} {path}: {e}").into())
}

impl VfsFile for NodeFile {
    fn device_characteristics(&self) -> DeviceCharacteristics {
        // As SQLite's `unix` VFS says of a local file (SQLITE_POWERSAFE_OVERWRITE is on by
        // default): a write never changes bytes outside the range written, so WAL frames
        // need no padding to a sector.
        DeviceCharacteristics::POWERSAFE_OVERWRITE
    }

    fn read(&mut self, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
        match self {
            NodeFile::Memory(m) => m.read(buf, offset),
            NodeFile::Disk(f) => f
                .host
                .read_at(f.fd, buf, offset)
                .map_err(|e| fs_error(VfsErrorCode::IoRead, "read", &f.path, e)),
        }
    }

    fn write(&mut self, buf: &[u8], offset: u64) -> VfsResult<()> {
        match self {
            NodeFile::Memory(m) => m.write(buf, offset),
            NodeFile::Disk(f) => {
                if f.read_only {
                    return Err(VfsError::new(
                        VfsErrorCode::ReadOnly,
                        "the file is open read-only".into(),
                    ));
                }
                f.host
                    .write_at(f.fd, buf, offset)
                    .map_err(|e| fs_error(VfsErrorCode::IoWrite, "write", &f.path, e))
            }
        }
    }

    fn truncate(&mut self, size: u64) -> VfsResult<()> {
        match self {
            NodeFile::Memory(m) => m.truncate(size),
            NodeFile::Disk(f) => f
                .host
                .truncate(f.fd, size)
                .map_err(|e| fs_error(VfsErrorCode::IoTruncate, "truncate", &f.path, e)),
        }
    }

    fn sync(&mut self, options: SyncOptions) -> VfsResult<()> {
        match self {
            NodeFile::Memory(m) => m.sync(options),
            NodeFile::Disk(f) => {
                f.host
                    .fsync(f.fd, options.data_only)
                    .map_err(|e| fs_error(VfsErrorCode::IoSync, "fsync", &f.path, e))?;
                if f.new_entry {
                    let dir = f.host.dirname(&f.path);
                    f.host
                        .sync_directory(&dir)
                        .map_err(|e| fs_error(VfsErrorCode::IoDirectorySync, "fsync", &dir, e))?;
                    f.new_entry = false;
                }
                Ok(())
            }
        }
    }

    fn size(&self) -> VfsResult<u64> {
        match self {
            NodeFile::Memory(m) => m.size(),
            NodeFile::Disk(f) => f
                .host
                .fstat(f.fd)
                .map(|s| s.size)
                .map_err(|e| fs_error(VfsErrorCode::IoStat, "fstat", &f.path, e)),
        }
    }

    fn lock(&mut self, level: LockLevel) -> VfsResult<()> {
        if let NodeFile::Disk(f) = self {
            f.lock = f.lock.max(level);
        }
        Ok(())
    }

    fn unlock(&mut self, level: LockLevel) -> VfsResult<()> {
        if let NodeFile::Disk(f) = self {
            f.lock = f.lock.min(level);
        }
        Ok(())
    }

    fn check_reserved_lock(&self) -> VfsResult<bool> {
        // The store's lock file keeps every other connection out: only this one can hold a
        // RESERVED lock (a fresh connection must see none, to roll a hot journal back).
        Ok(matches!(self, NodeFile::Disk(f) if f.lock >= LockLevel::Reserved))
    }
}

/// The VFS's shared data: the last error, for `xGetLastError`.
#[derive(Default)]
pub(crate) struct AppData {
    error: RefCell<Option<VfsError>>,
}

pub(crate) struct Store;

impl VfsStore for Store {
    type File = NodeFile;
    type AppData = AppData;

    fn record_error(data: &AppData, error: VfsError) {
        data.error.replace(Some(error));
    }

    fn last_error(data: &AppData) -> Option<VfsError> {
        data.error.borrow().clone()
    }

    fn open_file(_data: &AppData, request: OpenRequest<'_>) -> VfsResult<OpenedFile<NodeFile>> {
        let options = request.options;
        let Some(name) = request.filename else {
            return Ok(OpenedFile {
                file: NodeFile::Memory(MemChunksFile::default()),
                access: options.access(),
            });
        };
        let host = host().map_err(|e| VfsError::new(VfsErrorCode::CantOpen, e.to_string().into()))?;
        let path = name.path().to_owned();
        let read_only = options.access() == OpenAccess::ReadOnly;
        let existed = host
            .stat(&path)
            .map_err(|e| fs_error(VfsErrorCode::CantOpen, "stat", &path, e))?
            .is_some();
        let how = match (read_only, options.create(), options.exclusive()) {
            (true, _, _) => Open::Read,
            (false, false, _) => Open::Write,
            (false, true, false) => Open::Create,
            (false, true, true) => Open::CreateNew,
        };
        let fd = host
            .open(&path, how)
            .map_err(|e| fs_error(VfsErrorCode::CantOpen, "open", &path, e))?;
        Ok(OpenedFile {
            file: NodeFile::Disk(DiskFile {
                host,
                fd,
                path,
                read_only,
                new_entry: !existed,
                lock: LockLevel::None,
            }),
            access: options.access(),
        })
    }

    fn close_file(
        _data: &AppData,
        _name: Option<&str>,
        file: NodeFile,
        options: OpenOptions,
    ) -> VfsResult<()> {
        let NodeFile::Disk(f) = file else {
            return Ok(());
        };
        let closed = f
            .host
            .close(f.fd)
            .map_err(|e| fs_error(VfsErrorCode::IoClose, "close", &f.path, e));
        if options.delete_on_close() {
            match f.host.unlink(&f.path) {
                Err(e) if !e.is("ENOENT") => {
                    return Err(fs_error(VfsErrorCode::IoDelete, "unlink", &f.path, e))
                }
                _ => {}
            }
        }
        closed
    }

    fn access(_data: &AppData, name: &str, _mode: AccessMode) -> VfsResult<bool> {
        let host = host().map_err(|e| VfsError::new(VfsErrorCode::IoAccess, e.to_string().into()))?;
        host.stat(name)
            .map(|s| s.is_some())
            .map_err(|e| fs_error(VfsErrorCode::IoAccess, "stat", name, e))
    }

    fn full_pathname(_data: &AppData, name: &str) -> VfsResult<String> {
        let host = host().map_err(|e| VfsError::new(VfsErrorCode::CantOpen, e.to_string().into()))?;
        host.resolve(name)
            .map_err(|e| fs_error(VfsErrorCode::CantOpen, "resolve", name, e))
    }

    fn delete_file(_data: &AppData, name: &str, sync_dir: bool) -> VfsResult<()> {
        let host = host().map_err(|e| VfsError::new(VfsErrorCode::IoDelete, e.to_string().into()))?;
        match host.unlink(name) {
            Ok(()) => {}
            Err(e) if e.is("ENOENT") => {
                return Err(VfsError::new(
                    VfsErrorCode::IoDeleteNoEntry,
                    format!("{name}: no such file").into(),
                ))
            }
            Err(e) => return Err(fs_error(VfsErrorCode::IoDelete, "unlink", name, e)),
        }
        if sync_dir {
            let dir = host.dirname(name);
            host.sync_directory(&dir)
                .map_err(|e| fs_error(VfsErrorCode::IoDirectorySync, "fsync", &dir, e))?;
        }
        Ok(())
    }
}

pub(crate) struct IoMethods;

impl SQLiteIoMethods for IoMethods {
    type Store = Store;
}

pub(crate) struct Vfs;

impl SQLiteVfs<IoMethods> for Vfs {
    type Os = WasmOsCallback;

    fn os(_data: &AppData) -> &WasmOsCallback {
        &WasmOsCallback
    }

    // Paths on Linux go up to PATH_MAX (4096 bytes, its NUL included).
    const MAX_PATH_SIZE: core::ffi::c_int = 4095;
}

/// Registers the VFS (once per agent) and returns its name.
pub(crate) fn registered() -> Result<&'static str, WasmError> {
    // SAFETY: wasm32-unknown-unknown runs one thread per agent, and every SQLite call of this
    // package (registrations included) happens on it, so nothing races the lookup and the
    // registration. `IoMethods`, `Vfs` and `Store` are the framework's defaults over one
    // store type, so the VFS, its file layout and its callbacks agree; the registration is
    // kept for the agent's life (`into_raw`), so the app data outlives every open file.
    unsafe {
        if sqlite_wasm_rs::sqlite3_initialize() != sqlite_wasm_rs::SQLITE_OK {
            return Err(backend("SQLite failed to initialize"));
        }
        if registered_vfs(VFS)
            .map_err(|e| backend(format!("SQLite VFS lookup: {e}")))?
            .is_none()
        {
            register_vfs::<IoMethods, Vfs>(VFS, AppData::default(), false)
                .map_err(|e| backend(format!("cannot register the SQLite VFS {VFS}: {e}")))?
                .into_raw();
        }
    }
    Ok(VFS)
}
