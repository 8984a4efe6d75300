//! A workspace store in a SQLite file on the local file system, in Node
//! (`WorkspaceStore.openFile`): reflexr's tables through the package's Node VFS, owned by
//! this process as `Store.openFile`'s file is (`crate::node_file`: the lock file, `LOCKED`,
//! a killed owner's lock taken over, the same durability). The file has one connection, so
//! one transaction at a time, whatever its workspace (`npm/workspace.js` queues them).

use std::sync::Arc;

use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage};
use serde::Deserialize;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::JsValue;

use super::shapes::optional;
use super::store::Backend;
use super::{Busy, DateClock, JsResult, RawWorkspaceStore};
use crate::convert;
use crate::node_file::{FileOptions, NodeFile};
use crate::opfs::opfs_synchronous;

/// Options of `WorkspaceStore.openFile()`.
#[derive(Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct JsFileOptions {
    wait_ms: f64,
    synchronous: Option<String>,
}

impl Default for JsFileOptions {
    fn default() -> Self {
        JsFileOptions {
            wait_ms: FileOptions::default().wait_ms,
            synchronous: None,
        }
    }
}

/// A workspace store's file, owned by this process.
pub(crate) struct FileWorkspace {
    // Declared (so dropped) before the file: the database closes before its lock goes.
    pub(super) storage: SqliteWorkspaceStorage,
    _file: NodeFile,
}

#[wasm_bindgen]
impl RawWorkspaceStore {
    /// Opens (creating if needed) the workspace store file at `path` (Node only), timed by
    /// `Date.now()`: takes the file, waiting up to `options.waitMs` (default 5000; `0` fails
    /// at once) for another owner, then `LOCKED`. Other option: `synchronous` (`"full"`, the
    /// default, or `"normal"`).
    #[wasm_bindgen(js_name = openFile)]
    pub async fn open_file(
        #[wasm_bindgen(unchecked_param_type = "unknown")] path: JsValue,
        #[wasm_bindgen(unchecked_param_type = "unknown")] options: JsValue,
    ) -> JsResult<RawWorkspaceStore> {
        let path = convert::string(&path, "path")?;
        let js: JsFileOptions = optional(&options, "options")?;
        let mut file_options = FileOptions {
            wait_ms: js.wait_ms,
            ..FileOptions::default()
        };
        if let Some(level) = &js.synchronous {
            file_options.synchronous = opfs_synchronous(level, "options.synchronous")?;
        }
        let file = NodeFile::take(&path, &file_options).await?;
        let storage = file.workspaces(
            SqliteWorkspaceOptions::new().clock(Arc::new(DateClock)),
            &file_options,
        )?;
        Ok(RawWorkspaceStore {
            backend: Some(Backend::File(FileWorkspace { storage, _file: file })),
            busy: Busy::default(),
        })
    }

    /// Whether every transaction shares one connection (OPFS, a file), so one at a time
    /// whatever its workspace.
    #[wasm_bindgen(getter, js_name = oneConnection)]
    pub fn one_connection_js(&self) -> bool {
        self.one_connection()
    }
}
