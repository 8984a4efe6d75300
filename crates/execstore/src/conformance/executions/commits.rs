//! Writes: CAS inserts and conflicts, every field round-tripped, a commit's effects all or nothing, batches, races.

use super::*;

/// A new execution is inserted at version 0; a write at a stale version is a `Conflict`
/// that names both versions, writes nothing and leaves the caller's version alone.
pub fn cas_insert_and_conflict(store: &dyn ExecutionStore) {
    let ns = scope("cas");
    let id = format!("{ns}a");
    assert!(store.load(&id).unwrap().is_none());
    let mut exe = created(store, &id, "def");
    let mut stale = exe.clone();
    exe.active_path = Some("root.b".into());
    store.save(&mut exe).unwrap();
    assert_eq!(exe.version, 2);

    stale.active_path = Some("root.stale".into());
    match store.save(&mut stale) {
        Err(StoreError::Conflict {
            id: cid,
            expected,
            found,
        }) => {
            assert_eq!((cid.as_str(), expected, found), (id.as_str(), 1, Some(2)));
        }
        other => panic!("a stale save must conflict, got {other:?}"),
    }
    assert_eq!(
        stale.version, 1,
        "a lost CAS leaves the caller's version unchanged"
    );
    let stored = store.load(&id).unwrap().unwrap();
    assert_eq!(stored.version, 2);
    assert_eq!(
        stored.active_path.as_deref(),
        Some("root.b"),
        "the winner's write stays"
    );

    // A fresh object for an existing id is stale too (version 0 only inserts).
    let mut again = Execution::new(&id, "def");
    assert_eq!(code(store.save(&mut again)), "CONFLICT");

    // An unknown id at a version above 0 is a conflict with nothing found, not an insert.
    let mut ghost = Execution::new(format!("{ns}ghost"), "def");
    ghost.version = 3;
    match store.commit(&mut ghost, &Effects::new()) {
        Err(StoreError::Conflict {
            found: None,
            expected: 3,
            ..
        }) => {}
        other => panic!("expected a conflict with found None, got {other:?}"),
    }
    assert!(store.load(&ghost.id).unwrap().is_none());
}

/// Every field, including those a newer engine adds, survives a write and a read, in order.
pub fn save_round_trips_every_field(store: &dyn ExecutionStore) {
    let ns = scope("roundtrip");
    let mut exe = Execution::new(format!("{ns}full"), "orders");
    exe.definition_fqn = Some("shop.Orders".into());
    exe.root_path = "root".into();
    exe.status = Status::Failed;
    exe.outcome = Some("failed".into());
    exe.error = Some("ValueError: boom — ünïcode".into());
    exe.active_path = Some("root.pay".into());
    exe.history = obj(json!({"root.z": "root.z.b", "root.a": "root.a.c"}));
    exe.context =
        obj(json!({"zeta": 1, "alpha": [1.5, 0.1, 1e-7, 1e20, "é😀"], "nested": {"b": null, "a": true}}));
    exe.processed_events = 7;
    exe.priority = 4;
    exe.parent_id = Some(format!("{ns}parent"));
    exe.child_id = Some("region-1".into());
    let mut deferred = Event::new("ev-1", "Later").with_data(obj(json!({"x": 1})));
    deferred.created_time = Some("2026-01-02T03:04:05.123456Z".into());
    deferred.extra.insert("trace_id".into(), "abc".into());
    exe.deferred.push(deferred);
    let mut child = ChildState {
        root_path: "root.r1".into(),
        finished: true,
        outcome: Some("ok".into()),
        result: obj(json!({"n": 2})),
        submachine: false,
        key: "r1".into(),
        extra: JsonObject::new(),
    };
    child.extra.insert("future".into(), json!([1, 2]));
    exe.children.insert(format!("{ns}full:root.r1:0"), child);
    exe.invoke_seq.insert("root.fork".into(), 2);
    exe.created_at = Some(1_700_000_000.25);
    exe.updated_at = Some(1_700_000_100.5);
    exe.finished_at = Some(1_700_000_100.5);
    exe.expires_at = Some(1_700_086_400.0);
    exe.extra.insert("added_in_harel_1_0".into(), json!({"k": "v"}));

    let original = exe.clone();
    store.save(&mut exe).unwrap();
    let loaded = store.load(&exe.id).unwrap().expect("stored");
    let mut expected = original;
    expected.version = 1;
    assert_eq!(loaded, expected);
    assert_eq!(
        loaded.to_json(),
        expected.to_json(),
        "field and key order survive"
    );
}

/// One commit applies every effect: outbox rows (seqs returned in order), the dedupe
/// marker, timers, spawns and the trace step.
pub fn commit_applies_every_effect(store: &dyn ExecutionStore) {
    let ns = scope("effects");
    let mut exe = created(store, &format!("{ns}a"), "def");
    bump(&mut exe);
    let to_self = Event::new(format!("{ns}out-1"), "Progress").with_data(obj(json!({"n": 1})));
    let broadcast = Event::new(format!("{ns}out-2"), "Broadcast");
    let effects = Effects::new()
        .emit(Some(&exe.id), to_self.clone())
        .emit(None, broadcast.clone())
        .processed(format!("{ns}in-1"))
        .schedule("root.a.timeout", 1234.5)
        .spawn(
            format!("{ns}a:root.fork:0"),
            "root.fork.r1",
            obj(json!({"seed": "é", "n": 0.1})),
        )
        .trace(obj(
            json!({"event_kind": "Go", "from_path": "root.a", "to_path": "root.b", "actions": ["x"]}),
        ));
    let seqs = store.commit(&mut exe, &effects).unwrap();
    assert_eq!(exe.version, 2);
    assert_eq!(seqs.len(), 2);
    assert!(seqs[0] < seqs[1], "outbox seqs follow emit order");

    let outbox: Vec<OutboxEntry> = all_outbox(store)
        .into_iter()
        .filter(|e| seqs.contains(&e.seq))
        .collect();
    assert_eq!(outbox.len(), 2);
    assert_eq!(
        (outbox[0].target_id.as_deref(), &outbox[0].event),
        (Some(exe.id.as_str()), &to_self)
    );
    assert_eq!(
        (outbox[1].target_id.as_deref(), &outbox[1].event),
        (None, &broadcast)
    );
    assert!(store.is_processed(&exe.id, &format!("{ns}in-1")).unwrap());
    let timers: Vec<DueTimer> = store
        .due_timers(2000.0, None, MAX_PAGE)
        .unwrap()
        .into_iter()
        .filter(|t| t.execution_id == exe.id)
        .collect();
    assert_eq!(
        timers,
        vec![DueTimer {
            execution_id: exe.id.clone(),
            path: "root.a.timeout".into(),
            fire_at: 1234.5
        }]
    );
    let spawns: Vec<SpawnEntry> = all_spawns(store)
        .into_iter()
        .filter(|s| s.parent_id == exe.id)
        .collect();
    assert_eq!(spawns.len(), 1);
    assert_eq!(spawns[0].child_id, format!("{ns}a:root.fork:0"));
    assert_eq!(spawns[0].root_path, "root.fork.r1");
    assert_eq!(spawns[0].context, obj(json!({"seed": "é", "n": 0.1})));
    let trace = store.read_trace(&exe.id).unwrap();
    assert_eq!(trace.len(), 1);
    assert_eq!(trace[0]["index"], json!(0));
    assert_eq!(trace[0]["to_path"], json!("root.b"));
    assert_eq!(
        store.load(&exe.id).unwrap().unwrap(),
        exe,
        "the stored state is the committed one"
    );
}

/// A commit that loses the CAS leaves no outbox, dedupe, timer, spawn or trace row, and
/// the store stays writable.
pub fn conflicting_commit_changes_nothing(store: &dyn ExecutionStore) {
    let ns = scope("conflict");
    let mut exe = created(store, &format!("{ns}a"), "def");
    let mut stale = exe.clone();
    exe.active_path = Some("root.won".into());
    store.save(&mut exe).unwrap();
    let before = snapshot(store, &[(&exe.id, &format!("{ns}in"))]);

    bump(&mut stale);
    let effects = Effects::new()
        .emit(Some(&exe.id), Event::new(format!("{ns}out"), "Lost"))
        .processed(format!("{ns}in"))
        .schedule("root.t", 10.0)
        .spawn(format!("{ns}child"), "root.r", JsonObject::new())
        .trace(obj(json!({"event_kind": "Lost"})));
    assert_eq!(code(store.commit(&mut stale, &effects)), "CONFLICT");
    assert_eq!(stale.version, 1);
    assert_eq!(
        snapshot(store, &[(&exe.id, &format!("{ns}in"))]),
        before,
        "a lost commit changes nothing"
    );

    // The store is not left locked or mid-transaction: the winner can commit the same effects.
    bump(&mut exe);
    let seqs = store.commit(&mut exe, &effects).unwrap();
    assert_eq!(seqs.len(), 1);
    assert!(store.is_processed(&exe.id, &format!("{ns}in")).unwrap());
}

/// `commit_batch` gives every item the outcome `commit` would give it, in order: new
/// executions are inserted, a stale item is a `Conflict` that leaves no row of any kind, an
/// invalid item is `InvalidInput` and writes nothing, a later item of an execution sees an
/// earlier one's write, outbox seqs climb across the batch, and only the committed items'
/// versions move.
pub fn commit_batch_per_item_outcome(store: &dyn ExecutionStore) {
    let ns = scope("batch");
    assert!(
        store.commit_batch(&mut []).unwrap().is_empty(),
        "an empty batch is fine"
    );

    let mut won = created(store, &format!("{ns}won"), "def");
    let mut stale = won.clone();
    won.active_path = Some("root.won".into());
    store.save(&mut won).unwrap();
    bump(&mut stale);
    let twice = created(store, &format!("{ns}twice"), "def");
    let mut bad = created(store, &format!("{ns}bad"), "def");
    bump(&mut bad);
    let mut new_a = Execution::new(format!("{ns}new-a"), "def");
    new_a.status = Status::Running;
    let new_b = Execution::new(format!("{ns}new-b"), "def");
    let mut twice_1 = twice.clone();
    bump(&mut twice_1);
    let mut twice_2 = twice_1.clone();
    twice_2.version = 2;
    bump(&mut twice_2);
    let (won_id, twice_id, bad_id) = (won.id.clone(), twice.id.clone(), bad.id.clone());
    let (a_id, b_id) = (new_a.id.clone(), new_b.id.clone());
    let ev = |name: &str| Event::new(format!("{ns}{name}"), "E");

    let mut items = vec![
        BatchItem::new(
            new_a,
            Effects::new()
                .emit(Some(&a_id), ev("a-1"))
                .emit(None, ev("a-2"))
                .processed(format!("{ns}a-in"))
                .schedule("root.t", 5.0)
                .trace(obj(json!({"n": "a"}))),
        ),
        BatchItem::new(
            stale,
            Effects::new()
                .emit(Some(&won_id), ev("stale-out"))
                .processed(format!("{ns}stale-in"))
                .schedule("root.stale", 6.0)
                .spawn(format!("{ns}stale-child"), "root.c", JsonObject::new())
                .trace(obj(json!({"n": "stale"}))),
        ),
        BatchItem::new(
            twice_1,
            Effects::new()
                .emit(Some(&twice_id), ev("t-1"))
                .processed(format!("{ns}t-in-1"))
                .schedule("root.t", 7.0)
                .trace(obj(json!({"n": 1}))),
        ),
        BatchItem::new(
            bad,
            Effects::new()
                .emit(None, ev("bad-out"))
                .processed(format!("{ns}bad-in"))
                .schedule("root.ok", 8.0)
                .schedule("root.bad", f64::NAN)
                .spawn(format!("{ns}bad-child"), "root.c", JsonObject::new())
                .trace(obj(json!({"n": "bad"}))),
        ),
        BatchItem::new(
            twice_2,
            Effects::new()
                .emit(Some(&twice_id), ev("t-2"))
                .processed(format!("{ns}t-in-2"))
                .cancel("root.t")
                .trace(obj(json!({"n": 2}))),
        ),
        BatchItem::new(
            new_b,
            Effects::new().emit(None, ev("b-1")).spawn(
                format!("{ns}b-child"),
                "root.f",
                obj(json!({"k": 1})),
            ),
        ),
    ];
    let results = store
        .commit_batch(&mut items)
        .expect("the batch as a whole commits");
    assert_eq!(results.len(), items.len(), "one result per item");
    match &results[1] {
        Err(StoreError::Conflict { id, expected, found }) => {
            assert_eq!((id.as_str(), *expected, *found), (won_id.as_str(), 1, Some(2)));
        }
        other => panic!("the stale item must conflict, got {other:?}"),
    }
    match &results[3] {
        Err(StoreError::InvalidInput { field, .. }) => assert!(field.contains("timers"), "{field}"),
        other => panic!("the invalid item must be InvalidInput, got {other:?}"),
    }
    let mut seqs = Vec::new();
    for (k, want) in [(0, 2), (2, 1), (4, 1), (5, 1)] {
        match &results[k] {
            Ok(got) => {
                assert_eq!(got.len(), want, "item {k}: one seq per emit");
                seqs.extend(got.iter().copied());
            }
            Err(e) => panic!("item {k} must commit, got {e}"),
        }
    }
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "seqs climb across the batch, in item and emit order: {seqs:?}"
    );
    let versions: Vec<i64> = items.iter().map(|item| item.execution.version).collect();
    assert_eq!(
        versions,
        [1, 1, 2, 1, 3, 1],
        "only committed items carry a new version"
    );

    // What is stored.
    let stored_won = store.load(&won_id).unwrap().unwrap();
    assert_eq!(
        (stored_won.version, stored_won.active_path.as_deref()),
        (2, Some("root.won"))
    );
    assert_eq!(store.load(&twice_id).unwrap().unwrap(), items[4].execution);
    assert_eq!(store.load(&a_id).unwrap().unwrap(), items[0].execution);
    assert_eq!(store.load(&b_id).unwrap().unwrap(), items[5].execution);
    assert_eq!(store.load(&bad_id).unwrap().unwrap().version, 1);

    let outbox: Vec<(i64, String)> = all_outbox(store)
        .into_iter()
        .filter(|e| e.event.id.starts_with(&ns))
        .map(|e| (e.seq, e.event.id[ns.len()..].to_owned()))
        .collect();
    let want: Vec<(i64, String)> = seqs
        .iter()
        .zip(["a-1", "a-2", "t-1", "t-2", "b-1"])
        .map(|(seq, name)| (*seq, name.to_owned()))
        .collect();
    assert_eq!(outbox, want, "the committed items' outbox rows, and only theirs");
    assert!(store.is_processed(&a_id, &format!("{ns}a-in")).unwrap());
    assert!(store.is_processed(&twice_id, &format!("{ns}t-in-1")).unwrap());
    assert!(store.is_processed(&twice_id, &format!("{ns}t-in-2")).unwrap());
    assert!(!store.is_processed(&won_id, &format!("{ns}stale-in")).unwrap());
    assert!(!store.is_processed(&bad_id, &format!("{ns}bad-in")).unwrap());
    let timers: Vec<(String, String)> = store
        .due_timers(1e9, None, MAX_PAGE)
        .unwrap()
        .into_iter()
        .filter(|t| t.execution_id.starts_with(&ns))
        .map(|t| (t.execution_id, t.path))
        .collect();
    assert_eq!(
        timers,
        [(a_id.clone(), "root.t".to_string())],
        "the stale and invalid items armed nothing; the second step of `twice` cancelled the first's"
    );
    let spawns: Vec<String> = all_spawns(store)
        .into_iter()
        .filter(|s| s.child_id.starts_with(&ns))
        .map(|s| s.child_id)
        .collect();
    assert_eq!(spawns, [format!("{ns}b-child")]);
    assert!(
        store.read_trace(&won_id).unwrap().is_empty(),
        "no trace of the stale item"
    );
    assert!(
        store.read_trace(&bad_id).unwrap().is_empty(),
        "no trace of the invalid item"
    );
    let trace = store.read_trace(&twice_id).unwrap();
    assert_eq!(
        trace
            .iter()
            .map(|s| (s["index"].clone(), s["n"].clone()))
            .collect::<Vec<_>>(),
        [(json!(0), json!(1)), (json!(1), json!(2))]
    );
    assert_eq!(store.read_trace(&a_id).unwrap().len(), 1);

    // The losers can retry as plain commits, and a later batch's seqs are higher still.
    let mut retry = store.load(&won_id).unwrap().unwrap();
    let mut again = vec![BatchItem::new(
        retry.clone(),
        Effects::new().emit(None, ev("retry")),
    )];
    let result = store.commit_batch(&mut again).unwrap();
    assert!(result[0].as_ref().unwrap()[0] > *seqs.last().unwrap());
    assert_eq!(again[0].execution.version, 3);
    retry.version = 3;
    assert_eq!(store.load(&won_id).unwrap().unwrap(), retry);
}

/// Several threads each load, increment a counter in the context and commit, retrying on
/// `Conflict`: the counter ends at the number of increments and every increment's effects
/// are there exactly once.
#[cfg(not(target_arch = "wasm32"))]
pub fn cas_race(store: &dyn ExecutionStore) {
    const THREADS: usize = 4;
    const EACH: usize = 25;
    let ns = scope("race");
    let id = format!("{ns}hot");
    created(store, &id, "def");
    let conflicts = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (id, ns, conflicts) = (&id, &ns, &conflicts);
            s.spawn(move || {
                for i in 0..EACH {
                    loop {
                        let mut exe = store.load(id).unwrap().expect("stored");
                        bump(&mut exe);
                        let effects = Effects::new()
                            .processed(format!("{ns}in-{t}-{i}"))
                            .emit(Some(id), Event::new(format!("{ns}out-{t}-{i}"), "Inc"));
                        match store.commit(&mut exe, &effects) {
                            Ok(_) => break,
                            Err(StoreError::Conflict { .. }) => {
                                conflicts.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(other) => panic!("only conflicts may fail a racing commit: {other}"),
                        }
                    }
                }
            });
        }
    });
    let exe = store.load(&id).unwrap().unwrap();
    let total = (THREADS * EACH) as i64;
    assert_eq!(
        exe.context["counter"],
        json!(total),
        "no increment lost or doubled"
    );
    assert_eq!(exe.version, total + 1);
    let mine = all_outbox(store)
        .into_iter()
        .filter(|e| e.target_id.as_deref() == Some(id.as_str()))
        .count();
    assert_eq!(
        mine as i64, total,
        "one outbox row per winning commit, none from losers"
    );
    for t in 0..THREADS {
        for i in 0..EACH {
            assert!(store.is_processed(&id, &format!("{ns}in-{t}-{i}")).unwrap());
        }
    }
}
