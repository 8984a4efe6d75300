//! Writes the seed corpus of every fuzz target into fuzz/corpus/NAME/ (replacing what is
//! there): realistic values (W1's executions, events, trace steps and spawn contexts; reflexr
//! envelopes and records; each listing's cursors) for the text targets, and seeded random
//! inputs for the structured ones, kept when they reach an answer or call mix not yet seen.
//!
//! `cargo run -p execstore-fuzz-targets --example seeds`

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use execstore::workspace::{
    EvaluationError, ManualClock, MemoryWorkspaceStorage, NewRun, Run, Timestamp, WorkspaceRef,
    WorkspaceStorage,
};
use execstore::{
    executions::{encode_cursor, DueTimer, Event},
    kit::pyjson,
    w1, Effects,
};
use execstore_monitor_api::cursors;
use serde_json::{json, Value};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
    write(&root, "cursor", cursor_seeds());
    write(&root, "ingest", ingest_seeds());
    write(&root, "pyjson", pyjson_seeds());
    write(&root, "monitor", monitor_seeds());
    write(&root, "differential", differential_seeds());
}

fn write(root: &Path, target: &str, seeds: Vec<Vec<u8>>) {
    let dir: PathBuf = root.join(target);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the corpus folder");
    let total: usize = seeds.iter().map(Vec::len).sum();
    for (i, seed) in seeds.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{i:03}")), seed).expect("a seed file");
    }
    println!("{target}: {} seeds, {total} bytes", seeds.len());
}

fn cursor_seeds() -> Vec<Vec<u8>> {
    let timer = DueTimer {
        execution_id: w1::exe_id(1, 0),
        path: w1::TIMER_PATH.into(),
        fire_at: w1::FIRE_AT_BASE + 1000.5,
    };
    let mut out: Vec<String> = vec![
        encode_cursor(&w1::exe_id(1, 0)),
        encode_cursor("order-1"),
        encode_cursor("é-commande"),
        encode_cursor("a\u{0}b"),
        cursors::encode_timer(&timer),
        cursors::encode_runs(50),
        cursors::encode_runs(usize::MAX),
        "YWZ0ZXI6".into(),     // "after:" with no id
        "YWZ0ZXI6YQ==".into(), // padded
        "YWZ0ZXI6YR".into(),   // trailing bits set
        "not a cursor".into(),
        String::new(),
    ];
    out.push(format!("{}=", encode_cursor("z")));
    out.into_iter().map(String::into_bytes).collect()
}

fn tagged(kind: u8, text: &str) -> Vec<u8> {
    let mut out = vec![kind];
    out.extend_from_slice(text.as_bytes());
    out
}

fn ingest_seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    // Executions: W1's, fresh and after a step, with a parent and a finished one.
    let mut exe = w1::execution(3);
    out.push(tagged(0, &exe.to_json()));
    let round = w1::Round::new(10, 10);
    let effects: Effects = w1::step(&mut exe, 3, &round, w1::in_event_id(10, 3), true);
    exe.created_at = Some(w1::FIRE_AT_BASE);
    exe.updated_at = Some(w1::FIRE_AT_BASE + 0.25);
    exe.extra.insert("engine_field".into(), json!({"kept": [1, 2]}));
    out.push(tagged(0, &exe.to_json()));
    out.push(tagged(
        0,
        r#"{"id":"x","definition_id":"d","status":"DONE","priority":9,"created_at":-1}"#,
    ));
    out.push(tagged(
        0,
        r#"{"id":"x","definition_id":"d","children":{"c":{"root_path":"r","key":"k"}}}"#,
    ));
    // Events, trace steps and spawn contexts as the step made them.
    for emit in &effects.emits {
        out.push(tagged(1, &serde_json::to_string(&emit.event).expect("an event")));
    }
    let mut event = Event::new("evt-1", "Checkout");
    event.created_time = Some("2026-01-01T12:00:00.123456Z".into());
    out.push(tagged(1, &serde_json::to_string(&event).expect("an event")));
    if let Some(step) = &effects.trace {
        out.push(tagged(2, &pyjson::dumps(step)));
    }
    for spawn in &effects.spawns {
        out.push(tagged(
            2,
            &serde_json::to_string(&spawn.context).expect("a context"),
        ));
    }
    out.push(tagged(2, r#"{"x": NaN, "y": [Infinity, -Infinity], "index": 3}"#));
    // Envelopes and records as reflexr stores them.
    let start = Timestamp::parse_json_text("2026-01-01T12:00:00.5+02:00").expect("a time");
    let storage = MemoryWorkspaceStorage::new(Arc::new(ManualClock::new(start)));
    let ws = WorkspaceRef::new("acme", "prod");
    let mut tx = storage.begin(&ws).expect("begin");
    let event = json!({"type": "oncall:service_error", "service": "auth", "severity": 8});
    let mut entry = execstore::workspace::Entry::new(
        "alert-7",
        json!({"kind": "source", "name": "monitor"}),
        event.as_object().cloned().unwrap_or_default(),
    );
    entry.traceparent = Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into());
    for envelope in tx.append(&[entry]).expect("append") {
        out.push(tagged(3, &envelope.to_json()));
    }
    tx.commit().expect("commit");
    let run = Run::pending(NewRun {
        id: "run-1".into(),
        rule: "escalate".into(),
        scope_key: "auth".into(),
        scope: json!({"service": "auth"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        fired_seq: 1,
        matched: vec![1],
        correlation_id: "alert-7".into(),
        depth: 0,
        now: start,
    })
    .expect("a run");
    out.push(tagged(4, &run.to_json()));
    out.push(tagged(
        4,
        &EvaluationError::new("escalate", 1, "KeyError: 'x'").to_json(),
    ));
    for text in [
        "2026-01-01T12:00:00Z",
        "2026-01-01T12:00:00.123456+02:00",
        "1970-01-01T00:00:00-23:59",
        "9999-12-31T23:59:59.999999Z",
        "2026-01-01 12:00:00",
    ] {
        out.push(tagged(5, text));
    }
    out
}

fn pyjson_seeds() -> Vec<Vec<u8>> {
    let mut exe = w1::execution(1);
    let effects = w1::step(&mut exe, 1, &w1::Round::new(10, 10), w1::in_event_id(10, 1), true);
    let mut out: Vec<Vec<u8>> = vec![
        pyjson::dumps(&exe).into_bytes(),
        exe.to_json().into_bytes(),
        pyjson::dumps(&effects.trace).into_bytes(),
        br#"{"a": [1, 2.0, "\u00e9\ud83d\ude00\u007f"], "b": {"c": null, "d": true}, "e": "q\"\n"}"#.to_vec(),
        br#"{"x": NaN, "s": "NaN \" Infinity", "n": [1, -Infinity]}"#.to_vec(),
        b"[1e16, 1.5e-05, 0.0001, -0.0, 5e-324, 1.7976931348623157e+308, 18446744073709551615]".to_vec(),
        br#""\ud800""#.to_vec(),
    ];
    let floats: Vec<u8> = [
        0.1f64,
        1e22,
        123456789012345.6,
        f64::MIN_POSITIVE,
        f64::NAN,
        f64::NEG_INFINITY,
    ]
    .iter()
    .flat_map(|f| f.to_le_bytes())
    .collect();
    out.push(floats);
    let value: Value = json!({"unicode": "ключ 键 🔑", "controls": "\u{1}\t\u{1f}", "deep": [[[[{}]]]]});
    out.push(pyjson::dumps(&value).into_bytes());
    out
}

/// Seeded random inputs, kept when they reach an answer not seen yet.
fn monitor_seeds() -> Vec<Vec<u8>> {
    let mut rng = fastrand::Rng::with_seed(23);
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for _ in 0..20_000 {
        let len = rng.usize(8..200);
        let data: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
        let Some(answer) = execstore_fuzz_targets::describe_monitor_input(&data) else {
            continue;
        };
        // The answer's shape: the method, the path's words (ids and garbage folded), the
        // status and error code.
        let shape: Vec<String> = answer
            .split([' ', '/'])
            .map(|w| {
                let word = w.len() < 14 && w.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-');
                if word || w.bytes().all(|b| b.is_ascii_digit()) {
                    w.to_owned()
                } else {
                    "*".to_owned()
                }
            })
            .collect();
        if seen.insert(shape.join(" ")) && out.len() < 150 {
            out.push(data);
        }
    }
    out
}

/// Seeded random call sequences of several lengths.
fn differential_seeds() -> Vec<Vec<u8>> {
    let mut rng = fastrand::Rng::with_seed(24);
    [64, 128, 256, 512, 1024, 2048, 4096]
        .iter()
        .flat_map(|&len| (0..3).map(move |k| (len, k)))
        .map(|(len, _)| (0..len).map(|_| rng.u8(..)).collect())
        .collect()
}
