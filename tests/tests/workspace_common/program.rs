//! A deterministic program of storage calls, applied by reflexr (`tests/reflexr/apply_program.py`)
//! to one database and by execstore ([`apply`]) to another, after which their tables must hold
//! the same rows: transactions that append, save runs (new ones and updates), progress, states
//! (and clear them), dead letters, schedules and stored rules, some rolled back; leases taken,
//! refused, renewed and released as the clock moves; cursors saved forwards and backwards.

use std::collections::BTreeMap;
use std::time::Duration;

use execstore::workspace::{
    Entry, EvaluationError, ManualClock, RuleProgress, Run, ScopeState, StoredRule, StoredRuleStatus,
    Timestamp, WorkspaceRef, WorkspaceStorage, WorkspaceTx,
};
use serde_json::{json, Value};

use super::variety::{at, pending, rule_json, text, with, T0_MICROS, TEXT};
use super::{arr, at_micros, i, micros, obj, s, ws_of};

/// A small deterministic generator (the same program on every run for one seed).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

fn entry_json(id: &str, n: i64, rng: &mut Lcg) -> Value {
    let kind = ["app:order.placed", "app:order.paid", "app:note.added"][rng.below(3) as usize];
    let mut e = json!({
        "id": id,
        "actor": {"kind": "source", "name": format!("src-{}", rng.below(3))},
        "event": {"type": kind, "n": n, "x": (n as f64) / 7.0, "t": if n % 5 == 0 { TEXT } else { "plain" },
                  "list": [n, {"k": null}]},
    });
    if rng.chance(3) {
        e["causation"] =
            json!({"firing_id": format!("f-{n}"), "run_id": format!("r-{n}"), "depth": 1 + n % 3});
        e["correlation_id"] = json!(format!("chain-{}", n % 4));
        e["traceparent"] = json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    }
    e
}

/// The program for `seed`: `{"t0": micros, "ops": [...]}`.
pub fn generate(seed: u64, transactions: usize) -> Value {
    let mut rng = Lcg(seed);
    let workspaces = [
        json!(["p-acme", "main"]),
        json!(["p-acme", "ops"]),
        json!(["p-globex", "main"]),
    ];
    let rules = ["app:notify", "app:ship"];
    let statuses = [
        "pending",
        "running",
        "retrying",
        "succeeded",
        "dead",
        "cancelled",
        "skipped",
    ];
    let mut runs: Vec<BTreeMap<String, Run>> = vec![BTreeMap::new(); workspaces.len()];
    let mut stored: Vec<BTreeMap<String, i64>> = vec![BTreeMap::new(); workspaces.len()];
    let mut ops = Vec::new();
    let mut clock = 0.0f64;
    let mut n = 0u64;
    for t in 0..transactions {
        let w = rng.below(workspaces.len() as u64) as usize;
        // Mostly forwards, now and then back.
        clock += if rng.chance(6) { -2.0 } else { 0.7 };
        let now = at(clock);
        let commit = !rng.chance(7);
        let mut calls = Vec::new();
        if rng.below(4) != 0 {
            let k = 1 + rng.below(3);
            let entries: Vec<Value> = (0..k)
                .map(|_| {
                    n += 1;
                    entry_json(&format!("p{n}"), n as i64, &mut rng)
                })
                .collect();
            calls.push(json!({"call": "append", "entries": entries}));
        }
        if rng.chance(2) {
            let mut batch = Vec::new();
            for _ in 0..1 + rng.below(3) {
                let existing: Vec<String> = runs[w].keys().cloned().collect();
                let run = if !existing.is_empty() && rng.chance(2) {
                    let old = &runs[w][&existing[rng.below(existing.len() as u64) as usize]];
                    let status = statuses[rng.below(statuses.len() as u64) as usize];
                    with(
                        old,
                        json!({"status": status, "attempts": rng.below(3), "updated_at": text(now),
                               "next_attempt_at": text(at(clock + rng.below(20) as f64))}),
                    )
                } else {
                    let id = format!("run-{t}-{}", batch.len());
                    let rule = rules[rng.below(2) as usize];
                    pending(
                        &id,
                        rule,
                        &format!("s{}", rng.below(3)),
                        1 + rng.below(9) as i64,
                        now,
                    )
                };
                batch.push(run);
            }
            if commit {
                for r in &batch {
                    runs[w].insert(r.id().to_owned(), r.clone());
                }
            }
            let docs: Vec<Value> = batch.iter().map(|r| Value::Object(r.doc().clone())).collect();
            calls.push(json!({"call": "save_runs", "runs": docs}));
        }
        if rng.chance(3) {
            let rule = rules[rng.below(2) as usize];
            calls.push(json!({"call": "save_progress", "rule": rule, "progress": {
                "cursor": n, "generation": rng.below(2), "definition": "d", "deadlines": {}, "silent_through": 0}}));
        }
        if rng.chance(3) {
            let rule = rules[rng.below(2) as usize];
            let key = format!("k{}", rng.below(4));
            let doc = json!({"scope": {"k": key, "v": n as f64 / 3.0}, "dedupe": null,
                             "pattern": {"kind": "each"}, "throttle": null});
            calls.push(json!({"call": "save_states", "rule": rule, "states": [[key, doc]]}));
        }
        if rng.chance(8) {
            calls.push(json!({"call": "clear_states", "rule": rules[rng.below(2) as usize]}));
        }
        if rng.chance(4) {
            calls.push(json!({"call": "dead_letter", "errors": [
                {"rule": rules[rng.below(2) as usize], "seq": n, "error": format!("failed {n} — ü")}]}));
        }
        if rng.chance(4) {
            let at_text = if rng.chance(2) {
                text(at(clock + 3600.0))
            } else {
                "2026-01-02T00:00:00+02:00".to_owned()
            };
            calls.push(
                json!({"call": "save_schedule", "name": format!("sched-{}", rng.below(3)), "at": at_text}),
            );
        }
        if rng.chance(5) {
            let name = format!("chat:r{}", rng.below(2));
            let version = stored[w].get(&name).copied().unwrap_or(0) + 1;
            let archived = version > 1 && rng.chance(3);
            if commit {
                stored[w].insert(name.clone(), version);
            }
            calls.push(json!({"call": "save_stored_rule", "stored": {
                "rule": rule_json(&name, &format!("v{version}"), json!({"n": version})),
                "version": version, "status": if archived { "archived" } else { "active" },
                "provenance": {"by": "program", "v": version}}}));
        }
        ops.push(
            json!({"op": "tx", "workspace": workspaces[w], "now": micros(now), "commit": commit,
                        "calls": calls}),
        );
        if rng.chance(3) {
            let holder = format!("h{}", rng.below(3));
            let key = ["eval", "run:x"][rng.below(2) as usize];
            if rng.chance(4) {
                ops.push(
                    json!({"op": "release_lease", "workspace": workspaces[w], "key": key, "holder": holder}),
                );
            } else {
                ops.push(
                    json!({"op": "acquire_lease", "workspace": workspaces[w], "now": micros(now),
                                "key": key, "holder": holder, "ttl_ms": 500 + 500 * rng.below(6)}),
                );
            }
        }
        if rng.chance(4) {
            ops.push(
                json!({"op": "save_cursor", "workspace": workspaces[w], "name": format!("c{}", rng.below(2)),
                            "seq": rng.below(30)}),
            );
        }
    }
    json!({"t0": T0_MICROS, "ops": ops})
}

/// An [`Entry`] from its program JSON.
pub fn entry_of(e: &Value) -> Entry {
    Entry {
        id: s(&e["id"]).to_owned(),
        actor: e["actor"].clone(),
        event: obj(e["event"].clone()),
        causation: e.get("causation").cloned(),
        correlation_id: e.get("correlation_id").map(|c| s(c).to_owned()),
        traceparent: e.get("traceparent").map(|c| s(c).to_owned()),
    }
}

fn apply_calls(tx: &mut dyn WorkspaceTx, calls: &Value) -> Value {
    let mut out = Vec::new();
    for c in arr(calls) {
        match s(&c["call"]) {
            "append" => {
                let entries: Vec<Entry> = arr(&c["entries"]).iter().map(entry_of).collect();
                let envelopes = tx.append(&entries).expect("append");
                out.push(envelopes.iter().map(|e| e.to_json()).collect::<Value>());
            }
            "save_runs" => {
                let runs: Vec<Run> = arr(&c["runs"])
                    .iter()
                    .map(|r| Run::from_doc(obj(r.clone())).expect("run"))
                    .collect();
                tx.save_runs(&runs).expect("save runs");
            }
            "save_progress" => tx
                .save_progress(s(&c["rule"]), &RuleProgress::from_doc(obj(c["progress"].clone())))
                .expect("save progress"),
            "save_states" => {
                let states: Vec<(String, ScopeState)> = arr(&c["states"])
                    .iter()
                    .map(|p| (s(&p[0]).to_owned(), ScopeState::from_doc(obj(p[1].clone()))))
                    .collect();
                tx.save_states(s(&c["rule"]), &states).expect("save states");
            }
            "clear_states" => tx.clear_states(s(&c["rule"])).expect("clear states"),
            "dead_letter" => {
                let errors: Vec<EvaluationError> = arr(&c["errors"])
                    .iter()
                    .map(|e| EvaluationError::from_doc(obj(e.clone())).expect("dead letter"))
                    .collect();
                tx.dead_letter(&errors).expect("dead letter");
            }
            "save_schedule" => {
                let at = Timestamp::parse_json_text(s(&c["at"])).expect("time");
                tx.save_schedule(s(&c["name"]), at).expect("save schedule");
            }
            "save_stored_rule" => {
                let st = &c["stored"];
                let status = StoredRuleStatus::parse(s(&st["status"])).expect("status");
                tx.save_stored_rule(&StoredRule {
                    rule: obj(st["rule"].clone()),
                    version: i(&st["version"]),
                    status,
                    provenance: obj(st["provenance"].clone()),
                })
                .expect("save stored rule");
            }
            other => panic!("unknown call {other}"),
        }
    }
    out.into()
}

/// Applies `program` to `storage` as `apply_program.py` applies it to reflexr's, the clock
/// standing at each op's `now`; returns the results as the script does.
pub fn apply(storage: &dyn WorkspaceStorage, clock: &ManualClock, program: &Value) -> Value {
    clock.set(at_micros(i(&program["t0"])));
    let mut results = Vec::new();
    for op in arr(&program["ops"]) {
        if let Some(now) = op.get("now") {
            clock.set(at_micros(i(now)));
        }
        let ws: WorkspaceRef = ws_of(&op["workspace"]);
        let result = match s(&op["op"]) {
            "tx" => {
                let mut tx = storage.begin(&ws).expect("begin");
                let out = apply_calls(&mut *tx, &op["calls"]);
                if op["commit"] == json!(true) {
                    tx.commit().expect("commit");
                }
                out
            }
            "acquire_lease" => {
                let ttl = Duration::from_millis(i(&op["ttl_ms"]) as u64);
                storage
                    .acquire_lease(&ws, s(&op["key"]), s(&op["holder"]), ttl)
                    .expect("lease")
                    .into()
            }
            "release_lease" => {
                storage
                    .release_lease(&ws, s(&op["key"]), s(&op["holder"]))
                    .expect("release");
                Value::Null
            }
            "save_cursor" => {
                storage
                    .save_cursor(&ws, s(&op["name"]), i(&op["seq"]))
                    .expect("cursor");
                Value::Null
            }
            other => panic!("unknown op {other}"),
        };
        results.push(result);
    }
    json!({ "results": results })
}

/// The workspaces a program touches.
pub fn workspaces(program: &Value) -> Vec<WorkspaceRef> {
    let mut found: Vec<WorkspaceRef> = arr(&program["ops"])
        .iter()
        .map(|op| ws_of(&op["workspace"]))
        .collect();
    found.sort();
    found.dedup();
    found
}
