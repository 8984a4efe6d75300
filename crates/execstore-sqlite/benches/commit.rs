//! The commit path of the SQLite store on a file, on a W1-like event step
//! (shared/bench/WORKLOAD.md): a ~1 KiB context with three keys changed, one emit, the
//! processed event id, a timer op and a trace step. Single commits at synchronous NORMAL and
//! OFF, a `commit_batch` of 16 steps at NORMAL, and a load. (FULL waits for the disk's
//! sync and is measured by `execstore bench`, not here.)
//!
//! `cargo bench -p execstore-sqlite` (add `-- --quick` for a rough figure in seconds).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use execstore::{executions::BatchItem, Execution, ExecutionStore};
use execstore_sqlite::{SqliteOptions, SqliteStore, Synchronous};

use execstore::w1::{cycling_step, execution};

const EXECUTIONS: usize = 64;

/// A file store in `dir` holding W1's first executions, and those executions.
struct Fixture {
    _dir: tempfile::TempDir,
    store: SqliteStore,
    exes: Vec<Execution>,
    round: u64,
}

impl Fixture {
    fn new(synchronous: Synchronous) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteOptions::new().synchronous(synchronous);
        let store = SqliteStore::open(dir.path().join("bench.db"), options).unwrap();
        let mut exes: Vec<Execution> = (0..EXECUTIONS).map(execution).collect();
        for exe in &mut exes {
            store.save(exe).unwrap();
        }
        Fixture {
            _dir: dir,
            store,
            exes,
            round: 0,
        }
    }

    /// Times `iters` single commits, round-robin over the executions.
    fn commits(&mut self, iters: u64) -> Duration {
        let mut elapsed = Duration::ZERO;
        for _ in 0..iters {
            self.round += 1;
            let i = (self.round % EXECUTIONS as u64) as usize;
            let exe = &mut self.exes[i];
            let effects = cycling_step(exe, i, self.round / EXECUTIONS as u64 + 1, true);
            let start = Instant::now();
            black_box(self.store.commit(exe, &effects).unwrap());
            elapsed += start.elapsed();
        }
        elapsed
    }

    /// Times `iters` batches of 16 steps of 16 different executions.
    fn batches(&mut self, iters: u64) -> Duration {
        let mut elapsed = Duration::ZERO;
        for _ in 0..iters {
            self.round += 1;
            let mut items: Vec<BatchItem> = (0..16)
                .map(|k| {
                    let i = (self.round as usize * 16 + k) % EXECUTIONS;
                    let mut exe = self.exes[i].clone();
                    let effects = cycling_step(&mut exe, i, self.round, true);
                    BatchItem::new(exe, effects)
                })
                .collect();
            let start = Instant::now();
            let results = self.store.commit_batch(&mut items).unwrap();
            elapsed += start.elapsed();
            assert!(results.iter().all(Result::is_ok));
            for item in items {
                let i = self.exes.iter().position(|e| e.id == item.execution.id).unwrap();
                self.exes[i] = item.execution;
            }
        }
        elapsed
    }
}

fn commit(c: &mut Criterion) {
    let mut group = c.benchmark_group("sqlite_file");
    group.throughput(Throughput::Elements(1));
    for (name, level) in [
        ("commit_w1_step_normal", Synchronous::Normal),
        ("commit_w1_step_off", Synchronous::Off),
    ] {
        let mut fixture = Fixture::new(level);
        group.bench_function(name, |b| b.iter_custom(|iters| fixture.commits(iters)));
    }
    group.throughput(Throughput::Elements(16));
    let mut fixture = Fixture::new(Synchronous::Normal);
    group.bench_function("commit_batch_16_w1_steps_normal", |b| {
        b.iter_custom(|iters| fixture.batches(iters))
    });
    group.throughput(Throughput::Elements(1));
    let mut fixture = Fixture::new(Synchronous::Normal);
    fixture.commits(EXECUTIONS as u64 * 20);
    let id = fixture.exes[7].id.clone();
    group.bench_function("load_w1_execution", |b| {
        b.iter(|| black_box(fixture.store.load(&id).unwrap()))
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
