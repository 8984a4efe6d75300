//! A workspace store in a SQLite file in the browser's Origin Private File System, in a
//! dedicated worker: `SqliteWorkspaceStorage` over sqlite-wasm-vfs's `sahpool`, in the pool
//! and under the lease the execution store's `openOpfs` uses (`crate::opfs`: OPFS directory
//! `execstore/<name>`, Web Lock `execstore:opfs:<name>`, the file `execstore.db`).
//!
//! `sahpool` serves one connection per file and one agent (tab or worker) at a time, so two
//! tabs share a store by taking turns: the store can let its lease go (`letGo`: the database
//! closes, the pool's access handles and the Web Lock are released) and take it back
//! (`takeLease`, then `resume`), waiting at most `waitMs` for the holder. `npm/workspace.js`
//! decides when: it lets go after an operation when another agent asked for the store.

use std::sync::Arc;

use execstore::workspace::WorkspaceStorage;
use execstore::StoreError;
use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage};
use serde::Deserialize;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use super::shapes::optional;
use super::store::Backend;
use super::{Busy, DateClock, JsResult, RawWorkspaceStore};
use crate::convert;
use crate::errors::{backend, invalid, WasmError};
use crate::opfs::{opfs_synchronous, Lease, DB_FILE};

/// Options of `WorkspaceStore.openOpfs()`.
#[derive(Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct JsOpfsOptions {
    wait_ms: f64,
    synchronous: Option<String>,
    read_only: bool,
}

impl Default for JsOpfsOptions {
    fn default() -> Self {
        JsOpfsOptions {
            wait_ms: crate::opfs::OpfsOptions::default().wait_ms,
            synchronous: None,
            read_only: false,
        }
    }
}

/// A workspace store's SQLite file in OPFS, with or without its lease for now.
pub(crate) struct OpfsWorkspace {
    // Declared (so dropped) before the lease: the database closes before its pool's handles
    // and the Web Lock are let go.
    storage: Option<SqliteWorkspaceStorage>,
    lease: Option<Lease>,
    name: String,
    wait_ms: f64,
    options: SqliteWorkspaceOptions,
}

impl OpfsWorkspace {
    /// The storage; a retryable `BACKEND` error while the lease is let go.
    pub(super) fn storage(&self) -> Result<&dyn WorkspaceStorage, WasmError> {
        match &self.storage {
            Some(s) => Ok(s),
            None => Err(WasmError::Store(StoreError::Backend {
                message: format!(
                    "this agent let the OPFS store {:?} go (another tab or worker asked for it): take its lease again",
                    self.name
                ),
                retryable: true,
                source: None,
            })),
        }
    }

    fn open(
        lease: Lease,
        vfs: String,
        name: String,
        wait_ms: f64,
        options: SqliteWorkspaceOptions,
    ) -> Result<Self, WasmError> {
        // On failure the lease is dropped here: nothing stays held.
        let storage = SqliteWorkspaceStorage::open_in_vfs(DB_FILE, &vfs, options.clone())?;
        Ok(OpfsWorkspace {
            storage: Some(storage),
            lease: Some(lease),
            name,
            wait_ms,
            options,
        })
    }
}

/// The lease of an OPFS store, taken by `RawWorkspaceStore.takeLease` and handed to
/// `resume` (the two steps because an async call cannot borrow the store).
#[wasm_bindgen]
pub struct RawOpfsLease {
    held: Option<(Lease, String)>,
    name: String,
}

impl RawWorkspaceStore {
    /// Whether the storage has one connection that every transaction shares (OPFS, a file), so one
    /// transaction at a time, whatever its workspace.
    pub(super) fn one_connection(&self) -> bool {
        matches!(self.backend, Some(Backend::Opfs(_) | Backend::File(_)))
    }

    fn opfs(&self) -> Result<&OpfsWorkspace, WasmError> {
        match &self.backend {
            Some(Backend::Opfs(o)) => Ok(o),
            Some(Backend::Memory(_) | Backend::File(_)) => Err(backend("not an OPFS store")),
            None => Err(backend("the store is closed")),
        }
    }
}

#[wasm_bindgen]
impl RawWorkspaceStore {
    /// Opens (creating if needed) the workspace store `name` in OPFS (in a dedicated worker),
    /// timed by `Date.now()`: takes its lease, waiting up to `options.waitMs` (default 5000;
    /// `0` fails at once) for another holder, then `LOCKED`. Other options: `synchronous`
    /// (`"full"`, the default, or `"normal"`), `readOnly`.
    #[wasm_bindgen(js_name = openOpfs)]
    pub async fn open_opfs(
        #[wasm_bindgen(unchecked_param_type = "unknown")] name: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] options: JsValue,
    ) -> JsResult<RawWorkspaceStore> {
        let name = convert::string(&name, "name")?;
        let js: JsOpfsOptions = optional(&options, "options")?;
        let mut sqlite = SqliteWorkspaceOptions::new()
            .clock(Arc::new(DateClock))
            .read_only(js.read_only);
        if let Some(level) = &js.synchronous {
            // The execution store's levels, with its promise (`crate::opfs`'s "Durability").
            sqlite = sqlite.synchronous(opfs_synchronous(level, "options.synchronous")?);
        }
        let (lease, vfs) = Lease::take(&name, js.wait_ms).await?;
        let opfs = OpfsWorkspace::open(lease, vfs, name, js.wait_ms, sqlite)?;
        Ok(RawWorkspaceStore {
            backend: Some(Backend::Opfs(opfs)),
            busy: Busy::default(),
        })
    }

    /// Takes the lease of the OPFS store `name`, waiting up to `waitMs` (then `LOCKED`), for
    /// `resume`.
    #[wasm_bindgen(js_name = takeLease)]
    pub async fn take_lease(
        #[wasm_bindgen(unchecked_param_type = "string")] name: JsValue,
        #[wasm_bindgen(unchecked_param_type = "number", js_name = waitMs)] wait_ms: JsValue,
    ) -> JsResult<RawOpfsLease> {
        let name = convert::string(&name, "name")?;
        let wait_ms = convert::number(&wait_ms, "waitMs")?;
        let (lease, vfs) = Lease::take(&name, wait_ms).await?;
        Ok(RawOpfsLease {
            held: Some((lease, vfs)),
            name,
        })
    }

    /// The OPFS store's name.
    #[wasm_bindgen(getter, js_name = opfsName)]
    pub fn opfs_name(&self) -> JsResult<String> {
        Ok(self.opfs()?.name.clone())
    }

    /// How long taking the lease back waits for another holder, in milliseconds.
    #[wasm_bindgen(getter, js_name = waitMs)]
    pub fn wait_ms(&self) -> JsResult<f64> {
        Ok(self.opfs()?.wait_ms)
    }

    /// Whether this agent holds the OPFS store's lease now (always, for memory).
    #[wasm_bindgen(getter)]
    pub fn held(&self) -> bool {
        match &self.backend {
            Some(Backend::Opfs(o)) => o.storage.is_some(),
            Some(Backend::Memory(_) | Backend::File(_)) => true,
            None => false,
        }
    }

    /// Lets the OPFS store's lease go: closes the database and releases the pool's files and
    /// the Web Lock, so another tab or worker can open it. Refused while a transaction is open.
    #[wasm_bindgen(js_name = letGo)]
    pub fn let_go(&mut self) -> JsResult<()> {
        let open = !self.busy.borrow().is_empty();
        match &mut self.backend {
            Some(Backend::Opfs(o)) => {
                if open {
                    return Err(
                        backend("a transaction is open: it must end before the store is let go").into(),
                    );
                }
                o.storage = None;
                o.lease = None;
                Ok(())
            }
            Some(Backend::Memory(_) | Backend::File(_)) => Err(backend("not an OPFS store").into()),
            None => Err(backend("the store is closed").into()),
        }
    }

    /// Opens the database again under `lease` (from `takeLease` with this store's name).
    pub fn resume(&mut self, lease: &mut RawOpfsLease) -> JsResult<()> {
        let Some(Backend::Opfs(o)) = &mut self.backend else {
            return Err(backend("the store is closed").into());
        };
        if lease.name != o.name {
            return Err(invalid(
                "lease",
                format!("is the lease of {:?}, not {:?}", lease.name, o.name),
            )
            .into());
        }
        if o.storage.is_some() {
            return Err(backend("the store holds its lease already").into());
        }
        let (held, vfs) = lease
            .held
            .take()
            .ok_or_else(|| backend("the lease was used already"))?;
        // On failure `held` is dropped here: nothing stays held.
        o.storage = Some(
            SqliteWorkspaceStorage::open_in_vfs(DB_FILE, &vfs, o.options.clone()).map_err(WasmError::from)?,
        );
        o.lease = Some(held);
        Ok(())
    }
}
