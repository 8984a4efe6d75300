//! Cancelling async workspace transactions at every await: nothing half-applied, no workspace
//! left held.

mod common;

use common::Backend;

on_every_backend!(
    cancelled_transactions_leave_a_gap_free_all_or_nothing_log,
    concurrent_cancelled_transactions_stay_all_or_nothing,
    a_cancelled_begin_behind_a_holder_leaves_the_workspace_free,
    a_cancelled_call_rolls_its_transaction_back,
    run_transaction_commits_on_ok_and_rolls_back_otherwise,
);

use std::collections::BTreeMap;
use std::time::Duration;

use common::{entry, fixture, poll_once, progress, progress_head, ws, CancelAfter};
use execstore::workspace::{LogQuery, WorkspaceRef};
use execstore::{Result, StoreError};
use execstore_tokio::{AsyncTransaction, AsyncWorkspaceStorage};
use tokio::task::yield_now;
use tokio::time::timeout;

const RULE: &str = "counter";

/// The seed's transaction: begins, appends three entries in two calls and saves the progress
/// row, yielding between every step, then commits.
async fn step(s: AsyncWorkspaceStorage, w: WorkspaceRef, k: usize) -> Result<()> {
    let mut tx = s.transaction(&w).await?;
    yield_now().await;
    let head = tx.head_seq().await?;
    yield_now().await;
    tx.append(&[entry(&format!("k{k}-0")), entry(&format!("k{k}-1"))])
        .await?;
    yield_now().await;
    tx.append(&[entry(&format!("k{k}-2"))]).await?;
    yield_now().await;
    tx.save_progress(RULE, &progress(head + 3, k)).await?;
    yield_now().await;
    tx.commit().await
}

/// The next transaction begins within a second, and sees a log consistent with its progress.
async fn next_begins(s: &AsyncWorkspaceStorage, w: &WorkspaceRef, k: usize) {
    let mut tx: AsyncTransaction = timeout(Duration::from_secs(1), s.transaction(w))
        .await
        .unwrap_or_else(|_| panic!("after k={k}: the next transaction did not begin within 1 s"))
        .expect("begin");
    let head = tx.head_seq().await.expect("head");
    let saved = tx.progress(RULE).await.expect("progress");
    match saved {
        Some(p) => assert_eq!(progress_head(&p), head, "after k={k}: progress vs log"),
        None => assert_eq!(head, 0, "after k={k}: a log without progress"),
    }
    // Dropped, not committed: a rollback, which must free the workspace too.
    drop(tx);
}

async fn cancelled_transactions_leave_a_gap_free_all_or_nothing_log(backend: Backend) {
    let fx = fixture(backend);
    let s = fx.s.clone();
    let w = ws("cancel");
    let mut finished = BTreeMap::new();
    for k in 0..100usize {
        let fut = step(s.clone(), w.clone(), k);
        let done = match k % 3 {
            // Dropped after k wake-ups.
            0 => CancelAfter::new(fut, k / 3).await,
            // A task aborted after the test yielded k/3 times.
            1 => {
                let task = tokio::spawn(fut);
                for _ in 0..k / 3 {
                    yield_now().await;
                }
                task.abort();
                match task.await {
                    Ok(result) => Some(result),
                    Err(e) if e.is_cancelled() => None,
                    Err(e) => panic!("k={k}: {e}"),
                }
            }
            // A timeout of a few tens of microseconds per k.
            _ => timeout(Duration::from_micros(30 * k as u64), fut).await.ok(),
        };
        finished.insert(k, done.is_some());
        if let Some(result) = done {
            result.unwrap_or_else(|e| panic!("k={k}: {e}"));
        }
        next_begins(&s, &w, k).await;
    }
    let (completed, cancelled, committed) = check_log(&s, &w, &finished).await;
    assert!(
        completed > 0 && cancelled > 0,
        "{completed} completed, {cancelled} cancelled"
    );
    eprintln!("{completed} completed, {cancelled} cancelled ({committed} of them committed)");
}

/// The log is gap-free, each `step()` is in it whole or not at all (whole if it completed),
/// and the progress row matches the log. Returns how many steps completed, were cancelled,
/// and were cancelled yet committed.
async fn check_log(
    s: &AsyncWorkspaceStorage,
    w: &WorkspaceRef,
    finished: &BTreeMap<usize, bool>,
) -> (usize, usize, usize) {
    let log = s.read(w, &LogQuery::new()).await.expect("read");
    let seqs: Vec<i64> = log.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=log.len() as i64).collect::<Vec<_>>(), "gap-free");
    let mut by_tx: BTreeMap<usize, Vec<(i64, String)>> = BTreeMap::new();
    for e in &log {
        let k: usize = e.id[1..]
            .split('-')
            .next()
            .and_then(|k| k.parse().ok())
            .expect("an id of step()");
        by_tx.entry(k).or_default().push((e.seq, e.id.clone()));
    }
    for (k, entries) in &by_tx {
        let first = entries[0].0;
        let expected: Vec<(i64, String)> = (0..3).map(|i| (first + i, format!("k{k}-{i}"))).collect();
        assert_eq!(
            entries, &expected,
            "k={k}: all three entries, together and in order"
        );
    }
    for (k, done) in finished {
        if *done {
            assert!(by_tx.contains_key(k), "k={k} completed but is not in the log");
        }
    }
    let saved = s.progress(w).await.expect("progress");
    match saved.as_slice() {
        [(rule, p)] => {
            assert_eq!(rule, RULE);
            assert_eq!(progress_head(p), log.len() as i64, "progress vs log");
        }
        other => assert!(other.is_empty() && log.is_empty(), "progress {other:?}"),
    }
    let completed = finished.values().filter(|d| **d).count();
    // A cancelled one may have committed (never more than once).
    assert!(by_tx.len() >= completed);
    (completed, finished.len() - completed, by_tx.len() - completed)
}

async fn concurrent_cancelled_transactions_stay_all_or_nothing(backend: Backend) {
    let fx = fixture(backend);
    let s = fx.s.clone();
    let w = ws("concurrent");
    let mut tasks = Vec::new();
    for t in 0..8usize {
        let (s, w) = (s.clone(), w.clone());
        tasks.push(tokio::spawn(async move {
            let mut finished = Vec::new();
            for i in 0..15usize {
                let k = t * 100 + i;
                // Deadlines from nothing to a few milliseconds, some of them spent waiting
                // for the workspace.
                let deadline = Duration::from_micros(((k * 7919) % 4000) as u64);
                let done = timeout(deadline, step(s.clone(), w.clone(), k)).await;
                if let Ok(result) = &done {
                    assert!(result.is_ok(), "k={k}: {result:?}");
                }
                finished.push((k, done.is_ok()));
            }
            finished
        }));
    }
    let mut finished = BTreeMap::new();
    for task in tasks {
        finished.extend(task.await.expect("task"));
    }
    next_begins(&s, &w, usize::MAX).await;
    let (completed, cancelled, committed) = check_log(&s, &w, &finished).await;
    eprintln!("{completed} completed, {cancelled} cancelled ({committed} of them committed)");
}

async fn a_cancelled_begin_behind_a_holder_leaves_the_workspace_free(backend: Backend) {
    let fx = fixture(backend);
    let s = fx.s.clone();
    let w = ws("begin");
    let mut holder = s.transaction(&w).await.expect("begin");

    // An aborted task whose begin waits behind the holder.
    let waiter = tokio::spawn({
        let (s, w) = (s.clone(), w.clone());
        async move { s.transaction(&w).await.map(drop) }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiter.is_finished(), "a begin did not wait for the holder");
    waiter.abort();
    assert!(waiter.await.expect_err("aborted").is_cancelled());
    // A timed-out one, and one polled once and dropped.
    assert!(timeout(Duration::from_millis(50), s.transaction(&w))
        .await
        .is_err());
    assert!(poll_once(s.transaction(&w)).await.is_none());

    holder.append(&[entry("held")]).await.expect("append");
    holder.commit().await.expect("commit");

    // Each cancelled begin gets the workspace in turn and gives it back at once.
    for i in 0..3 {
        let mut tx = timeout(Duration::from_secs(1), s.transaction(&w))
            .await
            .expect("the workspace is free within 1 s")
            .expect("begin");
        tx.append(&[entry(&format!("after-{i}"))]).await.expect("append");
        tx.commit().await.expect("commit");
    }
    let ids: Vec<String> = s
        .read(&w, &LogQuery::new())
        .await
        .expect("read")
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(ids, ["held", "after-0", "after-1", "after-2"]);
}

async fn a_cancelled_call_rolls_its_transaction_back(backend: Backend) {
    let fx = fixture(backend);
    let s = fx.s.clone();
    let w = ws("call");
    let mut tx = s.transaction(&w).await.expect("begin");
    tx.append(&[entry("first")]).await.expect("append");
    // Cancelled at its first await (or just after its blocking call ended).
    let cancelled = CancelAfter::new(tx.append(&[entry("second")]), 1).await;
    if cancelled.is_none() {
        assert!(matches!(
            tx.head_seq().await,
            Err(StoreError::Backend { retryable: false, .. })
        ));
        assert!(tx.commit().await.is_err(), "a commit after a cancelled call");
    } else {
        // The call won the race: nothing was cancelled; end it as the owner would.
        drop(tx);
    }
    let mut next = timeout(Duration::from_secs(1), s.transaction(&w))
        .await
        .expect("free within 1 s")
        .expect("begin");
    assert_eq!(next.head_seq().await.expect("head"), 0, "nothing of it committed");
    next.rollback().await.expect("rollback");

    // A transaction dropped with a call in flight: rolled back after that call.
    let mut tx = s.transaction(&w).await.expect("begin");
    let in_flight = tokio::spawn(async move { tx.append(&[entry("never")]).await.map(drop) });
    in_flight.abort();
    let _ = in_flight.await;
    let mut next = timeout(Duration::from_secs(1), s.transaction(&w))
        .await
        .expect("free within 1 s")
        .expect("begin");
    assert_eq!(next.head_seq().await.expect("head"), 0);
    next.commit().await.expect("commit");
}

async fn run_transaction_commits_on_ok_and_rolls_back_otherwise(backend: Backend) {
    let fx = fixture(backend);
    let s = fx.s.clone();
    let w = ws("closure");
    let head = s
        .run_transaction(&w, |mut tx| async move {
            tx.append(&[entry("kept")]).await?;
            tx.head_seq().await
        })
        .await
        .expect("committed");
    assert_eq!(head, 1);

    let failed: Result<()> = s
        .run_transaction(&w, |mut tx| async move {
            tx.append(&[entry("dropped")]).await?;
            Err(StoreError::invalid("test", "the closure failed"))
        })
        .await;
    assert!(matches!(failed, Err(StoreError::InvalidInput { .. })));

    // Cancelled while the closure waits forever, holding the workspace.
    let hung = timeout(
        Duration::from_millis(100),
        s.run_transaction(&w, |mut tx| async move {
            tx.append(&[entry("hung")]).await?;
            std::future::pending::<Result<()>>().await
        }),
    )
    .await;
    assert!(hung.is_err(), "the closure cannot finish");

    // The closure ends the transaction itself: committed or rolled back, it is not
    // committed twice.
    s.run_transaction(&w, |mut tx| async move {
        tx.append(&[entry("own-commit")]).await?;
        tx.commit().await
    })
    .await
    .expect("a commit the closure made");
    s.run_transaction(&w, |mut tx| async move {
        tx.append(&[entry("own-rollback")]).await?;
        tx.rollback().await
    })
    .await
    .expect("a rollback the closure made");

    let ids: Vec<String> = timeout(Duration::from_secs(1), s.read(&w, &LogQuery::new()))
        .await
        .expect("in time")
        .expect("read")
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(ids, ["kept", "own-commit"]);
}
