//! The variety execstore writes for reflexr to read: every kind of record, each in the exact
//! shape reflexr's models dump (so reflexr's read-back re-serializes to the same text), with
//! unicode, floats and nesting, in several tenants and workspaces.

use std::time::Duration;

use execstore::workspace::{
    run_lease, Entry, EvaluationError, ManualClock, NewRun, RuleProgress, Run, RunStatus, ScopeState,
    StoredRule, StoredRuleStatus, Timestamp, WorkspaceRef, WorkspaceStorage, WorkspaceTx, RULE_ARCHIVED,
    RULE_INSTALLED,
};
use serde_json::{json, Value};

use super::{micros, obj};

/// 2026-01-01T12:00:00Z.
pub const T0_MICROS: i64 = 1_767_268_800_000_000;
pub const TEXT: &str = "naïve — ✓ 😀 中文 \"quoted\" back\\slash /slash tab\t nl\n \u{1} \u{7f} \u{2028} é";
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

pub fn at(seconds: f64) -> Timestamp {
    Timestamp::from_micros(T0_MICROS + (seconds * 1e6).round() as i64).expect("in range")
}

pub fn text(t: Timestamp) -> String {
    t.to_json_text()
}

pub fn source(name: &str) -> Value {
    json!({"kind": "source", "name": name})
}

pub fn user(id: &str, name: Option<&str>) -> Value {
    json!({"kind": "user", "id": id, "name": name})
}

pub fn system() -> Value {
    json!({"kind": "system", "name": "reflexr"})
}

pub fn entry(id: &str, actor: Value, event: Value) -> Entry {
    Entry::new(id, actor, obj(event))
}

/// A pending run of `rule` for scope `scope`, fired at `fired`, as reflexr's `create_run`.
pub fn pending(id: &str, rule: &str, scope: &str, fired: i64, now: Timestamp) -> Run {
    Run::pending(NewRun {
        id: id.into(),
        rule: rule.into(),
        scope_key: scope.into(),
        scope: obj(json!({"order": scope, "note": "ü"})),
        fired_seq: fired,
        matched: vec![fired],
        correlation_id: format!("corr-{id}"),
        depth: 0,
        now,
    })
    .expect("a valid run")
}

pub fn with(run: &Run, changes: Value) -> Run {
    run.with(obj(changes)).expect("a valid run")
}

/// `run` started at `now` (reflexr's `start`).
pub fn started(run: &Run, now: Timestamp) -> Run {
    with(
        run,
        json!({"status": "running", "attempts": 1, "updated_at": text(now), "epoch": 1}),
    )
}

/// A stored rule's rule, as reflexr's `Rule.model_dump(mode="json")`.
pub fn rule_json(name: &str, description: &str, params: Value) -> Value {
    json!({
        "name": name, "description": description,
        "when": {"filter": {"kind": "on", "types": ["app:note.added"]}, "dedupe": null,
                 "pattern": {"kind": "each"}, "throttle": null},
        "scope": {"fields": []}, "then": {"action": "reply", "params": params},
        "retry": {"max_attempts": 5, "backoff": "PT1S", "multiplier": 2.0, "max_backoff": "PT5M"},
        "ordering": "none", "on_dead_letter": "continue", "start": "now", "timeout": "PT30S",
        "enabled": true
    })
}

pub fn progress(cursor: i64, deadlines: Value) -> RuleProgress {
    RuleProgress::from_doc(obj(json!({
        "cursor": cursor, "generation": 1, "definition": "0123456789abcdef",
        "deadlines": deadlines, "silent_through": 0
    })))
}

pub fn state(scope: Value) -> ScopeState {
    ScopeState::from_doc(obj(
        json!({"scope": scope, "dedupe": null, "pattern": {"kind": "each"}, "throttle": null}),
    ))
}

fn commit(s: &dyn WorkspaceStorage, w: &WorkspaceRef, f: impl FnOnce(&mut dyn WorkspaceTx)) {
    let mut tx = s.begin(w).expect("begin");
    f(&mut *tx);
    tx.commit().expect("commit");
}

pub fn workspaces() -> [WorkspaceRef; 4] {
    [
        WorkspaceRef::new("acme", "main"),
        WorkspaceRef::new("acme", "ops"),
        WorkspaceRef::new("globex", "main"),
        WorkspaceRef::new("tënant ✓", "ws/ü 1"),
    ]
}

/// What [`write`] wrote: the probe to read it back with, and the leases it took
/// (`[tenant, workspace, key, holder, expires micros]`).
pub struct Written {
    pub probe: Value,
    pub leases: Vec<Value>,
    /// The log's head in the first workspace.
    pub head: i64,
}

/// Writes the variety through `s`, moving `clock` as it goes.
pub fn write(s: &dyn WorkspaceStorage, clock: &ManualClock) -> Written {
    let [a, b, c, d] = workspaces();
    clock.set(at(0.0));
    commit(s, &a, |tx| {
        let mut paid = entry(
            "e2",
            user("u-1", Some("Zoë")),
            json!({"type": "app:order.paid", "order": "o-1", "amount": 1234.5678, "currency": "EUR"}),
        );
        paid.correlation_id = Some("e1".into());
        paid.traceparent = Some(TRACEPARENT.into());
        let mut note = entry(
            "e3",
            json!({"kind": "agent", "rule": "app:notify", "run_id": "r-run", "name": "notifier"}),
            json!({"type": "app:note.added", "text": TEXT, "big": 9007199254740992i64, "neg": -7,
                   "ratio": 1.0 / 3.0}),
        );
        note.causation = Some(json!({"firing_id": "f-1", "run_id": "r-run", "depth": 1}));
        note.correlation_id = Some("e1".into());
        tx.append(&[
            entry(
                "e1",
                source("monitor"),
                json!({"type": "app:order.placed", "order": "o-1", "total": 12.5,
                       "items": [{"sku": "A-1", "qty": 2, "price": 0.1 + 0.2}, {"sku": "B", "price": 1e20}],
                       "note": TEXT,
                       "nested": {"a": {"b": [1, 2.0, 1e-7, -0.0, null, true, false, "x"]}, "empty": {}, "list": []}}),
            ),
            paid,
            note,
        ])
        .expect("append");
    });
    clock.set(at(1.5));
    commit(s, &a, |tx| {
        let entries: Vec<Entry> = (4..8)
            .map(|i| {
                entry(
                    &format!("e{i}"),
                    system(),
                    json!({"type": "app:order.placed", "order": format!("o-{}", i % 2), "i": i}),
                )
            })
            .collect();
        tx.append(&entries).expect("append");
    });
    // The clock goes back: ts stays at the previous envelope's.
    clock.set(at(0.25));
    commit(s, &a, |tx| {
        tx.append(&[entry(
            "e8",
            source("late"),
            json!({"type": "app:order.paid", "order": "o-0"}),
        )])
        .expect("append");
    });
    clock.set(at(2.0));
    for (w, n) in [(&b, 3), (&c, 2), (&d, 2)] {
        commit(s, w, |tx| {
            let entries: Vec<Entry> = (1..=n)
                .map(|i| {
                    entry(
                        &format!("{}-{i}", w.workspace_id),
                        source("src"),
                        json!({"type": "app:tick.seen", "i": i}),
                    )
                })
                .collect();
            tx.append(&entries).expect("append");
        });
    }

    // Runs in every status.
    let now = at(3.0);
    let (notify, ship, audit) = ("app:notify", "app:ship", "app:audit");
    let mut runs = vec![pending("n-pending", notify, "o-1", 1, now)];
    runs.push(with(
        &started(&pending("n-running", notify, "o-2", 2, now), now),
        json!({"trace_ids": ["4bf92f3577b34da6a3ce929d0e0e4736"]}),
    ));
    runs.push(with(
        &started(&pending("n-retrying", notify, "o-3", 3, now), now),
        json!({"status": "retrying", "error": "timeout — ü", "reason": "timeout",
               "next_attempt_at": text(at(4.0))}),
    ));
    runs.push(with(
        &started(&pending("n-succeeded", notify, "o-1", 4, now), now),
        json!({"status": "succeeded", "output": {"sent": true, "ratio": 0.5, "to": ["a", "é"]}}),
    ));
    runs.push(with(
        &started(&pending("s-dead", ship, "o-1", 2, now), now),
        json!({"status": "dead", "error": "boom", "reason": "guardrail_blocked"}),
    ));
    runs.push(pending("s-pending", ship, "o-1", 5, now));
    runs.push(with(
        &pending("s-cancelled", ship, "o-2", 2, now),
        json!({"status": "cancelled"}),
    ));
    runs.push(with(
        &pending("s-skipped", ship, "o-2", 3, now),
        json!({"status": "skipped"}),
    ));
    runs.push(pending("s-later", ship, "o-2", 4, now));
    runs.push(with(
        &started(&pending("s-checkpointed", ship, "o-3", 6, now), now),
        json!({"checkpoint": {"x": [1, 2.5], "t": TEXT}, "step": "draft", "checkpoints": 1}),
    ));
    runs.push(pending("a-same-1", audit, "k", 7, at(1.0)));
    runs.push(pending("a-same-2", audit, "k", 7, at(1.0)));
    runs.push(started(&pending("a-orphan", audit, "k", 8, now), now));
    runs.push(started(&pending("a-lapsed", audit, "k", 9, now), now));
    commit(s, &a, |tx| {
        tx.save_runs(&runs).expect("save runs");
        // Updated in the same transaction: the last version wins, in its first place.
        tx.save_runs(&[with(&runs[0], json!({"updated_at": text(at(3.5))}))])
            .expect("save runs");
    });
    commit(s, &b, |tx| {
        let runs: Vec<Run> = (1..4)
            .map(|i| pending(&format!("b-{i}"), notify, "o-1", i, at(i as f64)))
            .collect();
        tx.save_runs(&runs).expect("save runs");
    });
    commit(s, &c, |tx| {
        tx.save_runs(&[pending("c-1", ship, "o-1", 1, at(3.0))])
            .expect("save runs")
    });

    // Progress, states, dead letters, schedules.
    let plus2 = Timestamp::parse_json_text("2026-01-01T15:00:00+02:00").expect("time");
    commit(s, &a, |tx| {
        tx.save_progress(notify, &progress(3, json!({"o-1": text(plus2)})))
            .expect("progress");
        tx.save_progress(ship, &progress(2, json!({}))).expect("progress");
        let full = ScopeState::from_doc(obj(json!({
            "scope": {"order": "o-1"},
            "dedupe": {"seen": {"k": text(at(1.0))}},
            "pattern": {"kind": "count", "matched": [{"seq": 1, "ts": text(at(0.0)), "correlation_id": "e1", "depth": 0}]},
            "throttle": {"fired": [text(at(1.0)), text(at(2.000001))]}
        })));
        tx.save_states(
            notify,
            &[
                ("o-1".into(), full),
                ("o-2".into(), state(json!({"order": "é", "n": 1.5}))),
            ],
        )
        .expect("states");
        tx.save_states(ship, &[("o-1".into(), state(json!({"order": "o-1"})))])
            .expect("states");
        tx.dead_letter(&[
            EvaluationError::new(notify, 2, "KeyError: 'x' — ü"),
            EvaluationError::new(ship, 3, "boom"),
        ])
        .expect("dead letters");
        tx.save_schedule("hourly", at(3600.0)).expect("schedule");
        let daily = Timestamp::parse_json_text("2026-01-02T00:00:00+02:00").expect("time");
        tx.save_schedule("daily", daily).expect("schedule");
    });
    commit(s, &a, |tx| {
        tx.save_progress(notify, &progress(8, json!({})))
            .expect("progress");
        tx.clear_states(ship).expect("clear");
        tx.save_states(ship, &[("o-9".into(), state(json!({"order": "o-9"})))])
            .expect("states");
        tx.dead_letter(&[EvaluationError::new(notify, 8, "again")])
            .expect("dead letters");
        tx.save_schedule("hourly", at(7200.0)).expect("schedule");
    });

    // Stored rules: three versions and an archive, with their facts.
    let versions = [
        rule_json("chat:greet", "v1", json!({})),
        rule_json("chat:greet", "v2 — ü", json!({})),
        rule_json("chat:greet", "v3", json!({"tone": "warm", "n": 1.5})),
    ];
    for (n, rule) in versions.iter().enumerate() {
        let version = n as i64 + 1;
        clock.set(at(10.0 + version as f64));
        let provenance = json!({"by": "operator", "ticket": format!("T-{version}"), "note": "ü"});
        commit(s, &a, |tx| {
            tx.save_stored_rule(&StoredRule {
                rule: obj(rule.clone()),
                version,
                status: StoredRuleStatus::Active,
                provenance: obj(provenance.clone()),
            })
            .expect("stored rule");
            tx.append(&[entry(
                &format!("install-greet-{version}"),
                user("op", Some("Operator")),
                json!({"type": RULE_INSTALLED, "rule": "chat:greet", "version": version, "spec": rule,
                       "provenance": provenance}),
            )])
            .expect("append");
        });
    }
    clock.set(at(20.0));
    commit(s, &a, |tx| {
        let bye = rule_json("chat:bye", "", json!({}));
        tx.save_stored_rule(&StoredRule {
            rule: obj(bye.clone()),
            version: 1,
            status: StoredRuleStatus::Active,
            provenance: obj(json!({})),
        })
        .expect("stored rule");
        tx.save_stored_rule(&StoredRule {
            rule: obj(versions[2].clone()),
            version: 4,
            status: StoredRuleStatus::Archived,
            provenance: obj(json!({"by": "operator"})),
        })
        .expect("archive");
        tx.append(&[
            entry(
                "install-bye-1",
                system(),
                json!({"type": RULE_INSTALLED, "rule": "chat:bye", "version": 1, "spec": bye, "provenance": {}}),
            ),
            entry(
                "archive-greet-4",
                user("op", None),
                json!({"type": RULE_ARCHIVED, "rule": "chat:greet", "version": 4, "reason": "retired",
                       "cancelled": 0}),
            ),
        ])
        .expect("append");
    });

    // Leases and cursors.
    clock.set(at(30.0));
    let mut leases = Vec::new();
    for (w, key, holder, ttl) in [
        (&a, "eval".to_owned(), "worker-1", Duration::from_secs(30)),
        (&a, "eval-expired".to_owned(), "worker-2", Duration::from_secs(1)),
        (&a, run_lease("n-running"), "exec-1", Duration::from_secs(600)),
        (
            &a,
            run_lease("s-checkpointed"),
            "exec-1",
            Duration::from_secs(600),
        ),
        (&a, run_lease("a-lapsed"), "exec-2", Duration::from_millis(1500)),
        (&b, "eval".to_owned(), "worker-1", Duration::from_secs(3600)),
    ] {
        assert!(s.acquire_lease(w, &key, holder, ttl).expect("lease"));
        let expires = micros(at(30.0)) + ttl.as_micros() as i64;
        leases.push(json!([w.tenant_id, w.workspace_id, key, holder, expires]));
    }
    assert!(!s
        .acquire_lease(&a, "eval", "someone-else", Duration::from_secs(5))
        .expect("lease"));
    s.save_cursor(&a, "mirror", 3).expect("cursor");
    s.save_cursor(&a, "mirror", 2).expect("cursor");
    s.save_cursor(&a, "feedback", 1).expect("cursor");
    s.save_cursor(&c, "mirror", 2).expect("cursor");
    let head = s.head_seq(&a).expect("head");
    Written {
        probe: probe(),
        leases,
        head,
    }
}

/// What to read back: the same questions `write_variety.py` asks of what reflexr wrote.
pub fn probe() -> Value {
    let spec = json!({
        "run_ids": ["n-pending", "s-dead", "s-checkpointed", "nope", "b-1"],
        "rules": ["app:notify", "app:ship", "app:audit"],
        "stored_rule_names": ["chat:greet", "chat:bye", "chat:none"],
        "cursor_names": ["mirror", "feedback", "none"],
        "event_ids": ["e1", "e3", "install-greet-2", "nope"],
        "states": {"app:notify": ["o-2", "missing", "o-1"], "app:ship": ["o-1", "o-9"]},
        "scopes": [["app:ship", "o-1"], ["app:ship", "o-2"], ["app:audit", "k"], ["app:notify", "o-1"]],
        "schedule_names": ["hourly", "daily", "never"],
    });
    let workspaces: Vec<Value> = workspaces()
        .iter()
        .map(|w| {
            let mut one = spec.clone();
            one["workspace"] = json!([w.tenant_id, w.workspace_id]);
            one
        })
        .collect();
    let policies = [
        json!({"disabled": [], "ordered": [], "blocking": []}),
        json!({"disabled": [], "ordered": ["app:ship"], "blocking": []}),
        json!({"disabled": ["app:audit"], "ordered": ["app:ship", "app:notify"], "blocking": ["app:ship"]}),
        json!({"disabled": ["app:notify"], "ordered": ["app:audit"], "blocking": ["app:audit", "app:notify"]}),
    ];
    let mut due = Vec::new();
    for now in [0i64, 3_000_000, 31_000_000, 600_000_000, 86_400_000_000] {
        for limit in [100, 3, 0] {
            for p in &policies {
                let mut q = p.clone();
                q["now"] = (T0_MICROS + now).into();
                q["limit"] = limit.into();
                due.push(q);
            }
        }
    }
    json!({
        "workspaces": workspaces,
        "windows": [
            {}, {"after_seq": 2}, {"before_seq": 4}, {"after_seq": 1, "before_seq": 6, "limit": 2},
            {"types": ["app:order.placed"]},
            {"types": ["app:order.placed", "app:note.added"], "last": 2},
            {"types": ["reflexr:rule_installed"], "after_seq": 9},
            {"last": 3}, {"last": 2, "before_seq": 3}, {"types": []}, {"limit": 0}
        ],
        "run_queries": [
            {}, {"rule": "app:notify"}, {"status": "running"}, {"scope_key": "o-1", "limit": 2},
            {"rule": "app:ship", "status": "pending", "scope_key": "o-1"}, {"limit": 0}
        ],
        "due": due,
    })
}

/// Every status appears among the first workspace's runs.
pub fn assert_every_status(s: &dyn WorkspaceStorage) {
    let [a, ..] = workspaces();
    for status in RunStatus::ALL {
        let q = execstore::workspace::RunQuery {
            status: Some(status),
            ..Default::default()
        };
        assert!(!s.runs(&a, &q).expect("runs").is_empty(), "no {status} run");
    }
}
