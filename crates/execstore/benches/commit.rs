//! The commit path of the in-memory store, and of the group committer over it, on a W1-like
//! event step (shared/bench/WORKLOAD.md): a ~1 KiB context with three keys changed, one
//! emit, the processed event id, a timer op and a trace step.
//!
//! `cargo bench -p execstore` (add `-- --quick` for a rough figure in seconds).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use execstore::{executions::GroupCommit, Execution, ExecutionStore, MemoryStore};

use execstore::w1::{cycling_step, execution};

/// Times `iters` W1 steps on a fresh store (made outside the timing), round-robin over 64
/// executions.
fn run(store: &dyn ExecutionStore, iters: u64) -> Duration {
    let mut exes: Vec<Execution> = (0..64).map(execution).collect();
    for exe in &mut exes {
        store.save(exe).unwrap();
    }
    let mut elapsed = Duration::ZERO;
    for n in 0..iters {
        let i = (n % 64) as usize;
        let exe = &mut exes[i];
        let effects = cycling_step(exe, i, n / 64 + 1, true);
        let start = Instant::now();
        black_box(store.commit(exe, &effects).unwrap());
        elapsed += start.elapsed();
    }
    elapsed
}

fn commit(c: &mut Criterion) {
    let mut group = c.benchmark_group("memory");
    group.throughput(Throughput::Elements(1));
    group.bench_function("commit_w1_step", |b| {
        b.iter_custom(|iters| run(&MemoryStore::new(), iters))
    });
    group.bench_function("group_commit_w1_step_one_thread", |b| {
        b.iter_custom(|iters| run(&GroupCommit::new(MemoryStore::new()), iters))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = commit
}
criterion_main!(benches);
