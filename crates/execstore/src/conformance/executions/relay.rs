//! The relay and sweep reads, claims and wake-ups as capabilities say, and durability across a reopen.

use super::*;

/// Commits `n` emits, `n` spawn intents and `n` timers (due at 100 + i) in scope `ns`;
/// returns the outbox seqs.
fn deferred_work(store: &dyn ExecutionStore, ns: &str, n: usize) -> Vec<i64> {
    let mut exe = created(store, &format!("{ns}a"), "def");
    let mut seqs = Vec::new();
    for i in 0..n {
        let effects = Effects::new()
            .emit(None, Event::new(format!("{ns}ev-{i}"), "Ping"))
            .spawn(format!("{ns}child-{i}"), "root.r", JsonObject::new())
            .schedule(format!("{ns}t{i}"), 100.0 + i as f64);
        seqs.extend(store.commit(&mut exe, &effects).unwrap());
    }
    seqs
}

fn our_outbox<'a>(ns: &'a str) -> impl Fn(&[OutboxEntry]) -> Vec<i64> + 'a {
    move |entries| {
        entries
            .iter()
            .filter(|e| e.event.id.starts_with(ns))
            .map(|e| e.seq)
            .collect()
    }
}

fn our_spawns<'a>(ns: &'a str) -> impl Fn(&[SpawnEntry]) -> Vec<i64> + 'a {
    move |entries| {
        entries
            .iter()
            .filter(|e| e.child_id.starts_with(ns))
            .map(|e| e.seq)
            .collect()
    }
}

fn our_timers(ns: &str, timers: &[DueTimer]) -> Vec<DueTimer> {
    timers
        .iter()
        .filter(|t| t.path.starts_with(ns))
        .cloned()
        .collect()
}

/// `relay_outbox` and `relay_spawns` hand out pending entries oldest first, ack exactly
/// the seqs the handler returns (ignoring repeats and seqs it was not given) and leave the
/// rest pending; `sweep_timers` offers the due timers soonest first, and offers again a timer
/// the handler left in place. Bad limits and times are refused.
pub fn relay_acks_what_was_delivered(store: &dyn ExecutionStore) {
    let ns = scope("relay");
    let emitted = deferred_work(store, &ns, 5);
    let ours = our_outbox(&ns);

    let mut offered = Vec::new();
    let acked = store
        .relay_outbox(MAX_PAGE, &mut |entries| {
            offered = ours(entries);
            // The first two, one of them twice, and a seq that was not offered.
            vec![offered[0], offered[1], offered[0], i64::MAX]
        })
        .unwrap();
    assert_eq!(offered, emitted, "every pending entry of ours, oldest first");
    assert_eq!(acked, 2, "only offered seqs are acked, once");
    let left: Vec<i64> = ours(&all_outbox(store));
    assert_eq!(
        left,
        emitted[2..],
        "what was not delivered stays pending, in order"
    );
    let acked = store
        .relay_outbox(MAX_PAGE, &mut |entries| ours(entries))
        .unwrap();
    assert!(acked >= 3, "the rest is acked");
    assert!(ours(&all_outbox(store)).is_empty());
    // One more entry, so the next relay has something to offer and must call back: what it
    // offers of ours is that entry alone, never one acked before.
    let mut exe = store.load(&format!("{ns}a")).unwrap().expect("stored");
    let late = store
        .commit(
            &mut exe,
            &Effects::new().emit(None, Event::new(format!("{ns}ev-late"), "Ping")),
        )
        .unwrap();
    let mut called = false;
    let acked = store
        .relay_outbox(MAX_PAGE, &mut |entries| {
            called = true;
            assert_eq!(ours(entries), late, "acked entries are not offered again");
            ours(entries)
        })
        .unwrap();
    assert!(called, "a relay with pending entries calls its handler");
    assert_eq!(acked, 1, "the new entry is acked");
    assert!(ours(&all_outbox(store)).is_empty());

    let spawned = our_spawns(&ns)(&all_spawns(store));
    assert_eq!(spawned.len(), 5);
    let mut offered = Vec::new();
    let acked = store
        .relay_spawns(MAX_PAGE, &mut |entries| {
            offered = our_spawns(&ns)(entries);
            vec![offered[4]]
        })
        .unwrap();
    assert_eq!(offered, spawned);
    assert_eq!(acked, 1);
    assert_eq!(our_spawns(&ns)(&all_spawns(store)), spawned[..4]);

    // Due at 102.5: the timers at 100, 101 and 102, soonest first; the sweep deletes one.
    let mut offered = Vec::new();
    store
        .sweep_timers(102.5, MAX_PAGE, &mut |timers| {
            offered = our_timers(&ns, timers);
            assert!(store
                .delete_timer(&offered[1].execution_id, &offered[1].path, offered[1].fire_at)
                .unwrap());
        })
        .unwrap();
    let paths: Vec<String> = offered.iter().map(|t| t.path.clone()).collect();
    assert_eq!(paths, [format!("{ns}t0"), format!("{ns}t1"), format!("{ns}t2")]);
    let mut again = Vec::new();
    store
        .sweep_timers(102.5, MAX_PAGE, &mut |timers| again = our_timers(&ns, timers))
        .unwrap();
    let paths: Vec<String> = again.iter().map(|t| t.path.clone()).collect();
    assert_eq!(
        paths,
        [format!("{ns}t0"), format!("{ns}t2")],
        "a fired timer is gone; the rest are offered again"
    );

    let mut never = |_: &[OutboxEntry]| -> Vec<i64> { panic!("called on bad input") };
    assert_eq!(code(store.relay_outbox(0, &mut never)), "INVALID_INPUT");
    assert_eq!(
        code(store.relay_outbox(MAX_PAGE + 1, &mut never)),
        "INVALID_INPUT"
    );
    assert_eq!(
        code(store.relay_spawns(0, &mut |_| panic!("called on bad input"))),
        "INVALID_INPUT"
    );
    for now in [f64::NAN, -1.0, f64::INFINITY] {
        assert_eq!(
            code(store.sweep_timers(now, 10, &mut |_| panic!("called on bad input"))),
            "INVALID_INPUT",
            "now = {now}"
        );
    }
    assert_eq!(
        our_spawns(&ns)(&all_spawns(store)),
        spawned[..4],
        "bad input changed nothing"
    );
}

/// What a claim holds. With [`crate::executions::Capabilities::exclusive_claims`], an outbox entry,
/// spawn intent or timer handed to one caller is not handed to a second caller while the
/// first still holds it (the second call is made from inside the first's handler, so the
/// overlap is certain), and is again once the first let it go undelivered. Without the
/// capability, the second caller is handed the same entries: a backend must not claim more
/// than it does.
pub fn claims_match_capabilities(store: &dyn ExecutionStore) {
    let exclusive = store.capabilities().exclusive_claims;
    let ns = scope("claims");
    let emitted = deferred_work(store, &ns, 3);
    let ours = our_outbox(&ns);

    let mut inner = Vec::new();
    store
        .relay_outbox(MAX_PAGE, &mut |entries| {
            assert_eq!(ours(entries), emitted);
            store
                .relay_outbox(MAX_PAGE, &mut |entries| {
                    inner = ours(entries);
                    Vec::new()
                })
                .unwrap();
            Vec::new()
        })
        .unwrap();
    if exclusive {
        assert!(
            inner.is_empty(),
            "claimed entries were handed out twice: {inner:?}"
        );
    } else {
        assert_eq!(
            inner, emitted,
            "a store without exclusive claims hands them out again"
        );
    }
    // Let go undelivered: offered again, and now acked.
    let acked = store
        .relay_outbox(MAX_PAGE, &mut |entries| ours(entries))
        .unwrap();
    assert!(acked >= emitted.len());
    assert!(ours(&all_outbox(store)).is_empty());

    let spawned = our_spawns(&ns)(&all_spawns(store));
    let mut inner = Vec::new();
    store
        .relay_spawns(MAX_PAGE, &mut |entries| {
            assert_eq!(our_spawns(&ns)(entries), spawned);
            store
                .relay_spawns(MAX_PAGE, &mut |entries| {
                    inner = our_spawns(&ns)(entries);
                    Vec::new()
                })
                .unwrap();
            our_spawns(&ns)(entries)
        })
        .unwrap();
    if exclusive {
        assert!(
            inner.is_empty(),
            "claimed spawns were handed out twice: {inner:?}"
        );
    } else {
        assert_eq!(inner, spawned);
    }
    assert!(our_spawns(&ns)(&all_spawns(store)).is_empty());

    let mut outer = Vec::new();
    let mut inner = Vec::new();
    store
        .sweep_timers(1000.0, MAX_PAGE, &mut |timers| {
            outer = our_timers(&ns, timers);
            store
                .sweep_timers(1000.0, MAX_PAGE, &mut |timers| inner = our_timers(&ns, timers))
                .unwrap();
            // Fire the first one only.
            let t = &outer[0];
            assert!(store.delete_timer(&t.execution_id, &t.path, t.fire_at).unwrap());
        })
        .unwrap();
    assert_eq!(outer.len(), 3);
    if exclusive {
        assert!(inner.is_empty(), "claimed timers were offered twice: {inner:?}");
    } else {
        assert_eq!(inner, outer);
    }
    let mut after = Vec::new();
    store
        .sweep_timers(1000.0, MAX_PAGE, &mut |timers| after = our_timers(&ns, timers))
        .unwrap();
    assert_eq!(
        after,
        outer[1..],
        "the claim ended: the timers left in place are offered again"
    );
}

/// Without [`crate::executions::Capabilities::wakeups`], `wait_for_work` sleeps out its timeout and
/// answers `false`. With it, a waiter (after the first, priming wait) is woken by a commit
/// from another thread long before its timeout.
pub fn wait_for_work_matches_capabilities(store: &dyn ExecutionStore) {
    let ns = scope("wait");
    if !store.capabilities().wakeups {
        // wasm32 has no clock to time the wait with, and the default does not block there.
        #[cfg(not(target_arch = "wasm32"))]
        let start = std::time::Instant::now();
        assert!(!store
            .wait_for_work(Work::Outbox, std::time::Duration::from_millis(30))
            .unwrap());
        #[cfg(not(target_arch = "wasm32"))]
        assert!(
            start.elapsed() >= std::time::Duration::from_millis(30),
            "it waited its timeout"
        );
        return;
    }
    let timeout = std::time::Duration::from_secs(120);
    // The first wait starts listening and returns at once.
    assert!(store.wait_for_work(Work::Spawns, timeout).unwrap());
    let start = std::time::Instant::now();
    let woken = std::thread::scope(|scope| {
        let waiter = scope.spawn(|| store.wait_for_work(Work::Spawns, timeout));
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut exe = created(store, &format!("{ns}a"), "def");
        store
            .commit(
                &mut exe,
                &Effects::new().spawn(format!("{ns}c"), "root.r", JsonObject::new()),
            )
            .unwrap();
        waiter.join().expect("the waiter panicked")
    });
    assert!(woken.unwrap(), "woken by the commit, not by the timeout");
    assert!(start.elapsed() < timeout);
}

/// Durable backends: a reopened store sees every execution, outbox and spawn row, timer,
/// trace step and dedupe marker committed before, no acked or purged row, and never reuses
/// an outbox sequence number.
pub fn reopen_sees_everything_committed(harness: &mut dyn Harness) {
    let ns = scope("reopen");
    let store = harness.store();
    assert!(
        store.capabilities().durable,
        "only durable backends run this check"
    );
    let mut exe = created(store, &format!("{ns}a"), "def");
    let mut gone = created(store, &format!("{ns}gone"), "def");
    let id = exe.id.clone();
    bump(&mut exe);
    let seqs = store
        .commit(
            &mut exe,
            &Effects::new()
                .emit(Some(&id), Event::new(format!("{ns}e1"), "E"))
                .emit(Some(&id), Event::new(format!("{ns}e2"), "E"))
                .processed(format!("{ns}in"))
                .schedule("root.t", 42.0)
                .spawn(format!("{ns}a:c"), "root.c", obj(json!({"k": "v"})))
                .trace(obj(json!({"event_kind": "E", "n": 1}))),
        )
        .unwrap();
    store.ack_outbox(seqs[1]).unwrap();
    store
        .commit(&mut gone, &Effects::new().processed(format!("{ns}gone-in")))
        .unwrap();
    assert!(store.purge(&gone.id, 2).unwrap());
    let probes_owned = [
        (id.clone(), format!("{ns}in")),
        (gone.id.clone(), format!("{ns}gone-in")),
    ];
    let probes: Vec<(&str, &str)> = probes_owned
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let before = snapshot(store, &probes);

    assert!(harness.reopen(), "a durable backend can be reopened");
    let store = harness.store();
    assert_eq!(
        snapshot(store, &probes),
        before,
        "the reopened store holds exactly what was committed"
    );
    assert_eq!(store.load(&id).unwrap().unwrap(), exe);
    assert!(store.is_processed(&id, &format!("{ns}in")).unwrap());
    assert!(store.load(&gone.id).unwrap().is_none());
    let after = store
        .commit(
            &mut exe,
            &Effects::new().emit(None, Event::new(format!("{ns}e3"), "E")),
        )
        .unwrap();
    assert!(
        after[0] > seqs[1],
        "an acked newest seq is not reused after a reopen"
    );
}
