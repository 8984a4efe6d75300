//! The workspace behaviour suite against SqliteWorkspaceStorage: a fresh file per check, on a
//! [`ManualClock`], reopened for the durability check.

use std::sync::Arc;

use execstore::conformance::workspace::{t0, WorkspaceHarness};
use execstore::workspace::{ManualClock, WorkspaceStorage};
use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage, Synchronous};

/// A storage on a file in a temporary directory; `reopen` drops it and opens the file again.
struct FileHarness {
    dir: tempfile::TempDir,
    clock: ManualClock,
    storage: Option<SqliteWorkspaceStorage>,
}

impl FileHarness {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let clock = ManualClock::new(t0());
        let storage = Some(Self::open(&dir, &clock));
        FileHarness { dir, clock, storage }
    }

    fn open(dir: &tempfile::TempDir, clock: &ManualClock) -> SqliteWorkspaceStorage {
        // Synchronous::Normal: a process crash still loses nothing, and the suite runs faster.
        let options = SqliteWorkspaceOptions::new()
            .clock(Arc::new(clock.clone()))
            .synchronous(Synchronous::Normal);
        SqliteWorkspaceStorage::open(dir.path().join("workspaces.db"), options).expect("open")
    }
}

impl WorkspaceHarness for FileHarness {
    fn storage(&self) -> &dyn WorkspaceStorage {
        self.storage.as_ref().expect("the storage is open")
    }

    fn clock(&self) -> &ManualClock {
        &self.clock
    }

    fn reopen(&mut self) -> bool {
        self.storage = None;
        self.storage = Some(Self::open(&self.dir, &self.clock));
        true
    }
}

execstore::workspace_conformance_tests!(durable: FileHarness::new());

/// The suite on [`SqliteWorkspaceStorage::open_in_memory`]: one connection for reads and
/// writes (the mode of the OPFS and in-memory VFSs in wasm), where a read outside a
/// transaction takes the writer's turn.
mod one_connection {
    use super::*;
    use execstore::conformance::workspace::SimpleHarness;

    execstore::workspace_conformance_tests!(ephemeral: SimpleHarness::new(|clock| {
        // A read beside an open transaction on this thread waits this long, then is refused.
        let options = SqliteWorkspaceOptions::new()
            .clock(Arc::new(clock))
            .busy_timeout(std::time::Duration::from_millis(50));
        SqliteWorkspaceStorage::open_in_memory(options).expect("open in memory")
    })
    .one_connection());
}
