//! The operator records' behaviour suite against PgOperatorStore on a real PostgreSQL server
//! (`EXECSTORE_PG_URL`): each check in a schema of its own (dropped after), reopened for the
//! durability check.

mod common;

use execstore::conformance::operator::OperatorHarness;
use execstore::operator::OperatorStore;
use execstore_postgres::{ConnectOptions, Db, PgOperatorStore};

struct PgOperatorHarness {
    url: String,
    schema: String,
    store: Option<PgOperatorStore>,
}

impl PgOperatorHarness {
    fn new() -> Option<Self> {
        let url = common::server_url()?;
        let schema = common::unique_prefix();
        let store = Some(Self::open(&url, &schema));
        Some(PgOperatorHarness { url, schema, store })
    }

    fn open(url: &str, schema: &str) -> PgOperatorStore {
        let db = Db::open(url, ConnectOptions::new().schema(schema).max_connections(2)).expect("open");
        PgOperatorStore::on(&db).expect("operator")
    }
}

impl OperatorHarness for PgOperatorHarness {
    fn store(&self) -> &dyn OperatorStore {
        self.store.as_ref().expect("open")
    }
    fn reopen(&mut self) -> bool {
        self.store = None;
        self.store = Some(Self::open(&self.url, &self.schema));
        true
    }
}

impl Drop for PgOperatorHarness {
    fn drop(&mut self) {
        self.store = None;
        let _ = execstore_postgres::drop_workspace_schema(&self.url, &self.schema);
    }
}

macro_rules! pg_operator {
    () => {
        match PgOperatorHarness::new() {
            Some(h) => h,
            None => return,
        }
    };
}

execstore::operator_conformance_tests!(durable: pg_operator!());

#[test]
fn a_read_only_database_without_the_tables_lists_nothing_and_refuses_writes() {
    let Some(url) = common::server_url() else { return };
    let schema = common::unique_prefix();
    let db = Db::open(&url, ConnectOptions::new().schema(&schema)).expect("open");
    drop(execstore_postgres::PgWorkspaceStorage::on(&db, Default::default()).expect("the schema"));
    let ro = Db::open(&url, ConnectOptions::new().schema(&schema).read_only(true)).expect("read-only");
    let store = PgOperatorStore::on(&ro).expect("on");
    assert!(store.list_audit(&Default::default()).expect("list").is_empty());
    assert!(store.list_views().expect("views").is_empty());
    let view = execstore::operator::SavedView {
        name: "v".into(),
        query: "a=1".into(),
        owner: "o".into(),
        updated_at: 1.0,
    };
    assert!(store.put_view(&view).is_err());
    let _ = execstore_postgres::drop_workspace_schema(&url, &schema);
}
