//! One [`Db`] serves both contracts with one pool: the server sees the connections of one
//! pool where the two contracts opened apart made two.

#[macro_use]
mod common;

use std::sync::Arc;

use execstore::workspace::{Entry, LogQuery, ManualClock, Timestamp, WorkspaceRef, WorkspaceStorage};
use execstore::{Effects, Execution, ExecutionStore};
use execstore_postgres::{ConnectOptions, Db, PgOptions, PgStore, PgWorkspaceOptions, PgWorkspaceStorage};
use postgres::NoTls;
use serde_json::json;

fn ws_options() -> PgWorkspaceOptions {
    let t0 = Timestamp::from_micros(1_767_268_800_000_000).unwrap();
    PgWorkspaceOptions::new().clock(Arc::new(ManualClock::new(t0)))
}

fn entry(id: &str) -> Entry {
    let event = json!({"type": "t:x"});
    Entry::new(
        id,
        json!({"kind": "source", "name": "t"}),
        event.as_object().unwrap().clone(),
    )
}

/// `url` with its sessions named `name` (`application_name`), so they can be counted.
fn named(url: &str, name: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}application_name={name}")
}

/// How many server sessions are named `name`.
fn sessions(url: &str, name: &str) -> i64 {
    let mut client = postgres::Client::connect(url, NoTls).unwrap();
    client
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&name],
        )
        .unwrap()
        .get(0)
}

/// Both contracts, used in turn, on one Db of one connection: the server holds one session;
/// opened apart with one connection each, two.
#[test]
fn both_contracts_on_one_db_share_one_pool() {
    let Some(url) = common::server_url() else {
        return;
    };
    let prefix = common::unique_prefix();
    let schema = format!("s_{prefix}");
    let one = format!("es_one_{prefix}");
    let two = format!("es_two_{prefix}");

    let connect = ConnectOptions::new().max_connections(1).schema(schema.clone());
    let db = Db::open(&named(&url, &one), connect.clone()).unwrap();
    let log = PgWorkspaceStorage::on(&db, ws_options()).unwrap();
    let store = PgStore::on(&db, PgOptions::new().prefix(prefix.clone())).unwrap();
    store
        .commit(&mut Execution::new("e1", "d"), &Effects::new())
        .unwrap();
    let w = WorkspaceRef::new("t", "w");
    let mut tx = log.begin(&w).unwrap();
    tx.append(&[entry("a")]).unwrap();
    tx.commit().unwrap();
    assert_eq!(log.read(&w, &LogQuery::new()).unwrap().len(), 1);
    assert_eq!(store.load("e1").unwrap().map(|e| e.version), Some(1));
    assert_eq!(db.connections(), 1);
    assert_eq!(sessions(&url, &one), 1, "one pool of one connection");

    let store2 = PgStore::open(
        &named(&url, &two),
        PgOptions::new().prefix(prefix.clone()).connect(connect.clone()),
    )
    .unwrap();
    let log2 = PgWorkspaceStorage::open(&named(&url, &two), ws_options().connect(connect)).unwrap();
    assert!(store2.load("e1").unwrap().is_some());
    assert_eq!(log2.read(&w, &LogQuery::new()).unwrap().len(), 1);
    assert_eq!(sessions(&url, &two), 2, "two pools of one connection each");

    drop((store, log, store2, log2, db));
    let mut client = postgres::Client::connect(&url, NoTls).unwrap();
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
}
