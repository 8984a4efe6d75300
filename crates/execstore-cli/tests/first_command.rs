//! The first command a harel user types works: a file written by harel 0.9's own
//! `SqliteStore` (its tables under harel's default prefix, `harel_*`) opens with no
//! `--prefix`, in every command and in the monitor; a file with two sets of execution tables
//! is refused with an error that lists both and says how to pick one.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{execstore, start_monitor};
use serde_json::Value;

fn skip(reason: &str) {
    use std::io::Write as _;
    let thread = std::thread::current();
    let line = format!("SKIPPED: {}: {reason}\n", thread.name().unwrap_or("?"));
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// harel's own `SqliteStore` (argv: file, prefix or "" for harel's default) commits one
/// running execution with an emit, a timer and a trace step.
const HAREL_WRITES: &str = r#"
import sys
from harel.engine.execution import Execution, Status
from harel.engine.store import SqliteStore

kwargs = {"prefix": sys.argv[2]} if sys.argv[2] else {}
store = SqliteStore(sys.argv[1], **kwargs)
exe = Execution(id="first-" + (sys.argv[2] or "harel"), definition_id="orders", status=Status.RUNNING)
store.commit(exe, [], trace={"event_kind": "Go", "from_path": "a", "to_path": "b"})
store.close()
"#;

/// Writes `db` through harel (`prefix`: `None` for harel's default), or `None` (and a
/// SKIPPED line) without harel.
fn harel_writes(db: &Path, prefix: Option<&str>) -> Option<()> {
    let Ok(python) = std::env::var("EXECSTORE_HAREL_PYTHON") else {
        skip("EXECSTORE_HAREL_PYTHON is not set: no harel 0.9 to write the file (scripts/test sets it)");
        return None;
    };
    let out = Command::new(python)
        .args(["-c", HAREL_WRITES])
        .arg(db)
        .arg(prefix.unwrap_or(""))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some(())
}

fn harel_file(dir: &Path) -> Option<PathBuf> {
    let db = dir.join("orders.db");
    harel_writes(&db, None)?;
    Some(db)
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = execstore(dir, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_file_harel_wrote_opens_without_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = harel_file(dir.path()) else {
        return;
    };
    let db = db.to_str().unwrap();
    let listed = ok(dir.path(), &["--db", db, "list"]);
    assert!(listed.contains("first-harel"), "{listed}");
    let shown = ok(dir.path(), &["--db", db, "show", "first-harel", "--json"]);
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["definition_id"], "orders");
    let trace = ok(dir.path(), &["--db", db, "trace", "first-harel"]);
    assert!(trace.contains("Go"), "{trace}");
    // A writing command too (it opens the same tables, and creates no bare ones).
    ok(
        dir.path(),
        &["--db", db, "suspend", "first-harel", "--reason", "test"],
    );
    let shown = ok(dir.path(), &["--db", db, "show", "first-harel", "--json"]);
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["status"], "SUSPENDED", "{shown}");
    // Still one set: the write made no bare `executions` table beside harel's.
    let listed = ok(dir.path(), &["--db", db, "list"]);
    assert!(listed.contains("first-harel"), "{listed}");
}

#[test]
fn the_monitor_opens_a_file_harel_wrote_without_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = harel_file(dir.path()) else {
        return;
    };
    let m = start_monitor(&["monitor", "--db", db.to_str().unwrap()], &[]);
    let mut response = m
        .agent
        .get(format!("{}api/executions", m.url))
        .call()
        .expect("request");
    let text = response.body_mut().read_to_string().unwrap();
    assert_eq!(response.status().as_u16(), 200, "{text}");
    assert!(text.contains("first-harel"), "{text}");
}

#[test]
fn two_sets_of_tables_are_listed_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = harel_file(dir.path()) else {
        return;
    };
    harel_writes(&db, Some("billing")).unwrap();
    let db = db.to_str().unwrap();
    let before = std::fs::read(db).unwrap();
    for args in [
        &["list"][..],
        &["outbox"],
        &["suspend", "first-harel", "--reason", "x"],
    ] {
        let out = execstore(dir.path(), &[&["--db", db][..], args].concat());
        assert!(!out.status.success(), "{args:?} picked a set by itself");
        let err = String::from_utf8_lossy(&out.stderr);
        for needle in [
            "harel (harel_executions",
            "billing (billing_executions",
            "--prefix",
        ] {
            assert!(err.contains(needle), "{args:?}: {needle} in {err}");
        }
    }
    assert_eq!(
        std::fs::read(db).unwrap(),
        before,
        "a refused command changes nothing"
    );
    // Each set is one flag away.
    let listed = ok(dir.path(), &["--db", db, "--prefix", "billing", "list"]);
    assert!(
        listed.contains("first-billing") && !listed.contains("first-harel"),
        "{listed}"
    );
    let listed = ok(dir.path(), &["--db", db, "--prefix", "harel", "list"]);
    assert!(listed.contains("first-harel"), "{listed}");
}

/// The demo's "try:" line, as printed.
fn try_line(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("try: "))
        .unwrap_or_else(|| panic!("no try: line in {text}"))
        .to_owned()
}

/// Runs the demo with `env` (and without `CARGO` unless given), returns its "try:" line.
fn demo_hint(dir: &Path, env: &[(&str, &str)]) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_execstore"));
    command
        .args(["demo", "--no-serve", "--executions", "20", "--force"])
        .current_dir(dir)
        .env_remove("EXECSTORE_DB")
        .env_remove("CARGO")
        .env("PATH", "/usr/bin:/bin");
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    try_line(&String::from_utf8(out.stdout).unwrap())
}

#[test]
fn the_demo_prints_a_command_that_runs_where_the_user_is() {
    let dir = tempfile::tempdir().unwrap();
    // Not on PATH, not run by cargo: the binary's path, which runs as printed.
    let hint = demo_hint(dir.path(), &[]);
    assert!(!hint.starts_with("execstore "), "{hint}");
    let out = Command::new("sh")
        .args(["-c", &hint])
        .current_dir(dir.path())
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{hint}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ID"),
        "{hint} listed nothing"
    );
    // Run by cargo (`cargo run` sets CARGO; the binary is in target/<profile>/).
    let hint = demo_hint(dir.path(), &[("CARGO", "cargo")]);
    let profile = Path::new(env!("CARGO_BIN_EXE_execstore"))
        .parent()
        .and_then(Path::file_name)
        .and_then(|p| p.to_str())
        .unwrap()
        .to_owned();
    let expected = match profile.as_str() {
        "debug" => "cargo run -p execstore-cli -- list --db execstore-demo.db".to_owned(),
        "release" => "cargo run --release -p execstore-cli -- list --db execstore-demo.db".to_owned(),
        other => format!("cargo run --profile {other} -p execstore-cli -- list --db execstore-demo.db"),
    };
    assert_eq!(hint, expected);
    // On PATH: the bare name.
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_execstore")).parent().unwrap();
    let path = format!("{}:/usr/bin:/bin", bin_dir.display());
    let hint = demo_hint(dir.path(), &[("PATH", &path)]);
    assert_eq!(hint, "execstore list --db execstore-demo.db");
}

/// README's first command, run twice: the second run shows the store the first wrote instead
/// of failing, and changes nothing.
#[test]
fn the_demo_runs_twice() {
    let dir = tempfile::tempdir().unwrap();
    let first = execstore(dir.path(), &["demo", "--no-serve", "--executions", "20"]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let db = dir.path().join("execstore-demo.db");
    let before = std::fs::read(&db).unwrap();
    let again = execstore(dir.path(), &["demo", "--no-serve", "--executions", "20"]);
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(text.contains("already exists: showing it as it is"), "{text}");
    assert!(
        try_line(&text).ends_with(" list --db execstore-demo.db"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "the second run changed the file"
    );
}
