//! The behaviour suite every backend passes (feature `conformance`).
//!
//! Plain functions over `&dyn ExecutionStore`, in the manner of object_store's
//! `integration.rs`: each backend's tests call them, through [`conformance_tests!`](crate::conformance_tests)
//! or one by one. Every check writes ids under a prefix of its own, so the suite also runs
//! against a shared, non-empty store; each assertion could fail on a backend that gets the
//! behaviour wrong. Capabilities are parameters: a check that needs durability is only
//! generated for a durable backend.
//!
//! What it does not prove: behaviour under process crashes and across processes (the
//! crash and race tests in `tests/` do), nor speed.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

use crate::error::StoreError;
use crate::model::{
    ChildState, DueTimer, Effects, Event, Execution, JsonObject, OutboxEntry, SpawnEntry, Status,
};
use crate::paging::{execution_pages, outbox_pages, spawn_pages, timer_pages};
use crate::query::{encode_cursor, ListQuery};
use crate::store::{BatchItem, ExecutionStore, Work};
use crate::validate::{ALL_TIMERS, MAX_DOCUMENT_BYTES, MAX_PAGE};

pub use crate::conformance_control::*;

pub use crate::conformance_list_filters::{
    list_filters_bad_input_rejected, list_filters_search, list_filters_time_windows,
};

/// What the suite needs from a backend's test: the store under test and, for a durable
/// backend, a way to close and reopen it on the same data.
pub trait Harness {
    /// The store under test.
    fn store(&self) -> &dyn ExecutionStore;
    /// Closes the store and opens it again on the same data. Returns `false` for a backend
    /// that keeps nothing across a reopen.
    fn reopen(&mut self) -> bool;
}

impl Harness for crate::MemoryStore {
    fn store(&self) -> &dyn ExecutionStore {
        self
    }
    fn reopen(&mut self) -> bool {
        false
    }
}

/// A group committer over a store the harness cannot reopen (a durable backend's harness
/// wraps its own store to reopen it).
impl<S: ExecutionStore> Harness for crate::GroupCommit<S> {
    fn store(&self) -> &dyn ExecutionStore {
        self
    }
    fn reopen(&mut self) -> bool {
        false
    }
}

/// Generates one `#[test]` per check of the suite. `$harness` is an expression that makes a
/// fresh [`Harness`] (it is evaluated once per test). `durable:` adds the checks that need
/// committed data to survive a reopen.
///
/// ```text
/// execstore::conformance_tests!(ephemeral: execstore::MemoryStore::new());
/// execstore::conformance_tests!(durable: MyHarness::new());
/// ```
///
/// In wasm32-unknown-unknown, `wasm ephemeral:` and `wasm durable:` generate one async
/// `#[wasm_bindgen_test]` per check that needs neither threads nor a clock; there
/// `$harness` is a future of the harness (`async { execstore::MemoryStore::new() }`).
#[macro_export]
macro_rules! conformance_tests {
    (ephemeral: $harness:expr) => {
        $crate::conformance_tests!(@portable checks $harness);
        // These need threads and a clock: not on wasm32-unknown-unknown.
        $crate::conformance_tests!(@checks $harness;
            cas_race,
            wait_for_work_matches_capabilities,
        );
    };
    (durable: $harness:expr) => {
        $crate::conformance_tests!(ephemeral: $harness);
        #[test]
        fn reopen_sees_everything_committed() {
            let mut h = $harness;
            $crate::conformance::reopen_sees_everything_committed(&mut h);
        }
    };
    // The checks that need neither threads nor a clock, so they also run in wasm32.
    (@portable $mode:ident $harness:expr) => {
        $crate::conformance_tests!(@$mode $harness;
            cas_insert_and_conflict,
            save_round_trips_every_field,
            commit_applies_every_effect,
            conflicting_commit_changes_nothing,
            commit_batch_per_item_outcome,
            timers_upsert_and_guarded_delete,
            trace_ring_keeps_last_trace_max,
            listing_filters_and_pagination,
            invalid_cursor_and_limits_rejected,
            outbox_oldest_first_and_ack,
            ack_outbox_many_skips_missing,
            spawns_oldest_first_and_ack,
            dedupe_is_idempotent,
            ids_with_prefix_is_literal,
            purge_removes_everything_keyed_by_it,
            bad_input_changes_nothing,
            status_counts_match_the_listing,
            change_token_moves_with_every_write,
            relay_acks_what_was_delivered,
            claims_match_capabilities,
            list_filters_time_windows,
            list_filters_search,
            list_filters_bad_input_rejected,
            control_suspend_resume_tree,
            control_terminate_tree,
            control_refusals_change_nothing,
            control_purge_tree,
            control_purge_finished,
        );
    };
    // wasm32-unknown-unknown (wasm-bindgen-test; the calling crate depends on
    // `wasm-bindgen-test`): one async `#[wasm_bindgen_test]` per portable check.
    // `$harness` is a future of a fresh Harness (an OPFS store opens asynchronously).
    (wasm ephemeral: $harness:expr) => {
        $crate::conformance_tests!(@portable wasm_checks $harness);
    };
    (wasm durable: $harness:expr) => {
        $crate::conformance_tests!(wasm ephemeral: $harness);
        #[::wasm_bindgen_test::wasm_bindgen_test]
        async fn reopen_sees_everything_committed() {
            let mut h = $harness.await;
            $crate::conformance::reopen_sees_everything_committed(&mut h);
        }
    };
    (@wasm_checks $harness:expr; $($check:ident,)*) => {
        $(
            #[::wasm_bindgen_test::wasm_bindgen_test]
            async fn $check() {
                let h = $harness.await;
                $crate::conformance::$check($crate::conformance::Harness::store(&h));
            }
        )*
    };
    (@checks $harness:expr; $($check:ident,)*) => {
        $(
            #[test]
            fn $check() {
                let h = $harness;
                $crate::conformance::$check($crate::conformance::Harness::store(&h));
            }
        )*
    };
}

// ---------------------------------------------------------------------------------------
// Helpers

/// A prefix no other check (in this process) uses, so checks can share one store.
pub fn scope(check: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("cf-{check}-{}-", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn obj(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn code<T: std::fmt::Debug>(result: crate::Result<T>) -> &'static str {
    match result {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e.code(),
    }
}

fn created(store: &dyn ExecutionStore, id: &str, definition_id: &str) -> Execution {
    let mut exe = Execution::new(id, definition_id);
    exe.status = Status::Running;
    exe.active_path = Some("root.a".into());
    store.save(&mut exe).expect("save a new execution");
    assert_eq!(exe.version, 1, "a first save stores version 1");
    exe
}

fn bump(exe: &mut Execution) {
    let counter = exe.context.get("counter").and_then(Value::as_i64).unwrap_or(0);
    exe.context.insert("counter".into(), (counter + 1).into());
    exe.processed_events += 1;
}

/// Every outbox entry, following `after` to the end.
pub fn all_outbox(store: &dyn ExecutionStore) -> Vec<OutboxEntry> {
    outbox_pages(store, None, 500)
        .flat_map(|page| page.expect("pending_outbox"))
        .collect()
}

/// Every spawn entry, following `after` to the end.
pub fn all_spawns(store: &dyn ExecutionStore) -> Vec<SpawnEntry> {
    spawn_pages(store, None, 500)
        .flat_map(|page| page.expect("pending_spawns"))
        .collect()
}

/// Every timer, however far off, following `after` to the end.
pub fn all_timers(store: &dyn ExecutionStore) -> Vec<DueTimer> {
    timer_pages(store, ALL_TIMERS, None, MAX_PAGE)
        .flat_map(|page| page.expect("due_timers"))
        .collect()
}

/// Every page of `query`, asserting page sizes, order and termination on the way (a page
/// that does not move past the previous one fails through the paging helper).
pub fn all_pages(store: &dyn ExecutionStore, query: ListQuery) -> Vec<crate::ExecutionSummary> {
    let limit = query.limit;
    let mut items: Vec<crate::ExecutionSummary> = Vec::new();
    for (n, page) in execution_pages(store, query).enumerate() {
        assert!(n < 100_000, "listing did not terminate");
        let page = page.expect("list_executions");
        assert!(page.items.len() <= limit, "a page holds at most `limit` items");
        if page.next_cursor.is_some() {
            assert!(!page.items.is_empty(), "a page with a next cursor is not empty");
        }
        for item in page.items {
            if let Some(prev) = items.last() {
                assert!(prev.id < item.id, "pages are ordered by id, without repeats");
            }
            items.push(item);
        }
    }
    items
}

/// What a bad call must leave untouched: every execution, outbox and spawn row, timer and
/// trace step, and the dedupe markers of `probes`.
fn snapshot(store: &dyn ExecutionStore, probes: &[(&str, &str)]) -> String {
    let ids: Vec<String> = all_pages(store, ListQuery::new().limit(MAX_PAGE))
        .into_iter()
        .map(|s| s.id)
        .collect();
    let exes: Vec<Option<Execution>> = ids.iter().map(|id| store.load(id).expect("load")).collect();
    let traces: Vec<_> = ids
        .iter()
        .map(|id| store.read_trace(id).expect("read_trace"))
        .collect();
    let timers = all_timers(store);
    let processed: Vec<bool> = probes
        .iter()
        .map(|(id, ev)| store.is_processed(id, ev).expect("is_processed"))
        .collect();
    serde_json::to_string(&json!({
        "executions": exes, "traces": traces, "timers": timers, "processed": processed,
        "outbox": all_outbox(store), "spawns": all_spawns(store),
    }))
    .expect("snapshot")
}

// ---------------------------------------------------------------------------------------
// The checks

/// A new execution is inserted at version 0; a write at a stale version is a `Conflict`
/// that names both versions, writes nothing and leaves the caller's version alone.
pub fn cas_insert_and_conflict(store: &dyn ExecutionStore) {
    let ns = scope("cas");
    let id = format!("{ns}a");
    assert!(store.load(&id).unwrap().is_none());
    let mut exe = created(store, &id, "def");
    let mut stale = exe.clone();
    exe.active_path = Some("root.b".into());
    store.save(&mut exe).unwrap();
    assert_eq!(exe.version, 2);

    stale.active_path = Some("root.stale".into());
    match store.save(&mut stale) {
        Err(StoreError::Conflict {
            id: cid,
            expected,
            found,
        }) => {
            assert_eq!((cid.as_str(), expected, found), (id.as_str(), 1, Some(2)));
        }
        other => panic!("a stale save must conflict, got {other:?}"),
    }
    assert_eq!(
        stale.version, 1,
        "a lost CAS leaves the caller's version unchanged"
    );
    let stored = store.load(&id).unwrap().unwrap();
    assert_eq!(stored.version, 2);
    assert_eq!(
        stored.active_path.as_deref(),
        Some("root.b"),
        "the winner's write stays"
    );

    // A fresh object for an existing id is stale too (version 0 only inserts).
    let mut again = Execution::new(&id, "def");
    assert_eq!(code(store.save(&mut again)), "CONFLICT");

    // An unknown id at a version above 0 is a conflict with nothing found, not an insert.
    let mut ghost = Execution::new(format!("{ns}ghost"), "def");
    ghost.version = 3;
    match store.commit(&mut ghost, &Effects::new()) {
        Err(StoreError::Conflict {
            found: None,
            expected: 3,
            ..
        }) => {}
        other => panic!("expected a conflict with found None, got {other:?}"),
    }
    assert!(store.load(&ghost.id).unwrap().is_none());
}

/// Every field, including those a newer engine adds, survives a write and a read, in order.
pub fn save_round_trips_every_field(store: &dyn ExecutionStore) {
    let ns = scope("roundtrip");
    let mut exe = Execution::new(format!("{ns}full"), "orders");
    exe.definition_fqn = Some("shop.Orders".into());
    exe.root_path = "root".into();
    exe.status = Status::Failed;
    exe.outcome = Some("failed".into());
    exe.error = Some("ValueError: boom — ünïcode".into());
    exe.active_path = Some("root.pay".into());
    exe.history = obj(json!({"root.z": "root.z.b", "root.a": "root.a.c"}));
    exe.context =
        obj(json!({"zeta": 1, "alpha": [1.5, 0.1, 1e-7, 1e20, "é😀"], "nested": {"b": null, "a": true}}));
    exe.processed_events = 7;
    exe.priority = 4;
    exe.parent_id = Some(format!("{ns}parent"));
    exe.child_id = Some("region-1".into());
    let mut deferred = Event::new("ev-1", "Later").with_data(obj(json!({"x": 1})));
    deferred.created_time = Some("2026-01-02T03:04:05.123456Z".into());
    deferred.extra.insert("trace_id".into(), "abc".into());
    exe.deferred.push(deferred);
    let mut child = ChildState {
        root_path: "root.r1".into(),
        finished: true,
        outcome: Some("ok".into()),
        result: obj(json!({"n": 2})),
        submachine: false,
        key: "r1".into(),
        extra: JsonObject::new(),
    };
    child.extra.insert("future".into(), json!([1, 2]));
    exe.children.insert(format!("{ns}full:root.r1:0"), child);
    exe.invoke_seq.insert("root.fork".into(), 2);
    exe.created_at = Some(1_700_000_000.25);
    exe.updated_at = Some(1_700_000_100.5);
    exe.finished_at = Some(1_700_000_100.5);
    exe.expires_at = Some(1_700_086_400.0);
    exe.extra.insert("added_in_harel_1_0".into(), json!({"k": "v"}));

    let original = exe.clone();
    store.save(&mut exe).unwrap();
    let loaded = store.load(&exe.id).unwrap().expect("stored");
    let mut expected = original;
    expected.version = 1;
    assert_eq!(loaded, expected);
    assert_eq!(
        loaded.to_json(),
        expected.to_json(),
        "field and key order survive"
    );
}

/// One commit applies every effect: outbox rows (seqs returned in order), the dedupe
/// marker, timers, spawns and the trace step.
pub fn commit_applies_every_effect(store: &dyn ExecutionStore) {
    let ns = scope("effects");
    let mut exe = created(store, &format!("{ns}a"), "def");
    bump(&mut exe);
    let to_self = Event::new(format!("{ns}out-1"), "Progress").with_data(obj(json!({"n": 1})));
    let broadcast = Event::new(format!("{ns}out-2"), "Broadcast");
    let effects = Effects::new()
        .emit(Some(&exe.id), to_self.clone())
        .emit(None, broadcast.clone())
        .processed(format!("{ns}in-1"))
        .schedule("root.a.timeout", 1234.5)
        .spawn(
            format!("{ns}a:root.fork:0"),
            "root.fork.r1",
            obj(json!({"seed": "é", "n": 0.1})),
        )
        .trace(obj(
            json!({"event_kind": "Go", "from_path": "root.a", "to_path": "root.b", "actions": ["x"]}),
        ));
    let seqs = store.commit(&mut exe, &effects).unwrap();
    assert_eq!(exe.version, 2);
    assert_eq!(seqs.len(), 2);
    assert!(seqs[0] < seqs[1], "outbox seqs follow emit order");

    let outbox: Vec<OutboxEntry> = all_outbox(store)
        .into_iter()
        .filter(|e| seqs.contains(&e.seq))
        .collect();
    assert_eq!(outbox.len(), 2);
    assert_eq!(
        (outbox[0].target_id.as_deref(), &outbox[0].event),
        (Some(exe.id.as_str()), &to_self)
    );
    assert_eq!(
        (outbox[1].target_id.as_deref(), &outbox[1].event),
        (None, &broadcast)
    );
    assert!(store.is_processed(&exe.id, &format!("{ns}in-1")).unwrap());
    let timers: Vec<DueTimer> = store
        .due_timers(2000.0, None, MAX_PAGE)
        .unwrap()
        .into_iter()
        .filter(|t| t.execution_id == exe.id)
        .collect();
    assert_eq!(
        timers,
        vec![DueTimer {
            execution_id: exe.id.clone(),
            path: "root.a.timeout".into(),
            fire_at: 1234.5
        }]
    );
    let spawns: Vec<SpawnEntry> = all_spawns(store)
        .into_iter()
        .filter(|s| s.parent_id == exe.id)
        .collect();
    assert_eq!(spawns.len(), 1);
    assert_eq!(spawns[0].child_id, format!("{ns}a:root.fork:0"));
    assert_eq!(spawns[0].root_path, "root.fork.r1");
    assert_eq!(spawns[0].context, obj(json!({"seed": "é", "n": 0.1})));
    let trace = store.read_trace(&exe.id).unwrap();
    assert_eq!(trace.len(), 1);
    assert_eq!(trace[0]["index"], json!(0));
    assert_eq!(trace[0]["to_path"], json!("root.b"));
    assert_eq!(
        store.load(&exe.id).unwrap().unwrap(),
        exe,
        "the stored state is the committed one"
    );
}

/// A commit that loses the CAS leaves no outbox, dedupe, timer, spawn or trace row, and
/// the store stays writable.
pub fn conflicting_commit_changes_nothing(store: &dyn ExecutionStore) {
    let ns = scope("conflict");
    let mut exe = created(store, &format!("{ns}a"), "def");
    let mut stale = exe.clone();
    exe.active_path = Some("root.won".into());
    store.save(&mut exe).unwrap();
    let before = snapshot(store, &[(&exe.id, &format!("{ns}in"))]);

    bump(&mut stale);
    let effects = Effects::new()
        .emit(Some(&exe.id), Event::new(format!("{ns}out"), "Lost"))
        .processed(format!("{ns}in"))
        .schedule("root.t", 10.0)
        .spawn(format!("{ns}child"), "root.r", JsonObject::new())
        .trace(obj(json!({"event_kind": "Lost"})));
    assert_eq!(code(store.commit(&mut stale, &effects)), "CONFLICT");
    assert_eq!(stale.version, 1);
    assert_eq!(
        snapshot(store, &[(&exe.id, &format!("{ns}in"))]),
        before,
        "a lost commit changes nothing"
    );

    // The store is not left locked or mid-transaction: the winner can commit the same effects.
    bump(&mut exe);
    let seqs = store.commit(&mut exe, &effects).unwrap();
    assert_eq!(seqs.len(), 1);
    assert!(store.is_processed(&exe.id, &format!("{ns}in")).unwrap());
}

/// `commit_batch` gives every item the outcome `commit` would give it, in order: new
/// executions are inserted, a stale item is a `Conflict` that leaves no row of any kind, an
/// invalid item is `InvalidInput` and writes nothing, a later item of an execution sees an
/// earlier one's write, outbox seqs climb across the batch, and only the committed items'
/// versions move.
pub fn commit_batch_per_item_outcome(store: &dyn ExecutionStore) {
    let ns = scope("batch");
    assert!(
        store.commit_batch(&mut []).unwrap().is_empty(),
        "an empty batch is fine"
    );

    let mut won = created(store, &format!("{ns}won"), "def");
    let mut stale = won.clone();
    won.active_path = Some("root.won".into());
    store.save(&mut won).unwrap();
    bump(&mut stale);
    let twice = created(store, &format!("{ns}twice"), "def");
    let mut bad = created(store, &format!("{ns}bad"), "def");
    bump(&mut bad);
    let mut new_a = Execution::new(format!("{ns}new-a"), "def");
    new_a.status = Status::Running;
    let new_b = Execution::new(format!("{ns}new-b"), "def");
    let mut twice_1 = twice.clone();
    bump(&mut twice_1);
    let mut twice_2 = twice_1.clone();
    twice_2.version = 2;
    bump(&mut twice_2);
    let (won_id, twice_id, bad_id) = (won.id.clone(), twice.id.clone(), bad.id.clone());
    let (a_id, b_id) = (new_a.id.clone(), new_b.id.clone());
    let ev = |name: &str| Event::new(format!("{ns}{name}"), "E");

    let mut items = vec![
        BatchItem::new(
            new_a,
            Effects::new()
                .emit(Some(&a_id), ev("a-1"))
                .emit(None, ev("a-2"))
                .processed(format!("{ns}a-in"))
                .schedule("root.t", 5.0)
                .trace(obj(json!({"n": "a"}))),
        ),
        BatchItem::new(
            stale,
            Effects::new()
                .emit(Some(&won_id), ev("stale-out"))
                .processed(format!("{ns}stale-in"))
                .schedule("root.stale", 6.0)
                .spawn(format!("{ns}stale-child"), "root.c", JsonObject::new())
                .trace(obj(json!({"n": "stale"}))),
        ),
        BatchItem::new(
            twice_1,
            Effects::new()
                .emit(Some(&twice_id), ev("t-1"))
                .processed(format!("{ns}t-in-1"))
                .schedule("root.t", 7.0)
                .trace(obj(json!({"n": 1}))),
        ),
        BatchItem::new(
            bad,
            Effects::new()
                .emit(None, ev("bad-out"))
                .processed(format!("{ns}bad-in"))
                .schedule("root.ok", 8.0)
                .schedule("root.bad", f64::NAN)
                .spawn(format!("{ns}bad-child"), "root.c", JsonObject::new())
                .trace(obj(json!({"n": "bad"}))),
        ),
        BatchItem::new(
            twice_2,
            Effects::new()
                .emit(Some(&twice_id), ev("t-2"))
                .processed(format!("{ns}t-in-2"))
                .cancel("root.t")
                .trace(obj(json!({"n": 2}))),
        ),
        BatchItem::new(
            new_b,
            Effects::new().emit(None, ev("b-1")).spawn(
                format!("{ns}b-child"),
                "root.f",
                obj(json!({"k": 1})),
            ),
        ),
    ];
    let results = store
        .commit_batch(&mut items)
        .expect("the batch as a whole commits");
    assert_eq!(results.len(), items.len(), "one result per item");
    match &results[1] {
        Err(StoreError::Conflict { id, expected, found }) => {
            assert_eq!((id.as_str(), *expected, *found), (won_id.as_str(), 1, Some(2)));
        }
        other => panic!("the stale item must conflict, got {other:?}"),
    }
    match &results[3] {
        Err(StoreError::InvalidInput { field, .. }) => assert!(field.contains("timers"), "{field}"),
        other => panic!("the invalid item must be InvalidInput, got {other:?}"),
    }
    let mut seqs = Vec::new();
    for (k, want) in [(0, 2), (2, 1), (4, 1), (5, 1)] {
        match &results[k] {
            Ok(got) => {
                assert_eq!(got.len(), want, "item {k}: one seq per emit");
                seqs.extend(got.iter().copied());
            }
            Err(e) => panic!("item {k} must commit, got {e}"),
        }
    }
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "seqs climb across the batch, in item and emit order: {seqs:?}"
    );
    let versions: Vec<i64> = items.iter().map(|item| item.execution.version).collect();
    assert_eq!(
        versions,
        [1, 1, 2, 1, 3, 1],
        "only committed items carry a new version"
    );

    // What is stored.
    let stored_won = store.load(&won_id).unwrap().unwrap();
    assert_eq!(
        (stored_won.version, stored_won.active_path.as_deref()),
        (2, Some("root.won"))
    );
    assert_eq!(store.load(&twice_id).unwrap().unwrap(), items[4].execution);
    assert_eq!(store.load(&a_id).unwrap().unwrap(), items[0].execution);
    assert_eq!(store.load(&b_id).unwrap().unwrap(), items[5].execution);
    assert_eq!(store.load(&bad_id).unwrap().unwrap().version, 1);

    let outbox: Vec<(i64, String)> = all_outbox(store)
        .into_iter()
        .filter(|e| e.event.id.starts_with(&ns))
        .map(|e| (e.seq, e.event.id[ns.len()..].to_owned()))
        .collect();
    let want: Vec<(i64, String)> = seqs
        .iter()
        .zip(["a-1", "a-2", "t-1", "t-2", "b-1"])
        .map(|(seq, name)| (*seq, name.to_owned()))
        .collect();
    assert_eq!(outbox, want, "the committed items' outbox rows, and only theirs");
    assert!(store.is_processed(&a_id, &format!("{ns}a-in")).unwrap());
    assert!(store.is_processed(&twice_id, &format!("{ns}t-in-1")).unwrap());
    assert!(store.is_processed(&twice_id, &format!("{ns}t-in-2")).unwrap());
    assert!(!store.is_processed(&won_id, &format!("{ns}stale-in")).unwrap());
    assert!(!store.is_processed(&bad_id, &format!("{ns}bad-in")).unwrap());
    let timers: Vec<(String, String)> = store
        .due_timers(1e9, None, MAX_PAGE)
        .unwrap()
        .into_iter()
        .filter(|t| t.execution_id.starts_with(&ns))
        .map(|t| (t.execution_id, t.path))
        .collect();
    assert_eq!(
        timers,
        [(a_id.clone(), "root.t".to_string())],
        "the stale and invalid items armed nothing; the second step of `twice` cancelled the first's"
    );
    let spawns: Vec<String> = all_spawns(store)
        .into_iter()
        .filter(|s| s.child_id.starts_with(&ns))
        .map(|s| s.child_id)
        .collect();
    assert_eq!(spawns, [format!("{ns}b-child")]);
    assert!(
        store.read_trace(&won_id).unwrap().is_empty(),
        "no trace of the stale item"
    );
    assert!(
        store.read_trace(&bad_id).unwrap().is_empty(),
        "no trace of the invalid item"
    );
    let trace = store.read_trace(&twice_id).unwrap();
    assert_eq!(
        trace
            .iter()
            .map(|s| (s["index"].clone(), s["n"].clone()))
            .collect::<Vec<_>>(),
        [(json!(0), json!(1)), (json!(1), json!(2))]
    );
    assert_eq!(store.read_trace(&a_id).unwrap().len(), 1);

    // The losers can retry as plain commits, and a later batch's seqs are higher still.
    let mut retry = store.load(&won_id).unwrap().unwrap();
    let mut again = vec![BatchItem::new(
        retry.clone(),
        Effects::new().emit(None, ev("retry")),
    )];
    let result = store.commit_batch(&mut again).unwrap();
    assert!(result[0].as_ref().unwrap()[0] > *seqs.last().unwrap());
    assert_eq!(again[0].execution.version, 3);
    retry.version = 3;
    assert_eq!(store.load(&won_id).unwrap().unwrap(), retry);
}

/// Several threads each load, increment a counter in the context and commit, retrying on
/// `Conflict`: the counter ends at the number of increments and every increment's effects
/// are there exactly once.
#[cfg(not(target_arch = "wasm32"))]
pub fn cas_race(store: &dyn ExecutionStore) {
    const THREADS: usize = 4;
    const EACH: usize = 25;
    let ns = scope("race");
    let id = format!("{ns}hot");
    created(store, &id, "def");
    let conflicts = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (id, ns, conflicts) = (&id, &ns, &conflicts);
            s.spawn(move || {
                for i in 0..EACH {
                    loop {
                        let mut exe = store.load(id).unwrap().expect("stored");
                        bump(&mut exe);
                        let effects = Effects::new()
                            .processed(format!("{ns}in-{t}-{i}"))
                            .emit(Some(id), Event::new(format!("{ns}out-{t}-{i}"), "Inc"));
                        match store.commit(&mut exe, &effects) {
                            Ok(_) => break,
                            Err(StoreError::Conflict { .. }) => {
                                conflicts.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(other) => panic!("only conflicts may fail a racing commit: {other}"),
                        }
                    }
                }
            });
        }
    });
    let exe = store.load(&id).unwrap().unwrap();
    let total = (THREADS * EACH) as i64;
    assert_eq!(
        exe.context["counter"],
        json!(total),
        "no increment lost or doubled"
    );
    assert_eq!(exe.version, total + 1);
    let mine = all_outbox(store)
        .into_iter()
        .filter(|e| e.target_id.as_deref() == Some(id.as_str()))
        .count();
    assert_eq!(
        mine as i64, total,
        "one outbox row per winning commit, none from losers"
    );
    for t in 0..THREADS {
        for i in 0..EACH {
            assert!(store.is_processed(&id, &format!("{ns}in-{t}-{i}")).unwrap());
        }
    }
}

/// Scheduling a timer again replaces its fire time; the sweep's delete is guarded on the
/// fire time it saw, so a re-armed timer survives a stale delete; cancel removes it.
pub fn timers_upsert_and_guarded_delete(store: &dyn ExecutionStore) {
    let ns = scope("timers");
    let mut exe = created(store, &format!("{ns}a"), "def");
    let id = exe.id.clone();
    let mine = |now: f64| -> Vec<DueTimer> {
        store
            .due_timers(now, None, MAX_PAGE)
            .unwrap()
            .into_iter()
            .filter(|t| t.execution_id == id)
            .collect()
    };
    store
        .commit(
            &mut exe,
            &Effects::new().schedule("root.t", 100.0).schedule("root.u", 50.0),
        )
        .unwrap();
    let due = mine(100.0);
    assert_eq!(
        due.iter()
            .map(|t| (t.path.as_str(), t.fire_at))
            .collect::<Vec<_>>(),
        [("root.u", 50.0), ("root.t", 100.0)],
        "due timers come soonest first, and fire_at == now is due"
    );
    assert_eq!(mine(49.0).len(), 0);

    store
        .commit(&mut exe, &Effects::new().schedule("root.t", 200.0))
        .unwrap();
    assert_eq!(mine(150.0).len(), 1, "re-arming replaced the earlier fire time");
    assert_eq!(
        mine(1e9)
            .iter()
            .filter(|t| t.path == "root.t")
            .map(|t| t.fire_at)
            .collect::<Vec<_>>(),
        [200.0]
    );

    assert!(
        !store.delete_timer(&exe.id, "root.t", 100.0).unwrap(),
        "a stale sweep deletes nothing"
    );
    assert_eq!(mine(1e9).len(), 2, "the re-armed timer survived");
    assert!(store.delete_timer(&exe.id, "root.t", 200.0).unwrap());
    assert!(
        !store.delete_timer(&exe.id, "root.t", 200.0).unwrap(),
        "already deleted"
    );
    store
        .commit(
            &mut exe,
            &Effects::new().cancel("root.u").cancel("root.never-armed"),
        )
        .unwrap();
    assert!(mine(1e9).is_empty(), "cancel disarms");

    // "Every timer" is every armed timer, however far off: past the year 9999 (2e12), as far
    // as a double goes. The fire times come back exactly, so the guarded delete matches them.
    store
        .commit(
            &mut exe,
            &Effects::new()
                .schedule("far.1e300", 1e300)
                .schedule("far.max", f64::MAX)
                .schedule("far.2e12", 2e12),
        )
        .unwrap();
    let far = [("far.2e12", 2e12), ("far.1e300", 1e300), ("far.max", f64::MAX)];
    assert_eq!(
        mine(ALL_TIMERS)
            .iter()
            .map(|t| (t.path.as_str(), t.fire_at))
            .collect::<Vec<_>>(),
        far,
        "due_timers(ALL_TIMERS) lists every timer, soonest first"
    );
    assert_eq!(mine(1e300).len(), 2, "fire_at == now is due, however large");
    assert!(mine(1e12).is_empty());
    for (path, fire_at) in far {
        assert!(store.delete_timer(&exe.id, path, fire_at).unwrap(), "{path}");
    }
    assert!(mine(ALL_TIMERS).is_empty());

    // The limit keeps the soonest.
    store
        .commit(
            &mut exe,
            &Effects::new()
                .schedule("p3", 3.0)
                .schedule("p1", 1.0)
                .schedule("p2", 2.0),
        )
        .unwrap();
    let firsts: Vec<f64> = store
        .due_timers(1e9, None, 2)
        .unwrap()
        .iter()
        .map(|t| t.fire_at)
        .collect();
    assert!(
        firsts.len() == 2 && firsts[0] <= firsts[1] && firsts[1] <= 2.0,
        "got {firsts:?}"
    );

    // Paging with `after` walks ties on fire_at in (execution, path) order, without gaps or
    // repeats.
    let mut other = created(store, &format!("{ns}b"), "def");
    store
        .commit(
            &mut other,
            &Effects::new().schedule("p1", 1.0).schedule("p0", 2.0),
        )
        .unwrap();
    store
        .commit(&mut exe, &Effects::new().schedule("p0", 2.0))
        .unwrap();
    let ours = |t: &DueTimer| t.execution_id.starts_with(&ns);
    let whole: Vec<DueTimer> = store
        .due_timers(1e9, None, MAX_PAGE)
        .unwrap()
        .into_iter()
        .filter(ours)
        .collect();
    let keys: Vec<(f64, &str, &str)> = whole
        .iter()
        .map(|t| (t.fire_at, &t.execution_id[ns.len()..], t.path.as_str()))
        .collect();
    assert_eq!(
        keys,
        [
            (1.0, "a", "p1"),
            (1.0, "b", "p1"),
            (2.0, "a", "p0"),
            (2.0, "a", "p2"),
            (2.0, "b", "p0"),
            (3.0, "a", "p3")
        ]
    );
    for size in [1, 2, 4] {
        let mut paged: Vec<DueTimer> = Vec::new();
        for page in timer_pages(store, 1e9, None, size) {
            let page = page.unwrap();
            assert!(page.len() <= size);
            paged.extend(page);
        }
        assert_eq!(
            paged.into_iter().filter(ours).collect::<Vec<_>>(),
            whole,
            "pages of {size}"
        );
    }
}

/// The trace keeps the last `trace_max` steps; their index keeps climbing past evictions
/// and is stamped on read (over any `index` the step carried).
pub fn trace_ring_keeps_last_trace_max(store: &dyn ExecutionStore) {
    let ns = scope("trace");
    let mut exe = created(store, &format!("{ns}a"), "def");
    let max = store.trace_max().map_or(30, |m| m as usize);
    let total = max + 7;
    for n in 0..total {
        let step = obj(json!({"event_kind": "Tick", "n": n, "index": 999_999}));
        if n % 3 == 0 {
            assert_eq!(
                store.append_trace(&exe.id, &step).unwrap(),
                n as i64,
                "append_trace returns the index"
            );
        } else {
            store.commit(&mut exe, &Effects::new().trace(step)).unwrap();
        }
    }
    let trace = store.read_trace(&exe.id).unwrap();
    let kept = if store.trace_max().is_some() { max } else { total };
    assert_eq!(trace.len(), kept);
    for (k, step) in trace.iter().enumerate() {
        let n = total - kept + k;
        assert_eq!(step["index"], json!(n), "index climbs and is stamped on read");
        assert_eq!(
            step["n"],
            json!(n),
            "the step kept is the one written at that index"
        );
    }
    assert!(store.read_trace(&format!("{ns}none")).unwrap().is_empty());
}

/// Filters and pagination: every filter combination, paged at several sizes, reassembles
/// exactly the matching set, ordered, and terminates.
pub fn listing_filters_and_pagination(store: &dyn ExecutionStore) {
    let ns = scope("list");
    let (d1, d2) = (format!("{ns}orders"), format!("{ns}payments"));
    let mut written = Vec::new();
    for i in 0..29 {
        let definition = if i % 3 == 0 { &d2 } else { &d1 };
        let mut exe = Execution::new(format!("{ns}{:03}", (i * 17) % 29), definition);
        exe.status = Status::ALL[i % Status::ALL.len()];
        exe.active_path = Some(format!("root.s{i}"));
        exe.outcome = (exe.status == Status::Done).then(|| "ok".to_string());
        if i % 4 == 1 {
            exe.parent_id = Some(format!("{ns}{:03}", 0));
        }
        exe.finished_at = Some(i as f64);
        exe.updated_at = Some(1000.0 + i as f64);
        store.save(&mut exe).unwrap();
        if i % 5 == 0 {
            store.save(&mut exe).unwrap(); // version 2 for some: the summary reports it
        }
        written.push(exe);
    }
    let queries = [
        ListQuery::new().definition(&d1),
        ListQuery::new().definition(&d2),
        ListQuery::new()
            .definition(&d1)
            .status([Status::Running, Status::Done]),
        ListQuery::new().definition(&d1).roots_only(true),
        ListQuery::new()
            .definition(&d2)
            .status([Status::Failed])
            .roots_only(true),
        ListQuery::new().definition(&d1).status([]),
    ];
    for query in queries {
        let mut expected: Vec<&Execution> = written
            .iter()
            .filter(|e| query.matches(e.status, &e.definition_id, e.parent_id.as_deref()))
            .collect();
        expected.sort_by(|a, b| a.id.cmp(&b.id));
        let expected: Vec<crate::ExecutionSummary> =
            expected.into_iter().map(crate::ExecutionSummary::of).collect();
        for limit in [1, 2, 3, 7, 100] {
            let got = all_pages(store, query.clone().limit(limit));
            assert_eq!(got, expected, "query {query:?} at limit {limit}");
        }
    }
    // Without a definition filter other data may be present: ours must all be there, and
    // everything returned must match the filter.
    let running = all_pages(store, ListQuery::new().status([Status::Running]).limit(4));
    assert!(running.iter().all(|s| s.status == Status::Running));
    let ids: BTreeSet<&str> = running.iter().map(|s| s.id.as_str()).collect();
    for exe in written.iter().filter(|e| e.status == Status::Running) {
        assert!(ids.contains(exe.id.as_str()));
    }
    let roots = all_pages(store, ListQuery::new().roots_only(true).limit(MAX_PAGE));
    assert!(roots.iter().all(|s| s.parent_id.is_none()));
    // A cursor made after an id resumes strictly after it.
    let after = all_pages(
        store,
        ListQuery::new()
            .definition(&d1)
            .cursor(Some(encode_cursor(&format!("{ns}010")))),
    );
    assert!(after.iter().all(|s| s.id.as_str() > format!("{ns}010").as_str()) && !after.is_empty());
}

/// `status_counts` counts what the listing returns, per status, under the same definition
/// and roots-only filters; a definition with nothing stored counts zeros; a bad definition id
/// is refused.
pub fn status_counts_match_the_listing(store: &dyn ExecutionStore) {
    let ns = scope("counts");
    let (d1, d2) = (format!("{ns}orders"), format!("{ns}payments"));
    for i in 0..23 {
        let definition = if i % 4 == 0 { &d2 } else { &d1 };
        let mut exe = Execution::new(format!("{ns}{i:03}"), definition);
        exe.status = Status::ALL[(i * 5) % Status::ALL.len()];
        if i % 3 == 1 {
            exe.parent_id = Some(format!("{ns}000"));
        }
        store.save(&mut exe).unwrap();
        if i % 6 == 0 {
            // A later write moves the status: the count follows the stored row.
            exe.status = Status::Done;
            store.save(&mut exe).unwrap();
        }
    }
    for (definition, roots_only) in [(&d1, false), (&d1, true), (&d2, false), (&d2, true)] {
        let listed = all_pages(
            store,
            ListQuery::new()
                .definition(definition)
                .roots_only(roots_only)
                .limit(7),
        );
        let counts = store.status_counts(Some(definition), roots_only).unwrap();
        let statuses: Vec<Status> = counts.iter().map(|(s, _)| *s).collect();
        assert_eq!(statuses, Status::ALL, "one entry per status, in order");
        assert_eq!(counts.iter().map(|(_, n)| n).sum::<u64>(), listed.len() as u64);
        for (status, n) in counts {
            let expected = listed.iter().filter(|s| s.status == status).count() as u64;
            assert_eq!(n, expected, "{status} of {definition} (roots only: {roots_only})");
        }
    }
    let nothing = store.status_counts(Some(&format!("{ns}none")), false).unwrap();
    assert!(nothing.iter().all(|(_, n)| *n == 0));
    // Other checks may share the store: every status counts at least ours.
    let everything = store.status_counts(None, false).unwrap();
    let ours = store.status_counts(Some(&d1), false).unwrap();
    for ((status, all), (_, mine)) in everything.iter().zip(&ours) {
        assert!(all >= mine, "{status}: {all} in the store, {mine} of {d1}");
    }
    assert_eq!(code(store.status_counts(Some(""), false)), "INVALID_INPUT");
}

/// `change_token` moves with each kind of write a monitor shows: a new execution, a commit
/// with effects, an outbox ack, a spawn ack and a timer removal. (Equal tokens are not
/// asserted: other checks may write to a shared store meanwhile.)
pub fn change_token_moves_with_every_write(store: &dyn ExecutionStore) {
    let ns = scope("token");
    let moved = |what: &str, write: &mut dyn FnMut()| {
        let before = store.change_token().unwrap();
        write();
        let after = store.change_token().unwrap();
        assert_ne!(before, after, "the token did not move after {what}");
    };
    let mut exe = Execution::new(format!("{ns}a"), "def");
    moved("a new execution", &mut || store.save(&mut exe).unwrap());
    let mut seqs = Vec::new();
    moved("a commit", &mut || {
        let effects = Effects::new()
            .emit(None, Event::new(format!("{ns}ev"), "Ping"))
            .schedule("root.wait", 1_000.0)
            .trace(obj(json!({"event_kind": "Ping"})));
        seqs = store.commit(&mut exe, &effects).unwrap();
    });
    moved("an outbox ack", &mut || store.ack_outbox(seqs[0]).unwrap());
    moved("a timer removal", &mut || {
        assert!(store.delete_timer(&exe.id, "root.wait", 1_000.0).unwrap());
    });
}

/// A cursor the store did not make and a page size out of range are refused.
pub fn invalid_cursor_and_limits_rejected(store: &dyn ExecutionStore) {
    for cursor in ["not a cursor!", "", "AAAA", "eyJvZmZzZXQiOiAxMH0"] {
        let query = ListQuery::new().cursor(Some(cursor.to_string()));
        assert_eq!(
            code(store.list_executions(&query)),
            "INVALID_INPUT",
            "cursor {cursor:?}"
        );
    }
    for limit in [0, MAX_PAGE + 1] {
        assert_eq!(
            code(store.list_executions(&ListQuery::new().limit(limit))),
            "INVALID_INPUT"
        );
        assert_eq!(code(store.pending_outbox(None, limit)), "INVALID_INPUT");
        assert_eq!(code(store.pending_spawns(None, limit)), "INVALID_INPUT");
        assert_eq!(code(store.due_timers(0.0, None, limit)), "INVALID_INPUT");
    }
}

/// The outbox comes out oldest first, pages with `after`, and an ack removes exactly one
/// entry (a second ack of it is `NotFound`).
pub fn outbox_oldest_first_and_ack(store: &dyn ExecutionStore) {
    let ns = scope("outbox");
    let mut a = created(store, &format!("{ns}a"), "def");
    let mut b = created(store, &format!("{ns}b"), "def");
    let mut emitted = Vec::new();
    for n in 0..6 {
        let exe = if n % 2 == 0 { &mut a } else { &mut b };
        let event = Event::new(format!("{ns}ev-{n}"), "Ping").with_data(obj(json!({"n": n})));
        let target = exe.id.clone();
        let seqs = store
            .commit(exe, &Effects::new().emit(Some(&target), event))
            .unwrap();
        emitted.push(seqs[0]);
    }
    let ours = |entries: Vec<OutboxEntry>| -> Vec<OutboxEntry> {
        entries
            .into_iter()
            .filter(|e| e.event.id.starts_with(&ns))
            .collect()
    };
    let all = ours(all_outbox(store));
    assert_eq!(
        all.iter().map(|e| e.seq).collect::<Vec<_>>(),
        emitted,
        "oldest first, in commit order"
    );
    for (n, entry) in all.iter().enumerate() {
        assert_eq!(entry.event.data["n"], json!(n));
    }
    // Paging with `after` and a small limit reassembles the same list.
    let mut paged = Vec::new();
    for page in outbox_pages(store, None, 2) {
        let page = page.unwrap();
        assert!(page.len() <= 2);
        paged.extend(page);
    }
    assert_eq!(ours(paged), all);

    store.ack_outbox(emitted[1]).unwrap();
    let left: Vec<i64> = ours(all_outbox(store)).iter().map(|e| e.seq).collect();
    assert_eq!(left, [emitted[0], emitted[2], emitted[3], emitted[4], emitted[5]]);
    assert_eq!(code(store.ack_outbox(emitted[1])), "NOT_FOUND");
    assert_eq!(code(store.ack_outbox(0)), "INVALID_INPUT");
    // Sequence numbers are never reused, even for the newest entry once acked.
    store.ack_outbox(emitted[5]).unwrap();
    let seqs = store
        .commit(
            &mut a,
            &Effects::new().emit(None, Event::new(format!("{ns}ev-6"), "Ping")),
        )
        .unwrap();
    assert!(seqs[0] > emitted[5]);
}

/// `ack_outbox_many` removes the entries it names that are still there and returns how many
/// it removed: a seq acked before, named twice or never made is skipped. A seq below 1 is
/// `InvalidInput` and nothing is removed.
pub fn ack_outbox_many_skips_missing(store: &dyn ExecutionStore) {
    let ns = scope("ackmany");
    let mut exe = created(store, &format!("{ns}a"), "def");
    let id = exe.id.clone();
    let effects = (0..5).fold(Effects::new(), |effects, n| {
        effects.emit(Some(&id), Event::new(format!("{ns}e{n}"), "E"))
    });
    let seqs = store.commit(&mut exe, &effects).unwrap();
    let left = || -> Vec<i64> {
        all_outbox(store)
            .into_iter()
            .filter(|e| e.event.id.starts_with(&ns))
            .map(|e| e.seq)
            .collect()
    };
    store.ack_outbox(seqs[1]).unwrap();
    assert_eq!(store.ack_outbox_many(&[]).unwrap(), 0);
    let never = i64::MAX;
    assert_eq!(
        store
            .ack_outbox_many(&[seqs[0], seqs[1], never, seqs[2], seqs[2]])
            .unwrap(),
        2,
        "only the entries still there count"
    );
    assert_eq!(left(), [seqs[3], seqs[4]]);
    assert_eq!(code(store.ack_outbox(seqs[0])), "NOT_FOUND");
    assert_eq!(
        store.ack_outbox_many(&[seqs[0], seqs[2]]).unwrap(),
        0,
        "re-acking a drained batch removes nothing"
    );
    assert_eq!(code(store.ack_outbox_many(&[seqs[3], 0])), "INVALID_INPUT");
    assert_eq!(code(store.ack_outbox_many(&[-5, seqs[4]])), "INVALID_INPUT");
    assert_eq!(left(), [seqs[3], seqs[4]], "a refused batch removes nothing");
    assert_eq!(store.ack_outbox_many(&[seqs[4], seqs[3]]).unwrap(), 2);
    assert!(left().is_empty());
}

/// Spawn intents come out oldest first with their parent, root path and context; an ack
/// removes exactly one.
pub fn spawns_oldest_first_and_ack(store: &dyn ExecutionStore) {
    let ns = scope("spawns");
    let mut parent = created(store, &format!("{ns}p"), "def");
    for r in 0..3 {
        let effects = Effects::new()
            .spawn(
                format!("{ns}p:root.f:{r}:a"),
                "root.f.a",
                obj(json!({"r": r, "side": "a"})),
            )
            .spawn(
                format!("{ns}p:root.f:{r}:b"),
                "root.f.b",
                obj(json!({"r": r, "side": "b"})),
            );
        store.commit(&mut parent, &effects).unwrap();
    }
    let mine: Vec<SpawnEntry> = all_spawns(store)
        .into_iter()
        .filter(|s| s.parent_id == parent.id)
        .collect();
    let children: Vec<String> = mine.iter().map(|s| s.child_id.clone()).collect();
    let want: Vec<String> = (0..3)
        .flat_map(|r| ["a", "b"].map(|side| format!("{ns}p:root.f:{r}:{side}")))
        .collect();
    assert_eq!(
        children, want,
        "oldest first, in the order each commit listed them"
    );
    assert!(mine.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(mine[3].context, obj(json!({"r": 1, "side": "b"})));
    assert_eq!(mine[3].root_path, "root.f.b");
    store.ack_spawn(mine[0].seq).unwrap();
    assert_eq!(code(store.ack_spawn(mine[0].seq)), "NOT_FOUND");
    let left = all_spawns(store)
        .into_iter()
        .filter(|s| s.parent_id == parent.id)
        .count();
    assert_eq!(left, 5);
}

/// Recording the same processed event twice is harmless, and `load_for_event` reads the
/// execution and its marker together.
pub fn dedupe_is_idempotent(store: &dyn ExecutionStore) {
    let ns = scope("dedupe");
    let mut exe = created(store, &format!("{ns}a"), "def");
    let other = created(store, &format!("{ns}b"), "def");
    let event = format!("{ns}in-1");
    assert!(!store.is_processed(&exe.id, &event).unwrap());
    assert_eq!(
        store.load_for_event(&exe.id, &event).unwrap(),
        (Some(exe.clone()), false)
    );
    store.commit(&mut exe, &Effects::new().processed(&event)).unwrap();
    store.commit(&mut exe, &Effects::new().processed(&event)).unwrap();
    assert!(store.is_processed(&exe.id, &event).unwrap());
    assert!(
        !store.is_processed(&other.id, &event).unwrap(),
        "markers are per execution"
    );
    assert_eq!(
        store.load_for_event(&exe.id, &event).unwrap(),
        (Some(exe.clone()), true)
    );
    assert_eq!(
        store.load_for_event(&exe.id, &format!("{ns}in-2")).unwrap(),
        (Some(exe.clone()), false)
    );
    assert_eq!(
        store.load_for_event(&format!("{ns}none"), &event).unwrap(),
        (None, false)
    );
}

/// `ids_with_prefix` matches the prefix literally: `_` and `%` are not wildcards and case
/// matters.
pub fn ids_with_prefix_is_literal(store: &dyn ExecutionStore) {
    let ns = scope("prefix");
    for suffix in ["p_1", "p_1:root.r:0", "pX1", "p%2", "P_3", "q_1"] {
        created(store, &format!("{ns}{suffix}"), "def");
    }
    let got = store.ids_with_prefix(&format!("{ns}p_")).unwrap();
    assert_eq!(got, [format!("{ns}p_1"), format!("{ns}p_1:root.r:0")]);
    assert_eq!(
        store.ids_with_prefix(&format!("{ns}p%")).unwrap(),
        [format!("{ns}p%2")]
    );
    assert_eq!(
        store.ids_with_prefix(&format!("{ns}zzz")).unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(store.ids_with_prefix(&ns).unwrap().len(), 6);
}

/// `purge` at the stored version deletes the execution and everything keyed by it; at
/// another version it touches nothing; a stale copy cannot bring a purged execution back.
pub fn purge_removes_everything_keyed_by_it(store: &dyn ExecutionStore) {
    let ns = scope("purge");
    let mut exe = created(store, &format!("{ns}a"), "def");
    let mut keep = created(store, &format!("{ns}b"), "def");
    let effects = |target: &str| {
        Effects::new()
            .emit(Some(target), Event::new(format!("{target}-out"), "E"))
            .processed(format!("{target}-in"))
            .schedule("root.t", 5.0)
            .spawn(format!("{target}:c"), "root.c", JsonObject::new())
            .trace(obj(json!({"event_kind": "E"})))
    };
    let exe_id = exe.id.clone();
    let keep_id = keep.id.clone();
    store.commit(&mut exe, &effects(&exe_id)).unwrap();
    store.commit(&mut keep, &effects(&keep_id)).unwrap();
    let probes = [
        (exe_id.as_str(), format!("{exe_id}-in")),
        (keep_id.as_str(), format!("{keep_id}-in")),
    ];
    let probes: Vec<(&str, &str)> = probes.iter().map(|(a, b)| (*a, b.as_str())).collect();
    let before = snapshot(store, &probes);

    assert!(
        !store.purge(&exe.id, 1).unwrap(),
        "a moved-on execution is not purged"
    );
    assert_eq!(snapshot(store, &probes), before, "and nothing is touched");
    assert!(store.purge(&exe.id, 2).unwrap());
    assert!(store.load(&exe.id).unwrap().is_none());
    assert!(!store.is_processed(&exe.id, &format!("{exe_id}-in")).unwrap());
    assert!(store.read_trace(&exe.id).unwrap().is_empty());
    assert!(store
        .due_timers(1e9, None, MAX_PAGE)
        .unwrap()
        .iter()
        .all(|t| t.execution_id != exe.id));
    assert!(all_outbox(store)
        .iter()
        .all(|e| e.target_id.as_deref() != Some(exe_id.as_str())));
    assert!(all_spawns(store).iter().all(|s| s.parent_id != exe.id));
    // The other execution kept everything.
    assert!(store.is_processed(&keep.id, &format!("{keep_id}-in")).unwrap());
    assert_eq!(store.read_trace(&keep.id).unwrap().len(), 1);
    assert_eq!(
        all_outbox(store)
            .iter()
            .filter(|e| e.target_id.as_deref() == Some(keep_id.as_str()))
            .count(),
        1
    );
    assert_eq!(
        all_spawns(store)
            .iter()
            .filter(|s| s.parent_id == keep.id)
            .count(),
        1
    );

    assert!(
        !store.purge(&exe.id, 2).unwrap(),
        "purging what is gone returns false"
    );
    assert_eq!(
        code(store.save(&mut exe)),
        "CONFLICT",
        "a stale copy does not recreate it"
    );
    let mut reborn = Execution::new(&exe_id, "def");
    store.save(&mut reborn).unwrap();
    assert_eq!(reborn.version, 1, "a brand-new execution may reuse the id");
}

/// Bad input of every kind is a typed error and leaves the store exactly as it was.
pub fn bad_input_changes_nothing(store: &dyn ExecutionStore) {
    let ns = scope("bad");
    let mut exe = created(store, &format!("{ns}a"), "def");
    let id = exe.id.clone();
    store
        .commit(
            &mut exe,
            &Effects::new()
                .emit(Some(&id), Event::new(format!("{ns}e"), "E"))
                .processed(format!("{ns}in"))
                .schedule("root.t", 10.0)
                .spawn(format!("{ns}c"), "root.c", JsonObject::new())
                .trace(obj(json!({"event_kind": "E"}))),
        )
        .unwrap();
    let probe_event = format!("{ns}in");
    let probes = [(id.as_str(), probe_event.as_str())];
    let before = snapshot(store, &probes);
    let next = |f: &dyn Fn(&mut Execution)| {
        let mut e = exe.clone();
        bump(&mut e);
        f(&mut e);
        e
    };
    let commit = |mut e: Execution, effects: Effects| store.commit(&mut e, &effects).map(|_| ());
    let event_ok = || Event::new(format!("{ns}x"), "X");
    let huge = "x".repeat(MAX_DOCUMENT_BYTES + 1);

    let cases: Vec<(&str, &str, crate::Result<()>)> = vec![
        (
            "malformed JSON",
            "INVALID_INPUT",
            Execution::from_json("{not json").map(|_| ()),
        ),
        (
            "version as a string",
            "INVALID_INPUT",
            Execution::from_json(r#"{"id":"a","definition_id":"d","version":"1"}"#).map(|_| ()),
        ),
        (
            "unknown status",
            "INVALID_INPUT",
            Execution::from_json(r#"{"id":"a","definition_id":"d","status":"BOGUS"}"#).map(|_| ()),
        ),
        (
            "missing id",
            "INVALID_INPUT",
            Execution::from_json(r#"{"definition_id":"d"}"#).map(|_| ()),
        ),
        (
            "empty id",
            "INVALID_INPUT",
            commit(Execution::new("", "d"), Effects::new()),
        ),
        (
            "empty definition",
            "INVALID_INPUT",
            commit(Execution::new(format!("{ns}z"), ""), Effects::new()),
        ),
        (
            "negative version",
            "INVALID_INPUT",
            commit(next(&|e| e.version = -1), Effects::new()),
        ),
        (
            "priority 7",
            "INVALID_INPUT",
            commit(next(&|e| e.priority = 7), Effects::new()),
        ),
        (
            "NaN created_at",
            "INVALID_INPUT",
            commit(next(&|e| e.created_at = Some(f64::NAN)), Effects::new()),
        ),
        (
            "negative updated_at",
            "INVALID_INPUT",
            commit(next(&|e| e.updated_at = Some(-1.0)), Effects::new()),
        ),
        (
            "NaN fire_at",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().schedule("root.t", f64::NAN)),
        ),
        (
            "infinite fire_at",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().schedule("root.t", f64::INFINITY)),
        ),
        (
            "negative fire_at",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().schedule("root.t", -5.0)),
        ),
        (
            "empty timer path",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().schedule("", 5.0)),
        ),
        ("bad event time", "INVALID_INPUT", {
            let mut ev = event_ok();
            ev.created_time = Some("yesterday".into());
            commit(next(&|_| ()), Effects::new().emit(None, ev))
        }),
        (
            "empty event kind",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().emit(None, Event::new("i", ""))),
        ),
        (
            "empty processed id",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().processed("")),
        ),
        (
            "empty child id",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().spawn("", "r", JsonObject::new())),
        ),
        (
            "oversize context",
            "INVALID_INPUT",
            commit(
                next(&|e| {
                    e.context.insert("big".into(), huge.clone().into());
                }),
                Effects::new(),
            ),
        ),
        (
            "oversize event",
            "INVALID_INPUT",
            commit(
                next(&|_| ()),
                Effects::new().emit(None, event_ok().with_data(obj(json!({"big": huge})))),
            ),
        ),
        (
            "oversize trace",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().trace(obj(json!({"big": huge})))),
        ),
        (
            "oversize spawn",
            "INVALID_INPUT",
            commit(
                next(&|_| ()),
                Effects::new().spawn("c", "r", obj(json!({"big": huge}))),
            ),
        ),
        (
            "NaN now",
            "INVALID_INPUT",
            store.due_timers(f64::NAN, None, 10).map(|_| ()),
        ),
        (
            "negative now",
            "INVALID_INPUT",
            store.due_timers(-1.0, None, 10).map(|_| ()),
        ),
        (
            "NaN delete fire_at",
            "INVALID_INPUT",
            store.delete_timer(&id, "root.t", f64::NAN).map(|_| ()),
        ),
        (
            "garbage cursor",
            "INVALID_INPUT",
            store
                .list_executions(&ListQuery::new().cursor(Some("%%%".into())))
                .map(|_| ()),
        ),
        (
            "zero limit",
            "INVALID_INPUT",
            store.pending_outbox(None, 0).map(|_| ()),
        ),
        (
            "unknown outbox seq",
            "NOT_FOUND",
            store.ack_outbox(i64::MAX).map(|_| ()),
        ),
        (
            "unknown spawn seq",
            "NOT_FOUND",
            store.ack_spawn(i64::MAX).map(|_| ()),
        ),
        ("negative seq", "INVALID_INPUT", store.ack_outbox(-3).map(|_| ())),
        (
            "trace of unknown id",
            "NOT_FOUND",
            store
                .append_trace(&format!("{ns}nobody"), &JsonObject::new())
                .map(|_| ()),
        ),
        (
            "oversize append_trace",
            "INVALID_INPUT",
            store.append_trace(&id, &obj(json!({"big": huge}))).map(|_| ()),
        ),
        (
            "stale commit",
            "CONFLICT",
            commit(
                next(&|e| e.version = 1),
                Effects::new().processed("late").schedule("root.x", 1.0),
            ),
        ),
        (
            "unknown id above 0",
            "CONFLICT",
            commit(
                {
                    let mut e = Execution::new(format!("{ns}ghost"), "d");
                    e.version = 3;
                    e
                },
                Effects::new(),
            ),
        ),
    ];
    // A valid execution with one bad effect must not be half-written either.
    let mut exe_with_bad_timer = next(&|_| ());
    let bad_timer = Effects::new()
        .emit(None, event_ok())
        .processed("p")
        .schedule("ok", 1.0)
        .schedule("bad", f64::NAN);
    assert_eq!(
        code(store.commit(&mut exe_with_bad_timer, &bad_timer)),
        "INVALID_INPUT"
    );
    assert_eq!(
        exe_with_bad_timer.version, exe.version,
        "the caller's version is unchanged"
    );

    for (what, want, result) in cases {
        let got = match result {
            Ok(()) => panic!("{what}: expected {want}, got Ok"),
            Err(e) => e,
        };
        assert_eq!(got.code(), want, "{what}: {got}");
    }
    assert_eq!(snapshot(store, &probes), before, "bad input changed the store");
    assert_eq!(store.load(&id).unwrap().unwrap().version, 2);
}

/// Commits `n` emits, `n` spawn intents and `n` timers (due at 100 + i) in scope `ns`;
/// returns the outbox seqs.
fn deferred_work(store: &dyn ExecutionStore, ns: &str, n: usize) -> Vec<i64> {
    let mut exe = created(store, &format!("{ns}a"), "def");
    let mut seqs = Vec::new();
    for i in 0..n {
        let effects = Effects::new()
            .emit(None, Event::new(format!("{ns}ev-{i}"), "Ping"))
            .spawn(format!("{ns}child-{i}"), "root.r", JsonObject::new())
            .schedule(format!("{ns}t{i}"), 100.0 + i as f64);
        seqs.extend(store.commit(&mut exe, &effects).unwrap());
    }
    seqs
}

fn our_outbox<'a>(ns: &'a str) -> impl Fn(&[OutboxEntry]) -> Vec<i64> + 'a {
    move |entries| {
        entries
            .iter()
            .filter(|e| e.event.id.starts_with(ns))
            .map(|e| e.seq)
            .collect()
    }
}

fn our_spawns<'a>(ns: &'a str) -> impl Fn(&[SpawnEntry]) -> Vec<i64> + 'a {
    move |entries| {
        entries
            .iter()
            .filter(|e| e.child_id.starts_with(ns))
            .map(|e| e.seq)
            .collect()
    }
}

fn our_timers(ns: &str, timers: &[DueTimer]) -> Vec<DueTimer> {
    timers
        .iter()
        .filter(|t| t.path.starts_with(ns))
        .cloned()
        .collect()
}

/// `relay_outbox` and `relay_spawns` hand out pending entries oldest first, ack exactly
/// the seqs the handler returns (ignoring repeats and seqs it was not given) and leave the
/// rest pending; `sweep_timers` offers the due timers soonest first, and offers again a timer
/// the handler left in place. Bad limits and times are refused.
pub fn relay_acks_what_was_delivered(store: &dyn ExecutionStore) {
    let ns = scope("relay");
    let emitted = deferred_work(store, &ns, 5);
    let ours = our_outbox(&ns);

    let mut offered = Vec::new();
    let acked = store
        .relay_outbox(MAX_PAGE, &mut |entries| {
            offered = ours(entries);
            // The first two, one of them twice, and a seq that was not offered.
            vec![offered[0], offered[1], offered[0], i64::MAX]
        })
        .unwrap();
    assert_eq!(offered, emitted, "every pending entry of ours, oldest first");
    assert_eq!(acked, 2, "only offered seqs are acked, once");
    let left: Vec<i64> = ours(&all_outbox(store));
    assert_eq!(
        left,
        emitted[2..],
        "what was not delivered stays pending, in order"
    );
    let acked = store
        .relay_outbox(MAX_PAGE, &mut |entries| ours(entries))
        .unwrap();
    assert!(acked >= 3, "the rest is acked");
    assert!(ours(&all_outbox(store)).is_empty());
    // One more entry, so the next relay has something to offer and must call back: what it
    // offers of ours is that entry alone, never one acked before.
    let mut exe = store.load(&format!("{ns}a")).unwrap().expect("stored");
    let late = store
        .commit(
            &mut exe,
            &Effects::new().emit(None, Event::new(format!("{ns}ev-late"), "Ping")),
        )
        .unwrap();
    let mut called = false;
    let acked = store
        .relay_outbox(MAX_PAGE, &mut |entries| {
            called = true;
            assert_eq!(ours(entries), late, "acked entries are not offered again");
            ours(entries)
        })
        .unwrap();
    assert!(called, "a relay with pending entries calls its handler");
    assert_eq!(acked, 1, "the new entry is acked");
    assert!(ours(&all_outbox(store)).is_empty());

    let spawned = our_spawns(&ns)(&all_spawns(store));
    assert_eq!(spawned.len(), 5);
    let mut offered = Vec::new();
    let acked = store
        .relay_spawns(MAX_PAGE, &mut |entries| {
            offered = our_spawns(&ns)(entries);
            vec![offered[4]]
        })
        .unwrap();
    assert_eq!(offered, spawned);
    assert_eq!(acked, 1);
    assert_eq!(our_spawns(&ns)(&all_spawns(store)), spawned[..4]);

    // Due at 102.5: the timers at 100, 101 and 102, soonest first; the sweep deletes one.
    let mut offered = Vec::new();
    store
        .sweep_timers(102.5, MAX_PAGE, &mut |timers| {
            offered = our_timers(&ns, timers);
            assert!(store
                .delete_timer(&offered[1].execution_id, &offered[1].path, offered[1].fire_at)
                .unwrap());
        })
        .unwrap();
    let paths: Vec<String> = offered.iter().map(|t| t.path.clone()).collect();
    assert_eq!(paths, [format!("{ns}t0"), format!("{ns}t1"), format!("{ns}t2")]);
    let mut again = Vec::new();
    store
        .sweep_timers(102.5, MAX_PAGE, &mut |timers| again = our_timers(&ns, timers))
        .unwrap();
    let paths: Vec<String> = again.iter().map(|t| t.path.clone()).collect();
    assert_eq!(
        paths,
        [format!("{ns}t0"), format!("{ns}t2")],
        "a fired timer is gone; the rest are offered again"
    );

    let mut never = |_: &[OutboxEntry]| -> Vec<i64> { panic!("called on bad input") };
    assert_eq!(code(store.relay_outbox(0, &mut never)), "INVALID_INPUT");
    assert_eq!(
        code(store.relay_outbox(MAX_PAGE + 1, &mut never)),
        "INVALID_INPUT"
    );
    assert_eq!(
        code(store.relay_spawns(0, &mut |_| panic!("called on bad input"))),
        "INVALID_INPUT"
    );
    for now in [f64::NAN, -1.0, f64::INFINITY] {
        assert_eq!(
            code(store.sweep_timers(now, 10, &mut |_| panic!("called on bad input"))),
            "INVALID_INPUT",
            "now = {now}"
        );
    }
    assert_eq!(
        our_spawns(&ns)(&all_spawns(store)),
        spawned[..4],
        "bad input changed nothing"
    );
}

/// What a claim holds. With [`crate::Capabilities::exclusive_claims`], an outbox entry,
/// spawn intent or timer handed to one caller is not handed to a second caller while the
/// first still holds it (the second call is made from inside the first's handler, so the
/// overlap is certain), and is again once the first let it go undelivered. Without the
/// capability, the second caller is handed the same entries: a backend must not claim more
/// than it does.
pub fn claims_match_capabilities(store: &dyn ExecutionStore) {
    let exclusive = store.capabilities().exclusive_claims;
    let ns = scope("claims");
    let emitted = deferred_work(store, &ns, 3);
    let ours = our_outbox(&ns);

    let mut inner = Vec::new();
    store
        .relay_outbox(MAX_PAGE, &mut |entries| {
            assert_eq!(ours(entries), emitted);
            store
                .relay_outbox(MAX_PAGE, &mut |entries| {
                    inner = ours(entries);
                    Vec::new()
                })
                .unwrap();
            Vec::new()
        })
        .unwrap();
    if exclusive {
        assert!(
            inner.is_empty(),
            "claimed entries were handed out twice: {inner:?}"
        );
    } else {
        assert_eq!(
            inner, emitted,
            "a store without exclusive claims hands them out again"
        );
    }
    // Let go undelivered: offered again, and now acked.
    let acked = store
        .relay_outbox(MAX_PAGE, &mut |entries| ours(entries))
        .unwrap();
    assert!(acked >= emitted.len());
    assert!(ours(&all_outbox(store)).is_empty());

    let spawned = our_spawns(&ns)(&all_spawns(store));
    let mut inner = Vec::new();
    store
        .relay_spawns(MAX_PAGE, &mut |entries| {
            assert_eq!(our_spawns(&ns)(entries), spawned);
            store
                .relay_spawns(MAX_PAGE, &mut |entries| {
                    inner = our_spawns(&ns)(entries);
                    Vec::new()
                })
                .unwrap();
            our_spawns(&ns)(entries)
        })
        .unwrap();
    if exclusive {
        assert!(
            inner.is_empty(),
            "claimed spawns were handed out twice: {inner:?}"
        );
    } else {
        assert_eq!(inner, spawned);
    }
    assert!(our_spawns(&ns)(&all_spawns(store)).is_empty());

    let mut outer = Vec::new();
    let mut inner = Vec::new();
    store
        .sweep_timers(1000.0, MAX_PAGE, &mut |timers| {
            outer = our_timers(&ns, timers);
            store
                .sweep_timers(1000.0, MAX_PAGE, &mut |timers| inner = our_timers(&ns, timers))
                .unwrap();
            // Fire the first one only.
            let t = &outer[0];
            assert!(store.delete_timer(&t.execution_id, &t.path, t.fire_at).unwrap());
        })
        .unwrap();
    assert_eq!(outer.len(), 3);
    if exclusive {
        assert!(inner.is_empty(), "claimed timers were offered twice: {inner:?}");
    } else {
        assert_eq!(inner, outer);
    }
    let mut after = Vec::new();
    store
        .sweep_timers(1000.0, MAX_PAGE, &mut |timers| after = our_timers(&ns, timers))
        .unwrap();
    assert_eq!(
        after,
        outer[1..],
        "the claim ended: the timers left in place are offered again"
    );
}

/// Without [`crate::Capabilities::wakeups`], `wait_for_work` sleeps out its timeout and
/// answers `false`. With it, a waiter (after the first, priming wait) is woken by a commit
/// from another thread long before its timeout.
pub fn wait_for_work_matches_capabilities(store: &dyn ExecutionStore) {
    let ns = scope("wait");
    if !store.capabilities().wakeups {
        // wasm32 has no clock to time the wait with, and the default does not block there.
        #[cfg(not(target_arch = "wasm32"))]
        let start = std::time::Instant::now();
        assert!(!store
            .wait_for_work(Work::Outbox, std::time::Duration::from_millis(30))
            .unwrap());
        #[cfg(not(target_arch = "wasm32"))]
        assert!(
            start.elapsed() >= std::time::Duration::from_millis(30),
            "it waited its timeout"
        );
        return;
    }
    let timeout = std::time::Duration::from_secs(120);
    // The first wait starts listening and returns at once.
    assert!(store.wait_for_work(Work::Spawns, timeout).unwrap());
    let start = std::time::Instant::now();
    let woken = std::thread::scope(|scope| {
        let waiter = scope.spawn(|| store.wait_for_work(Work::Spawns, timeout));
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut exe = created(store, &format!("{ns}a"), "def");
        store
            .commit(
                &mut exe,
                &Effects::new().spawn(format!("{ns}c"), "root.r", JsonObject::new()),
            )
            .unwrap();
        waiter.join().expect("the waiter panicked")
    });
    assert!(woken.unwrap(), "woken by the commit, not by the timeout");
    assert!(start.elapsed() < timeout);
}

/// Durable backends: a reopened store sees every execution, outbox and spawn row, timer,
/// trace step and dedupe marker committed before, no acked or purged row, and never reuses
/// an outbox sequence number.
pub fn reopen_sees_everything_committed(harness: &mut dyn Harness) {
    let ns = scope("reopen");
    let store = harness.store();
    assert!(
        store.capabilities().durable,
        "only durable backends run this check"
    );
    let mut exe = created(store, &format!("{ns}a"), "def");
    let mut gone = created(store, &format!("{ns}gone"), "def");
    let id = exe.id.clone();
    bump(&mut exe);
    let seqs = store
        .commit(
            &mut exe,
            &Effects::new()
                .emit(Some(&id), Event::new(format!("{ns}e1"), "E"))
                .emit(Some(&id), Event::new(format!("{ns}e2"), "E"))
                .processed(format!("{ns}in"))
                .schedule("root.t", 42.0)
                .spawn(format!("{ns}a:c"), "root.c", obj(json!({"k": "v"})))
                .trace(obj(json!({"event_kind": "E", "n": 1}))),
        )
        .unwrap();
    store.ack_outbox(seqs[1]).unwrap();
    store
        .commit(&mut gone, &Effects::new().processed(format!("{ns}gone-in")))
        .unwrap();
    assert!(store.purge(&gone.id, 2).unwrap());
    let probes_owned = [
        (id.clone(), format!("{ns}in")),
        (gone.id.clone(), format!("{ns}gone-in")),
    ];
    let probes: Vec<(&str, &str)> = probes_owned
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let before = snapshot(store, &probes);

    assert!(harness.reopen(), "a durable backend can be reopened");
    let store = harness.store();
    assert_eq!(
        snapshot(store, &probes),
        before,
        "the reopened store holds exactly what was committed"
    );
    assert_eq!(store.load(&id).unwrap().unwrap(), exe);
    assert!(store.is_processed(&id, &format!("{ns}in")).unwrap());
    assert!(store.load(&gone.id).unwrap().is_none());
    let after = store
        .commit(
            &mut exe,
            &Effects::new().emit(None, Event::new(format!("{ns}e3"), "E")),
        )
        .unwrap();
    assert!(
        after[0] > seqs[1],
        "an acked newest seq is not reused after a reopen"
    );
}
