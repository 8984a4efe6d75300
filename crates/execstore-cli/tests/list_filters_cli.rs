//! `execstore list` with time windows and a search, end to end on a file with known times:
//! epoch seconds and RFC 3339 alike, bounds `after` inclusive and `before` exclusive, the
//! search by id prefix and by state, paging, and bad values refused with the file unchanged.

mod common;

use std::path::Path;

use common::execstore;
use execstore::{executions::Status, Execution, ExecutionStore};
use execstore_sqlite::{SqliteOptions, SqliteStore};
use serde_json::Value;

/// 2026-01-01T00:00:00Z.
const T0: f64 = 1_767_225_600.0;

/// Ten executions `x00`..`x09`: created at T0 + i minutes, updated an hour later, the even
/// ones finished two hours later (DONE) and in `order.checkout.pay`, the odd ones RUNNING in
/// `order.ship`.
fn write_store(path: &Path) {
    let store = SqliteStore::open(path, SqliteOptions::new()).unwrap();
    for i in 0..10 {
        let mut exe = Execution::new(format!("x{i:02}"), "orders");
        let minute = 60.0 * i as f64;
        exe.created_at = Some(T0 + minute);
        exe.updated_at = Some(T0 + 3600.0 + minute);
        if i % 2 == 0 {
            exe.status = Status::Done;
            exe.finished_at = Some(T0 + 7200.0 + minute);
            exe.active_path = Some("order.checkout.pay".into());
        } else {
            exe.status = Status::Running;
            exe.active_path = Some("order.ship".into());
        }
        store.save(&mut exe).unwrap();
    }
}

/// The ids `list --json` prints for `filters`.
fn ids(dir: &Path, filters: &[&str]) -> Vec<String> {
    let mut args = vec!["--db", "s.db", "--json", "list"];
    args.extend_from_slice(filters);
    let out = execstore(dir, &args);
    assert!(
        out.status.success(),
        "{filters:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

fn x(numbers: &[usize]) -> Vec<String> {
    numbers.iter().map(|i| format!("x{i:02}")).collect()
}

fn t(offset: f64) -> String {
    (T0 + offset).to_string()
}

#[test]
fn time_windows_and_search() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_store(&d.join("s.db"));
    let before = std::fs::read(d.join("s.db")).unwrap();

    // created: [T0 + 2 min, T0 + 5 min) keeps x02, x03, x04.
    let window = ["--created-after", &t(120.0), "--created-before", &t(300.0)];
    assert_eq!(ids(d, &window), x(&[2, 3, 4]));
    // The same window in RFC 3339, with an offset too.
    let rfc = [
        "--created-after",
        "2026-01-01T00:02:00Z",
        "--created-before",
        "2026-01-01T01:05:00+01:00",
    ];
    assert_eq!(ids(d, &rfc), x(&[2, 3, 4]));
    // updated, each end alone.
    assert_eq!(ids(d, &["--updated-after", &t(3600.0 + 480.0)]), x(&[8, 9]));
    assert_eq!(ids(d, &["--updated-before", &t(3600.0 + 60.0)]), x(&[0]));
    // finished: the running ones never match.
    assert_eq!(ids(d, &["--finished-after", &t(0.0)]), x(&[0, 2, 4, 6, 8]));
    assert_eq!(
        ids(
            d,
            &[
                "--finished-after",
                &t(7200.0 + 120.0),
                "--finished-before",
                &t(7200.0 + 360.0)
            ]
        ),
        x(&[2, 4])
    );
    // With the other filters.
    let all_created = ["--created-after", &t(0.0), "--created-before", &t(600.0)];
    let mut running = all_created.to_vec();
    running.extend(["--status", "running"]);
    assert_eq!(ids(d, &running), x(&[1, 3, 5, 7, 9]));
    // The search: by state (and below it), by id prefix, never a partial segment.
    assert_eq!(ids(d, &["--search", "order.checkout"]), x(&[0, 2, 4, 6, 8]));
    assert_eq!(ids(d, &["--search", "order"]), x(&(0..10).collect::<Vec<_>>()));
    assert_eq!(ids(d, &["--search", "x0"]), x(&(0..10).collect::<Vec<_>>()));
    assert_eq!(ids(d, &["--search", "x05"]), x(&[5]));
    assert!(ids(d, &["--search", "order.check"]).is_empty());
    assert!(ids(d, &["--search", "ship"]).is_empty());
    let mut search_window = vec!["--search", "order.ship"];
    let upd = t(3600.0 + 180.0);
    search_window.extend(["--updated-after", &upd]);
    assert_eq!(ids(d, &search_window), x(&[3, 5, 7, 9]));
    // Paged two at a time, every page followed: the same, in order.
    let mut paged = search_window.clone();
    paged.extend(["--limit", "2", "--all"]);
    assert_eq!(ids(d, &paged), x(&[3, 5, 7, 9]));
    // One page of two hands back a cursor that resumes after it.
    let out = execstore(
        d,
        &["--db", "s.db", "--json", "list", "--search", "x", "--limit", "3"],
    );
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    assert_eq!(
        ids(d, &["--search", "x", "--limit", "3", "--cursor", &cursor]),
        x(&[3, 4, 5])
    );

    // The table says nothing matched, without the harel hint.
    let out = execstore(d, &["--db", "s.db", "list", "--search", "nothing"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no executions");

    // Bad values: a usage error (2) for what is not a time, a store error (1) for an
    // inverted window or a bad search; each says what is wrong.
    for (args, status, says) in [
        (vec!["--updated-after=-5"], 2, "expected epoch seconds"),
        (vec!["--updated-after", "NaN"], 2, "expected epoch seconds"),
        (vec!["--created-before", "inf"], 2, "expected epoch seconds"),
        (vec!["--finished-after", "2026-13-01T00:00:00Z"], 2, "RFC 3339"),
        (
            vec!["--created-after", "200", "--created-before", "100"],
            1,
            "inverted",
        ),
        (vec!["--search", ""], 1, "search"),
    ] {
        let mut full = vec!["--db", "s.db", "list"];
        full.extend(args.iter().copied());
        let out = execstore(d, &full);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let long = "s".repeat(execstore::executions::MAX_SEARCH_BYTES + 1);
    let out = execstore(d, &["--db", "s.db", "list", "--search", &long]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("search"));

    // Reading never changed the file.
    assert_eq!(std::fs::read(d.join("s.db")).unwrap(), before);
}
