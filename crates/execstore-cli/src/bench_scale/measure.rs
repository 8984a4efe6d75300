//! What is measured at each size: commit rates, the monitor API's reads, the relay and
//! the sweep, the bytes.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use execstore::executions::{encode_cursor, GroupCommit};
use execstore::{w1, Execution, ExecutionStore};
use execstore_monitor_api::{ApiRequest, MonitorApi};
use serde_json::{json, Map, Value};

use super::{round, store_err, CLIENTS, EVENTS, FILL_SEED, RATE_EXECUTIONS, RATE_ROUNDS, SAMPLES};

/// W1's steps (load the execution and check the event, then commit) on fresh executions:
/// one writer, then [`CLIENTS`] clients through a group commit.
pub(super) fn commit_rates(
    store: &dyn ExecutionStore,
    step: u32,
    row: &mut Map<String, Value>,
) -> anyhow::Result<()> {
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
pub(super) fn read_targets() -> Vec<(&'static str, String)> {
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

pub(super) fn reads(store: &dyn ExecutionStore, api: &MonitorApi, row: &mut Map<String, Value>) {
    for (name, target) in read_targets() {
        row.insert(name.into(), json!(round(time_get(store, api, &target))));
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
