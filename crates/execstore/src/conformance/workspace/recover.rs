//! The workspace recovery commands ([`crate::workspace::recover`]) on any backend: what each
//! writes, and that each refusal writes nothing.

use std::time::Duration;

use serde_json::{json, Value};

use super::{at, commit, entry, obj, run, stored, t0, with_status, ws, WorkspaceHarness};
use crate::error::StoreError;
use crate::workspace::recover::{self, Operator, ReplayMode};
use crate::workspace::{
    EvaluationError, LogQuery, RuleProgress, RunStatus, StoredRuleStatus, WorkspaceRef, WorkspaceStorage,
};

fn op(id: &str, seconds: i64) -> Operator {
    Operator {
        actor: json!({"kind": "system", "name": "suite"}),
        event_id: id.into(),
        now: at(seconds),
    }
}

fn code<T: std::fmt::Debug>(r: crate::Result<T>) -> &'static str {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.code(),
    }
}

/// Everything the commands could change, to compare before and after a refusal.
fn snapshot(s: &dyn WorkspaceStorage, w: &WorkspaceRef) -> String {
    let log: Vec<String> = s
        .read(w, &LogQuery::new())
        .unwrap()
        .iter()
        .map(|e| format!("{} {} {:?}", e.seq, e.id, e.event))
        .collect();
    let runs: Vec<String> = s
        .runs(w, &Default::default())
        .unwrap()
        .iter()
        .map(|r| r.to_json())
        .collect();
    let progress: Vec<String> = s
        .progress(w)
        .unwrap()
        .iter()
        .map(|(n, p)| format!("{n} {}", p.to_json()))
        .collect();
    let rules: Vec<String> = s
        .stored_rules(w)
        .unwrap()
        .iter()
        .map(|r| format!("{} {} {:?}", r.name(), r.version, r.rule))
        .collect();
    let leases: Vec<String> = s.leases(w).unwrap().iter().map(|l| format!("{l:?}")).collect();
    format!("{log:?}\n{runs:?}\n{progress:?}\n{rules:?}\n{leases:?}")
}

/// Retry a run as reflexr does, replay a dead letter's rule, release a lapsed lease, pause
/// and resume a stored rule; every refusal changes nothing.
pub fn recover_runs_letters_leases_rules(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-recover", "w");
    h.clock().set(t0());
    let dead = with_status(&run("r-dead", "ra", "k1", 1, t0()), RunStatus::Dead, t0())
        .with(obj(json!({"attempts": 3, "error": "boom"})))
        .unwrap();
    let waiting = with_status(&run("r-wait", "ra", "k2", 1, t0()), RunStatus::Retrying, at(600))
        .with(obj(json!({"attempts": 2})))
        .unwrap();
    let busy = with_status(&run("r-busy", "ra", "k3", 1, t0()), RunStatus::Running, t0());
    let progress = RuleProgress::from_doc(obj(
        json!({"cursor": 3, "generation": 2, "definition": "abc123", "deadlines": {}, "silent_through": 0}),
    ));
    let mut rule = stored("suite:s", 1, StoredRuleStatus::Active);
    rule.rule.insert("enabled".into(), Value::Bool(true));
    commit(s, &w, |tx| {
        tx.append(&[entry("e1", "x"), entry("e2", "x"), entry("e3", "x")])
            .unwrap();
        tx.save_runs(&[dead.clone(), waiting.clone(), busy.clone()])
            .unwrap();
        tx.save_progress("ra", &progress).unwrap();
        tx.save_progress("suite:s", &progress).unwrap();
        tx.save_states(
            "ra",
            &[(
                "k1".into(),
                crate::workspace::ScopeState::from_doc(obj(json!({"n": 1}))),
            )],
        )
        .unwrap();
        tx.dead_letter(&[EvaluationError::new("ra", 2, "ZeroDivisionError")])
            .unwrap();
        tx.save_stored_rule(&rule).unwrap();
    });
    assert!(s
        .acquire_lease(&w, "run:r-busy", "worker-1", Duration::from_secs(30))
        .unwrap());

    // Refusals first: nothing changes.
    let before = snapshot(s, &w);
    assert_eq!(code(recover::retry_run(s, &w, "nope", &op("f1", 1))), "NOT_FOUND");
    assert_eq!(
        code(recover::retry_run(s, &w, "r-busy", &op("f1", 1))),
        "INVALID_INPUT"
    );
    assert_eq!(
        code(recover::retry_run(s, &w, "r-dead", &op("", 1))),
        "INVALID_INPUT"
    );
    assert_eq!(
        code(recover::replay_dead_letter(
            s,
            &w,
            "ra",
            3,
            ReplayMode::Rebuild,
            &op("f1", 1)
        )),
        "NOT_FOUND"
    );
    assert_eq!(
        code(recover::replay_dead_letter(
            s,
            &w,
            "rb",
            2,
            ReplayMode::Rebuild,
            &op("f1", 1)
        )),
        "NOT_FOUND"
    );
    assert_eq!(
        code(recover::release_lapsed_lease(s, &w, "run:r-busy", at(29))),
        "INVALID_INPUT"
    );
    assert_eq!(
        code(recover::release_lapsed_lease(s, &w, "nope", at(29))),
        "NOT_FOUND"
    );
    assert_eq!(
        code(recover::set_rule_enabled(
            s,
            &w,
            "nope",
            false,
            None,
            &op("f1", 1)
        )),
        "NOT_FOUND"
    );
    assert!(matches!(
        recover::set_rule_enabled(s, &w, "suite:s", false, Some(7), &op("f1", 1)),
        Err(StoreError::Conflict {
            expected: 7,
            found: Some(1),
            ..
        })
    ));
    assert_eq!(snapshot(s, &w), before, "refusals change nothing");

    // Retry: a dead run gets a fresh budget, a waiting one keeps its attempts; a fact each.
    let retried = recover::retry_run(s, &w, "r-dead", &op("f-retry-1", 5)).unwrap();
    assert_eq!(retried.status(), RunStatus::Pending);
    assert_eq!(retried.next_attempt_at(), at(5));
    assert_eq!(retried.doc()["attempts"], json!(0));
    assert_eq!(retried.doc()["updated_at"], json!(at(5).to_json_text()));
    assert_eq!(
        retried.doc()["error"],
        json!("boom"),
        "the last error is kept, as reflexr keeps it"
    );
    assert_eq!(s.run(&w, "r-dead").unwrap().unwrap(), retried);
    let again = recover::retry_run(s, &w, "r-wait", &op("f-retry-2", 6)).unwrap();
    assert_eq!(
        (again.status(), again.doc()["attempts"].clone()),
        (RunStatus::Pending, json!(2))
    );
    let fact = s.envelope(&w, "f-retry-1").unwrap().expect("the fact");
    assert_eq!(
        fact.event,
        obj(json!({"type": "reflexr:run_requeued", "run_id": "r-dead", "rule": "ra"}))
    );
    assert_eq!(fact.correlation_id, "c-r-dead");
    assert_eq!(
        fact.causation,
        Some(json!({"firing_id": "r-dead", "run_id": "r-dead", "depth": 1}))
    );
    assert_eq!(fact.actor, json!({"kind": "system", "name": "suite"}));

    // Replay a dead letter's rule from just before its envelope.
    let head = s.head_seq(&w).unwrap();
    let replayed =
        recover::replay_dead_letter(s, &w, "ra", 2, ReplayMode::Rebuild, &op("f-replay", 7)).unwrap();
    assert_eq!(
        (replayed.from_seq, replayed.generation, replayed.seq),
        (1, 3, head + 1)
    );
    let progress_now: Vec<_> = s
        .progress(&w)
        .unwrap()
        .into_iter()
        .filter(|(n, _)| n == "ra")
        .collect();
    assert_eq!(
        progress_now[0].1.doc(),
        &obj(
            json!({"cursor": 1, "generation": 3, "definition": "abc123", "deadlines": {}, "silent_through": head})
        )
    );
    let reset = s.envelope(&w, "f-replay").unwrap().unwrap();
    assert_eq!(
        reset.event,
        obj(
            json!({"type": "reflexr:rule_reset", "rule": "ra", "generation": 3, "reason": "replayed", "from_seq": 1, "silent_through": head})
        )
    );
    let mut tx = s.begin(&w).unwrap();
    assert!(
        tx.states("ra", &["k1".into()]).unwrap().is_empty(),
        "scope states cleared"
    );
    drop(tx);
    let all = recover::replay_dead_letters(s, &w, ReplayMode::Refire, &op("f-all", 8)).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(
        (all[0].rule.as_str(), all[0].from_seq, all[0].generation),
        ("ra", 1, 4)
    );
    assert!(s.envelope(&w, "f-all-1").unwrap().is_some());

    // A lapsed lease is released; a fresh claim by anyone then works.
    let released = recover::release_lapsed_lease(s, &w, "run:r-busy", at(30)).unwrap();
    assert_eq!(released.holder, "worker-1");
    assert!(s.leases(&w).unwrap().iter().all(|l| l.key != "run:r-busy"));

    // Pause, no-op pause, resume.
    let paused = recover::set_rule_enabled(s, &w, "suite:s", false, Some(1), &op("f-pause", 9)).unwrap();
    assert_eq!(
        (paused.version, paused.rule["enabled"].clone()),
        (2, json!(false))
    );
    let stored_now = s.stored_rules(&w).unwrap();
    assert_eq!(
        stored_now.iter().find(|r| r.name() == "suite:s").unwrap(),
        &paused
    );
    let fact = s.envelope(&w, "f-pause").unwrap().unwrap();
    assert_eq!(fact.event["type"], json!(crate::workspace::RULE_INSTALLED));
    assert_eq!(
        (
            fact.event["version"].clone(),
            fact.event["spec"]["enabled"].clone()
        ),
        (json!(2), json!(false))
    );
    let history = s.rule_history(&w, "suite:s").unwrap();
    assert_eq!(history.last().map(|e| e.id.as_str()), Some("f-pause"));
    let before = snapshot(s, &w);
    let same = recover::set_rule_enabled(s, &w, "suite:s", false, None, &op("f-pause-2", 10)).unwrap();
    assert_eq!(same, paused);
    assert_eq!(snapshot(s, &w), before, "already paused: nothing written");
    let resumed = recover::set_rule_enabled(s, &w, "suite:s", true, None, &op("f-resume", 11)).unwrap();
    assert_eq!(
        (resumed.version, resumed.rule["enabled"].clone()),
        (3, json!(true))
    );
    let progress_s: Vec<_> = s
        .progress(&w)
        .unwrap()
        .into_iter()
        .filter(|(n, _)| n == "suite:s")
        .collect();
    assert_eq!(progress_s[0].1, progress, "pausing resets nothing");
    let mut archived = resumed.clone();
    archived.version = 4;
    archived.status = StoredRuleStatus::Archived;
    commit(s, &w, |tx| tx.save_stored_rule(&archived).unwrap());
    assert_eq!(
        code(recover::set_rule_enabled(
            s,
            &w,
            "suite:s",
            false,
            None,
            &op("f-x", 12)
        )),
        "INVALID_INPUT"
    );
}
