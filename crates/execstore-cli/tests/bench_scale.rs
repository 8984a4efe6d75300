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

/// `execstore bench --scale --workload w2` at two small sizes: a row per size with the log's
/// reads, the monitor's and the write rates, and both plots' lines in the SVG (each read's
/// and each rate's, and the 20 ms budget).
#[test]
fn a_small_log_run_writes_every_figure_and_its_plot() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = Command::new(env!("CARGO_BIN_EXE_execstore"))
        .args([
            "bench",
            "--scale",
            "--workload",
            "w2",
            "--log-sizes",
            "1000,2000",
            "--workspaces",
            "2",
            "--w2-events",
            "50",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .expect("execstore runs");
    assert!(
        out.status.success(),
        "bench --scale --workload w2 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text =
        std::fs::read_to_string(dir.path().join("scale-log-sqlite.json")).expect("the JSON is written");
    let answer: Value = serde_json::from_str(&text).expect("JSON");
    let rows = answer["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    for (row, size) in rows.iter().zip([1000, 2000]) {
        assert_eq!(row["envelopes"], size);
        for key in [
            "tail_read_ms",
            "due_runs_w2_ms",
            "api_leases_ms",
            "api_due_runs_ms",
            "append_envelopes_per_s",
        ] {
            assert!(row[key].as_f64().is_some(), "{key} missing from {row}");
        }
    }
    let svg = std::fs::read_to_string(dir.path().join("scale-log-sqlite.svg")).expect("the plot is written");
    for label in [
        "20 ms budget",
        "tail_read",
        "api_leases",
        "append_envelopes_per_s",
        "envelopes",
    ] {
        assert!(svg.contains(label), "{label} is not drawn");
    }
}
