//! The control plane's checks in the behaviour suite (feature `conformance`): `suspend`,
//! `resume`, `terminate`, `purge` and `purge_finished` ([`crate::executions::control`]) on any backend,
//! run by [`conformance_tests!`](crate::conformance_tests) with the rest of the suite.
//!
//! Each check builds a small tree under its own id prefix: a root with region children
//! (`children` naming them, `parent_id` pointing back), a grandchild under a finished child,
//! and outbox, timer, dedupe and trace rows that a status command must leave alone.
//! `purge_finished` lists every root of the store, so its check uses finish times (a few
//! seconds after the epoch) no other check writes and asserts only on its own ids.

use serde_json::{json, Value};

use crate::error::StoreError;
use crate::executions::control::{self, PurgeFinished, StatusChange};
use crate::executions::ExecutionStore;
use crate::executions::{ChildState, Effects, Event, Execution, JsonObject, Status};

use super::{all_outbox, all_spawns, all_timers, scope};

const NOW: f64 = 1_800_000_000.5;

fn region(root_path: &str) -> ChildState {
    ChildState::region(root_path, root_path)
}

/// Saves `id` with `status`, under `parent` when given, listing `children`.
fn put(
    store: &dyn ExecutionStore,
    id: &str,
    status: Status,
    parent: Option<&str>,
    children: &[&str],
) -> Execution {
    let mut exe = Execution::new(id, "control");
    exe.status = status;
    exe.active_path = Some("control.a".into());
    exe.parent_id = parent.map(str::to_owned);
    exe.root_path = if parent.is_some() {
        "control.r".into()
    } else {
        String::new()
    };
    exe.context.insert("kept".into(), json!({"n": 1, "t": "ü"}));
    exe.created_at = Some(1_700_000_000.25);
    exe.updated_at = Some(1_700_000_001.0);
    if matches!(status, Status::Done | Status::Cancelled) {
        exe.finished_at = Some(1_700_000_001.0);
    }
    for c in children {
        exe.children.insert((*c).to_owned(), region("control.r"));
    }
    store.save(&mut exe).expect("save");
    exe
}

fn load(store: &dyn ExecutionStore, id: &str) -> Execution {
    store
        .load(id)
        .expect("load")
        .unwrap_or_else(|| panic!("{id} is stored"))
}

fn status(store: &dyn ExecutionStore, id: &str) -> Status {
    load(store, id).status
}

/// Everything stored under the ids of a check: executions, traces, dedupe probes and the
/// outbox, spawn and timer rows keyed by them.
fn state(store: &dyn ExecutionStore, ids: &[String]) -> Value {
    let exes: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!([
                store.load(id).expect("load"),
                store.read_trace(id).expect("read_trace")
            ])
        })
        .collect();
    let mine = |id: &str| ids.iter().any(|i| i == id);
    let outbox: Vec<Value> = all_outbox(store)
        .into_iter()
        .filter(|e| e.target_id.as_deref().is_some_and(mine))
        .map(|e| json!([e.seq, e.target_id, e.event.id]))
        .collect();
    let spawns: Vec<Value> = all_spawns(store)
        .into_iter()
        .filter(|s| mine(&s.parent_id))
        .map(|s| json!([s.seq, s.child_id]))
        .collect();
    let timers: Vec<Value> = all_timers(store)
        .into_iter()
        .filter(|t| mine(&t.execution_id))
        .map(|t| json!([t.execution_id, t.path, t.fire_at]))
        .collect();
    let processed: Vec<bool> = ids
        .iter()
        .map(|id| store.is_processed(id, &format!("{id}-in")).expect("is_processed"))
        .collect();
    json!({"exes": exes, "outbox": outbox, "spawns": spawns, "timers": timers, "processed": processed})
}

/// Gives `exe` one committed step of every kind of effect (kept by status commands).
fn with_effects(store: &dyn ExecutionStore, exe: &mut Execution) {
    let id = exe.id.clone();
    let effects = Effects::new()
        .emit(Some(&id), Event::new(format!("{id}-out"), "Backlog"))
        .processed(format!("{id}-in"))
        .schedule("control.t", 1_800_000_100.0)
        .spawn(format!("{id}:spawned"), "control.s", JsonObject::new())
        .trace(
            json!({"event_kind": "Go", "to_path": "control.a", "timestamp": 1.5})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
    store.commit(exe, &effects).expect("commit effects");
}

fn code<T: std::fmt::Debug>(res: crate::Result<T>) -> &'static str {
    match res {
        Ok(v) => panic!("expected a refusal, got {v:?}"),
        Err(e) => e.code(),
    }
}

fn changed_ids(changes: &[StatusChange]) -> Vec<&str> {
    changes.iter().map(|c| c.id.as_str()).collect()
}

/// A tree: `r` RUNNING with regions `r:a` RUNNING, `r:b` DONE (itself the parent of `r:b:g`
/// RUNNING) and `r:c` FAILED; each with a backlog, a timer, a dedupe marker and a trace.
fn tree(store: &dyn ExecutionStore, ns: &str, root_status: Status) -> Vec<String> {
    let ids: Vec<String> = ["r", "r:a", "r:b", "r:b:g", "r:c"]
        .iter()
        .map(|s| format!("{ns}{s}"))
        .collect();
    let [r, a, b, g, c] = [&ids[0], &ids[1], &ids[2], &ids[3], &ids[4]];
    let mut root = put(store, r, root_status, None, &[a, b, c]);
    let mut ea = put(store, a, Status::Running, Some(r), &[]);
    let mut eb = put(store, b, Status::Done, Some(r), &[g]);
    let mut eg = put(store, g, Status::Running, Some(b), &[]);
    let mut ec = put(store, c, Status::Failed, Some(r), &[]);
    for exe in [&mut root, &mut ea, &mut eb, &mut eg, &mut ec] {
        with_effects(store, exe);
    }
    ids
}

/// `suspend` moves a RUNNING root and every unfinished region (a FAILED one too, a
/// grandchild under a DONE child too) to SUSPENDED and stamps them; `resume` moves them all
/// back to RUNNING. Context, backlog, timers, dedupe, spawns and traces stay; a repeat of
/// either is a silent no-op.
pub fn control_suspend_resume_tree(store: &dyn ExecutionStore) {
    let ns = scope("ctl-susp");
    let ids = tree(store, &ns, Status::Running);
    let (r, a, b, g, c) = (&ids[0], &ids[1], &ids[2], &ids[3], &ids[4]);
    let before = state(store, &ids);
    let before_exes: Vec<Execution> = ids.iter().map(|id| load(store, id)).collect();

    let out = control::suspend(store, r, None, NOW).expect("suspend");
    assert_eq!(
        changed_ids(&out.changed),
        [r.as_str(), a, g, c],
        "root first, then regions depth first"
    );
    for (id, was) in ids.iter().zip(&before_exes) {
        let now = load(store, id);
        if id == b {
            assert_eq!(now, *was, "a finished region is left alone");
            continue;
        }
        assert_eq!(now.status, Status::Suspended, "{id}");
        assert_eq!(now.version, was.version + 1, "{id}: one CAS write");
        assert_eq!(now.updated_at, Some(NOW), "{id}: stamped with the given time");
        assert_eq!(now.created_at, was.created_at);
        assert_eq!(now.finished_at, None);
        let mut same = now.clone();
        (same.status, same.version, same.updated_at) = (was.status, was.version, was.updated_at);
        assert_eq!(same, *was, "{id}: only status, version and updated_at change");
    }
    let after = state(store, &ids);
    assert_eq!(after["outbox"], before["outbox"], "the backlog stays");
    assert_eq!(after["timers"], before["timers"], "timers stay");
    assert_eq!(after["spawns"], before["spawns"]);
    assert_eq!(after["processed"], before["processed"]);

    let again = state(store, &ids);
    assert!(control::suspend(store, r, None, NOW + 1.0)
        .unwrap()
        .changed
        .is_empty());
    assert_eq!(
        state(store, &ids),
        again,
        "suspending a SUSPENDED execution is a no-op"
    );
    assert!(control::resume(store, a, None, NOW + 1.0).is_ok());
    assert_eq!(status(store, a), Status::Running, "a region resumes on its own");
    assert_eq!(status(store, r), Status::Suspended, "without its parent");
    control::suspend(store, a, None, NOW + 1.5).unwrap();

    let out = control::resume(store, r, None, NOW + 2.0).expect("resume");
    assert_eq!(changed_ids(&out.changed), [r.as_str(), a, g, c]);
    for id in [r, a, g, c] {
        let exe = load(store, id);
        assert_eq!(
            exe.status,
            Status::Running,
            "{id}: resumed (a FAILED region too, as harel does)"
        );
        assert_eq!(exe.updated_at, Some(NOW + 2.0));
    }
    assert_eq!(load(store, b), before_exes[2]);
    let again = state(store, &ids);
    assert!(control::resume(store, r, None, NOW + 3.0)
        .unwrap()
        .changed
        .is_empty());
    assert_eq!(
        state(store, &ids),
        again,
        "resuming a RUNNING execution is a no-op"
    );
}

/// `terminate` cancels any unfinished status, stamps `finished_at`, and cancels the
/// unfinished descendants, also under a root that was already finished (left alone itself).
pub fn control_terminate_tree(store: &dyn ExecutionStore) {
    let ns = scope("ctl-term");
    let ids = tree(store, &ns, Status::Suspended);
    let (r, a, b, g, c) = (&ids[0], &ids[1], &ids[2], &ids[3], &ids[4]);
    let out = control::terminate(store, r, None, NOW).expect("terminate");
    assert_eq!(changed_ids(&out.changed), [r.as_str(), a, g, c]);
    assert_eq!(out.changed[0].from, Status::Suspended);
    assert_eq!(out.changed[3].from, Status::Failed);
    for id in [r, a, g, c] {
        let exe = load(store, id);
        assert_eq!(exe.status, Status::Cancelled, "{id}");
        assert_eq!(exe.finished_at, Some(NOW), "{id}: finished now");
        assert_eq!(exe.error, None);
    }
    assert_eq!(
        load(store, b).finished_at,
        Some(1_700_000_001.0),
        "DONE keeps its time"
    );
    let again = state(store, &ids);
    assert!(control::terminate(store, r, None, NOW + 1.0)
        .unwrap()
        .changed
        .is_empty());
    assert_eq!(
        state(store, &ids),
        again,
        "terminating a finished tree is a no-op"
    );

    // a DONE root is left alone, but its live regions are still cancelled
    let ns = scope("ctl-term-done");
    let (root, kid) = (format!("{ns}r"), format!("{ns}r:k"));
    let done = put(store, &root, Status::Done, None, &[&kid]);
    put(store, &kid, Status::Pending, Some(&root), &[]);
    let out = control::terminate(store, &root, None, NOW).unwrap();
    assert_eq!(changed_ids(&out.changed), [kid.as_str()]);
    assert_eq!(load(store, &root), done, "DONE is not reclassified as CANCELLED");
    assert_eq!(status(store, &kid), Status::Cancelled);

    // every unfinished status becomes CANCELLED; suspend and resume leave the others alone
    for st in Status::ALL {
        let id = format!("{ns}{st}");
        let orig = put(store, &id, st, None, &[]);
        let susp = control::suspend(store, &id, None, NOW).unwrap();
        assert_eq!(
            susp.changed.len(),
            usize::from(st == Status::Running),
            "suspend {st}"
        );
        let mut exe = load(store, &id);
        if st != Status::Running {
            assert_eq!(exe, orig, "suspend of {st} is a no-op");
            let res = control::resume(store, &id, None, NOW).unwrap();
            assert_eq!(
                res.changed.len(),
                usize::from(st == Status::Suspended),
                "resume {st}"
            );
            exe = load(store, &id);
        }
        let term = control::terminate(store, &id, None, NOW).unwrap();
        let finished = matches!(st, Status::Done | Status::Cancelled);
        assert_eq!(term.changed.is_empty(), finished, "terminate {st}");
        if finished {
            assert_eq!(load(store, &id), exe);
        } else {
            assert_eq!(status(store, &id), Status::Cancelled);
        }
    }
}

/// Refusals are typed and change nothing: an unknown id, a bad id or time, a stale expected
/// version (the execution moved since the caller looked), a purge of a child or of a live
/// tree, bad `purge_finished` arguments.
pub fn control_refusals_change_nothing(store: &dyn ExecutionStore) {
    let ns = scope("ctl-refuse");
    let ids = tree(store, &ns, Status::Running);
    let r = &ids[0];
    let before = state(store, &ids);
    let unknown = format!("{ns}nope");
    assert_eq!(code(control::suspend(store, &unknown, None, NOW)), "NOT_FOUND");
    assert_eq!(code(control::resume(store, &unknown, None, NOW)), "NOT_FOUND");
    assert_eq!(code(control::terminate(store, &unknown, None, NOW)), "NOT_FOUND");
    assert_eq!(
        code(control::purge(store, &unknown, None, None).map(drop)),
        "NOT_FOUND"
    );
    assert_eq!(code(control::suspend(store, "", None, NOW)), "INVALID_INPUT");
    for bad in [f64::NAN, f64::INFINITY, -1.0] {
        assert_eq!(
            code(control::terminate(store, r, None, bad)),
            "INVALID_INPUT",
            "now = {bad}"
        );
    }
    let version = load(store, r).version;
    match control::terminate(store, r, Some(version - 1), NOW) {
        Err(StoreError::Conflict { expected, found, .. }) => {
            assert_eq!((expected, found), (version - 1, Some(version)));
        }
        other => panic!("a stale expected version is a Conflict, got {other:?}"),
    }
    assert_eq!(
        code(control::purge(store, r, Some(version + 1), None).map(drop)),
        "CONFLICT"
    );
    match control::purge(store, r, None, None) {
        Err(StoreError::InvalidInput { reason, .. }) => {
            assert!(reason.starts_with("purge refused: not finished:"), "{reason}");
            assert!(
                reason.contains("(RUNNING)") && reason.contains("dead letter"),
                "{reason}"
            );
        }
        other => panic!("a live tree is refused, got {other:?}"),
    }
    match control::purge(store, &ids[1], None, None) {
        Err(StoreError::InvalidInput { reason, .. }) => {
            assert!(reason.contains("is a child of"), "{reason}");
        }
        other => panic!("a child is refused, got {other:?}"),
    }
    let mut called = false;
    let mut archive = |_: &Value| {
        called = true;
        Ok(())
    };
    assert_eq!(
        code(control::purge(store, r, None, Some(&mut archive)).map(drop)),
        "INVALID_INPUT"
    );
    assert!(!called, "a refused purge archives nothing");
    let bad_requests = [
        PurgeFinished {
            statuses: vec![Status::Failed],
            ..PurgeFinished::new(1.0, NOW)
        },
        PurgeFinished {
            statuses: vec![],
            ..PurgeFinished::new(1.0, NOW)
        },
        PurgeFinished::new(f64::NAN, NOW),
        PurgeFinished::new(-5.0, NOW),
        PurgeFinished::new(1.0, f64::INFINITY),
    ];
    for req in &bad_requests {
        assert_eq!(
            code(control::purge_finished(store, req, None)),
            "INVALID_INPUT",
            "{req:?}"
        );
    }
    assert_eq!(state(store, &ids), before, "no refusal changed anything");
}

/// `purge` deletes a finished tree whole (a descendant found only by its id prefix too,
/// a member's missing child swept), hands the archive bundle over first (an archiver error
/// deletes nothing), leaves an unrelated root that merely shares the prefix, and a member
/// that moved meanwhile is a `Conflict` with the root kept.
pub fn control_purge_tree(store: &dyn ExecutionStore) {
    let ns = scope("ctl-purge");
    let ids: Vec<String> = ["r", "r:a", "r:a:g", "r:b", "r:z", "other"]
        .iter()
        .map(|s| format!("{ns}{s}"))
        .collect();
    let (r, a, g, b, z) = (&ids[0], &ids[1], &ids[2], &ids[3], &ids[4]);
    let gone = format!("{ns}r:gone");
    // `r:b` is no longer in `children` (a parent drops a child it is done with); `r:gone` is
    // listed but not stored, with an outbox entry still addressed to it; `r:z` is a root
    // whose id merely shares the prefix
    let mut root = put(store, r, Status::Done, None, &[a, &gone]);
    put(store, a, Status::Cancelled, Some(r), &[g]);
    put(store, g, Status::Done, Some(a), &[]);
    put(store, b, Status::Done, Some(r), &[]);
    put(store, z, Status::Running, None, &[]);
    let other = format!("{ns}other");
    put(store, &other, Status::Done, None, &[]);
    with_effects(store, &mut root);
    let mut ga = load(store, g);
    with_effects(store, &mut ga);
    let mut rr = load(store, r);
    store
        .commit(
            &mut rr,
            &Effects::new().emit(Some(&gone), Event::new(format!("{gone}-ev"), "Late")),
        )
        .unwrap();

    // an archiver error aborts with nothing deleted
    let before = state(store, &ids);
    let mut failing = |_: &Value| Err(StoreError::invalid("archive", "disk full"));
    assert!(control::purge(store, r, None, Some(&mut failing)).is_err());
    assert_eq!(state(store, &ids), before);

    let mut bundle = Value::Null;
    let mut archive = |b: &Value| {
        bundle = b.clone();
        Ok(())
    };
    let out = control::purge(store, r, None, Some(&mut archive)).expect("purge");
    assert_eq!(out.root_id, *r);
    let mut removed = out.removed.clone();
    assert_eq!(removed.pop().as_deref(), Some(r.as_str()), "the root goes last");
    removed.sort();
    let mut expected = vec![a.clone(), g.clone(), b.clone()];
    expected.sort();
    assert_eq!(removed, expected);
    assert_eq!(out.swept, std::slice::from_ref(&gone));
    for id in [r, a, g, b] {
        assert!(store.load(id).unwrap().is_none(), "{id} purged");
        assert!(store.read_trace(id).unwrap().is_empty());
        assert!(!store.is_processed(id, &format!("{id}-in")).unwrap());
    }
    assert!(all_outbox(store)
        .iter()
        .all(|e| ![r, &gone].contains(&&e.target_id.clone().unwrap_or_default())));
    assert!(all_timers(store)
        .iter()
        .all(|t| &t.execution_id != r && &t.execution_id != g));
    assert!(all_spawns(store).iter().all(|s| &s.parent_id != r));
    assert_eq!(
        status(store, z),
        Status::Running,
        "a root sharing the prefix stays"
    );
    assert_eq!(status(store, &other), Status::Done);

    assert_eq!(bundle["root_id"], json!(r));
    let members: Vec<&str> = bundle["executions"]
        .as_array()
        .expect("executions")
        .iter()
        .map(|e| e["id"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(members.first(), Some(&r.as_str()), "root first");
    assert_eq!(members.len(), 4);
    let pos = |id: &str| members.iter().position(|m| *m == id);
    assert!(pos(a) < pos(g), "parents before children: {members:?}");
    assert_eq!(bundle["executions"][0]["status"], json!("DONE"));
    assert_eq!(bundle["executions"][0]["context"]["kept"]["t"], json!("ü"));
    let traces = bundle["traces"].as_object().expect("traces");
    assert_eq!(traces.len(), 4);
    assert_eq!(traces[r.as_str()][0]["event_kind"], json!("Go"));
    assert_eq!(traces[r.as_str()][0]["index"], json!(0));
    assert_eq!(traces[a.as_str()], json!([]));
    assert!(matches!(
        control::purge(store, r, None, None),
        Err(StoreError::NotFound { .. })
    ));
}

/// `purge_finished` purges the roots in the chosen statuses that finished before the cutoff,
/// skips (and counts) undated ones unless asked, records refused trees and goes on; a dry
/// run reports the same and deletes nothing; `limit` caps it.
pub fn control_purge_finished(store: &dyn ExecutionStore) {
    let ns = scope("ctl-pf");
    let id = |s: &str| format!("{ns}{s}");
    let mk = |s: &str, st: Status, finished: Option<f64>, parent: Option<&str>, kids: &[&str]| {
        let mut exe = put(store, &id(s), st, parent, kids);
        exe.finished_at = finished;
        store.save(&mut exe).expect("save finished_at");
    };
    let live_kid = id("live:k");
    mk("done-old", Status::Done, Some(2.0), None, &[]);
    mk("canc-old", Status::Cancelled, Some(3.0), None, &[]);
    mk("done-new", Status::Done, Some(8.0), None, &[]);
    mk("undated", Status::Done, None, None, &[]);
    mk("live", Status::Done, Some(1.0), None, &[&live_kid]);
    mk("live:k", Status::Running, None, Some(&id("live")), &[]);
    mk("kid-old", Status::Done, Some(1.5), Some(&id("done-new")), &[]);
    mk("failed", Status::Failed, Some(1.0), None, &[]);
    let mine = |v: &[String]| -> Vec<String> {
        let mut v: Vec<String> = v.iter().filter(|i| i.starts_with(&ns)).cloned().collect();
        v.sort();
        v
    };
    let all: Vec<String> = [
        "done-old", "canc-old", "done-new", "undated", "live", "live:k", "kid-old", "failed",
    ]
    .iter()
    .map(|s| id(s))
    .collect();
    let before = state(store, &all);

    let dry = PurgeFinished {
        dry_run: true,
        ..PurgeFinished::new(5.0, 10.0)
    };
    let report = control::purge_finished(store, &dry, None).expect("dry run");
    assert!(report.dry_run);
    assert_eq!(mine(&report.purged), [id("canc-old"), id("done-old")]);
    assert!(report.refused[&id("live")].contains("not finished"), "{report:?}");
    assert!(report.skipped_undated >= 1);
    assert_eq!(state(store, &all), before, "a dry run deletes nothing");
    let undated = PurgeFinished {
        include_undated: true,
        ..dry.clone()
    };
    let report = control::purge_finished(store, &undated, None).unwrap();
    assert!(report.purged.contains(&id("undated")));
    assert_eq!(state(store, &all), before);

    let only_cancelled = PurgeFinished {
        statuses: vec![Status::Cancelled],
        ..PurgeFinished::new(5.0, 10.0)
    };
    let mut archived = Vec::new();
    let mut archive = |b: &Value| {
        archived.push(b["root_id"].as_str().unwrap_or_default().to_owned());
        Ok(())
    };
    let report = control::purge_finished(store, &only_cancelled, Some(&mut archive)).unwrap();
    assert_eq!(mine(&report.purged), [id("canc-old")]);
    assert_eq!(mine(&archived), [id("canc-old")]);
    assert!(store.load(&id("canc-old")).unwrap().is_none());
    assert!(store.load(&id("done-old")).unwrap().is_some());

    let report = control::purge_finished(store, &PurgeFinished::new(5.0, 10.0), None).unwrap();
    assert_eq!(mine(&report.purged), [id("done-old")]);
    assert!(report.refused.contains_key(&id("live")));
    for (s, kept) in [
        ("done-old", false),
        ("done-new", true),
        ("undated", true),
        ("live", true),
        ("live:k", true),
        ("kid-old", true),
        ("failed", true),
    ] {
        assert_eq!(store.load(&id(s)).unwrap().is_some(), kept, "{s}");
    }
    let report = control::purge_finished(store, &PurgeFinished::new(5.0, 10.0), None).unwrap();
    assert!(mine(&report.purged).is_empty(), "nothing left to purge");
    let limited = PurgeFinished {
        limit: Some(0),
        ..PurgeFinished::new(0.0, 100.0)
    };
    assert_eq!(
        control::purge_finished(store, &limited, None).unwrap(),
        control::PurgeReport::default()
    );
}
