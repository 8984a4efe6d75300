//! The transport's behaviour suite on SqliteTransport: a fresh file per check (a second
//! connection for the second worker, reopened for the durability check), and in memory.

use execstore::conformance::transport::TransportHarness;
use execstore::transport::Transport;
use execstore_sqlite::{SqliteTransport, SqliteTransportOptions, Synchronous};

struct FileHarness {
    dir: tempfile::TempDir,
    transport: Option<SqliteTransport>,
}

impl FileHarness {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let transport = Some(Self::open(&dir));
        FileHarness { dir, transport }
    }

    fn open(dir: &tempfile::TempDir) -> SqliteTransport {
        let options = SqliteTransportOptions::new().synchronous(Synchronous::Normal);
        SqliteTransport::open(dir.path().join("transport.db"), options).expect("open")
    }
}

impl TransportHarness for FileHarness {
    fn transport(&self) -> &dyn Transport {
        self.transport.as_ref().expect("open")
    }
    fn another(&self) -> Box<dyn Transport> {
        Box::new(Self::open(&self.dir))
    }
    fn reopen(&mut self) -> bool {
        self.transport = None;
        self.transport = Some(Self::open(&self.dir));
        true
    }
}

execstore::transport_conformance_tests!(durable: FileHarness::new());

/// In a private in-memory database: one connection, so the second worker shares it.
mod memory {
    use super::*;
    use std::sync::Arc;

    struct Memory(Arc<SqliteTransport>);

    impl TransportHarness for Memory {
        fn transport(&self) -> &dyn Transport {
            self.0.as_ref()
        }
        fn another(&self) -> Box<dyn Transport> {
            Box::new(self.0.clone())
        }
        fn reopen(&mut self) -> bool {
            false
        }
    }

    execstore::transport_conformance_tests!(ephemeral: Memory(Arc::new(
        SqliteTransport::open(":memory:", SqliteTransportOptions::new()).expect("open")
    )));
}
