//! Unit tests of the SQLite transport: harel's schema text, and a publish's atomicity.

use super::*;

#[test]
fn creates_harels_tables_and_indexes_under_the_prefix() {
    let t = SqliteTransport::open(":memory:", SqliteTransportOptions::new().prefix("acme")).expect("open");
    let conn = t.conn();
    let mut names: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows");
    names.sort();
    assert_eq!(
        names,
        [
            "acme_transport_groups",
            "acme_transport_groups_by_last_claimed",
            "acme_transport_messages",
            "acme_transport_messages_by_group",
        ]
    );
}

#[test]
fn create_schema_false_needs_the_tables() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("t.db");
    let err = SqliteTransport::open(&path, SqliteTransportOptions::new().create_schema(false))
        .expect_err("no tables");
    assert!(matches!(err, StoreError::NotFound { .. }), "{err:?}");
    drop(SqliteTransport::open(&path, SqliteTransportOptions::new()).expect("create"));
    SqliteTransport::open(&path, SqliteTransportOptions::new().create_schema(false)).expect("tables exist");
}

#[test]
fn a_bad_prefix_is_refused() {
    let err = SqliteTransport::open(":memory:", SqliteTransportOptions::new().prefix("1x")).expect_err("bad");
    assert!(matches!(err, StoreError::InvalidInput { .. }), "{err:?}");
}

#[test]
fn a_failed_publish_leaves_no_message_without_its_group() {
    let t = SqliteTransport::open(":memory:", SqliteTransportOptions::new()).expect("open");
    // The group insert fails (the table is gone): the message insert is rolled back with it.
    t.conn()
        .execute_batch("DROP TABLE harel_transport_groups")
        .expect("drop");
    t.publish("G", &Event::new("e", "k"), 0)
        .expect_err("no groups table");
    assert_eq!(t.depth().expect("depth"), 0);
}
