//! Bad input is a typed error and changes nothing.

use super::*;

/// Bad input of every kind is a typed error and leaves the store exactly as it was.
pub fn bad_input_changes_nothing(store: &dyn ExecutionStore) {
    let ns = scope("bad");
    let mut exe = created(store, &format!("{ns}a"), "def");
    let id = exe.id.clone();
    store
        .commit(
            &mut exe,
            &Effects::new()
                .emit(Some(&id), Event::new(format!("{ns}e"), "E"))
                .processed(format!("{ns}in"))
                .schedule("root.t", 10.0)
                .spawn(format!("{ns}c"), "root.c", JsonObject::new())
                .trace(obj(json!({"event_kind": "E"}))),
        )
        .unwrap();
    let probe_event = format!("{ns}in");
    let probes = [(id.as_str(), probe_event.as_str())];
    let before = snapshot(store, &probes);
    let next = |f: &dyn Fn(&mut Execution)| {
        let mut e = exe.clone();
        bump(&mut e);
        f(&mut e);
        e
    };
    let commit = |mut e: Execution, effects: Effects| store.commit(&mut e, &effects).map(|_| ());
    let event_ok = || Event::new(format!("{ns}x"), "X");
    let huge = "x".repeat(MAX_DOCUMENT_BYTES + 1);

    let cases: Vec<(&str, &str, crate::Result<()>)> = vec![
        (
            "malformed JSON",
            "INVALID_INPUT",
            Execution::from_json("{not json").map(|_| ()),
        ),
        (
            "version as a string",
            "INVALID_INPUT",
            Execution::from_json(r#"{"id":"a","definition_id":"d","version":"1"}"#).map(|_| ()),
        ),
        (
            "unknown status",
            "INVALID_INPUT",
            Execution::from_json(r#"{"id":"a","definition_id":"d","status":"BOGUS"}"#).map(|_| ()),
        ),
        (
            "missing id",
            "INVALID_INPUT",
            Execution::from_json(r#"{"definition_id":"d"}"#).map(|_| ()),
        ),
        (
            "empty id",
            "INVALID_INPUT",
            commit(Execution::new("", "d"), Effects::new()),
        ),
        (
            "empty definition",
            "INVALID_INPUT",
            commit(Execution::new(format!("{ns}z"), ""), Effects::new()),
        ),
        (
            "negative version",
            "INVALID_INPUT",
            commit(next(&|e| e.version = -1), Effects::new()),
        ),
        (
            "priority 7",
            "INVALID_INPUT",
            commit(next(&|e| e.priority = 7), Effects::new()),
        ),
        (
            "NaN created_at",
            "INVALID_INPUT",
            commit(next(&|e| e.created_at = Some(f64::NAN)), Effects::new()),
        ),
        (
            "negative updated_at",
            "INVALID_INPUT",
            commit(next(&|e| e.updated_at = Some(-1.0)), Effects::new()),
        ),
        (
            "NaN fire_at",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().schedule("root.t", f64::NAN)),
        ),
        (
            "infinite fire_at",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().schedule("root.t", f64::INFINITY)),
        ),
        (
            "negative fire_at",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().schedule("root.t", -5.0)),
        ),
        (
            "empty timer path",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().schedule("", 5.0)),
        ),
        ("bad event time", "INVALID_INPUT", {
            let mut ev = event_ok();
            ev.created_time = Some("yesterday".into());
            commit(next(&|_| ()), Effects::new().emit(None, ev))
        }),
        (
            "empty event kind",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().emit(None, Event::new("i", ""))),
        ),
        (
            "empty processed id",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().processed("")),
        ),
        (
            "empty child id",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().spawn("", "r", JsonObject::new())),
        ),
        (
            "oversize context",
            "INVALID_INPUT",
            commit(
                next(&|e| {
                    e.context.insert("big".into(), huge.clone().into());
                }),
                Effects::new(),
            ),
        ),
        (
            "oversize event",
            "INVALID_INPUT",
            commit(
                next(&|_| ()),
                Effects::new().emit(None, event_ok().with_data(obj(json!({"big": huge})))),
            ),
        ),
        (
            "oversize trace",
            "INVALID_INPUT",
            commit(next(&|_| ()), Effects::new().trace(obj(json!({"big": huge})))),
        ),
        (
            "oversize spawn",
            "INVALID_INPUT",
            commit(
                next(&|_| ()),
                Effects::new().spawn("c", "r", obj(json!({"big": huge}))),
            ),
        ),
        (
            "NaN now",
            "INVALID_INPUT",
            store.due_timers(f64::NAN, None, 10).map(|_| ()),
        ),
        (
            "negative now",
            "INVALID_INPUT",
            store.due_timers(-1.0, None, 10).map(|_| ()),
        ),
        (
            "NaN delete fire_at",
            "INVALID_INPUT",
            store.delete_timer(&id, "root.t", f64::NAN).map(|_| ()),
        ),
        (
            "garbage cursor",
            "INVALID_INPUT",
            store
                .list_executions(&ListQuery::new().cursor(Some("%%%".into())))
                .map(|_| ()),
        ),
        (
            "zero limit",
            "INVALID_INPUT",
            store.pending_outbox(None, 0).map(|_| ()),
        ),
        (
            "unknown outbox seq",
            "NOT_FOUND",
            store.ack_outbox(i64::MAX).map(|_| ()),
        ),
        (
            "unknown spawn seq",
            "NOT_FOUND",
            store.ack_spawn(i64::MAX).map(|_| ()),
        ),
        ("negative seq", "INVALID_INPUT", store.ack_outbox(-3).map(|_| ())),
        (
            "trace of unknown id",
            "NOT_FOUND",
            store
                .append_trace(&format!("{ns}nobody"), &JsonObject::new())
                .map(|_| ()),
        ),
        (
            "oversize append_trace",
            "INVALID_INPUT",
            store.append_trace(&id, &obj(json!({"big": huge}))).map(|_| ()),
        ),
        (
            "stale commit",
            "CONFLICT",
            commit(
                next(&|e| e.version = 1),
                Effects::new().processed("late").schedule("root.x", 1.0),
            ),
        ),
        (
            "unknown id above 0",
            "CONFLICT",
            commit(
                {
                    let mut e = Execution::new(format!("{ns}ghost"), "d");
                    e.version = 3;
                    e
                },
                Effects::new(),
            ),
        ),
    ];
    // A valid execution with one bad effect must not be half-written either.
    let mut exe_with_bad_timer = next(&|_| ());
    let bad_timer = Effects::new()
        .emit(None, event_ok())
        .processed("p")
        .schedule("ok", 1.0)
        .schedule("bad", f64::NAN);
    assert_eq!(
        code(store.commit(&mut exe_with_bad_timer, &bad_timer)),
        "INVALID_INPUT"
    );
    assert_eq!(
        exe_with_bad_timer.version, exe.version,
        "the caller's version is unchanged"
    );

    for (what, want, result) in cases {
        let got = match result {
            Ok(()) => panic!("{what}: expected {want}, got Ok"),
            Err(e) => e,
        };
        assert_eq!(got.code(), want, "{what}: {got}");
    }
    assert_eq!(snapshot(store, &probes), before, "bad input changed the store");
    assert_eq!(store.load(&id).unwrap().unwrap().version, 2);
}
