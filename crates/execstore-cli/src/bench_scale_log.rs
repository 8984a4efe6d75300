//! `execstore bench --scale --workload w2`: how the workspace log's costs grow (issue 27's
//! second half). One workspace (`t0/w0`) is grown step by step to each size of
//! `--log-sizes` envelopes, with a run for every ten envelopes (W2's runs: statuses, due
//! times and run leases as `bench_w2` makes them); beside it `--workspaces - 1` small
//! workspaces of `--w2-events` envelopes each, filled once, for the workspace list. At each
//! size it measures the append rate (W2's batches of 100, synced as the store's default
//! does), the contract's reads (a tail, a typed tail, a window in the middle), a
//! subscriber's latency, `due_runs` under each kind of policy, and the monitor API's
//! workspace pages; it prints a line per size and writes `scale-log-BACKEND.json` and
//! `scale-log-BACKEND.svg` into `--out`.
//!
//! The fill goes through the contract ([`WorkspaceTx::append`] and `save_runs`, big batches
//! of one transaction each; on SQLite a second storage on the file without syncs): the
//! setting, not the measure.
//!
//! [`WorkspaceTx::append`]: execstore::workspace::WorkspaceTx::append

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use execstore::workspace::{
    run_lease, Clock, Entry, LogQuery, RunPolicy, Subscription, TimedWorkspace, WorkspaceRef,
    WorkspaceStorage,
};
use execstore_any::{Options, Target, POSTGRES, SQLITE};
use execstore_monitor_api::{ApiRequest, MonitorApi, Stores};
use serde_json::{json, Map, Value};

use crate::bench_scale::plot::{draw_plot, Chart, Plot};
use crate::bench_scale::{print_row, round};
use crate::bench_w2::{bench_run, entry, t0, workspace, STATUSES};
use crate::error::CliError;

/// Envelopes per fill transaction (the contract's most is `MAX_BATCH`, 100,000).
const FILL_BATCH: usize = 50_000;
/// Runs per fill transaction.
const RUN_BATCH: usize = 10_000;
/// One run for this many envelopes.
const ENVELOPES_PER_RUN: usize = 10;
/// Append transactions of [`APPEND_BATCH`] envelopes timed at each size.
const APPEND_TXS: usize = 20;
const APPEND_BATCH: usize = 100;
/// Appends a subscriber follows at each size.
const SUBSCRIBE_EVENTS: usize = 50;
/// Samples of each read (the median is reported).
const SAMPLES: usize = 9;
/// `due_runs`' `now`: half of the runs' due times (t0 .. t0 + 1 h) have passed.
const DUE_AFTER_S: i64 = 1800;

/// What to run.
pub struct Config {
    /// `sqlite` (a file, fresh) or `postgres` (a URL; a fresh schema).
    pub location: Option<String>,
    /// The log sizes of `t0/w0`, ascending.
    pub sizes: Vec<usize>,
    /// Workspaces in all (`t0/w0` and the small ones).
    pub workspaces: usize,
    /// Envelopes of each small workspace.
    pub small_events: usize,
    /// Where the JSON and the SVG go.
    pub out: PathBuf,
}

/// Runs the curve and returns the JSON written.
pub fn run(cfg: &Config, out: &mut dyn std::io::Write) -> anyhow::Result<Value> {
    let mut sizes = cfg.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.is_empty() || sizes[0] < 1000 {
        return Err(CliError::Input("--log-sizes needs sizes of 1000 or more".into()).into());
    }
    let tmp = tempfile::Builder::new()
        .prefix("execstore-scale-log-")
        .tempdir()
        .map_err(CliError::Io)?;
    let clock: Arc<dyn Clock> = crate::bench_w2::clock();
    let options = Options::new().workspaces(true).clock(clock);
    let mut pg = None;
    let (backend, storage, filler, file) = match &cfg.location {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let schema = format!("execstore_scale_log_{:x}_{nanos:x}", std::process::id());
            let mut options = options.clone();
            options.postgres.connect.schema = Some(schema.clone());
            let storage = open(&POSTGRES, url, &options)?;
            writeln!(out, "postgres: schema {schema} (left in place)").map_err(CliError::Io)?;
            pg = Some((url.clone(), schema));
            ("postgres", storage.clone(), storage, None)
        }
        other => {
            let path = match other {
                Some(p) => PathBuf::from(p),
                None => tmp.path().join("scale-log.db"),
            };
            if path.exists() {
                return Err(CliError::Input(format!(
                    "{} already exists; --scale needs a fresh file",
                    path.display()
                ))
                .into());
            }
            let location = path.to_string_lossy().into_owned();
            let storage = open(&SQLITE, &location, &options)?;
            let mut fast = options.clone();
            fast.sqlite.connect.synchronous = execstore_sqlite::Synchronous::Off;
            let filler = open(&SQLITE, &location, &fast)?;
            ("sqlite", storage, filler, Some(path))
        }
    };
    let started = Instant::now();
    for w in 1..cfg.workspaces {
        fill_log(&*filler, &workspace(w), cfg.small_events)?;
    }
    let small_fill_s = started.elapsed().as_secs_f64();
    let api = MonitorApi::new(Map::new(), None);
    let ws0 = workspace(0);
    let mut rows = Vec::new();
    let mut runs_filled = 0usize;
    for &size in &sizes {
        let mut row = Map::new();
        let before = storage.head_seq(&ws0)?;
        let t = Instant::now();
        fill_log(&*filler, &ws0, size)?;
        let fill_s = t.elapsed().as_secs_f64();
        let added = storage.head_seq(&ws0)? - before;
        row.insert("envelopes".into(), json!(size));
        row.insert("fill_envelopes_per_s".into(), json!(round(added as f64 / fill_s)));
        let runs = size / ENVELOPES_PER_RUN;
        let t = Instant::now();
        fill_runs(&*filler, &ws0, runs_filled, runs)?;
        row.insert("runs".into(), json!(runs));
        row.insert(
            "fill_runs_per_s".into(),
            json!(round((runs - runs_filled) as f64 / t.elapsed().as_secs_f64())),
        );
        runs_filled = runs;
        if let Some((url, schema)) = &pg {
            analyze(url, schema)?;
        }
        append_rate(&*storage, &ws0, size, &mut row)?;
        log_reads(&*storage, &ws0, &mut row)?;
        subscribe(&*storage, &ws0, &mut row)?;
        due(&*storage, &mut row)?;
        monitor_reads(&*storage, &api, &mut row);
        let bytes = match &file {
            Some(path) => file_bytes(path),
            None => 0,
        };
        if bytes > 0 {
            // Every workspace's envelopes (and the runs) share the file.
            let all = size + cfg.workspaces.saturating_sub(1) * cfg.small_events;
            row.insert("bytes".into(), json!(bytes));
            row.insert(
                "bytes_per_envelope".into(),
                json!(round(bytes as f64 / all as f64)),
            );
        }
        print_row(out, backend, &row)?;
        rows.push(Value::Object(row));
    }
    let answer = json!({
        "backend": backend,
        "workspaces": cfg.workspaces,
        "small_workspace_envelopes": cfg.small_events,
        "small_fill_s": round(small_fill_s),
        "envelopes_per_run": ENVELOPES_PER_RUN,
        "samples": SAMPLES,
        "sqlite": rusqlite::version(),
        "rows": rows,
    });
    std::fs::create_dir_all(&cfg.out).map_err(CliError::Io)?;
    let stem = format!("scale-log-{backend}");
    let json_path = cfg.out.join(format!("{stem}.json"));
    std::fs::write(&json_path, format!("{:#}\n", answer)).map_err(CliError::Io)?;
    let svg_path = cfg.out.join(format!("{stem}.svg"));
    plot(&svg_path, backend, &answer)?;
    writeln!(out, "wrote {} and {}", json_path.display(), svg_path.display()).map_err(CliError::Io)?;
    Ok(answer)
}

fn open(
    backend: &'static execstore_any::Backend,
    location: &str,
    options: &Options,
) -> anyhow::Result<Arc<dyn TimedWorkspace>> {
    let target = Target {
        backend,
        location: location.to_owned(),
    };
    let stores = target.open(options).map_err(CliError::Store)?;
    stores.workspaces.context("the backend opened no workspace log")
}

/// `ANALYZE` of the filled tables: a bulk fill outruns autovacuum, and until the statistics
/// exist the planner takes a workspace for a few rows (an append's id check then reads
/// every envelope of the workspace). A running store is analyzed as it grows.
fn analyze(url: &str, schema: &str) -> anyhow::Result<()> {
    let mut client = postgres::Client::connect(url, postgres::NoTls).context("cannot connect to ANALYZE")?;
    client
        .batch_execute(&format!(
            "ANALYZE {schema}.reflexr_events; ANALYZE {schema}.reflexr_runs; ANALYZE {schema}.reflexr_leases"
        ))
        .context("ANALYZE")?;
    Ok(())
}

/// Appends to `ws` until its head is `to`, [`FILL_BATCH`] envelopes a transaction.
fn fill_log(storage: &dyn WorkspaceStorage, ws: &WorkspaceRef, to: usize) -> anyhow::Result<()> {
    let mut head = usize::try_from(storage.head_seq(ws)?).unwrap_or(0);
    while head < to {
        let end = (head + FILL_BATCH).min(to);
        let entries: Vec<Entry> = (head..end)
            .map(|i| entry(format!("{}-e{i:09}", ws.workspace_id), i))
            .collect();
        let mut tx = storage.begin(ws)?;
        tx.append(&entries)?;
        tx.commit()?;
        head = end;
    }
    Ok(())
}

/// Saves runs `from..to` of `ws` (W2's), and takes the run lease of every other running one.
fn fill_runs(
    storage: &dyn WorkspaceStorage,
    ws: &WorkspaceRef,
    from: usize,
    to: usize,
) -> anyhow::Result<()> {
    let mut start = from;
    while start < to {
        let end = (start + RUN_BATCH).min(to);
        let runs = (start..end)
            .map(|j| bench_run(0, j))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut tx = storage.begin(ws)?;
        tx.save_runs(&runs)?;
        tx.commit()?;
        start = end;
    }
    for j in (from..to).filter(|j| STATUSES[(j / 7) % 10] == "running" && j % 2 == 0) {
        storage.acquire_lease(
            ws,
            &run_lease(&format!("w0-r{j:07}")),
            "bench",
            Duration::from_secs(3600),
        )?;
    }
    Ok(())
}

/// W2's appends (batches of [`APPEND_BATCH`], one transaction each) on the measured storage.
fn append_rate(
    storage: &dyn WorkspaceStorage,
    ws: &WorkspaceRef,
    size: usize,
    row: &mut Map<String, Value>,
) -> anyhow::Result<()> {
    let t = Instant::now();
    for k in 0..APPEND_TXS {
        let entries: Vec<Entry> = (0..APPEND_BATCH)
            .map(|i| entry(format!("rate-{size}-{k}-{i}"), i))
            .collect();
        let mut tx = storage.begin(ws)?;
        tx.append(&entries)?;
        tx.commit()?;
    }
    let s = t.elapsed().as_secs_f64();
    row.insert(
        "append_envelopes_per_s".into(),
        json!(round((APPEND_TXS * APPEND_BATCH) as f64 / s)),
    );
    row.insert("append_tx_per_s".into(), json!(round(APPEND_TXS as f64 / s)));
    Ok(())
}

/// The median time, in ms, of [`SAMPLES`] calls of `f`.
fn median_ms(mut f: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<f64> {
    let mut samples = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let t = Instant::now();
        f()?;
        samples.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[SAMPLES / 2])
}

/// The contract's reads: the tail, a typed tail, a window in the middle.
fn log_reads(
    storage: &dyn WorkspaceStorage,
    ws: &WorkspaceRef,
    row: &mut Map<String, Value>,
) -> anyhow::Result<()> {
    let head = storage.head_seq(ws)?;
    let reads = [
        ("tail_read_ms", LogQuery::new().last(100), 100),
        (
            "typed_tail_read_ms",
            LogQuery::new().types(["bench:deploy"]).last(50),
            50,
        ),
        ("window_read_ms", LogQuery::new().after(head / 2).limit(100), 100),
    ];
    for (name, query, want) in reads {
        let took = median_ms(|| {
            let got = storage.read(ws, &query)?;
            if got.len() != want {
                bail!("{name} returned {} envelopes, not {want}", got.len());
            }
            Ok(())
        })?;
        row.insert(name.into(), json!(round(took)));
    }
    Ok(())
}

/// A subscriber in this process following [`SUBSCRIBE_EVENTS`] single appends.
fn subscribe(
    storage: &dyn WorkspaceStorage,
    ws: &WorkspaceRef,
    row: &mut Map<String, Value>,
) -> anyhow::Result<()> {
    let head = storage.head_seq(ws)?;
    let (sent, received) = std::thread::scope(|scope| -> anyhow::Result<_> {
        let follower = scope.spawn(|| -> anyhow::Result<Vec<Instant>> {
            let mut sub = Subscription::new(storage, ws.clone(), head)?;
            let mut got = Vec::with_capacity(SUBSCRIBE_EVENTS);
            let deadline = Instant::now() + Duration::from_secs(60);
            while got.len() < SUBSCRIBE_EVENTS && Instant::now() < deadline {
                if sub.next_timeout(Duration::from_millis(200))?.is_some() {
                    got.push(Instant::now());
                }
            }
            Ok(got)
        });
        let mut sent = Vec::with_capacity(SUBSCRIBE_EVENTS);
        for k in 0..SUBSCRIBE_EVENTS {
            let mut tx = storage.begin(ws)?;
            tx.append(&[entry(format!("sub-{head}-{k}"), k)])?;
            tx.commit()?;
            sent.push(Instant::now());
            std::thread::sleep(Duration::from_millis(5));
        }
        let received = follower
            .join()
            .map_err(|_| anyhow::anyhow!("the subscriber panicked"))??;
        Ok((sent, received))
    })?;
    if received.len() != sent.len() {
        bail!(
            "the subscriber got {} of {} envelopes",
            received.len(),
            sent.len()
        );
    }
    let mut lat: Vec<u64> = sent
        .iter()
        .zip(&received)
        .map(|(s, r)| r.saturating_duration_since(*s).as_micros() as u64)
        .collect();
    lat.sort_unstable();
    row.insert("subscribe_p50_us".into(), json!(lat[lat.len() / 2]));
    row.insert("subscribe_p99_us".into(), json!(lat[(lat.len() - 1) * 99 / 100]));
    Ok(())
}

/// The policies `due_runs` is timed under, by name.
fn policies() -> Vec<(&'static str, RunPolicy)> {
    let set = |names: &[usize]| names.iter().map(|i| format!("bench:r{i}")).collect();
    vec![
        ("none", RunPolicy::new()),
        (
            "ordered",
            RunPolicy {
                ordered: set(&[0, 1, 2, 3, 4]),
                ..RunPolicy::new()
            },
        ),
        (
            "blocking",
            RunPolicy {
                ordered: set(&[0, 1, 2, 3, 4]),
                blocking: set(&[0, 1]),
                ..RunPolicy::new()
            },
        ),
        (
            "disabled",
            RunPolicy {
                disabled: set(&[9]),
                ..RunPolicy::new()
            },
        ),
        (
            "w2",
            RunPolicy {
                ordered: set(&[0, 1, 2, 3, 4]),
                blocking: set(&[0, 1]),
                disabled: set(&[9]),
            },
        ),
    ]
}

fn due(storage: &dyn WorkspaceStorage, row: &mut Map<String, Value>) -> anyhow::Result<()> {
    let now = t0().plus_micros(DUE_AFTER_S * 1_000_000)?;
    for (name, policy) in policies() {
        let mut rows = 0;
        let took = median_ms(|| {
            rows = storage.due_runs(now, 100, &policy)?.len();
            Ok(())
        })?;
        row.insert(format!("due_runs_{name}_ms"), json!(round(took)));
        row.insert(format!("due_runs_{name}_rows"), json!(rows));
    }
    Ok(())
}

/// The monitor's workspace pages, as `(name, target)`.
fn monitor_targets() -> Vec<(&'static str, String)> {
    let now = t0().micros() / 1_000_000 + DUE_AFTER_S;
    vec![
        ("api_log_tail_ms", "/api/workspaces/t0/w0/log?last=100".into()),
        (
            "api_log_typed_ms",
            "/api/workspaces/t0/w0/log?type=bench:deploy&last=50".into(),
        ),
        ("api_log_first_ms", "/api/workspaces/t0/w0/log?limit=100".into()),
        ("api_workspace_ms", "/api/workspaces/t0/w0".into()),
        ("api_runs_page_ms", "/api/workspaces/t0/w0/runs?limit=50".into()),
        ("api_leases_ms", "/api/workspaces/t0/w0/leases".into()),
        ("api_due_runs_ms", format!("/api/due-runs?limit=100&now={now}")),
        ("api_workspaces_ms", "/api/workspaces".into()),
        ("api_changes_ms", "/api/changes".into()),
    ]
}

fn monitor_reads(storage: &dyn WorkspaceStorage, api: &MonitorApi, row: &mut Map<String, Value>) {
    let stores = || Stores {
        executions: None,
        workspaces: Some(storage),
    };
    let mut targets = monitor_targets();
    // The middle of the log: half its head.
    let head = storage.head_seq(&workspace(0)).unwrap_or(0);
    targets.push((
        "api_log_middle_ms",
        format!("/api/workspaces/t0/w0/log?after={}&limit=100", head / 2),
    ));
    for (name, target) in targets {
        let took = median_ms(|| {
            let answer = api.handle_stores(stores(), &ApiRequest::from_target("GET", &target, None), 2e9);
            if answer.status != 200 {
                eprintln!("scale-log: GET {target}: {} {}", answer.status, answer.body);
            }
            Ok(())
        })
        .unwrap_or(f64::NAN);
        row.insert(name.into(), json!(round(took)));
    }
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

/// The keys drawn as read times (ms).
fn read_keys() -> Vec<String> {
    let mut keys: Vec<String> = ["tail_read_ms", "typed_tail_read_ms", "window_read_ms"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    keys.extend(policies().iter().map(|(n, _)| format!("due_runs_{n}_ms")));
    keys.extend(monitor_targets().iter().map(|(n, _)| n.to_string()));
    keys.push("api_log_middle_ms".into());
    keys
}

/// Two charts in one SVG: each read's time (ms) against the log's size, with the monitor's
/// 20 ms budget, and the append rates.
fn plot(path: &Path, backend: &str, answer: &Value) -> anyhow::Result<()> {
    let rates = [
        "append_envelopes_per_s",
        "fill_envelopes_per_s",
        "fill_runs_per_s",
    ];
    draw_plot(
        path,
        &Plot {
            x_key: "envelopes",
            x_desc: "envelopes in the workspace (runs: a tenth)",
            size: (1150, 560),
            split: 700,
            reads: Chart {
                caption: format!("{backend}: workspace log reads (ms, median of {SAMPLES})"),
                keys: read_keys(),
                first_colour: 0,
                label_size: 9,
            },
            floor_ms: 0.01,
            min_top_ms: 40.0,
            budget_ms: Some(20.0),
            rates: Chart {
                caption: format!("{backend}: writes per second"),
                keys: rates.iter().map(|k| k.to_string()).collect(),
                first_colour: 5,
                label_size: 10,
            },
        },
        answer,
    )
}
