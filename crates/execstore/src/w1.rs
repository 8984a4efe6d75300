//! Workload W1's data (`shared/bench/WORKLOAD.md` in the benchmark kit, "W1"): the
//! executions it creates and the step of each round, byte for byte as the spec gives them, so
//! `execstore bench` drives W1 exactly and micro-benchmarks build the same steps. Pure data: no
//! store, clock or randomness (ids come from [`splitmix64`]).

use serde_json::Value;

use crate::{
    executions::{Event, JsonObject, Status, TraceStep},
    Effects, Execution,
};

/// Execution ids pass through this (and nothing else is pseudo-random).
pub fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// `exe_id(i)`: 32 lower-case hex digits, like a uuid4 hex.
pub fn exe_id(seed: u32, i: usize) -> String {
    let base = u64::from(seed) << 32;
    let i = i as u64;
    let hi = splitmix64(base.wrapping_add(i.wrapping_mul(2)));
    let lo = splitmix64(base.wrapping_add(i.wrapping_mul(2)).wrapping_add(1));
    format!("{hi:016x}{lo:016x}")
}

/// `ctx_value(i, j, g)`: a 21-character unit twice.
pub fn ctx_value(i: usize, j: usize, g: u32) -> String {
    format!("e{i:08}-k{j:02}-g{g:05}-").repeat(2)
}

/// The id of the event round `r` delivers to execution `i`.
pub fn in_event_id(r: u32, i: usize) -> String {
    format!("{r:08x}{i:016x}00000000")
}

/// The id of the event round `r`'s step on execution `i` emits.
pub fn out_event_id(r: u32, i: usize) -> String {
    format!("{r:08x}{i:016x}00000001")
}

/// How many definitions the executions spread over.
pub const DEFINITIONS: usize = 5;
/// The context keys after `counter`: f01 ..= f19.
pub const CTX_KEYS: [&str; 19] = [
    "f01", "f02", "f03", "f04", "f05", "f06", "f07", "f08", "f09", "f10", "f11", "f12", "f13", "f14", "f15",
    "f16", "f17", "f18", "f19",
];
/// The one timer path a step schedules or cancels.
pub const TIMER_PATH: &str = "root.work.timeout";
/// Timer `fire_at` times start here.
pub const FIRE_AT_BASE: f64 = 1_700_000_000.0;

/// Execution `i` as phase 0 saves it (version 0; stored at 1): `ids` are every execution's
/// id ([`exe_id`]), as every fifth execution's parent is the one before it.
pub fn initial_execution(ids: &[String], i: usize) -> Execution {
    let mut exe = execution_with_id(ids[i].clone(), i);
    if i % 5 == 4 {
        exe.parent_id = Some(ids[i - 1].clone());
    }
    exe
}

/// Execution `i` as W1 creates it, on its own (no parent): for micro-benchmarks.
pub fn execution(i: usize) -> Execution {
    execution_with_id(exe_id(1, i), i)
}

fn execution_with_id(id: String, i: usize) -> Execution {
    let d = (i / 5) % DEFINITIONS;
    let mut exe = Execution::new(id, format!("def-{d}"));
    exe.definition_fqn = Some(format!("bench.definitions.Workflow{d}"));
    exe.status = Status::Running;
    exe.active_path = Some("root.work.s00".to_owned());
    let mut context = JsonObject::new();
    context.insert("counter".to_owned(), Value::from(0));
    for (j, key) in CTX_KEYS.iter().enumerate() {
        context.insert((*key).to_owned(), Value::String(ctx_value(i, j + 1, 0)));
    }
    exe.context = context;
    exe
}

/// What every step of round `r` shares, made once per round.
pub struct Round {
    /// The round, 1-based.
    pub r: u32,
    last: bool,
    new_path: String,
    history_key: String,
    /// The three context keys the round updates, in update order: (j, "fJJ").
    updates: [(usize, &'static str); 3],
    schedule: bool,
    spawn: bool,
    /// The trace step's `actions`.
    actions: Value,
}

impl Round {
    /// Round `r` of `k` (the last one finishes every odd execution).
    pub fn new(r: u32, k: u32) -> Round {
        let update = |t: usize| {
            let j = (3 * (r as usize - 1) + t) % CTX_KEYS.len() + 1;
            (j, CTX_KEYS[j - 1])
        };
        let schedule = r.is_multiple_of(2);
        let timer = if schedule {
            "timer:schedule"
        } else {
            "timer:cancel"
        };
        Round {
            r,
            last: r == k,
            new_path: format!("root.work.s{r:02}"),
            history_key: format!("root.work.h{r:02}"),
            updates: [update(0), update(1), update(2)],
            schedule,
            spawn: r.is_multiple_of(10),
            actions: Value::Array(vec!["assign".into(), "emit:progress".into(), timer.into()]),
        }
    }
}

/// Step 3 and the arguments of step 4 of phase 1: mutates `exe` for `round` and returns the
/// effects to commit with it.
pub fn step(exe: &mut Execution, i: usize, round: &Round, in_id: String, trace: bool) -> Effects {
    let r = round.r;
    let new_path = &round.new_path;
    let old_path = exe.active_path.replace(new_path.clone());
    exe.history
        .insert(round.history_key.clone(), Value::String(new_path.clone()));
    let mut context_out = JsonObject::new();
    for &(j, key) in &round.updates {
        let value = ctx_value(i, j, r);
        if trace {
            context_out.insert(key.to_owned(), Value::String(value.clone()));
        }
        // An existing key keeps its place in the object.
        match exe.context.get_mut(key) {
            Some(slot) => *slot = Value::String(value),
            None => {
                exe.context.insert(key.to_owned(), Value::String(value));
            }
        }
    }
    let counter = exe.context.get("counter").and_then(Value::as_i64).unwrap_or(0) + 1;
    match exe.context.get_mut("counter") {
        Some(slot) => *slot = Value::from(counter),
        None => {
            exe.context.insert("counter".to_owned(), Value::from(counter));
        }
    }
    exe.processed_events += 1;
    if round.last && i % 2 == 1 {
        exe.status = Status::Done;
    }

    let mut data = JsonObject::new();
    data.insert("round".to_owned(), Value::from(r));
    data.insert("counter".to_owned(), Value::from(counter));
    data.insert("path".to_owned(), Value::String(new_path.clone()));
    let event = Event::new(out_event_id(r, i), "progress").with_data(data);
    let mut effects = Effects::new().emit(Some(&exe.id), event).processed(in_id);
    effects = if round.schedule {
        let fire_at = FIRE_AT_BASE + 1000.0 * f64::from(r) + (i % 1000) as f64;
        effects.schedule(TIMER_PATH, fire_at)
    } else {
        effects.cancel(TIMER_PATH)
    };
    if round.spawn {
        let mut context = JsonObject::new();
        context.insert("parent_id".to_owned(), Value::String(exe.id.clone()));
        context.insert("round".to_owned(), Value::from(r));
        effects = effects.spawn(format!("{}-r{r:04}", exe.id), "root.fork.region", context);
    }
    if trace {
        let old_path = old_path.as_deref().unwrap_or("None");
        let mut entry = TraceStep::new();
        entry.insert("event".to_owned(), Value::from("tick"));
        entry.insert("round".to_owned(), Value::from(r));
        entry.insert(
            "transition".to_owned(),
            Value::String(format!("{old_path} -> {new_path}")),
        );
        entry.insert("actions".to_owned(), round.actions.clone());
        entry.insert("context_out".to_owned(), Value::Object(context_out));
        effects = effects.trace(entry);
    }
    effects
}

/// A W1 step for micro-benchmarks that run any number of rounds: call `n` (from 1) on
/// execution `i` is W1's round `(n - 1) % 20 + 1` (so the document keeps W1's size however many
/// run, and nothing finishes), delivering an event id unique to `n`.
pub fn cycling_step(exe: &mut Execution, i: usize, n: u64, trace: bool) -> Effects {
    let r = ((n.max(1) - 1) % 20 + 1) as u32;
    let round = Round::new(r, u32::MAX);
    step(exe, i, &round, format!("{n:016x}{i:016x}"), trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_match_the_spec() {
        assert_eq!(exe_id(1, 0), "c42c5a1aa3820138204391a6fd59956f");
        assert_eq!(exe_id(1, 1), "b3703ad894507022a2042dba6cbcaf9b");
        assert_eq!(exe_id(1, 4), "82c9c08ce3ca26346e8c9e5985618bdb");
        assert_eq!(exe_id(1, 7), "72661b5d03ef09926df0d1dd0a5da878");
        assert_eq!(ctx_value(0, 1, 0), "e00000000-k01-g00000-e00000000-k01-g00000-");
        assert_eq!(in_event_id(10, 7), "0000000a000000000000000700000000");
        assert_eq!(out_event_id(1, 0), "00000001000000000000000000000001");
    }

    #[test]
    fn execution_0_as_saved_matches_the_spec() {
        let ids: Vec<String> = (0..5).map(|i| exe_id(1, i)).collect();
        let mut exe = initial_execution(&ids, 0);
        exe.version = 1;
        let json = exe.to_json();
        assert_eq!(json.len(), 1406);
        assert!(json.starts_with(
            r#"{"id":"c42c5a1aa3820138204391a6fd59956f","definition_id":"def-0","definition_fqn":"bench.definitions.Workflow0","root_path":"","status":"RUNNING","outcome":null,"error":null,"active_path":"root.work.s00","history":{},"context":{"counter":0,"f01":"e00000000-k01-g00000-e00000000-k01-g00000-","#
        ));
        assert!(json.ends_with(
            r#""processed_events":0,"version":1,"priority":0,"parent_id":null,"child_id":null,"deferred":[],"children":{},"invoke_seq":{},"created_at":null,"updated_at":null,"finished_at":null,"expires_at":null}"#
        ));
        let child = initial_execution(&ids, 4);
        assert_eq!(
            child.parent_id.as_deref(),
            Some("15b16f97d4deb5bf27cf1707c6e1d01f")
        );
    }

    #[test]
    fn step_builds_the_spec_effects() {
        let ids: Vec<String> = (0..8).map(|i| exe_id(1, i)).collect();
        let mut exe = initial_execution(&ids, 0);
        let effects = step(&mut exe, 0, &Round::new(1, 20), in_event_id(1, 0), true);
        let p = crate::kit::validate::prepare_commit(&mut exe, &effects).unwrap();
        assert_eq!(
            p.emits[0].1,
            r#"{"id":"00000001000000000000000000000001","kind":"progress","created_time":null,"received_time":null,"data":{"round":1,"counter":1,"path":"root.work.s01"}}"#
        );
        let trace = p.trace.unwrap();
        assert_eq!(trace.len(), 309);
        assert_eq!(
            trace,
            r#"{"event": "tick", "round": 1, "transition": "root.work.s00 -> root.work.s01", "actions": ["assign", "emit:progress", "timer:cancel"], "context_out": {"f01": "e00000000-k01-g00001-e00000000-k01-g00001-", "f02": "e00000000-k02-g00001-e00000000-k02-g00001-", "f03": "e00000000-k03-g00001-e00000000-k03-g00001-"}}"#
        );

        let mut exe = initial_execution(&ids, 7);
        let effects = step(&mut exe, 7, &Round::new(10, 20), in_event_id(10, 7), false);
        assert_eq!(
            effects.timers,
            [crate::executions::TimerOp::Schedule {
                path: TIMER_PATH.into(),
                fire_at: 1_700_010_007.0
            }]
        );
        let p = crate::kit::validate::prepare_commit(&mut exe, &effects).unwrap();
        assert_eq!(p.spawns[0].child_id, "72661b5d03ef09926df0d1dd0a5da878-r0010");
        assert_eq!(p.spawns[0].root_path, "root.fork.region");
        assert_eq!(
            p.spawns[0].context,
            r#"{"parent_id": "72661b5d03ef09926df0d1dd0a5da878", "round": 10}"#
        );
        assert!(p.trace.is_none());

        // Round 7 updates f19, f01, f02 in that order, and the trace keeps it.
        let mut exe = initial_execution(&ids, 0);
        let effects = step(&mut exe, 0, &Round::new(7, 20), in_event_id(7, 0), true);
        let keys: Vec<&str> = effects.trace.as_ref().unwrap()["context_out"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["f19", "f01", "f02"]);
    }
}
