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
use crate::executions::paging::{execution_pages, outbox_pages, spawn_pages, timer_pages};
use crate::executions::{encode_cursor, ListQuery};
use crate::executions::{BatchItem, ExecutionStore, Work};
use crate::executions::{
    ChildState, DueTimer, Effects, Event, Execution, JsonObject, OutboxEntry, SpawnEntry, Status,
};
use crate::kit::validate::{ALL_TIMERS, MAX_DOCUMENT_BYTES, MAX_PAGE};

mod control;
mod graph;
mod list_filters;
mod list_order;
mod moves;
mod recover;
mod where_filters;

pub use control::*;
pub use graph::graph_figures_follow_every_write;
pub use moves::an_update_moves_the_execution_to_its_new_definition;
pub use recover::{control_redrive, send_through_the_outbox};

pub use list_filters::{list_filters_bad_input_rejected, list_filters_search, list_filters_time_windows};
pub use list_order::{
    counts_follow_the_filter, list_order_created_desc, list_order_survives_concurrent_updates,
    list_order_updated_desc,
};
pub use where_filters::{
    where_attributes_declare_list_drop, where_bad_filter_rejected, where_filter_matches_reference,
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
impl<S: ExecutionStore> Harness for crate::executions::GroupCommit<S> {
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
            $crate::conformance::executions::reopen_sees_everything_committed(&mut h);
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
            status_counts_follow_every_write,
            graph_figures_follow_every_write,
            change_token_moves_with_every_write,
            relay_acks_what_was_delivered,
            claims_match_capabilities,
            list_filters_time_windows,
            list_filters_search,
            list_filters_bad_input_rejected,
            list_order_updated_desc,
            list_order_created_desc,
            list_order_survives_concurrent_updates,
            counts_follow_the_filter,
            an_update_moves_the_execution_to_its_new_definition,
            where_filter_matches_reference,
            where_attributes_declare_list_drop,
            where_bad_filter_rejected,
            control_suspend_resume_tree,
            control_terminate_tree,
            control_refusals_change_nothing,
            control_purge_tree,
            control_purge_finished,
            control_redrive,
            definitions_kept_once_per_version,
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
            $crate::conformance::executions::reopen_sees_everything_committed(&mut h);
        }
    };
    (@wasm_checks $harness:expr; $($check:ident,)*) => {
        $(
            #[::wasm_bindgen_test::wasm_bindgen_test]
            async fn $check() {
                let h = $harness.await;
                $crate::conformance::executions::$check($crate::conformance::executions::Harness::store(&h));
            }
        )*
    };
    (@checks $harness:expr; $($check:ident,)*) => {
        $(
            #[test]
            fn $check() {
                let h = $harness;
                $crate::conformance::executions::$check($crate::conformance::executions::Harness::store(&h));
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
pub fn all_pages(store: &dyn ExecutionStore, query: ListQuery) -> Vec<crate::executions::ExecutionSummary> {
    let limit = query.limit;
    let order = query.order;
    let mut items: Vec<crate::executions::ExecutionSummary> = Vec::new();
    for (n, page) in execution_pages(store, query).enumerate() {
        assert!(n < 100_000, "listing did not terminate");
        let page = page.expect("list_executions");
        assert!(page.items.len() <= limit, "a page holds at most `limit` items");
        if page.next_cursor.is_some() {
            assert!(!page.items.is_empty(), "a page with a next cursor is not empty");
        }
        for item in page.items {
            if let Some(prev) = items.last() {
                assert!(
                    order.compare(prev, &item) == std::cmp::Ordering::Less,
                    "pages are in the {order} order, without repeats"
                );
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

mod bad_input;
mod commits;
mod definitions;
mod records;
mod relay;

pub use bad_input::*;
pub use commits::*;
pub use definitions::*;
pub use records::*;
pub use relay::*;
