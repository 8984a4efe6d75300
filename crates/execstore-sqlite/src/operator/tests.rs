//! Unit tests of the operator tables: the migration is recorded once, and a read-only file
//! without them lists nothing and refuses writes.

use super::*;
use crate::ConnectOptions;
use execstore::operator::OK;

fn entry() -> AuditEntry {
    AuditEntry {
        id: 0,
        at: 1.0,
        actor: "a".into(),
        role: "act".into(),
        action: "suspend".into(),
        target: "e".into(),
        reason: "why".into(),
        outcome: OK.into(),
        message: None,
        params: serde_json::Map::new(),
    }
}

#[test]
fn the_migration_is_recorded_once() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("o.db");
    let db = Db::open(&path, ConnectOptions::new()).expect("open");
    SqliteOperatorStore::on(&db).expect("first");
    SqliteOperatorStore::on(&db).expect("again");
    let n: i64 = db
        .shared
        .read()
        .expect("read")
        .query_row("SELECT COUNT(*) FROM execstore_operator_migrations", [], |r| {
            r.get(0)
        })
        .expect("count");
    assert_eq!(n, 1);
}

#[test]
fn a_read_only_file_without_the_tables_lists_nothing_and_refuses_writes() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("o.db");
    {
        let db = Db::open(&path, ConnectOptions::new()).expect("create");
        db.shared
            .held_writer()
            .expect("writer")
            .execute_batch("CREATE TABLE other (x)")
            .expect("table");
    }
    let db = Db::open(&path, ConnectOptions::new().read_only(true)).expect("open");
    let store = SqliteOperatorStore::on(&db).expect("on");
    assert!(store.list_audit(&AuditQuery::new()).expect("list").is_empty());
    assert!(store.list_views().expect("views").is_empty());
    assert!(store.record_audit(&entry()).is_err());
    let conn = rusqlite::Connection::open(&path).expect("look");
    assert!(
        !db::has_table(&conn, AUDIT_TABLE).expect("probe"),
        "nothing created"
    );
}
