//! Shared by the workspace interop tests with reflexr 0.1.1 (`workspace_interop_sqlite.rs`, and
//! any other backend's): finding reflexr's Python and running its scripts
//! (`tests/reflexr/*.py`), reading a storage into the JSON shape the scripts' `rx.dump` reads
//! reflexr into ([`dump`]), comparing the two ([`assert_same`]), the variety execstore writes
//! ([`variety`]) and a deterministic program of calls both apply ([`program`]). Everything takes
//! a `&dyn WorkspaceStorage`, so one comparison serves every backend; a script's target is a
//! SQLite path or a PostgreSQL URL.
#![allow(dead_code)] // each test crate uses a part of this module

pub mod crash;
pub mod program;
pub mod variety;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use execstore::executions::JsonObject;
use execstore::kit::pyjson;
use execstore::workspace::{
    LogQuery, RunPolicy, RunQuery, RunStatus, StoredRule, Timestamp, WorkspaceRef, WorkspaceStorage,
};
use serde_json::{json, Map, Value};

pub const REFLEXR_VERSION: &str = "0.1.1";

// --- finding and running reflexr ------------------------------------------------------------

pub struct Reflexr {
    pub python: PathBuf,
}

/// The venv `scripts/test` makes (`scripts/lib/reflexr.sh`): `$EXECSTORE_CACHE`, or
/// `~/.cache/execstore`, then `reflexr-0.1.1/bin/python`.
fn default_python() -> PathBuf {
    let cache = std::env::var_os("EXECSTORE_CACHE")
        .filter(|c| !c.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").unwrap_or_else(|| "/root".into());
            PathBuf::from(home).join(".cache").join("execstore")
        });
    cache
        .join(format!("reflexr-{REFLEXR_VERSION}"))
        .join("bin")
        .join("python")
}

/// The Python with reflexr 0.1.1: `EXECSTORE_REFLEXR_PYTHON`, else the venv `scripts/test`
/// makes. `None` (the test prints `SKIPPED: ...` and passes) when it is not usable, unless
/// `EXECSTORE_REQUIRE_REFLEXR=1` or the variable names a Python: then the test fails.
pub fn reflexr() -> Option<&'static Reflexr> {
    static FOUND: OnceLock<Result<Reflexr, String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        let required = std::env::var("EXECSTORE_REQUIRE_REFLEXR").is_ok_and(|v| v == "1");
        let explicit = std::env::var_os("EXECSTORE_REFLEXR_PYTHON").filter(|p| !p.is_empty());
        let python = explicit.clone().map_or_else(default_python, PathBuf::from);
        match reflexr_version(&python) {
            Ok(v) if v == REFLEXR_VERSION => Ok(Reflexr { python }),
            found => {
                let why = match found {
                    Ok(v) => format!("{} has reflexr {v}, not {REFLEXR_VERSION}", python.display()),
                    Err(e) => format!("{}: {e}", python.display()),
                };
                if required || explicit.is_some() {
                    panic!("reflexr {REFLEXR_VERSION} is required but not usable: {why}");
                }
                Err(why)
            }
        }
    });
    match found {
        Ok(r) => Some(r),
        Err(why) => {
            // One line per skipped test, past the harness's capture: scripts/test counts it.
            execstore_e2e::skip(&format!(
                "reflexr {REFLEXR_VERSION} not installed (scripts/test installs it; EXECSTORE_REFLEXR_PYTHON names one) [{why}]"
            ));
            None
        }
    }
}

fn reflexr_version(python: &Path) -> Result<String, String> {
    let out = Command::new(python)
        .current_dir(std::env::temp_dir())
        .args([
            "-c",
            "import importlib.metadata, reflexr.sql, aiosqlite; print(importlib.metadata.version('reflexr'))",
        ])
        .output()
        .map_err(|e| format!("cannot run: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "cannot import reflexr: {}",
            err.lines().last().unwrap_or("")
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

impl Reflexr {
    /// Runs `tests/reflexr/<script> TARGET OUT [extra...]` (TARGET a SQLite path or a
    /// PostgreSQL URL, OUT in `workdir`) and returns OUT's JSON; a failing script fails the
    /// test with its output.
    pub fn run(&self, script: &str, target: &OsStr, workdir: &Path, extra: &[&OsStr]) -> Value {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("reflexr");
        let out_path = workdir.join(format!("{script}.out.json"));
        let out = Command::new(&self.python)
            .current_dir(&dir)
            .env("PYTHONDONTWRITEBYTECODE", "1") // no __pycache__ in the source tree
            .arg(dir.join(script))
            .arg(target)
            .arg(&out_path)
            .args(extra)
            .output()
            .unwrap_or_else(|e| panic!("run {script}: {e}"));
        assert!(
            out.status.success(),
            "{script} {} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
            target.to_string_lossy(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&out_path).expect("read the script's JSON");
        serde_json::from_str(&text).expect("the script's output is JSON")
    }
}

/// Writes `value` as a JSON file for a script to read.
pub fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(value).expect("JSON")).expect("write JSON");
}

// --- small helpers --------------------------------------------------------------------------

pub fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

pub fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

pub fn i(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

pub fn arr(v: &Value) -> &Vec<Value> {
    v.as_array().unwrap_or_else(|| panic!("not an array: {v}"))
}

pub fn strs(v: &Value) -> Vec<String> {
    arr(v).iter().map(|x| s(x).to_owned()).collect()
}

pub fn ws_of(v: &Value) -> WorkspaceRef {
    WorkspaceRef::new(s(&v[0]), s(&v[1]))
}

pub fn micros(t: Timestamp) -> i64 {
    t.micros()
}

pub fn at_micros(n: i64) -> Timestamp {
    Timestamp::from_micros(n).expect("in range")
}

/// A stored rule as reflexr stores its model (`json.dumps(StoredRule.model_dump(mode="json"))`).
pub fn stored_rule_json(r: &StoredRule) -> String {
    let mut m = Map::new();
    m.insert("rule".into(), Value::Object(r.rule.clone()));
    m.insert("version".into(), r.version.into());
    m.insert("status".into(), r.status.as_str().into());
    m.insert("provenance".into(), Value::Object(r.provenance.clone()));
    pyjson::dumps(&Value::Object(m))
}

/// A window of the log from its probe JSON (`{"after_seq", "before_seq", "types", "limit", "last"}`).
pub fn log_query(w: &Value) -> LogQuery {
    let mut q = LogQuery::new();
    if let Some(n) = w.get("after_seq") {
        q = q.after(i(n));
    }
    if let Some(n) = w.get("before_seq") {
        q = q.before(i(n));
    }
    if let Some(t) = w.get("types") {
        q = q.types(strs(t));
    }
    if let Some(n) = w.get("limit") {
        q = q.limit(i(n) as usize);
    }
    if let Some(n) = w.get("last") {
        q = q.last(i(n) as usize);
    }
    q
}

fn run_query(q: &Value) -> RunQuery {
    RunQuery {
        rule: q.get("rule").map(|v| s(v).to_owned()),
        status: q.get("status").map(|v| RunStatus::parse(s(v)).expect("a status")),
        scope_key: q.get("scope_key").map(|v| s(v).to_owned()),
        limit: q.get("limit").map(|v| i(v) as usize),
    }
}

pub fn policy_of(q: &Value) -> RunPolicy {
    let set = |k: &str| strs(&q[k]).into_iter().collect();
    RunPolicy {
        disabled: set("disabled"),
        ordered: set("ordered"),
        blocking: set("blocking"),
    }
}

// --- reading a storage as the scripts read reflexr -----------------------------------------

/// Everything `probe` names, read through `storage`, in the shape of the scripts' `rx.dump`.
/// With `in_transaction`, also the reads of a transaction (rolled back): a read-only storage
/// has none.
pub fn dump(storage: &dyn WorkspaceStorage, probe: &Value, in_transaction: bool) -> Value {
    let workspaces: Vec<Value> = storage
        .workspaces()
        .expect("workspaces")
        .iter()
        .map(|w| json!([w.tenant_id, w.workspace_id]))
        .collect();
    let mut by = Map::new();
    for spec in arr(&probe["workspaces"]) {
        let ws = ws_of(&spec["workspace"]);
        let names = |k: &str| strs(&spec[k]);
        let mut d = Map::new();
        d.insert("head_seq".into(), storage.head_seq(&ws).expect("head_seq").into());
        let read = |q: &LogQuery| storage.read(&ws, q).expect("read");
        d.insert(
            "envelopes".into(),
            read(&LogQuery::new()).iter().map(|e| e.to_json()).collect(),
        );
        d.insert(
            "windows".into(),
            arr(&probe["windows"])
                .iter()
                .map(|w| json!(read(&log_query(w)).iter().map(|e| e.seq).collect::<Vec<_>>()))
                .collect(),
        );
        let runs = |q: &RunQuery| storage.runs(&ws, q).expect("runs");
        d.insert(
            "runs".into(),
            runs(&RunQuery::default()).iter().map(|r| r.to_json()).collect(),
        );
        d.insert(
            "run_lists".into(),
            arr(&probe["run_queries"])
                .iter()
                .map(|q| {
                    runs(&run_query(q))
                        .iter()
                        .map(|r| r.id().to_owned())
                        .collect::<Vec<_>>()
                })
                .map(Value::from)
                .collect(),
        );
        let run: Map<String, Value> = names("run_ids")
            .into_iter()
            .map(|id| {
                let found = storage.run(&ws, &id).expect("run").map(|r| r.to_json());
                (id, found.into())
            })
            .collect();
        d.insert("run".into(), run.into());
        let letters = |rule: Option<&str>| -> Value {
            storage
                .dead_letters(&ws, rule)
                .expect("dead letters")
                .iter()
                .map(|l| l.to_json())
                .collect()
        };
        d.insert("dead_letters".into(), letters(None));
        let of: Map<String, Value> = names("rules")
            .into_iter()
            .map(|r| {
                let v = letters(Some(&r));
                (r, v)
            })
            .collect();
        d.insert("dead_letters_of".into(), of.into());
        d.insert(
            "progress".into(),
            storage
                .progress(&ws)
                .expect("progress")
                .iter()
                .map(|(r, p)| json!([r, p.to_json()]))
                .collect(),
        );
        d.insert(
            "schedules".into(),
            storage
                .schedules(&ws)
                .expect("schedules")
                .iter()
                .map(|(n, at)| json!([n, micros(*at)]))
                .collect(),
        );
        d.insert(
            "stored_rules".into(),
            storage
                .stored_rules(&ws)
                .expect("stored rules")
                .iter()
                .map(stored_rule_json)
                .collect(),
        );
        let history: Map<String, Value> = names("stored_rule_names")
            .into_iter()
            .map(|n| {
                let h: Value = storage
                    .rule_history(&ws, &n)
                    .expect("rule history")
                    .iter()
                    .map(|e| e.to_json())
                    .collect();
                (n, h)
            })
            .collect();
        d.insert("rule_history".into(), history.into());
        let cursors: Map<String, Value> = names("cursor_names")
            .into_iter()
            .map(|n| {
                let c = storage.cursor(&ws, &n).expect("cursor");
                (n, c.into())
            })
            .collect();
        d.insert("cursors".into(), cursors.into());
        if in_transaction {
            d.insert("tx".into(), dump_tx(storage, &ws, spec));
        }
        by.insert(format!("{}/{}", ws.tenant_id, ws.workspace_id), d.into());
    }
    let due: Vec<Value> = arr(&probe["due"])
        .iter()
        .map(|q| {
            storage
                .due_runs(at_micros(i(&q["now"])), i(&q["limit"]) as usize, &policy_of(q))
                .expect("due runs")
                .iter()
                .map(|(w, r)| json!([w.tenant_id, w.workspace_id, r.id()]))
                .collect()
        })
        .collect();
    json!({"workspaces": workspaces, "by_workspace": by, "due": due})
}

/// The reads of a transaction on `ws`, which is then rolled back.
fn dump_tx(storage: &dyn WorkspaceStorage, ws: &WorkspaceRef, spec: &Value) -> Value {
    let names = |k: &str| strs(&spec[k]);
    let mut tx = storage.begin(ws).expect("begin");
    let mut d = Map::new();
    d.insert("head_seq".into(), tx.head_seq().expect("head_seq").into());
    let seqs: Vec<i64> = tx.read(1, 3).expect("read").iter().map(|e| e.seq).collect();
    d.insert("read".into(), seqs.into());
    let mut m = Map::new();
    for id in names("event_ids") {
        let e = tx.envelope(&id).expect("envelope").map(|e| e.to_json());
        m.insert(id, e.into());
    }
    d.insert("envelope".into(), m.into());
    let mut states = Map::new();
    for (rule, keys) in spec["states"].as_object().expect("states") {
        let found: Vec<Value> = tx
            .states(rule, &strs(keys))
            .expect("states")
            .iter()
            .map(|(k, st)| json!([k, st.to_json()]))
            .collect();
        states.insert(rule.clone(), found.into());
    }
    d.insert("states".into(), states.into());
    let scopes: Vec<Value> = arr(&spec["scopes"])
        .iter()
        .map(|p| {
            tx.scope_runs(s(&p[0]), s(&p[1]))
                .expect("scope runs")
                .iter()
                .map(|r| r.id().to_owned())
                .collect()
        })
        .collect();
    d.insert("scope_runs".into(), scopes.into());
    let mut m = Map::new();
    for rule in names("rules") {
        let p = tx.progress(&rule).expect("progress").map(|p| p.to_json());
        m.insert(rule, p.into());
    }
    d.insert("progress".into(), m.into());
    let mut m = Map::new();
    for n in names("stored_rule_names") {
        let r = tx
            .stored_rule(&n)
            .expect("stored rule")
            .as_ref()
            .map(stored_rule_json);
        m.insert(n, r.into());
    }
    d.insert("stored_rule".into(), m.into());
    let active: Vec<Value> = tx
        .stored_rules()
        .expect("stored rules")
        .iter()
        .map(|r| stored_rule_json(r).into())
        .collect();
    d.insert("stored_rules".into(), active.into());
    let mut m = Map::new();
    for n in names("schedule_names") {
        let at = tx.schedule(&n).expect("schedule").map(micros);
        m.insert(n, at.into());
    }
    d.insert("schedule".into(), m.into());
    drop(tx);
    d.into()
}

/// Drops the transaction reads from a dump of the scripts (for a read-only storage's).
pub fn without_tx(mut dump: Value) -> Value {
    if let Some(by) = dump["by_workspace"].as_object_mut() {
        for d in by.values_mut() {
            if let Some(d) = d.as_object_mut() {
                d.remove("tx");
            }
        }
    }
    dump
}

/// Fails naming every path where `ours` and `reflexrs` differ (arrays element by element).
#[track_caller]
pub fn assert_same(what: &str, ours: &Value, reflexrs: &Value) {
    let mut diffs = Vec::new();
    diff("", ours, reflexrs, &mut diffs);
    assert!(
        diffs.is_empty(),
        "{what}: execstore and reflexr differ at {} place(s):\n{}",
        diffs.len(),
        diffs.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
}

fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => diff(&format!("{path}.{k}"), v, w, out),
                    None => out.push(format!("{path}.{k}: only execstore has it: {v}")),
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                out.push(format!("{path}.{k}: only reflexr has it: {}", y[k]));
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (n, (v, w)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}[{n}]"), v, w, out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{path}:\n  execstore {a}\n  reflexr   {b}")),
    }
}
