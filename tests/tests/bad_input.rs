//! Bad input is refused with the right error and leaves the SQLite file exactly as it was:
//! the same rows (a dump of every table) and the same bytes in the database and WAL files.
//!
//! Every bad commit is made on an execution loaded at its current version with otherwise valid
//! effects, so without the check it would be written.

mod common;

use std::fmt::Debug;
use std::path::PathBuf;

use execstore::{
    executions::{Event, ListQuery, TimerOp},
    Effects, Execution, ExecutionStore, StoreError,
};
use execstore_e2e::{crash_id, crash_step, obj, step_effects};
use execstore_sqlite::{SqliteOptions, SqliteStore};
use serde_json::json;

/// A file holding committed executions with outbox entries, timers, spawns and trace steps,
/// the store kept open on it (so the WAL holds frames).
struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
    store: SqliteStore,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad.db");
    // No checkpoints (neither the store's thread nor the commit crossing a threshold): the
    // file's bytes then change only by a write, so "changed nothing" is a byte comparison.
    let options = SqliteOptions::new().trace_max(Some(5)).checkpoint_pages(0);
    let store = SqliteStore::open(&path, options).expect("open");
    for i in 0..3 {
        for _ in 0..=(4 + 3 * i) {
            crash_step(&store, &crash_id(i)).expect("step");
        }
    }
    let fx = Fixture {
        _dir: dir,
        path,
        store,
    };
    assert!(
        common::dump(&fx.path)
            .iter()
            .filter(|l| !l.starts_with("schema"))
            .count()
            > 60,
        "the fixture holds data"
    );
    fx
}

const A: &str = "crash-0";

impl Fixture {
    /// `crash-0` as stored now.
    fn loaded(&self) -> Execution {
        self.store.load(A).expect("load").expect("stored")
    }

    /// `crash-0` ready for its next step, and the effects of that step.
    fn next_step(&self) -> (Execution, Effects) {
        let mut exe = self.loaded();
        let n = exe.version;
        exe.context.insert("counter".into(), n.into());
        (exe, step_effects(A, n))
    }

    /// Runs `call`, which must fail, and asserts the file did not change at all. Returns the
    /// error.
    #[track_caller]
    fn refused<T: Debug>(
        &self,
        case: &str,
        call: impl FnOnce(&SqliteStore) -> execstore::Result<T>,
    ) -> StoreError {
        let bytes = common::FileBytes::of(&self.path);
        let rows = common::dump(&self.path);
        let result = call(&self.store);
        let rows_after = common::dump(&self.path);
        let bytes_after = common::FileBytes::of(&self.path);
        assert!(
            rows == rows_after,
            "{case}: the rows changed:\n{}",
            common::dump_diff(&rows, &rows_after)
        );
        assert!(
            bytes == bytes_after,
            "{case}: the file bytes changed: {} before, {} after",
            bytes.describe(),
            bytes_after.describe()
        );
        match result {
            Ok(v) => panic!("{case}: accepted, returned {v:?}"),
            Err(e) => e,
        }
    }

    /// A refused call that must be `InvalidInput` naming `field`.
    #[track_caller]
    fn invalid<T: Debug>(
        &self,
        case: &str,
        field: &str,
        call: impl FnOnce(&SqliteStore) -> execstore::Result<T>,
    ) {
        match self.refused(case, call) {
            StoreError::InvalidInput { field: got, .. } if got == field => {}
            other => panic!("{case}: want InvalidInput of {field:?}, got {other:?}"),
        }
    }

    /// A bad commit of `crash-0`: `exe` and `effects` as `spoil` leaves the next good step.
    /// The caller's execution must keep its version.
    #[track_caller]
    fn invalid_commit(&self, case: &str, field: &str, spoil: impl FnOnce(&mut Execution, &mut Effects)) {
        let (mut exe, mut effects) = self.next_step();
        spoil(&mut exe, &mut effects);
        let version = exe.version;
        self.invalid(case, field, |s| s.commit(&mut exe, &effects));
        assert_eq!(exe.version, version, "{case}: the caller's version moved");
    }
}

fn invalid_json(case: &str, json: &str) {
    match Execution::from_json(json) {
        Err(StoreError::InvalidInput { .. }) => {}
        other => panic!("{case}: want InvalidInput, got {other:?}"),
    }
}

#[test]
fn malformed_json() {
    let fx = fixture();
    let good = fx.loaded().to_json();
    let truncated = &good[..good.len() / 2];
    for (case, json) in [
        ("not json", "{not json"),
        ("empty", ""),
        ("truncated", truncated),
        ("trailing garbage", &format!("{good} x")),
        ("an array", "[1, 2]"),
    ] {
        fx.refused(case, |_| Execution::from_json(json));
        invalid_json(case, json);
    }
}

#[test]
fn wrong_types() {
    let fx = fixture();
    let good: serde_json::Value = serde_json::from_str(&fx.loaded().to_json()).expect("json");
    let with = |key: &str, value: serde_json::Value| {
        let mut doc = good.clone();
        doc[key] = value;
        doc.to_string()
    };
    let mut missing_id = good.clone();
    missing_id.as_object_mut().expect("object").remove("id");
    for (case, json) in [
        ("version is a string", with("version", json!("3"))),
        ("status is BOGUS", with("status", json!("BOGUS"))),
        ("id is missing", missing_id.to_string()),
        ("id is a number", with("id", json!(7))),
        ("context is an array", with("context", json!([1, 2]))),
        ("priority is a string", with("priority", json!("high"))),
        ("created_at is a string", with("created_at", json!("yesterday"))),
        ("children is a list", with("children", json!(["a"]))),
        ("deferred holds a number", with("deferred", json!([3]))),
    ] {
        fx.refused(case, |_| Execution::from_json(&json));
        invalid_json(case, &json);
    }
    // The unchanged document is accepted: the cases above fail for their one change.
    assert_eq!(
        Execution::from_json(&good.to_string()).expect("good json"),
        fx.loaded()
    );
}

#[test]
fn bad_times() {
    let fx = fixture();
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0] {
        fx.invalid_commit(
            &format!("timer fire_at {bad}"),
            "timers[0].fire_at",
            |_, effects| {
                effects.timers[0] = TimerOp::Schedule {
                    path: "t".into(),
                    fire_at: bad,
                };
            },
        );
        fx.invalid(&format!("due_timers({bad})"), "now", |s| {
            s.due_timers(bad, None, 10)
        });
        fx.invalid(&format!("delete_timer at {bad}"), "fire_at", |s| {
            s.delete_timer(A, "t", bad)
        });
        fx.invalid_commit(&format!("created_at {bad}"), "execution.created_at", |exe, _| {
            exe.created_at = Some(bad);
        });
        fx.invalid_commit(&format!("updated_at {bad}"), "execution.updated_at", |exe, _| {
            exe.updated_at = Some(bad);
        });
        fx.invalid_commit(&format!("expires_at {bad}"), "execution.expires_at", |exe, _| {
            exe.expires_at = Some(bad);
        });
        let mut new = Execution::new("new-exe", "d");
        new.created_at = Some(bad);
        fx.invalid(
            &format!("a new execution created at {bad}"),
            "execution.created_at",
            |s| s.save(&mut new),
        );
        assert!(fx.store.load("new-exe").expect("load").is_none());
    }
}

#[test]
fn invalid_cursors() {
    let fx = fixture();
    for (case, cursor) in [
        ("garbage", "not a cursor!!"),
        ("empty", ""),
        ("base64url of another format", "b2Zmc2V0OjEw"), // "offset:10"
        ("harel's offset cursor", "MTA="),               // base64 of "10"
        ("unpadded base64 of a bare number", "MTA"),
        ("a cursor with no id", "YWZ0ZXI6"), // "after:"
        ("not UTF-8", "__4"),                // ff fe
        ("another tag", "YmVmb3JlOng"),      // "before:x"
    ] {
        let query = ListQuery::new().cursor(Some(cursor.to_owned()));
        fx.invalid(case, "cursor", |s| s.list_executions(&query));
    }
    // A cursor this store made is accepted.
    let first = fx
        .store
        .list_executions(&ListQuery::new().limit(1))
        .expect("list");
    let next = ListQuery::new().limit(1).cursor(first.next_cursor.clone());
    assert!(first.next_cursor.is_some());
    assert_eq!(fx.store.list_executions(&next).expect("page 2").items.len(), 1);
}

#[test]
fn bad_limits() {
    let fx = fixture();
    for limit in [0, execstore::kit::validate::MAX_PAGE + 1, usize::MAX] {
        fx.invalid(&format!("list limit {limit}"), "limit", |s| {
            s.list_executions(&ListQuery::new().limit(limit))
        });
        fx.invalid(&format!("pending_outbox limit {limit}"), "limit", |s| {
            s.pending_outbox(None, limit)
        });
        fx.invalid(&format!("pending_spawns limit {limit}"), "limit", |s| {
            s.pending_spawns(None, limit)
        });
        fx.invalid(&format!("due_timers limit {limit}"), "limit", |s| {
            s.due_timers(1e12, None, limit)
        });
    }
}

#[test]
fn oversize_payloads() {
    let fx = fixture();
    let big = "x".repeat(execstore::kit::validate::MAX_DOCUMENT_BYTES + 1);
    fx.invalid_commit("context over 8 MiB", "execution", |exe, _| {
        exe.context.insert("blob".into(), big.clone().into());
    });
    let mut new = Execution::new("new-big", "d");
    new.context.insert("blob".into(), big.clone().into());
    fx.invalid("new execution over 8 MiB", "execution", |s| s.save(&mut new));
    fx.invalid_commit("event over 8 MiB", "emits[0]", |_, effects| {
        effects.emits[0]
            .event
            .data
            .insert("blob".into(), big.clone().into());
    });
    fx.invalid_commit("spawn context over 8 MiB", "spawns[0].context", |_, effects| {
        effects.spawns.clear();
        *effects = effects
            .clone()
            .spawn("crash-0/big", "r", obj(json!({ "blob": big })));
    });
    fx.invalid_commit("trace step over 8 MiB", "trace", |_, effects| {
        *effects = effects.clone().trace(obj(json!({ "blob": big })));
    });
    let step = obj(json!({ "blob": big }));
    fx.invalid("append_trace over 8 MiB", "trace", |s| s.append_trace(A, &step));
    // Just under the limit is accepted.
    let mut exe = fx.loaded();
    exe.context.insert(
        "blob".into(),
        "y".repeat(execstore::kit::validate::MAX_DOCUMENT_BYTES - 2000)
            .into(),
    );
    fx.store.save(&mut exe).expect("a large but acceptable context");
}

#[test]
fn unknown_ids() {
    let fx = fixture();
    match fx.refused("ack_outbox(999999)", |s| s.ack_outbox(999_999)) {
        StoreError::NotFound {
            what: "outbox entry",
            key,
        } => assert_eq!(key, "999999"),
        other => panic!("ack_outbox(999999): {other:?}"),
    }
    match fx.refused("ack_spawn(999999)", |s| s.ack_spawn(999_999)) {
        StoreError::NotFound {
            what: "spawn entry",
            key,
        } => assert_eq!(key, "999999"),
        other => panic!("ack_spawn(999999): {other:?}"),
    }
    // An entry acked once is gone: the second ack is NotFound too.
    let seq = fx.store.pending_outbox(None, 1).expect("outbox")[0].seq;
    fx.store.ack_outbox(seq).expect("first ack");
    assert!(matches!(
        fx.refused("second ack", |s| s.ack_outbox(seq)),
        StoreError::NotFound { .. }
    ));
    let seq = fx.store.pending_spawns(None, 1).expect("spawns")[0].seq;
    fx.store.ack_spawn(seq).expect("first ack");
    assert!(matches!(
        fx.refused("second spawn ack", |s| s.ack_spawn(seq)),
        StoreError::NotFound { .. }
    ));

    let step = obj(json!({ "n": 1 }));
    match fx.refused("append_trace to an unknown execution", |s| {
        s.append_trace("nobody", &step)
    }) {
        StoreError::NotFound {
            what: "execution",
            key,
        } => assert_eq!(key, "nobody"),
        other => panic!("append_trace: {other:?}"),
    }

    let mut ghost = Execution::new("nobody", "d");
    ghost.version = 3;
    let effects = step_effects("nobody", 3);
    match fx.refused("commit of an unknown id at version 3", |s| {
        s.commit(&mut ghost, &effects)
    }) {
        StoreError::Conflict {
            id,
            expected: 3,
            found: None,
        } => assert_eq!(id, "nobody"),
        other => panic!("commit of an unknown id: {other:?}"),
    }
    assert_eq!(ghost.version, 3);

    let (mut stale, effects) = fx.next_step();
    let stored = stale.version;
    stale.version -= 1;
    match fx.refused("stale commit", |s| s.commit(&mut stale, &effects)) {
        StoreError::Conflict {
            expected,
            found: Some(found),
            ..
        } => {
            assert_eq!((expected, found), (stored - 1, stored));
        }
        other => panic!("stale commit: {other:?}"),
    }
    assert_eq!(stale.version, stored - 1);
}

#[test]
fn bad_sequence_numbers() {
    let fx = fixture();
    for seq in [0, -1, i64::MIN] {
        fx.invalid(&format!("ack_outbox({seq})"), "seq", |s| s.ack_outbox(seq));
        fx.invalid(&format!("ack_spawn({seq})"), "seq", |s| s.ack_spawn(seq));
    }
}

#[test]
fn empty_and_malformed_ids() {
    let fx = fixture();
    let long = "i".repeat(execstore::kit::validate::MAX_ID_BYTES + 1);
    for (what, bad) in [("empty", ""), ("NUL", "a\0b"), ("too long", long.as_str())] {
        let mut new = Execution::new(bad, "d");
        fx.invalid(&format!("{what} execution id"), "execution.id", |s| {
            s.save(&mut new)
        });
        fx.invalid_commit(
            &format!("{what} definition id"),
            "execution.definition_id",
            |exe, _| {
                exe.definition_id = bad.into();
            },
        );
        fx.invalid_commit(
            &format!("{what} emit target"),
            "emits[0].target_id",
            |_, effects| {
                effects.emits[0].target_id = Some(bad.into());
            },
        );
        fx.invalid_commit(&format!("{what} event id"), "emits[0].event.id", |_, effects| {
            effects.emits[0].event.id = bad.into();
        });
        fx.invalid_commit(
            &format!("{what} processed event id"),
            "processed_event_id",
            |_, effects| {
                effects.processed_event_id = Some(bad.into());
            },
        );
        fx.invalid_commit(&format!("{what} timer path"), "timers[0].path", |_, effects| {
            effects.timers[0] = TimerOp::Schedule {
                path: bad.into(),
                fire_at: 5.0,
            };
        });
        fx.invalid_commit(
            &format!("{what} cancelled timer path"),
            "timers[1].path",
            |_, effects| {
                effects.timers.insert(1, TimerOp::Cancel { path: bad.into() });
            },
        );
        fx.invalid_commit(&format!("{what} child id"), "spawns[0].child_id", |_, effects| {
            effects.spawns.clear();
            *effects = effects.clone().spawn(bad, "r", obj(json!({})));
        });
        let step = obj(json!({ "n": 1 }));
        fx.invalid(&format!("append_trace to {what} id"), "execution_id", |s| {
            s.append_trace(bad, &step)
        });
        fx.invalid(&format!("purge of {what} id"), "execution_id", |s| {
            s.purge(bad, 1)
        });
    }
    fx.invalid_commit("empty event kind", "emits[0].event.kind", |_, effects| {
        effects.emits[0].event.kind = String::new();
    });
}

#[test]
fn bad_priority_and_counters() {
    let fx = fixture();
    for priority in [7, 5, -1] {
        fx.invalid_commit(&format!("priority {priority}"), "execution.priority", |exe, _| {
            exe.priority = priority;
        });
    }
    fx.invalid_commit(
        "negative processed_events",
        "execution.processed_events",
        |exe, _| {
            exe.processed_events = -3;
        },
    );
    let mut neg = Execution::new("neg", "d");
    neg.version = -1;
    fx.invalid("negative version", "execution.version", |s| s.save(&mut neg));
    // The highest priority is accepted.
    let mut exe = fx.loaded();
    exe.priority = 4;
    fx.store.save(&mut exe).expect("priority 4");
}

#[test]
fn bad_event_times() {
    let fx = fixture();
    for bad in ["yesterday", "2024-13-02T03:04:05Z", "2024-01-02T03:04:5", ""] {
        fx.invalid_commit(
            &format!("created_time {bad:?}"),
            "emits[0].event.created_time",
            |_, effects| {
                effects.emits[0].event.created_time = Some(bad.into());
            },
        );
        fx.invalid_commit(
            &format!("received_time {bad:?}"),
            "emits[0].event.received_time",
            |_, effects| {
                effects.emits[0].event.received_time = Some(bad.into());
            },
        );
        fx.invalid_commit(
            &format!("deferred created_time {bad:?}"),
            "execution.deferred[0].created_time",
            |exe, _| {
                let mut ev = Event::new("held", "Held");
                ev.created_time = Some(bad.into());
                exe.deferred.push(ev);
            },
        );
    }
    // A well-formed time is accepted.
    let (mut exe, mut effects) = fx.next_step();
    effects.emits[0].event.created_time = Some("2024-01-02T03:04:05.123456Z".into());
    fx.store.commit(&mut exe, &effects).expect("a good created_time");
}

/// The check itself can fail: a good commit changes both the rows and the file bytes, and a
/// store that took bad input is still usable afterwards.
#[test]
fn a_good_commit_is_seen_as_a_change() {
    let fx = fixture();
    fx.invalid_commit("priority 7", "execution.priority", |exe, _| exe.priority = 7);
    let bytes = common::FileBytes::of(&fx.path);
    let rows = common::dump(&fx.path);
    let (mut exe, effects) = fx.next_step();
    fx.store.commit(&mut exe, &effects).expect("good commit");
    let rows_after = common::dump(&fx.path);
    assert!(rows != rows_after);
    assert!(common::dump_diff(&rows, &rows_after).contains("outbox"));
    assert!(
        bytes != common::FileBytes::of(&fx.path),
        "a commit left the file bytes alone"
    );
    assert_eq!(common::integrity_check(&fx.path), "ok");
}
