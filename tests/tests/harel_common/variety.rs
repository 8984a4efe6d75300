//! The variety of rows both sides write and read back: every field, effect and edge case, and
//! the checks of a commit made on harel's data.

use super::*;

/// execstore writes the same variety harel's script does, with ids of its own ("...-101").
pub fn write_variety(store: &dyn ExecutionStore) {
    let mut ord = Execution::new("ord-101", "order");
    ord.status = Status::Running;
    ord.active_path = Some("order.waiting".into());
    ord.history = obj(json!({"order": "order.waiting"}));
    ord.context = obj(json!({
        "z_last_key_first": 1, "amount": 12.5, "floats": floats(), "note": TEXT,
        "nested": {"b": [1, {"c": null}], "a": true}
    }));
    ord.processed_events = 1;
    ord.created_at = Some(T0);
    ord.updated_at = Some(T0 + 1.25);
    let mut charge = Event::new("es-ev-pay-1", "Charge").with_data(obj(
        json!({"amount": 12.5, "currency": "€", "tiny": 1e-7, "huge": 1e20}),
    ));
    charge.created_time = Some("2024-01-02T03:04:05.123456Z".into());
    let mut placed = Event::new("es-ev-broadcast-1", "OrderPlaced");
    placed.received_time = Some("2024-01-02T03:04:05".into());
    let mut tick = Event::new("es-ev-self-1", "Tick").with_data(obj(json!({"text": TEXT})));
    tick.created_time = Some("2024-06-30T23:59:59+05:30".into());
    tick.received_time = Some("2024-07-01T00:00:00.000001Z".into());
    let context_out = json!(ord.context);
    let seqs = store
        .commit(
            &mut ord,
            &Effects::new()
                .emit(Some("pay-101"), charge)
                .emit(None, placed)
                .emit(Some("ord-101"), tick)
                .processed("es-ev-start-1")
                .schedule("order.waiting", T0 + 30.5)
                .schedule("order.reminder", T0 + 3600.0)
                .trace(step(
                    "Start",
                    json!({}),
                    None,
                    "order.waiting",
                    &["reserve", "notify"],
                    context_out,
                    T0 + 1.25,
                )),
        )
        .expect("commit ord-101");
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(ord.version, 1);
    ord.processed_events = 2;
    ord.updated_at = Some(T0 + 2.0);
    ord.context.insert("amount".into(), json!(0.1));
    let mut trace = step(
        "Paid",
        json!({"amount": 0.1, "ids": ["a", "b"], "tiny": 1e-7, "huge": 1e20, "text": TEXT}),
        Some("order.waiting"),
        "order.paid",
        &[],
        json!({"amount": 0.1, "floats": floats()}),
        T0 + 2.0,
    );
    trace.insert("assigned".into(), json!({"amount": 0.1}));
    store
        .commit(
            &mut ord,
            &Effects::new()
                .emit(
                    Some("pay-101"),
                    Event::new("es-ev-pay-2", "Capture").with_data(obj(json!({"ratio": 1.0 / 3.0}))),
                )
                .processed("es-ev-2")
                .schedule("order.waiting", T0 + 60.25)
                .cancel("order.reminder")
                .schedule("order.escalate", T0 + 7200.0)
                .trace(trace),
        )
        .expect("commit ord-101 again");

    let mut pay = Execution::new("pay-101", "payment");
    pay.status = Status::Suspended;
    pay.active_path = Some("payment.hold".into());
    pay.context = obj(json!({"ünïcode key": "välue", "list": [1, 2.0, "3"]}));
    pay.priority = 3;
    pay.created_at = Some(T0);
    pay.updated_at = Some(T0 + 5.0);
    let fx = Effects::new()
        .processed("es-ev-x")
        .schedule("payment.retry", T0 + 30.5);
    store.commit(&mut pay, &fx).expect("commit pay-101");
    store
        .commit(&mut pay, &Effects::new().processed("es-ev-x"))
        .expect("the same marker again");

    let child = ChildState::region;
    let mut par = Execution::new("par-101", "order");
    par.status = Status::Running;
    par.active_path = Some("par.fork".into());
    par.children
        .insert("par-101:region/a:0".into(), child("par.region_a", "a"));
    let mut b = child("par.region_b", "b");
    (b.finished, b.outcome, b.result) = (true, Some("ok".into()), obj(json!({"total": 1e20, "ok": true})));
    par.children.insert("par-101:region/b:0".into(), b);
    let mut sub_child = child("par.sub", "sub");
    sub_child.submachine = true;
    par.children.insert("par-101:sub:0".into(), sub_child);
    par.invoke_seq = [("par.fork".to_owned(), 1), ("par.sub".to_owned(), 2)]
        .into_iter()
        .collect();
    par.created_at = Some(T0);
    par.updated_at = Some(T0 + 3.0);
    store
        .commit(
            &mut par,
            &Effects::new()
                .spawn(
                    "par-101:region/a:0",
                    "par.region_a",
                    obj(json!({"seed": TEXT, "n": 1e-7})),
                )
                .spawn("par-101:region/b:0", "par.region_b", JsonObject::new())
                .spawn(
                    "par-101:sub:0",
                    "par.sub",
                    obj(json!({"nested": {"x": [1e20, 0.1]}})),
                )
                .schedule("par.deadline", T0 + 7200.5)
                .cancel("par.never-armed")
                .trace(step(
                    "Fork",
                    json!({}),
                    Some("par.start"),
                    "par.fork",
                    &["spawn"],
                    json!({}),
                    T0 + 3.0,
                )),
        )
        .expect("commit par-101");
    let mut a = Execution::new("par-101:region/a:0", "order");
    a.root_path = "par.region_a".into();
    a.status = Status::Done;
    a.outcome = Some("ok".into());
    a.active_path = Some("par.region_a.end".into());
    a.parent_id = Some("par-101".into());
    a.child_id = Some("par-101:region/a:0".into());
    (a.created_at, a.updated_at, a.finished_at) = (Some(T0 + 4.0), Some(T0 + 5.0), Some(T0 + 5.0));
    let fin = Event::new("es-ev-fin-a", "Finished").with_data(obj(json!({"outcome": "ok"})));
    store
        .commit(&mut a, &Effects::new().emit(Some("par-101"), fin))
        .expect("commit child a");
    let mut b = Execution::new("par-101:region/b:0", "order");
    b.root_path = "par.region_b".into();
    b.status = Status::Failed;
    b.error = Some("ValueError: boom ✗ — «bad»".into());
    b.active_path = Some("par.region_b.work".into());
    b.parent_id = Some("par-101".into());
    b.child_id = Some("par-101:region/b:0".into());
    (b.created_at, b.updated_at) = (Some(T0 + 4.0), Some(T0 + 6.0));
    store.save(&mut b).expect("save child b");
    let mut sub = Execution::new("par-101:sub:0", "subflow");
    sub.definition_fqn = Some("pkg.flows:SubFlow".into());
    sub.status = Status::Cancelling;
    sub.parent_id = Some("par-101".into());
    sub.child_id = Some("par-101:sub:0".into());
    let mut later = Event::new("es-ev-def-2", "Later");
    later.created_time = Some("2023-12-31T12:00:00Z".into());
    sub.deferred = vec![
        Event::new("es-ev-def-1", "Later").with_data(obj(json!({"k": "v"}))),
        later,
    ];
    sub.expires_at = Some(T0 + 86400.5);
    sub.priority = 4;
    store.save(&mut sub).expect("save sub");

    let mut pen = Execution::new("pen-101", "order");
    store.save(&mut pen).expect("save pen");
    let mut can = Execution::new("can-101", "order");
    (can.status, can.finished_at, can.outcome) =
        (Status::Cancelled, Some(T0 + 9.0), Some("cancelled".into()));
    store.save(&mut can).expect("save can");
    let mut dne = Execution::new("dne-101", "payment");
    (dne.status, dne.outcome, dne.finished_at) =
        (Status::Done, Some("approved".into()), Some(1_700_000_123.456789));
    store.save(&mut dne).expect("save dne");
    let mut uni = Execution::new("ünï-101", "ünïcode-dèf");
    (uni.status, uni.active_path) = (Status::Running, Some("状态.一".into()));
    uni.context = obj(json!({"emoji": "😀"}));
    store.save(&mut uni).expect("save ünï");
    for id in ["pfx_1", "pfx_2", "PFX_3", "pfxA1", "pfx%1"] {
        store
            .save(&mut Execution::new(id, "prefixes"))
            .expect("save prefix id");
    }

    let mut trc = Execution::new("trc-101", "order");
    trc.status = Status::Running;
    store.save(&mut trc).expect("save trc");
    for n in 0..205 {
        let st = step(
            "Tick",
            json!({"i": n}),
            Some(&format!("s{n}")),
            &format!("s{}", n + 1),
            &[],
            json!({"i": n, "x": f64::from(n) / 10.0}),
            T0 + f64::from(n),
        );
        assert_eq!(
            store.append_trace("trc-101", &st).expect("append_trace"),
            i64::from(n)
        );
    }

    // fields a newer engine wrote: execstore keeps them, harel reads past them
    let mut ext = Execution::new("ext-101", "order");
    ext.status = Status::Running;
    ext.extra = obj(json!({"future_field": {"nested": [1, "ü"]}, "another": 1e20}));
    let mut c = child("ext.region", "r");
    c.extra = obj(json!({"child_future": true}));
    ext.children.insert("ext-101:region:0".into(), c);
    let mut deferred = Event::new("es-ev-def-ext", "Later");
    deferred.extra = obj(json!({"event_future": "x"}));
    ext.deferred = vec![deferred.clone()];
    store
        .commit(
            &mut ext,
            &Effects::new()
                .emit(Some("ext-101"), deferred)
                .processed("es-ev-ext"),
        )
        .expect("commit ext-101");

    let mut tmp = Execution::new("tmp-101", "order");
    tmp.status = Status::Running;
    store
        .commit(
            &mut tmp,
            &Effects::new()
                .emit(Some("tmp-101"), Event::new("es-ev-tmp", "Self"))
                .processed("es-ev-tmp-0")
                .schedule("tmp.t", T0 + 10.0)
                .trace(step("Start", json!({}), None, "tmp.a", &[], json!({}), T0)),
        )
        .expect("commit tmp");
    store.ack_outbox(2).expect("ack the untargeted OrderPlaced");
    store.ack_spawn(2).expect("ack region b's intent");
    assert!(!store
        .delete_timer("ord-101", "order.waiting", T0 + 30.5)
        .expect("stale delete"));
    assert!(store
        .delete_timer("ord-101", "order.escalate", T0 + 7200.0)
        .expect("delete"));
    assert!(!store.purge("tmp-101", 0).expect("purge at a stale version"));
    assert!(store.purge("tmp-101", 1).expect("purge"));
    let mut stale = Execution::new("pen-101", "order");
    assert!(matches!(
        store.save(&mut stale),
        Err(StoreError::Conflict {
            expected: 0,
            found: Some(1),
            ..
        })
    ));
}

/// What execstore does on data harel wrote (`write_with_harel.py`'s scenario), on either
/// backend: a commit with every kind of effect on harel's `ord-001` (the outbox sequence
/// continuing from harel's), a save of a new execution with an unknown field, acks, a guarded
/// timer delete, a trace append past harel's ring, a purge and a lost CAS.
pub fn commit_on_harels_data(store: &dyn ExecutionStore) {
    let mut ord = store.load("ord-001").unwrap().expect("harel's ord-001");
    assert_eq!(ord.version, 3);
    ord.context.insert("by".into(), json!("execstore ✓ — 😀"));
    ord.context.insert("f".into(), floats());
    ord.active_path = Some("order.shipped".into());
    ord.processed_events += 1;
    ord.updated_at = Some(T0 + 10.5);
    let mut ev =
        Event::new("es-on-harel-1", "Ship").with_data(obj(json!({"huge": 1e20, "tiny": 1e-7, "t": TEXT})));
    ev.created_time = Some("2024-03-04T05:06:07.000008Z".into());
    let seqs = store
        .commit(
            &mut ord,
            &Effects::new()
                .emit(Some("pay-001"), ev)
                .emit(None, Event::new("es-on-harel-2", "Shipped"))
                .processed("es-on-harel-ev")
                .schedule("order.waiting", T0 + 90.75)
                .schedule("order.es", T0 + 45.0)
                .cancel("order.reminder")
                .spawn(
                    "ord-001:es:0",
                    "order.es",
                    obj(json!({"by": "execstore ✓", "f": 1e20})),
                )
                .trace(step(
                    "Ship",
                    json!({"t": TEXT}),
                    Some("order.paid"),
                    "order.shipped",
                    &["ship"],
                    json!({"f": floats()}),
                    T0 + 10.5,
                )),
        )
        .expect("execstore commits on harel's data");
    // harel's last outbox seq was 6 (purged since): the sequence goes on from there
    assert_eq!(seqs, [7, 8]);
    assert_eq!(ord.version, 4);
    let mut ext = Execution::new("ext-201", "order");
    ext.extra = obj(json!({"future_field": [1, 2]}));
    store.save(&mut ext).expect("save ext-201");
    store.ack_outbox(1).expect("ack harel's seq 1");
    store.ack_spawn(1).expect("ack harel's spawn 1");
    assert!(store
        .delete_timer("pay-001", "payment.retry", T0 + 30.5)
        .expect("delete harel's timer"));
    assert_eq!(
        store
            .append_trace("trc-001", &step("Tick", json!({}), None, "s", &[], json!({}), T0))
            .unwrap(),
        205
    );
    assert!(store.purge("can-001", 1).expect("purge harel's can-001"));
    let mut stale = store.load("pay-001").unwrap().unwrap();
    stale.version -= 1;
    assert!(matches!(store.save(&mut stale), Err(StoreError::Conflict { .. })));
}

/// Harel's commit on `ext-101` (`read_with_harel.py --commit ext-101`, whose output holds it
/// as `commit`), as execstore reads it: the new version and context, harel's own JSON of the
/// execution (it drops unknown fields), its outbox seqs last, its dedupe marker, spawn and
/// trace step.
pub fn check_harels_commit(store: &dyn ExecutionStore, commit: &Value, ctx: &str) {
    let exe = store.load("ext-101").unwrap().unwrap();
    assert_eq!(exe.version, 2, "{ctx}");
    assert_eq!(
        exe.context["touched_by"],
        json!("written by harel ✓ — ünï 😀"),
        "{ctx}"
    );
    assert_eq!(
        to_value!(&exe),
        commit["exe"],
        "{ctx}: harel dropped the unknown fields on its write"
    );
    let seqs: Vec<i64> = commit["seqs"].as_array().unwrap().iter().map(i).collect();
    let outbox = store.pending_outbox(None, ALL).unwrap();
    assert_eq!(
        outbox
            .iter()
            .rev()
            .take(2)
            .map(|e| e.seq)
            .rev()
            .collect::<Vec<_>>(),
        seqs,
        "{ctx}"
    );
    assert!(
        store.is_processed("ext-101", "harel-processed-1").unwrap(),
        "{ctx}"
    );
    let spawned = store.pending_spawns(None, ALL).unwrap();
    assert_eq!(spawned.last().unwrap().child_id, "ext-101:harel:0", "{ctx}");
    let trace = store.read_trace("ext-101").unwrap();
    assert_eq!(trace.last().unwrap()["event_kind"], json!("FromHarel"), "{ctx}");
}

/// execstore writes on `ext-101` after harel's commit: the CAS continues from harel's
/// version, the outbox sequence from harel's last seq.
pub fn commit_after_harel(store: &dyn ExecutionStore, commit: &Value) {
    let mut exe = store.load("ext-101").unwrap().unwrap();
    exe.context.insert("after_harel".into(), json!(true));
    let seqs = store
        .commit(
            &mut exe,
            &Effects::new().emit(None, Event::new("es-after-harel", "After")),
        )
        .expect("commit after harel");
    assert_eq!(exe.version, 3);
    let last_harel_seq = i(commit["seqs"].as_array().unwrap().last().unwrap());
    assert_eq!(seqs, [last_harel_seq + 1]);
}

/// Harel's view of what `write_variety` wrote: its 17 executions in every status, the text
/// and floats as written, unknown fields ignored. Returns harel's raw row of `ext-101`.
pub fn check_harel_read_the_variety(view: &Value) -> &Value {
    let exes = view["executions"].as_object().unwrap();
    assert_eq!(exes.len(), 17);
    let statuses: BTreeSet<&str> = exes.values().map(|e| s(&e["status"])).collect();
    assert_eq!(
        statuses.len(),
        Status::ALL.len(),
        "every status is present: {statuses:?}"
    );
    assert_eq!(exes["ord-101"]["context"]["note"], json!(TEXT));
    assert_eq!(exes["ord-101"]["context"]["floats"], floats());
    assert!(
        exes["ext-101"].get("future_field").is_none(),
        "harel ignores unknown fields"
    );
    let raw_ext = view["raw"]["executions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == json!("ext-101"))
        .unwrap();
    raw_ext
}
