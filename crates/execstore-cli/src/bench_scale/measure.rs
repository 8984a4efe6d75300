//! What is measured at each size: commit rates, the monitor API's reads, the relay and
//! the sweep, the bytes.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use execstore::executions::{encode_cursor, GroupCommit};
use execstore::{w1, Execution, ExecutionStore};
use execstore_monitor_api::{ApiRequest, MonitorApi};
use serde_json::{json, Map, Value};

use super::{
    round, store_err, ATTRIBUTE, CLIENTS, EVENTS, FILL_SEED, RATE_EXECUTIONS, RATE_ROUNDS, SAMPLES,
    SAMPLES_BUDGET,
};

/// W1's steps (load the execution and check the event, then commit) on fresh executions:
/// one writer, then [`CLIENTS`] clients through a group commit.
/// On SQLite (`sqlite`), also what the one writer's commits write: the process's
/// `write_bytes` (`/proc/self/io`: bytes it sent to storage, the WAL frames and the
/// checkpoints' pages) over the commits, in KiB and in 4 KiB pages per commit.
pub(super) fn commit_rates(
    store: &dyn ExecutionStore,
    step: u32,
    sqlite: bool,
    row: &mut Map<String, Value>,
) -> anyhow::Result<()> {
    let before = io_write_bytes();
    let one = run_clients(store, 1, 1000 + 2 * step)?;
    row.insert("commit_1_writer_per_s".into(), json!(round(one)));
    if let (true, Some(before), Some(after)) = (sqlite, before, io_write_bytes()) {
        // The saves of the fresh executions and their steps.
        let commits = (RATE_EXECUTIONS * (RATE_ROUNDS as usize + 1)) as f64;
        let per_commit = after.saturating_sub(before) as f64 / commits;
        row.insert("write_kib_per_commit".into(), json!(round(per_commit / 1024.0)));
        row.insert("pages_per_commit".into(), json!(round(per_commit / 4096.0)));
    }
    let grouped = GroupCommit::new(store);
    let many = run_clients(&grouped, CLIENTS, 1001 + 2 * step)?;
    row.insert("commit_16_clients_per_s".into(), json!(round(many)));
    Ok(())
}

/// This process's `write_bytes` so far (`/proc/self/io`; `None` where there is none).
fn io_write_bytes() -> Option<u64> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
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

/// The median time, in ms, of up to [`SAMPLES`] calls of the monitor API's `target` (one
/// more only while they took less than [`SAMPLES_BUDGET`] in all: a read of seconds is
/// sampled once or twice).
fn time_get(store: &dyn ExecutionStore, api: &MonitorApi, target: &str) -> f64 {
    let started = Instant::now();
    let mut samples = Vec::new();
    while samples.len() < SAMPLES && (samples.is_empty() || started.elapsed() < SAMPLES_BUDGET) {
        let t = Instant::now();
        let answer = api.handle(store, &ApiRequest::from_target("GET", target, None), 2e9);
        samples.push(t.elapsed().as_secs_f64() * 1000.0);
        if answer.status != 200 {
            eprintln!("scale: GET {target}: {} {}", answer.status, answer.body);
        }
    }
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// The value of [`ATTRIBUTE`] execution 3 holds (ten copies of it per 10,000 executions).
pub(super) fn attribute_value(store: &dyn ExecutionStore) -> anyhow::Result<String> {
    let exe = store
        .load(&w1::exe_id(FILL_SEED, 3))
        .map_err(store_err)?
        .context("execution 3 is missing")?;
    let path = ATTRIBUTE.strip_prefix("context.").unwrap_or(ATTRIBUTE);
    exe.context
        .get(path)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .context("execution 3 has no such attribute")
}

/// `s` percent-encoded for a query string (every byte but letters, digits and `-._~`).
fn query_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The reads a monitor makes, as `(name, target)`; `value` is what the list by the declared
/// attribute asks for.
pub(super) fn read_targets(value: &str) -> Vec<(&'static str, String)> {
    let some = w1::exe_id(FILL_SEED, 3);
    // The commit-rate runs leave their executions at s10 (a few hundred per size); every
    // filled one is at s20.
    let state = query_escape(&format!("state = root.work.s{RATE_ROUNDS:02}"));
    let attribute = query_escape(&format!("{ATTRIBUTE} = \"{value}\""));
    vec![
        ("list_state_ms", format!("/api/executions?where={state}&limit=50")),
        (
            "list_attribute_ms",
            format!("/api/executions?where={attribute}&limit=50"),
        ),
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

pub(super) fn reads(
    store: &dyn ExecutionStore,
    api: &MonitorApi,
    targets: &[(&'static str, String)],
    row: &mut Map<String, Value>,
) {
    for (name, target) in targets {
        row.insert((*name).into(), json!(round(time_get(store, api, target))));
    }
}

/// The relay's claim and ack of 100 entries (the commit runs left some), and a sweep's
/// claim of 100 due timers (every filled execution holds one).
pub(super) fn relay_and_sweep(
    store: &dyn ExecutionStore,
    row: &mut Map<String, Value>,
) -> anyhow::Result<()> {
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
pub(super) fn pg_wal_lsn(url: Option<&str>, postgres: bool) -> Option<i64> {
    execstore_postgres::wal_position(url.filter(|_| postgres)?).ok()
}

/// The file's bytes and its -wal's.
pub(super) fn file_bytes(path: &Path) -> u64 {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    [path.to_path_buf(), PathBuf::from(wal)]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}
