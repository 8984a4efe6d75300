//! The log as a stream: replayed, then followed, every envelope once; nothing left running
//! once the stream is dropped.

mod common;

on_every_backend!(
    a_subscription_replays_then_follows_every_envelope_once,
    a_stream_is_a_futures_stream_and_ends_after_an_error,
);

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use common::{entry, eventually, fixture, ws, Backend, Fixture};
use execstore::workspace::WorkspaceRef;
use execstore::StoreError;
use execstore_tokio::{EnvelopeStream, FOLLOW_WAIT};
use futures_core::Stream;
use tokio::time::timeout;

async fn next(stream: &mut EnvelopeStream) -> execstore::workspace::Envelope {
    timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("an envelope within 5 s")
        .expect("the stream goes on")
        .expect("no error")
}

async fn a_subscription_replays_then_follows_every_envelope_once(backend: Backend) {
    let Fixture {
        owner: mem,
        s,
        dir: _dir,
        ..
    } = fixture(backend);
    let w = ws("sub");
    for i in 0..5 {
        let mut tx = s.transaction(&w).await.expect("begin");
        tx.append(&[entry(&format!("old-{i}"))]).await.expect("append");
        tx.commit().await.expect("commit");
    }
    assert_eq!(
        Arc::strong_count(&mem),
        2,
        "the test's handle and the async face's"
    );

    let mut stream = s.subscribe(&w, 2);
    // Committed from another task while the stream replays and follows: 20 transactions of
    // one or two entries.
    let writer = tokio::spawn({
        let (s, w) = (s.clone(), w.clone());
        async move {
            let mut wrote: execstore::Result<()> = Ok(());
            for i in 0..20 {
                let mut entries = vec![entry(&format!("new-{i}-a"))];
                if i % 2 == 0 {
                    entries.push(entry(&format!("new-{i}-b")));
                }
                wrote = s
                    .run_transaction(&w, |mut tx| async move {
                        tx.append(&entries).await?;
                        tokio::task::yield_now().await;
                        Ok(())
                    })
                    .await;
                if wrote.is_err() {
                    break;
                }
                if i % 5 == 0 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            wrote
        }
    });
    let total = 5 + 30;
    let mut seen = Vec::new();
    while seen.len() < total - 2 {
        seen.push(next(&mut stream).await);
    }
    writer.await.expect("writer").expect("writes");
    let seqs: Vec<i64> = seen.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (3..=total as i64).collect::<Vec<_>>(),
        "each once, in order"
    );
    assert_eq!(seen[0].id, "old-2");
    assert_eq!(seen[3].id, "new-0-a");
    assert_eq!(seen[4].id, "new-0-b");
    assert_eq!(stream.last_seq(), total as i64);
    // Nothing more until another commit.
    assert!(timeout(FOLLOW_WAIT, stream.next()).await.is_err());
    assert_eq!(Arc::strong_count(&mem), 3, "the follower holds the storage");

    drop(stream);
    assert!(
        eventually(Duration::from_secs(2), || Arc::strong_count(&mem) == 2).await,
        "the follower ended after the stream was dropped"
    );
}

async fn a_stream_is_a_futures_stream_and_ends_after_an_error(backend: Backend) {
    let Fixture {
        owner: mem,
        s,
        dir: _dir,
        ..
    } = fixture(backend);
    // Bad arguments: one error, then the end.
    let mut bad = s.subscribe(&WorkspaceRef::new("", "w"), 0);
    assert!(matches!(
        bad.next().await,
        Some(Err(StoreError::InvalidInput { .. }))
    ));
    assert!(bad.next().await.is_none());
    let mut negative = s.subscribe(&ws("x"), -1);
    assert!(matches!(
        negative.next().await,
        Some(Err(StoreError::InvalidInput { .. }))
    ));

    // Polled through the `Stream` trait, as a combinator would.
    let w = ws("trait");
    let mut tx = s.transaction(&w).await.expect("begin");
    tx.append(&[entry("a"), entry("b")]).await.expect("append");
    tx.commit().await.expect("commit");
    let mut stream = s.subscribe(&w, 0);
    let mut got = Vec::new();
    while got.len() < 2 {
        let item = timeout(
            Duration::from_secs(5),
            std::future::poll_fn(|cx| Pin::new(&mut stream).poll_next(cx)),
        )
        .await
        .expect("in time");
        got.push(item.expect("goes on").expect("no error").id);
    }
    assert_eq!(got, ["a", "b"]);
    drop(stream);
    assert!(eventually(Duration::from_secs(2), || Arc::strong_count(&mem) == 2).await);
}
