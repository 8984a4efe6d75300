//! The operator records' behaviour suite on MemoryOperatorStore.

use execstore::conformance::operator::OperatorHarness;
use execstore::operator::{MemoryOperatorStore, OperatorStore};

struct Memory(MemoryOperatorStore);

impl OperatorHarness for Memory {
    fn store(&self) -> &dyn OperatorStore {
        &self.0
    }
    fn reopen(&mut self) -> bool {
        false
    }
}

execstore::operator_conformance_tests!(ephemeral: Memory(MemoryOperatorStore::new()));
