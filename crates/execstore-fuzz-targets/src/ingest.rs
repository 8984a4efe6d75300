//! JSON text coming in: the parsers the surfaces and the adapters use today
//! (`Execution::from_json`, serde for an `Event` and a trace step or spawn context as the
//! Python and wasm surfaces read them, `pyjson::loads_object` as SQLite reads them back,
//! `Envelope::from_json`, the workspace log's records, `Timestamp::parse_json_text`).
//!
//! The first byte picks the parser, the rest is the text. A parse is a typed error or a
//! value that, written back, parses equal; an execution, event, trace step or spawn
//! context that parses is also stored, in memory and in SQLite alike: both refuse it with
//! a typed error, or both read back exactly what was stored.

use std::sync::OnceLock;

use execstore::workspace::{Envelope, EvaluationError, RuleProgress, Run, ScopeState, Timestamp};
use execstore::{
    executions::{Event, JsonObject},
    Effects, Execution, ExecutionStore, MemoryStore, StoreError,
};
use execstore_sqlite::{SqliteOptions, SqliteStore};

use crate::assert_refusal;

/// The parser picked by the first byte, on the rest as text.
pub fn ingest(data: &[u8]) {
    let Some((&kind, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    match kind % 6 {
        0 => execution(&text),
        1 => event(&text),
        2 => trace_and_context(&text),
        3 => envelope(&text),
        4 => records(&text),
        _ => timestamp(&text),
    }
}

/// The stores a parsed value is stored in (one of each for the whole run).
fn stores() -> [(&'static str, &'static dyn ExecutionStore); 2] {
    static STORES: OnceLock<(MemoryStore, SqliteStore)> = OnceLock::new();
    let (memory, sqlite) = STORES.get_or_init(|| {
        let memory = MemoryStore::new();
        let sqlite = SqliteStore::open_in_memory(SqliteOptions::new()).expect("SQLite in memory opens");
        for store in [&memory as &dyn ExecutionStore, &sqlite] {
            store
                .save(&mut Execution::new(HOST, "ingest"))
                .expect("the host execution saves");
        }
        (memory, sqlite)
    });
    [("memory", memory), ("sqlite", sqlite)]
}

/// The execution whose commits carry the events, trace steps and spawns under test.
const HOST: &str = "ingest-host";

fn execution(text: &str) {
    let exe = match Execution::from_json(text) {
        Ok(exe) => exe,
        Err(e) => return assert_refusal(&e, "Execution::from_json"),
    };
    let json = exe.to_json();
    let back = Execution::from_json(&json).unwrap_or_else(|e| panic!("to_json wrote {json:?}: {e}"));
    assert_eq!(back, exe, "an execution written back parses equal");
    assert_eq!(back.to_json(), json, "and writes the same text again");
    if exe.id == HOST {
        return;
    }
    let mut outcomes = Vec::new();
    for (name, store) in stores() {
        let mut stored = exe.clone();
        stored.version = 0;
        let outcome = store.save(&mut stored);
        match &outcome {
            Ok(()) => {
                let loaded = store.load(&stored.id).expect("a stored execution loads");
                assert_eq!(
                    loaded.as_ref(),
                    Some(&stored),
                    "{name}: an execution loads as saved"
                );
                assert_eq!(
                    store.purge(&stored.id, stored.version).ok(),
                    Some(true),
                    "{name}: purge"
                );
            }
            Err(e) => assert_refusal(e, name),
        }
        outcomes.push(outcome.map_err(|e| e.code()));
    }
    assert_eq!(
        outcomes[0], outcomes[1],
        "memory and SQLite take the same executions"
    );
}

/// A store's name, the store, and what a commit on it returned.
type Committed = (
    &'static str,
    &'static dyn ExecutionStore,
    Result<Vec<i64>, StoreError>,
);

/// Commits `effects` on the host execution of each store; the outcomes, by store.
fn commit_on_host(effects: &Effects) -> Vec<Committed> {
    stores()
        .into_iter()
        .map(|(name, store)| {
            let mut host = store.load(HOST).ok().flatten().expect("the host execution");
            let outcome = store.commit(&mut host, effects);
            if let Err(e) = &outcome {
                assert_refusal(e, name);
            }
            (name, store, outcome)
        })
        .collect()
}

fn same_outcomes(outcomes: &[Committed]) {
    let codes: Vec<Result<usize, &str>> = outcomes
        .iter()
        .map(|(_, _, o)| o.as_ref().map(Vec::len).map_err(|e| e.code()))
        .collect();
    assert_eq!(codes[0], codes[1], "memory and SQLite take the same effects");
}

fn event(text: &str) {
    let event: Event = match serde_json::from_str(text) {
        Ok(event) => event,
        Err(_) => return,
    };
    let json = serde_json::to_string(&event).expect("an event serializes");
    assert_eq!(
        serde_json::from_str::<Event>(&json).ok().as_ref(),
        Some(&event),
        "{json}"
    );
    let outcomes = commit_on_host(&Effects::new().emit(Some(HOST), event.clone()));
    same_outcomes(&outcomes);
    for (name, store, outcome) in outcomes {
        let Ok(seqs) = outcome else { continue };
        let seq = seqs[0];
        let pending = store.pending_outbox(Some(seq - 1), 1).expect("the outbox reads");
        assert_eq!(pending.len(), 1, "{name}: the emitted entry is pending");
        assert_eq!(pending[0].seq, seq);
        assert_eq!(pending[0].event, event, "{name}: the event reads back as emitted");
        store.ack_outbox(seq).expect("the entry acks");
    }
}

fn trace_and_context(text: &str) {
    // The surfaces parse with serde_json; SQLite reads its rows back with pyjson::loads.
    let plain = serde_json::from_str::<JsonObject>(text).ok();
    let stored_reader = execstore::kit::pyjson::loads_object(text).ok();
    if let Some(object) = &plain {
        assert_eq!(
            stored_reader.as_ref(),
            Some(object),
            "loads_object reads JSON as serde_json does"
        );
    }
    let Some(object) = plain.or(stored_reader) else {
        return;
    };
    let effects =
        Effects::new()
            .trace(object.clone())
            .spawn(format!("{HOST}:child"), "root.work", object.clone());
    let outcomes = commit_on_host(&effects);
    same_outcomes(&outcomes);
    let without_index = |mut step: JsonObject| {
        step.shift_remove("index");
        step
    };
    for (name, store, outcome) in outcomes {
        if outcome.is_err() {
            continue;
        }
        let steps = store.read_trace(HOST).expect("the trace reads");
        let last = steps.last().cloned().expect("the step was appended");
        assert_eq!(
            without_index(last),
            without_index(object.clone()),
            "{name}: the trace step reads back"
        );
        let spawns = store.pending_spawns(None, 10).expect("the spawns read");
        assert_eq!(spawns.len(), 1, "{name}: one spawn pending");
        assert_eq!(spawns[0].context, object, "{name}: the spawn context reads back");
        store.ack_spawn(spawns[0].seq).expect("the spawn acks");
    }
}

fn envelope(text: &str) {
    let env = match Envelope::from_json(text) {
        Ok(env) => env,
        Err(e) => return assert_refusal(&e, "Envelope::from_json"),
    };
    let json = env.to_json();
    let back = Envelope::from_json(&json).unwrap_or_else(|e| panic!("to_json wrote {json:?}: {e}"));
    assert_eq!(back, env, "an envelope written back parses equal");
    assert_eq!(
        back.ts.to_json_text(),
        env.ts.to_json_text(),
        "with the same time text"
    );
    assert_eq!(back.to_json(), json, "and writes the same text again");
    let from_value = Envelope::from_value(&env.to_value()).expect("an envelope's value parses");
    assert_eq!(from_value, env);
}

fn records(text: &str) {
    match Run::from_json(text) {
        Ok(run) => {
            let json = run.to_json();
            let back = Run::from_json(&json).unwrap_or_else(|e| panic!("to_json wrote {json:?}: {e}"));
            assert_eq!(back, run, "a run written back parses equal");
            assert_eq!(back.to_json(), json);
            assert_eq!(Run::from_doc(run.doc().clone()).ok().as_ref(), Some(&run));
        }
        Err(e) => assert_refusal(&e, "Run::from_json"),
    }
    match EvaluationError::from_json(text) {
        Ok(dead) => {
            let back =
                EvaluationError::from_json(&dead.to_json()).expect("a dead letter written back parses");
            assert_eq!(back, dead);
        }
        Err(e) => assert_refusal(&e, "EvaluationError::from_json"),
    }
    match RuleProgress::from_json(text) {
        Ok(doc) => assert_eq!(RuleProgress::from_json(&doc.to_json()).ok(), Some(doc)),
        Err(e) => assert_refusal(&e, "RuleProgress::from_json"),
    }
    match ScopeState::from_json(text) {
        Ok(doc) => assert_eq!(ScopeState::from_json(&doc.to_json()).ok(), Some(doc)),
        Err(e) => assert_refusal(&e, "ScopeState::from_json"),
    }
}

fn timestamp(text: &str) {
    let ts = match Timestamp::parse_json_text(text) {
        Ok(ts) => ts,
        Err(e) => return assert_refusal(&e, "Timestamp::parse_json_text"),
    };
    let json = ts.to_json_text();
    let back =
        Timestamp::parse_json_text(&json).unwrap_or_else(|e| panic!("{text:?} written as {json:?}: {e}"));
    assert_eq!(
        (back.micros(), back.offset_seconds()),
        (ts.micros(), ts.offset_seconds()),
        "{text:?} written as {json:?}"
    );
    assert_eq!(back.to_json_text(), json);
    let sqlite = ts.to_sqlite_text();
    let from_sqlite = Timestamp::parse_sqlite_text(&sqlite)
        .unwrap_or_else(|e| panic!("{text:?} stored as {sqlite:?}: {e}"));
    assert_eq!(from_sqlite.micros(), ts.micros(), "{text:?} stored as {sqlite:?}");
}
