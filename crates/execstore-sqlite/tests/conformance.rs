//! The execstore behaviour suite against SqliteStore: on a file (bare table names and
//! harel's `harel_` prefix, and without `create_schema` on harel's tables alone) and on
//! `:memory:`.

use execstore::conformance::executions::Harness;
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

/// `create_schema` off on a file whose tables harel's own DDL made (as a migration tool
/// would): no DDL runs, and the file's schema is the same after the whole suite.
mod harel_schema_only {
    use super::*;

    struct SchemaOnly(SqliteHarness, Vec<(String, Option<String>)>);

    fn schema(path: &std::path::Path) -> Vec<(String, Option<String>)> {
        let conn = rusqlite::Connection::open(path).expect("open");
        let mut stmt = conn
            .prepare("SELECT name, sql FROM sqlite_master ORDER BY name")
            .expect("sqlite_master");
        let rows = stmt
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .expect("query")
            .collect::<Result<Vec<_>, _>>()
            .expect("rows");
        rows
    }

    impl SchemaOnly {
        fn new() -> Self {
            let dir = tempfile::tempdir().expect("temporary directory");
            let path = dir.path().join("store.db");
            let conn = rusqlite::Connection::open(&path).expect("create");
            for stmt in execstore_sqlite::harel_schema(Some("harel")).expect("harel's schema") {
                conn.execute_batch(&stmt).expect("harel's DDL");
            }
            drop(conn);
            let before = schema(&path);
            let options = SqliteOptions::new().prefix("harel").create_schema(false);
            let store = SqliteStore::open(&path, options.clone()).expect("open");
            SchemaOnly(
                SqliteHarness {
                    dir,
                    options,
                    store: Some(store),
                },
                before,
            )
        }
    }

    impl Drop for SchemaOnly {
        fn drop(&mut self) {
            self.0.store = None;
            if !std::thread::panicking() {
                assert_eq!(schema(&self.0.dir.path().join("store.db")), self.1, "no DDL ran");
            }
        }
    }

    impl Harness for SchemaOnly {
        fn store(&self) -> &dyn ExecutionStore {
            self.0.store()
        }

        fn reopen(&mut self) -> bool {
            self.0.reopen()
        }
    }

    execstore::conformance_tests!(durable: SchemaOnly::new());
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
    use execstore::executions::GroupCommit;

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

/// Not in the macro (a backend that cannot write an outbox entry alone refuses it): on a
/// file, under harel's prefix, and on harel's own tables alone.
#[test]
fn send_through_the_outbox() {
    use execstore::conformance::executions::send_through_the_outbox as check;
    check(SqliteHarness::new().store());
    check(SqliteHarness::with_options(SqliteOptions::new().prefix("harel")).store());
}
