//! The demo's own checks: every status, the same store from the same seed, consistent
//! stories.

use super::summary::Summary;
use super::*;

fn demo(n: u32, seed: u64) -> (MemoryStore, Summary) {
    let store = MemoryStore::new();
    let now = 1_750_000_000.0;
    let mut seen = 0;
    generate(
        &store,
        &Options {
            executions: n,
            seed,
            now,
        },
        &mut |w| seen = w,
    )
    .unwrap();
    assert_eq!(seen, u64::from(n));
    let summary = summarize(&store, now).unwrap();
    (store, summary)
}

#[test]
fn writes_exactly_n_executions_covering_every_status() {
    for n in [20, 21, 23, 137] {
        let (_, s) = demo(n, 7);
        assert_eq!(s.executions, n as usize);
        for (status, count) in &s.by_status {
            assert!(*count > 0, "{n}: no {status}: {s:?}");
        }
        assert_eq!(s.by_definition.len(), 3, "{s:?}");
        assert!(s.roots < s.executions, "no children: {s:?}");
        assert!(
            s.outbox > 0 && s.spawns > 0 && s.timers > 0 && s.trace_steps > n as usize,
            "{s:?}"
        );
    }
}

#[test]
fn same_seed_same_store() {
    let (a, sa) = demo(80, 3);
    let (b, sb) = demo(80, 3);
    assert_eq!(sa, sb);
    let page = a.list_executions(&ListQuery::new().limit(MAX_PAGE)).unwrap();
    assert_eq!(
        page,
        b.list_executions(&ListQuery::new().limit(MAX_PAGE)).unwrap()
    );
    for item in &page.items {
        assert_eq!(a.load(&item.id).unwrap(), b.load(&item.id).unwrap());
        assert_eq!(a.read_trace(&item.id).unwrap(), b.read_trace(&item.id).unwrap());
    }
    let (_, other) = demo(80, 4);
    assert_ne!(sa, other);
}

#[test]
fn stories_are_consistent() {
    let now = 1_750_000_000.0;
    let (store, _) = demo(300, 11);
    let page = store.list_executions(&ListQuery::new().limit(MAX_PAGE)).unwrap();
    let mut parents_with_finished_children = 0;
    for item in &page.items {
        let exe = store.load(&item.id).unwrap().unwrap();
        let trace = store.read_trace(&exe.id).unwrap();
        // Every stamp is in the past, in order.
        let created = exe.created_at.unwrap();
        assert!(
            created <= exe.updated_at.unwrap() && exe.updated_at.unwrap() <= now,
            "{exe:?}"
        );
        let stamps: Vec<f64> = trace.iter().map(|s| s["timestamp"].as_f64().unwrap()).collect();
        assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "{stamps:?}");
        // Each step starts where the previous one ended.
        for w in trace.windows(2) {
            assert_eq!(w[1]["from_path"], w[0]["to_path"], "{}", exe.id);
        }
        match exe.status {
            Status::Pending => assert!(trace.is_empty() && exe.active_path.is_none()),
            Status::Done | Status::Cancelled => {
                assert!(exe.outcome.is_some() && exe.finished_at.is_some(), "{exe:?}")
            }
            Status::Failed => assert!(exe.error.is_some(), "{exe:?}"),
            _ => {}
        }
        if exe.status != Status::Pending {
            assert_eq!(trace.last().unwrap()["to_path"], json!(exe.active_path));
        }
        if let Some(parent) = &exe.parent_id {
            assert!(
                exe.id.starts_with(&format!("{parent}:{}:", exe.root_path)),
                "{}",
                exe.id
            );
            assert_eq!(exe.child_id.as_deref(), Some(exe.id.as_str()));
            let p = store.load(parent).unwrap().unwrap();
            assert!(p.children.contains_key(&exe.id));
        }
        if exe.children.values().any(|c| c.finished) {
            parents_with_finished_children += 1;
        }
    }
    assert!(parents_with_finished_children > 0);
    // Timers belong to executions in the timed state.
    for t in paging::timer_pages(&store, ALL_TIMERS, None, MAX_PAGE).flat_map(Result::unwrap) {
        let exe = store.load(&t.execution_id).unwrap().unwrap();
        assert_eq!(exe.active_path.as_deref(), Some(t.path.as_str()));
        assert!(timeout_of(&t.path).is_some());
    }
}
