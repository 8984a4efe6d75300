//! SQLite stores kept in the browser's Origin Private File System (OPFS).
//!
//! Each store `name` is one SQLite database in a `sahpool` pool of its own (OPFS directory
//! `execstore/<name>`, VFS `execstore-opfs-<name>`), opened by [`OpfsStore::open`] in a
//! dedicated worker. Ownership is exclusive across workers and tabs, twice over: the Web
//! Lock `execstore:opfs:<name>` (held while the store is open, released when it is dropped
//! or its worker ends) and the pool's own lease, an OPFS sync access handle that only one
//! agent at a time can hold. A second opener waits for the Web Lock at most `wait_ms`, then
//! fails with [`WasmError::Locked`]; it never touches a file it does not own, and never
//! waits without end.
//!
//! # Durability: `synchronous` "full" or "normal"
//!
//! The database runs in WAL mode (exclusive locking, see
//! [`SqliteStore::open_in_vfs`]): a commit appends its pages to the `-wal` file, and every
//! 10,000 pages (the store's `checkpoint_pages`, SQLite's `wal_autocheckpoint`) a checkpoint
//! copies them into the database file. The pool's files are OPFS files written through sync access handles: a `write()`
//! hands the bytes to the browser's file (in Chromium on a profile on disk: to the operating
//! system, from the worker's own process, no buffering in between), and the VFS's `xSync`
//! (sqlite-wasm-vfs's sahpool) is the handle's `flush()`, which asks the operating system
//! to put the file on the device.
//!
//! * [`Synchronous::Full`] (the default): a commit flushes the `-wal` file before it
//!   returns. A commit that returned survives the end of the worker, a killed or crashed
//!   tab or browser, and a power loss or OS crash (as far as the device keeps what it
//!   acknowledged as flushed).
//! * [`Synchronous::Normal`]: a commit writes the `-wal` file and returns without a flush;
//!   the WAL is flushed before each checkpoint and the database after it. A commit that
//!   returned survives the end of the worker and a killed or crashed tab or browser (its
//!   bytes were with the operating system when it returned; the next open replays the WAL).
//!   A power loss or OS crash may lose the commits since the last checkpoint, the newest
//!   first: the store reopens as it was after an earlier commit, never with a step half
//!   applied.
//!
//! In an off-the-record (incognito) profile the browser keeps OPFS in its own memory and
//! drops it with the profile: both levels then survive the end of a worker or tab only.

use std::cell::RefCell;
use std::rc::Rc;

use execstore_sqlite::{SqliteOptions, SqliteStore, Synchronous};
use js_sys::futures::JsFuture;
use js_sys::{Function, Object, Promise, Reflect};
use sqlite_wasm_rs::vfs::transfer::DbTransfer;
use sqlite_wasm_rs::vfs::VfsFilesManager;
use sqlite_wasm_rs::WasmOsCallback;
use sqlite_wasm_vfs::sahpool::{install, OpfsSAHError, OpfsSAHPoolCfgBuilder, OpfsSAHPoolUtil};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use crate::errors::{backend, describe, invalid, WasmError};

/// The database's file name inside its pool.
pub(crate) const DB_FILE: &str = "execstore.db";

/// At least this long, the open retries a pool whose access handles are still held after
/// it got the Web Lock: the previous owner's worker has ended (its lock is gone) but the
/// browser closes its handles a moment later.
const HANDOVER_MS: f64 = 3000.0;

/// The durability levels an OPFS store offers (see the module's "Durability"): `"full"` or
/// `"normal"`; anything else is `INVALID_INPUT` on `field`.
pub fn opfs_synchronous(level: &str, field: &str) -> Result<Synchronous, WasmError> {
    match level {
        "full" => Ok(Synchronous::Full),
        "normal" => Ok(Synchronous::Normal),
        other => Err(invalid(
            field,
            format!("{other:?} is not one of \"full\" \"normal\" (an OPFS store's durability levels)"),
        )),
    }
}

/// How [`OpfsStore::open`] opens a store.
#[derive(Clone, Debug)]
pub struct OpfsOptions {
    /// How long to wait for a store another worker or tab holds, in milliseconds; `0`
    /// fails at once with `LOCKED`.
    pub wait_ms: f64,
    /// The SQLite options (`prefix`, `synchronous`, `trace_max`, `read_only`). `synchronous`
    /// is [`Synchronous::Full`] or [`Synchronous::Normal`] (see the module's "Durability").
    pub sqlite: SqliteOptions,
}

impl Default for OpfsOptions {
    /// Waits up to 5 s for another owner to let go; SQLite's defaults.
    fn default() -> Self {
        OpfsOptions {
            wait_ms: 5000.0,
            sqlite: SqliteOptions::new(),
        }
    }
}

/// A store in OPFS, owned by this worker until dropped.
pub struct OpfsStore {
    // Declared (so dropped) before the lease: the database closes before its pool's handles
    // and the Web Lock are let go.
    store: Option<SqliteStore>,
    options: SqliteOptions,
    vfs: String,
    lease: Lease,
}

impl std::fmt::Debug for OpfsStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpfsStore")
            .field("vfs", &self.vfs)
            .finish_non_exhaustive()
    }
}

impl OpfsStore {
    /// Opens (creating if needed) the OPFS store `name` (letters, digits, `.`, `_`, `-`; at
    /// most 64) in this dedicated worker: takes the Web Lock (waiting up to
    /// `options.wait_ms`), installs or resumes its pool, and opens the database.
    pub async fn open(name: &str, options: OpfsOptions) -> Result<Self, WasmError> {
        check_durability(&options.sqlite)?;
        let (lease, vfs) = Lease::take(name, options.wait_ms).await?;
        Self::open_leased(lease, vfs, options.sqlite)
    }

    /// Imports the SQLite database file `image` as the OPFS store `name` and opens it, as
    /// [`OpfsStore::open`] does. A store of that name already there is replaced only if
    /// `replace` (its files removed first); otherwise `INVALID_INPUT`. Check the image
    /// first (`image::checked_image`): this copies it as it is, with its header set to
    /// rollback-journal mode, and opens it.
    pub async fn import(
        name: &str,
        image: &[u8],
        options: OpfsOptions,
        replace: bool,
    ) -> Result<Self, WasmError> {
        check_durability(&options.sqlite)?;
        let (lease, vfs) = Lease::take(name, options.wait_ms).await?;
        let pool = &lease.pool;
        let opfs = |e: OpfsSAHError| backend(format!("cannot import into the OPFS store {name:?}: {e}"));
        if !replace && pool.contains(DB_FILE).map_err(opfs)? {
            return Err(invalid(
                "name",
                format!("the OPFS store {name:?} exists: pass replace: true to overwrite it"),
            ));
        }
        for file in [
            DB_FILE.to_owned(),
            format!("{DB_FILE}-wal"),
            format!("{DB_FILE}-journal"),
        ] {
            pool.remove(&file).map_err(opfs)?;
        }
        pool.import_db(DB_FILE, image).map_err(|e| match e {
            OpfsSAHError::Transfer(e) => invalid("bytes", format!("not a SQLite database file: {e}")),
            e => opfs(e),
        })?;
        Self::open_leased(lease, vfs, options.sqlite)
    }

    fn open_leased(lease: Lease, vfs: String, sqlite: SqliteOptions) -> Result<Self, WasmError> {
        let store = SqliteStore::open_in_vfs(DB_FILE, &vfs, sqlite.clone())?;
        Ok(OpfsStore {
            store: Some(store),
            options: sqlite,
            vfs,
            lease,
        })
    }

    /// The SQLite store; `BACKEND` only after a failed [`OpfsStore::reopen`].
    pub fn store(&self) -> Result<&SqliteStore, WasmError> {
        self.store
            .as_ref()
            .ok_or_else(|| backend("the OPFS database could not be reopened; open the store again"))
    }

    /// Closes the database connection and opens it again on the same files, still owning
    /// the store (what a durable harness's reopen does: everything read afterwards comes
    /// from the OPFS files). The connection holds the file exclusively, so the old one is
    /// closed first.
    pub fn reopen(&mut self) -> Result<(), WasmError> {
        self.store = None;
        self.store = Some(SqliteStore::open_in_vfs(
            DB_FILE,
            &self.vfs,
            self.options.clone(),
        )?);
        Ok(())
    }

    /// How many OPFS files the store's pool holds (database, journal and spare slots).
    pub fn pool_capacity(&self) -> usize {
        self.lease.pool.capacity()
    }
}

/// The store's hold on its pool and Web Lock; dropping it releases the pool's access
/// handles (so another worker can open the store) and then the lock.
pub(crate) struct Lease {
    pool: OpfsSAHPoolUtil,
    _lock: WebLock,
}

impl Lease {
    /// Takes the Web Lock of the store `name` (waiting up to `wait_ms`) and installs or
    /// resumes its pool; returns the lease and the pool's VFS name.
    pub(crate) async fn take(name: &str, wait_ms: f64) -> Result<(Lease, String), WasmError> {
        check_name(name)?;
        if !(wait_ms >= 0.0 && wait_ms.is_finite()) {
            return Err(invalid(
                "options.waitMs",
                "must be a finite number of milliseconds, 0 or more",
            ));
        }
        let started = js_sys::Date::now();
        let lock = WebLock::acquire(&format!("execstore:opfs:{name}"), wait_ms)
            .await?
            .ok_or_else(|| WasmError::Locked {
                name: name.to_owned(),
                waited_ms: wait_ms,
            })?;
        let vfs = format!("execstore-opfs-{name}");
        let config = OpfsSAHPoolCfgBuilder::new()
            .vfs_name(&vfs)
            .directory(&format!("execstore/{name}"))
            .build();
        let deadline = started + wait_ms.max(HANDOVER_MS);
        let pool = loop {
            let attempt = match install::<WasmOsCallback>(&config, false).await {
                Ok(pool) if pool.is_paused() => pool.resume().await.map(|()| pool),
                other => other,
            };
            match attempt {
                Ok(pool) => break pool,
                Err(e) if held_elsewhere(&e) && js_sys::Date::now() < deadline => sleep_ms(50.0).await?,
                Err(e) if held_elsewhere(&e) => {
                    return Err(WasmError::Locked {
                        name: name.to_owned(),
                        waited_ms: js_sys::Date::now() - started,
                    })
                }
                Err(OpfsSAHError::NotSupported) => {
                    return Err(backend(
                        "OPFS stores need a dedicated worker in a browser (a secure context with OPFS sync access handles)",
                    ))
                }
                Err(e) => return Err(backend(format!("cannot open the OPFS pool of {name:?}: {e}"))),
            }
        };
        Ok((Lease { pool, _lock: lock }, vfs))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Fails only while a database of the pool is still open, which the store's field
        // order rules out; the worker's end releases the handles anyway.
        let _ = self.pool.pause();
    }
}

/// Refuses a `synchronous` other than the two levels an OPFS store offers, before anything
/// is touched.
fn check_durability(sqlite: &SqliteOptions) -> Result<(), WasmError> {
    match sqlite.connect.synchronous {
        Synchronous::Full | Synchronous::Normal => Ok(()),
        other => Err(invalid(
            "options.synchronous",
            format!("{other:?} is not one of Full Normal (an OPFS store's durability levels)"),
        )),
    }
}

fn check_name(name: &str) -> Result<(), WasmError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(invalid(
            "name",
            format!("{name:?} is not a store name (1 to 64 letters, digits, '.', '_' or '-', not starting with '.')"),
        ))
    }
}

/// Whether the pool could not be opened because another agent holds one of its handles.
fn held_elsewhere(error: &OpfsSAHError) -> bool {
    match error {
        OpfsSAHError::Opfs { value, .. } => {
            Reflect::get(value, &"name".into())
                .ok()
                .and_then(|n| n.as_string())
                .as_deref()
                == Some("NoModificationAllowedError")
        }
        OpfsSAHError::Busy => true,
        _ => false,
    }
}

/// A held Web Lock (`navigator.locks`); released when dropped. Where the Web Locks API is
/// missing, holds nothing: the pool's access-handle lease still keeps a second owner out.
struct WebLock {
    name: String,
    release: Option<Function>,
    /// The request's promise: settles once the lock manager let go of the lock.
    released: Option<Promise>,
}

thread_local! {
    /// Locks this agent let go of whose release the lock manager has not finished yet: a
    /// reopen right after a close waits for it instead of finding the lock still taken.
    static RELEASING: RefCell<std::collections::HashMap<String, Promise>> = RefCell::default();
}

impl WebLock {
    /// Requests the exclusive lock `name`, waiting at most `wait_ms` (`0`: only if free
    /// now). `None` when it was not granted in time.
    async fn acquire(name: &str, wait_ms: f64) -> Result<Option<WebLock>, WasmError> {
        let js = |e: JsValue| backend(format!("Web Locks: {}", describe(&e)));
        let global = js_sys::global();
        let navigator = Reflect::get(&global, &"navigator".into()).map_err(js)?;
        let locks = if navigator.is_object() {
            Reflect::get(&navigator, &"locks".into()).map_err(js)?
        } else {
            JsValue::UNDEFINED
        };
        if !locks.is_object() {
            return Ok(Some(WebLock {
                name: name.to_owned(),
                release: None,
                released: None,
            }));
        }
        if let Some(releasing) = RELEASING.with(|r| r.borrow_mut().remove(name)) {
            // Rejects only if our own callback threw, which it does not.
            let _ = JsFuture::from(releasing).await;
        }
        let request: Function = Reflect::get(&locks, &"request".into())
            .map_err(js)?
            .dyn_into()
            .map_err(js)?;

        // `granted` settles with a function that releases the lock, or with null when the
        // lock was not granted (not available now, or the wait timed out).
        let settle: Rc<RefCell<Option<Function>>> = Rc::default();
        let granted = {
            let settle = settle.clone();
            Promise::new(&mut move |resolve, _reject| *settle.borrow_mut() = Some(resolve))
        };
        let resolve = settle
            .borrow_mut()
            .take()
            .ok_or_else(|| backend("Promise executor did not run"))?;
        let on_grant = {
            let resolve = resolve.clone();
            Closure::once_into_js(move |lock: JsValue| -> JsValue {
                if lock.is_null() {
                    let _ = resolve.call1(&JsValue::UNDEFINED, &JsValue::NULL);
                    return JsValue::UNDEFINED;
                }
                // The lock is held until the promise returned here settles.
                let mut release = None;
                let held = Promise::new(&mut |done, _reject| release = Some(done));
                let release: JsValue = release.map_or(JsValue::NULL, JsValue::from);
                let _ = resolve.call1(&JsValue::UNDEFINED, &release);
                held.into()
            })
        };
        let options = Object::new();
        if wait_ms <= 0.0 {
            Reflect::set(&options, &"ifAvailable".into(), &JsValue::TRUE).map_err(js)?;
        } else {
            let abort = Reflect::get(&global, &"AbortSignal".into()).map_err(js)?;
            let timeout: Function = Reflect::get(&abort, &"timeout".into())
                .map_err(js)?
                .dyn_into()
                .map_err(js)?;
            let signal = timeout.call1(&abort, &wait_ms.into()).map_err(js)?;
            Reflect::set(&options, &"signal".into(), &signal).map_err(js)?;
        }
        let requested: Promise = request
            .call3(&locks, &name.into(), &options, &on_grant)
            .map_err(js)?
            .dyn_into()
            .map_err(js)?;
        // A request whose wait timed out rejects: not granted.
        let on_reject = Closure::once_into_js(move |_error: JsValue| {
            let _ = resolve.call1(&JsValue::UNDEFINED, &JsValue::NULL);
        });
        let catch: Function = Reflect::get(&requested, &"catch".into())
            .map_err(js)?
            .dyn_into()
            .map_err(js)?;
        let released: Promise = catch.call1(&requested, &on_reject).map_err(js)?.unchecked_into();
        let release = JsFuture::from(granted).await.map_err(js)?;
        Ok(release.dyn_into::<Function>().ok().map(|release| WebLock {
            name: name.to_owned(),
            release: Some(release),
            released: Some(released),
        }))
    }
}

impl Drop for WebLock {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            let _ = release.call0(&JsValue::UNDEFINED);
            if let Some(released) = self.released.take() {
                RELEASING.with(|r| r.borrow_mut().insert(std::mem::take(&mut self.name), released));
            }
        }
    }
}

/// Resolves after `ms` milliseconds (`setTimeout`).
pub(crate) async fn sleep_ms(ms: f64) -> Result<(), WasmError> {
    let js = |e: JsValue| backend(format!("setTimeout: {}", describe(&e)));
    let global = js_sys::global();
    let set_timeout: Function = Reflect::get(&global, &"setTimeout".into())
        .map_err(js)?
        .dyn_into()
        .map_err(js)?;
    let mut failed = None;
    let done = Promise::new(&mut |resolve, _reject| {
        if let Err(e) = set_timeout.call2(&JsValue::UNDEFINED, &resolve, &ms.into()) {
            failed = Some(e);
        }
    });
    if let Some(e) = failed {
        return Err(js(e));
    }
    JsFuture::from(done).await.map_err(js)?;
    Ok(())
}
