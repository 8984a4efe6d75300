//! The workspace behaviour suite on the in-memory storage.

use std::sync::Arc;

use execstore::conformance::workspace::SimpleHarness;
use execstore::workspace::MemoryWorkspaceStorage;

execstore::workspace_conformance_tests!(ephemeral: SimpleHarness::new(|clock| MemoryWorkspaceStorage::new(Arc::new(clock))).parallel_workspaces());
