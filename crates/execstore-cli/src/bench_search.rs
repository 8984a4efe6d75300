//! `execstore bench-search`: the cost of finding executions by business data (docs/search.md,
//! "Benchmark"). On a fresh store of N executions (SQLite file, or PostgreSQL tables under a
//! unique prefix, dropped after), each with a context `{customer_id, total, region}`:
//!
//! - the first page (50) of `context.customer_id = "c-..."` (10 matches), undeclared (a scan),
//!   once;
//! - the time to declare `context.customer_id` and `context.total` (each an index build over
//!   every execution);
//! - the same first page, declared, `--queries` times with different customers (median and
//!   95th percentile), and a numeric range (`context.total >= X and context.total < Y`, 100
//!   matches) and a prefix (`context.customer_id ^= "c-000500"`, ten customers' ids);
//!
//! and prints one table (`--json`: one JSON object).

use std::io::Write;
use std::time::Instant;

use anyhow::Context as _;
use clap::Args;
use execstore::executions::{parse_where, BatchItem, ListQuery};
use execstore::{Effects, Execution, ExecutionStore};
use serde_json::json;

use crate::args::BenchBackend;

/// How many executions share one customer id.
const PER_CUSTOMER: usize = 10;
/// The totals' range (each value held by N / TOTALS executions).
const TOTALS: usize = 10_000;

#[derive(Debug, Args)]
pub struct BenchSearchArgs {
    /// `sqlite` (a fresh temporary file, or `--db PATH` that must not exist) or `postgres`
    /// (`--db postgres://...`, tables under a unique prefix, dropped after).
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = BenchBackend::Sqlite)]
    pub backend: BenchBackend,

    /// Number of executions.
    #[arg(long, value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(u32).range(100..))]
    pub executions: u32,

    /// How many first pages to time, declared.
    #[arg(long, value_name = "Q", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub queries: u32,
}

fn ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1000.0
}

/// The `p`-th percentile of `times` (sorted here).
fn percentile(times: &mut [f64], p: f64) -> f64 {
    times.sort_by(f64::total_cmp);
    let i = ((times.len() as f64 - 1.0) * p).round() as usize;
    times[i.min(times.len() - 1)]
}

fn customer(i: usize) -> String {
    format!("c-{:07}", i / PER_CUSTOMER)
}

fn populate(store: &dyn ExecutionStore, n: usize) -> anyhow::Result<f64> {
    let started = Instant::now();
    let regions = ["eu-west", "eu-central", "us-east", "ap-south"];
    let mut i = 0;
    while i < n {
        let end = (i + 1000).min(n);
        let mut batch: Vec<BatchItem> = (i..end)
            .map(|k| {
                // Ids spread over the key space, as harel's uuid ids are.
                let mut exe = Execution::new(
                    format!("{:016x}-{k}", (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                    "orders",
                );
                exe.created_at = Some(1.7e9 + k as f64);
                exe.updated_at = Some(1.7e9 + k as f64);
                let ctx = json!({
                    "customer_id": customer(k),
                    "total": k % TOTALS,
                    "region": regions[k % regions.len()],
                    "items": [{"sku": format!("SKU-{}", k % 977), "qty": 1 + k % 3}],
                });
                exe.context = ctx.as_object().cloned().unwrap_or_default();
                BatchItem::new(exe, Effects::new())
            })
            .collect();
        for outcome in store.commit_batch(&mut batch)? {
            outcome?;
        }
        i = end;
    }
    Ok(ms(started))
}

/// Times the first page of `text` (limit 50), returning (ms, rows, scanned paths).
fn first_page(store: &dyn ExecutionStore, text: &str) -> anyhow::Result<(f64, usize, Vec<String>)> {
    let query = ListQuery::new().limit(50).filter(parse_where(text, 0.0)?);
    let started = Instant::now();
    let page = store.list_executions(&query)?;
    Ok((ms(started), page.items.len(), page.scan))
}

/// Runs the benchmark on `store` and prints its table.
fn measure(
    store: &dyn ExecutionStore,
    backend: &str,
    n: usize,
    queries: usize,
    json_out: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let populate_ms = populate(store, n)?;
    let probe = |k: usize| format!("context.customer_id = \"{}\"", customer(k));
    let (scan_ms, scan_rows, scanned) = first_page(store, &probe(n / 2))?;
    anyhow::ensure!(
        scan_rows == PER_CUSTOMER.min(n) && !scanned.is_empty(),
        "the undeclared probe found {scan_rows}"
    );
    let started = Instant::now();
    store.declare_attribute("context.customer_id")?;
    let declare_customer_ms = ms(started);
    let started = Instant::now();
    store.declare_attribute("context.total")?;
    let declare_total_ms = ms(started);
    let mut equals = Vec::with_capacity(queries);
    let mut ranges = Vec::with_capacity(queries);
    for q in 0..queries {
        let k = (q * 7919 + 13) % n;
        let (t, rows, scanned) = first_page(store, &probe(k))?;
        anyhow::ensure!(
            rows == PER_CUSTOMER.min(n - k / PER_CUSTOMER * PER_CUSTOMER) && scanned.is_empty(),
            "equals found {rows}"
        );
        equals.push(t);
        let lo = (q * 331) % (TOTALS - 1);
        let (t, _, _) = first_page(
            store,
            &format!("context.total >= {lo} and context.total < {}", lo + 1),
        )?;
        ranges.push(t);
    }
    // Ten customers' ids share this prefix: a hundred executions.
    let prefix = format!("c-{:06}", n / PER_CUSTOMER / 2 / 10);
    let (prefix_ms, prefix_rows, _) = first_page(store, &format!("context.customer_id ^= \"{prefix}\""))?;
    let rows = [
        ("populate (commit_batch of 1000)", populate_ms, String::new()),
        (
            "first page, undeclared (scan)",
            scan_ms,
            format!("{scan_rows} rows"),
        ),
        (
            "declare context.customer_id (index build)",
            declare_customer_ms,
            String::new(),
        ),
        (
            "declare context.total (index build)",
            declare_total_ms,
            String::new(),
        ),
        (
            "first page, customer_id = X, median",
            percentile(&mut equals.clone(), 0.5),
            format!("{queries} queries"),
        ),
        (
            "first page, customer_id = X, p95",
            percentile(&mut equals, 0.95),
            String::new(),
        ),
        (
            "first page, total in [X, X+1), median",
            percentile(&mut ranges.clone(), 0.5),
            format!("{} rows", n / TOTALS),
        ),
        (
            "first page, total in [X, X+1), p95",
            percentile(&mut ranges, 0.95),
            String::new(),
        ),
        (
            "first page, customer_id ^= (10 customers)",
            prefix_ms,
            format!("{prefix_rows} rows"),
        ),
    ];
    if json_out {
        let fields: serde_json::Map<String, serde_json::Value> = rows
            .iter()
            .map(|(name, t, _)| ((*name).to_owned(), json!(t)))
            .collect();
        writeln!(
            out,
            "{}",
            json!({ "backend": backend, "executions": n, "ms": fields })
        )?;
    } else {
        writeln!(out, "bench-search: {backend}, {n} executions")?;
        for (name, t, note) in rows {
            writeln!(out, "  {name:<44} {t:>12.2} ms  {note}")?;
        }
    }
    Ok(())
}

/// `execstore bench-search`.
pub fn run(
    args: &BenchSearchArgs,
    db: Option<&std::path::Path>,
    json_out: bool,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let n = args.executions as usize;
    let queries = args.queries as usize;
    match args.backend {
        BenchBackend::Memory => measure(
            &execstore::MemoryStore::new(),
            "memory",
            n,
            queries,
            json_out,
            out,
        ),
        BenchBackend::Sqlite => {
            let dir = tempfile::Builder::new()
                .prefix("execstore-bench-search-")
                .tempdir()?;
            let path = match db {
                Some(p) => {
                    anyhow::ensure!(
                        !p.exists(),
                        "{} exists: the benchmark needs a fresh file",
                        p.display()
                    );
                    p.to_path_buf()
                }
                None => dir.path().join("search.db"),
            };
            let store = execstore_sqlite::SqliteStore::open(&path, execstore_sqlite::SqliteOptions::new())?;
            measure(&store, "sqlite", n, queries, json_out, out)
        }
        BenchBackend::Postgres => {
            let url = db
                .and_then(|p| p.to_str())
                .filter(|u| u.starts_with("postgres"))
                .context("--backend postgres needs --db postgres://...")?
                .to_owned();
            let prefix = format!("bsearch{}", std::process::id());
            let store = execstore_postgres::PgStore::open(
                &url,
                execstore_postgres::PgOptions::new().prefix(prefix.clone()),
            )?;
            let result = measure(&store, "postgres", n, queries, json_out, out);
            drop(store);
            execstore_postgres::drop_store(&url, Some(&prefix))?;
            result
        }
    }
}
