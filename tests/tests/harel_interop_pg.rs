//! Interop with the real harel 0.9 engine on PostgreSQL: harel's own `PostgresStore`
//! (psycopg 3) and execstore's `PgStore` read and write the same tables, under one prefix.
//!
//! The same scripts and comparisons as the SQLite interop test (`harel_interop.rs`, helpers in
//! `harel_common`), pointed at a PostgreSQL database:
//!
//! * `harel_writes_pg_execstore_reads`: tables harel wrote, read by execstore, first opened
//!   read-only (harel's tables alone, no execstore migration) and then read-write.
//! * `execstore_replays_harel_calls_pg_byte_for_byte`: the calls harel made, replayed through
//!   execstore under another prefix, give the same rows, byte for byte.
//! * `execstore_writes_pg_harel_reads`: tables execstore made and wrote, read by harel (which
//!   opens them with `create_schema=False`, so it finds them as execstore made them); then
//!   harel commits on them and execstore reads that back, and writes on after harel.
//! * `execstore_commits_on_harel_pg_tables`: execstore writes to tables harel made; harel
//!   reads them.
//!
//! The server is `EXECSTORE_PG_URL` (required unless `EXECSTORE_PG_OPTIONAL=1`); each test
//! uses tables under a fresh prefix and drops them (left in place for inspection when the
//! test fails). harel comes from `EXECSTORE_HAREL_PYTHON` as in `harel_interop.rs`, and must
//! import psycopg (`scripts/lib/harel.sh` installs it into the venv).
//!
//! harel's PostgreSQL listing orders by `id` in the database's collation, execstore's by bytes
//! (`COLLATE "C"`): the listings agree on a database whose collation is `C` (as
//! `scripts/lib/postgres.sh` makes it), which `harel_writes_pg_execstore_reads` checks first.

#[macro_use]
mod harel_common;

use std::collections::BTreeSet;
use std::io::Write as _;
use std::process::Command;
use std::sync::OnceLock;

use execstore::{executions::Status, ExecutionStore};
use execstore_e2e::pg::{drop_tables, fresh_prefix, url_or_skip};
use execstore_postgres::{PgOptions, PgStore};
use harel_common::*;
use serde_json::{json, Value};

/// The psycopg harel's `PostgresStore` runs on (`PSYCOPG_VERSION` in scripts/lib/harel.sh).
const PSYCOPG_VERSION: &str = "3.3.9";

/// harel 0.9.0 with psycopg, or `None` when either is missing and neither is required (as in
/// `harel()`): the calling test is then reported as skipped and returns.
fn pg_harel() -> Option<&'static Harel> {
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    let harel = harel()?;
    let ready = READY.get_or_init(|| {
        let out = Command::new(&harel.python)
            .current_dir(std::env::temp_dir())
            .args([
                "-c",
                "import importlib.metadata, psycopg; print(importlib.metadata.version('psycopg'))",
            ])
            .output();
        let why = match out {
            Ok(o) if o.status.success() => {
                let found = String::from_utf8_lossy(&o.stdout).trim().to_owned();
                if found == PSYCOPG_VERSION {
                    return Ok(());
                }
                format!("psycopg {found}, not {PSYCOPG_VERSION}")
            }
            Ok(o) => format!(
                "cannot import psycopg: {}",
                String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or("")
            ),
            Err(e) => format!("cannot run: {e}"),
        };
        let required = std::env::var("EXECSTORE_REQUIRE_HAREL").is_ok_and(|v| v == "1")
            || std::env::var_os("EXECSTORE_HAREL_PYTHON").is_some_and(|p| !p.is_empty());
        assert!(
            !required,
            "{}: {why} (scripts/lib/harel.sh's add_psycopg installs it)",
            harel.python.display()
        );
        Err(format!(
            "{} has no usable psycopg [{why}]",
            harel.python.display()
        ))
    });
    match ready {
        Ok(()) => Some(harel),
        Err(why) => {
            execstore_e2e::skip(why);
            None
        }
    }
}

/// Tables under a fresh prefix on the test server, dropped with harel's `commit_cas`
/// function when the test is done (kept for inspection when it fails).
struct Tables {
    url: String,
    prefix: String,
    dir: tempfile::TempDir,
}

impl Tables {
    fn new(url: &str, tag: &str) -> Self {
        Tables {
            url: url.to_owned(),
            prefix: fresh_prefix(tag),
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn open(&self) -> PgStore {
        PgStore::open(&self.url, PgOptions::new().prefix(&self.prefix)).expect("open PgStore")
    }

    fn open_read_only(&self) -> PgStore {
        PgStore::open(&self.url, PgOptions::new().prefix(&self.prefix).read_only(true))
            .expect("open PgStore read-only")
    }

    /// Runs `tests/harel/<script>` on these tables.
    fn harel(&self, harel: &Harel, script: &str, extra: &[&str]) -> Value {
        harel.run_pg(script, &self.url, &self.prefix, self.dir.path(), extra)
    }
}

impl Drop for Tables {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = writeln!(
                std::io::stderr(),
                "harel_interop_pg: the tables {}_* are left for inspection",
                self.prefix
            );
            return;
        }
        drop_tables(&self.url, &self.prefix);
        let mut client = postgres::Client::connect(&self.url, postgres::NoTls).expect("connect");
        client
            .batch_execute(&format!(
                "DROP FUNCTION IF EXISTS {}_commit_cas(text, text, text, bigint, text)",
                self.prefix
            ))
            .expect("drop harel's commit_cas function");
    }
}

/// The objects under the prefix beyond the ones harel 0.9's `PostgresStore` creates.
fn extra_pg_objects(view: &Value, prefix: &str) -> Vec<String> {
    let tables = [
        "executions",
        "outbox",
        "processed_events",
        "spawns",
        "timers",
        "trace",
    ];
    let harel_own: BTreeSet<String> = tables
        .iter()
        .flat_map(|t| [format!("table {prefix}_{t}"), format!("index {prefix}_{t}_pkey")])
        .chain([
            format!("sequence {prefix}_outbox_seq_seq"),
            format!("sequence {prefix}_spawns_seq_seq"),
            format!("function {prefix}_commit_cas"),
        ])
        .collect();
    view["raw"]["pg_objects"]
        .as_array()
        .expect("pg_objects")
        .iter()
        .map(|r| format!("{} {}", s(&r[0]), s(&r[1])))
        .filter(|n| !harel_own.contains(n))
        .collect()
}

fn database_collation(url: &str) -> String {
    let mut client = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    client
        .query_one(
            "SELECT datcollate::text FROM pg_database WHERE datname = current_database()",
            &[],
        )
        .expect("the database's collation")
        .get(0)
}

// --- the tests -----------------------------------------------------------------------------

#[test]
fn harel_writes_pg_execstore_reads() {
    let Some(url) = url_or_skip("harel_writes_pg_execstore_reads") else {
        return;
    };
    let Some(harel) = pg_harel() else { return };
    let collation = database_collation(&url);
    assert!(
        collation == "C" || collation == "POSIX",
        "the test database's collation is {collation}: harel's listing (ORDER BY id) orders ids by \
         it, execstore's by bytes, so the listings compared here would differ by design"
    );
    let tables = Tables::new(&url, "hpgw");
    let written = tables.harel(harel, "write_with_harel.py", &[]);
    let view = &written["view"];
    assert_eq!(
        extra_pg_objects(view, &tables.prefix),
        Vec::<String>::new(),
        "harel's tables alone"
    );

    // read-only: harel's tables as harel made them, no execstore migration applied
    {
        let store = tables.open_read_only();
        assert_matches_harel(&store, view, "harel wrote, execstore reads (read-only)");
    }
    let read = tables.harel(harel, "read_with_harel.py", &[]);
    assert_eq!(
        extra_pg_objects(&read["view"], &tables.prefix),
        Vec::<String>::new(),
        "a read-only open creates nothing"
    );

    // read-write: execstore applies its migrations to harel's tables, and reads the same
    let store = tables.open();
    assert_matches_harel(&store, view, "harel wrote, execstore reads");
    let read = tables.harel(harel, "read_with_harel.py", &[]);
    assert_eq!(read["view"]["raw"]["executions"], view["raw"]["executions"]);
    let _ = writeln!(
        std::io::stderr(),
        "harel_interop_pg: schema execstore adds to harel's tables: {:?}",
        extra_pg_objects(&read["view"], &tables.prefix)
    );

    // spot checks of what the scenario is about, so a vacuous view cannot pass
    let exes = view["executions"].as_object().unwrap();
    let statuses: BTreeSet<&str> = exes.values().map(|e| s(&e["status"])).collect();
    assert_eq!(
        statuses.len(),
        Status::ALL.len(),
        "every status is present: {statuses:?}"
    );
    let ord = store.load("ord-001").unwrap().unwrap();
    assert_eq!(ord.version, 3);
    assert_eq!(ord.context["note"], json!(TEXT));
    assert_eq!(ord.context["floats"], floats());
    let trace = store.read_trace("trc-001").unwrap();
    assert_eq!(
        (trace.len(), &trace[0]["index"]),
        (200, &json!(5)),
        "harel's 200-step ring"
    );
    assert!(store.load("tmp-001").unwrap().is_none(), "purged by harel");
    assert_eq!(view["outbox"].as_array().unwrap().len(), 4);
}

#[test]
fn execstore_replays_harel_calls_pg_byte_for_byte() {
    let Some(url) = url_or_skip("execstore_replays_harel_calls_pg_byte_for_byte") else {
        return;
    };
    let Some(harel) = pg_harel() else { return };
    let harels = Tables::new(&url, "hpgh");
    let ours = Tables::new(&url, "hpge");
    let written = harels.harel(harel, "write_with_harel.py", &[]);
    {
        let store = ours.open();
        for (n, op) in written["ops"].as_array().expect("ops").iter().enumerate() {
            replay(&store, op, n);
        }
    }
    let read = ours.harel(harel, "read_with_harel.py", &[]);
    assert_same_rows_and_reads(&read["view"], &written["view"]);
    let store = ours.open();
    assert_matches_harel(&store, &read["view"], "execstore replayed harel's calls");
}

#[test]
fn execstore_writes_pg_harel_reads() {
    let Some(url) = url_or_skip("execstore_writes_pg_harel_reads") else {
        return;
    };
    let Some(harel) = pg_harel() else { return };
    let tables = Tables::new(&url, "hpgx");
    let store = tables.open();
    write_variety(&store);

    // harel reads everything execstore wrote, and reads it as execstore does
    let read = tables.harel(harel, "read_with_harel.py", &[]);
    let view = &read["view"];
    assert_matches_harel(&store, view, "execstore wrote, harel reads");
    let raw_ext = check_harel_read_the_variety(view);
    assert!(s(&raw_ext[2]).contains(r#""future_field":{"nested":[1,"ü"]}"#));
    assert_eq!(view["trace"]["trc-101"].as_array().unwrap().len(), 200);
    assert_eq!(view["trace"]["trc-101"][0]["index"], json!(5));

    // harel keeps writing to the tables execstore made (its migration table and indexes present)
    let read = tables.harel(harel, "read_with_harel.py", &["--commit", "ext-101"]);
    let commit = &read["commit"];
    assert_eq!(
        (i(&commit["version_before"]), i(&commit["version_after"])),
        (1, 2)
    );
    // execstore reads harel's write, through the store it kept open and through a new one
    for (label, store) in [("the open store", &store), ("a new store", &tables.open())] {
        let ctx = format!("harel committed, execstore re-reads ({label})");
        assert_matches_harel(store, &read["view_after"], &ctx);
        check_harels_commit(store, commit, &ctx);
    }

    commit_after_harel(&store, commit);
    let read = tables.harel(harel, "read_with_harel.py", &[]);
    assert_matches_harel(&store, &read["view"], "execstore wrote after harel");
}

#[test]
fn execstore_commits_on_harel_pg_tables() {
    let Some(url) = url_or_skip("execstore_commits_on_harel_pg_tables") else {
        return;
    };
    let Some(harel) = pg_harel() else { return };
    let tables = Tables::new(&url, "hpgc");
    tables.harel(harel, "write_with_harel.py", &[]);
    let store = tables.open();

    commit_on_harels_data(&store);

    let read = tables.harel(harel, "read_with_harel.py", &[]);
    let view = &read["view"];
    assert_matches_harel(&store, view, "execstore wrote to harel's tables, harel reads");
    assert_eq!(
        view["executions"]["ord-001"]["context"]["by"],
        json!("execstore ✓ — 😀")
    );
    assert_eq!(view["executions"]["ord-001"]["version"], json!(4));
    assert!(view["executions"].get("can-001").is_none());
    let trace = view["trace"]["trc-001"].as_array().unwrap();
    assert_eq!(
        (trace.len(), &trace[0]["index"], &trace[199]["index"]),
        (200, &json!(6), &json!(205))
    );
}
