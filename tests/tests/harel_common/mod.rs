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
    pyjson, ChildState, Effects, Event, Execution, ExecutionStore, JsonObject, ListQuery, Status, StoreError,
    TraceStep,
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
    for page in execstore::paging::execution_pages(store, query.limit(3)) {
        for item in &page.expect("list_executions").items {
            let mut v = to_value!(item);
            // execstore's summary adds `updated_at`; harel's has the rest
            v.as_object_mut().expect("object").shift_remove("updated_at");
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

/// execstore writes the same variety harel's script does, with ids of its own ("...-101").
pub fn write_variety(store: &dyn ExecutionStore) {
    let mut ord = Execution::new("ord-101", "order");
    ord.status = Status::Running;
    ord.active_path = Some("order.waiting".into());
    ord.history = obj(json!({"order": "order.waiting"}));
    ord.context = obj(json!({
        "z_last_key_first": 1, "amount": 12.5, "floats": floats(), "note": TEXT,
        "nested": {"b": [1, {"c": null}], "a": true}
    }));
    ord.processed_events = 1;
    ord.created_at = Some(T0);
    ord.updated_at = Some(T0 + 1.25);
    let mut charge = Event::new("es-ev-pay-1", "Charge").with_data(obj(
        json!({"amount": 12.5, "currency": "€", "tiny": 1e-7, "huge": 1e20}),
    ));
    charge.created_time = Some("2024-01-02T03:04:05.123456Z".into());
    let mut placed = Event::new("es-ev-broadcast-1", "OrderPlaced");
    placed.received_time = Some("2024-01-02T03:04:05".into());
    let mut tick = Event::new("es-ev-self-1", "Tick").with_data(obj(json!({"text": TEXT})));
    tick.created_time = Some("2024-06-30T23:59:59+05:30".into());
    tick.received_time = Some("2024-07-01T00:00:00.000001Z".into());
    let context_out = json!(ord.context);
    let seqs = store
        .commit(
            &mut ord,
            &Effects::new()
                .emit(Some("pay-101"), charge)
                .emit(None, placed)
                .emit(Some("ord-101"), tick)
                .processed("es-ev-start-1")
                .schedule("order.waiting", T0 + 30.5)
                .schedule("order.reminder", T0 + 3600.0)
                .trace(step(
                    "Start",
                    json!({}),
                    None,
                    "order.waiting",
                    &["reserve", "notify"],
                    context_out,
                    T0 + 1.25,
                )),
        )
        .expect("commit ord-101");
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(ord.version, 1);
    ord.processed_events = 2;
    ord.updated_at = Some(T0 + 2.0);
    ord.context.insert("amount".into(), json!(0.1));
    let mut trace = step(
        "Paid",
        json!({"amount": 0.1, "ids": ["a", "b"], "tiny": 1e-7, "huge": 1e20, "text": TEXT}),
        Some("order.waiting"),
        "order.paid",
        &[],
        json!({"amount": 0.1, "floats": floats()}),
        T0 + 2.0,
    );
    trace.insert("assigned".into(), json!({"amount": 0.1}));
    store
        .commit(
            &mut ord,
            &Effects::new()
                .emit(
                    Some("pay-101"),
                    Event::new("es-ev-pay-2", "Capture").with_data(obj(json!({"ratio": 1.0 / 3.0}))),
                )
                .processed("es-ev-2")
                .schedule("order.waiting", T0 + 60.25)
                .cancel("order.reminder")
                .schedule("order.escalate", T0 + 7200.0)
                .trace(trace),
        )
        .expect("commit ord-101 again");

    let mut pay = Execution::new("pay-101", "payment");
    pay.status = Status::Suspended;
    pay.active_path = Some("payment.hold".into());
    pay.context = obj(json!({"ünïcode key": "välue", "list": [1, 2.0, "3"]}));
    pay.priority = 3;
    pay.created_at = Some(T0);
    pay.updated_at = Some(T0 + 5.0);
    let fx = Effects::new()
        .processed("es-ev-x")
        .schedule("payment.retry", T0 + 30.5);
    store.commit(&mut pay, &fx).expect("commit pay-101");
    store
        .commit(&mut pay, &Effects::new().processed("es-ev-x"))
        .expect("the same marker again");

    let child = |root: &str, key: &str| ChildState {
        root_path: root.into(),
        finished: false,
        outcome: None,
        result: JsonObject::new(),
        submachine: false,
        key: key.into(),
        extra: JsonObject::new(),
    };
    let mut par = Execution::new("par-101", "order");
    par.status = Status::Running;
    par.active_path = Some("par.fork".into());
    par.children
        .insert("par-101:region/a:0".into(), child("par.region_a", "a"));
    let mut b = child("par.region_b", "b");
    (b.finished, b.outcome, b.result) = (true, Some("ok".into()), obj(json!({"total": 1e20, "ok": true})));
    par.children.insert("par-101:region/b:0".into(), b);
    let mut sub_child = child("par.sub", "sub");
    sub_child.submachine = true;
    par.children.insert("par-101:sub:0".into(), sub_child);
    par.invoke_seq = [("par.fork".to_owned(), 1), ("par.sub".to_owned(), 2)]
        .into_iter()
        .collect();
    par.created_at = Some(T0);
    par.updated_at = Some(T0 + 3.0);
    store
        .commit(
            &mut par,
            &Effects::new()
                .spawn(
                    "par-101:region/a:0",
                    "par.region_a",
                    obj(json!({"seed": TEXT, "n": 1e-7})),
                )
                .spawn("par-101:region/b:0", "par.region_b", JsonObject::new())
                .spawn(
                    "par-101:sub:0",
                    "par.sub",
                    obj(json!({"nested": {"x": [1e20, 0.1]}})),
                )
                .schedule("par.deadline", T0 + 7200.5)
                .cancel("par.never-armed")
                .trace(step(
                    "Fork",
                    json!({}),
                    Some("par.start"),
                    "par.fork",
                    &["spawn"],
                    json!({}),
                    T0 + 3.0,
                )),
        )
        .expect("commit par-101");
    let mut a = Execution::new("par-101:region/a:0", "order");
    a.root_path = "par.region_a".into();
    a.status = Status::Done;
    a.outcome = Some("ok".into());
    a.active_path = Some("par.region_a.end".into());
    a.parent_id = Some("par-101".into());
    a.child_id = Some("par-101:region/a:0".into());
    (a.created_at, a.updated_at, a.finished_at) = (Some(T0 + 4.0), Some(T0 + 5.0), Some(T0 + 5.0));
    let fin = Event::new("es-ev-fin-a", "Finished").with_data(obj(json!({"outcome": "ok"})));
    store
        .commit(&mut a, &Effects::new().emit(Some("par-101"), fin))
        .expect("commit child a");
    let mut b = Execution::new("par-101:region/b:0", "order");
    b.root_path = "par.region_b".into();
    b.status = Status::Failed;
    b.error = Some("ValueError: boom ✗ — «bad»".into());
    b.active_path = Some("par.region_b.work".into());
    b.parent_id = Some("par-101".into());
    b.child_id = Some("par-101:region/b:0".into());
    (b.created_at, b.updated_at) = (Some(T0 + 4.0), Some(T0 + 6.0));
    store.save(&mut b).expect("save child b");
    let mut sub = Execution::new("par-101:sub:0", "subflow");
    sub.definition_fqn = Some("pkg.flows:SubFlow".into());
    sub.status = Status::Cancelling;
    sub.parent_id = Some("par-101".into());
    sub.child_id = Some("par-101:sub:0".into());
    let mut later = Event::new("es-ev-def-2", "Later");
    later.created_time = Some("2023-12-31T12:00:00Z".into());
    sub.deferred = vec![
        Event::new("es-ev-def-1", "Later").with_data(obj(json!({"k": "v"}))),
        later,
    ];
    sub.expires_at = Some(T0 + 86400.5);
    sub.priority = 4;
    store.save(&mut sub).expect("save sub");

    let mut pen = Execution::new("pen-101", "order");
    store.save(&mut pen).expect("save pen");
    let mut can = Execution::new("can-101", "order");
    (can.status, can.finished_at, can.outcome) =
        (Status::Cancelled, Some(T0 + 9.0), Some("cancelled".into()));
    store.save(&mut can).expect("save can");
    let mut dne = Execution::new("dne-101", "payment");
    (dne.status, dne.outcome, dne.finished_at) =
        (Status::Done, Some("approved".into()), Some(1_700_000_123.456789));
    store.save(&mut dne).expect("save dne");
    let mut uni = Execution::new("ünï-101", "ünïcode-dèf");
    (uni.status, uni.active_path) = (Status::Running, Some("状态.一".into()));
    uni.context = obj(json!({"emoji": "😀"}));
    store.save(&mut uni).expect("save ünï");
    for id in ["pfx_1", "pfx_2", "PFX_3", "pfxA1", "pfx%1"] {
        store
            .save(&mut Execution::new(id, "prefixes"))
            .expect("save prefix id");
    }

    let mut trc = Execution::new("trc-101", "order");
    trc.status = Status::Running;
    store.save(&mut trc).expect("save trc");
    for n in 0..205 {
        let st = step(
            "Tick",
            json!({"i": n}),
            Some(&format!("s{n}")),
            &format!("s{}", n + 1),
            &[],
            json!({"i": n, "x": f64::from(n) / 10.0}),
            T0 + f64::from(n),
        );
        assert_eq!(
            store.append_trace("trc-101", &st).expect("append_trace"),
            i64::from(n)
        );
    }

    // fields a newer engine wrote: execstore keeps them, harel reads past them
    let mut ext = Execution::new("ext-101", "order");
    ext.status = Status::Running;
    ext.extra = obj(json!({"future_field": {"nested": [1, "ü"]}, "another": 1e20}));
    let mut c = child("ext.region", "r");
    c.extra = obj(json!({"child_future": true}));
    ext.children.insert("ext-101:region:0".into(), c);
    let mut deferred = Event::new("es-ev-def-ext", "Later");
    deferred.extra = obj(json!({"event_future": "x"}));
    ext.deferred = vec![deferred.clone()];
    store
        .commit(
            &mut ext,
            &Effects::new()
                .emit(Some("ext-101"), deferred)
                .processed("es-ev-ext"),
        )
        .expect("commit ext-101");

    let mut tmp = Execution::new("tmp-101", "order");
    tmp.status = Status::Running;
    store
        .commit(
            &mut tmp,
            &Effects::new()
                .emit(Some("tmp-101"), Event::new("es-ev-tmp", "Self"))
                .processed("es-ev-tmp-0")
                .schedule("tmp.t", T0 + 10.0)
                .trace(step("Start", json!({}), None, "tmp.a", &[], json!({}), T0)),
        )
        .expect("commit tmp");
    store.ack_outbox(2).expect("ack the untargeted OrderPlaced");
    store.ack_spawn(2).expect("ack region b's intent");
    assert!(!store
        .delete_timer("ord-101", "order.waiting", T0 + 30.5)
        .expect("stale delete"));
    assert!(store
        .delete_timer("ord-101", "order.escalate", T0 + 7200.0)
        .expect("delete"));
    assert!(!store.purge("tmp-101", 0).expect("purge at a stale version"));
    assert!(store.purge("tmp-101", 1).expect("purge"));
    let mut stale = Execution::new("pen-101", "order");
    assert!(matches!(
        store.save(&mut stale),
        Err(StoreError::Conflict {
            expected: 0,
            found: Some(1),
            ..
        })
    ));
}

/// What execstore does on data harel wrote (`write_with_harel.py`'s scenario), on either
/// backend: a commit with every kind of effect on harel's `ord-001` (the outbox sequence
/// continuing from harel's), a save of a new execution with an unknown field, acks, a guarded
/// timer delete, a trace append past harel's ring, a purge and a lost CAS.
pub fn commit_on_harels_data(store: &dyn ExecutionStore) {
    let mut ord = store.load("ord-001").unwrap().expect("harel's ord-001");
    assert_eq!(ord.version, 3);
    ord.context.insert("by".into(), json!("execstore ✓ — 😀"));
    ord.context.insert("f".into(), floats());
    ord.active_path = Some("order.shipped".into());
    ord.processed_events += 1;
    ord.updated_at = Some(T0 + 10.5);
    let mut ev =
        Event::new("es-on-harel-1", "Ship").with_data(obj(json!({"huge": 1e20, "tiny": 1e-7, "t": TEXT})));
    ev.created_time = Some("2024-03-04T05:06:07.000008Z".into());
    let seqs = store
        .commit(
            &mut ord,
            &Effects::new()
                .emit(Some("pay-001"), ev)
                .emit(None, Event::new("es-on-harel-2", "Shipped"))
                .processed("es-on-harel-ev")
                .schedule("order.waiting", T0 + 90.75)
                .schedule("order.es", T0 + 45.0)
                .cancel("order.reminder")
                .spawn(
                    "ord-001:es:0",
                    "order.es",
                    obj(json!({"by": "execstore ✓", "f": 1e20})),
                )
                .trace(step(
                    "Ship",
                    json!({"t": TEXT}),
                    Some("order.paid"),
                    "order.shipped",
                    &["ship"],
                    json!({"f": floats()}),
                    T0 + 10.5,
                )),
        )
        .expect("execstore commits on harel's data");
    // harel's last outbox seq was 6 (purged since): the sequence goes on from there
    assert_eq!(seqs, [7, 8]);
    assert_eq!(ord.version, 4);
    let mut ext = Execution::new("ext-201", "order");
    ext.extra = obj(json!({"future_field": [1, 2]}));
    store.save(&mut ext).expect("save ext-201");
    store.ack_outbox(1).expect("ack harel's seq 1");
    store.ack_spawn(1).expect("ack harel's spawn 1");
    assert!(store
        .delete_timer("pay-001", "payment.retry", T0 + 30.5)
        .expect("delete harel's timer"));
    assert_eq!(
        store
            .append_trace("trc-001", &step("Tick", json!({}), None, "s", &[], json!({}), T0))
            .unwrap(),
        205
    );
    assert!(store.purge("can-001", 1).expect("purge harel's can-001"));
    let mut stale = store.load("pay-001").unwrap().unwrap();
    stale.version -= 1;
    assert!(matches!(store.save(&mut stale), Err(StoreError::Conflict { .. })));
}

/// Harel's commit on `ext-101` (`read_with_harel.py --commit ext-101`, whose output holds it
/// as `commit`), as execstore reads it: the new version and context, harel's own JSON of the
/// execution (it drops unknown fields), its outbox seqs last, its dedupe marker, spawn and
/// trace step.
pub fn check_harels_commit(store: &dyn ExecutionStore, commit: &Value, ctx: &str) {
    let exe = store.load("ext-101").unwrap().unwrap();
    assert_eq!(exe.version, 2, "{ctx}");
    assert_eq!(
        exe.context["touched_by"],
        json!("written by harel ✓ — ünï 😀"),
        "{ctx}"
    );
    assert_eq!(
        to_value!(&exe),
        commit["exe"],
        "{ctx}: harel dropped the unknown fields on its write"
    );
    let seqs: Vec<i64> = commit["seqs"].as_array().unwrap().iter().map(i).collect();
    let outbox = store.pending_outbox(None, ALL).unwrap();
    assert_eq!(
        outbox
            .iter()
            .rev()
            .take(2)
            .map(|e| e.seq)
            .rev()
            .collect::<Vec<_>>(),
        seqs,
        "{ctx}"
    );
    assert!(
        store.is_processed("ext-101", "harel-processed-1").unwrap(),
        "{ctx}"
    );
    let spawned = store.pending_spawns(None, ALL).unwrap();
    assert_eq!(spawned.last().unwrap().child_id, "ext-101:harel:0", "{ctx}");
    let trace = store.read_trace("ext-101").unwrap();
    assert_eq!(trace.last().unwrap()["event_kind"], json!("FromHarel"), "{ctx}");
}

/// execstore writes on `ext-101` after harel's commit: the CAS continues from harel's
/// version, the outbox sequence from harel's last seq.
pub fn commit_after_harel(store: &dyn ExecutionStore, commit: &Value) {
    let mut exe = store.load("ext-101").unwrap().unwrap();
    exe.context.insert("after_harel".into(), json!(true));
    let seqs = store
        .commit(
            &mut exe,
            &Effects::new().emit(None, Event::new("es-after-harel", "After")),
        )
        .expect("commit after harel");
    assert_eq!(exe.version, 3);
    let last_harel_seq = i(commit["seqs"].as_array().unwrap().last().unwrap());
    assert_eq!(seqs, [last_harel_seq + 1]);
}

/// Harel's view of what `write_variety` wrote: its 17 executions in every status, the text
/// and floats as written, unknown fields ignored. Returns harel's raw row of `ext-101`.
pub fn check_harel_read_the_variety(view: &Value) -> &Value {
    let exes = view["executions"].as_object().unwrap();
    assert_eq!(exes.len(), 17);
    let statuses: BTreeSet<&str> = exes.values().map(|e| s(&e["status"])).collect();
    assert_eq!(
        statuses.len(),
        Status::ALL.len(),
        "every status is present: {statuses:?}"
    );
    assert_eq!(exes["ord-101"]["context"]["note"], json!(TEXT));
    assert_eq!(exes["ord-101"]["context"]["floats"], floats());
    assert!(
        exes["ext-101"].get("future_field").is_none(),
        "harel ignores unknown fields"
    );
    let raw_ext = view["raw"]["executions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == json!("ext-101"))
        .unwrap();
    raw_ext
}
