//! The behaviour suite through the group committer over the in-memory store, and many
//! threads committing through it at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use execstore::{
    executions::{BatchItem, Event, GroupCommit},
    Effects, Execution, ExecutionStore, MemoryStore, Result, StoreError,
};
use serde_json::json;

execstore::conformance_tests!(ephemeral: execstore::executions::GroupCommit::new(execstore::MemoryStore::new()));

mod batches_of_two {
    execstore::conformance_tests!(ephemeral: execstore::executions::GroupCommit::with_max_batch(
        execstore::MemoryStore::with_trace_max(Some(5)),
        2
    ));
}

const THREADS: usize = 16;
const EACH: usize = 150;

/// 16 threads: each commits steps of its own execution and, every third step, races the
/// others on one shared execution (retrying on `Conflict`). Everything adds up exactly, and
/// every call went through the committer.
fn hammer(group: &GroupCommit<impl ExecutionStore>) {
    let mut hot = Execution::new("hot", "d");
    group.save(&mut hot).unwrap();
    let calls = AtomicU64::new(1);
    let conflicts = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (calls, conflicts) = (&calls, &conflicts);
            s.spawn(move || {
                let id = format!("own-{t}");
                let mut own = Execution::new(&id, "d");
                for i in 0..EACH {
                    own.context.insert("n".into(), json!(i));
                    let effects = Effects::new()
                        .emit(Some(&id), Event::new(format!("{id}-{i}"), "Step"))
                        .processed(format!("{id}-in-{i}"))
                        .schedule("root.t", i as f64)
                        .trace(json!({"i": i}).as_object().unwrap().clone());
                    calls.fetch_add(1, Ordering::Relaxed);
                    let seqs = group
                        .commit(&mut own, &effects)
                        .expect("no conflict on its own execution");
                    assert_eq!(seqs.len(), 1);
                    assert_eq!(own.version, i as i64 + 1);
                    if i % 3 == 0 {
                        loop {
                            let mut exe = group.load("hot").unwrap().unwrap();
                            let n = exe.context.get("n").and_then(|v| v.as_i64()).unwrap_or(0);
                            exe.context.insert("n".into(), json!(n + 1));
                            let effects =
                                Effects::new().emit(Some("hot"), Event::new(format!("hot-{t}-{i}"), "Inc"));
                            calls.fetch_add(1, Ordering::Relaxed);
                            match group.commit(&mut exe, &effects) {
                                Ok(_) => break,
                                Err(StoreError::Conflict { .. }) => {
                                    conflicts.fetch_add(1, Ordering::Relaxed);
                                }
                                Err(e) => panic!("{e}"),
                            }
                        }
                    }
                }
            });
        }
    });
    let incs = (THREADS * EACH.div_ceil(3)) as i64;
    let hot = group.load("hot").unwrap().unwrap();
    assert_eq!(hot.context["n"], json!(incs), "no increment lost or doubled");
    assert_eq!(hot.version, incs + 1);
    for t in 0..THREADS {
        let own = group.load(&format!("own-{t}")).unwrap().unwrap();
        assert_eq!(own.version, EACH as i64);
        assert!(group
            .is_processed(&own.id, &format!("own-{t}-in-{}", EACH - 1))
            .unwrap());
        assert_eq!(group.read_trace(&own.id).unwrap().len(), EACH.min(200));
    }
    let outbox = execstore::conformance::executions::all_outbox(group);
    assert_eq!(outbox.len() as i64, (THREADS * EACH) as i64 + incs);
    assert!(outbox.windows(2).all(|w| w[0].seq < w[1].seq));
    let stats = group.stats();
    assert_eq!(
        stats.items,
        calls.load(Ordering::Relaxed),
        "every call went through a batch"
    );
    eprintln!(
        "{stats:?}, mean batch {:.2}, {} conflicts",
        stats.mean_batch_size(),
        conflicts.load(Ordering::Relaxed)
    );
}

#[test]
fn sixteen_threads_add_up_exactly() {
    hammer(&GroupCommit::new(MemoryStore::new()));
}

/// A MemoryStore whose batches take as long as a sync does (0.5 ms): while one is in flight
/// the others queue, so batches really hold many steps.
struct Syncing(MemoryStore);

impl ExecutionStore for Syncing {
    fn capabilities(&self) -> execstore::executions::Capabilities {
        self.0.capabilities()
    }
    fn trace_max(&self) -> Option<u32> {
        self.0.trace_max()
    }
    fn commit(&self, exe: &mut Execution, effects: &Effects) -> Result<Vec<i64>> {
        std::thread::sleep(Duration::from_micros(500));
        self.0.commit(exe, effects)
    }
    fn commit_batch(&self, items: &mut [BatchItem]) -> Result<Vec<Result<Vec<i64>>>> {
        std::thread::sleep(Duration::from_micros(500));
        self.0.commit_batch(items)
    }
    fn load(&self, id: &str) -> Result<Option<Execution>> {
        self.0.load(id)
    }
    fn load_for_event(&self, id: &str, event_id: &str) -> Result<(Option<Execution>, bool)> {
        self.0.load_for_event(id, event_id)
    }
    fn is_processed(&self, execution_id: &str, event_id: &str) -> Result<bool> {
        self.0.is_processed(execution_id, event_id)
    }
    fn list_executions(
        &self,
        query: &execstore::executions::ListQuery,
    ) -> Result<execstore::executions::ExecutionPage> {
        self.0.list_executions(query)
    }
    fn pending_outbox(
        &self,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<execstore::executions::OutboxEntry>> {
        self.0.pending_outbox(after, limit)
    }
    fn ack_outbox(&self, seq: i64) -> Result<()> {
        self.0.ack_outbox(seq)
    }
    fn pending_spawns(
        &self,
        after: Option<i64>,
        limit: usize,
    ) -> Result<Vec<execstore::executions::SpawnEntry>> {
        self.0.pending_spawns(after, limit)
    }
    fn ack_spawn(&self, seq: i64) -> Result<()> {
        self.0.ack_spawn(seq)
    }
    fn due_timers(
        &self,
        now: f64,
        after: Option<&execstore::executions::DueTimer>,
        limit: usize,
    ) -> Result<Vec<execstore::executions::DueTimer>> {
        self.0.due_timers(now, after, limit)
    }
    fn delete_timer(&self, execution_id: &str, path: &str, fire_at: f64) -> Result<bool> {
        self.0.delete_timer(execution_id, path, fire_at)
    }
    fn read_trace(&self, execution_id: &str) -> Result<Vec<execstore::executions::TraceStep>> {
        self.0.read_trace(execution_id)
    }
    fn append_trace(&self, execution_id: &str, step: &execstore::executions::TraceStep) -> Result<i64> {
        self.0.append_trace(execution_id, step)
    }
    fn ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>> {
        self.0.ids_with_prefix(prefix)
    }
    fn purge(&self, execution_id: &str, expected_version: i64) -> Result<bool> {
        self.0.purge(execution_id, expected_version)
    }
}

#[test]
fn sixteen_threads_are_grouped() {
    let group = GroupCommit::new(Syncing(MemoryStore::new()));
    hammer(&group);
    let stats = group.stats();
    assert!(
        stats.largest_batch > 1 && stats.mean_batch_size() > 2.0,
        "callers arriving during a batch's sync are committed together: {stats:?}"
    );
}
