//! The log: appends, ids, rollback, a transaction's own reads, isolation and read windows.

use super::*;

/// `seq` from 1 without gaps; `ts` the later of the clock and the previous `ts` (the clock
/// may go back); `correlation_id` defaults to the id; the envelope's fields and JSON.
pub fn append_assigns_gap_free_seq_and_ts(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-append", "w");
    assert_eq!(s.head_seq(&w).unwrap(), 0);
    h.clock().set(at(10));
    let mut tx = s.begin(&w).unwrap();
    let mut e2 = entry("e2", "y");
    e2.correlation_id = Some("chain".into());
    e2.causation = Some(json!({"firing_id": "f", "run_id": "r", "depth": 1}));
    e2.traceparent = Some("00-abc-def-01".into());
    let first = tx.append(&[entry("e1", "x"), e2]).unwrap();
    assert_eq!(seqs(&first), [1, 2]);
    assert_eq!(first[0].correlation_id, "e1");
    assert_eq!(first[1].correlation_id, "chain");
    assert_eq!(first[0].ts, at(10));
    assert_eq!(first[0].workspace_id, "w");
    assert_eq!(tx.head_seq().unwrap(), 2);
    tx.commit().unwrap();
    // The clock goes back: ts stays at the previous one.
    h.clock().set(at(5));
    let second = append(s, &w, &["e3"]);
    assert_eq!(second[0].seq, 3);
    assert_eq!(second[0].ts, at(10), "ts never decreases");
    h.clock().set(at(20));
    let third = append(s, &w, &["e4"]);
    assert_eq!((third[0].seq, third[0].ts), (4, at(20)));
    assert_eq!(s.head_seq(&w).unwrap(), 4);
    let got = s.envelope(&w, "e2").unwrap().expect("stored");
    assert_eq!(got, first[1]);
    assert_eq!(got.to_json(), first[1].to_json());
    assert_eq!(
        got.causation,
        Some(json!({"firing_id": "f", "run_id": "r", "depth": 1}))
    );
    assert_eq!(got.traceparent.as_deref(), Some("00-abc-def-01"));
    assert_eq!(got.event_type(), "suite:y");
    assert!(s.envelope(&w, "nope").unwrap().is_none());
    let all = s.read(&w, &LogQuery::new()).unwrap();
    assert_eq!(seqs(&all), [1, 2, 3, 4]);
    assert_eq!(all[0].to_json(), first[0].to_json());
    // The text is reflexr's: json.dumps of the model dump, keys in model order.
    assert!(all[0].to_json().starts_with(
        "{\"seq\": 1, \"id\": \"e1\", \"ts\": \"2026-01-01T12:00:10Z\", \"workspace_id\": \"w\", \"actor\": {\"kind\": \"source\", \"name\": \"suite\"}, \"causation\": null, \"correlation_id\": \"e1\", \"traceparent\": null, \"event\": {\"type\": \"suite:x\", \"z\": 1.5, "
    ), "{}", all[0].to_json());
}

/// An id already in the log, earlier in the transaction, or twice in one call is refused,
/// none of that call is appended, and the transaction stays usable.
pub fn duplicate_ids_are_refused_whole(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-dup", "w");
    append(s, &w, &["a"]);
    let mut tx = s.begin(&w).unwrap();
    for (case, entries) in [
        ("in the log", vec![entry("b", "x"), entry("a", "x")]),
        ("twice in one call", vec![entry("c", "x"), entry("c", "x")]),
    ] {
        match tx.append(&entries) {
            Err(StoreError::AlreadyExists { what: "event", .. }) => {}
            other => panic!("{case}: {other:?}"),
        }
        assert_eq!(tx.head_seq().unwrap(), 1, "{case}: nothing of the call appended");
    }
    tx.append(&[entry("d", "x")]).unwrap();
    assert!(
        matches!(
            tx.append(&[entry("d", "x")]),
            Err(StoreError::AlreadyExists { .. })
        ),
        "earlier in the transaction"
    );
    assert!(tx.envelope("b").unwrap().is_none());
    tx.commit().unwrap();
    assert_eq!(seqs(&s.read(&w, &LogQuery::new()).unwrap()), [1, 2]);
    assert_eq!(s.envelope(&w, "d").unwrap().unwrap().seq, 2);
}

/// A transaction dropped without commit leaves nothing of itself, and moves no counter.
pub fn rollback_leaves_nothing(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-rollback", "w");
    append(s, &w, &["a"]);
    commit(s, &w, |tx| {
        tx.save_runs(&[run("r0", "rule", "k", 1, t0())]).unwrap()
    });
    {
        let mut tx = s.begin(&w).unwrap();
        tx.append(&[entry("b", "x"), entry("c", "x")]).unwrap();
        tx.save_runs(&[run("r1", "rule", "k", 2, t0())]).unwrap();
        tx.save_progress("rule", &RuleProgress::from_doc(obj(json!({"cursor": 3}))))
            .unwrap();
        tx.save_states(
            "rule",
            &[("k".into(), ScopeState::from_doc(obj(json!({"scope": {}}))))],
        )
        .unwrap();
        tx.dead_letter(&[EvaluationError::new("rule", 2, "boom")])
            .unwrap();
        tx.save_schedule("hourly", at(1)).unwrap();
        tx.save_stored_rule(&stored("suite:r", 1, StoredRuleStatus::Active))
            .unwrap();
        tx.clear_states("other").unwrap();
        // dropped here
    }
    assert_eq!(s.head_seq(&w).unwrap(), 1);
    assert!(s.envelope(&w, "b").unwrap().is_none());
    assert!(s.run(&w, "r1").unwrap().is_none());
    assert!(s.progress(&w).unwrap().is_empty());
    assert!(s.dead_letters(&w, None).unwrap().is_empty());
    assert!(s.schedules(&w).unwrap().is_empty());
    assert!(s.stored_rules(&w).unwrap().is_empty());
    // No counter moved: the next append is seq 2, and a new run is listed after r0.
    assert_eq!(append(s, &w, &["b"])[0].seq, 2);
    commit(s, &w, |tx| {
        tx.save_runs(&[run("r2", "rule", "k", 2, t0())]).unwrap()
    });
    assert_eq!(ids(&s.runs(&w, &RunQuery::default()).unwrap()), ["r2", "r0"]);
    let mut tx = s.begin(&w).unwrap();
    assert!(tx.stored_rule("suite:r").unwrap().is_none());
    assert!(tx.progress("rule").unwrap().is_none());
    assert!(tx.schedule("hourly").unwrap().is_none());
}

/// Every kind of write is visible to the transaction's own later reads, and to no one else
/// before it commits.
pub fn transaction_reads_its_own_writes(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-own", "w");
    append(s, &w, &["a", "b"]);
    let mut tx = s.begin(&w).unwrap();
    tx.append(&[entry("c", "x")]).unwrap();
    assert_eq!(tx.head_seq().unwrap(), 3);
    assert_eq!(seqs(&tx.read(1, 10).unwrap()), [2, 3]);
    assert_eq!(seqs(&tx.read(0, 2).unwrap()), [1, 2]);
    assert_eq!(tx.envelope("c").unwrap().unwrap().seq, 3);
    let p = RuleProgress::from_doc(obj(
        json!({"cursor": 3, "generation": 0, "definition": "", "deadlines": {}, "silent_through": 0}),
    ));
    tx.save_progress("rule", &p).unwrap();
    assert_eq!(tx.progress("rule").unwrap(), Some(p.clone()));
    let r = run("r1", "rule", "k", 3, t0());
    tx.save_runs(std::slice::from_ref(&r)).unwrap();
    assert_eq!(tx.run("r1").unwrap(), Some(r.clone()));
    assert_eq!(ids(&tx.scope_runs("rule", "k").unwrap()), ["r1"]);
    tx.save_schedule("tick", at(3)).unwrap();
    assert_eq!(tx.schedule("tick").unwrap(), Some(at(3)));
    let sr = stored("suite:own", 1, StoredRuleStatus::Active);
    tx.save_stored_rule(&sr).unwrap();
    assert_eq!(tx.stored_rule("suite:own").unwrap(), Some(sr.clone()));
    assert_eq!(tx.stored_rules().unwrap(), vec![sr.clone()]);
    // Outside, nothing yet.
    read_beside_open_tx(h, || s.head_seq(&w), 2);
    read_beside_open_tx(h, || s.run(&w, "r1"), None);
    tx.commit().unwrap();
    assert_eq!(s.head_seq(&w).unwrap(), 3);
    assert_eq!(s.run(&w, "r1").unwrap(), Some(r));
    assert_eq!(s.progress(&w).unwrap(), vec![("rule".to_string(), p)]);
    assert_eq!(s.stored_rules(&w).unwrap(), vec![sr]);
    assert_eq!(s.schedules(&w).unwrap(), vec![("tick".to_string(), at(3))]);
}

/// Workspaces (and tenants) share nothing: seqs, ids, runs, leases and cursors are their own.
pub fn workspaces_are_isolated(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let a = ws("t-iso", "a");
    let b = ws("t-iso", "b");
    let c = ws("t-iso-2", "a");
    for w in [&a, &b, &c] {
        assert_eq!(append(s, w, &["same"])[0].seq, 1);
        commit(s, w, |tx| {
            tx.save_runs(&[run("r", "rule", "k", 1, t0())]).unwrap()
        });
    }
    append(s, &a, &["more"]);
    assert_eq!(s.head_seq(&a).unwrap(), 2);
    assert_eq!(s.head_seq(&b).unwrap(), 1);
    assert_eq!(s.head_seq(&c).unwrap(), 1);
    assert_eq!(s.read(&c, &LogQuery::new()).unwrap().len(), 1);
    assert!(s.acquire_lease(&a, "k", "x", Duration::from_secs(30)).unwrap());
    assert!(s.acquire_lease(&b, "k", "y", Duration::from_secs(30)).unwrap());
    s.save_cursor(&a, "m", 2).unwrap();
    assert_eq!(s.cursor(&b, "m").unwrap(), 0);
    assert_eq!(s.cursor(&c, "m").unwrap(), 0);
}

/// `after < seq < before`, some types, the first `limit`, the last `last` (oldest first).
pub fn read_windows_filter_in_the_store(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-read", "w");
    let mut tx = s.begin(&w).unwrap();
    let entries: Vec<Entry> = (1..=10)
        .map(|i| entry(&format!("e{i}"), if i % 3 == 0 { "three" } else { "other" }))
        .collect();
    tx.append(&entries).unwrap();
    tx.commit().unwrap();
    let read = |q: LogQuery| seqs(&s.read(&w, &q).unwrap());
    assert_eq!(read(LogQuery::new()), (1..=10).collect::<Vec<_>>());
    assert_eq!(read(LogQuery::new().after(7)), [8, 9, 10]);
    assert_eq!(read(LogQuery::new().before(4)), [1, 2, 3]);
    assert_eq!(read(LogQuery::new().after(2).before(6)), [3, 4, 5]);
    assert_eq!(read(LogQuery::new().after(6).before(6)), Vec::<i64>::new());
    assert_eq!(read(LogQuery::new().before(1)), Vec::<i64>::new());
    assert_eq!(read(LogQuery::new().before(0)), Vec::<i64>::new());
    assert_eq!(read(LogQuery::new().after(50)), Vec::<i64>::new());
    assert_eq!(read(LogQuery::new().types(["suite:three"])), [3, 6, 9]);
    assert_eq!(
        read(LogQuery::new().types(["suite:three", "suite:none"]).limit(2)),
        [3, 6]
    );
    assert_eq!(read(LogQuery::new().types(["suite:three"]).last(2)), [6, 9]);
    assert_eq!(
        read(LogQuery::new().types(Vec::<String>::new())),
        Vec::<i64>::new()
    );
    assert_eq!(read(LogQuery::new().limit(3)), [1, 2, 3]);
    assert_eq!(read(LogQuery::new().last(3)), [8, 9, 10]);
    assert_eq!(read(LogQuery::new().last(3).before(5)), [2, 3, 4]);
    assert_eq!(read(LogQuery::new().last(30)), (1..=10).collect::<Vec<_>>());
    assert_eq!(read(LogQuery::new().limit(0)), Vec::<i64>::new());
    assert_eq!(read(LogQuery::new().last(0)), Vec::<i64>::new());
    assert_eq!(
        read(LogQuery::new().after(3).types(["suite:other"]).last(2)),
        [8, 10]
    );
    invalid(s.read(&w, &LogQuery::new().limit(1).last(1)), "limit and last");
    invalid(s.read(&w, &LogQuery::new().after(-1)), "negative after");
    invalid(s.read(&w, &LogQuery::new().limit(MAX_READ + 1)), "huge limit");
    // A workspace nobody wrote reads empty.
    assert!(s
        .read(&ws("t-read", "none"), &LogQuery::new())
        .unwrap()
        .is_empty());
}
