//! The listing by a declared attribute on PostgreSQL, in the monitor's default order (updated
//! last first): fills fresh tables (a prefix of their own, dropped after) with N executions
//! whose `context.customer` is one of 1,000 values, but "rare" for the 300 oldest (every other
//! execution has no `updated_at`, as W1's documents have none), declares it,
//! gathers statistics, then times the first page of 50 for the rare customer (its matches all
//! at the old end of the time order), for a common one and for every execution of a kind
//! (`context.kind`, all of them): medians of 9.
//!
//! ```text
//! cargo run --release -p execstore-postgres --example pg_list_attr -- URL [N]
//! ```

use std::time::Instant;

use execstore::executions::{parse_where, BatchItem, ListOrder, ListQuery};
use execstore::{Effects, Execution, ExecutionStore};
use execstore_postgres::{drop_store, PgOptions, PgStore};

#[path = "support/timing.rs"]
mod timing;
use timing::median_ms;

fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("a postgres:// URL");
    let n: usize = args.next().map_or(300_000, |s| s.parse().expect("N"));
    let prefix = format!("listattr{}", std::process::id());
    let store = PgStore::open(&url, PgOptions::new().prefix(prefix.clone())).expect("open");
    let start = Instant::now();
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        let mut items: Vec<BatchItem> = chunk
            .iter()
            .map(|&i| {
                let mut exe = Execution::new(format!("o-{i:07}"), "orders");
                // Every other one without an `updated_at` (as W1's documents): the listing's
                // second arm, the keys without a time, in id order.
                exe.updated_at = (i % 2 == 1).then_some(1.7e9 + i as f64);
                exe.created_at = Some(1.7e9 + i as f64);
                let customer = if i < 300 {
                    "rare".to_owned()
                } else {
                    format!("c-{}", i % 1000)
                };
                exe.context.insert("customer".into(), customer.into());
                exe.context.insert("kind".into(), "order".into());
                BatchItem::new(exe, Effects::new())
            })
            .collect();
        for r in store.commit_batch(&mut items).expect("batch") {
            r.expect("item");
        }
    }
    println!("filled {n} in {:.1} s", start.elapsed().as_secs_f64());
    store.declare_attribute("context.customer").expect("declare");
    store.declare_attribute("context.kind").expect("declare");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    client
        .batch_execute(&format!(
            "ANALYZE {prefix}_executions; ANALYZE {prefix}_execstore_keys"
        ))
        .expect("analyze");
    for text in [
        "context.customer = rare",
        "context.customer = c-17",
        "context.kind = order",
    ] {
        let query = ListQuery::new()
            .order(ListOrder::UpdatedDesc)
            .limit(50)
            .filter(parse_where(text, 0.0).expect("where"));
        let (ms, got) = median_ms(9, || store.list_executions(&query).expect("list").items.len());
        println!("{text}: first page ({got}) {ms:.2} ms");
    }
    let (ms, got) = median_ms(9, || store.attributes().expect("attributes").len());
    println!("the declared attributes ({got}), read by each listing with a `where`: {ms:.2} ms");
    drop(client);
    if std::env::var_os("KEEP").is_none() {
        drop_store(&url, Some(&prefix)).expect("drop");
    } else {
        println!("kept the prefix {prefix}");
    }
}
