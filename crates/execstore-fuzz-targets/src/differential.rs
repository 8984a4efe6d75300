//! The same calls on the memory store and on SQLite (in memory): the fuzzer's bytes are a
//! sequence of `ExecutionStore` calls on a few executions (saves and commits at the right
//! version or a stale one, with effects of every kind; batches; loads and dedupe checks;
//! listings with filters and cursors; outbox, spawns and timers read, acked, relayed and
//! swept; traces; purges; counts). Each call gets the same result from both, or an error
//! of the same kind (and, for bad input, the same field); the caller's execution ends at
//! the same version; and at the end both hold the same executions, entries, timers and
//! traces.

use std::fmt::Debug;

use arbitrary::{Result, Unstructured};
use execstore::{
    executions::{BatchItem, DueTimer, Event, JsonObject, ListQuery, Status},
    Effects, Execution, ExecutionStore, MemoryStore, StoreError,
};
use execstore_sqlite::{SqliteOptions, SqliteStore};
use serde_json::{json, Value};

use crate::pools::{self, pick_str, pick_time};

/// At most this many calls per input, so one input stays quick.
const MAX_CALLS: usize = 64;

/// The calls the bytes spell, on both stores, compared call by call and at the end.
pub fn differential(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let memory = MemoryStore::new();
    let sqlite = SqliteStore::open_in_memory(SqliteOptions::new()).expect("SQLite in memory opens");
    assert_eq!(memory.trace_max(), sqlite.trace_max(), "the same trace ring");
    let mut calls = 0;
    while calls < MAX_CALLS && !u.is_empty() {
        let Ok(call) = Call::arbitrary(&mut u, &memory) else {
            break;
        };
        calls += 1;
        let context = format!("call {calls}: {call:?}");
        let a = call.apply(&memory);
        let b = call.apply(&sqlite);
        if verbose() {
            eprintln!("{context}\n  memory: {a:?}\n  sqlite: {b:?}");
        }
        same(&a, &b, &context);
    }
    let a = everything(&memory);
    let b = everything(&sqlite);
    assert_eq!(a, b, "memory and SQLite hold the same after {calls} calls");
}

/// Whether to print every call and both outcomes (`EXECSTORE_FUZZ_VERBOSE=1`), to read a
/// finding's story.
fn verbose() -> bool {
    static VERBOSE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *VERBOSE.get_or_init(|| std::env::var_os("EXECSTORE_FUZZ_VERBOSE").is_some_and(|v| v == "1"))
}

/// A call's outcome, comparable across stores: a value's `Debug` text or an error's kind.
#[derive(Debug, PartialEq)]
enum Outcome {
    Value(String),
    Error {
        code: &'static str,
        field: Option<String>,
    },
}

fn outcome<T: Debug>(result: execstore::Result<T>) -> Outcome {
    match result {
        Ok(v) => Outcome::Value(format!("{v:?}")),
        Err(e) => {
            assert!(
                !matches!(e, StoreError::Backend { .. } | StoreError::Corrupt { .. }),
                "a call broke the store: {e}"
            );
            let field = match &e {
                StoreError::InvalidInput { field, .. } => Some(field.clone()),
                _ => None,
            };
            Outcome::Error {
                code: e.code(),
                field,
            }
        }
    }
}

fn same(a: &Outcome, b: &Outcome, context: &str) {
    assert_eq!(a, b, "memory (left) and SQLite (right) differ at {context}");
}

#[derive(Debug)]
enum Call {
    /// `save`, or `commit` with effects, of an execution at `version` (the stored one plus
    /// a skew, which is usually 0).
    Commit {
        execution: Box<Execution>,
        effects: Box<Effects>,
    },
    Batch(Vec<BatchItem>),
    Load(String),
    LoadForEvent(String, String),
    IsProcessed(String, String),
    List(Box<ListQuery>),
    PendingOutbox(Option<i64>, usize),
    AckOutbox(i64),
    AckOutboxMany(Vec<i64>),
    PendingSpawns(Option<i64>, usize),
    AckSpawn(i64),
    DueTimers(f64, Option<DueTimer>, usize),
    DeleteTimer(String, String, f64),
    ReadTrace(String),
    AppendTrace(String, JsonObject),
    IdsWithPrefix(String),
    Purge(String, i64),
    CountByStatus(ListQuery),
    RelayOutbox(usize, u8),
    RelaySpawns(usize, u8),
    SweepTimers(f64, usize),
}

impl Call {
    /// A call read from `u`; versions are taken relative to what `model` holds.
    fn arbitrary(u: &mut Unstructured<'_>, model: &MemoryStore) -> Result<Call> {
        Ok(match u.int_in_range(0..=24)? {
            0..=6 => {
                let execution = execution(u, model)?;
                let effects = effects(u)?;
                Call::Commit {
                    execution: Box::new(execution),
                    effects: Box::new(effects),
                }
            }
            7 => {
                let n = u.int_in_range(0..=4)?;
                let mut items: Vec<BatchItem> = Vec::new();
                for _ in 0..n {
                    let exe = execution(u, model)?;
                    items.push(BatchItem::new(exe, effects(u)?));
                }
                Call::Batch(items)
            }
            8 => Call::Load(pick_str(u, pools::IDS)?),
            9 => Call::LoadForEvent(pick_str(u, pools::IDS)?, pick_str(u, pools::EVENT_IDS)?),
            10 => Call::IsProcessed(pick_str(u, pools::IDS)?, pick_str(u, pools::EVENT_IDS)?),
            11 | 12 => Call::List(Box::new(list_query(u)?)),
            13 => Call::PendingOutbox(after(u)?, limit(u)?),
            14 => Call::AckOutbox(seq(u)?),
            15 => Call::AckOutboxMany(
                (0..u.int_in_range(0..=4)?)
                    .map(|_| seq(u))
                    .collect::<Result<_>>()?,
            ),
            16 => Call::PendingSpawns(after(u)?, limit(u)?),
            17 => Call::AckSpawn(seq(u)?),
            18 => {
                let after = if u.arbitrary()? {
                    Some(DueTimer {
                        execution_id: pick_str(u, pools::IDS)?,
                        path: pick_str(u, pools::PATHS)?,
                        fire_at: pick_time(u)?,
                    })
                } else {
                    None
                };
                Call::DueTimers(pick_time(u)?, after, limit(u)?)
            }
            19 => Call::DeleteTimer(
                pick_str(u, pools::IDS)?,
                pick_str(u, pools::PATHS)?,
                pick_time(u)?,
            ),
            20 => {
                if u.arbitrary()? {
                    Call::ReadTrace(pick_str(u, pools::IDS)?)
                } else {
                    Call::AppendTrace(pick_str(u, pools::IDS)?, step(u)?)
                }
            }
            21 => Call::IdsWithPrefix(pick_str(u, &["", "0fb6", "order-1", "order", "Order", "é", "z"])?),
            22 => {
                let id = pick_str(u, pools::IDS)?;
                let stored = model.load(&id).ok().flatten().map_or(0, |e| e.version);
                Call::Purge(id, stored + i64::from(u.int_in_range(-1i8..=1)?))
            }
            23 => {
                let mut query = ListQuery::new().roots_only(u.arbitrary()?);
                if u.arbitrary()? {
                    query = query.definition(pick_str(u, pools::DEFINITIONS)?);
                }
                Call::CountByStatus(query)
            }
            _ => match u.int_in_range(0..=2)? {
                0 => Call::RelayOutbox(limit(u)?, u.arbitrary()?),
                1 => Call::RelaySpawns(limit(u)?, u.arbitrary()?),
                _ => Call::SweepTimers(pick_time(u)?, limit(u)?),
            },
        })
    }

    fn apply(&self, store: &dyn ExecutionStore) -> Outcome {
        match self {
            Call::Commit { execution, effects } => {
                let mut exe = (**execution).clone();
                let result = if effects.emits.is_empty()
                    && effects.timers.is_empty()
                    && effects.spawns.is_empty()
                    && effects.trace.is_none()
                    && effects.processed_event_id.is_none()
                {
                    store.save(&mut exe).map(|()| Vec::new())
                } else {
                    store.commit(&mut exe, effects)
                };
                // The caller's execution ends at the version the outcome says.
                outcome(result.map(|seqs| (seqs, exe.version)))
            }
            Call::Batch(items) => {
                let mut items = items.clone();
                let result = store.commit_batch(&mut items).map(|outcomes| {
                    let outcomes: Vec<Outcome> = outcomes.into_iter().map(outcome).collect();
                    let versions: Vec<i64> = items.iter().map(|i| i.execution.version).collect();
                    (outcomes, versions)
                });
                outcome(result)
            }
            Call::Load(id) => outcome(store.load(id)),
            Call::LoadForEvent(id, event) => outcome(store.load_for_event(id, event)),
            Call::IsProcessed(id, event) => outcome(store.is_processed(id, event)),
            Call::List(query) => outcome(store.list_executions(query)),
            Call::PendingOutbox(after, limit) => outcome(store.pending_outbox(*after, *limit)),
            Call::AckOutbox(seq) => outcome(store.ack_outbox(*seq)),
            Call::AckOutboxMany(seqs) => outcome(store.ack_outbox_many(seqs)),
            Call::PendingSpawns(after, limit) => outcome(store.pending_spawns(*after, *limit)),
            Call::AckSpawn(seq) => outcome(store.ack_spawn(*seq)),
            Call::DueTimers(now, after, limit) => outcome(store.due_timers(*now, after.as_ref(), *limit)),
            Call::DeleteTimer(id, path, fire_at) => outcome(store.delete_timer(id, path, *fire_at)),
            Call::ReadTrace(id) => outcome(store.read_trace(id)),
            Call::AppendTrace(id, step) => outcome(store.append_trace(id, step)),
            Call::IdsWithPrefix(prefix) => outcome(store.ids_with_prefix(prefix)),
            Call::Purge(id, version) => outcome(store.purge(id, *version)),
            Call::CountByStatus(query) => outcome(store.count_by_status(query)),
            Call::RelayOutbox(limit, pattern) => {
                let mut offered = Vec::new();
                let result = store.relay_outbox(*limit, &mut |entries| {
                    offered.extend(entries.iter().cloned());
                    chosen(entries.iter().map(|e| e.seq), *pattern)
                });
                outcome(result.map(|n| (n, offered)))
            }
            Call::RelaySpawns(limit, pattern) => {
                let mut offered = Vec::new();
                let result = store.relay_spawns(*limit, &mut |entries| {
                    offered.extend(entries.iter().cloned());
                    chosen(entries.iter().map(|e| e.seq), *pattern)
                });
                outcome(result.map(|n| (n, offered)))
            }
            Call::SweepTimers(now, limit) => {
                let mut offered = Vec::new();
                let result = store.sweep_timers(*now, *limit, &mut |timers| {
                    offered.extend(timers.iter().cloned());
                });
                outcome(result.map(|n| (n, offered)))
            }
        }
    }
}

/// The seqs a relay callback acks: those whose bit in `pattern` is set (cycling), and a
/// seq it was not given when the top bit is set.
fn chosen(seqs: impl Iterator<Item = i64>, pattern: u8) -> Vec<i64> {
    let mut out: Vec<i64> = seqs
        .enumerate()
        .filter(|(i, _)| pattern & (1 << (i % 7)) != 0)
        .map(|(_, s)| s)
        .collect();
    if pattern & 0x80 != 0 {
        out.push(1_000_000);
    }
    out
}

fn execution(u: &mut Unstructured<'_>, model: &MemoryStore) -> Result<Execution> {
    let id = pick_str(u, pools::IDS)?;
    let stored = model.load(&id).ok().flatten();
    let mut exe = match (&stored, u.ratio(7, 8)?) {
        (Some(stored), true) => stored.clone(),
        // A fresh document for a stored execution, of any definition: an update may move
        // it to another one.
        (Some(_), false) => Execution::new(id.clone(), pick_str(u, pools::DEFINITIONS)?),
        (None, _) => Execution::new(id.clone(), pick_str(u, pools::DEFINITIONS)?),
    };
    let skew = if u.ratio(7, 8)? {
        0
    } else {
        u.int_in_range(-2i8..=2)?
    };
    exe.version = stored.as_ref().map_or(0, |s| s.version) + i64::from(skew);
    if u.arbitrary()? {
        exe.status = *u.choose(&Status::ALL)?;
    }
    if u.arbitrary()? {
        exe.active_path = Some(pick_str(u, pools::PATHS)?);
    }
    if u.ratio(1, 4)? {
        exe.parent_id = Some(pick_str(u, pools::IDS)?);
    }
    if u.ratio(1, 4)? {
        exe.priority = u.int_in_range(-1..=5)?;
    }
    for slot in [&mut exe.created_at, &mut exe.updated_at, &mut exe.finished_at] {
        if u.ratio(1, 3)? {
            *slot = if u.ratio(1, 8)? { None } else { Some(pick_time(u)?) };
        }
    }
    if u.ratio(1, 4)? {
        exe.context
            .insert(pick_str(u, &["counter", "f01", "é"])?, value(u)?);
    }
    exe.processed_events += i64::from(u.int_in_range(0u8..=1)?);
    Ok(exe)
}

fn effects(u: &mut Unstructured<'_>) -> Result<Effects> {
    let mut fx = Effects::new();
    for _ in 0..u.int_in_range(0..=2)? {
        let target = if u.arbitrary()? {
            Some(pick_str(u, pools::IDS)?)
        } else {
            None
        };
        let mut event = Event::new(
            pick_str(u, pools::EVENT_IDS)?,
            pick_str(u, &["Charge", "Checkout", "Tick"])?,
        );
        if u.ratio(1, 4)? {
            event.data.insert("amount".into(), value(u)?);
        }
        if u.ratio(1, 8)? {
            event.created_time = Some(pick_str(
                u,
                &[
                    "2026-01-01T12:00:00Z",
                    "2026-01-01T12:00:00.123456+02:00",
                    "yesterday",
                ],
            )?);
        }
        fx = fx.emit(target.as_deref(), event);
    }
    if u.arbitrary()? {
        fx = fx.processed(pick_str(u, pools::EVENT_IDS)?);
    }
    for _ in 0..u.int_in_range(0..=2)? {
        fx = if u.arbitrary()? {
            fx.schedule(pick_str(u, pools::PATHS)?, pick_time(u)?)
        } else {
            fx.cancel(pick_str(u, pools::PATHS)?)
        };
    }
    if u.ratio(1, 4)? {
        let mut context = JsonObject::new();
        context.insert("k".into(), value(u)?);
        fx = fx.spawn(pick_str(u, pools::IDS)?, pick_str(u, pools::PATHS)?, context);
    }
    if u.ratio(1, 3)? {
        fx = fx.trace(step(u)?);
    }
    Ok(fx)
}

fn step(u: &mut Unstructured<'_>) -> Result<JsonObject> {
    let mut step = JsonObject::new();
    step.insert("event_kind".into(), json!(pick_str(u, &["Checkout", "Charge"])?));
    step.insert("to_path".into(), json!(pick_str(u, pools::PATHS)?));
    if u.arbitrary()? {
        step.insert(pick_str(u, &["index", "timestamp", "actions"])?, value(u)?);
    }
    Ok(step)
}

/// A JSON value: the kinds a context or a payload holds, edge numbers among them.
fn value(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=7)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => json!(u.arbitrary::<i64>()?),
        3 => json!(u.arbitrary::<u64>()?),
        4 => json!(u.arbitrary::<f64>()?),
        5 => json!(u.arbitrary::<String>()?),
        6 => json!([1, 2.5, "x", null]),
        _ => json!({"nested": {"a": [true]}}),
    })
}

fn list_query(u: &mut Unstructured<'_>) -> Result<ListQuery> {
    let mut q = ListQuery::new().limit(limit(u)?);
    if u.ratio(1, 3)? {
        let n = u.int_in_range(0..=3)?;
        q = q.status(
            (0..n)
                .map(|_| u.choose(&Status::ALL).copied())
                .collect::<Result<Vec<_>>>()?,
        );
    }
    if u.ratio(1, 4)? {
        q = q.definition(pick_str(u, pools::DEFINITIONS)?);
    }
    q = q.roots_only(u.ratio(1, 4)?);
    if u.ratio(1, 3)? {
        q = q.cursor(Some(if u.ratio(3, 4)? {
            execstore::executions::encode_cursor(&pick_str(u, pools::IDS)?)
        } else {
            u.arbitrary()?
        }));
    }
    let window = |u: &mut Unstructured<'_>| -> Result<(Option<f64>, Option<f64>)> {
        Ok((
            if u.arbitrary()? { Some(pick_time(u)?) } else { None },
            if u.arbitrary()? { Some(pick_time(u)?) } else { None },
        ))
    };
    if u.ratio(1, 4)? {
        let (a, b) = window(u)?;
        q = q.created_between(a, b);
    }
    if u.ratio(1, 4)? {
        let (a, b) = window(u)?;
        q = q.updated_between(a, b);
    }
    if u.ratio(1, 4)? {
        let (a, b) = window(u)?;
        q = q.finished_between(a, b);
    }
    if u.ratio(1, 4)? {
        q = q.search(pick_str(
            u,
            &["order", "order.checkout", "0fb6", "root.work", "é", ""],
        )?);
    }
    Ok(q)
}

fn after(u: &mut Unstructured<'_>) -> Result<Option<i64>> {
    Ok(if u.arbitrary()? {
        Some(u.int_in_range(-1..=12)?)
    } else {
        None
    })
}

fn limit(u: &mut Unstructured<'_>) -> Result<usize> {
    Ok(match u.int_in_range(0..=9)? {
        0 => 0,
        9 => 10_001,
        n => n,
    })
}

fn seq(u: &mut Unstructured<'_>) -> Result<i64> {
    u.int_in_range(-1..=12)
}

/// Everything a store holds, as comparable text.
fn everything(store: &dyn ExecutionStore) -> String {
    let mut out = String::new();
    let mut ids = Vec::new();
    for page in execstore::executions::paging::execution_pages(store, ListQuery::new().limit(7)) {
        ids.extend(page.expect("the store lists").items);
    }
    out += &format!("{ids:?}\n");
    for s in &ids {
        out += &format!("{:?}\n{:?}\n", store.load(&s.id), store.read_trace(&s.id));
    }
    for id in pools::IDS {
        out += &format!("{:?}\n", store.read_trace(id).map_err(|e| e.code()));
    }
    out += &format!("{:?}\n", store.pending_outbox(None, 10_000));
    out += &format!("{:?}\n", store.pending_spawns(None, 10_000));
    out += &format!(
        "{:?}\n",
        store.due_timers(execstore::kit::validate::ALL_TIMERS, None, 10_000)
    );
    out
}
