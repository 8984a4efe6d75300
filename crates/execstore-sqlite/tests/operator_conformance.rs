//! The operator records' behaviour suite on SqliteOperatorStore: a fresh file per check
//! (reopened for the durability check), beside an execution store on the same Db.

use execstore::conformance::operator::OperatorHarness;
use execstore::operator::OperatorStore;
use execstore_sqlite::{ConnectOptions, Db, SqliteOperatorStore, SqliteOptions, SqliteStore};

struct FileHarness {
    dir: tempfile::TempDir,
    store: Option<SqliteOperatorStore>,
}

impl FileHarness {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let store = Some(Self::open(&dir));
        FileHarness { dir, store }
    }

    fn open(dir: &tempfile::TempDir) -> SqliteOperatorStore {
        let db = Db::open(dir.path().join("ops.db"), ConnectOptions::new()).expect("open");
        SqliteStore::on(&db, SqliteOptions::new()).expect("executions");
        SqliteOperatorStore::on(&db).expect("operator")
    }
}

impl OperatorHarness for FileHarness {
    fn store(&self) -> &dyn OperatorStore {
        self.store.as_ref().expect("open")
    }
    fn reopen(&mut self) -> bool {
        self.store = None;
        self.store = Some(Self::open(&self.dir));
        true
    }
}

execstore::operator_conformance_tests!(durable: FileHarness::new());
