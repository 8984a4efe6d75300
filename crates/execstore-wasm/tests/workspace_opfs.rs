//! The workspace log's behaviour suite (its portable checks, and a reopen) on
//! `SqliteWorkspaceStorage` over sqlite-wasm-vfs's `sahpool` in the browser's OPFS, in a
//! dedicated worker: what `WorkspaceStore.openOpfs` runs on
//! (`cargo test --target wasm32-unknown-unknown --test workspace_opfs`, chromedriver). Each
//! check gets a fresh database file in one pool, removed when the check ends.
#![cfg(all(target_family = "wasm", target_os = "unknown"))]

use std::cell::Cell;
use std::sync::Arc;

use execstore::conformance::workspace::{t0, WorkspaceHarness};
use execstore::workspace::{ManualClock, WorkspaceStorage};
use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage};
use sqlite_wasm_rs::vfs::VfsFilesManager;
use sqlite_wasm_rs::WasmOsCallback;
use sqlite_wasm_vfs::sahpool::{install, OpfsSAHPoolCfgBuilder, OpfsSAHPoolUtil};
use wasm_bindgen_test::wasm_bindgen_test_configure;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

const VFS: &str = "execstore-test-workspace";

thread_local! {
    static NEXT: Cell<u32> = const { Cell::new(0) };
}

/// A fresh database file in the test pool, with a manual clock; reopen closes the connection
/// and opens the same file again.
struct OpfsHarness {
    storage: Option<SqliteWorkspaceStorage>,
    clock: ManualClock,
    file: String,
    pool: OpfsSAHPoolUtil,
}

impl OpfsHarness {
    async fn new() -> OpfsHarness {
        let config = OpfsSAHPoolCfgBuilder::new()
            .vfs_name(VFS)
            .directory("execstore-tests/workspace")
            .build();
        let pool = install::<WasmOsCallback>(&config, false)
            .await
            .expect("install the OPFS pool");
        // A database and its WAL and journal each take a slot.
        pool.ensure_capacity(8).await.expect("pool capacity");
        let file = format!("ws-{}.db", NEXT.with(|n| n.replace(n.get() + 1)));
        let clock = ManualClock::new(t0());
        let storage = Self::open(&file, &clock);
        OpfsHarness {
            storage: Some(storage),
            clock,
            file,
            pool,
        }
    }

    fn open(file: &str, clock: &ManualClock) -> SqliteWorkspaceStorage {
        SqliteWorkspaceStorage::open_in_vfs(
            file,
            VFS,
            SqliteWorkspaceOptions::new().clock(Arc::new(clock.clone())),
        )
        .expect("open the workspace storage in OPFS")
    }
}

impl Drop for OpfsHarness {
    fn drop(&mut self) {
        self.storage = None;
        for suffix in ["", "-wal", "-journal"] {
            let _ = self.pool.remove(&format!("{}{suffix}", self.file));
        }
    }
}

impl WorkspaceHarness for OpfsHarness {
    fn storage(&self) -> &dyn WorkspaceStorage {
        self.storage.as_ref().expect("open")
    }
    fn clock(&self) -> &ManualClock {
        &self.clock
    }
    fn reopen(&mut self) -> bool {
        self.storage = None;
        self.storage = Some(Self::open(&self.file, &self.clock));
        true
    }
    fn one_connection(&self) -> bool {
        true
    }
}

execstore::workspace_conformance_tests!(wasm durable: OpfsHarness::new());
