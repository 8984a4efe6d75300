//! `send` and the search-attribute calls through the async face, on a SQLite file: what they
//! write is what the synchronous store then reads, and a refused call writes nothing.

use execstore::{
    executions::{Event, ListQuery, Status},
    Execution, ExecutionStore, StoreError,
};
use execstore_sqlite::{SqliteOptions, SqliteStore};
use execstore_tokio::AsyncExecutionStore;
use serde_json::json;

fn running(id: &str, customer: &str) -> Execution {
    let mut exe = Execution::new(id, "orders");
    exe.status = Status::Running;
    exe.context.insert("customer".into(), json!(customer));
    exe
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_enqueues_through_the_outbox_and_refusals_change_nothing() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(dir.path().join("send.db"), SqliteOptions::new()).expect("open");
    let s = AsyncExecutionStore::new(store);
    let mut run = running("run", "c-1");
    s.save(&mut run).await.expect("save");
    let mut done = Execution::new("done", "orders");
    done.status = Status::Done;
    s.save(&mut done).await.expect("save");

    let mut event = Event::new("evt-1", "Pay");
    event.data.insert("amount".into(), json!(12.5));
    let sent = s.send("run", &event, Some(1)).await.expect("send");
    assert_eq!(
        (sent.target_id.as_str(), sent.event_id.as_str()),
        ("run", "evt-1")
    );
    let pending = s.pending_outbox(None, 10).await.expect("outbox");
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].seq, sent.seq);
    assert_eq!(pending[0].target_id.as_deref(), Some("run"));
    assert_eq!(pending[0].event.kind, "Pay");
    assert_eq!(pending[0].event.data.get("amount"), Some(&json!(12.5)));
    let after = s.load("run").await.expect("load").expect("stored");
    assert_eq!(after.version, 1, "send writes no step");

    let ok = Event::new("evt-2", "Pay");
    let refusals: Vec<(&str, Event, Option<i64>, &str)> = vec![
        ("nope", ok.clone(), None, "NOT_FOUND"),
        ("run", ok.clone(), Some(7), "CONFLICT"),
        ("done", ok.clone(), None, "INVALID_INPUT"),
        ("", ok.clone(), None, "INVALID_INPUT"),
        ("run", Event::new("evt-3", "Cancel"), None, "INVALID_INPUT"),
        ("run", Event::new("", "Pay"), None, "INVALID_INPUT"),
        ("run", Event::new("evt-4", ""), None, "INVALID_INPUT"),
    ];
    for (id, event, expected, code) in refusals {
        match s.send(id, &event, expected).await {
            Err(e) => assert_eq!(e.code(), code, "send({id:?}, {event:?}, {expected:?}): {e}"),
            Ok(sent) => panic!("send({id:?}, {event:?}) was accepted: {sent:?}"),
        }
    }
    let mut big = Event::new("evt-big", "Pay");
    big.data.insert(
        "blob".into(),
        json!("x".repeat(execstore::kit::validate::MAX_DOCUMENT_BYTES + 1)),
    );
    assert!(matches!(
        s.send("run", &big, None).await,
        Err(StoreError::InvalidInput { .. })
    ));
    assert_eq!(
        s.pending_outbox(None, 10).await.expect("outbox").len(),
        1,
        "nothing more enqueued"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_attributes_are_declared_listed_used_and_dropped() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(dir.path().join("attrs.db"), SqliteOptions::new()).expect("open");
    let s = AsyncExecutionStore::new(store);
    for (id, customer) in [("a", "c-1"), ("b", "c-2"), ("c", "c-1")] {
        s.save(&mut running(id, customer)).await.expect("save");
    }
    assert!(s.attributes().await.expect("attributes").is_empty());
    let query = ListQuery::new()
        .filter(execstore::executions::parse_where(r#"context.customer = "c-1""#, 0.0).expect("parse"));
    let scanned = s.list_executions(&query).await.expect("list");
    assert_eq!(scanned.scan, vec!["context.customer".to_owned()]);

    let declared = s.declare_attribute("context.customer").await.expect("declare");
    assert_eq!(declared.path, "context.customer");
    assert_eq!(
        s.declare_attribute("context.customer").await.expect("again"),
        declared
    );
    assert_eq!(s.attributes().await.expect("attributes"), vec![declared.clone()]);
    assert_eq!(
        s.store().attributes().expect("sync"),
        vec![declared],
        "the store underneath has it"
    );
    let page = s.list_executions(&query).await.expect("list");
    assert!(page.scan.is_empty(), "declared: no scan");
    let ids: Vec<&str> = page.items.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["a", "c"]);

    match s.declare_attribute("status").await {
        Err(e) => assert_eq!(e.code(), "INVALID_INPUT"),
        Ok(a) => panic!("not a context path, declared: {a:?}"),
    }
    assert_eq!(
        s.attributes().await.expect("attributes").len(),
        1,
        "a refused declare adds nothing"
    );
    assert!(s.drop_attribute("context.customer").await.expect("drop"));
    assert!(!s.drop_attribute("context.customer").await.expect("drop again"));
    assert!(s.attributes().await.expect("attributes").is_empty());
}
