//! Every async method once, checked against what the synchronous contract returns: none is a
//! stub.

mod common;

on_every_backend!(every_workspace_storage_and_transaction_method_works);

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use common::{entry, fixture, memory, obj, progress, t0, ws, Backend, Fixture};
use execstore::workspace::{
    EvaluationError, LogQuery, NewRun, Run, RunPolicy, RunQuery, RunStatus, ScopeState, StoredRule,
    StoredRuleStatus,
};
use execstore::{
    executions::{BatchItem, Event, ListQuery, Status, Work},
    Effects, Execution, ExecutionStore, MemoryStore,
};
use execstore_tokio::{AsyncExecutionStore, AsyncWorkspaceStorage};
use serde_json::json;

fn run(id: &str, scope: &str) -> Run {
    Run::pending(NewRun {
        id: id.into(),
        rule: "rule".into(),
        scope_key: scope.into(),
        scope: obj(json!({"k": scope})),
        fired_seq: 1,
        matched: vec![1],
        correlation_id: format!("c-{id}"),
        depth: 0,
        now: t0(),
    })
    .expect("a valid run")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_execution_store_method_works() {
    let dynamic: Arc<dyn ExecutionStore> = Arc::new(MemoryStore::new());
    let s = AsyncExecutionStore::from_dyn(dynamic);
    let typed = AsyncExecutionStore::from_arc(Arc::new(MemoryStore::with_trace_max(None)));
    assert_eq!(typed.trace_max().await.expect("trace_max"), None);
    assert!(!typed.store().capabilities().durable);
    assert!(!s.capabilities().await.expect("capabilities").durable);
    assert_eq!(s.trace_max().await.expect("trace_max"), Some(200));

    let mut parent = Execution::new("p-1", "orders");
    parent.status = Status::Running;
    s.save(&mut parent).await.expect("save");
    assert_eq!(parent.version, 1);
    let effects = Effects::new()
        .emit(Some("p-1"), Event::new("e-out", "Out"))
        .processed("e-in")
        .schedule("main.wait", 100.0)
        .spawn("p-1.c", "main.region", obj(json!({"x": 1})))
        .trace(obj(json!({"event_kind": "In"})));
    let seqs = s.commit(&mut parent, effects).await.expect("commit");
    assert_eq!((seqs.len(), parent.version), (1, 2));

    let mut items = vec![
        BatchItem::new(Execution::new("b-1", "batch"), Effects::new()),
        BatchItem::new(
            Execution::new("b-2", "batch"),
            Effects::new().emit(None, Event::new("e-b", "B")),
        ),
    ];
    let results = s.commit_batch(&mut items).await.expect("batch");
    assert!(results.iter().all(Result::is_ok));
    assert!(items.iter().all(|i| i.execution.version == 1), "written back");

    assert_eq!(s.load("p-1").await.expect("load"), Some(parent.clone()));
    let (loaded, seen) = s.load_for_event("p-1", "e-in").await.expect("load_for_event");
    assert!(loaded.is_some() && seen);
    assert!(s.is_processed("p-1", "e-in").await.expect("is_processed"));
    let page = s.list_executions(&ListQuery::new()).await.expect("list");
    assert_eq!(page.items.len(), 3);
    let outbox = s.pending_outbox(None, 10).await.expect("outbox");
    assert_eq!(outbox.len(), 2);
    s.ack_outbox(outbox[0].seq).await.expect("ack");
    assert_eq!(
        s.ack_outbox_many(&[outbox[0].seq, outbox[1].seq])
            .await
            .expect("ack_many"),
        1
    );
    let seq = s
        .enqueue_outbox("p-1", &Event::new("e-sent", "Sent"))
        .await
        .expect("enqueue_outbox");
    let outbox = s.pending_outbox(None, 10).await.expect("outbox");
    assert_eq!(
        (outbox.len(), outbox[0].seq, outbox[0].target_id.as_deref()),
        (1, seq, Some("p-1"))
    );
    assert_eq!(
        s.load("p-1").await.expect("load"),
        Some(parent.clone()),
        "no step"
    );
    s.ack_outbox(seq).await.expect("ack the sent entry");
    let spawns = s.pending_spawns(None, 10).await.expect("spawns");
    assert_eq!(spawns.len(), 1);
    s.ack_spawn(spawns[0].seq).await.expect("ack_spawn");
    let due = s.due_timers(1000.0, None, 10).await.expect("due");
    assert_eq!(due.len(), 1);
    assert!(s
        .due_timers(1000.0, Some(&due[0]), 10)
        .await
        .expect("due")
        .is_empty());
    assert!(s
        .delete_timer("p-1", "main.wait", 100.0)
        .await
        .expect("delete_timer"));
    let index = s
        .append_trace("p-1", &obj(json!({"note": "by hand"})))
        .await
        .expect("append_trace");
    assert_eq!(index, 1);
    assert_eq!(s.read_trace("p-1").await.expect("trace").len(), 2);
    assert_eq!(s.ids_with_prefix("b-").await.expect("ids"), ["b-1", "b-2"]);
    let token = s.change_token().await.expect("token");
    let counts = s.count_by_status(&ListQuery::new()).await.expect("counts");
    assert_eq!(counts.iter().map(|(_, n)| n).sum::<u64>(), 3);
    assert!(
        s.count_by_status(&ListQuery::new().definition("")).await.is_err(),
        "checked input"
    );
    let b = ListQuery::new().search("b-");
    let counted = s.count_by_status(&b).await.expect("counts of a filter");
    assert_eq!(counted.iter().map(|(_, n)| n).sum::<u64>(), 2);
    assert!(
        s.count_by_status(&ListQuery::new().search("")).await.is_err(),
        "checked input"
    );

    // Relays and the sweep: callbacks on the blocking pool.
    let mut more = s.load("p-1").await.expect("load").expect("stored");
    let effects = Effects::new()
        .emit(None, Event::new("e-r", "R"))
        .spawn("p-1.d", "main.other", obj(json!({})))
        .schedule("main.later", 5.0);
    s.commit(&mut more, effects).await.expect("commit");
    assert_ne!(s.change_token().await.expect("token"), token);
    let acked = s
        .relay_outbox(10, |entries| entries.iter().map(|e| e.seq).collect())
        .await;
    assert_eq!(acked.expect("relay"), 1);
    let created = s
        .relay_spawns(10, |entries| entries.iter().map(|e| e.seq).collect())
        .await;
    assert_eq!(created.expect("relay_spawns"), 1);
    let (fired_tx, fired_rx) = std::sync::mpsc::channel();
    let offered = s
        .sweep_timers(10.0, 10, move |timers| {
            let _ = fired_tx.send(timers.len());
        })
        .await
        .expect("sweep");
    assert_eq!((offered, fired_rx.recv().expect("fired")), (1, 1));
    let woken = s
        .wait_for_work(Work::Outbox, Duration::from_millis(10))
        .await
        .expect("wait");
    assert!(!woken, "the memory store only sleeps");

    assert!(!s.purge("b-1", 7).await.expect("purge"), "moved on");
    assert!(s.purge("b-1", 1).await.expect("purge"));
    assert_eq!(s.load("b-1").await.expect("load"), None);
}

async fn every_workspace_storage_and_transaction_method_works(backend: Backend) {
    let Fixture {
        s, clock, dir: _dir, ..
    } = fixture(backend);
    let w = ws("smoke");
    assert_eq!(
        s.capabilities().await.expect("capabilities"),
        s.storage().capabilities()
    );
    assert_eq!(s.storage().head_seq(&w).expect("sync head"), 0);

    let mut tx = s.transaction(&w).await.expect("begin");
    assert_eq!(tx.workspace(), &w);
    let appended = tx.append(&[entry("a"), entry("b")]).await.expect("append");
    assert_eq!(appended.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(tx.envelope("b").await.expect("envelope").map(|e| e.seq), Some(2));
    assert_eq!(tx.head_seq().await.expect("head"), 2);
    assert_eq!(tx.read(1, 10).await.expect("read").len(), 1);
    assert!(tx.progress("rule").await.expect("progress").is_none());
    tx.save_progress("rule", &progress(2, 0))
        .await
        .expect("save_progress");
    assert!(tx.progress("rule").await.expect("progress").is_some());
    let state = ScopeState::from_doc(obj(json!({"count": 1})));
    tx.save_states("rule", &[("s1".into(), state.clone())])
        .await
        .expect("save_states");
    assert_eq!(tx.states("rule", &["s1".into()]).await.expect("states").len(), 1);
    tx.clear_states("rule").await.expect("clear_states");
    assert!(tx
        .states("rule", &["s1".into()])
        .await
        .expect("states")
        .is_empty());
    tx.save_runs(&[run("r1", "s1"), run("r2", "s1")])
        .await
        .expect("save_runs");
    assert!(tx.run("r1").await.expect("run").is_some());
    assert_eq!(tx.scope_runs("rule", "s1").await.expect("scope_runs").len(), 2);
    tx.dead_letter(&[EvaluationError::new("rule", 1, "boom")])
        .await
        .expect("dead_letter");
    assert!(tx.schedule("tick").await.expect("schedule").is_none());
    tx.save_schedule("tick", t0()).await.expect("save_schedule");
    assert_eq!(tx.schedule("tick").await.expect("schedule"), Some(t0()));
    let stored = StoredRule {
        rule: obj(json!({"name": "rule"})),
        version: 1,
        status: StoredRuleStatus::Active,
        provenance: obj(json!({"by": "smoke"})),
    };
    tx.save_stored_rule(&stored).await.expect("save_stored_rule");
    assert!(tx.stored_rule("rule").await.expect("stored_rule").is_some());
    assert_eq!(tx.stored_rules().await.expect("stored_rules").len(), 1);
    tx.commit().await.expect("commit");

    // A rolled-back one leaves nothing.
    let mut tx = s.transaction(&w).await.expect("begin");
    tx.append(&[entry("rolled-back")]).await.expect("append");
    tx.rollback().await.expect("rollback");

    assert_eq!(s.head_seq(&w).await.expect("head"), 2);
    assert_eq!(
        s.read(&w, &LogQuery::new().last(1)).await.expect("read")[0].id,
        "b"
    );
    assert!(s.rule_history(&w, "rule").await.expect("history").is_empty());
    assert!(s.envelope(&w, "a").await.expect("envelope").is_some());
    assert!(s.envelope(&w, "rolled-back").await.expect("envelope").is_none());
    assert!(s.run(&w, "r2").await.expect("run").is_some());
    let query = RunQuery {
        status: Some(RunStatus::Pending),
        ..RunQuery::default()
    };
    assert_eq!(s.runs(&w, &query).await.expect("runs").len(), 2);
    assert_eq!(s.dead_letters(&w, Some("rule")).await.expect("dead").len(), 1);
    let page = s
        .dead_letters_page(&w, Some("rule"), 0, 5)
        .await
        .expect("dead page");
    assert_eq!(page.len(), 1);
    assert!(s
        .dead_letters_page(&w, None, page[0].0, 5)
        .await
        .expect("dead page")
        .is_empty());
    assert_eq!(s.progress(&w).await.expect("progress").len(), 1);
    assert_eq!(s.schedules(&w).await.expect("schedules").len(), 1);
    assert_eq!(s.stored_rules(&w).await.expect("stored_rules").len(), 1);
    assert_eq!(
        s.workspaces().await.expect("workspaces"),
        std::slice::from_ref(&w)
    );
    let info = s.workspace_info(&w).await.expect("info").expect("exists");
    assert_eq!(info.head_seq, 2);
    let due = s.due_runs(t0(), 10, &RunPolicy::new()).await.expect("due");
    assert_eq!(due.len(), 2);

    let ttl = Duration::from_secs(30);
    assert!(s.acquire_lease(&w, "k", "a", ttl).await.expect("lease"));
    assert!(!s.acquire_lease(&w, "k", "b", ttl).await.expect("lease"));
    assert_eq!(s.leases(&w).await.expect("leases").len(), 1);
    assert!(s.acquire_lease(&w, "l", "a", ttl).await.expect("lease"));
    let page = s.leases_page(&w, Some("k"), 5).await.expect("leases_page");
    assert_eq!(page.iter().map(|l| l.key.as_str()).collect::<Vec<_>>(), ["l"]);
    s.release_lease(&w, "l", "a").await.expect("release");
    s.release_lease(&w, "k", "a").await.expect("release");
    assert!(s.leases(&w).await.expect("leases").is_empty());
    clock.advance_micros(1);
    assert_eq!(s.cursor(&w, "c").await.expect("cursor"), 0);
    s.save_cursor(&w, "c", 2).await.expect("save_cursor");
    s.save_cursor(&w, "c", 1).await.expect("save_cursor");
    assert_eq!(s.cursors(&w).await.expect("cursors"), [("c".to_owned(), 2)]);
    assert!(s
        .wait_for_append(&w, 1, Duration::from_millis(10))
        .await
        .expect("wait"));
    assert!(!s
        .wait_for_append(&w, 2, Duration::from_millis(10))
        .await
        .expect("wait"));

    let again = AsyncWorkspaceStorage::from_storage(execstore::workspace::MemoryWorkspaceStorage::new(
        Arc::new(clock.clone()),
    ));
    assert!(again.workspaces().await.expect("workspaces").is_empty());
}

/// Polled outside a runtime, a call fails instead of panicking.
#[test]
fn outside_a_runtime_a_call_is_an_error() {
    let s = AsyncExecutionStore::new(MemoryStore::new());
    let mut cx = Context::from_waker(Waker::noop());
    let mut load = Box::pin(s.load("x"));
    match load.as_mut().poll(&mut cx) {
        Poll::Ready(Err(execstore::StoreError::Backend { retryable: false, .. })) => {}
        other => panic!("{other:?}"),
    }
    let w = memory().s;
    let x = ws("x");
    let mut begin = Box::pin(w.transaction(&x));
    assert!(matches!(begin.as_mut().poll(&mut cx), Poll::Ready(Err(_))));
    let mut stream = w.subscribe(&x, 0);
    let mut next = Box::pin(stream.next());
    assert!(matches!(next.as_mut().poll(&mut cx), Poll::Ready(Some(Err(_)))));
}
