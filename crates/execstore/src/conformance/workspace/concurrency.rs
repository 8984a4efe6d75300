//! Listing, bad input, and what needs threads or a reopen: subscriptions, serialized transactions, parallel workspaces, cursor races, durability.

use super::*;

/// `workspaces()` lists those with a log, by tenant then workspace.
pub fn workspaces_lists_those_with_a_log(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    append(s, &ws("t-list-b", "w"), &["e"]);
    append(s, &ws("t-list-a", "z"), &["e"]);
    append(s, &ws("t-list-a", "y"), &["e"]);
    // A transaction that appended nothing, and one rolled back, leave no listed workspace.
    commit(s, &ws("t-list-c", "w"), |tx| tx.save_schedule("x", t0()).unwrap());
    {
        let mut tx = s.begin(&ws("t-list-d", "w")).unwrap();
        tx.append(&[entry("e", "x")]).unwrap();
    }
    let got: Vec<String> = s.workspaces().unwrap().iter().map(|w| w.to_string()).collect();
    assert_eq!(got, ["t-list-a/y", "t-list-a/z", "t-list-b/w"]);
    let info = s.workspace_info(&ws("t-list-a", "z")).unwrap().unwrap();
    assert_eq!((info.head_seq, info.head_ts), (1, Some(t0())));
    assert!(s.workspace_info(&ws("t-list-x", "w")).unwrap().is_none());
    // A rolled-back transaction, a lease or a cursor makes no workspace row.
    assert!(s.workspace_info(&ws("t-list-d", "w")).unwrap().is_none());
    assert!(s
        .acquire_lease(&ws("t-list-e", "w"), "k", "h", Duration::from_secs(5))
        .unwrap());
    s.save_cursor(&ws("t-list-e", "w"), "c", 3).unwrap();
    assert!(s.workspace_info(&ws("t-list-e", "w")).unwrap().is_none());
    let info = s
        .workspace_info(&ws("t-list-c", "w"))
        .unwrap()
        .expect("committed, appended nothing");
    assert_eq!((info.head_seq, info.head_ts), (0, None));
}

/// [`WorkspaceStorage::workspace_summaries`] answers what the calls it spares would: each
/// listed workspace in order with its head, its cursors, and its lease and dead-letter
/// counts (expired leases included), after every kind of write that moves them; leases and
/// cursors of workspaces without a log are not listed.
pub fn summaries_match_the_calls_they_spare(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let calls = || crate::workspace::summaries_by_calls(s).unwrap();
    assert_eq!(s.workspace_summaries().unwrap(), calls());
    let (a, b, c) = (ws("t-sum-a", "w"), ws("t-sum-a", "v"), ws("t-sum-b", "w"));
    append(s, &a, &["e1", "e2"]);
    append(s, &b, &["e1"]);
    append(s, &c, &["e1", "e2", "e3"]);
    assert!(s.acquire_lease(&a, "k1", "h", Duration::from_secs(5)).unwrap());
    assert!(s.acquire_lease(&a, "k2", "h", Duration::from_secs(1)).unwrap());
    assert!(s.acquire_lease(&c, "k1", "h", Duration::from_secs(5)).unwrap());
    s.save_cursor(&a, "z", 2).unwrap();
    s.save_cursor(&a, "m", 1).unwrap();
    s.save_cursor(&c, "x", 3).unwrap();
    // Leases and cursors of a workspace without a log.
    assert!(s
        .acquire_lease(&ws("t-sum-c", "w"), "k", "h", Duration::from_secs(5))
        .unwrap());
    s.save_cursor(&ws("t-sum-c", "w"), "c", 1).unwrap();
    commit(s, &b, |tx| {
        tx.dead_letter(&[EvaluationError::new("rule", 1, "boom")])
            .unwrap()
    });
    let got = s.workspace_summaries().unwrap();
    assert_eq!(got, calls());
    let names: Vec<String> = got.iter().map(|x| x.info.workspace.to_string()).collect();
    assert_eq!(names, ["t-sum-a/v", "t-sum-a/w", "t-sum-b/w"]);
    let a_sum = &got[1];
    assert_eq!((a_sum.info.head_seq, a_sum.leases, a_sum.dead_letters), (2, 2, 0));
    assert_eq!(a_sum.cursors, [("m".to_string(), 1), ("z".to_string(), 2)]);
    assert_eq!((got[0].dead_letters, got[0].leases), (1, 0));
    // An expired lease still counts; a release does not.
    h.clock().advance_micros(2_000_000);
    s.release_lease(&c, "k1", "h").unwrap();
    append(s, &b, &["e2"]);
    let got = s.workspace_summaries().unwrap();
    assert_eq!(got, calls());
    assert_eq!((got[1].leases, got[2].leases, got[0].info.head_seq), (2, 0, 2));
}

/// [`WorkspaceStorage::leases_of`] answers what filtering [`WorkspaceStorage::leases`]
/// would: the rows of the keys asked that exist, expired ones included, by key, each once.
pub fn leases_of_match_the_leases(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let (a, b) = (ws("t-lof", "a"), ws("t-lof", "b"));
    append(s, &a, &["e"]);
    for key in ["k3", "k1", "k2"] {
        assert!(s.acquire_lease(&a, key, "h", Duration::from_secs(1)).unwrap());
    }
    assert!(s
        .acquire_lease(&b, "k1", "other", Duration::from_secs(5))
        .unwrap());
    h.clock().advance_micros(2_000_000);
    let asked: Vec<String> = ["k2", "nope", "k1", "k2"].iter().map(|k| k.to_string()).collect();
    let got = s.leases_of(&a, &asked).unwrap();
    let want: Vec<_> = s
        .leases(&a)
        .unwrap()
        .into_iter()
        .filter(|l| l.key == "k1" || l.key == "k2")
        .collect();
    assert_eq!(got, want);
    assert_eq!(
        got.iter().map(|l| l.key.as_str()).collect::<Vec<_>>(),
        ["k1", "k2"]
    );
    assert_eq!(s.leases_of(&b, &asked).unwrap(), s.leases(&b).unwrap());
    assert!(s.leases_of(&a, &[]).unwrap().is_empty());
}

/// [`WorkspaceStorage::all_stored_rules`] answers what a [`WorkspaceStorage::stored_rules`]
/// call per listed workspace would: the active rules (no archived one, a new version in
/// place of the old) of each workspace with a log, in the listing's order, each workspace's
/// by name; the rules of a workspace without a log are left out, as the calls leave them.
pub fn all_stored_rules_match_the_calls(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let calls = || crate::workspace::rules_by_calls(s).unwrap();
    assert_eq!(s.all_stored_rules().unwrap(), calls());
    let (b, a, v, quiet) = (
        ws("t-rall-b", "w"),
        ws("t-rall-a", "w"),
        ws("t-rall-a", "v"),
        ws("t-rall-c", "w"),
    );
    for w in [&b, &a, &v] {
        append(s, w, &["e"]);
    }
    commit(s, &a, |tx| {
        for name in ["suite:z", "suite:m", "suite:B"] {
            tx.save_stored_rule(&stored(name, 1, StoredRuleStatus::Active))
                .unwrap();
        }
        tx.save_stored_rule(&stored("suite:gone", 1, StoredRuleStatus::Archived))
            .unwrap();
        tx.save_stored_rule(&stored("suite:m", 2, StoredRuleStatus::Active))
            .unwrap();
    });
    commit(s, &b, |tx| {
        tx.save_stored_rule(&stored("suite:a", 1, StoredRuleStatus::Active))
            .unwrap();
    });
    // A workspace whose transactions appended nothing is not listed: its rules are not either.
    commit(s, &quiet, |tx| {
        tx.save_stored_rule(&stored("suite:q", 1, StoredRuleStatus::Active))
            .unwrap();
    });
    let got = s.all_stored_rules().unwrap();
    assert_eq!(got, calls());
    let seen: Vec<(String, String, i64)> = got
        .iter()
        .map(|(w, r)| (w.to_string(), r.name().to_owned(), r.version))
        .filter(|(w, _, _)| w.starts_with("t-rall-"))
        .collect();
    let want = [
        ("t-rall-a/w", "suite:B", 1),
        ("t-rall-a/w", "suite:m", 2),
        ("t-rall-a/w", "suite:z", 1),
        ("t-rall-b/w", "suite:a", 1),
    ];
    let want: Vec<(String, String, i64)> = want
        .iter()
        .map(|(w, n, v)| (w.to_string(), n.to_string(), *v))
        .collect();
    assert_eq!(seen, want);
    // Archiving takes a rule out; the calls agree again.
    commit(s, &a, |tx| {
        tx.save_stored_rule(&stored("suite:z", 2, StoredRuleStatus::Archived))
            .unwrap();
    });
    let got = s.all_stored_rules().unwrap();
    assert_eq!(got, calls());
    assert!(!got.iter().any(|(_, r)| r.name() == "suite:z"));
}

/// [`WorkspaceStorage::leases_page`] pages through what [`WorkspaceStorage::leases`] lists:
/// at any limit, the pages joined are every row in key (byte) order, each once, expired ones
/// included, and the page after the last key is empty; a page may start after a key that is
/// not there; a limit of 0 or past [`MAX_READ`], or an `after_key` that is no key, is refused.
pub fn leases_page_pages_the_leases(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let (a, b, none) = (ws("t-lpg", "a"), ws("t-lpg", "b"), ws("t-lpg", "none"));
    append(s, &a, &["e"]);
    let keys: Vec<String> = (0..17)
        .map(|i| format!("run:{:02}", (i * 7) % 17))
        .chain(["K", "a", "a0", "aa", "b", "\u{e9}t\u{e9}", "z~"].map(String::from))
        .collect();
    // Some lapse, some are held, one is released: the page lists rows, not holders.
    for (i, key) in keys.iter().enumerate() {
        let ttl = Duration::from_secs(if i % 3 == 0 { 1 } else { 60 });
        assert!(s.acquire_lease(&a, key, &format!("h{}", i % 4), ttl).unwrap());
    }
    assert!(s.acquire_lease(&b, "a", "other", Duration::from_secs(5)).unwrap());
    assert!(s
        .acquire_lease(&b, "run:99", "other", Duration::from_secs(5))
        .unwrap());
    h.clock().advance_micros(2_000_000);
    let holder = s.leases_of(&a, &["run:03".into()]).unwrap().remove(0).holder;
    s.release_lease(&a, "run:03", &holder).unwrap();
    let all = s.leases(&a).unwrap();
    assert_eq!(all.len(), keys.len() - 1);
    assert!(
        all.iter()
            .any(|l| l.expires_at <= crate::workspace::Clock::now(h.clock())),
        "some lapsed"
    );
    for limit in [1, 2, 3, 7, all.len(), MAX_READ] {
        let mut joined = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = s.leases_page(&a, after.as_deref(), limit).unwrap();
            assert!(page.len() <= limit, "limit {limit}: a page of {}", page.len());
            let Some(last) = page.last() else { break };
            after = Some(last.key.clone());
            joined.extend(page);
        }
        assert_eq!(joined, all, "limit {limit}: the pages joined");
        let last = all.last().map(|l| l.key.as_str());
        assert!(s.leases_page(&a, last, limit).unwrap().is_empty());
    }
    let keys_of =
        |page: Vec<crate::workspace::Lease>| -> Vec<String> { page.into_iter().map(|l| l.key).collect() };
    // After a key that is not there (nor any lease): from the next one.
    assert_eq!(keys_of(s.leases_page(&a, Some("a00"), 2).unwrap()), ["aa", "b"]);
    assert_eq!(keys_of(s.leases_page(&a, Some("Z"), 1).unwrap()), ["a"]);
    assert_eq!(keys_of(s.leases_page(&a, None, 2).unwrap()), ["K", "a"]);
    assert_eq!(
        keys_of(s.leases_page(&a, Some("z~"), 5).unwrap()),
        ["\u{e9}t\u{e9}"]
    );
    assert_eq!(s.leases_page(&b, None, 10).unwrap(), s.leases(&b).unwrap());
    assert!(s.leases_page(&none, None, 10).unwrap().is_empty());
    let field = |r: Result<Vec<crate::workspace::Lease>>| match r {
        Err(StoreError::InvalidInput { field, .. }) => field,
        other => panic!("expected InvalidInput, got {other:?}"),
    };
    assert_eq!(field(s.leases_page(&a, None, 0)), "limit");
    assert_eq!(field(s.leases_page(&a, Some("a"), MAX_READ + 1)), "limit");
    assert_eq!(field(s.leases_page(&a, Some(""), 5)), "after_key");
    assert_eq!(field(s.leases_page(&a, Some("a\0"), 5)), "after_key");
    invalid(s.leases_page(&ws("", "w"), None, 5), "empty tenant");
}

/// Every key argument, in a transaction and outside one, is checked alike on every backend:
/// an empty key, or one with a NUL, is [`StoreError::InvalidInput`] naming the argument, and
/// the transaction stays usable with nothing of the call in it.
pub fn malformed_keys_are_refused_alike(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-keys", "w");
    append(s, &w, &["a"]);
    let field_of = |r: Result<()>, what: &str| match r {
        Err(StoreError::InvalidInput { field, .. }) => field,
        other => panic!("{what}: expected InvalidInput, got {other:?}"),
    };
    for bad in ["", "bad\0"] {
        let mut tx = s.begin(&w).unwrap();
        let head = tx.head_seq().unwrap();
        let refused: Vec<(&str, String)> = vec![
            ("event_id", field_of(tx.envelope(bad).map(drop), "tx.envelope")),
            ("rule", field_of(tx.progress(bad).map(drop), "tx.progress")),
            (
                "rule",
                field_of(tx.states(bad, &["k".into()]).map(drop), "tx.states"),
            ),
            ("rule", field_of(tx.clear_states(bad), "tx.clear_states")),
            ("run_id", field_of(tx.run(bad).map(drop), "tx.run")),
            (
                "rule",
                field_of(tx.scope_runs(bad, "k").map(drop), "tx.scope_runs(rule)"),
            ),
            (
                "scope_key",
                field_of(tx.scope_runs("r", bad).map(drop), "tx.scope_runs(key)"),
            ),
            ("name", field_of(tx.schedule(bad).map(drop), "tx.schedule")),
            ("name", field_of(tx.save_schedule(bad, t0()), "tx.save_schedule")),
            ("name", field_of(tx.stored_rule(bad).map(drop), "tx.stored_rule")),
            ("event_id", field_of(s.envelope(&w, bad).map(drop), "envelope")),
            ("run_id", field_of(s.run(&w, bad).map(drop), "run")),
            (
                "name",
                field_of(s.rule_history(&w, bad).map(drop), "rule_history"),
            ),
            (
                "rule",
                field_of(s.dead_letters(&w, Some(bad)).map(drop), "dead_letters"),
            ),
            ("name", field_of(s.cursor(&w, bad).map(drop), "cursor")),
            ("key", field_of(s.release_lease(&w, bad, "h"), "release_lease")),
            (
                "after_key",
                field_of(s.leases_page(&w, Some(bad), 10).map(drop), "leases_page"),
            ),
        ];
        for (want, got) in refused {
            assert_eq!(got, want, "the refused argument, for key {bad:?}");
        }
        // Nothing of the refused calls is in the transaction, which goes on.
        assert_eq!(tx.head_seq().unwrap(), head);
        tx.append(&[entry(&format!("after{}", bad.len()), "x")]).unwrap();
        tx.commit().unwrap();
    }
    assert_eq!(s.head_seq(&w).unwrap(), 3);
}

/// Bad input is a typed error and changes nothing.
pub fn bad_input_changes_nothing(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-bad", "w");
    append(s, &w, &["a"]);
    invalid(s.begin(&ws("", "w")).map(|_| ()), "empty tenant");
    invalid(s.begin(&ws("t", "w\0")).map(|_| ()), "NUL");
    invalid(s.head_seq(&ws(&"x".repeat(5000), "w")), "over-long tenant");
    let mut tx = s.begin(&w).unwrap();
    invalid(tx.append(&[entry("", "x")]), "empty id");
    invalid(tx.append(&[entry("ok", "x"), entry("bad\0", "x")]), "NUL in id");
    let mut no_type = entry("nt", "x");
    no_type.event.remove("type");
    invalid(tx.append(&[no_type]), "event without type");
    invalid(
        tx.save_progress("", &RuleProgress::from_doc(JsonObject::new())),
        "empty rule",
    );
    invalid(
        tx.save_states("r", &[(String::new(), ScopeState::from_doc(JsonObject::new()))]),
        "empty scope key",
    );
    invalid(tx.read(-1, 10), "negative after");
    invalid(
        tx.save_stored_rule(&StoredRule {
            rule: JsonObject::new(),
            version: 1,
            status: StoredRuleStatus::Active,
            provenance: JsonObject::new(),
        }),
        "rule without name",
    );
    assert!(tx
        .save_stored_rule(&stored("suite:x", 4, StoredRuleStatus::Active))
        .is_err());
    assert_eq!(tx.head_seq().unwrap(), 1);
    tx.append(&[entry("b", "x")]).unwrap();
    tx.commit().unwrap();
    assert_eq!(seqs(&s.read(&w, &LogQuery::new()).unwrap()), [1, 2]);
    invalid(
        s.acquire_lease(&w, "k", "", Duration::from_secs(1)),
        "empty holder",
    );
    invalid(s.save_cursor(&w, "", 1), "empty cursor name");
    invalid(
        s.runs(
            &w,
            &RunQuery {
                limit: Some(MAX_READ + 1),
                ..Default::default()
            },
        ),
        "huge run limit",
    );
    invalid(
        s.due_runs(t0(), MAX_READ + 1, &RunPolicy::new()),
        "huge due limit",
    );
    assert!(Run::from_doc(obj(json!({"id": "r"}))).is_err());
    assert!(s.leases(&w).unwrap().is_empty());
    assert!(s.cursors(&w).unwrap().is_empty());
}

/// A subscription replays, then follows: another thread's commits arrive promptly, each
/// envelope exactly once.
pub fn subscribe_replays_then_follows(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-sub", "w");
    append(s, &w, &["a", "b", "c"]);
    let mut sub = Subscription::new(s, w.clone(), 1).unwrap();
    assert_eq!(
        sub.next_timeout(Duration::from_secs(5)).unwrap().map(|e| e.seq),
        Some(2)
    );
    assert_eq!(
        sub.next_timeout(Duration::from_secs(5)).unwrap().map(|e| e.seq),
        Some(3)
    );
    assert!(sub.next_timeout(Duration::from_millis(20)).unwrap().is_none());
    const N: usize = 60;
    let got = std::thread::scope(|scope| {
        scope.spawn(|| {
            for i in 0..N / 3 {
                let mut tx = s.begin(&w).unwrap();
                tx.append(&[
                    entry(&format!("n{i}-1"), "x"),
                    entry(&format!("n{i}-2"), "x"),
                    entry(&format!("n{i}-3"), "x"),
                ])
                .unwrap();
                tx.commit().unwrap();
            }
        });
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while got.len() < N && Instant::now() < deadline {
            if let Some(e) = sub.next_timeout(Duration::from_secs(2)).unwrap() {
                got.push(e.seq);
            }
        }
        got
    });
    assert_eq!(
        got,
        (4..4 + N as i64).collect::<Vec<_>>(),
        "every envelope once, in order"
    );
    // A commit in this process wakes a waiting subscriber at once (well under the poll interval).
    let started = Instant::now();
    let woke = std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            append(s, &w, &["late"]);
        });
        sub.next_timeout(Duration::from_secs(10)).unwrap()
    });
    assert_eq!(woke.map(|e| e.id), Some("late".to_string()));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "woken by the commit, not a timeout"
    );
}

/// Transactions on one workspace run one at a time from the moment they begin: racing
/// read-then-write transactions lose no update, and the log stays gap-free.
pub fn transactions_serialize_per_workspace(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-serial", "w");
    let counter = |tx: &mut dyn crate::workspace::WorkspaceTx| -> i64 {
        tx.progress("count")
            .unwrap()
            .and_then(|p| p.doc()["n"].as_i64())
            .unwrap_or(0)
    };
    std::thread::scope(|scope| {
        for t in 0..4 {
            let w = &w;
            scope.spawn(move || {
                for i in 0..15 {
                    let mut tx = s.begin(w).unwrap();
                    let n = counter(&mut *tx);
                    let head = tx.head_seq().unwrap();
                    std::thread::yield_now();
                    let out = tx.append(&[entry(&format!("t{t}-{i}"), "x")]).unwrap();
                    assert_eq!(out[0].seq, head + 1);
                    tx.save_progress("count", &RuleProgress::from_doc(obj(json!({"n": n + 1}))))
                        .unwrap();
                    tx.commit().unwrap();
                }
            });
        }
    });
    let mut tx = s.begin(&w).unwrap();
    assert_eq!(counter(&mut *tx), 60, "no lost update");
    drop(tx);
    assert_eq!(
        seqs(&s.read(&w, &LogQuery::new()).unwrap()),
        (1..=60).collect::<Vec<_>>()
    );
}

/// While one transaction holds a workspace, another workspace's transactions proceed, and
/// reads outside transactions do not wait for it.
pub fn other_workspaces_proceed_during_a_transaction(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let a = ws("t-par", "a");
    let b = ws("t-par", "b");
    append(s, &a, &["x"]);
    let mut held = s.begin(&a).unwrap();
    held.append(&[entry("y", "x")]).unwrap();
    // Reads of the held workspace answer with what is committed.
    read_beside_open_tx(h, || s.head_seq(&a), 1);
    if h.parallel_workspaces() {
        // Another workspace's transaction begins, appends and commits while `a` is held.
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut tx = s.begin(&b).unwrap();
                tx.append(&[entry("b1", "x")]).unwrap();
                tx.commit().unwrap();
                let _ = done.send(());
            });
            let proceeded = finished.recv_timeout(Duration::from_secs(10)).is_ok();
            assert!(
                proceeded,
                "a transaction on another workspace waited 10 s for the held one"
            );
        });
        assert_eq!(s.head_seq(&b).unwrap(), 1, "committed while `a` was held");
    }
    // A second transaction on `a` waits; on SQLite every write transaction waits (one writer
    // per file), so only backends with per-workspace locks are asked to proceed on `b`.
    let second_began = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let t = scope.spawn(|| {
            let mut tx = s.begin(&a).unwrap();
            second_began.store(true, Ordering::SeqCst);
            let head = tx.head_seq().unwrap();
            tx.append(&[entry("z", "x")]).unwrap();
            tx.commit().unwrap();
            head
        });
        std::thread::sleep(Duration::from_millis(150));
        assert!(
            !second_began.load(Ordering::SeqCst),
            "a second transaction on the workspace waited"
        );
        held.commit().unwrap();
        assert_eq!(t.join().unwrap(), 2, "it began after the first committed");
    });
    let expected = if h.parallel_workspaces() { 2 } else { 1 };
    assert_eq!(append(s, &b, &["w"])[0].seq, expected);
}

/// Saves from several threads leave the furthest cursor.
pub fn cursor_race_keeps_the_furthest(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-cursor-race", "w");
    std::thread::scope(|scope| {
        for t in 0..4i64 {
            let w = &w;
            scope.spawn(move || {
                for i in 0..25i64 {
                    // Even threads climb, odd ones descend: the furthest is 24 * 4 + 3.
                    let step = if t % 2 == 0 { i } else { 24 - i };
                    s.save_cursor(w, "m", step * 4 + t).unwrap();
                }
            });
        }
    });
    assert_eq!(s.cursor(&w, "m").unwrap(), 99);
}

/// Everything committed survives a close and reopen, byte for byte.
pub fn reopen_sees_everything_committed(h: &mut dyn WorkspaceHarness) {
    let w = ws("t-reopen", "w");
    let r = run("r1", "rule", "k", 1, t0());
    let sr = stored("suite:r", 1, StoredRuleStatus::Active);
    let before;
    {
        let s = h.storage();
        append(s, &w, &["a", "b"]);
        commit(s, &w, |tx| {
            tx.save_runs(std::slice::from_ref(&r)).unwrap();
            tx.save_progress("rule", &RuleProgress::from_doc(obj(json!({"cursor": 2}))))
                .unwrap();
            tx.save_states(
                "rule",
                &[("k".into(), ScopeState::from_doc(obj(json!({"scope": {"k": 1}}))))],
            )
            .unwrap();
            tx.dead_letter(&[EvaluationError::new("rule", 1, "boom")])
                .unwrap();
            tx.save_schedule("hourly", at(7)).unwrap();
            tx.save_stored_rule(&sr).unwrap();
        });
        h.clock().set(t0());
        assert!(s
            .acquire_lease(&w, "eval", "me", Duration::from_secs(60))
            .unwrap());
        s.save_cursor(&w, "m", 2).unwrap();
        before = s.read(&w, &LogQuery::new()).unwrap();
    }
    if !h.reopen() {
        return;
    }
    let s = h.storage();
    let after = s.read(&w, &LogQuery::new()).unwrap();
    assert_eq!(after, before);
    assert_eq!(
        after.iter().map(Envelope::to_json).collect::<Vec<_>>(),
        before.iter().map(Envelope::to_json).collect::<Vec<_>>()
    );
    assert_eq!(s.run(&w, "r1").unwrap().map(|r| r.to_json()), Some(r.to_json()));
    assert_eq!(s.progress(&w).unwrap().len(), 1);
    assert_eq!(s.dead_letters(&w, None).unwrap().len(), 1);
    assert_eq!(s.schedules(&w).unwrap(), vec![("hourly".to_string(), at(7))]);
    assert_eq!(s.stored_rules(&w).unwrap(), vec![sr]);
    assert_eq!(s.cursor(&w, "m").unwrap(), 2);
    assert!(!s
        .acquire_lease(&w, "eval", "other", Duration::from_secs(1))
        .unwrap());
    let mut tx = s.begin(&w).unwrap();
    assert_eq!(tx.states("rule", &["k".to_string()]).unwrap().len(), 1);
    assert_eq!(tx.append(&[entry("c", "x")]).unwrap()[0].seq, 3);
}
