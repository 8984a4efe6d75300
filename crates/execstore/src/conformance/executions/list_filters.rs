//! The behaviour suite's checks of the listing's time windows and search (feature
//! `conformance`), re-exported by [`crate::conformance::executions`] and run by
//! [`conformance_tests!`](crate::conformance_tests) on every backend.
//!
//! Each check writes under its own id prefix and its own span of times (far from any other
//! check's), so windows without a search still see only its executions on a shared store.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::conformance::executions::{all_pages, scope};
use crate::executions::ExecutionStore;
use crate::executions::{encode_cursor, ListQuery, MAX_SEARCH_BYTES};
use crate::executions::{Execution, ExecutionSummary, Status};

/// A base time no other check of this process uses: windows around it see only the caller's
/// executions.
fn own_epoch() -> f64 {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    6.0e9 + 1.0e6 * NEXT.fetch_add(1, Ordering::Relaxed) as f64
}

/// The twelve executions of the checks: `{ns}e00`..`{ns}e11`, created at `t + i`, updated at
/// `t + 100 + i`, every third finished at `t + 200 + i` (DONE; the others RUNNING or FAILED),
/// of two definitions, with four shapes of active path, `e05` a child of `e04`.
fn populate(store: &dyn ExecutionStore, ns: &str, t: f64) -> Vec<Execution> {
    let paths = ["order.checkout.pay", "order.checkout", "order.checkoutx", "other"];
    (0..12usize)
        .map(|i| {
            let definition = if i % 2 == 0 { "A" } else { "B" };
            let mut exe = Execution::new(format!("{ns}e{i:02}"), format!("{ns}{definition}"));
            exe.status = [Status::Done, Status::Running, Status::Failed][i % 3];
            exe.active_path = Some(paths[i % 4].to_owned());
            exe.created_at = Some(t + i as f64);
            exe.updated_at = Some(t + 100.0 + i as f64);
            exe.finished_at = (i % 3 == 0).then_some(t + 200.0 + i as f64);
            if i == 5 {
                exe.parent_id = Some(format!("{ns}e04"));
            }
            store.save(&mut exe).expect("save");
            exe
        })
        .collect()
}

fn ids(items: &[ExecutionSummary], ns: &str) -> Vec<String> {
    items
        .iter()
        .map(|s| s.id.strip_prefix(ns).unwrap_or(&s.id).to_owned())
        .collect()
}

fn names(numbers: &[usize]) -> Vec<String> {
    numbers.iter().map(|i| format!("e{i:02}")).collect()
}

/// Every page of `query` at several page sizes: each the same, ordered by id, no repeats.
fn listed(store: &dyn ExecutionStore, query: &ListQuery, ns: &str) -> Vec<String> {
    let full = all_pages(store, query.clone().limit(10_000));
    for limit in [1, 2, 5] {
        let paged = all_pages(store, query.clone().limit(limit));
        assert_eq!(paged, full, "{query:?} paged by {limit}: gaps or repeats");
    }
    let unique: BTreeSet<&str> = full.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(unique.len(), full.len(), "{query:?}: an id listed twice");
    assert!(
        full.windows(2).all(|w| w[0].id < w[1].id),
        "{query:?}: not ordered by id"
    );
    ids(&full, ns)
}

/// Time windows alone and with the other filters: `after` inclusive, `before` exclusive,
/// either end open, a missing time outside every bounded window; paged at several sizes with
/// no gap or repeat; an update moves an execution between `updated` windows.
pub fn list_filters_time_windows(store: &dyn ExecutionStore) {
    let ns = scope("lf-time");
    let t = own_epoch();
    let written = populate(store, &ns, t);
    let q = ListQuery::new;
    // created: [t+2, t+5) keeps 2, 3, 4 (the lower bound in, the upper out).
    assert_eq!(
        listed(store, &q().created_between(Some(t + 2.0), Some(t + 5.0)), &ns),
        names(&[2, 3, 4])
    );
    // updated, open above: from t+110 (scoped to ours by the search: on a store the
    // other checks share, as OPFS's one database, theirs may be updated later still).
    assert_eq!(
        listed(
            store,
            &q().updated_between(Some(t + 110.0), None).search(&ns),
            &ns
        ),
        names(&[10, 11])
    );
    // updated, open below (scoped to ours by the search): before t+101 keeps only e00.
    let below = q().updated_between(None, Some(t + 101.0)).search(&ns);
    assert_eq!(listed(store, &below, &ns), names(&[0]));
    // finished: the unfinished ones are never in a bounded window.
    let finished = q().finished_between(Some(t + 200.0), Some(t + 207.0));
    assert_eq!(listed(store, &finished, &ns), names(&[0, 3, 6]));
    let any_finish = q().finished_between(Some(0.0), None).search(&ns);
    assert_eq!(listed(store, &any_finish, &ns), names(&[0, 3, 6, 9]));
    // An empty window keeps nothing.
    assert!(listed(store, &q().created_between(Some(t + 3.0), Some(t + 3.0)), &ns).is_empty());
    // Combined with status, definition and roots-only.
    let all_created = || q().created_between(Some(t), Some(t + 12.0));
    assert_eq!(
        listed(store, &all_created(), &ns),
        names(&(0..12).collect::<Vec<_>>())
    );
    let running = all_created().status([Status::Running]);
    assert_eq!(listed(store, &running, &ns), names(&[1, 4, 7, 10]));
    let done_or_failed = all_created().status([Status::Done, Status::Failed]);
    assert_eq!(
        listed(store, &done_or_failed, &ns),
        names(&[0, 2, 3, 5, 6, 8, 9, 11])
    );
    let def_a = all_created().definition(format!("{ns}A"));
    assert_eq!(listed(store, &def_a, &ns), names(&[0, 2, 4, 6, 8, 10]));
    let roots = all_created().roots_only(true).status([Status::Failed]);
    assert_eq!(listed(store, &roots, &ns), names(&[2, 8, 11]));
    // Two windows at once are both applied.
    let both = all_created()
        .updated_between(Some(t + 104.0), Some(t + 108.0))
        .definition(format!("{ns}B"));
    assert_eq!(listed(store, &both, &ns), names(&[5, 7]));
    // A cursor from a page resumes strictly after its id, within the window.
    let resumed = all_pages(
        store,
        all_created().cursor(Some(encode_cursor(&format!("{ns}e07")))),
    );
    assert_eq!(ids(&resumed, &ns), names(&[8, 9, 10, 11]));
    // The reference definition agrees with every query above on what was written.
    for query in [&running, &def_a, &both, &finished] {
        let expected: Vec<String> = written
            .iter()
            .filter(|e| query.matches_execution(e))
            .map(|e| e.id[ns.len()..].to_owned())
            .collect();
        assert_eq!(listed(store, query, &ns), expected, "{query:?}");
    }
    // A commit that moves updated_at moves the execution between windows.
    let mut moved = written[1].clone();
    moved.updated_at = Some(t + 150.0);
    store.save(&mut moved).expect("update");
    let old = q().updated_between(Some(t + 100.0), Some(t + 112.0));
    assert_eq!(
        listed(store, &old, &ns),
        names(&[0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    );
    let new = q().updated_between(Some(t + 150.0), Some(t + 151.0));
    assert_eq!(listed(store, &new, &ns), names(&[1]));
}

/// The search: an id prefix, or a state the execution is in (its active path equal to the
/// text or below it at a `.`), never a partial segment or a middle segment; combined with
/// windows and the other filters; paged.
pub fn list_filters_search(store: &dyn ExecutionStore) {
    let ns = scope("lf-search");
    let t = own_epoch();
    populate(store, &ns, t);
    let q = ListQuery::new;
    let ours = || q().created_between(Some(t), Some(t + 12.0));
    // By id prefix.
    assert_eq!(
        listed(store, &q().search(format!("{ns}e0")), &ns),
        names(&(0..10).collect::<Vec<_>>())
    );
    assert_eq!(
        listed(store, &q().search(format!("{ns}e1")), &ns),
        names(&[10, 11])
    );
    assert_eq!(listed(store, &q().search(format!("{ns}e05")), &ns), names(&[5]));
    assert!(listed(store, &q().search(format!("{ns}e2")), &ns).is_empty());
    // By state: a state and everything below it, at segment boundaries only.
    assert_eq!(
        listed(store, &ours().search("order.checkout"), &ns),
        names(&[0, 1, 4, 5, 8, 9])
    );
    assert_eq!(
        listed(store, &ours().search("order.checkout.pay"), &ns),
        names(&[0, 4, 8])
    );
    assert_eq!(
        listed(store, &ours().search("order"), &ns),
        names(&[0, 1, 2, 4, 5, 6, 8, 9, 10])
    );
    assert_eq!(
        listed(store, &ours().search("order.checkoutx"), &ns),
        names(&[2, 6, 10])
    );
    assert!(
        listed(store, &ours().search("order.check"), &ns).is_empty(),
        "a partial segment"
    );
    assert!(
        listed(store, &ours().search("checkout"), &ns).is_empty(),
        "a middle segment"
    );
    assert!(
        listed(store, &ours().search("Order"), &ns).is_empty(),
        "case-sensitive"
    );
    assert!(listed(store, &ours().search("order.checkout.pay.x"), &ns).is_empty());
    // Combined with status, definition, roots-only and another window.
    let running_checkout = ours().search("order.checkout").status([Status::Running]);
    assert_eq!(listed(store, &running_checkout, &ns), names(&[1, 4]));
    let def_b = ours().search("order").definition(format!("{ns}B"));
    assert_eq!(listed(store, &def_b, &ns), names(&[1, 5, 9]));
    let roots = ours().search("order.checkout").roots_only(true);
    assert_eq!(listed(store, &roots, &ns), names(&[0, 1, 4, 8, 9]));
    let finished = q()
        .search("order")
        .finished_between(Some(t + 200.0), Some(t + 300.0));
    assert_eq!(listed(store, &finished, &ns), names(&[0, 6, 9]));
    let prefix_and_window = q()
        .search(format!("{ns}e"))
        .updated_between(Some(t + 103.0), Some(t + 106.0));
    assert_eq!(listed(store, &prefix_and_window, &ns), names(&[3, 4, 5]));
}

/// Bad windows and searches are `InvalidInput` on every backend: NaN, infinite or negative
/// bounds, an inverted window, an empty, over-long or NUL-holding search.
pub fn list_filters_bad_input_rejected(store: &dyn ExecutionStore) {
    let q = ListQuery::new;
    type Window = fn(ListQuery, Option<f64>, Option<f64>) -> ListQuery;
    let windows: [(&str, Window); 3] = [
        ("created", ListQuery::created_between),
        ("updated", ListQuery::updated_between),
        ("finished", ListQuery::finished_between),
    ];
    for (name, window) in windows {
        let bad = [
            window(q(), Some(f64::NAN), None),
            window(q(), None, Some(f64::NAN)),
            window(q(), Some(f64::INFINITY), None),
            window(q(), None, Some(f64::NEG_INFINITY)),
            window(q(), Some(-1.0), None),
            window(q(), None, Some(-0.5)),
            window(q(), Some(10.0), Some(9.0)),
        ];
        for query in bad {
            match store.list_executions(&query) {
                Err(e) => assert_eq!(e.code(), "INVALID_INPUT", "{name}: {query:?}: {e}"),
                Ok(page) => panic!("{name}: {query:?} was accepted: {page:?}"),
            }
        }
    }
    for search in [String::new(), "x".repeat(MAX_SEARCH_BYTES + 1), "a\0b".to_owned()] {
        let query = q().search(search);
        match store.list_executions(&query) {
            Err(e) => assert_eq!(e.code(), "INVALID_INPUT", "{query:?}: {e}"),
            Ok(page) => panic!("{query:?} was accepted: {page:?}"),
        }
    }
    // The largest search is fine, as are a zero bound and equal bounds.
    store
        .list_executions(&q().search("x".repeat(MAX_SEARCH_BYTES)))
        .expect("longest search");
    store
        .list_executions(&q().updated_between(Some(0.0), Some(0.0)))
        .expect("empty window");
}
