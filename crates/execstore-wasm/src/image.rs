//! Stores loaded from a SQLite database file's bytes (an "image"): kept in wasm memory by
//! SQLite's in-memory VFS (`memvfs`, sqlite-wasm-rs's default), so they work anywhere the
//! package does, Node and edge runtimes included. Also how an OPFS import checks a file
//! before it replaces anything.
//!
//! Only the main database file is an image. Commits still in a `-wal` sidecar (a file
//! copied while its writer had it open) are not in it; given the sidecar's bytes too, the
//! image is recovered from both first, as SQLite would on open, and checkpointed into one
//! file.

use std::cell::Cell;
use std::sync::Arc;

use execstore::workspace::Clock;
use execstore_sqlite::{SqliteOptions, SqliteStore, SqliteWorkspaceOptions, SqliteWorkspaceStorage};
use sqlite_wasm_rs::vfs::memvfs::{MemVfsError, MemVfsUtil};
use sqlite_wasm_rs::vfs::transfer::DbTransfer;
use sqlite_wasm_rs::vfs::VfsFilesManager;

use crate::errors::{backend, invalid, WasmError};

/// The VFS the images live in.
const MEMVFS: &str = "memvfs";

thread_local! {
    /// Numbers the images of this agent: each is a file of its own in the memvfs.
    static NEXT_IMAGE: Cell<u64> = const { Cell::new(1) };
}

/// The memvfs's file manager.
fn memvfs() -> Result<MemVfsUtil, WasmError> {
    // SAFETY: wasm32-unknown-unknown runs one thread per agent; every SQLite call of this
    // package (the memvfs registration included) happens on it. `sqlite3_initialize` is
    // idempotent and installs the memvfs, as any first connection would.
    unsafe {
        if sqlite_wasm_rs::sqlite3_initialize() != sqlite_wasm_rs::SQLITE_OK {
            return Err(backend("SQLite failed to initialize"));
        }
        MemVfsUtil::get().map_err(|e| backend(format!("SQLite's memory VFS: {e}")))
    }
}

fn bad_image(e: MemVfsError) -> WasmError {
    match e {
        MemVfsError::Transfer(e) => invalid("bytes", format!("not a SQLite database file: {e}")),
        e => backend(format!("cannot load the database image: {e}")),
    }
}

/// A SQLite store on a database image in wasm memory; its memory is freed when dropped.
#[derive(Debug)]
pub struct ImageStore {
    // Declared (so dropped) before the file is removed in `drop`.
    store: Option<SqliteStore>,
    name: String,
    /// The execution tables' prefix it opened.
    prefix: Option<String>,
}

impl ImageStore {
    /// Loads the database file `bytes` (and the `-wal` sidecar `wal`, if there is one with
    /// content) and opens the store on it with `options` (`prefix`, `trace_max`,
    /// `read_only`...). Not a SQLite file: `INVALID_INPUT` (field `bytes`); a SQLite file
    /// without the store's tables, opened read-only: `NOT_FOUND` (the table).
    ///
    /// Without `options.prefix` (`detect`), the prefix is the one set of execution tables the
    /// image holds ([`found_prefix`]).
    pub fn load(
        bytes: &[u8],
        wal: Option<&[u8]>,
        mut options: SqliteOptions,
        detect: bool,
    ) -> Result<Self, WasmError> {
        let image = Image::load(bytes, wal)?;
        if detect && options.prefix.is_none() {
            options.prefix = found_prefix(&image.name)?;
        }
        let prefix = options.prefix.clone();
        let store = SqliteStore::open_in_vfs(&image.name, MEMVFS, options)?;
        Ok(ImageStore {
            store: Some(store),
            name: image.release(),
            prefix,
        })
    }

    /// The execution tables' prefix it opened (`None`: the bare names).
    pub fn prefix(&self) -> Option<&str> {
        self.prefix.as_deref()
    }

    /// The SQLite store.
    pub fn store(&self) -> Result<&SqliteStore, WasmError> {
        self.store.as_ref().ok_or_else(|| backend("the store is closed"))
    }
}

impl Drop for ImageStore {
    fn drop(&mut self) {
        self.store = None;
        remove_files(&self.name);
    }
}

/// The workspace log (reflexr's tables) of a database image in wasm memory, read-only (as the
/// native monitor opens it); its memory is freed when dropped. An image of its own, beside
/// any [`ImageStore`] of the same file: a memvfs file serves one connection, and the
/// execution store holds it.
#[derive(Debug)]
pub struct ImageWorkspaces {
    // Declared (so dropped) before the file is removed in `drop`.
    storage: Option<SqliteWorkspaceStorage>,
    name: String,
}

impl ImageWorkspaces {
    /// Loads the database file `bytes` (and its `-wal` sidecar `wal`) and opens its workspace
    /// log read-only, with `clock` for the storage's own use. Not a SQLite file:
    /// `INVALID_INPUT` (field `bytes`); no reflexr tables: `NOT_FOUND` (what `reflexr
    /// tables`).
    pub fn load(bytes: &[u8], wal: Option<&[u8]>, clock: Arc<dyn Clock>) -> Result<Self, WasmError> {
        let image = Image::load(bytes, wal)?;
        let options = SqliteWorkspaceOptions::new().read_only(true).clock(clock);
        let storage = SqliteWorkspaceStorage::open_in_vfs(&image.name, MEMVFS, options)?;
        Ok(ImageWorkspaces {
            storage: Some(storage),
            name: image.release(),
        })
    }

    /// The workspace storage.
    pub fn storage(&self) -> Result<&SqliteWorkspaceStorage, WasmError> {
        self.storage
            .as_ref()
            .ok_or_else(|| backend("the workspace image is closed"))
    }

    /// Closes it and frees its memory (later calls fail with `BACKEND`).
    pub fn close(&mut self) {
        if self.storage.take().is_some() {
            remove_files(&self.name);
        }
    }
}

impl Drop for ImageWorkspaces {
    fn drop(&mut self) {
        self.close();
    }
}

/// Checks `bytes` (and `wal`) as the database of a store opened with `options`, and
/// returns the single-file image to import: `bytes` itself, or the recovered and
/// checkpointed image when a `-wal` sidecar with content was given.
/// Without `options.prefix` (`detect`), the prefix is the one set of execution tables the
/// image holds ([`found_prefix`]); the prefix checked is returned beside the image.
pub fn checked_image(
    bytes: &[u8],
    wal: Option<&[u8]>,
    mut options: SqliteOptions,
    detect: bool,
) -> Result<(Vec<u8>, Option<String>), WasmError> {
    let image = Image::load(bytes, wal)?;
    if detect && options.prefix.is_none() {
        options.prefix = found_prefix(&image.name)?;
    }
    let prefix = options.prefix.clone();
    // Read-only: checks the store's tables are there, and changes nothing.
    drop(SqliteStore::open_in_vfs(
        &image.name,
        MEMVFS,
        options.read_only(true),
    )?);
    let bytes = if image.merged {
        memvfs()?
            .export_db(&image.name)
            .map_err(|e| backend(format!("cannot read the recovered database back: {e}")))?
    } else {
        bytes.to_vec()
    };
    Ok((bytes, prefix))
}

/// The prefix of the one set of execution tables the image `name` holds (`harel_*`, the bare
/// names, or another prefix whose tables are all there); `None` (the bare names) when it
/// holds none; several: `INVALID_INPUT` (field `prefix`) listing them.
fn found_prefix(name: &str) -> Result<Option<String>, WasmError> {
    let found = execstore_sqlite::execution_prefixes_in_vfs(name, MEMVFS)?;
    Ok(execstore::kit::names::pick_prefix(&found, "pass options.prefix")?)
}

/// A database file in the memvfs, removed when dropped unless released.
struct Image {
    name: String,
    merged: bool,
    keep: bool,
}

impl Image {
    fn load(bytes: &[u8], wal: Option<&[u8]>) -> Result<Self, WasmError> {
        let util = memvfs()?;
        let id = NEXT_IMAGE.with(|n| n.replace(n.get() + 1));
        let mut image = Image {
            name: format!("execstore-image-{id}.db"),
            merged: false,
            keep: false,
        };
        match wal.filter(|w| !w.is_empty()) {
            None => util.import_db(&image.name, bytes).map_err(bad_image)?,
            Some(wal) => {
                // The main file as it is (its header still says WAL), the log beside it, and
                // one connection that recovers, checkpoints and leaves a rollback-journal
                // file. Exclusive locking first: recovery then needs no shared memory.
                util.import_db(&image.name, bytes).map_err(bad_image)?;
                // The checked import set the header to rollback mode: back to WAL (bytes
                // 18 and 19 are 2), so the log is read.
                util.remove(&image.name)
                    .map_err(|e| backend(format!("memvfs: {e:?}")))?;
                let mut wal_header = bytes.to_vec();
                wal_header[18] = 2;
                wal_header[19] = 2;
                util.import_db_unchecked(&image.name, &wal_header)
                    .map_err(bad_image)?;
                util.import_db_unchecked(&format!("{}-wal", image.name), wal)
                    .map_err(bad_image)?;
                image.merged = true;
                merge_wal(&image.name)?;
            }
        }
        Ok(image)
    }

    /// Keeps the file (its owner removes it) and returns its name.
    fn release(mut self) -> String {
        self.keep = true;
        std::mem::take(&mut self.name)
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        if !self.keep {
            remove_files(&self.name);
        }
    }
}

/// Recovers the commits of `name`'s `-wal` log into the file and leaves it in rollback
/// journal mode, as one file.
fn merge_wal(name: &str) -> Result<(), WasmError> {
    SqliteStore::merge_wal_in_vfs(name, MEMVFS)
        .map_err(|e| invalid("wal", format!("cannot recover the -wal sidecar: {e}")))
}

/// Removes an image and any journal SQLite left beside it.
fn remove_files(name: &str) {
    if let Ok(util) = memvfs() {
        for file in [name.to_owned(), format!("{name}-wal"), format!("{name}-journal")] {
            // Nothing to do when a file is already gone; removal of a memory file cannot
            // otherwise fail.
            let _ = util.remove(&file);
        }
    }
}
