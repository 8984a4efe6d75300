//! The transport's behaviour suite on the in-memory transport.

use execstore::conformance::transport::TransportHarness;
use execstore::transport::{MemoryTransport, Transport};

struct Memory(MemoryTransport);

impl TransportHarness for Memory {
    fn transport(&self) -> &dyn Transport {
        &self.0
    }
    fn another(&self) -> Box<dyn Transport> {
        Box::new(self.0.clone())
    }
    fn reopen(&mut self) -> bool {
        false
    }
}

execstore::transport_conformance_tests!(ephemeral: Memory(MemoryTransport::new()));
