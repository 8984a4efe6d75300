//! The workspace behaviour suite on the in-memory storage.

use std::sync::Arc;

use execstore::workspace::MemoryWorkspaceStorage;
use execstore::workspace_conformance::SimpleHarness;

execstore::workspace_conformance_tests!(ephemeral: SimpleHarness::new(|clock| MemoryWorkspaceStorage::new(Arc::new(clock))).parallel_workspaces());
