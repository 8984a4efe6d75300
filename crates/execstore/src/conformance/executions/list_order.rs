//! The behaviour suite's checks of the listing's order ([`ListOrder`]) and of the counts by
//! status that follow a listing's filter (feature `conformance`), re-exported by
//! [`crate::conformance::executions`] and run by [`conformance_tests!`](crate::conformance_tests)
//! on every backend.
//!
//! Each check writes under its own id prefix and scopes its listings to it with the search
//! (an id prefix), so other checks' executions on a shared store do not show.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::conformance::executions::{all_pages, code, scope};
use crate::executions::{
    encode_created_cursor, encode_cursor, encode_updated_cursor, ExecutionStore, ListOrder, ListQuery,
};
use crate::executions::{Execution, ExecutionSummary, Status};

/// A base time no other check of this process uses.
fn own_epoch() -> f64 {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    7.0e9 + 1.0e6 * NEXT.fetch_add(1, Ordering::Relaxed) as f64
}

/// Fourteen executions `{ns}e00`..`{ns}e13`: updated at `t + (i * 7) % 10` (so the update
/// order is not the id order, and `e00`/`e10`, `e01`/`e11` ... share a time), `e12` and
/// `e13` without an `updated_at`; created at `t + i`; statuses cycle DONE, RUNNING, FAILED;
/// two definitions; `e05` a child of `e04`.
fn populate(store: &dyn ExecutionStore, ns: &str, t: f64) -> Vec<Execution> {
    (0..14usize)
        .map(|i| {
            let definition = if i % 2 == 0 { "A" } else { "B" };
            let mut exe = Execution::new(format!("{ns}e{i:02}"), format!("{ns}{definition}"));
            exe.status = [Status::Done, Status::Running, Status::Failed][i % 3];
            exe.created_at = Some(t + i as f64);
            exe.updated_at = (i < 12).then(|| t + ((i * 7) % 10) as f64);
            if i == 5 {
                exe.parent_id = Some(format!("{ns}e04"));
            }
            store.save(&mut exe).expect("save");
            exe
        })
        .collect()
}

fn short(items: &[ExecutionSummary], ns: &str) -> Vec<String> {
    items
        .iter()
        .map(|s| s.id.strip_prefix(ns).unwrap_or(&s.id).to_owned())
        .collect()
}

/// Every page of `query` in its order at several page sizes: each walk the same, in the
/// order's sequence, with no repeats.
fn walked(store: &dyn ExecutionStore, query: &ListQuery) -> Vec<ExecutionSummary> {
    let order = query.order;
    let full = all_pages(store, query.clone().limit(10_000));
    for limit in [1, 2, 3, 5] {
        let paged = all_pages(store, query.clone().limit(limit));
        assert_eq!(paged, full, "{query:?} paged by {limit}: gaps or repeats");
    }
    assert!(
        full.windows(2)
            .all(|w| order.compare(&w[0], &w[1]) == std::cmp::Ordering::Less),
        "{query:?}: not in the {order} order"
    );
    full
}

/// The `updated` order: most recently updated first, ties by id descending, executions
/// without an `updated_at` last; the same at every page size and with every filter; the id
/// order unchanged; a cursor of one order refused by the other.
pub fn list_order_updated_desc(store: &dyn ExecutionStore) {
    let ns = scope("lo-order");
    let t = own_epoch();
    populate(store, &ns, t);
    let by_updated = || ListQuery::new().search(&ns).order(ListOrder::UpdatedDesc);
    // Times: e00 t+0, e01 t+7, e02 t+4, e03 t+1, e04 t+8, e05 t+5, e06 t+2, e07 t+9,
    // e08 t+6, e09 t+3, e10 t+0, e11 t+7; e12, e13 none.
    let all = walked(store, &by_updated());
    assert_eq!(
        short(&all, &ns),
        ["e07", "e04", "e11", "e01", "e08", "e05", "e02", "e09", "e06", "e03", "e10", "e00", "e13", "e12"],
        "updated descending, ties by id descending, no updated_at last"
    );
    // With filters: status, definition, roots only, a time window.
    let running = walked(store, &by_updated().status([Status::Running]));
    assert_eq!(short(&running, &ns), ["e07", "e04", "e01", "e10", "e13"]);
    let def_b = walked(store, &by_updated().definition(format!("{ns}B")));
    assert_eq!(
        short(&def_b, &ns),
        ["e07", "e11", "e01", "e05", "e09", "e03", "e13"]
    );
    let roots = walked(store, &by_updated().roots_only(true).status([Status::Failed]));
    assert_eq!(short(&roots, &ns), ["e11", "e08", "e02"]);
    let window = walked(store, &by_updated().updated_between(Some(t + 2.0), Some(t + 7.0)));
    assert_eq!(short(&window, &ns), ["e08", "e05", "e02", "e09", "e06"]);
    let created = walked(store, &by_updated().created_between(Some(t + 9.0), None));
    assert_eq!(short(&created, &ns), ["e11", "e09", "e10", "e13", "e12"]);
    // Several statuses merged in the order (a tie at t+7 across two statuses), alone, with a
    // definition and a window on the order's own time, and in the `created` order with roots.
    let two = walked(store, &by_updated().status([Status::Running, Status::Failed]));
    assert_eq!(
        short(&two, &ns),
        ["e07", "e04", "e11", "e01", "e08", "e05", "e02", "e10", "e13"]
    );
    let two_b = walked(
        store,
        &by_updated()
            .status([Status::Failed, Status::Running])
            .definition(format!("{ns}B"))
            .updated_between(Some(t + 5.0), Some(t + 10.0)),
    );
    assert_eq!(short(&two_b, &ns), ["e07", "e11", "e01", "e05"]);
    let created_roots = walked(
        store,
        &ListQuery::new()
            .search(&ns)
            .order(ListOrder::CreatedDesc)
            .status([Status::Done, Status::Running])
            .roots_only(true),
    );
    assert_eq!(
        short(&created_roots, &ns),
        ["e13", "e12", "e10", "e09", "e07", "e06", "e04", "e03", "e01", "e00"]
    );
    // The id order is the default and unchanged.
    let by_id = walked(store, &ListQuery::new().search(&ns));
    assert_eq!(by_id.len(), 14);
    assert!(by_id.windows(2).all(|w| w[0].id < w[1].id));
    assert_eq!(ListQuery::new().order, ListOrder::Id);
    // A cursor is good for its own order only.
    let page = store.list_executions(&by_updated().limit(3)).expect("first page");
    let updated_cursor = page.next_cursor.expect("more pages");
    let by_id_with_it = ListQuery::new().search(&ns).cursor(Some(updated_cursor.clone()));
    assert_eq!(code(store.list_executions(&by_id_with_it)), "INVALID_INPUT");
    let id_cursor = encode_cursor(&format!("{ns}e03"));
    assert_eq!(
        code(store.list_executions(&by_updated().cursor(Some(id_cursor)))),
        "INVALID_INPUT"
    );
    // The cursor resumes right after the page's last summary.
    let next = store
        .list_executions(&by_updated().limit(3).cursor(Some(updated_cursor)))
        .expect("second page");
    assert_eq!(short(&next.items, &ns), ["e01", "e08", "e05"]);
    // A cursor made by hand for a key resumes after that key, in the null tail too.
    let tail = store
        .list_executions(&by_updated().cursor(Some(encode_updated_cursor(None, &format!("{ns}e13")))))
        .expect("the tail");
    assert_eq!(short(&tail.items, &ns), ["e12"]);
    let mid = store
        .list_executions(
            &by_updated()
                .limit(2)
                .cursor(Some(encode_updated_cursor(Some(t + 7.0), &format!("{ns}e11")))),
        )
        .expect("after a tie");
    assert_eq!(short(&mid.items, &ns), ["e01", "e08"]);
    // Forged and foreign cursors are refused.
    for bad in [
        "dXBkYXRlZDp4eDph",
        "dXBkYXRlZDotOg",
        "bm9wZQ",
        "dXBkYXRlZDowMDAwMDAwMDAwMDAwMDAw",
    ] {
        let q = by_updated().cursor(Some(bad.to_owned()));
        assert_eq!(code(store.list_executions(&q)), "INVALID_INPUT", "{bad}");
    }
}

/// The `created` order: newest created first, ties by id descending, executions without a
/// `created_at` last; the same at every page size and with every filter; the summaries carry
/// `created_at`; a cursor of another order refused, and one of this order refused by them.
pub fn list_order_created_desc(store: &dyn ExecutionStore) {
    let ns = scope("lo-created");
    let t = own_epoch();
    // Created at t + (i * 3) % 8 (ties: e00/e08, e01/e09, e02/e10, e03/e11), e12 and e13
    // without a created_at; updated as `populate` has it.
    for (i, mut exe) in populate(store, &ns, t).into_iter().enumerate() {
        exe.created_at = (i < 12).then(|| t + ((i * 3) % 8) as f64);
        store.save(&mut exe).expect("save");
    }
    let by_created = || ListQuery::new().search(&ns).order(ListOrder::CreatedDesc);
    let all = walked(store, &by_created());
    assert_eq!(
        short(&all, &ns),
        ["e05", "e10", "e02", "e07", "e04", "e09", "e01", "e06", "e11", "e03", "e08", "e00", "e13", "e12"],
        "created descending, ties by id descending, no created_at last"
    );
    assert_eq!(all[0].created_at, Some(t + 7.0), "the summary's created_at");
    assert_eq!(all[13].created_at, None);
    // With filters: status, definition, roots only, a time window.
    let running = walked(store, &by_created().status([Status::Running]));
    assert_eq!(short(&running, &ns), ["e10", "e07", "e04", "e01", "e13"]);
    let def_b = walked(store, &by_created().definition(format!("{ns}B")));
    assert_eq!(
        short(&def_b, &ns),
        ["e05", "e07", "e09", "e01", "e11", "e03", "e13"]
    );
    let roots = walked(store, &by_created().roots_only(true).status([Status::Done]));
    assert_eq!(short(&roots, &ns), ["e09", "e06", "e03", "e00", "e12"]);
    let window = walked(store, &by_created().created_between(Some(t + 2.0), Some(t + 6.0)));
    assert_eq!(short(&window, &ns), ["e07", "e04", "e09", "e01", "e06"]);
    let updated = walked(store, &by_created().updated_between(Some(t + 7.0), None));
    assert_eq!(short(&updated, &ns), ["e07", "e04", "e01", "e11"]);
    // A cursor is good for its own order only, both ways.
    let page = store.list_executions(&by_created().limit(3)).expect("first page");
    let created_cursor = page.next_cursor.expect("more pages");
    for other in [ListOrder::Id, ListOrder::UpdatedDesc] {
        let q = ListQuery::new()
            .search(&ns)
            .order(other)
            .cursor(Some(created_cursor.clone()));
        assert_eq!(code(store.list_executions(&q)), "INVALID_INPUT", "{other}");
    }
    let updated_cursor = encode_updated_cursor(Some(t + 3.0), &format!("{ns}e09"));
    assert_eq!(
        code(store.list_executions(&by_created().cursor(Some(updated_cursor)))),
        "INVALID_INPUT"
    );
    // The cursor resumes right after the page's last summary, after a tie too.
    let next = store
        .list_executions(&by_created().limit(3).cursor(Some(created_cursor)))
        .expect("second page");
    assert_eq!(short(&next.items, &ns), ["e07", "e04", "e09"]);
    let mid = store
        .list_executions(
            &by_created()
                .limit(2)
                .cursor(Some(encode_created_cursor(Some(t + 3.0), &format!("{ns}e09")))),
        )
        .expect("after a tie");
    assert_eq!(short(&mid.items, &ns), ["e01", "e06"]);
    let tail = store
        .list_executions(&by_created().cursor(Some(encode_created_cursor(None, &format!("{ns}e13")))))
        .expect("the tail");
    assert_eq!(short(&tail.items, &ns), ["e12"]);
    // Forged cursors are refused: no key, a time that is not one, no id.
    for bad in ["Y3JlYXRlZDo", "Y3JlYXRlZDp4eDph", "Y3JlYXRlZDotOg"] {
        let q = by_created().cursor(Some(bad.to_owned()));
        assert_eq!(code(store.list_executions(&q)), "INVALID_INPUT", "{bad}");
    }
}

/// A walk in the `updated` order while executions are updated: no execution is returned
/// twice, every execution not updated during the walk is returned once and in order, and
/// the next walk shows the updated ones first.
pub fn list_order_survives_concurrent_updates(store: &dyn ExecutionStore) {
    let ns = scope("lo-moving");
    let t = own_epoch();
    let mut written = populate(store, &ns, t);
    let query = ListQuery::new()
        .search(&ns)
        .order(ListOrder::UpdatedDesc)
        .limit(3);
    let mut seen: Vec<ExecutionSummary> = Vec::new();
    let mut cursor = None;
    let mut moved = BTreeSet::new();
    for n in 0.. {
        assert!(n < 100, "the walk did not end");
        let page = store
            .list_executions(&query.clone().cursor(cursor.clone()))
            .expect("a page");
        seen.extend(page.items.iter().cloned());
        if n == 1 {
            // One already returned (e07, the first) and one not yet (e00, near the end):
            // both now the most recently updated.
            for i in [7usize, 0] {
                let exe = &mut written[i];
                exe.updated_at = Some(t + 50.0 + i as f64);
                store.save(exe).expect("update");
                moved.insert(exe.id.clone());
            }
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let ids: Vec<&str> = seen.iter().map(|s| s.id.as_str()).collect();
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "an execution returned twice: {ids:?}");
    for exe in &written {
        if !moved.contains(&exe.id) {
            assert!(
                unique.contains(exe.id.as_str()),
                "{} missing from {ids:?}",
                exe.id
            );
        }
    }
    let steady: Vec<&ExecutionSummary> = seen.iter().filter(|s| !moved.contains(&s.id)).collect();
    assert!(
        steady
            .windows(2)
            .all(|w| ListOrder::UpdatedDesc.compare(w[0], w[1]) == std::cmp::Ordering::Less),
        "the walk is out of order: {ids:?}"
    );
    let again = all_pages(store, query.clone());
    assert_eq!(
        short(&again[..2], &ns),
        ["e07", "e00"],
        "the updated ones come first"
    );
    assert_eq!(again.len(), 14);
}

/// The counts by status of a query are the statuses of exactly the rows its listing walks,
/// whatever the filter (definition, roots, each time window, search), ignoring the query's
/// own status filter, cursor, page size and order; bad input is refused.
pub fn counts_follow_the_filter(store: &dyn ExecutionStore) {
    let ns = scope("lo-counts");
    let t = own_epoch();
    populate(store, &ns, t);
    let q = || ListQuery::new().search(&ns);
    let queries = [
        q(),
        q().definition(format!("{ns}A")),
        q().roots_only(true),
        q().updated_between(Some(t + 3.0), Some(t + 8.0)),
        q().created_between(Some(t + 10.0), None),
        q().finished_between(Some(0.0), None),
        q().search(format!("{ns}e1")),
        q().definition(format!("{ns}B"))
            .roots_only(true)
            .updated_between(None, Some(t + 5.0)),
        ListQuery::new().definition(format!("{ns}B")),
    ];
    for query in queries {
        let listed = all_pages(store, query.clone().limit(1_000));
        let mut expected: Vec<(Status, u64)> = Status::ALL.iter().map(|s| (*s, 0)).collect();
        for summary in &listed {
            if let Some(slot) = expected.iter_mut().find(|(s, _)| *s == summary.status) {
                slot.1 += 1;
            }
        }
        let counts = store.count_by_status(&query).expect("counts");
        assert_eq!(counts, expected, "{query:?}");
        // The status filter, the cursor, the page size and the order do not change them.
        let noisy = query
            .clone()
            .status([Status::Failed])
            .limit(1)
            .order(ListOrder::UpdatedDesc);
        assert_eq!(
            store.count_by_status(&noisy).expect("counts"),
            expected,
            "{noisy:?}"
        );
    }
    // The whole scope: 14 executions, by status as populated.
    let total: u64 = store
        .count_by_status(&q())
        .expect("counts")
        .iter()
        .map(|(_, n)| n)
        .sum();
    assert_eq!(total, 14);
    let nothing = store
        .count_by_status(&q().definition(format!("{ns}none")))
        .expect("counts");
    assert!(nothing.iter().all(|(_, n)| *n == 0));
    // Bad input: the listing's own checks.
    assert_eq!(code(store.count_by_status(&q().definition(""))), "INVALID_INPUT");
    assert_eq!(
        code(store.count_by_status(&q().created_between(Some(t + 5.0), Some(t)))),
        "INVALID_INPUT"
    );
    assert_eq!(
        code(store.count_by_status(&ListQuery::new().search(""))),
        "INVALID_INPUT"
    );
}
