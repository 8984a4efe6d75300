//! `execstore bench --scale` end to end on a small SQLite store: the fill past its 1,000
//! committed executions (the rest copies), finished mixed with running, and every figure of
//! a row there, the monitor's peak RSS from a real `execstore monitor` child among them.

use std::process::Command;

use serde_json::Value;

#[test]
fn a_small_scale_run_writes_every_figure() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = Command::new(env!("CARGO_BIN_EXE_execstore"))
        .args(["bench", "--scale", "--sizes", "1100", "--out"])
        .arg(dir.path())
        .output()
        .expect("execstore runs");
    assert!(
        out.status.success(),
        "bench --scale failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(dir.path().join("scale-sqlite.json")).expect("the JSON is written");
    let answer: Value = serde_json::from_str(&text).expect("JSON");
    assert!(
        dir.path().join("scale-sqlite.svg").exists(),
        "the plot is written"
    );
    let row = &answer["rows"][0];
    assert_eq!(row["executions"], 1100);
    // Every odd execution is finished by its last step, copies as their templates.
    assert_eq!(
        (row["done"].as_u64(), row["running"].as_u64()),
        (Some(550), Some(550))
    );
    for key in [
        "commit_1_writer_per_s",
        "commit_16_clients_per_s",
        "list_state_ms",
        "list_attribute_ms",
        "list_done_ms",
        "definition_graph_ms",
        "monitor_reads_http_ms",
        "bytes_per_execution",
    ] {
        assert!(row[key].as_f64().is_some(), "{key} missing from {row}");
    }
    let rss = row["monitor_peak_rss_mib"]
        .as_f64()
        .expect("the monitor's peak RSS");
    assert!(rss > 1.0 && rss < 1024.0, "peak RSS {rss} MiB");
    if std::path::Path::new("/proc/self/io").exists() {
        let pages = row["pages_per_commit"].as_f64().expect("pages per commit");
        assert!(pages > 0.0, "a synced commit writes pages: {pages}");
    }
}
