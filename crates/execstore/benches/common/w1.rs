//! A W1-like event step (shared/bench/WORKLOAD.md), shared by the benchmarks: execution `i`
//! as W1 creates it (a 20-key, ~1 KiB context) and round `r`'s mutation and effects (three
//! context keys changed, one emit, the processed event id, a timer schedule or cancel and a
//! trace step). The history keys cycle, so the document stays W1-sized however many rounds
//! run.

use execstore::{Effects, Event, Execution, JsonObject, Status};
use serde_json::{json, Value};

fn ctx_value(i: usize, j: usize, g: u64) -> String {
    format!("e{i:08}-k{j:02}-g{g:05}-").repeat(2)
}

/// Execution `i` as W1 creates it: 20 context keys, 982 bytes of compact JSON.
pub fn execution(i: usize) -> Execution {
    let mut exe = Execution::new(format!("{:032x}", 0x9e37_79b9_7f4a_7c15_u64 ^ i as u64), "def-0");
    exe.definition_fqn = Some("bench.definitions.Workflow0".into());
    exe.status = Status::Running;
    exe.active_path = Some("root.work.s00".into());
    exe.context.insert("counter".into(), json!(0));
    for j in 1..=19 {
        exe.context
            .insert(format!("f{j:02}"), Value::String(ctx_value(i, j, 0)));
    }
    exe
}

/// Round `r` of W1 on execution `i`: the mutation and the step's effects (the history keys
/// cycle, so the document stays W1-sized however many rounds run).
pub fn step(exe: &mut Execution, i: usize, r: u64) -> Effects {
    let old = exe.active_path.clone().unwrap_or_default();
    let new = format!("root.work.s{:02}", r % 100);
    exe.history
        .insert(format!("root.work.h{:02}", r % 20), Value::String(new.clone()));
    exe.active_path = Some(new.clone());
    let mut context_out = JsonObject::new();
    for t in 0..3 {
        let j = ((3 * (r.max(1) - 1) + t) % 19 + 1) as usize;
        let value = Value::String(ctx_value(i, j, r % 100_000));
        exe.context.insert(format!("f{j:02}"), value.clone());
        context_out.insert(format!("f{j:02}"), value);
    }
    let counter = exe.context["counter"].as_i64().unwrap_or(0) + 1;
    exe.context.insert("counter".into(), json!(counter));
    exe.processed_events += 1;
    let data = json!({"round": r, "counter": counter, "path": new});
    let event = Event::new(format!("{r:08x}{i:016x}00000001"), "progress")
        .with_data(data.as_object().cloned().unwrap_or_default());
    let timer = if r % 2 == 0 { "schedule" } else { "cancel" };
    let trace = json!({
        "event": "tick", "round": r, "transition": format!("{old} -> {new}"),
        "actions": ["assign", "emit:progress", format!("timer:{timer}")], "context_out": context_out,
    });
    let effects = Effects::new()
        .emit(Some(&exe.id), event)
        .processed(format!("{r:08x}{i:016x}00000000"))
        .trace(trace.as_object().cloned().unwrap_or_default());
    if r % 2 == 0 {
        effects.schedule("root.work.timeout", 1_700_000_000.0 + 1000.0 * (r % 1000) as f64)
    } else {
        effects.cancel("root.work.timeout")
    }
}
