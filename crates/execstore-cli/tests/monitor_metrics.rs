//! The monitor samples its metrics while it runs (a task, not the requests), keeps the last
//! `--metrics-keep` of them, and serves `/metrics` in Prometheus' text format without a token;
//! bad sampling flags are refused at start.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{start_monitor, Monitor};
use serde_json::Value;

fn demo(dir: &Path) -> PathBuf {
    let db = dir.join("demo.db");
    let out = common::execstore(
        dir,
        &[
            "demo",
            "--no-serve",
            "--db",
            db.to_str().unwrap(),
            "--executions",
            "20",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    db
}

/// A GET of `path`: its status, content type and body.
fn get(monitor: &Monitor, path: &str) -> (u16, String, String) {
    let mut response = monitor
        .agent
        .get(format!("{}{}", monitor.url, path.trim_start_matches('/')))
        .call()
        .expect("the request went through");
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    (status, kind, response.body_mut().read_to_string().unwrap())
}

fn json(monitor: &Monitor, path: &str) -> Value {
    let (status, _, body) = get(monitor, path);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

#[test]
fn the_server_samples_on_its_own_and_keeps_the_last_n() {
    let dir = tempfile::tempdir().unwrap();
    let db = demo(dir.path());
    let monitor = start_monitor(
        &[
            "monitor",
            "--db",
            db.to_str().unwrap(),
            "--metrics-period",
            "1",
            "--metrics-keep",
            "3",
        ],
        &[],
    );
    // No request for 4.5 s: a ring of 3 can only be full if the server sampled by itself (a
    // request samples only an empty or stale ring, one sample at a time).
    std::thread::sleep(Duration::from_millis(4500));
    let answer = json(&monitor, "/api/metrics");
    assert_eq!(answer["live"], true);
    assert_eq!(answer["period"], 1.0);
    assert_eq!(answer["keep"], 3);
    let samples = answer["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 3, "{answer}");
    let at: Vec<f64> = samples.iter().map(|s| s["at"].as_f64().unwrap()).collect();
    for pair in at.windows(2) {
        let gap = pair[1] - pair[0];
        assert!((0.5..2.0).contains(&gap), "samples {gap} s apart: {at:?}");
    }
    // The figures are the store's: the counts endpoint's, and the demo's workspaces.
    let counts = json(&monitor, "/api/counts");
    let last = &samples[2];
    assert_eq!(last["executions"]["by_status"], counts["counts"]);
    let workspaces = json(&monitor, "/api/workspaces");
    assert_eq!(
        last["workspaces"].as_array().unwrap().len(),
        workspaces["items"].as_array().unwrap().len()
    );
    assert!(last["workspaces"][0]["log_rate_per_minute"].is_number(), "{last}");

    // Prometheus' text, read without a token.
    let (status, kind, text) = get(&monitor, "/metrics");
    assert_eq!(status, 200);
    assert_eq!(kind, "text/plain; version=0.0.4; charset=utf-8");
    let running = counts["counts"]["RUNNING"].as_u64().unwrap();
    assert!(
        text.lines()
            .any(|l| l == format!("execstore_executions{{status=\"RUNNING\"}} {running}")),
        "{text}"
    );
    assert!(text.contains("# TYPE execstore_workspace_log_envelopes_total counter\n"));
}

#[test]
fn bad_sampling_flags_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for flags in [
        ["--metrics-period", "0"],
        ["--metrics-period", "nope"],
        ["--metrics-keep", "1"],
    ] {
        let out = common::execstore(
            dir.path(),
            &[&["monitor", "--db", "x.db"][..], &flags[..]].concat(),
        );
        assert!(!out.status.success(), "{flags:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flags[0]), "{flags:?}: {err}");
    }
}
