//! Commit throughput of W1-like event steps on a SQLite file, plain or through
//! `GroupCommit`, with N client threads. Each client owns its executions and loops
//! load → step → commit, as a worker would.
//!
//! ```text
//! cargo run --release -p execstore-sqlite --example group_commit -- \
//!     [--clients 16] [--synchronous full] [--steps 400] [--plain] [--executions 256]
//! ```
//!
//! `--steps` is per client. Prints one line: mode, clients, commits/s and, grouped, the
//! mean batch size.

use std::time::Instant;

use execstore::{executions::GroupCommit, ExecutionStore};
use execstore_sqlite::{SqliteOptions, SqliteStore, Synchronous};

use execstore::w1;

struct Args {
    clients: usize,
    synchronous: Synchronous,
    steps: usize,
    executions: usize,
    plain: bool,
}

fn args() -> Args {
    let mut args = Args {
        clients: 16,
        synchronous: Synchronous::Full,
        steps: 400,
        executions: 256,
        plain: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--clients" => args.clients = value().parse().expect("--clients N"),
            "--synchronous" => args.synchronous = value().parse().expect("--synchronous LEVEL"),
            "--steps" => args.steps = value().parse().expect("--steps N"),
            "--executions" => args.executions = value().parse().expect("--executions N"),
            "--plain" => args.plain = true,
            other => panic!("unknown argument {other}"),
        }
    }
    args.executions = args.executions.max(args.clients);
    args
}

/// Every client runs `steps` load → step → commit rounds over its own executions
/// (`i % clients == client`). Returns the wall time in seconds.
fn run(store: &dyn ExecutionStore, args: &Args) -> f64 {
    let ids: Vec<String> = (0..args.executions).map(|i| w1::execution(i).id).collect();
    for i in 0..args.executions {
        store.save(&mut w1::execution(i)).unwrap();
    }
    let ids = &ids;
    let start = Instant::now();
    std::thread::scope(|s| {
        for client in 0..args.clients {
            s.spawn(move || {
                let mine: Vec<usize> = (client..args.executions).step_by(args.clients).collect();
                for n in 0..args.steps {
                    let i = mine[n % mine.len()];
                    let mut exe = store.load(&ids[i]).unwrap().expect("stored");
                    let effects = w1::cycling_step(&mut exe, i, (n / mine.len()) as u64 + 1, true);
                    store.commit(&mut exe, &effects).unwrap();
                }
            });
        }
    });
    start.elapsed().as_secs_f64()
}

fn main() {
    let args = args();
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions::new().synchronous(args.synchronous);
    let store = SqliteStore::open(dir.path().join("group.db"), options).unwrap();
    let commits = (args.clients * args.steps) as f64;
    if args.plain {
        let secs = run(&store, &args);
        println!(
            "plain  clients={:2} synchronous={:?} commits={} secs={secs:.2} commits/s={:.0}",
            args.clients,
            args.synchronous,
            commits,
            commits / secs
        );
    } else {
        let group = GroupCommit::new(store);
        let secs = run(&group, &args);
        let stats = group.stats();
        let mean =
            (stats.items - args.executions as u64) as f64 / (stats.batches - args.executions as u64) as f64;
        println!(
            "group  clients={:2} synchronous={:?} commits={} secs={secs:.2} commits/s={:.0} \
             mean_batch={mean:.2} largest_batch={}",
            args.clients,
            args.synchronous,
            commits,
            commits / secs,
            stats.largest_batch
        );
    }
}
