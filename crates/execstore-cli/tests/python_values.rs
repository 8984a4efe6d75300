//! A file harel 0.9 wrote with trace steps and spawn contexts holding what its `json.dumps`
//! takes and strict JSON does not (`NaN`, `Infinity`, `-Infinity`, lone surrogates): `execstore
//! trace` and `spawns`, and the monitor's trace, pending and graph endpoints, read it and show
//! those values as text (`NaN`, the escape `\ud800`), never CORRUPT.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{execstore, start_monitor, Monitor};
use serde_json::{json, Value};

fn skip(reason: &str) {
    use std::io::Write as _;
    let thread = std::thread::current();
    let line = format!("SKIPPED: {}: {reason}\n", thread.name().unwrap_or("?"));
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// harel's own `SqliteStore` writes one execution with such a trace step and spawn.
const HAREL_WRITES: &str = r#"
import sys
from harel.engine.execution import Execution, Status
from harel.engine.store import SqliteStore

nan, inf = float("nan"), float("inf")
store = SqliteStore(sys.argv[1])
exe = Execution(id="odd-1", definition_id="odd", status=Status.RUNNING)
store.commit(
    exe,
    [],
    spawns=(("odd-1:c", "r", {"seed": nan, "name": "\udfff"}),),
    trace={"event_kind": "Tick\ud800", "from_path": "a", "to_path": "b\ud800",
           "context_out": {"n": nan, "i": inf, "m": -inf, "s": "x\ud800y"}},
)
store.close()
"#;

/// The file, or `None` (and a SKIPPED line) without harel.
fn harel_file(dir: &Path) -> Option<PathBuf> {
    let Ok(python) = std::env::var("EXECSTORE_HAREL_PYTHON") else {
        skip("EXECSTORE_HAREL_PYTHON is not set: no harel 0.9 to write the file (scripts/test sets it)");
        return None;
    };
    let db = dir.join("harel.db");
    let out = Command::new(python)
        .args(["-c", HAREL_WRITES])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some(db)
}

fn run(dir: &Path, args: &[&str]) -> String {
    let out = execstore(dir, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The context as shown: the non-finite numbers as their names, the lone surrogate as its escape.
fn shown_context() -> Value {
    json!({"n": "NaN", "i": "Infinity", "m": "-Infinity", "s": "x\\ud800y"})
}

#[test]
fn the_cli_shows_what_harels_json_dumps_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = harel_file(dir.path()) else {
        return;
    };
    let db = db.to_str().unwrap();
    let base = ["--db", db, "--prefix", "harel"];
    let steps: Value = serde_json::from_str(&run(
        dir.path(),
        &[&base[..], &["trace", "odd-1", "--json"]].concat(),
    ))
    .unwrap();
    assert_eq!(steps[0]["context_out"], shown_context());
    assert_eq!(steps[0]["event_kind"], "Tick\\ud800");
    assert_eq!(steps[0]["to_path"], "b\\ud800");
    let table = run(dir.path(), &[&base[..], &["trace", "odd-1"]].concat());
    for text in ["Tick\\ud800", "b\\ud800"] {
        assert!(table.contains(text), "{text} in {table}");
    }
    let spawns: Value =
        serde_json::from_str(&run(dir.path(), &[&base[..], &["spawns", "--json"]].concat())).unwrap();
    assert_eq!(spawns[0]["context"], json!({"seed": "NaN", "name": "\\udfff"}));
    let table = run(dir.path(), &[&base[..], &["spawns"]].concat());
    assert!(table.contains("NaN") && table.contains("\\udfff"), "{table}");
}

impl Monitor {
    fn ok(&self, path: &str) -> Value {
        let mut response = self
            .agent
            .get(format!("{}{path}", self.url))
            .call()
            .expect("request");
        let text = response.body_mut().read_to_string().unwrap();
        assert_eq!(response.status().as_u16(), 200, "GET {path}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }
}

#[test]
fn the_monitor_shows_what_harels_json_dumps_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let Some(db) = harel_file(dir.path()) else {
        return;
    };
    let m = start_monitor(
        &["monitor", "--db", db.to_str().unwrap(), "--prefix", "harel"],
        &[],
    );
    let trace = m.ok("api/executions/odd-1/trace");
    assert_eq!(trace["items"][0]["context_out"], shown_context());
    assert_eq!(trace["items"][0]["from_path"], "a");
    let pending = m.ok("api/executions/odd-1/pending");
    assert_eq!(
        pending["spawns"][0]["context"],
        json!({"seed": "NaN", "name": "\\udfff"})
    );
    let spawns = m.ok("api/spawns");
    assert_eq!(
        spawns["items"][0]["context"],
        json!({"seed": "NaN", "name": "\\udfff"})
    );
    let graph = m.ok("api/executions/odd-1/graph");
    let transitions = graph["graph"]["transitions"].as_array().unwrap();
    assert_eq!(transitions.len(), 1, "{graph}");
    assert_eq!(transitions[0]["to"], "b\\ud800");
    let events: Vec<&str> = transitions[0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str().or(e.as_str()))
        .collect();
    assert!(events.contains(&"Tick\\ud800"), "{graph}");
    let definition = m.ok("api/definitions/odd/graph");
    assert!(definition.to_string().contains("b\\\\ud800"), "{definition}");
}
