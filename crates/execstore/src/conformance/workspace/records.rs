//! What rules keep beside the log: progress and scope states, runs, dead letters, schedules, stored rules, leases and cursors.

use super::*;

/// Progress per rule; states for the keys found, in the order asked; clearing hides
/// committed and pending states.
pub fn progress_and_scope_states(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-states", "w");
    let state = |n: i64| {
        ScopeState::from_doc(obj(
            json!({"scope": {"n": n}, "dedupe": null, "pattern": {"kind": "each"}, "throttle": null}),
        ))
    };
    commit(s, &w, |tx| {
        tx.save_progress("b-rule", &RuleProgress::from_doc(obj(json!({"cursor": 1}))))
            .unwrap();
        tx.save_progress("a-rule", &RuleProgress::from_doc(obj(json!({"cursor": 2}))))
            .unwrap();
        tx.save_states(
            "r",
            &[
                ("k1".into(), state(1)),
                ("k2".into(), state(2)),
                ("k3".into(), state(3)),
            ],
        )
        .unwrap();
        tx.save_states("other", &[("k1".into(), state(9))]).unwrap();
    });
    // Progress in the order the rules first saved one; an update keeps its place.
    commit(s, &w, |tx| {
        tx.save_progress("b-rule", &RuleProgress::from_doc(obj(json!({"cursor": 5}))))
            .unwrap()
    });
    let progress = s.progress(&w).unwrap();
    assert_eq!(
        progress.iter().map(|(r, _)| r.as_str()).collect::<Vec<_>>(),
        ["b-rule", "a-rule"]
    );
    assert_eq!(progress[0].1.doc()["cursor"], json!(5));
    let mut tx = s.begin(&w).unwrap();
    let keys = |ks: &[&str]| ks.iter().map(|k| k.to_string()).collect::<Vec<_>>();
    let got = tx.states("r", &keys(&["k3", "missing", "k1"])).unwrap();
    assert_eq!(
        got,
        vec![("k3".to_string(), state(3)), ("k1".to_string(), state(1))]
    );
    tx.save_states("r", &[("k4".into(), state(4))]).unwrap();
    tx.clear_states("r").unwrap();
    assert!(
        tx.states("r", &keys(&["k1", "k4"])).unwrap().is_empty(),
        "cleared: committed and pending"
    );
    tx.save_states("r", &[("k5".into(), state(5))]).unwrap();
    assert_eq!(
        tx.states("r", &keys(&["k1", "k5"])).unwrap(),
        vec![("k5".to_string(), state(5))]
    );
    assert_eq!(
        tx.states("other", &keys(&["k1"])).unwrap().len(),
        1,
        "another rule's states stay"
    );
    tx.commit().unwrap();
    let mut tx = s.begin(&w).unwrap();
    assert_eq!(
        tx.states("r", &keys(&["k1", "k2", "k3", "k4", "k5"])).unwrap(),
        vec![("k5".to_string(), state(5))]
    );
    assert_eq!(
        tx.states("other", &keys(&["k1"])).unwrap(),
        vec![("k1".to_string(), state(9))]
    );
}

/// Runs: upsert keeps a run's place; listing newest first with filters and a limit; a scope's
/// unsucceeded runs in firing order, ties in creation order.
pub fn runs_upsert_list_and_scope_order(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-runs", "w");
    let r1 = run("r1", "ra", "k1", 5, t0());
    let r2 = run("r2", "ra", "k1", 3, t0());
    let r3 = run("r3", "rb", "k1", 3, t0());
    let r4 = run("r4", "ra", "k1", 3, t0());
    commit(s, &w, |tx| tx.save_runs(&[r1.clone(), r2.clone()]).unwrap());
    commit(s, &w, |tx| {
        tx.save_runs(&[r3.clone(), r4.clone()]).unwrap();
        // An update of r1 keeps its place.
        tx.save_runs(&[with_status(&r1, RunStatus::Running, t0())])
            .unwrap();
    });
    let list = |q: RunQuery| {
        ids(&s.runs(&w, &q).unwrap())
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(list(RunQuery::default()), ["r4", "r3", "r2", "r1"]);
    assert_eq!(
        list(RunQuery {
            rule: Some("ra".into()),
            ..Default::default()
        }),
        ["r4", "r2", "r1"]
    );
    assert_eq!(
        list(RunQuery {
            status: Some(RunStatus::Running),
            ..Default::default()
        }),
        ["r1"]
    );
    assert_eq!(
        list(RunQuery {
            scope_key: Some("nope".into()),
            ..Default::default()
        }),
        Vec::<String>::new()
    );
    assert_eq!(
        list(RunQuery {
            limit: Some(2),
            ..Default::default()
        }),
        ["r4", "r3"]
    );
    assert_eq!(
        list(RunQuery {
            limit: Some(0),
            ..Default::default()
        }),
        Vec::<String>::new()
    );
    assert_eq!(s.run(&w, "r1").unwrap().unwrap().status(), RunStatus::Running);
    // A run given twice in one call: the last version wins.
    commit(s, &w, |tx| {
        tx.save_runs(&[
            with_status(&r2, RunStatus::Running, t0()),
            with_status(&r2, RunStatus::Succeeded, t0()),
        ])
        .unwrap();
        // Fired seq 3 twice (r2 succeeded, r4 created later), then 5.
        assert_eq!(ids(&tx.scope_runs("ra", "k1").unwrap()), ["r4", "r1"]);
    });
    assert_eq!(s.run(&w, "r2").unwrap().unwrap().status(), RunStatus::Succeeded);
    commit(s, &w, |tx| {
        let r5 = run("r5", "ra", "k1", 3, t0());
        tx.save_runs(&[r5]).unwrap();
        assert_eq!(
            ids(&tx.scope_runs("ra", "k1").unwrap()),
            ["r4", "r5", "r1"],
            "same fired seq: creation order"
        );
    });
    // Round trip of the whole document.
    assert_eq!(s.run(&w, "r3").unwrap().unwrap().to_json(), r3.to_json());
}

/// Dead letters come back oldest first, all or one rule's.
pub fn dead_letters_oldest_first(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-dead", "w");
    commit(s, &w, |tx| {
        tx.dead_letter(&[
            EvaluationError::new("b", 1, "x"),
            EvaluationError::new("a", 2, "y"),
        ])
        .unwrap()
    });
    commit(s, &w, |tx| {
        tx.dead_letter(&[EvaluationError::new("b", 3, "z")]).unwrap()
    });
    let all = s.dead_letters(&w, None).unwrap();
    assert_eq!(
        all.iter()
            .map(|l| l.doc()["seq"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    let b = s.dead_letters(&w, Some("b")).unwrap();
    assert_eq!(
        b.iter()
            .map(|l| l.doc()["seq"].as_i64().unwrap())
            .collect::<Vec<_>>(),
        [1, 3]
    );
    assert_eq!(
        all[0].to_json(),
        "{\"rule\": \"b\", \"seq\": 1, \"error\": \"x\"}"
    );
}

/// [`WorkspaceStorage::dead_letters_page`] pages through what
/// [`WorkspaceStorage::dead_letters`] lists, of one rule or all: at any limit, the pages
/// joined are every dead letter oldest first, each once, with positions that grow (and
/// leave gaps where other records took numbers), the page after the last position is empty,
/// and a limit of 0 or past [`MAX_READ`], a negative `after` or a bad rule is refused.
pub fn dead_letters_page_pages_the_dead_letters(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let (w, other) = (ws("t-dlp", "w"), ws("t-dlp", "other"));
    for i in 0..9i64 {
        commit(s, &w, |tx| {
            let rules = ["b", "a", "c"];
            let letters: Vec<EvaluationError> = (0..=(i % 3))
                .map(|k| EvaluationError::new(rules[((i + k) % 3) as usize], i * 10 + k, "boom"))
                .collect();
            tx.dead_letter(&letters).unwrap();
            tx.save_runs(&[run(&format!("r{i}"), "a", "k", i + 1, t0())])
                .unwrap();
        });
    }
    commit(s, &other, |tx| {
        tx.dead_letter(&[EvaluationError::new("a", 1, "x")]).unwrap()
    });
    for rule in [None, Some("a"), Some("b"), Some("none")] {
        let all = s.dead_letters(&w, rule).unwrap();
        for limit in [1, 2, 5, all.len().max(1), MAX_READ] {
            let (mut joined, mut positions, mut after) = (Vec::new(), Vec::new(), 0);
            loop {
                let page = s.dead_letters_page(&w, rule, after, limit).unwrap();
                assert!(
                    page.len() <= limit,
                    "{rule:?} limit {limit}: a page of {}",
                    page.len()
                );
                let Some((last, _)) = page.last() else { break };
                after = *last;
                for (position, letter) in page {
                    positions.push(position);
                    joined.push(letter);
                }
            }
            assert_eq!(joined, all, "{rule:?} limit {limit}: the pages joined");
            assert!(positions.windows(2).all(|p| p[0] < p[1]), "{positions:?}");
            assert!(positions.first().is_none_or(|p| *p > 0), "{positions:?}");
        }
    }
    // One rule's positions are those its letters have in the whole list.
    let every = s.dead_letters_page(&w, None, 0, MAX_READ).unwrap();
    let of_a: Vec<i64> = every
        .iter()
        .filter(|(_, l)| l.rule() == "a")
        .map(|(p, _)| *p)
        .collect();
    let page_a: Vec<i64> = s
        .dead_letters_page(&w, Some("a"), 0, MAX_READ)
        .unwrap()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(page_a, of_a);
    // From the middle: after a position, whether a letter has it or not.
    let (mid, _) = every[every.len() / 2].clone();
    let from_mid = s.dead_letters_page(&w, None, mid, 3).unwrap();
    assert_eq!(from_mid, every[every.len() / 2 + 1..every.len() / 2 + 4].to_vec());
    let last = every.last().map(|(p, _)| *p).unwrap();
    assert!(s.dead_letters_page(&w, None, last, 5).unwrap().is_empty());
    assert_eq!(
        s.dead_letters_page(&other, None, 0, 5).unwrap().len(),
        1,
        "another workspace's letters are its own"
    );
    assert!(s
        .dead_letters_page(&ws("t-dlp", "none"), None, 0, 5)
        .unwrap()
        .is_empty());
    let field = |r: Result<Vec<(i64, EvaluationError)>>| match r {
        Err(StoreError::InvalidInput { field, .. }) => field,
        other => panic!("expected InvalidInput, got {other:?}"),
    };
    assert_eq!(field(s.dead_letters_page(&w, None, 0, 0)), "limit");
    assert_eq!(field(s.dead_letters_page(&w, None, 0, MAX_READ + 1)), "limit");
    assert_eq!(field(s.dead_letters_page(&w, None, -1, 5)), "after");
    assert_eq!(field(s.dead_letters_page(&w, Some(""), 0, 5)), "rule");
    assert_eq!(field(s.dead_letters_page(&w, Some("a\0"), 0, 5)), "rule");
}

/// Schedule ticks: read and saved in a transaction; listed in UTC in first-tick order.
pub fn schedules_tick(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-sched", "w");
    let plus2 = Timestamp::parse_json_text("2026-01-01T15:00:00+02:00").unwrap();
    commit(s, &w, |tx| {
        assert!(tx.schedule("hourly").unwrap().is_none());
        tx.save_schedule("hourly", at(60)).unwrap();
        tx.save_schedule("daily", plus2).unwrap();
    });
    commit(s, &w, |tx| tx.save_schedule("hourly", at(3600)).unwrap());
    let got = s.schedules(&w).unwrap();
    assert_eq!(
        got,
        vec![("hourly".to_string(), at(3600)), ("daily".to_string(), plus2)]
    );
    assert_eq!(got[1].1.offset_seconds(), 0, "listed in UTC");
}

/// Stored rules: versions from 1 per name, the wrong one refused before anything is written
/// (the transaction stays usable); archiving is a version; active ones in code-point order;
/// history from the log's facts.
pub fn stored_rules_one_version_at_a_time(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-rules", "w");
    let mut tx = s.begin(&w).unwrap();
    for wrong in [0, 2] {
        match tx.save_stored_rule(&stored("suite:b", wrong, StoredRuleStatus::Active)) {
            Err(StoreError::Conflict {
                expected: 1,
                found: Some(f),
                ..
            }) if f == wrong => {}
            Err(StoreError::InvalidInput { .. }) if wrong == 0 => {}
            other => panic!("version {wrong}: {other:?}"),
        }
    }
    assert!(tx.stored_rule("suite:b").unwrap().is_none());
    // Names in code-point order: "B" < "a" < "b" < "é".
    for name in ["suite:b", "suite:é", "suite:B", "suite:a"] {
        tx.save_stored_rule(&stored(name, 1, StoredRuleStatus::Active))
            .unwrap();
    }
    tx.save_stored_rule(&stored("suite:b", 2, StoredRuleStatus::Active))
        .unwrap();
    assert!(matches!(
        tx.save_stored_rule(&stored("suite:b", 2, StoredRuleStatus::Active)),
        Err(StoreError::Conflict { expected: 3, .. })
    ));
    let mut facts = Vec::new();
    for (version, kind) in [
        (1, crate::workspace::RULE_INSTALLED),
        (2, crate::workspace::RULE_INSTALLED),
    ] {
        let mut e = entry(&format!("fact-b-{version}"), "x");
        e.event =
            obj(json!({"type": kind, "rule": "suite:b", "version": version, "spec": {}, "provenance": {}}));
        facts.push(e);
    }
    let mut other = entry("fact-a-1", "x");
    other.event = obj(
        json!({"type": crate::workspace::RULE_INSTALLED, "rule": "suite:a", "version": 1, "spec": {}, "provenance": {}}),
    );
    facts.insert(1, other);
    facts.push(entry("plain", "x"));
    tx.append(&facts).unwrap();
    tx.commit().unwrap();
    commit(s, &w, |tx| {
        tx.save_stored_rule(&stored("suite:a", 2, StoredRuleStatus::Archived))
            .unwrap();
        let mut e = entry("fact-a-2", "x");
        e.event = obj(
            json!({"type": crate::workspace::RULE_ARCHIVED, "rule": "suite:a", "version": 2, "reason": null, "cancelled": 0}),
        );
        tx.append(&[e]).unwrap();
        assert_eq!(
            tx.stored_rule("suite:a").unwrap().unwrap().status,
            StoredRuleStatus::Archived
        );
    });
    let names: Vec<String> = s
        .stored_rules(&w)
        .unwrap()
        .iter()
        .map(|r| r.name().to_owned())
        .collect();
    assert_eq!(names, ["suite:B", "suite:b", "suite:é"]);
    let b = s
        .stored_rules(&w)
        .unwrap()
        .into_iter()
        .find(|r| r.name() == "suite:b")
        .unwrap();
    assert_eq!(b, stored("suite:b", 2, StoredRuleStatus::Active));
    let history = |n: &str| {
        s.rule_history(&w, n)
            .unwrap()
            .iter()
            .map(|e| e.id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(history("suite:b"), ["fact-b-1", "fact-b-2"]);
    assert_eq!(history("suite:a"), ["fact-a-1", "fact-a-2"]);
    assert!(history("suite:none").is_empty());
    // Archived and installed again: the versions continue.
    commit(s, &w, |tx| {
        assert!(tx
            .save_stored_rule(&stored("suite:a", 1, StoredRuleStatus::Active))
            .is_err());
        tx.save_stored_rule(&stored("suite:a", 3, StoredRuleStatus::Active))
            .unwrap();
    });
    assert_eq!(s.stored_rules(&w).unwrap().len(), 4);
}

/// Leases: taken, renewed by their holder, refused to another until they lapse by the
/// storage's clock, released only by their holder.
pub fn leases_are_exclusive_and_expire(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-lease", "w");
    let ttl = Duration::from_secs(30);
    h.clock().set(t0());
    assert!(s.acquire_lease(&w, "eval", "a", ttl).unwrap());
    assert!(!s.acquire_lease(&w, "eval", "b", ttl).unwrap());
    h.clock().set(at(20));
    assert!(
        s.acquire_lease(&w, "eval", "a", ttl).unwrap(),
        "renewed by its holder"
    );
    h.clock().set(at(40));
    assert!(
        !s.acquire_lease(&w, "eval", "b", ttl).unwrap(),
        "renewed: lapses at 50"
    );
    let leases = s.leases(&w).unwrap();
    assert_eq!(leases.len(), 1);
    assert_eq!((leases[0].holder.as_str(), leases[0].expires_at), ("a", at(50)));
    h.clock().set(at(50));
    assert!(
        s.acquire_lease(&w, "eval", "b", ttl).unwrap(),
        "lapsed at exactly its expiry"
    );
    s.release_lease(&w, "eval", "a").unwrap();
    assert!(
        !s.acquire_lease(&w, "eval", "c", ttl).unwrap(),
        "only its holder releases it"
    );
    s.release_lease(&w, "eval", "b").unwrap();
    assert!(s.acquire_lease(&w, "eval", "c", ttl).unwrap());
    assert!(s
        .acquire_lease(&w, "other", "a", Duration::from_millis(1))
        .unwrap());
    invalid(s.acquire_lease(&w, "k", "a", Duration::ZERO), "ttl 0");
    invalid(s.acquire_lease(&w, "", "a", ttl), "empty key");
    s.release_lease(&w, "never", "x").unwrap();
}

/// A cursor only moves forward; unknown cursors are 0.
pub fn cursors_only_move_forward(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-cursor", "w");
    assert_eq!(s.cursor(&w, "m").unwrap(), 0);
    s.save_cursor(&w, "m", 5).unwrap();
    s.save_cursor(&w, "m", 3).unwrap();
    assert_eq!(s.cursor(&w, "m").unwrap(), 5);
    s.save_cursor(&w, "m", 7).unwrap();
    s.save_cursor(&w, "n", 0).unwrap();
    assert_eq!(s.cursor(&w, "m").unwrap(), 7);
    assert_eq!(
        s.cursors(&w).unwrap(),
        vec![("m".to_string(), 7), ("n".to_string(), 0)]
    );
    invalid(s.save_cursor(&w, "m", -1), "negative seq");
    assert_eq!(s.cursor(&w, "m").unwrap(), 7);
}
