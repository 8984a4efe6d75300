//! `execstore bench` end to end: workload W1 (shared/bench/WORKLOAD.md) on small sizes, its
//! JSON line's keys in the spec's order, the spec's hashes of execution 0's stored row and the
//! spec's cross-check counts, on every backend and with concurrent clients.

mod common;

use std::path::Path;
use std::process::Command;

use common::execstore;
use serde_json::Value;

/// SHA-256 of execution 0's stored `data` after phase 1, seed 1 (WORKLOAD.md §7).
const EXE0_SHA256_K10: &str = "91d88f82e6b814d59f4c99b3b3306dd824465466e24878933b04c1a9b6636d87";
const EXE0_SHA256_K20: &str = "4f3e8fd0553424a6ef04d63a9f1c839d448fe6c510fd3cb3bfad7e13ac10a34c";

/// The keys of the line, in order: the spec's required keys, its extra keys, then ours.
const KEYS: [&str; 31] = [
    "impl",
    "executions",
    "events",
    "commit_events_per_s",
    "list_all_pages_ms",
    "list_mid_page_ms",
    "due_timers_ms",
    "outbox_drain_acks_per_s",
    "read_trace_100_ms",
    "db_bytes",
    "python",
    "sqlite",
    "trace",
    "synchronous",
    "seed",
    "create_saves_per_s",
    "list_rows",
    "list_pages",
    "due_timers_rows",
    "outbox_acked",
    "read_trace_rows",
    "wal_bytes_after_close",
    "exe0_data_sha256",
    "wall_s",
    "runtime",
    "clients",
    "group_commit",
    "event_read",
    "mean_batch",
    "outbox_drain_batch_acks_per_s",
    "backend",
];

/// Reports that the calling test is skipped, and why: one line `SKIPPED: <test>: <reason>`
/// straight to stderr, past the test harness's capture (scripts/test counts it as skipped, not
/// passed). `<test>` is the thread's name, which libtest sets to the test's.
fn skip(reason: &str) {
    use std::io::Write as _;
    let thread = std::thread::current();
    let line = format!("SKIPPED: {}: {reason}\n", thread.name().unwrap_or("?"));
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Runs `execstore bench ARGS`, checks it printed exactly one JSON line with the keys in
/// order, and returns it.
fn bench(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    let out = execstore(dir.path(), &all);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{args:?} failed: {stderr}");
    assert_eq!(stdout.lines().count(), 1, "one line: {stdout}");
    assert!(stdout.ends_with('\n'));
    let line: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let keys: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, KEYS, "{stdout}");
    // The temporary database is gone.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    line
}

/// The spec's expected cross-check values for seed 1, trace on.
fn check_counts(line: &Value, n: u64, k: u64, hash: &str) {
    let list_rows = (0..n).filter(|i| i % 2 == 0 && i % 5 != 4).count() as u64;
    assert_eq!(line["executions"], n);
    assert_eq!(line["events"], k);
    assert_eq!(line["list_rows"], list_rows, "{line}");
    assert_eq!(line["list_pages"], list_rows.div_ceil(100).max(1), "{line}");
    let due = if k >= 2 && k.is_multiple_of(2) { n } else { 0 };
    assert_eq!(line["due_timers_rows"], due, "{line}");
    assert_eq!(line["outbox_acked"], n * k, "{line}");
    assert_eq!(line["read_trace_rows"], n.min(100) * k.min(200), "{line}");
    assert_eq!(line["wal_bytes_after_close"], 0, "{line}");
    assert_eq!(line["exe0_data_sha256"], hash, "{line}");
    assert_eq!(line["python"], Value::Null);
    assert_eq!(line["seed"], 1);
    assert_eq!(line["trace"], true);
    assert!(line["runtime"].as_str().unwrap().starts_with("rustc "), "{line}");
    for key in [
        "commit_events_per_s",
        "create_saves_per_s",
        "outbox_drain_acks_per_s",
        "outbox_drain_batch_acks_per_s",
        "list_all_pages_ms",
        "list_mid_page_ms",
        "due_timers_ms",
        "read_trace_100_ms",
        "wall_s",
    ] {
        assert!(line[key].as_f64().is_some_and(|x| x >= 0.0), "{key}: {line}");
    }
}

#[test]
fn sqlite_k10_writes_the_spec_rows() {
    let line = bench(&["--executions", "20", "--events", "10", "--synchronous", "off"]);
    check_counts(&line, 20, 10, EXE0_SHA256_K10);
    assert_eq!(line["impl"], "execstore-sqlite");
    assert_eq!(line["backend"], "sqlite");
    assert_eq!(line["synchronous"], "off");
    assert!(line["sqlite"].as_str().unwrap().starts_with("3."));
    assert!(line["db_bytes"].as_u64().unwrap() > 0);
    assert_eq!(line["clients"], 1);
    assert_eq!(line["group_commit"], false);
    assert_eq!(line["event_read"], "load-then-check");
    assert_eq!(line["mean_batch"], Value::Null);
}

#[test]
fn one_read_per_event_writes_the_same_rows() {
    for (backend, clients) in [("sqlite", "1"), ("sqlite", "3"), ("memory", "1")] {
        let line = bench(&[
            "--backend",
            backend,
            "--executions",
            "20",
            "--events",
            "10",
            "--clients",
            clients,
            "--event-read",
            "load-for-event",
        ]);
        check_counts(&line, 20, 10, EXE0_SHA256_K10);
        assert_eq!(line["event_read"], "load-for-event", "{line}");
    }
}

#[test]
fn sqlite_k20_writes_the_spec_rows() {
    let line = bench(&["--executions", "20", "--events", "20", "--synchronous", "off"]);
    check_counts(&line, 20, 20, EXE0_SHA256_K20);
}

#[test]
fn memory_backend_writes_the_same_rows() {
    for (k, hash) in [("10", EXE0_SHA256_K10), ("20", EXE0_SHA256_K20)] {
        let line = bench(&["--backend", "memory", "--executions", "20", "--events", k]);
        check_counts(&line, 20, k.parse().unwrap(), hash);
        assert_eq!(line["impl"], "execstore-memory");
        assert_eq!(line["backend"], "memory");
        assert_eq!(line["db_bytes"], 0);
        assert_eq!(line["sqlite"], Value::Null);
        assert_eq!(line["synchronous"], Value::Null);
    }
}

#[test]
fn concurrent_clients_write_the_same_rows() {
    let line = bench(&[
        "--executions",
        "20",
        "--events",
        "10",
        "--synchronous",
        "off",
        "--clients",
        "4",
    ]);
    check_counts(&line, 20, 10, EXE0_SHA256_K10);
    assert_eq!(line["clients"], 4);
    assert_eq!(line["group_commit"], true);
    assert!(line["mean_batch"].as_f64().is_some_and(|b| b >= 1.0), "{line}");

    let line = bench(&[
        "--executions",
        "20",
        "--events",
        "20",
        "--synchronous",
        "off",
        "--clients",
        "3",
        "--group-commit",
        "off",
    ]);
    check_counts(&line, 20, 20, EXE0_SHA256_K20);
    assert_eq!(line["group_commit"], false);
    assert_eq!(line["mean_batch"], Value::Null);

    let line = bench(&[
        "--backend",
        "memory",
        "--executions",
        "20",
        "--events",
        "20",
        "--clients",
        "4",
    ]);
    check_counts(&line, 20, 20, EXE0_SHA256_K20);
    assert_eq!(line["group_commit"], true);
}

#[test]
fn trace_off_and_odd_rounds() {
    let line = bench(&[
        "--executions",
        "7",
        "--events",
        "3",
        "--trace",
        "off",
        "--synchronous",
        "off",
    ]);
    assert_eq!(line["read_trace_rows"], 0);
    assert_eq!(line["trace"], false);
    assert_eq!(line["due_timers_rows"], 0);
    assert_eq!(line["outbox_acked"], 21);
    assert_eq!(line["list_rows"], 3); // 0, 2, 6
    assert_eq!(line["list_pages"], 1);
}

#[test]
fn db_is_a_fresh_file_kept_after_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w1.db");
    let db_arg = db.to_str().unwrap();
    let out = execstore(
        dir.path(),
        &[
            "bench",
            "--db",
            db_arg,
            "--executions",
            "10",
            "--events",
            "2",
            "--synchronous",
            "normal",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["synchronous"], "normal");
    assert_eq!(line["db_bytes"], std::fs::metadata(&db).unwrap().len());
    assert!(!dir.path().join("w1.db-wal").exists());

    // An existing file (or one of its companions) is refused and left alone.
    let before = std::fs::read(&db).unwrap();
    let out = execstore(dir.path(), &["bench", "--db", db_arg, "--executions", "10"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read(&db).unwrap(), before);

    let other = dir.path().join("other.db");
    std::fs::write(dir.path().join("other.db-wal"), b"").unwrap();
    let out = execstore(
        dir.path(),
        &["bench", "--db", other.to_str().unwrap(), "--executions", "10"],
    );
    assert!(!out.status.success());
    assert!(!other.exists());

    // The memory backend has no file.
    let out = execstore(
        dir.path(),
        &[
            "bench",
            "--backend",
            "memory",
            "--db",
            "x.db",
            "--executions",
            "10",
        ],
    );
    assert!(!out.status.success());
    assert!(!dir.path().join("x.db").exists());
    let out = execstore(
        dir.path(),
        &[
            "bench",
            "--backend",
            "memory",
            "--synchronous",
            "off",
            "--executions",
            "10",
        ],
    );
    assert!(!out.status.success());
}

/// W1 on the PostgreSQL server of `EXECSTORE_PG_URL` (without it the test fails, unless
/// `EXECSTORE_PG_OPTIONAL=1`: then it prints SKIPPED): the same rows (the spec's hash of
/// execution 0), in fresh tables under a unique prefix that are dropped after the run; with
/// `--prefix` the tables are kept, and a second run on them is refused.
#[test]
fn postgres_backend_writes_the_same_rows() {
    let url = match std::env::var("EXECSTORE_PG_URL") {
        Ok(url) if !url.is_empty() => url,
        _ if std::env::var("EXECSTORE_PG_OPTIONAL").as_deref() == Ok("1") => {
            skip("EXECSTORE_PG_URL is not set (EXECSTORE_PG_OPTIONAL=1)");
            return;
        }
        _ => panic!(
            "EXECSTORE_PG_URL is not set: this test needs a PostgreSQL server, e.g. \
             `source scripts/lib/postgres.sh && pg_start && trap pg_stop EXIT` (or set \
             EXECSTORE_PG_OPTIONAL=1 to skip it)"
        ),
    };
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let bench_tables = |client: &mut postgres::Client, pattern: &str| -> i64 {
        client
            .query_one(
                "SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename LIKE $1",
                &[&pattern],
            )
            .unwrap()
            .get(0)
    };
    // `execstore bench --backend postgres --db URL ARGS...`; its line, checked against the
    // spec's counts and hash for K (PostgreSQL has no WAL file: the spec's WAL size is 0).
    let pg_bench = |args: &[&str], k: u64| -> Value {
        let mut all = vec!["--backend", "postgres", "--db", &url];
        all.extend_from_slice(args);
        let line = bench(&all);
        let mut pg_line = line.clone();
        pg_line["wal_bytes_after_close"] = 0.into();
        let hash = if k == 10 { EXE0_SHA256_K10 } else { EXE0_SHA256_K20 };
        check_counts(&pg_line, 20, k, hash);
        line
    };
    let before = bench_tables(&mut client, "execstore\\_bench\\_%");
    let line = pg_bench(&["--executions", "20", "--events", "20"], 20);
    assert_eq!(line["impl"], "execstore-postgres");
    assert_eq!(line["backend"], "postgres");
    assert_eq!(line["sqlite"], Value::Null);
    assert_eq!(line["synchronous"], Value::Null);
    assert_eq!(line["wal_bytes_after_close"], Value::Null);
    assert!(line["db_bytes"].as_u64().unwrap() > 0, "{line}");
    // The unique prefix's tables are gone.
    assert_eq!(bench_tables(&mut client, "execstore\\_bench\\_%"), before);

    // One read per event (PostgreSQL's one round trip): the same rows.
    let line = pg_bench(
        &[
            "--executions",
            "20",
            "--events",
            "10",
            "--event-read",
            "load-for-event",
        ],
        10,
    );
    assert_eq!(line["event_read"], "load-for-event");

    // With --prefix, concurrent clients: kept, and not reused.
    let prefix = format!("benchtest_{}", std::process::id());
    let opts = [
        "--prefix",
        &prefix,
        "--executions",
        "20",
        "--events",
        "10",
        "--clients",
        "3",
    ];
    let line = pg_bench(&opts, 10);
    let args: Vec<&str> = ["--backend", "postgres", "--db", &url]
        .into_iter()
        .chain(opts)
        .collect();
    assert_eq!(line["group_commit"], true);
    // harel's six tables, execstore's migrations, its listing keys, its search attributes and
    // its kept counts and graph figures (each with its deltas), and its functions' record.
    assert_eq!(bench_tables(&mut client, &format!("{prefix}\\_%")), 14);
    let dir = tempfile::tempdir().unwrap();
    let mut again = vec!["bench"];
    again.extend_from_slice(&args);
    let out = execstore(dir.path(), &again);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already exist"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let n: i64 = client
        .query_one(&format!("SELECT count(*) FROM {prefix}_executions"), &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 20, "the refused run touched the kept tables");
    let tables: Vec<String> = [
        "executions",
        "outbox",
        "processed_events",
        "timers",
        "spawns",
        "trace",
        "execstore_migrations",
        "execstore_counts",
        "execstore_count_deltas",
        "execstore_graph",
        "execstore_graph_deltas",
        "execstore_keys",
        "execstore_attributes",
        "execstore_functions",
    ]
    .iter()
    .map(|t| format!("{prefix}_{t}"))
    .collect();
    client
        .batch_execute(&format!("DROP TABLE IF EXISTS {} CASCADE", tables.join(", ")))
        .unwrap();

    // No URL, or SQLite's --synchronous: refused.
    for args in [
        &["bench", "--backend", "postgres"][..],
        &["bench", "--backend", "postgres", "--db", "x.db"],
        &[
            "bench",
            "--backend",
            "postgres",
            "--db",
            &url,
            "--synchronous",
            "normal",
        ],
    ] {
        let out = execstore(dir.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
    }
}

#[test]
fn bad_arguments_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["bench", "--executions", "0"][..],
        &["bench", "--seed", "4294967296"],
        &["bench", "--synchronous", "extra"],
        &["bench", "--clients", "0"],
        &["bench", "--backend", "mysql"],
    ] {
        let out = execstore(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

/// A store named by EXECSTORE_DB (for the read commands) is never the benchmark's file.
#[test]
fn the_environment_never_names_the_bench_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("real.db");
    std::fs::write(&db, b"not a benchmark").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_execstore"))
        .args([
            "bench",
            "--executions",
            "5",
            "--events",
            "1",
            "--synchronous",
            "off",
        ])
        .current_dir(dir.path())
        .env("EXECSTORE_DB", &db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&db).unwrap(), b"not a benchmark");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// The project's own driver of W1 for harel 0.9 (`bench/harel_w1.py`, what `bench/compare`
/// runs) and `execstore bench` run the same workload: same keys in the spec's order, same
/// hash of execution 0, same cross-check counts. Needs a Python with harel 0.9.0
/// (`EXECSTORE_HAREL_PYTHON`, as `scripts/test` sets); without one it is skipped, unless
/// `EXECSTORE_REQUIRE_HAREL=1`.
#[test]
fn harel_driver_runs_the_same_workload() {
    let Some(python) = std::env::var_os("EXECSTORE_HAREL_PYTHON") else {
        assert!(
            std::env::var("EXECSTORE_REQUIRE_HAREL").as_deref() != Ok("1"),
            "EXECSTORE_REQUIRE_HAREL=1 but EXECSTORE_HAREL_PYTHON is not set"
        );
        skip("EXECSTORE_HAREL_PYTHON not set (scripts/test sets it)");
        return;
    };
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/harel_w1.py");
    for (k, hash) in [("10", EXE0_SHA256_K10), ("20", EXE0_SHA256_K20)] {
        let args = ["--executions", "20", "--events", k, "--synchronous", "off"];
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(&python)
            .arg(&driver)
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            out.status.success(),
            "harel_w1.py {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
        let ours = bench(&args);
        assert_eq!(theirs["impl"], "harel-0.9.0-sqlitestore");
        let their_keys: Vec<&str> = theirs.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(their_keys, KEYS[..24], "the spec's keys, in order");
        check_counts(&ours, 20, k.parse().unwrap(), hash);
        // Everything that is not a timing or about the runtime must agree, the hash included.
        for key in KEYS[..24]
            .iter()
            .filter(|key| !key.ends_with("_per_s") && !key.ends_with("_ms"))
        {
            if !["impl", "db_bytes", "python", "sqlite", "wall_s"].contains(key) {
                assert_eq!(ours[key], theirs[key], "{key}");
            }
        }
    }
}
