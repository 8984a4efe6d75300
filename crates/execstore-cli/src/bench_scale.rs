//! `execstore bench --scale`: how the costs grow with the store (issue 27). One store is
//! filled step by step to each size of `--sizes` with W1's executions (W1's shapes, 20 events
//! each: every odd one finished by its last event, the others running, as W1 leaves them),
//! and at each size the commit rates, the monitor API's reads, the relay's claim and ack, the
//! timer sweep and the bytes per execution are measured. It prints a table and writes
//! `scale-BACKEND.json` and `scale-BACKEND.svg` (drawn with plotters) into `--out`.
//!
//! The fill goes through the contract: [`ExecutionStore::commit_batch`] with every step of
//! a few hundred executions (the create and its 20 events, each item at the version the
//! one before it leaves), one transaction and one sync per batch, and the relay acking the
//! batch's outbox entries and spawn intents after it, as a running engine's relay would.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use execstore::executions::{encode_cursor, BatchItem, GroupCommit};
use execstore::{w1, Effects, Execution, ExecutionStore};
use execstore_any::{Options, POSTGRES, SQLITE};
use execstore_monitor_api::{ApiRequest, MonitorApi};
use serde_json::{json, Map, Value};

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
/// Samples of each read (the median is reported).
const SAMPLES: usize = 7;

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
    let api = MonitorApi::new(Map::new(), None);
    let mut rows = Vec::new();
    let mut filled = 0usize;
    let mut fill_time = Duration::ZERO;
    for (step, &size) in sizes.iter().enumerate() {
        let t = Instant::now();
        fill(&*filler, filled, size)?;
        fill_time += t.elapsed();
        filled = size;
        let mut row = Map::new();
        row.insert("executions".into(), json!(size));
        row.insert(
            "fill_executions_per_s".into(),
            json!(round(
                (size - rows_before(&sizes, step)) as f64 / t.elapsed().as_secs_f64()
            )),
        );
        let wal_before = pg_wal_lsn(cfg.location.as_deref(), pg_prefix.is_some());
        commit_rates(&*store, step as u32, &mut row)?;
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
        reads(&*store, &api, &mut row);
        relay_and_sweep(&*store, &mut row)?;
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
    }
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
    let svg_path = cfg.out.join(format!("scale-{backend}.svg"));
    plot(&svg_path, backend, &answer)?;
    writeln!(out, "wrote {} and {}", json_path.display(), svg_path.display()).map_err(CliError::Io)?;
    if let (Some(url), Some(prefix)) = (&cfg.location, &pg_prefix) {
        drop(store);
        // Best effort: the figures are written.
        let _ = execstore_postgres::drop_store(url, Some(prefix));
    }
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

fn store_err(e: execstore::StoreError) -> anyhow::Error {
    CliError::Store(e).into()
}

/// Fills executions `from..to` with W1's 20 events each, [`FILL_BATCH`] executions a batch.
fn fill(store: &dyn ExecutionStore, from: usize, to: usize) -> anyhow::Result<()> {
    let rounds: Vec<w1::Round> = (1..=EVENTS).map(|r| w1::Round::new(r, EVENTS)).collect();
    let mut start = from;
    while start < to {
        let end = (start + FILL_BATCH).min(to);
        let mut items = Vec::with_capacity((end - start) * (EVENTS as usize + 1));
        for i in start..end {
            let mut exe = w1::execution(i);
            exe.id = w1::exe_id(FILL_SEED, i);
            if i % 5 == 4 {
                exe.parent_id = Some(w1::exe_id(FILL_SEED, i - 1));
            }
            items.push(BatchItem::new(exe.clone(), Effects::new()));
            exe.version = 1;
            for round in &rounds {
                let mut next = exe.clone();
                let effects = w1::step(&mut next, i, round, w1::in_event_id(round.r, i), true);
                items.push(BatchItem::new(exe, effects));
                next.version += 1;
                exe = next;
            }
        }
        for result in store.commit_batch(&mut items).map_err(store_err)? {
            result.map_err(store_err)?;
        }
        while store
            .relay_outbox(1000, &mut |e| e.iter().map(|e| e.seq).collect())
            .map_err(store_err)?
            > 0
        {}
        while store
            .relay_spawns(1000, &mut |e| e.iter().map(|e| e.seq).collect())
            .map_err(store_err)?
            > 0
        {}
        start = end;
    }
    Ok(())
}

/// W1's steps (load the execution and check the event, then commit) on fresh executions:
/// one writer, then [`CLIENTS`] clients through a group commit.
fn commit_rates(store: &dyn ExecutionStore, step: u32, row: &mut Map<String, Value>) -> anyhow::Result<()> {
    let one = run_clients(store, 1, 1000 + 2 * step)?;
    row.insert("commit_1_writer_per_s".into(), json!(round(one)));
    let grouped = GroupCommit::new(store);
    let many = run_clients(&grouped, CLIENTS, 1001 + 2 * step)?;
    row.insert("commit_16_clients_per_s".into(), json!(round(many)));
    Ok(())
}

/// Commits per second of `clients` threads, each over its share of [`RATE_EXECUTIONS`].
fn run_clients<S: ExecutionStore + ?Sized>(store: &S, clients: usize, seed: u32) -> anyhow::Result<f64> {
    let mut exes: Vec<Execution> = (0..RATE_EXECUTIONS)
        .map(|i| {
            let mut exe = w1::execution(i);
            exe.id = w1::exe_id(seed, i);
            exe
        })
        .collect();
    for exe in &mut exes {
        store.save(exe).map_err(store_err)?;
    }
    let rounds: Vec<w1::Round> = (1..=RATE_ROUNDS).map(|r| w1::Round::new(r, EVENTS)).collect();
    let t = Instant::now();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let mut handles = Vec::new();
        for c in 0..clients {
            let rounds = &rounds;
            let ids: Vec<(usize, String)> = exes
                .iter()
                .enumerate()
                .filter(|(i, _)| i % clients == c)
                .map(|(i, e)| (i, e.id.clone()))
                .collect();
            handles.push(scope.spawn(move || -> anyhow::Result<()> {
                for round in rounds {
                    for (i, id) in &ids {
                        let in_id = w1::in_event_id(round.r, *i);
                        let (exe, seen) = store.load_for_event(id, &in_id).map_err(store_err)?;
                        let mut exe = exe.context("an execution went missing")?;
                        if seen {
                            continue;
                        }
                        let effects = w1::step(&mut exe, *i, round, in_id, true);
                        store.commit(&mut exe, &effects).map_err(store_err)?;
                    }
                }
                Ok(())
            }));
        }
        for h in handles {
            h.join().map_err(|_| anyhow::anyhow!("a client panicked"))??;
        }
        Ok(())
    })?;
    Ok((RATE_EXECUTIONS * RATE_ROUNDS as usize) as f64 / t.elapsed().as_secs_f64())
}

/// The median time, in ms, of `SAMPLES` calls of the monitor API's `target`.
fn time_get(store: &dyn ExecutionStore, api: &MonitorApi, target: &str) -> f64 {
    let mut samples: Vec<f64> = (0..SAMPLES)
        .map(|_| {
            let t = Instant::now();
            let answer = api.handle(store, &ApiRequest::from_target("GET", target, None), 2e9);
            let took = t.elapsed().as_secs_f64() * 1000.0;
            if answer.status != 200 {
                eprintln!("scale: GET {target}: {} {}", answer.status, answer.body);
            }
            took
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[SAMPLES / 2]
}

/// The reads a monitor makes, as `(name, target)`.
fn read_targets() -> Vec<(&'static str, String)> {
    let some = w1::exe_id(FILL_SEED, 3);
    vec![
        ("list_first_ms", "/api/executions?limit=50".into()),
        (
            "list_running_ms",
            "/api/executions?status=RUNNING&limit=50".into(),
        ),
        ("list_done_ms", "/api/executions?status=DONE&limit=50".into()),
        (
            "list_definition_ms",
            "/api/executions?definition=def-1&limit=50".into(),
        ),
        ("list_roots_ms", "/api/executions?roots_only=true&limit=50".into()),
        (
            "list_updated_window_ms",
            "/api/executions?updated_after=0&limit=50".into(),
        ),
        (
            "list_middle_page_ms",
            format!("/api/executions?order=id&limit=50&cursor={}", encode_cursor("8")),
        ),
        ("counts_ms", "/api/counts".into()),
        ("counts_definition_ms", "/api/counts?definition=def-1".into()),
        ("definition_graph_ms", "/api/definitions/def-1/graph".into()),
        ("detail_ms", format!("/api/executions/{some}")),
        ("trace_ms", format!("/api/executions/{some}/trace")),
        ("outbox_page_ms", "/api/outbox?limit=50".into()),
        ("timers_page_ms", "/api/timers?limit=50".into()),
        ("spawns_page_ms", "/api/spawns?limit=50".into()),
    ]
}

fn reads(store: &dyn ExecutionStore, api: &MonitorApi, row: &mut Map<String, Value>) {
    for (name, target) in read_targets() {
        row.insert(name.into(), json!(round(time_get(store, api, &target))));
    }
}

/// The relay's claim and ack of 100 entries (the commit runs left some), and a sweep's
/// claim of 100 due timers (every filled execution holds one).
fn relay_and_sweep(store: &dyn ExecutionStore, row: &mut Map<String, Value>) -> anyhow::Result<()> {
    let mut samples = Vec::new();
    for _ in 0..SAMPLES {
        let t = Instant::now();
        store
            .relay_outbox(100, &mut |e| e.iter().map(|e| e.seq).collect())
            .map_err(store_err)?;
        samples.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    samples.sort_by(f64::total_cmp);
    row.insert(
        "relay_claim_ack_100_ms".into(),
        json!(round(samples[SAMPLES / 2])),
    );
    let mut samples = Vec::new();
    for _ in 0..SAMPLES {
        let t = Instant::now();
        store
            .sweep_timers(w1::FIRE_AT_BASE + 1e6, 100, &mut |_| {})
            .map_err(store_err)?;
        samples.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    samples.sort_by(f64::total_cmp);
    row.insert("sweep_100_ms".into(), json!(round(samples[SAMPLES / 2])));
    Ok(())
}

/// The server's WAL insert position, in bytes (PostgreSQL only; `None` elsewhere or when it
/// cannot be read). Other sessions' writes count too: the bench should have the server alone.
fn pg_wal_lsn(url: Option<&str>, postgres: bool) -> Option<i64> {
    execstore_postgres::wal_position(url.filter(|_| postgres)?).ok()
}

/// The file's bytes and its -wal's.
fn file_bytes(path: &Path) -> u64 {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    [path.to_path_buf(), PathBuf::from(wal)]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

fn round(x: f64) -> f64 {
    if x >= 100.0 {
        x.round()
    } else {
        (x * 1000.0).round() / 1000.0
    }
}

fn print_row(out: &mut dyn std::io::Write, backend: &str, row: &Map<String, Value>) -> anyhow::Result<()> {
    let mut line = backend.to_owned();
    for (k, v) in row {
        line.push_str(&format!("  {k}={v}"));
    }
    writeln!(out, "{line}").map_err(CliError::Io)?;
    Ok(())
}

/// Two charts in one SVG: each read's time (ms) against the size, and the commit rates.
fn plot(path: &Path, backend: &str, answer: &Value) -> anyhow::Result<()> {
    use plotters::prelude::*;
    let rows = answer["rows"].as_array().cloned().unwrap_or_default();
    let sizes: Vec<f64> = rows.iter().filter_map(|r| r["executions"].as_f64()).collect();
    let (lo, hi) = (
        sizes.first().copied().unwrap_or(1.0) / 2.0,
        sizes.last().copied().unwrap_or(10.0) * 2.0,
    );
    let root = SVGBackend::new(path, (1100, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(draw)?;
    let (left, right) = root.split_horizontally(640);
    let reads: Vec<&str> = read_targets()
        .into_iter()
        .map(|(n, _)| n)
        .chain(["relay_claim_ack_100_ms", "sweep_100_ms"])
        .collect();
    let max_ms = rows
        .iter()
        .flat_map(|r| reads.iter().filter_map(move |k| r[*k].as_f64()))
        .fold(1.0f64, f64::max);
    let mut chart = ChartBuilder::on(&left)
        .caption(
            format!("{backend}: monitor reads (ms, median of {SAMPLES})"),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d((lo..hi).log_scale(), (0.001f64..max_ms * 2.0).log_scale())
        .map_err(draw)?;
    chart
        .configure_mesh()
        .x_desc("executions")
        .y_desc("ms")
        .draw()
        .map_err(draw)?;
    for (n, key) in reads.iter().enumerate() {
        let color = Palette99::pick(n).to_rgba();
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|r| Some((r["executions"].as_f64()?, r[*key].as_f64()?.max(0.001))))
            .collect();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(draw)?
            .label(key.trim_end_matches("_ms").to_owned())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 10))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(draw)?;
    let rates = [
        "commit_1_writer_per_s",
        "commit_16_clients_per_s",
        "fill_executions_per_s",
    ];
    let max_rate = rows
        .iter()
        .flat_map(|r| rates.iter().filter_map(move |k| r[*k].as_f64()))
        .fold(1.0f64, f64::max);
    let mut chart = ChartBuilder::on(&right)
        .caption(format!("{backend}: commits per second"), ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), 0f64..max_rate * 1.2)
        .map_err(draw)?;
    chart.configure_mesh().x_desc("executions").draw().map_err(draw)?;
    for (n, key) in rates.iter().enumerate() {
        let color = Palette99::pick(n + 3).to_rgba();
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|r| Some((r["executions"].as_f64()?, r[*key].as_f64()?)))
            .collect();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(draw)?
            .label(*key)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .label_font(("sans-serif", 10))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(draw)?;
    root.present().map_err(draw)?;
    Ok(())
}

fn draw<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("cannot draw the plot: {e}")
}
