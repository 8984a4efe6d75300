//! What a commit leaves to read: timers, the trace ring, listing and counts, the change token, cursors, the outbox and spawns, dedupe, prefixes and purge.

use super::*;

/// Scheduling a timer again replaces its fire time; the sweep's delete is guarded on the
/// fire time it saw, so a re-armed timer survives a stale delete; cancel removes it.
pub fn timers_upsert_and_guarded_delete(store: &dyn ExecutionStore) {
    let ns = scope("timers");
    let mut exe = created(store, &format!("{ns}a"), "def");
    let id = exe.id.clone();
    let mine = |now: f64| -> Vec<DueTimer> {
        store
            .due_timers(now, None, MAX_PAGE)
            .unwrap()
            .into_iter()
            .filter(|t| t.execution_id == id)
            .collect()
    };
    store
        .commit(
            &mut exe,
            &Effects::new().schedule("root.t", 100.0).schedule("root.u", 50.0),
        )
        .unwrap();
    let due = mine(100.0);
    assert_eq!(
        due.iter()
            .map(|t| (t.path.as_str(), t.fire_at))
            .collect::<Vec<_>>(),
        [("root.u", 50.0), ("root.t", 100.0)],
        "due timers come soonest first, and fire_at == now is due"
    );
    assert_eq!(mine(49.0).len(), 0);

    store
        .commit(&mut exe, &Effects::new().schedule("root.t", 200.0))
        .unwrap();
    assert_eq!(mine(150.0).len(), 1, "re-arming replaced the earlier fire time");
    assert_eq!(
        mine(1e9)
            .iter()
            .filter(|t| t.path == "root.t")
            .map(|t| t.fire_at)
            .collect::<Vec<_>>(),
        [200.0]
    );

    assert!(
        !store.delete_timer(&exe.id, "root.t", 100.0).unwrap(),
        "a stale sweep deletes nothing"
    );
    assert_eq!(mine(1e9).len(), 2, "the re-armed timer survived");
    assert!(store.delete_timer(&exe.id, "root.t", 200.0).unwrap());
    assert!(
        !store.delete_timer(&exe.id, "root.t", 200.0).unwrap(),
        "already deleted"
    );
    store
        .commit(
            &mut exe,
            &Effects::new().cancel("root.u").cancel("root.never-armed"),
        )
        .unwrap();
    assert!(mine(1e9).is_empty(), "cancel disarms");

    // "Every timer" is every armed timer, however far off: past the year 9999 (2e12), as far
    // as a double goes. The fire times come back exactly, so the guarded delete matches them.
    store
        .commit(
            &mut exe,
            &Effects::new()
                .schedule("far.1e300", 1e300)
                .schedule("far.max", f64::MAX)
                .schedule("far.2e12", 2e12),
        )
        .unwrap();
    let far = [("far.2e12", 2e12), ("far.1e300", 1e300), ("far.max", f64::MAX)];
    assert_eq!(
        mine(ALL_TIMERS)
            .iter()
            .map(|t| (t.path.as_str(), t.fire_at))
            .collect::<Vec<_>>(),
        far,
        "due_timers(ALL_TIMERS) lists every timer, soonest first"
    );
    assert_eq!(mine(1e300).len(), 2, "fire_at == now is due, however large");
    assert!(mine(1e12).is_empty());
    for (path, fire_at) in far {
        assert!(store.delete_timer(&exe.id, path, fire_at).unwrap(), "{path}");
    }
    assert!(mine(ALL_TIMERS).is_empty());

    // The limit keeps the soonest.
    store
        .commit(
            &mut exe,
            &Effects::new()
                .schedule("p3", 3.0)
                .schedule("p1", 1.0)
                .schedule("p2", 2.0),
        )
        .unwrap();
    let firsts: Vec<f64> = store
        .due_timers(1e9, None, 2)
        .unwrap()
        .iter()
        .map(|t| t.fire_at)
        .collect();
    assert!(
        firsts.len() == 2 && firsts[0] <= firsts[1] && firsts[1] <= 2.0,
        "got {firsts:?}"
    );

    // Paging with `after` walks ties on fire_at in (execution, path) order, without gaps or
    // repeats.
    let mut other = created(store, &format!("{ns}b"), "def");
    store
        .commit(
            &mut other,
            &Effects::new().schedule("p1", 1.0).schedule("p0", 2.0),
        )
        .unwrap();
    store
        .commit(&mut exe, &Effects::new().schedule("p0", 2.0))
        .unwrap();
    let ours = |t: &DueTimer| t.execution_id.starts_with(&ns);
    let whole: Vec<DueTimer> = store
        .due_timers(1e9, None, MAX_PAGE)
        .unwrap()
        .into_iter()
        .filter(ours)
        .collect();
    let keys: Vec<(f64, &str, &str)> = whole
        .iter()
        .map(|t| (t.fire_at, &t.execution_id[ns.len()..], t.path.as_str()))
        .collect();
    assert_eq!(
        keys,
        [
            (1.0, "a", "p1"),
            (1.0, "b", "p1"),
            (2.0, "a", "p0"),
            (2.0, "a", "p2"),
            (2.0, "b", "p0"),
            (3.0, "a", "p3")
        ]
    );
    for size in [1, 2, 4] {
        let mut paged: Vec<DueTimer> = Vec::new();
        for page in timer_pages(store, 1e9, None, size) {
            let page = page.unwrap();
            assert!(page.len() <= size);
            paged.extend(page);
        }
        assert_eq!(
            paged.into_iter().filter(ours).collect::<Vec<_>>(),
            whole,
            "pages of {size}"
        );
    }
}

/// The trace keeps the last `trace_max` steps; their index keeps climbing past evictions
/// and is stamped on read (over any `index` the step carried).
pub fn trace_ring_keeps_last_trace_max(store: &dyn ExecutionStore) {
    let ns = scope("trace");
    let mut exe = created(store, &format!("{ns}a"), "def");
    let max = store.trace_max().map_or(30, |m| m as usize);
    let total = max + 7;
    for n in 0..total {
        let step = obj(json!({"event_kind": "Tick", "n": n, "index": 999_999}));
        if n % 3 == 0 {
            assert_eq!(
                store.append_trace(&exe.id, &step).unwrap(),
                n as i64,
                "append_trace returns the index"
            );
        } else {
            store.commit(&mut exe, &Effects::new().trace(step)).unwrap();
        }
    }
    let trace = store.read_trace(&exe.id).unwrap();
    let kept = if store.trace_max().is_some() { max } else { total };
    assert_eq!(trace.len(), kept);
    for (k, step) in trace.iter().enumerate() {
        let n = total - kept + k;
        assert_eq!(step["index"], json!(n), "index climbs and is stamped on read");
        assert_eq!(
            step["n"],
            json!(n),
            "the step kept is the one written at that index"
        );
    }
    assert!(store.read_trace(&format!("{ns}none")).unwrap().is_empty());
}

/// Filters and pagination: every filter combination, paged at several sizes, reassembles
/// exactly the matching set, ordered, and terminates.
pub fn listing_filters_and_pagination(store: &dyn ExecutionStore) {
    let ns = scope("list");
    let (d1, d2) = (format!("{ns}orders"), format!("{ns}payments"));
    let mut written = Vec::new();
    for i in 0..29 {
        let definition = if i % 3 == 0 { &d2 } else { &d1 };
        let mut exe = Execution::new(format!("{ns}{:03}", (i * 17) % 29), definition);
        exe.status = Status::ALL[i % Status::ALL.len()];
        exe.active_path = Some(format!("root.s{i}"));
        exe.outcome = (exe.status == Status::Done).then(|| "ok".to_string());
        if i % 4 == 1 {
            exe.parent_id = Some(format!("{ns}{:03}", 0));
        }
        exe.finished_at = Some(i as f64);
        exe.updated_at = Some(1000.0 + i as f64);
        store.save(&mut exe).unwrap();
        if i % 5 == 0 {
            store.save(&mut exe).unwrap(); // version 2 for some: the summary reports it
        }
        written.push(exe);
    }
    let queries = [
        ListQuery::new().definition(&d1),
        ListQuery::new().definition(&d2),
        ListQuery::new()
            .definition(&d1)
            .status([Status::Running, Status::Done]),
        ListQuery::new().definition(&d1).roots_only(true),
        ListQuery::new()
            .definition(&d2)
            .status([Status::Failed])
            .roots_only(true),
        ListQuery::new().definition(&d1).status([]),
    ];
    for query in queries {
        let mut expected: Vec<&Execution> = written
            .iter()
            .filter(|e| query.matches(e.status, &e.definition_id, e.parent_id.as_deref()))
            .collect();
        expected.sort_by(|a, b| a.id.cmp(&b.id));
        let expected: Vec<crate::executions::ExecutionSummary> = expected
            .into_iter()
            .map(crate::executions::ExecutionSummary::of)
            .collect();
        for limit in [1, 2, 3, 7, 100] {
            let got = all_pages(store, query.clone().limit(limit));
            assert_eq!(got, expected, "query {query:?} at limit {limit}");
        }
    }
    // Without a definition filter other data may be present: ours must all be there, and
    // everything returned must match the filter.
    let running = all_pages(store, ListQuery::new().status([Status::Running]).limit(4));
    assert!(running.iter().all(|s| s.status == Status::Running));
    let ids: BTreeSet<&str> = running.iter().map(|s| s.id.as_str()).collect();
    for exe in written.iter().filter(|e| e.status == Status::Running) {
        assert!(ids.contains(exe.id.as_str()));
    }
    let roots = all_pages(store, ListQuery::new().roots_only(true).limit(MAX_PAGE));
    assert!(roots.iter().all(|s| s.parent_id.is_none()));
    // A cursor made after an id resumes strictly after it.
    let after = all_pages(
        store,
        ListQuery::new()
            .definition(&d1)
            .cursor(Some(encode_cursor(&format!("{ns}010")))),
    );
    assert!(after.iter().all(|s| s.id.as_str() > format!("{ns}010").as_str()) && !after.is_empty());
}

/// `count_by_status` counts what the listing returns, per status, under the same definition
/// and roots-only filters (what a monitor's overview asks); a definition with nothing stored counts zeros; a bad definition id
/// is refused.
pub fn status_counts_match_the_listing(store: &dyn ExecutionStore) {
    let ns = scope("counts");
    let (d1, d2) = (format!("{ns}orders"), format!("{ns}payments"));
    for i in 0..23 {
        let definition = if i % 4 == 0 { &d2 } else { &d1 };
        let mut exe = Execution::new(format!("{ns}{i:03}"), definition);
        exe.status = Status::ALL[(i * 5) % Status::ALL.len()];
        if i % 3 == 1 {
            exe.parent_id = Some(format!("{ns}000"));
        }
        store.save(&mut exe).unwrap();
        if i % 6 == 0 {
            // A later write moves the status: the count follows the stored row.
            exe.status = Status::Done;
            store.save(&mut exe).unwrap();
        }
    }
    for (definition, roots_only) in [(&d1, false), (&d1, true), (&d2, false), (&d2, true)] {
        let listed = all_pages(
            store,
            ListQuery::new()
                .definition(definition)
                .roots_only(roots_only)
                .limit(7),
        );
        let counts = store
            .count_by_status(&ListQuery::new().definition(definition).roots_only(roots_only))
            .unwrap();
        let statuses: Vec<Status> = counts.iter().map(|(s, _)| *s).collect();
        assert_eq!(statuses, Status::ALL, "one entry per status, in order");
        assert_eq!(counts.iter().map(|(_, n)| n).sum::<u64>(), listed.len() as u64);
        for (status, n) in counts {
            let expected = listed.iter().filter(|s| s.status == status).count() as u64;
            assert_eq!(n, expected, "{status} of {definition} (roots only: {roots_only})");
        }
    }
    let nothing = store
        .count_by_status(&ListQuery::new().definition(format!("{ns}none")))
        .unwrap();
    assert!(nothing.iter().all(|(_, n)| *n == 0));
    // Other checks may share the store: every status counts at least ours.
    let everything = store.count_by_status(&ListQuery::new()).unwrap();
    let ours = store.count_by_status(&ListQuery::new().definition(&d1)).unwrap();
    for ((status, all), (_, mine)) in everything.iter().zip(&ours) {
        assert!(all >= mine, "{status}: {all} in the store, {mine} of {d1}");
    }
    assert_eq!(
        code(store.count_by_status(&ListQuery::new().definition(""))),
        "INVALID_INPUT"
    );
}

/// The counts by status (of a definition, of its roots, of the store) stay those of the
/// listing through every kind of write that moves them: new executions, commits that change a
/// status or not, a batch, purge, terminate (of a tree) and purge-finished. A backend that
/// keeps the counts up to date instead of counting the rows must keep them right under each.
pub fn status_counts_follow_every_write(store: &dyn ExecutionStore) {
    use crate::executions::control;
    let ns = scope("kept-counts");
    let definition = format!("{ns}flow");
    let check = |what: &str| {
        for roots_only in [false, true] {
            let listed = all_pages(
                store,
                ListQuery::new()
                    .definition(&definition)
                    .roots_only(roots_only)
                    .limit(9),
            );
            let counts = store
                .count_by_status(&ListQuery::new().definition(&definition).roots_only(roots_only))
                .unwrap();
            for (status, n) in counts {
                let expected = listed.iter().filter(|s| s.status == status).count() as u64;
                assert_eq!(n, expected, "{what}: {status} (roots only: {roots_only})");
            }
        }
    };
    let mut exes = Vec::new();
    for i in 0..12 {
        let mut exe = Execution::new(format!("{ns}{i:02}"), &definition);
        exe.status = Status::Running;
        if i % 4 == 3 {
            exe.parent_id = Some(format!("{ns}{:02}", i - 1));
        }
        store.save(&mut exe).unwrap();
        exes.push(exe);
    }
    check("created");
    // A step that changes no status, then steps that finish some, long ago.
    exes[0].active_path = Some("s.b".into());
    store.commit(&mut exes[0], &Effects::new()).unwrap();
    for exe in exes.iter_mut().skip(4).take(3) {
        exe.status = Status::Done;
        exe.finished_at = Some(1000.0);
        store.commit(exe, &Effects::new()).unwrap();
    }
    check("committed");
    let mut items: Vec<BatchItem> = exes[8..10]
        .iter()
        .map(|exe| {
            let mut exe = exe.clone();
            exe.status = Status::Failed;
            exe.finished_at = Some(1000.0);
            BatchItem::new(exe, Effects::new())
        })
        .collect();
    for outcome in store.commit_batch(&mut items).unwrap() {
        outcome.unwrap();
    }
    check("batch");
    assert!(store.purge(&exes[0].id, exes[0].version).unwrap());
    check("purged");
    control::terminate(store, &exes[2].id, None, 1000.0).unwrap();
    check("terminated (with its child)");
    let mut request = control::PurgeFinished::new(500.0, 2000.0);
    request.statuses = vec![Status::Done];
    control::purge_finished(store, &request, None).unwrap();
    check("purge-finished");
    let done = store
        .count_by_status(&ListQuery::new().definition(&definition))
        .unwrap();
    assert_eq!(
        done[Status::ALL.iter().position(|s| *s == Status::Done).unwrap()].1,
        0
    );
}

/// `change_token` moves with each kind of write a monitor shows: a new execution, a commit
/// with effects, an outbox ack, a spawn ack and a timer removal. (Equal tokens are not
/// asserted: other checks may write to a shared store meanwhile.)
pub fn change_token_moves_with_every_write(store: &dyn ExecutionStore) {
    let ns = scope("token");
    let moved = |what: &str, write: &mut dyn FnMut()| {
        let before = store.change_token().unwrap();
        write();
        let after = store.change_token().unwrap();
        assert_ne!(before, after, "the token did not move after {what}");
    };
    let mut exe = Execution::new(format!("{ns}a"), "def");
    moved("a new execution", &mut || store.save(&mut exe).unwrap());
    let mut seqs = Vec::new();
    moved("a commit", &mut || {
        let effects = Effects::new()
            .emit(None, Event::new(format!("{ns}ev"), "Ping"))
            .schedule("root.wait", 1_000.0)
            .trace(obj(json!({"event_kind": "Ping"})));
        seqs = store.commit(&mut exe, &effects).unwrap();
    });
    moved("an outbox ack", &mut || store.ack_outbox(seqs[0]).unwrap());
    moved("a timer removal", &mut || {
        assert!(store.delete_timer(&exe.id, "root.wait", 1_000.0).unwrap());
    });
}

/// A cursor the store did not make and a page size out of range are refused.
pub fn invalid_cursor_and_limits_rejected(store: &dyn ExecutionStore) {
    for cursor in ["not a cursor!", "", "AAAA", "eyJvZmZzZXQiOiAxMH0"] {
        let query = ListQuery::new().cursor(Some(cursor.to_string()));
        assert_eq!(
            code(store.list_executions(&query)),
            "INVALID_INPUT",
            "cursor {cursor:?}"
        );
    }
    for limit in [0, MAX_PAGE + 1] {
        assert_eq!(
            code(store.list_executions(&ListQuery::new().limit(limit))),
            "INVALID_INPUT"
        );
        assert_eq!(code(store.pending_outbox(None, limit)), "INVALID_INPUT");
        assert_eq!(code(store.pending_spawns(None, limit)), "INVALID_INPUT");
        assert_eq!(code(store.due_timers(0.0, None, limit)), "INVALID_INPUT");
    }
}

/// The outbox comes out oldest first, pages with `after`, and an ack removes exactly one
/// entry (a second ack of it is `NotFound`).
pub fn outbox_oldest_first_and_ack(store: &dyn ExecutionStore) {
    let ns = scope("outbox");
    let mut a = created(store, &format!("{ns}a"), "def");
    let mut b = created(store, &format!("{ns}b"), "def");
    let mut emitted = Vec::new();
    for n in 0..6 {
        let exe = if n % 2 == 0 { &mut a } else { &mut b };
        let event = Event::new(format!("{ns}ev-{n}"), "Ping").with_data(obj(json!({"n": n})));
        let target = exe.id.clone();
        let seqs = store
            .commit(exe, &Effects::new().emit(Some(&target), event))
            .unwrap();
        emitted.push(seqs[0]);
    }
    let ours = |entries: Vec<OutboxEntry>| -> Vec<OutboxEntry> {
        entries
            .into_iter()
            .filter(|e| e.event.id.starts_with(&ns))
            .collect()
    };
    let all = ours(all_outbox(store));
    assert_eq!(
        all.iter().map(|e| e.seq).collect::<Vec<_>>(),
        emitted,
        "oldest first, in commit order"
    );
    for (n, entry) in all.iter().enumerate() {
        assert_eq!(entry.event.data["n"], json!(n));
    }
    // Paging with `after` and a small limit reassembles the same list.
    let mut paged = Vec::new();
    for page in outbox_pages(store, None, 2) {
        let page = page.unwrap();
        assert!(page.len() <= 2);
        paged.extend(page);
    }
    assert_eq!(ours(paged), all);

    store.ack_outbox(emitted[1]).unwrap();
    let left: Vec<i64> = ours(all_outbox(store)).iter().map(|e| e.seq).collect();
    assert_eq!(left, [emitted[0], emitted[2], emitted[3], emitted[4], emitted[5]]);
    assert_eq!(code(store.ack_outbox(emitted[1])), "NOT_FOUND");
    assert_eq!(code(store.ack_outbox(0)), "INVALID_INPUT");
    // Sequence numbers are never reused, even for the newest entry once acked.
    store.ack_outbox(emitted[5]).unwrap();
    let seqs = store
        .commit(
            &mut a,
            &Effects::new().emit(None, Event::new(format!("{ns}ev-6"), "Ping")),
        )
        .unwrap();
    assert!(seqs[0] > emitted[5]);
}

/// `ack_outbox_many` removes the entries it names that are still there and returns how many
/// it removed: a seq acked before, named twice or never made is skipped. A seq below 1 is
/// `InvalidInput` and nothing is removed.
pub fn ack_outbox_many_skips_missing(store: &dyn ExecutionStore) {
    let ns = scope("ackmany");
    let mut exe = created(store, &format!("{ns}a"), "def");
    let id = exe.id.clone();
    let effects = (0..5).fold(Effects::new(), |effects, n| {
        effects.emit(Some(&id), Event::new(format!("{ns}e{n}"), "E"))
    });
    let seqs = store.commit(&mut exe, &effects).unwrap();
    let left = || -> Vec<i64> {
        all_outbox(store)
            .into_iter()
            .filter(|e| e.event.id.starts_with(&ns))
            .map(|e| e.seq)
            .collect()
    };
    store.ack_outbox(seqs[1]).unwrap();
    assert_eq!(store.ack_outbox_many(&[]).unwrap(), 0);
    let never = i64::MAX;
    assert_eq!(
        store
            .ack_outbox_many(&[seqs[0], seqs[1], never, seqs[2], seqs[2]])
            .unwrap(),
        2,
        "only the entries still there count"
    );
    assert_eq!(left(), [seqs[3], seqs[4]]);
    assert_eq!(code(store.ack_outbox(seqs[0])), "NOT_FOUND");
    assert_eq!(
        store.ack_outbox_many(&[seqs[0], seqs[2]]).unwrap(),
        0,
        "re-acking a drained batch removes nothing"
    );
    assert_eq!(code(store.ack_outbox_many(&[seqs[3], 0])), "INVALID_INPUT");
    assert_eq!(code(store.ack_outbox_many(&[-5, seqs[4]])), "INVALID_INPUT");
    assert_eq!(left(), [seqs[3], seqs[4]], "a refused batch removes nothing");
    assert_eq!(store.ack_outbox_many(&[seqs[4], seqs[3]]).unwrap(), 2);
    assert!(left().is_empty());
}

/// Spawn intents come out oldest first with their parent, root path and context; an ack
/// removes exactly one.
pub fn spawns_oldest_first_and_ack(store: &dyn ExecutionStore) {
    let ns = scope("spawns");
    let mut parent = created(store, &format!("{ns}p"), "def");
    for r in 0..3 {
        let effects = Effects::new()
            .spawn(
                format!("{ns}p:root.f:{r}:a"),
                "root.f.a",
                obj(json!({"r": r, "side": "a"})),
            )
            .spawn(
                format!("{ns}p:root.f:{r}:b"),
                "root.f.b",
                obj(json!({"r": r, "side": "b"})),
            );
        store.commit(&mut parent, &effects).unwrap();
    }
    let mine: Vec<SpawnEntry> = all_spawns(store)
        .into_iter()
        .filter(|s| s.parent_id == parent.id)
        .collect();
    let children: Vec<String> = mine.iter().map(|s| s.child_id.clone()).collect();
    let want: Vec<String> = (0..3)
        .flat_map(|r| ["a", "b"].map(|side| format!("{ns}p:root.f:{r}:{side}")))
        .collect();
    assert_eq!(
        children, want,
        "oldest first, in the order each commit listed them"
    );
    assert!(mine.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(mine[3].context, obj(json!({"r": 1, "side": "b"})));
    assert_eq!(mine[3].root_path, "root.f.b");
    store.ack_spawn(mine[0].seq).unwrap();
    assert_eq!(code(store.ack_spawn(mine[0].seq)), "NOT_FOUND");
    let left = all_spawns(store)
        .into_iter()
        .filter(|s| s.parent_id == parent.id)
        .count();
    assert_eq!(left, 5);
}

/// Recording the same processed event twice is harmless, and `load_for_event` reads the
/// execution and its marker together.
pub fn dedupe_is_idempotent(store: &dyn ExecutionStore) {
    let ns = scope("dedupe");
    let mut exe = created(store, &format!("{ns}a"), "def");
    let other = created(store, &format!("{ns}b"), "def");
    let event = format!("{ns}in-1");
    assert!(!store.is_processed(&exe.id, &event).unwrap());
    assert_eq!(
        store.load_for_event(&exe.id, &event).unwrap(),
        (Some(exe.clone()), false)
    );
    store.commit(&mut exe, &Effects::new().processed(&event)).unwrap();
    store.commit(&mut exe, &Effects::new().processed(&event)).unwrap();
    assert!(store.is_processed(&exe.id, &event).unwrap());
    assert!(
        !store.is_processed(&other.id, &event).unwrap(),
        "markers are per execution"
    );
    assert_eq!(
        store.load_for_event(&exe.id, &event).unwrap(),
        (Some(exe.clone()), true)
    );
    assert_eq!(
        store.load_for_event(&exe.id, &format!("{ns}in-2")).unwrap(),
        (Some(exe.clone()), false)
    );
    assert_eq!(
        store.load_for_event(&format!("{ns}none"), &event).unwrap(),
        (None, false)
    );
}

/// `ids_with_prefix` matches the prefix literally: `_` and `%` are not wildcards and case
/// matters.
pub fn ids_with_prefix_is_literal(store: &dyn ExecutionStore) {
    let ns = scope("prefix");
    for suffix in ["p_1", "p_1:root.r:0", "pX1", "p%2", "P_3", "q_1"] {
        created(store, &format!("{ns}{suffix}"), "def");
    }
    let got = store.ids_with_prefix(&format!("{ns}p_")).unwrap();
    assert_eq!(got, [format!("{ns}p_1"), format!("{ns}p_1:root.r:0")]);
    assert_eq!(
        store.ids_with_prefix(&format!("{ns}p%")).unwrap(),
        [format!("{ns}p%2")]
    );
    assert_eq!(
        store.ids_with_prefix(&format!("{ns}zzz")).unwrap(),
        Vec::<String>::new()
    );
    assert_eq!(store.ids_with_prefix(&ns).unwrap().len(), 6);
}

/// `purge` at the stored version deletes the execution and everything keyed by it; at
/// another version it touches nothing; a stale copy cannot bring a purged execution back.
pub fn purge_removes_everything_keyed_by_it(store: &dyn ExecutionStore) {
    let ns = scope("purge");
    let mut exe = created(store, &format!("{ns}a"), "def");
    let mut keep = created(store, &format!("{ns}b"), "def");
    let effects = |target: &str| {
        Effects::new()
            .emit(Some(target), Event::new(format!("{target}-out"), "E"))
            .processed(format!("{target}-in"))
            .schedule("root.t", 5.0)
            .spawn(format!("{target}:c"), "root.c", JsonObject::new())
            .trace(obj(json!({"event_kind": "E"})))
    };
    let exe_id = exe.id.clone();
    let keep_id = keep.id.clone();
    store.commit(&mut exe, &effects(&exe_id)).unwrap();
    store.commit(&mut keep, &effects(&keep_id)).unwrap();
    let probes = [
        (exe_id.as_str(), format!("{exe_id}-in")),
        (keep_id.as_str(), format!("{keep_id}-in")),
    ];
    let probes: Vec<(&str, &str)> = probes.iter().map(|(a, b)| (*a, b.as_str())).collect();
    let before = snapshot(store, &probes);

    assert!(
        !store.purge(&exe.id, 1).unwrap(),
        "a moved-on execution is not purged"
    );
    assert_eq!(snapshot(store, &probes), before, "and nothing is touched");
    assert!(store.purge(&exe.id, 2).unwrap());
    assert!(store.load(&exe.id).unwrap().is_none());
    assert!(!store.is_processed(&exe.id, &format!("{exe_id}-in")).unwrap());
    assert!(store.read_trace(&exe.id).unwrap().is_empty());
    assert!(store
        .due_timers(1e9, None, MAX_PAGE)
        .unwrap()
        .iter()
        .all(|t| t.execution_id != exe.id));
    assert!(all_outbox(store)
        .iter()
        .all(|e| e.target_id.as_deref() != Some(exe_id.as_str())));
    assert!(all_spawns(store).iter().all(|s| s.parent_id != exe.id));
    // The other execution kept everything.
    assert!(store.is_processed(&keep.id, &format!("{keep_id}-in")).unwrap());
    assert_eq!(store.read_trace(&keep.id).unwrap().len(), 1);
    assert_eq!(
        all_outbox(store)
            .iter()
            .filter(|e| e.target_id.as_deref() == Some(keep_id.as_str()))
            .count(),
        1
    );
    assert_eq!(
        all_spawns(store)
            .iter()
            .filter(|s| s.parent_id == keep.id)
            .count(),
        1
    );

    assert!(
        !store.purge(&exe.id, 2).unwrap(),
        "purging what is gone returns false"
    );
    assert_eq!(
        code(store.save(&mut exe)),
        "CONFLICT",
        "a stale copy does not recreate it"
    );
    let mut reborn = Execution::new(&exe_id, "def");
    store.save(&mut reborn).unwrap();
    assert_eq!(reborn.version, 1, "a brand-new execution may reuse the id");
}
