//! The async execution store: concurrent CAS commits add up, and a cancelled commit happened
//! whole or not at all.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::{eventually, CancelAfter};
use execstore::{
    executions::{Event, Status},
    Effects, Execution, MemoryStore, StoreError,
};
use execstore_tokio::AsyncExecutionStore;

fn tick(id: &str) -> Effects {
    Effects::new()
        .emit(Some("sink"), Event::new(id, "Tick"))
        .processed(id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_commits_with_conflicts_add_up() {
    let s = AsyncExecutionStore::new(MemoryStore::new());
    let mut exe = Execution::new("counter", "counting");
    exe.status = Status::Running;
    s.save(&mut exe).await.expect("create");
    assert_eq!(exe.version, 1);

    // A conflict made on purpose: two writers from the same version.
    let mut stale = s.load("counter").await.expect("load").expect("stored");
    let mut fresh = stale.clone();
    fresh.processed_events += 1;
    s.commit(&mut fresh, tick("evt-first")).await.expect("first");
    assert_eq!(fresh.version, 2);
    match s.commit(&mut stale, tick("evt-stale")).await {
        Err(StoreError::Conflict {
            expected: 1,
            found: Some(2),
            ..
        }) => {}
        other => panic!("a stale commit: {other:?}"),
    }
    assert_eq!(stale.version, 1, "a lost commit leaves the caller's version");

    const TASKS: usize = 8;
    const STEPS: usize = 15;
    let mut workers = Vec::new();
    for t in 0..TASKS {
        let s = s.clone();
        workers.push(tokio::spawn(async move {
            let mut conflicts = 0usize;
            for i in 0..STEPS {
                let id = format!("evt-{t}-{i}");
                loop {
                    let mut exe = s.load("counter").await?.expect("stored");
                    let before = exe.version;
                    exe.processed_events += 1;
                    tokio::task::yield_now().await;
                    match s.commit(&mut exe, tick(&id)).await {
                        Ok(seqs) => {
                            assert_eq!(seqs.len(), 1);
                            assert_eq!(exe.version, before + 1, "written back");
                            break;
                        }
                        Err(StoreError::Conflict { .. }) => {
                            assert_eq!(exe.version, before);
                            conflicts += 1;
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            execstore::Result::Ok(conflicts)
        }));
    }
    let mut conflicts = 0;
    for w in workers {
        conflicts += w.await.expect("worker").expect("no error");
    }
    let steps = (TASKS * STEPS) as i64;
    let stored = s.load("counter").await.expect("load").expect("stored");
    assert_eq!(stored.version, 2 + steps, "{conflicts} conflicts retried");
    assert_eq!(stored.processed_events, 1 + steps);
    let outbox = s.pending_outbox(None, 1000).await.expect("outbox");
    assert_eq!(outbox.len() as i64, 1 + steps, "one outbox entry per commit");
    for t in 0..TASKS {
        for i in 0..STEPS {
            assert!(s
                .is_processed("counter", &format!("evt-{t}-{i}"))
                .await
                .expect("read"));
        }
    }
    assert!(!s.is_processed("counter", "evt-stale").await.expect("read"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_commit_happened_whole_or_not_at_all() {
    let store = Arc::new(MemoryStore::new());
    let s = AsyncExecutionStore::from_arc(store.clone());
    let mut exe = Execution::new("cancelled", "counting");
    s.save(&mut exe).await.expect("create");
    let mut outcomes = (0, 0);
    for k in 0..60usize {
        let mut exe = s.load("cancelled").await.expect("load").expect("stored");
        let before = exe.clone();
        exe.processed_events += 1;
        let id = format!("evt-{k}");
        let done = if k % 2 == 0 {
            CancelAfter::new(s.commit(&mut exe, tick(&id)), k % 3).await
        } else {
            tokio::time::timeout(Duration::from_micros(5 * k as u64), s.commit(&mut exe, tick(&id)))
                .await
                .ok()
        };
        // A cancelled commit runs on to its end (holding the store meanwhile): look after.
        assert!(
            eventually(Duration::from_secs(2), || Arc::strong_count(&store) == 2).await,
            "k={k}: a call still running"
        );
        let stored = s.load("cancelled").await.expect("load").expect("stored");
        match done {
            Some(result) => {
                result.expect("a completed commit");
                assert_eq!(exe.version, before.version + 1);
                assert_eq!(stored, exe, "written back as stored");
                outcomes.0 += 1;
            }
            None => {
                assert_eq!(exe.version, before.version, "k={k}: not written back");
                assert!(
                    stored.version == before.version || stored.version == before.version + 1,
                    "k={k}: {} after {}",
                    stored.version,
                    before.version
                );
                outcomes.1 += 1;
            }
        }
        // All or nothing: the version moved iff the event was recorded and emitted.
        let moved = stored.version == before.version + 1;
        assert_eq!(
            s.is_processed("cancelled", &id).await.expect("read"),
            moved,
            "k={k}"
        );
        let emitted = s
            .pending_outbox(None, 1000)
            .await
            .expect("outbox")
            .iter()
            .any(|e| e.event.id == id);
        assert_eq!(emitted, moved, "k={k}");
        assert_eq!(stored.processed_events - before.processed_events, moved as i64);
    }
    let stored = s.load("cancelled").await.expect("load").expect("stored");
    let outbox: BTreeSet<String> = s
        .pending_outbox(None, 1000)
        .await
        .expect("outbox")
        .into_iter()
        .map(|e| e.event.id)
        .collect();
    assert_eq!(outbox.len() as i64, stored.version - 1);
    assert!(
        outcomes.0 > 0 && outcomes.1 > 0,
        "completed/cancelled {outcomes:?}"
    );
}
