//! Unit tests over `MemoryStore`: the stamp, conflicts injected between a load and its write,
//! and the retry on region children. The behaviour on every backend is in
//! `conformance_control.rs`.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::executions::model::ChildState;
use crate::MemoryStore;

fn put(store: &MemoryStore, id: &str, status: Status, parent: Option<&str>, kids: &[&str]) -> Execution {
    let mut exe = Execution::new(id, "d");
    exe.status = status;
    exe.parent_id = parent.map(str::to_owned);
    for k in kids {
        exe.children
            .insert((*k).to_owned(), ChildState::region("d.r", "r"));
    }
    store.save(&mut exe).unwrap();
    exe
}

#[test]
fn stamp_is_harels() {
    let mut exe = Execution::new("x", "d");
    exe.status = Status::Cancelled;
    stamp(&mut exe, 5.0);
    assert_eq!(
        (exe.created_at, exe.updated_at, exe.finished_at),
        (Some(5.0), Some(5.0), Some(5.0))
    );
    stamp(&mut exe, 6.0);
    assert_eq!(
        (exe.created_at, exe.updated_at, exe.finished_at),
        (Some(5.0), Some(6.0), Some(5.0))
    );
    exe.status = Status::Running;
    stamp(&mut exe, 7.0);
    assert_eq!(
        exe.finished_at, None,
        "leaving a finished status clears finished_at"
    );
}

/// A store that, on the first `moves` loads of `victim`, commits a change to it right after
/// reading it, so the caller's write is stale.
struct Racing {
    inner: MemoryStore,
    victim: String,
    moves: AtomicUsize,
}

impl Racing {
    fn new(inner: MemoryStore, victim: &str, moves: usize) -> Self {
        Racing {
            inner,
            victim: victim.into(),
            moves: AtomicUsize::new(moves),
        }
    }
}

impl ExecutionStore for Racing {
    fn capabilities(&self) -> crate::executions::Capabilities {
        self.inner.capabilities()
    }
    fn trace_max(&self) -> Option<u32> {
        self.inner.trace_max()
    }
    fn commit(&self, exe: &mut Execution, effects: &Effects) -> crate::Result<Vec<i64>> {
        self.inner.commit(exe, effects)
    }
    fn load(&self, id: &str) -> crate::Result<Option<Execution>> {
        let got = self.inner.load(id)?;
        if id == self.victim && self.moves.load(Ordering::SeqCst) > 0 {
            self.moves.fetch_sub(1, Ordering::SeqCst);
            let mut moved = got.clone().expect("the victim is stored");
            moved.processed_events += 1;
            self.inner.save(&mut moved)?;
        }
        Ok(got)
    }
    fn load_for_event(&self, id: &str, event_id: &str) -> crate::Result<(Option<Execution>, bool)> {
        self.inner.load_for_event(id, event_id)
    }
    fn is_processed(&self, execution_id: &str, event_id: &str) -> crate::Result<bool> {
        self.inner.is_processed(execution_id, event_id)
    }
    fn list_executions(
        &self,
        query: &crate::executions::ListQuery,
    ) -> crate::Result<crate::executions::ExecutionPage> {
        self.inner.list_executions(query)
    }
    fn pending_outbox(
        &self,
        after: Option<i64>,
        limit: usize,
    ) -> crate::Result<Vec<crate::executions::OutboxEntry>> {
        self.inner.pending_outbox(after, limit)
    }
    fn ack_outbox(&self, seq: i64) -> crate::Result<()> {
        self.inner.ack_outbox(seq)
    }
    fn pending_spawns(
        &self,
        after: Option<i64>,
        limit: usize,
    ) -> crate::Result<Vec<crate::executions::SpawnEntry>> {
        self.inner.pending_spawns(after, limit)
    }
    fn ack_spawn(&self, seq: i64) -> crate::Result<()> {
        self.inner.ack_spawn(seq)
    }
    fn due_timers(
        &self,
        now: f64,
        after: Option<&crate::executions::DueTimer>,
        limit: usize,
    ) -> crate::Result<Vec<crate::executions::DueTimer>> {
        self.inner.due_timers(now, after, limit)
    }
    fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> crate::Result<bool> {
        self.inner.delete_timer(execution_id, path, fire_at)
    }
    fn read_trace(&self, execution_id: &str) -> crate::Result<Vec<crate::executions::TraceStep>> {
        self.inner.read_trace(execution_id)
    }
    fn append_trace(&self, execution_id: &str, step: &crate::executions::TraceStep) -> crate::Result<i64> {
        self.inner.append_trace(execution_id, step)
    }
    fn ids_with_prefix(&self, prefix: &str) -> crate::Result<Vec<String>> {
        self.inner.ids_with_prefix(prefix)
    }
    fn purge(&self, execution_id: &str, expected_version: i64) -> crate::Result<bool> {
        self.inner.purge(execution_id, expected_version)
    }
}

#[test]
fn a_root_that_moves_is_a_conflict_that_writes_nothing() {
    let mem = MemoryStore::new();
    put(&mem, "r", Status::Running, None, &["r:a"]);
    put(&mem, "r:a", Status::Running, Some("r"), &[]);
    let store = Racing::new(mem, "r", 1);
    match suspend(&store, "r", None, 1.0) {
        Err(StoreError::Conflict {
            id,
            expected: 1,
            found: Some(2),
        }) => assert_eq!(id, "r"),
        other => panic!("{other:?}"),
    }
    assert_eq!(store.load("r").unwrap().unwrap().status, Status::Running);
    assert_eq!(
        store.load("r:a").unwrap().unwrap().status,
        Status::Running,
        "no child moved"
    );
}

#[test]
fn a_region_that_moves_is_retried_then_a_conflict() {
    let mem = MemoryStore::new();
    put(&mem, "r", Status::Running, None, &["r:a"]);
    put(&mem, "r:a", Status::Running, Some("r"), &[]);
    // the propagation loads each child once to list it, then once per attempt
    let store = Racing::new(mem, "r:a", 3);
    let out = suspend(&store, "r", None, 1.0).unwrap();
    assert_eq!(out.changed.len(), 2, "the region's write went through on a retry");
    assert_eq!(store.load("r:a").unwrap().unwrap().status, Status::Suspended);

    let mem = MemoryStore::new();
    put(&mem, "r", Status::Running, None, &["r:a"]);
    put(&mem, "r:a", Status::Running, Some("r"), &[]);
    let store = Racing::new(mem, "r:a", 1 + RETRIES);
    assert!(matches!(
        suspend(&store, "r", None, 1.0),
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(
        store.load("r").unwrap().unwrap().status,
        Status::Suspended,
        "the root's write stays"
    );
}

#[test]
fn a_member_that_moves_during_purge_stops_it_with_the_root_kept() {
    let mem = MemoryStore::new();
    put(&mem, "r", Status::Done, None, &["r:a"]);
    put(&mem, "r:a", Status::Done, Some("r"), &[]);
    // collect_tree loads `r:a` once (by prefix); the race moves it right after
    let store = Racing::new(mem, "r:a", 1);
    match purge(&store, "r", None, None) {
        Err(StoreError::Conflict {
            id,
            expected: 1,
            found: Some(2),
        }) => assert_eq!(id, "r:a"),
        other => panic!("{other:?}"),
    }
    assert!(store.load("r").unwrap().is_some());
    let again = purge(&store, "r", None, None).expect("a re-run finishes it");
    assert_eq!(again.removed, ["r:a", "r"]);
}

#[test]
fn purge_finished_records_a_conflict_and_goes_on() {
    let mem = MemoryStore::new();
    let done = |id: &str, parent: Option<&str>, kids: &[&str]| {
        let mut e = put(&mem, id, Status::Done, parent, kids);
        e.finished_at = Some(1.0);
        mem.save(&mut e).unwrap();
    };
    done("a", None, &["a:k"]);
    done("a:k", Some("a"), &[]);
    done("b", None, &[]);
    let store = Racing::new(mem, "a:k", 1);
    let report = purge_finished(&store, &PurgeFinished::new(1.0, 10.0), None).unwrap();
    assert_eq!(report.purged, ["b"]);
    assert!(report.refused["a"].contains("stale write to a:k"), "{report:?}");
}
