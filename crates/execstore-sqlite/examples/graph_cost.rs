//! What the graph figures' triggers (migration 7) add to a W1 event step: the same steps on
//! a fresh file with the triggers, and on one whose graph triggers were dropped, in turns
//! (A B A B ...), one writer. Same binary, same flags.
//!
//! ```text
//! cargo run --release -p execstore-sqlite --example graph_cost -- \
//!     [--synchronous off] [--steps 20000] [--executions 256] [--rounds 3]
//! ```
//!
//! Prints the microseconds per step of each round and the medians' difference.

use std::time::Instant;

use execstore::{w1, ExecutionStore};
use execstore_sqlite::{SqliteOptions, SqliteStore, Synchronous};

/// One round: `steps` load → step → commit over `executions`; microseconds per step.
fn round(graph: bool, synchronous: Synchronous, steps: usize, executions: usize) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cost.db");
    let store = SqliteStore::open(&path, SqliteOptions::new().synchronous(synchronous)).expect("open");
    if !graph {
        let conn = rusqlite::Connection::open(&path).expect("open");
        let names: Vec<String> = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'execstore_graph_%'",
            )
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .expect("triggers");
        assert_eq!(names.len(), 8);
        for name in names {
            conn.execute_batch(&format!("DROP TRIGGER {name}")).expect("drop");
        }
    }
    let ids: Vec<String> = (0..executions).map(|i| w1::execution(i).id).collect();
    for i in 0..executions {
        store.save(&mut w1::execution(i)).expect("save");
    }
    let start = Instant::now();
    for n in 0..steps {
        let i = n % executions;
        let mut exe = store.load(&ids[i]).expect("load").expect("stored");
        let effects = w1::cycling_step(&mut exe, i, (n / executions) as u64 + 1, true);
        store.commit(&mut exe, &effects).expect("commit");
    }
    start.elapsed().as_secs_f64() * 1e6 / steps as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let (mut synchronous, mut steps, mut executions, mut rounds) = (Synchronous::Off, 20_000, 256, 3);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--synchronous" => synchronous = value().parse().expect("--synchronous LEVEL"),
            "--steps" => steps = value().parse().expect("--steps N"),
            "--executions" => executions = value().parse().expect("--executions N"),
            "--rounds" => rounds = value().parse().expect("--rounds N"),
            other => panic!("unknown argument {other}"),
        }
    }
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let a = round(true, synchronous, steps, executions);
        let b = round(false, synchronous, steps, executions);
        println!("round {r}: with graph triggers {a:.1} us/step, without {b:.1} us/step");
        with.push(a);
        without.push(b);
    }
    let (a, b) = (median(with), median(without));
    println!(
        "median: with {a:.1} us/step, without {b:.1} us/step: +{:.1} us (x{:.2}) [synchronous={synchronous:?}, \
         steps={steps}, executions={executions}]",
        a - b,
        a / b
    );
}
