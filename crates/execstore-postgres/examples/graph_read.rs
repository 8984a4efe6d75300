//! The definition graph's figures on PostgreSQL: fills fresh tables (a prefix of their own,
//! dropped after) with N executions of one definition (10 traced steps each, in batches),
//! then times the figures read by the store (where executions sit from the kept rows of
//! migration 9) and counted by scan, each with the traces of the 2,000 most recently
//! updated (the monitor's default); the first read, which folds every delta the fill
//! appended, apart.
//!
//! ```text
//! cargo run --release -p execstore-postgres --example graph_read -- URL [N]
//! ```

use std::time::Instant;

use execstore::executions::{graph::graph_figures_by_scan, BatchItem, Status};
use execstore::{Effects, Execution, ExecutionStore};
use execstore_postgres::{drop_store, PgOptions, PgStore};

#[path = "support/timing.rs"]
mod timing;
use timing::median_ms;

fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("a postgres:// URL");
    let n: usize = args.next().map_or(30_000, |s| s.parse().expect("N"));
    let prefix = format!("graphread{}", std::process::id());
    let store = PgStore::open(&url, PgOptions::new().prefix(prefix.clone())).expect("open");
    let paths = ["cart", "checkout.address", "checkout.payment", "shipped", "done"];
    let start = Instant::now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(250) {
        let mut items = Vec::new();
        for &i in chunk {
            let mut exe = Execution::new(format!("o-{i:07}"), "orders");
            exe.status = Status::Running;
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
    let t = Instant::now();
    store.graph_figures("orders", 2_000).expect("kept");
    println!(
        "first read (folds every delta the fill appended): {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let (kept, _) = median_ms(5, || {
        store.graph_figures("orders", 2_000).expect("kept").executions as usize
    });
    // The fold left the deltas' dead rows behind until (auto)vacuum clears them.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    client
        .batch_execute(&format!(
            "VACUUM ANALYZE {prefix}_execstore_graph_deltas, {prefix}_execstore_graph"
        ))
        .expect("vacuum");
    let (vacuumed, _) = median_ms(5, || {
        store.graph_figures("orders", 2_000).expect("kept").executions as usize
    });
    println!("kept, after VACUUM of the deltas: {vacuumed:.2} ms");
    let (scanned, _) = median_ms(5, || {
        graph_figures_by_scan(&store, "orders", 2_000)
            .expect("scanned")
            .executions as usize
    });
    println!(
        "graph of {n}: kept {kept:.2} ms, scanned (2,000 traces each) {scanned:.1} ms (x{:.0})",
        scanned / kept
    );
    drop(store);
    drop_store(&url, Some(&prefix)).expect("drop");
}
