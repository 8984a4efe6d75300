use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::*;
use crate::MemoryStore;

#[test]
fn duplicate_keeps_every_kind_and_its_fields() {
    let with_source = StoreError::backend(std::io::Error::other("io"), true);
    for e in StoreError::examples().into_iter().chain([with_source]) {
        let copy = duplicate(&e);
        assert_eq!(
            (copy.code(), copy.to_string(), copy.is_retryable()),
            (e.code(), e.to_string(), e.is_retryable())
        );
    }
}

/// A MemoryStore whose `commit_batch` waits for a permit, and then fails or panics as
/// told.
#[derive(Default)]
struct Gated {
    store: MemoryStore,
    permits: Mutex<Option<usize>>,
    opened: Condvar,
    entered: AtomicUsize,
    fail: Mutex<Option<&'static str>>,
}

impl Gated {
    fn closed() -> Self {
        Gated {
            permits: Mutex::new(Some(0)),
            ..Gated::default()
        }
    }

    /// Waits for a permit, then fails or panics as told.
    fn gate(&self, exes: &[Execution]) -> Result<()> {
        self.entered.fetch_add(1, Ordering::SeqCst);
        let mut permits = self.permits.lock().unwrap();
        while *permits == Some(0) {
            permits = self.opened.wait(permits).unwrap();
        }
        if let Some(p) = permits.as_mut() {
            *p -= 1;
        }
        drop(permits);
        if exes.iter().any(|exe| exe.id == "boom") {
            panic!("the store blew up");
        }
        if let Some(message) = *self.fail.lock().unwrap() {
            let io = std::io::Error::other(message);
            return Err(StoreError::backend(io, true));
        }
        Ok(())
    }

    fn allow(&self, n: usize) {
        let mut permits = self.permits.lock().unwrap();
        *permits = permits.map(|p| p + n);
        self.opened.notify_all();
    }
}

impl ExecutionStore for Gated {
    fn capabilities(&self) -> Capabilities {
        self.store.capabilities()
    }
    fn trace_max(&self) -> Option<u32> {
        self.store.trace_max()
    }
    fn commit(&self, exe: &mut Execution, effects: &Effects) -> Result<Vec<i64>> {
        self.gate(std::slice::from_ref(exe))?;
        self.store.commit(exe, effects)
    }
    fn commit_batch(&self, items: &mut [BatchItem]) -> Result<Vec<Result<Vec<i64>>>> {
        let exes: Vec<Execution> = items.iter().map(|item| item.execution.clone()).collect();
        self.gate(&exes)?;
        self.store.commit_batch(items)
    }
    fn load(&self, id: &str) -> Result<Option<Execution>> {
        self.store.load(id)
    }
    fn load_for_event(&self, id: &str, event_id: &str) -> Result<(Option<Execution>, bool)> {
        self.store.load_for_event(id, event_id)
    }
    fn is_processed(&self, execution_id: &str, event_id: &str) -> Result<bool> {
        self.store.is_processed(execution_id, event_id)
    }
    fn list_executions(&self, query: &ListQuery) -> Result<ExecutionPage> {
        self.store.list_executions(query)
    }
    fn pending_outbox(&self, after: Option<i64>, limit: usize) -> Result<Vec<OutboxEntry>> {
        self.store.pending_outbox(after, limit)
    }
    fn ack_outbox(&self, seq: i64) -> Result<()> {
        self.store.ack_outbox(seq)
    }
    fn pending_spawns(&self, after: Option<i64>, limit: usize) -> Result<Vec<SpawnEntry>> {
        self.store.pending_spawns(after, limit)
    }
    fn ack_spawn(&self, seq: i64) -> Result<()> {
        self.store.ack_spawn(seq)
    }
    fn due_timers(&self, now: f64, after: Option<&DueTimer>, limit: usize) -> Result<Vec<DueTimer>> {
        self.store.due_timers(now, after, limit)
    }
    fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> Result<bool> {
        self.store.delete_timer(execution_id, path, fire_at)
    }
    fn read_trace(&self, execution_id: &str) -> Result<Vec<TraceStep>> {
        self.store.read_trace(execution_id)
    }
    fn append_trace(&self, execution_id: &str, step: &TraceStep) -> Result<i64> {
        self.store.append_trace(execution_id, step)
    }
    fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        self.store.ids_with_prefix(prefix)
    }
    fn purge(&self, execution_id: &str, expected_version: i64) -> Result<bool> {
        self.store.purge(execution_id, expected_version)
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn queued<S: ExecutionStore>(group: &GroupCommit<S>) -> usize {
    group.lock().queue.len()
}

fn step(id: &str) -> (Execution, Effects) {
    let exe = Execution::new(id, "d");
    let effects = Effects::new().emit(None, crate::executions::Event::new(format!("{id}-out"), "E"));
    (exe, effects)
}

#[test]
fn a_lone_caller_always_leads() {
    let group = GroupCommit::new(MemoryStore::new());
    for i in 0..5 {
        let (mut exe, effects) = step(&format!("e{i}"));
        assert_eq!(group.commit(&mut exe, &effects).unwrap().len(), 1);
        assert_eq!(exe.version, 1);
        group.save(&mut exe).unwrap();
        assert_eq!(exe.version, 2);
    }
    let stats = group.stats();
    assert_eq!((stats.batches, stats.items, stats.largest_batch), (10, 10, 1));
    assert_eq!(stats.mean_batch_size(), 1.0);
    assert_eq!(GroupCommitStats::default().mean_batch_size(), 0.0);
}

/// While one batch is held in the store, callers queue; the next leader takes them all
/// (up to `max_batch`), and each gets its own outcome.
#[test]
fn callers_queued_behind_a_batch_commit_together() {
    let group = GroupCommit::with_max_batch(Gated::closed(), 3);
    std::thread::scope(|s| {
        let first = s.spawn(|| {
            let (mut exe, effects) = step("first");
            group.commit(&mut exe, &effects).map(|_| exe.version)
        });
        wait_until("the first batch is in the store", || {
            group.inner().entered.load(Ordering::SeqCst) == 1
        });
        let mut rest = Vec::new();
        for i in 0..5 {
            let group = &group;
            rest.push(s.spawn(move || {
                let (mut exe, effects) = step(&format!("q{i}"));
                if i == 2 {
                    exe.version = 7; // stale: a conflict of its own
                }
                let out = group.commit(&mut exe, &effects);
                (out.map_err(|e| e.code()), exe.version)
            }));
        }
        wait_until("five callers queue", || queued(&group) == 5);
        group.inner().allow(10);
        assert_eq!(first.join().unwrap().unwrap(), 1);
        for (i, handle) in rest.into_iter().enumerate() {
            let (out, version) = handle.join().unwrap();
            if i == 2 {
                assert_eq!((out, version), (Err("CONFLICT"), 7));
            } else {
                assert_eq!((out.map(|seqs| seqs.len()), version), (Ok(1), 1));
            }
        }
    });
    let stats = group.stats();
    assert_eq!(stats.items, 6);
    assert_eq!(stats.largest_batch, 3, "max_batch caps a batch");
    assert_eq!(stats.batches, 3, "1, then 3 and 2: {stats:?}");
}

/// A failure of the whole batch reaches every caller of it, the original (with its
/// source) to one, an equivalent to the others; nobody's version moves.
#[test]
fn a_failed_batch_fails_every_caller_of_it() {
    let group = GroupCommit::new(Gated::closed());
    std::thread::scope(|s| {
        let first = s.spawn(|| {
            let (mut exe, effects) = step("first");
            group.commit(&mut exe, &effects).map(|_| exe.version)
        });
        wait_until("the first batch is in the store", || {
            group.inner().entered.load(Ordering::SeqCst) == 1
        });
        let rest: Vec<_> = (0..4)
            .map(|i| {
                let group = &group;
                s.spawn(move || {
                    let (mut exe, effects) = step(&format!("f{i}"));
                    (group.commit(&mut exe, &effects), exe.version)
                })
            })
            .collect();
        wait_until("four callers queue", || queued(&group) == 4);
        *group.inner().fail.lock().unwrap() = Some("disk on fire");
        group.inner().allow(1);
        assert_eq!(first.join().unwrap().unwrap_err().code(), "BACKEND");
        wait_until("the second batch is in the store", || {
            group.inner().entered.load(Ordering::SeqCst) == 2
        });
        group.inner().allow(1);
        let mut with_source = 0;
        for handle in rest {
            match handle.join().unwrap() {
                (
                    Err(StoreError::Backend {
                        message,
                        retryable,
                        source,
                    }),
                    0,
                ) => {
                    assert_eq!((message.as_str(), retryable), ("disk on fire", true));
                    with_source += usize::from(source.is_some());
                }
                other => panic!("every caller of the batch gets its failure: {other:?}"),
            }
        }
        assert_eq!(with_source, 1, "the original error goes to one caller");
    });
    assert!(group.inner().store.load("f0").unwrap().is_none());
    *group.inner().fail.lock().unwrap() = None;
    group.inner().allow(100);
    let (mut exe, effects) = step("f0");
    group.commit(&mut exe, &effects).unwrap();
    assert_eq!(exe.version, 1);
}

/// A store that panics in one batch: that batch's callers get an error (the leader's
/// thread panics), nobody waits forever, and the committer keeps working.
#[test]
fn a_panicking_store_fails_its_batch_only() {
    let group = GroupCommit::new(Gated::closed());
    std::thread::scope(|s| {
        let first = s.spawn(|| {
            let (mut exe, effects) = step("first");
            group.commit(&mut exe, &effects).map(|_| exe.version)
        });
        wait_until("the first batch is in the store", || {
            group.inner().entered.load(Ordering::SeqCst) == 1
        });
        let rest: Vec<_> = ["boom", "p1", "p2"]
            .into_iter()
            .map(|id| {
                let group = &group;
                s.spawn(move || {
                    let (mut exe, effects) = step(id);
                    (
                        group.commit(&mut exe, &effects).map_err(|e| e.code()),
                        exe.version,
                    )
                })
            })
            .collect();
        wait_until("three callers queue", || queued(&group) == 3);
        group.inner().allow(100);
        assert_eq!(first.join().unwrap().unwrap(), 1);
        let outcomes: Vec<_> = rest.into_iter().map(|h| h.join()).collect();
        let panicked = outcomes.iter().filter(|o| o.is_err()).count();
        assert_eq!(panicked, 1, "the leader of the bad batch panics");
        for outcome in outcomes.into_iter().flatten() {
            assert_eq!(outcome, (Err("BACKEND"), 0));
        }
    });
    assert!(!group.state.is_poisoned());
    let (mut exe, effects) = step("after");
    group.commit(&mut exe, &effects).unwrap();
    assert_eq!(exe.version, 1);
    assert_eq!(group.stats().batches, 2, "the panicked batch is not counted");

    // A lone caller's step (committed directly) that panics does not block the next one.
    let alone = std::thread::scope(|s| {
        s.spawn(|| {
            let (mut exe, effects) = step("boom");
            group.commit(&mut exe, &effects)
        })
        .join()
    });
    assert!(alone.is_err(), "the lone caller's panic goes on in its thread");
    let (mut exe, effects) = step("after-alone");
    group.commit(&mut exe, &effects).unwrap();
    assert_eq!(group.stats().batches, 3);
}

#[test]
fn a_poisoned_lock_is_taken_over() {
    let group = GroupCommit::new(MemoryStore::new());
    std::thread::scope(|s| {
        let joined = s
            .spawn(|| {
                let _state = group.state.lock().unwrap();
                panic!("boom");
            })
            .join();
        assert!(joined.is_err());
    });
    assert!(group.state.is_poisoned());
    let (mut exe, effects) = step("p");
    group.commit(&mut exe, &effects).unwrap();
    assert_eq!(group.stats().batches, 1);
}
