//! What one metrics sample costs on a large SQLite store: run by hand on a file named by
//! `EXECSTORE_METRICS_COST_DB` (docs/metrics.md, "Measured", quotes the figures and how the
//! file was made); skipped otherwise.

use std::collections::BTreeMap;
use std::time::Instant;

use execstore::{executions::ListQuery, ExecutionStore};
use execstore_monitor_api::metrics::MetricsConfig;
use execstore_monitor_api::{MonitorApi, Stores};
use execstore_sqlite::{SqliteOptions, SqliteStore};

#[test]
fn one_sample_on_a_large_store() {
    let Ok(path) = std::env::var("EXECSTORE_METRICS_COST_DB") else {
        let line = "SKIPPED: one_sample_on_a_large_store: EXECSTORE_METRICS_COST_DB names no store (a measurement run by hand)\n";
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        return;
    };
    let store = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
    let stores = Stores {
        executions: Some(&store),
        workspaces: None,
    };
    let api = MonitorApi::new(serde_json::Map::new(), None).with_metrics(MetricsConfig::default());
    let now = execstore_cli_now();
    let mut figures = BTreeMap::new();
    let t = Instant::now();
    let total: u64 = store
        .count_by_status(&ListQuery::new())
        .unwrap()
        .iter()
        .map(|(_, n)| n)
        .sum();
    figures.insert("count_by_status(all)", t.elapsed().as_secs_f64());
    let t = Instant::now();
    assert!(api.sample_metrics(stores, now).unwrap());
    figures.insert("first sample (counts by definition)", t.elapsed().as_secs_f64());
    let t = Instant::now();
    assert!(api.sample_metrics(stores, now + 10.0).unwrap());
    figures.insert("next sample (carries them)", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let text = api.prometheus(stores, now + 10.0).unwrap();
    figures.insert("/metrics from the ring", t.elapsed().as_secs_f64());
    assert!(text.contains("execstore_executions{"));
    eprintln!("metrics cost at {total} executions: {figures:?}");
}

fn execstore_cli_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
