//! The execstore behaviour suite against SqliteStore: on a file (bare table names and
//! harel's `harel_` prefix) and on `:memory:`.

use execstore::conformance::Harness;
use execstore::ExecutionStore;
use execstore_sqlite::{SqliteOptions, SqliteStore};

/// A store on a file in a temporary directory; `reopen` drops it and opens the file again.
struct SqliteHarness {
    dir: tempfile::TempDir,
    options: SqliteOptions,
    store: Option<SqliteStore>,
}

impl SqliteHarness {
    fn new() -> Self {
        Self::with_options(SqliteOptions::new())
    }

    fn with_options(options: SqliteOptions) -> Self {
        let dir = tempfile::tempdir().expect("temporary directory");
        let store = SqliteStore::open(dir.path().join("store.db"), options.clone()).expect("open");
        SqliteHarness {
            dir,
            options,
            store: Some(store),
        }
    }
}

impl Harness for SqliteHarness {
    fn store(&self) -> &dyn ExecutionStore {
        self.store.as_ref().expect("the store is open")
    }

    fn reopen(&mut self) -> bool {
        self.store = None;
        let path = self.dir.path().join("store.db");
        self.store = Some(SqliteStore::open(path, self.options.clone()).expect("reopen"));
        true
    }
}

/// A store on `:memory:`, which keeps nothing across a reopen.
struct MemoryHarness(SqliteStore);

impl Harness for MemoryHarness {
    fn store(&self) -> &dyn ExecutionStore {
        &self.0
    }

    fn reopen(&mut self) -> bool {
        false
    }
}

execstore::conformance_tests!(durable: SqliteHarness::new());

mod harel_prefix {
    use super::*;

    execstore::conformance_tests!(durable: SqliteHarness::with_options(SqliteOptions::new().prefix("harel")));
}

mod in_memory {
    use super::*;

    execstore::conformance_tests!(ephemeral: MemoryHarness(
        SqliteStore::open(":memory:", SqliteOptions::new()).expect("open :memory:")
    ));
}

/// The suite through the group committer over a file store: every commit goes through a
/// batch (`commit_batch` in one transaction), and the reopen check reopens the file.
mod group_commit {
    use execstore::GroupCommit;

    use super::*;

    struct GroupHarness {
        dir: tempfile::TempDir,
        store: Option<GroupCommit<SqliteStore>>,
    }

    impl GroupHarness {
        fn new() -> Self {
            let dir = tempfile::tempdir().expect("temporary directory");
            let store = SqliteStore::open(dir.path().join("store.db"), SqliteOptions::new()).expect("open");
            GroupHarness {
                dir,
                store: Some(GroupCommit::new(store)),
            }
        }
    }

    impl Harness for GroupHarness {
        fn store(&self) -> &dyn ExecutionStore {
            self.store.as_ref().expect("the store is open")
        }

        fn reopen(&mut self) -> bool {
            self.store = None;
            let path = self.dir.path().join("store.db");
            let store = SqliteStore::open(path, SqliteOptions::new()).expect("reopen");
            self.store = Some(GroupCommit::new(store));
            true
        }
    }

    execstore::conformance_tests!(durable: GroupHarness::new());
}
