//! Shared by the harel interop tests (`harel_interop.rs` on SQLite, `harel_interop_pg.rs` on
//! PostgreSQL): finding and running harel 0.9 and its scripts (`tests/harel/*.py`), the
//! comparison of what execstore reads with what harel read (`assert_matches_harel`), the
//! replay of harel's recorded calls, and the variety execstore writes. Every store is taken as
//! `&dyn ExecutionStore`, so one comparison serves every backend.
#![allow(dead_code)] // each test crate uses a part of this module

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::sync::OnceLock;

use execstore::{
    executions::{ChildState, Event, JsonObject, ListQuery, Status, TraceStep},
    kit::pyjson,
    Effects, Execution, ExecutionStore, StoreError,
};
use serde_json::{json, Value};

pub const HAREL_VERSION: &str = "0.9.0";
pub const T0: f64 = 1_700_000_000.0;
pub const ALL: usize = 10_000;
/// Text that needs escaping or lies outside ASCII (the same as the Python scripts').
pub const TEXT: &str = "naïve — ✓ 😀 中文 \"quoted\" back\\slash /slash tab\t nl\n \u{1} \u{7f} \u{2028} é";

/// `serde_json::to_value`, unwrapped (a macro: this crate does not depend on serde itself).
macro_rules! to_value {
    ($v:expr) => {
        serde_json::to_value($v).expect("serialize")
    };
}

// --- finding and running harel -------------------------------------------------------------

pub struct Harel {
    pub python: PathBuf,
}

/// The Python with harel 0.9.0, or `None` when there is none and it is not required: the
/// calling test is then reported as skipped (`execstore_e2e::skip`, one line per test) and
/// returns.
pub fn harel() -> Option<&'static Harel> {
    static FOUND: OnceLock<Result<Harel, String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        let required = std::env::var("EXECSTORE_REQUIRE_HAREL").is_ok_and(|v| v == "1");
        let explicit = std::env::var_os("EXECSTORE_HAREL_PYTHON").filter(|p| !p.is_empty());
        let python = PathBuf::from(explicit.clone().unwrap_or_else(|| "python3".into()));
        match harel_version(&python) {
            Ok(v) if v == HAREL_VERSION => Ok(Harel { python }),
            found => {
                let why = match found {
                    Ok(v) => format!("{} has harel {v}, not {HAREL_VERSION}", python.display()),
                    Err(e) => format!("{}: {e}", python.display()),
                };
                if required || explicit.is_some() {
                    panic!("harel {HAREL_VERSION} is required but not usable: {why}");
                }
                Err(format!(
                    "harel {HAREL_VERSION} not installed (scripts/test installs it) [{why}]"
                ))
            }
        }
    });
    match found {
        Ok(harel) => Some(harel),
        Err(why) => {
            execstore_e2e::skip(why);
            None
        }
    }
}

pub fn harel_version(python: &Path) -> Result<String, String> {
    // not from this package's folder, whose `harel/` (the scripts) would import as `harel`
    let out = Command::new(python)
        .current_dir(std::env::temp_dir())
        .args([
            "-c",
            "import importlib.metadata, harel; print(importlib.metadata.version('harel'))",
        ])
        .output()
        .map_err(|e| format!("cannot run: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "cannot import harel: {}",
            err.lines().last().unwrap_or("")
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

impl Harel {
    /// Runs `tests/harel/<script> DB OUT [extra...]` on the SQLite file `db` and returns OUT's
    /// JSON; any failure of the script fails the test with its output.
    pub fn run(&self, script: &str, db: &Path, extra: &[&str]) -> Value {
        let out_path = db.with_extension(format!("{script}.json"));
        let cwd = db.parent().expect("the database's folder");
        self.run_on(script, db.as_os_str(), &out_path, cwd, extra)
    }

    /// Runs `tests/harel/<script> URL OUT --prefix PREFIX [extra...]` on the PostgreSQL
    /// database at `url`, the tables under `prefix`, with OUT in `workdir`.
    pub fn run_pg(&self, script: &str, url: &str, prefix: &str, workdir: &Path, extra: &[&str]) -> Value {
        let out_path = workdir.join(format!("{prefix}.{script}.json"));
        let args: Vec<&str> = ["--prefix", prefix]
            .into_iter()
            .chain(extra.iter().copied())
            .collect();
        self.run_on(script, OsStr::new(url), &out_path, workdir, &args)
    }

    fn run_on(&self, script: &str, db: &OsStr, out_path: &Path, cwd: &Path, extra: &[&str]) -> Value {
        let script_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("harel").join(script);
        let out = Command::new(&self.python)
            .current_dir(cwd)
            .env("PYTHONDONTWRITEBYTECODE", "1") // no __pycache__ in the source tree
            .arg(&script_path)
            .arg(db)
            .arg(out_path)
            .args(extra.iter().map(OsStr::new))
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", script_path.display()));
        assert!(
            out.status.success(),
            "{script} {} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
            db.to_string_lossy(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(out_path).expect("read the script's JSON");
        serde_json::from_str(&text).expect("the script's output is JSON")
    }
}

// --- small helpers -------------------------------------------------------------------------

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

pub fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A trace step in the shape harel's runtime records.
pub fn step(
    kind: &str,
    data: Value,
    from: Option<&str>,
    to: &str,
    actions: &[&str],
    ctx: Value,
    ts: f64,
) -> TraceStep {
    obj(json!({
        "event_kind": kind,
        "event_data": data,
        "from_path": from,
        "to_path": to,
        "actions": actions,
        "context_out": ctx,
        "timestamp": ts,
    }))
}

pub fn floats() -> Value {
    json!([
        0.1,
        1e-7,
        1e20,
        1e16,
        1e15,
        123456789.125,
        -0.0,
        2.5,
        1.0,
        5e-324,
        1.7976931348623157e308
    ])
}

/// Fails with the first place where two texts differ, for byte-for-byte comparisons.
#[track_caller]
pub fn assert_same_text(what: &str, ours: &str, harels: &str) {
    if ours == harels {
        return;
    }
    let at = ours
        .char_indices()
        .zip(harels.chars())
        .find(|((_, a), b)| a != b)
        .map_or(ours.len().min(harels.len()), |((i, _), _)| i);
    let window = |t: &str| {
        let mut start = at.saturating_sub(40).min(t.len());
        while !t.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (at + 40).min(t.len());
        while !t.is_char_boundary(end) {
            end += 1;
        }
        t[start..end].to_owned()
    };
    panic!(
        "{what}: the text differs at byte {at}\n  execstore: …{}…\n  harel:     …{}…\n  execstore (all): {ours}\n  harel (all):     {harels}",
        window(ours),
        window(harels)
    );
}

/// Whether the execution carries fields harel does not know (harel drops them).
pub fn has_extras(exe: &Execution) -> bool {
    !exe.extra.is_empty()
        || exe.deferred.iter().any(|e| !e.extra.is_empty())
        || exe.children.values().any(|c| !c.extra.is_empty())
}

/// The execution without the fields harel does not know: what harel sees of it.
pub fn known_only(exe: &Execution) -> Execution {
    let mut exe = exe.clone();
    exe.extra.clear();
    exe.deferred.iter_mut().for_each(|e| e.extra.clear());
    exe.children.values_mut().for_each(|c| c.extra.clear());
    exe
}

pub fn known_event(ev: &Event) -> Event {
    let mut ev = ev.clone();
    ev.extra.clear();
    ev
}

pub fn summaries(store: &dyn ExecutionStore, query: ListQuery) -> Value {
    let mut items = Vec::new();
    for page in execstore::executions::paging::execution_pages(store, query.limit(3)) {
        for item in &page.expect("list_executions").items {
            let mut v = to_value!(item);
            // execstore's summary adds `updated_at` and `created_at` (for monitors' orders);
            // harel's has the rest
            let v_obj = v.as_object_mut().expect("object");
            v_obj.shift_remove("updated_at");
            v_obj.shift_remove("created_at");
            items.push(v);
        }
    }
    Value::Array(items)
}

pub fn query_of(kwargs: &Value) -> ListQuery {
    let mut q = ListQuery::new();
    if let Some(st) = kwargs.get("status") {
        let statuses: Vec<Status> = st
            .as_array()
            .expect("status list")
            .iter()
            .map(|x| Status::from_str(s(x)).expect("status"))
            .collect();
        q = q.status(statuses);
    }
    if let Some(d) = kwargs.get("definition_id") {
        q = q.definition(s(d));
    }
    if kwargs.get("roots_only") == Some(&Value::Bool(true)) {
        q = q.roots_only(true);
    }
    q
}

// --- the comparison ------------------------------------------------------------------------

/// Everything execstore reads from `store` equals what harel read from the same file (`view`,
/// from `harel_dump.view`), and the raw text of every row is what harel itself writes for the
/// object in it.
#[track_caller]
pub fn assert_matches_harel(store: &dyn ExecutionStore, view: &Value, ctx: &str) {
    // executions: the same ids, each loaded to the same JSON
    let harel_exes = view["executions"].as_object().expect("executions");
    let ours_all = summaries(store, ListQuery::new());
    let our_ids: Vec<&str> = ours_all.as_array().unwrap().iter().map(|v| s(&v["id"])).collect();
    let harel_ids: Vec<&str> = harel_exes.keys().map(String::as_str).collect();
    assert_eq!(our_ids, harel_ids, "{ctx}: the listed ids");
    for (id, harel_exe) in harel_exes {
        let exe = store
            .load(id)
            .expect("load")
            .unwrap_or_else(|| panic!("{ctx}: {id} not loaded"));
        assert_eq!(&to_value!(&known_only(&exe)), harel_exe, "{ctx}: execution {id}");
    }
    assert!(store.load("no-such-execution").expect("load").is_none());
    assert_eq!(view["missing_load_is_none"], json!(true));

    // listings (items only: the cursors differ by design)
    assert_eq!(ours_all, view["summaries"], "{ctx}: list_executions, all pages");
    for (name, listing) in view["listings"].as_object().expect("listings") {
        let ours = summaries(store, query_of(&listing["query"]));
        assert_eq!(
            ours, listing["items"],
            "{ctx}: list_executions {name} {}",
            listing["query"]
        );
    }

    // outbox, spawns, timers, traces, dedupe markers, prefix lookups
    let outbox: Vec<Value> = store
        .pending_outbox(None, ALL)
        .expect("pending_outbox")
        .iter()
        .map(|e| json!({"seq": e.seq, "target_id": e.target_id, "event": to_value!(&known_event(&e.event))}))
        .collect();
    assert_eq!(Value::Array(outbox), view["outbox"], "{ctx}: pending_outbox");
    let spawns = to_value!(&store.pending_spawns(None, ALL).expect("pending_spawns"));
    assert_eq!(spawns, view["spawns"], "{ctx}: pending_spawns");
    for due in view["due_timers"].as_array().expect("due_timers") {
        let now = f(&due["now"]);
        let ours: Vec<Value> = store
            .due_timers(now, None, ALL)
            .expect("due_timers")
            .iter()
            .map(|t| json!([t.execution_id, t.path, t.fire_at]))
            .collect();
        assert_eq!(Value::Array(ours), due["timers"], "{ctx}: due_timers({now})");
    }
    for (id, harel_trace) in view["trace"].as_object().expect("trace") {
        let ours = Value::Array(
            store
                .read_trace(id)
                .expect("read_trace")
                .into_iter()
                .map(Value::Object)
                .collect(),
        );
        assert_eq!(&ours, harel_trace, "{ctx}: read_trace({id})");
    }
    for pair in view["is_processed"].as_array().expect("is_processed") {
        let (eid, evid) = (s(&pair[0]), s(&pair[1]));
        let ours = store.is_processed(eid, evid).expect("is_processed");
        assert_eq!(json!(ours), pair[2], "{ctx}: is_processed({eid}, {evid})");
        let (loaded, seen) = store.load_for_event(eid, evid).expect("load_for_event");
        assert_eq!(json!(seen), pair[2], "{ctx}: load_for_event({eid}, {evid})");
        assert_eq!(loaded.is_some(), harel_exes.contains_key(eid));
    }
    for (prefix, harel_ids) in view["ids_with_prefix"].as_object().expect("ids_with_prefix") {
        let ours = store.ids_with_prefix(prefix).expect("ids_with_prefix");
        // harel's LIKE may over-match (case-insensitively); execstore matches exactly
        let harel_ids: Vec<&str> = harel_ids.as_array().unwrap().iter().map(s).collect();
        let exact: Vec<&str> = harel_ids
            .iter()
            .copied()
            .filter(|id| id.starts_with(prefix.as_str()))
            .collect();
        assert_eq!(
            ours, exact,
            "{ctx}: ids_with_prefix({prefix:?}) (harel: {harel_ids:?})"
        );
    }

    assert_raw_rows(store, view, ctx);
}

/// The raw column text of every row: execstore writes back exactly what it read, and the text
/// is what harel writes for the object it parses from it.
#[track_caller]
pub fn assert_raw_rows(store: &dyn ExecutionStore, view: &Value, ctx: &str) {
    let raw = &view["raw"];
    let would = &view["harel_would_write"];
    for row in raw["executions"].as_array().expect("raw executions") {
        let (id, data) = (s(&row[0]), s(&row[2]));
        let exe = store.load(id).expect("load").expect("stored");
        assert_eq!(s(&row[1]), exe.definition_id, "{ctx}: {id} definition_id column");
        assert_eq!(i(&row[3]), exe.version, "{ctx}: {id} version column");
        assert_same_text(
            &format!("{ctx}: execution {id} re-serialized by execstore"),
            &exe.to_json(),
            data,
        );
        let harel_text = s(&would["executions"][id]);
        if has_extras(&exe) {
            // harel drops the fields it does not know; the rest is its text exactly
            assert_same_text(
                &format!("{ctx}: execution {id} (known fields) as harel writes it"),
                &known_only(&exe).to_json(),
                harel_text,
            );
        } else {
            assert_same_text(
                &format!("{ctx}: execution {id} as harel writes it"),
                data,
                harel_text,
            );
        }
    }
    let outbox = store.pending_outbox(None, ALL).expect("pending_outbox");
    let rows = raw["outbox"].as_array().expect("raw outbox");
    assert_eq!(outbox.len(), rows.len(), "{ctx}: outbox rows");
    for (entry, row) in outbox.iter().zip(rows) {
        let what = format!("{ctx}: outbox seq {}", entry.seq);
        assert_eq!(i(&row[0]), entry.seq, "{what}");
        assert_eq!(row[1].as_str(), entry.target_id.as_deref(), "{what}: target_id");
        let ours = serde_json::to_string(&entry.event).expect("event json");
        assert_same_text(
            &format!("{what}: event re-serialized by execstore"),
            &ours,
            s(&row[2]),
        );
        let harel_text = s(&would["outbox"][entry.seq.to_string()]);
        let known = serde_json::to_string(&known_event(&entry.event)).expect("event json");
        assert_same_text(&format!("{what}: event as harel writes it"), &known, harel_text);
    }
    let spawns = store.pending_spawns(None, ALL).expect("pending_spawns");
    let rows = raw["spawns"].as_array().expect("raw spawns");
    assert_eq!(spawns.len(), rows.len(), "{ctx}: spawn rows");
    for (entry, row) in spawns.iter().zip(rows) {
        let what = format!("{ctx}: spawn seq {}", entry.seq);
        assert_eq!(i(&row[0]), entry.seq, "{what}");
        assert_eq!(
            [s(&row[1]), s(&row[2]), s(&row[3])],
            [&*entry.parent_id, &*entry.child_id, &*entry.root_path],
            "{what}"
        );
        assert_same_text(
            &format!("{what}: context by execstore"),
            &pyjson::dumps(&entry.context),
            s(&row[4]),
        );
        assert_same_text(
            &format!("{what}: context as harel writes it"),
            s(&row[4]),
            s(&would["spawns"][entry.seq.to_string()]),
        );
    }
    let mut traces: HashMap<String, Vec<TraceStep>> = HashMap::new();
    for (row, harel_row) in raw["trace"]
        .as_array()
        .unwrap()
        .iter()
        .zip(would["trace"].as_array().unwrap())
    {
        let (id, idx, entry) = (s(&row[0]), i(&row[1]), s(&row[2]));
        let what = format!("{ctx}: trace {id} #{idx}");
        let kept = traces
            .entry(id.to_owned())
            .or_insert_with(|| store.read_trace(id).expect("read_trace"));
        let mut step = kept
            .iter()
            .find(|st| st.get("index") == Some(&json!(idx)))
            .cloned()
            .unwrap_or_else(|| panic!("{what}: not read by execstore"));
        step.shift_remove("index");
        assert_same_text(
            &format!("{what}: entry by execstore"),
            &pyjson::dumps(&step),
            entry,
        );
        assert_same_text(
            &format!("{what}: entry as harel writes it"),
            entry,
            s(&harel_row[2]),
        );
    }
    let mut timers: Vec<Value> = store
        .due_timers(1e300, None, ALL)
        .expect("due_timers")
        .iter()
        .map(|t| json!([t.execution_id, t.path, t.fire_at]))
        .collect();
    timers.sort_by(|a, b| (s(&a[0]), s(&a[1])).cmp(&(s(&b[0]), s(&b[1]))));
    assert_eq!(Value::Array(timers), raw["timers"], "{ctx}: every timer");
    for pair in raw["processed_events"].as_array().expect("raw processed_events") {
        assert!(
            store
                .is_processed(s(&pair[0]), s(&pair[1]))
                .expect("is_processed"),
            "{ctx}: {pair}"
        );
    }
}

/// Two views' raw tables hold the same rows, byte for byte (`ours` from the store execstore
/// wrote, `theirs` from harel's), and harel reads both alike.
#[track_caller]
pub fn assert_same_rows_and_reads(ours: &Value, theirs: &Value) {
    // every row of every table, byte for byte
    for table in [
        "executions",
        "outbox",
        "processed_events",
        "timers",
        "spawns",
        "trace",
    ] {
        let (a, b) = (
            ours["raw"][table].as_array().unwrap(),
            theirs["raw"][table].as_array().unwrap(),
        );
        for (row_a, row_b) in a.iter().zip(b) {
            for (col_a, col_b) in row_a.as_array().unwrap().iter().zip(row_b.as_array().unwrap()) {
                match (col_a.as_str(), col_b.as_str()) {
                    (Some(x), Some(y)) => assert_same_text(&format!("{table} row {row_b}"), x, y),
                    _ => assert_eq!(col_a, col_b, "{table} row {row_b}"),
                }
            }
        }
        assert_eq!(
            a.len(),
            b.len(),
            "{table}: row count (execstore {}, harel {})",
            a.len(),
            b.len()
        );
    }
    // and harel reads both alike
    for key in [
        "executions",
        "summaries",
        "listings",
        "outbox",
        "spawns",
        "due_timers",
        "trace",
    ] {
        assert_eq!(ours[key], theirs[key], "harel's {key} of the two stores");
    }
    for key in ["is_processed", "ids_with_prefix", "harel_would_write"] {
        assert_eq!(ours[key], theirs[key], "harel's {key} of the two stores");
    }
}

/// Replays one store call harel made (see `write_with_harel.py`) and checks the same result.
pub fn replay(store: &dyn ExecutionStore, op: &Value, n: usize) {
    let what = format!("op {n} {}", op["op"]);
    let expect_conflict = |r: execstore::Result<()>, result: &Value| match r {
        Ok(()) => assert!(
            result.get("error").is_none(),
            "{what}: harel got {result}, execstore Ok"
        ),
        Err(StoreError::Conflict { expected, found, .. }) => {
            assert_eq!(result["error"], json!("StoreConflict"), "{what}");
            assert_eq!(
                (json!(expected), json!(found)),
                (result["expected"].clone(), result["found"].clone())
            );
        }
        Err(e) => panic!("{what}: {e}"),
    };
    match s(&op["op"]) {
        "save" => {
            let mut exe: Execution = serde_json::from_value(op["exe"].clone()).expect("execution");
            let r = store.save(&mut exe);
            let ok = r.is_ok();
            expect_conflict(r, &op["result"]);
            if ok {
                assert_eq!(json!(exe.version), op["result"]["version"], "{what}");
            }
        }
        "commit" => {
            let mut exe: Execution = serde_json::from_value(op["exe"].clone()).expect("execution");
            let effects: Effects = serde_json::from_value(op["effects"].clone()).expect("effects");
            match store.commit(&mut exe, &effects) {
                Ok(seqs) => {
                    assert_eq!(json!(seqs), op["result"]["seqs"], "{what}: outbox seqs");
                    assert_eq!(json!(exe.version), op["result"]["version"], "{what}");
                }
                Err(e) => expect_conflict(Err(e), &op["result"]),
            }
        }
        "append_trace" => {
            store
                .append_trace(s(&op["execution_id"]), &obj(op["entry"].clone()))
                .expect("append_trace");
        }
        "ack_outbox" => store.ack_outbox(i(&op["seq"])).expect("ack_outbox"),
        "ack_spawn" => store.ack_spawn(i(&op["seq"])).expect("ack_spawn"),
        "delete_timer" => {
            store
                .delete_timer(s(&op["execution_id"]), s(&op["path"]), f(&op["fire_at"]))
                .expect("delete_timer");
        }
        "purge" => {
            let purged = store
                .purge(s(&op["execution_id"]), i(&op["expected_version"]))
                .expect("purge");
            assert_eq!(json!(purged), op["result"], "{what}");
        }
        other => panic!("unknown op {other}"),
    }
}

mod variety;
#[allow(unused_imports)] // some test crates use nothing of it
pub use variety::*;
