//! Helpers shared by the test files (each file uses some of them).
#![allow(dead_code)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use execstore::executions::JsonObject;
use execstore::workspace::MemoryWorkspaceStorage;
use execstore::workspace::{Entry, ManualClock, RuleProgress, Timestamp, WorkspaceRef, WorkspaceStorage};
use execstore_sqlite::{SqliteWorkspaceOptions, SqliteWorkspaceStorage, Synchronous};
use execstore_tokio::AsyncWorkspaceStorage;
use serde_json::{json, Value};

/// 2026-01-01T12:00:00Z.
pub fn t0() -> Timestamp {
    Timestamp::from_micros(1_767_268_800_000_000).expect("in range")
}

pub fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

pub fn entry(id: &str) -> Entry {
    Entry::new(
        id,
        json!({"kind": "source", "name": "tokio-tests"}),
        obj(json!({"type": "test:tick", "n": 1})),
    )
}

pub fn progress(head: i64, tx: usize) -> RuleProgress {
    RuleProgress::from_doc(obj(json!({"head": head, "tx": tx})))
}

/// The `"head"` a [`progress`] document records.
pub fn progress_head(p: &RuleProgress) -> i64 {
    p.doc().get("head").and_then(Value::as_i64).unwrap_or(-1)
}

/// A backend the workspace tests run on.
#[derive(Clone, Copy, Debug)]
pub enum Backend {
    Memory,
    Sqlite,
}

/// A storage under test: the handle the test keeps (to count the storage's owners), its async
/// face, its clock, and the directory of its file (removed when dropped: keep the fixture).
pub struct Fixture {
    pub owner: Arc<dyn WorkspaceStorage>,
    pub s: AsyncWorkspaceStorage,
    pub clock: ManualClock,
    pub dir: Option<tempfile::TempDir>,
}

pub fn fixture(backend: Backend) -> Fixture {
    let clock = ManualClock::new(t0());
    let (owner, dir): (Arc<dyn WorkspaceStorage>, _) = match backend {
        Backend::Memory => (
            Arc::new(MemoryWorkspaceStorage::new(Arc::new(clock.clone()))),
            None,
        ),
        Backend::Sqlite => {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let options = SqliteWorkspaceOptions::new()
                .clock(Arc::new(clock.clone()))
                .synchronous(Synchronous::Off);
            let storage = SqliteWorkspaceStorage::open(dir.path().join("ws.db"), options).expect("open");
            (Arc::new(storage), Some(dir))
        }
    };
    Fixture {
        s: AsyncWorkspaceStorage::new(owner.clone()),
        owner,
        clock,
        dir,
    }
}

/// The memory storage's fixture.
pub fn memory() -> Fixture {
    fixture(Backend::Memory)
}

/// Runs each named `async fn(Backend)` as a test on every backend, on a multi-threaded
/// runtime.
#[macro_export]
macro_rules! on_every_backend {
    ($($check:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    super::$check(super::common::Backend::Memory).await
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $check() {
                    super::$check(super::common::Backend::Sqlite).await
                }
            )*
        }
    };
}

pub fn ws(name: &str) -> WorkspaceRef {
    WorkspaceRef::new("tenant", name)
}

/// Polls `inner` at most `polls` times, each time it is woken, then drops it: a cancellation
/// at the `polls`-th await it reaches. `Some` if it finished first.
pub struct CancelAfter<F: Future> {
    inner: Option<Pin<Box<F>>>,
    polls: usize,
}

impl<F: Future> CancelAfter<F> {
    pub fn new(inner: F, polls: usize) -> Self {
        CancelAfter {
            inner: Some(Box::pin(inner)),
            polls,
        }
    }
}

impl<F: Future> Future for CancelAfter<F> {
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if this.polls == 0 {
            this.inner = None;
            return Poll::Ready(None);
        }
        this.polls -= 1;
        match this.inner.as_mut() {
            Some(inner) => inner.as_mut().poll(cx).map(Some),
            None => Poll::Ready(None),
        }
    }
}

/// Polls `fut` once and drops it: a cancellation at its first await.
pub async fn poll_once<F: Future>(fut: F) -> Option<F::Output> {
    let mut fut = Box::pin(fut);
    std::future::poll_fn(|cx| match fut.as_mut().poll(cx) {
        Poll::Ready(out) => Poll::Ready(Some(out)),
        Poll::Pending => Poll::Ready(None),
    })
    .await
}

/// Waits up to `limit` for `check` to hold.
pub async fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    check()
}
