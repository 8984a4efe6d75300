//! `execstore bench --scale`: how the costs grow with the store (issue 27). One store is
//! filled step by step to each size of `--sizes` with W1's executions (W1's shapes, 20 events
//! each: every odd one finished by its last event, the others running, as W1 leaves them),
//! and at each size the commit rates, the monitor API's reads, the relay's claim and ack, the
//! timer sweep and the bytes per execution are measured. It prints a table and writes
//! `scale-BACKEND.json` and `scale-BACKEND.svg` (drawn with plotters) into `--out`.
//!
//! The fill (`fill.rs`): the first 1,000 executions go through the contract
//! ([`ExecutionStore::commit_batch`] with every step, each item at the version the one before
//! it leaves, the relay acking the batch's outbox entries and spawn intents after it); the
//! rest are `INSERT ... SELECT` copies of them under new ids, checked after every fill against
//! their templates and the kept counts. The monitor's peak RSS (`monitor.rs`) is the real
//! `execstore monitor`'s, a child process serving the store.

mod fill;
mod measure;
mod monitor;
pub(crate) mod plot;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use execstore::ExecutionStore;
use execstore_any::{Options, POSTGRES, SQLITE};
use execstore_monitor_api::MonitorApi;
use serde_json::{json, Map, Value};

use fill::{fill, verify, Copier};
use measure::{attribute_value, commit_rates, file_bytes, pg_wal_lsn, read_targets, reads, relay_and_sweep};
use plot::plot;

use crate::error::CliError;

/// Events per filled execution (W1's K).
const EVENTS: u32 = 20;
/// Executions per fill batch.
const FILL_BATCH: usize = 250;
/// The seed of the filled executions' ids.
const FILL_SEED: u32 = 7;
/// Executions and rounds of the commit-rate runs at each size.
const RATE_EXECUTIONS: usize = 160;
const RATE_ROUNDS: u32 = 10;
/// Clients of the group-commit run.
const CLIENTS: usize = 16;
/// Samples of each read (the median is reported), fewer for a read past [`SAMPLES_BUDGET`].
const SAMPLES: usize = 7;
/// A read is sampled again only while its samples took less than this in all.
const SAMPLES_BUDGET: Duration = Duration::from_secs(3);
/// The declared search attribute the list is filtered by.
const ATTRIBUTE: &str = "context.f01";

/// What to run.
pub struct Config {
    /// `sqlite` (a file, fresh) or `postgres` (a URL; fresh tables under a bench prefix).
    pub location: Option<String>,
    /// The sizes, ascending.
    pub sizes: Vec<usize>,
    /// Where the JSON and the SVG go.
    pub out: PathBuf,
}

/// Runs the curve and returns the JSON written.
pub fn run(cfg: &Config, out: &mut dyn std::io::Write) -> anyhow::Result<Value> {
    let mut sizes = cfg.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.is_empty() || sizes[0] == 0 {
        return Err(CliError::Input("--sizes needs sizes above 0".into()).into());
    }
    let tmp = tempfile::Builder::new()
        .prefix("execstore-scale-")
        .tempdir()
        .map_err(CliError::Io)?;
    let mut pg_prefix = None;
    let (backend, store, filler, file): (
        &str,
        Arc<dyn ExecutionStore>,
        Arc<dyn ExecutionStore>,
        Option<PathBuf>,
    ) = match &cfg.location {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let prefix = format!("execstore_scale_{:x}_{nanos:x}", std::process::id());
            let mut options = Options::new().executions(true).prefix(Some(&prefix));
            options.postgres.connect.max_connections = (CLIENTS + 1) as u32;
            let store = open(&POSTGRES, url, &options)?;
            pg_prefix = Some(prefix);
            ("postgres", store.clone(), store, None)
        }
        other => {
            let path = match other {
                Some(p) => PathBuf::from(p),
                None => tmp.path().join("scale.db"),
            };
            if path.exists() {
                return Err(CliError::Input(format!(
                    "{} already exists; --scale needs a fresh file",
                    path.display()
                ))
                .into());
            }
            let store = open(&SQLITE, &path.to_string_lossy(), &Options::new().executions(true))?;
            // The fill is the setting, not the measure: a second store on the file, without
            // syncs (the commits measured sync as the store's default does, FULL).
            let mut fast = Options::new().executions(true);
            fast.sqlite.connect.synchronous = execstore_sqlite::Synchronous::Off;
            let filler = open(&SQLITE, &path.to_string_lossy(), &fast)?;
            ("sqlite", store, filler, Some(path))
        }
    };
    let copier = match (&file, &cfg.location, &pg_prefix) {
        (Some(path), _, _) => Copier::Sqlite(path.clone()),
        (None, Some(url), Some(prefix)) => Copier::Postgres {
            url: url.clone(),
            prefix: prefix.clone(),
        },
        _ => anyhow::bail!("no store to fill"),
    };
    // Declared before the fill, so that its index is kept as the store grows.
    store.declare_attribute(ATTRIBUTE).map_err(store_err)?;
    let api = MonitorApi::new(Map::new(), None);
    let mut rows = Vec::new();
    let mut filled = 0usize;
    let mut fill_time = Duration::ZERO;
    for (step, &size) in sizes.iter().enumerate() {
        let t = Instant::now();
        fill(&*filler, &copier, filled, size)?;
        let took = t.elapsed();
        fill_time += took;
        filled = size;
        let verified = verify(&*store, &copier, size)?;
        let mut row = Map::new();
        row.insert("executions".into(), json!(size));
        row.insert(
            "fill_executions_per_s".into(),
            json!(round(
                (size - rows_before(&sizes, step)) as f64 / took.as_secs_f64()
            )),
        );
        row.insert("running".into(), json!(verified.running));
        row.insert("done".into(), json!(verified.done));
        let wal_before = pg_wal_lsn(cfg.location.as_deref(), pg_prefix.is_some());
        commit_rates(&*store, step as u32, file.is_some(), &mut row)?;
        if let (Some(before), Some(after)) = (
            wal_before,
            pg_wal_lsn(cfg.location.as_deref(), pg_prefix.is_some()),
        ) {
            let commits = (RATE_EXECUTIONS * 2 * (RATE_ROUNDS as usize + 1)) as f64;
            row.insert(
                "wal_bytes_per_commit".into(),
                json!(round((after - before) as f64 / commits)),
            );
        }
        let targets = read_targets(&attribute_value(&*store)?);
        reads(&*store, &api, &targets, &mut row);
        relay_and_sweep(&*store, &mut row)?;
        let location = match (&file, &cfg.location) {
            (Some(path), _) => path.to_string_lossy().into_owned(),
            (None, Some(url)) => url.clone(),
            _ => String::new(),
        };
        monitor::peak_rss(&location, pg_prefix.as_deref(), &targets, &mut row)?;
        let bytes = match (&file, &cfg.location) {
            (Some(path), _) => file_bytes(path),
            (None, Some(url)) => execstore_postgres::store_bytes(url, pg_prefix.as_deref()).unwrap_or(0),
            _ => 0,
        };
        row.insert("bytes".into(), json!(bytes));
        row.insert(
            "bytes_per_execution".into(),
            json!(round(bytes as f64 / size as f64)),
        );
        print_row(out, backend, &row)?;
        rows.push(Value::Object(row));
        // Written after every size: a long run stopped early keeps what it measured.
        write_out(cfg, backend, fill_time, &rows)?;
    }
    let answer = write_out(cfg, backend, fill_time, &rows)?;
    writeln!(
        out,
        "wrote scale-{backend}.json and scale-{backend}.svg into {}",
        cfg.out.display()
    )
    .map_err(CliError::Io)?;
    if let (Some(url), Some(prefix)) = (&cfg.location, &pg_prefix) {
        drop(store);
        // Best effort: the figures are written.
        let _ = execstore_postgres::drop_store(url, Some(prefix));
    }
    Ok(answer)
}

/// Writes `scale-BACKEND.json` and its plot into `cfg.out`; returns the JSON.
fn write_out(cfg: &Config, backend: &str, fill_time: Duration, rows: &[Value]) -> anyhow::Result<Value> {
    let answer = json!({
        "backend": backend,
        "events_per_execution": EVENTS,
        "fill_s": round(fill_time.as_secs_f64()),
        "sqlite": rusqlite::version(),
        "rows": rows,
    });
    std::fs::create_dir_all(&cfg.out).map_err(CliError::Io)?;
    let json_path = cfg.out.join(format!("scale-{backend}.json"));
    std::fs::write(&json_path, format!("{:#}\n", answer)).map_err(CliError::Io)?;
    plot(&cfg.out.join(format!("scale-{backend}.svg")), backend, &answer)?;
    Ok(answer)
}

fn rows_before(sizes: &[usize], step: usize) -> usize {
    if step == 0 {
        0
    } else {
        sizes[step - 1]
    }
}

fn open(
    backend: &'static execstore_any::Backend,
    location: &str,
    options: &Options,
) -> anyhow::Result<Arc<dyn ExecutionStore>> {
    let target = execstore_any::Target {
        backend,
        location: location.to_owned(),
    };
    let stores = target.open(options).map_err(CliError::Store)?;
    stores.executions.context("the backend opened no execution store")
}

pub(super) fn store_err(e: execstore::StoreError) -> anyhow::Error {
    CliError::Store(e).into()
}

pub(crate) fn round(x: f64) -> f64 {
    if x >= 100.0 {
        x.round()
    } else {
        (x * 1000.0).round() / 1000.0
    }
}

pub(crate) fn print_row(
    out: &mut dyn std::io::Write,
    backend: &str,
    row: &Map<String, Value>,
) -> anyhow::Result<()> {
    let mut line = backend.to_owned();
    for (k, v) in row {
        line.push_str(&format!("  {k}={v}"));
    }
    writeln!(out, "{line}").map_err(CliError::Io)?;
    Ok(())
}
