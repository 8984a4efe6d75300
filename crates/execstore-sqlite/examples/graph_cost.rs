//! What the kept figures' triggers add to a W1 event step: the same steps on a fresh file with
//! the triggers, and on one whose triggers were dropped, in turns (A B A B ...), one writer.
//! Same binary, same flags. Since migration 10 the triggers are the three that keep where
//! executions sit and the counts (the steps' five are gone: the steps are read from traces).
//!
//! ```text
//! cargo run --release -p execstore-sqlite --example graph_cost -- \
//!     [--synchronous off] [--steps 20000] [--executions 256] [--rounds 3] [--graph 100000]
//! ```
//!
//! Prints the microseconds per step of each round (CPU time) and the medians' difference. With
//! `--graph N` it then fills a file with N executions of one definition (10 traced steps
//! each, in batches) and times the definition's graph figures read by the store (where
//! executions sit as kept) and counted by scan, each with the traces of the 2,000
//! most recently updated (the monitor's default).

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
        assert_eq!(names.len(), 3);
        for name in names {
            conn.execute_batch(&format!("DROP TRIGGER {name}")).expect("drop");
        }
    }
    let ids: Vec<String> = (0..executions).map(|i| w1::execution(i).id).collect();
    for i in 0..executions {
        store.save(&mut w1::execution(i)).expect("save");
    }
    let (start, cpu) = (Instant::now(), cpu_seconds());
    for n in 0..steps {
        let i = n % executions;
        let mut exe = store.load(&ids[i]).expect("load").expect("stored");
        let effects = w1::cycling_step(&mut exe, i, (n / executions) as u64 + 1, true);
        store.commit(&mut exe, &effects).expect("commit");
    }
    // The process's CPU time where the system tells it (steadier than the wall clock on a
    // loaded machine), else the wall clock.
    let secs = match (cpu, cpu_seconds()) {
        (Some(a), Some(b)) => b - a,
        _ => start.elapsed().as_secs_f64(),
    };
    secs * 1e6 / steps as f64
}

/// User plus system CPU seconds of this process (Linux: `/proc/self/stat`, 100 ticks a
/// second), if known.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Fills a file with `n` executions of `orders` (10 traced steps each), then times the
/// graph figures kept and scanned.
fn graph_reads(n: usize) {
    use execstore::executions::{graph::graph_figures_by_scan, BatchItem};
    use execstore::{Effects, Execution};
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(
        dir.path().join("graph.db"),
        SqliteOptions::new().synchronous(Synchronous::Off),
    )
    .expect("open");
    let paths = ["cart", "checkout.address", "checkout.payment", "shipped", "done"];
    let start = Instant::now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(250) {
        let mut items = Vec::new();
        for &i in chunk {
            let mut exe = Execution::new(format!("o-{i:07}"), "orders");
            exe.status = execstore::executions::Status::Running;
            let mut at: Option<&str> = None;
            for k in 0..10 {
                let to = paths[(i + k) % paths.len()];
                exe.active_path = Some(to.to_owned());
                let step = serde_json::json!({"event_kind": format!("E{}", k % 4), "from_path": at, "to_path": to,
                    "guards": ["ok"], "context_out": {"n": k}});
                items.push(BatchItem::new(
                    exe.clone(),
                    Effects::new().trace(step.as_object().expect("object").clone()),
                ));
                exe.version += 1;
                at = Some(to);
            }
        }
        for r in store.commit_batch(&mut items).expect("batch") {
            r.expect("item");
        }
    }
    println!(
        "filled {n} executions (10 steps each) in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let time = |f: &dyn Fn()| {
        let mut v: Vec<f64> = (0..5)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        median(std::mem::take(&mut v))
    };
    let kept = time(&|| {
        store.graph_figures("orders", 2_000).expect("kept");
    });
    let scanned = time(&|| {
        graph_figures_by_scan(&store, "orders", 2_000).expect("scanned");
    });
    println!(
        "graph of {n} (2,000 traces): kept {kept:.1} ms, scanned {scanned:.1} ms (x{:.0})",
        scanned / kept
    );
}

fn main() {
    let (mut synchronous, mut steps, mut executions, mut rounds) = (Synchronous::Off, 20_000, 256, 3);
    let mut graph = 0;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--synchronous" => synchronous = value().parse().expect("--synchronous LEVEL"),
            "--steps" => steps = value().parse().expect("--steps N"),
            "--executions" => executions = value().parse().expect("--executions N"),
            "--rounds" => rounds = value().parse().expect("--rounds N"),
            "--graph" => graph = value().parse().expect("--graph N"),
            other => panic!("unknown argument {other}"),
        }
    }
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let a = round(true, synchronous, steps, executions);
        let b = round(false, synchronous, steps, executions);
        println!("round {r}: with the triggers {a:.1} us/step, without {b:.1} us/step");
        with.push(a);
        without.push(b);
    }
    if rounds == 0 {
        return graph_reads(graph.max(1));
    }
    let (a, b) = (median(with), median(without));
    println!(
        "median: with {a:.1} us/step, without {b:.1} us/step: +{:.1} us (x{:.2}) [synchronous={synchronous:?}, \
         steps={steps}, executions={executions}]",
        a - b,
        a / b
    );
    if graph > 0 {
        graph_reads(graph);
    }
}
