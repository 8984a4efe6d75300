//! The workspace endpoints over a memory store: routes, shapes, policy and bad input.

use std::sync::Arc;
use std::time::Duration;

use execstore::workspace::{
    Entry, EvaluationError, ManualClock, MemoryWorkspaceStorage, NewRun, StoredRule, RULE_INSTALLED,
};
use execstore::MemoryStore;

use crate::{ApiRequest, ApiResponse, MonitorApi, Stores};
use execstore::workspace::{Run, StoredRuleStatus, Timestamp, WorkspaceRef, WorkspaceStorage};
use serde_json::{json, Value};

const T0: i64 = 1_767_268_800_000_000;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_micros(T0 + secs * 1_000_000).unwrap()
}

fn obj(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn run(id: &str, rule: &str, scope: &str, fired: i64, created: i64) -> Run {
    Run::pending(NewRun {
        id: id.into(),
        rule: rule.into(),
        scope_key: scope.into(),
        scope: obj(json!({ "k": scope })),
        fired_seq: fired,
        matched: vec![fired],
        correlation_id: "e1".into(),
        depth: 0,
        now: at(created),
    })
    .unwrap()
}

/// acme/prod: a log with a causal chain, runs of an ordered rule, a dead letter, a lease,
/// a cursor and a stored rule in two versions.
fn storage() -> (MemoryWorkspaceStorage, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(at(0)));
    let s = MemoryWorkspaceStorage::new(clock.clone());
    let ws = WorkspaceRef::new("acme", "prod");
    let mut tx = s.begin(&ws).unwrap();
    let mut caused = Entry::new(
        "e2",
        json!({"kind": "agent", "name": "pager"}),
        obj(json!({"type": "oncall:paged", "who": "<script>alert(1)</script>"})),
    );
    caused.causation = Some(json!({"firing_id": "f1", "run_id": "r1", "depth": 1}));
    caused.correlation_id = Some("e1".into());
    let mut grandchild = Entry::new(
        "e4",
        json!({"kind": "agent"}),
        obj(json!({"type": "oncall:acked"})),
    );
    grandchild.causation = Some(json!({"run_id": "r2"}));
    grandchild.correlation_id = Some("e1".into());
    tx.append(&[
        Entry::new(
            "e1",
            json!({"kind": "source", "name": "m"}),
            obj(json!({"type": "oncall:error"})),
        ),
        caused,
        Entry::new(
            "e3",
            json!({"kind": "source"}),
            obj(json!({"type": "oncall:heartbeat"})),
        ),
        grandchild,
    ])
    .unwrap();
    let r1 = run("r1", "page", "auth", 1, 1);
    let r2 = run("r2", "page", "auth", 2, 2);
    let r3 = run("r3", "page", "auth", 3, 3);
    let other = run("r4", "log", "auth", 3, 3)
        .with(obj(json!({"status": "succeeded"})))
        .unwrap();
    tx.save_runs(&[
        r1.with(obj(json!({"status": "dead", "error": "boom"}))).unwrap(),
        r2.with(obj(json!({"status": "running", "attempts": 1}))).unwrap(),
        r3,
        other,
    ])
    .unwrap();
    tx.dead_letter(&[EvaluationError::new("page", 2, "KeyError")])
        .unwrap();
    let rule = |v: &str| {
        obj(json!({"name": "page", "description": v, "ordering": "scope", "on_dead_letter": "block"}))
    };
    for version in 1..=2 {
        tx.save_stored_rule(&StoredRule {
            rule: rule(&format!("v{version}")),
            version,
            status: StoredRuleStatus::Active,
            provenance: obj(json!({"by": "<img src=x onerror=alert(1)>"})),
        })
        .unwrap();
        tx.append(&[Entry::new(
            format!("install-{version}"),
            json!({"kind": "user"}),
            obj(json!({"type": RULE_INSTALLED, "rule": "page", "version": version, "spec": rule("x"), "provenance": {}})),
        )])
        .unwrap();
    }
    tx.commit().unwrap();
    s.save_cursor(&ws, "exporter", 2).unwrap();
    assert!(s
        .acquire_lease(&ws, "run:r2", "worker-1", Duration::from_secs(60))
        .unwrap());
    clock.set(at(10));
    (s, clock)
}

fn api() -> MonitorApi {
    MonitorApi::new(serde_json::Map::new(), None)
}

fn get_in(stores: Stores<'_>, target: &str) -> ApiResponse {
    api().handle_stores(
        stores,
        &ApiRequest::from_target("GET", target, None),
        at(20).secs_f64(),
    )
}

fn get(s: &MemoryWorkspaceStorage, target: &str) -> ApiResponse {
    get_in(
        Stores {
            executions: None,
            workspaces: Some(s),
        },
        target,
    )
}

#[test]
fn info_says_what_the_store_holds_and_the_other_contract_is_a_404() {
    let (s, _) = storage();
    let info = get(&s, "/api/info");
    assert_eq!(
        info.body["holds"],
        json!({"executions": false, "workspaces": true})
    );
    let exe = get(&s, "/api/executions");
    assert_eq!(exe.status, 404);
    assert!(exe.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no executions"));
    assert_eq!(get(&s, "/api/changes").status, 200);
    let m = MemoryStore::new();
    let only_exe = api().handle(&m, &ApiRequest::from_target("GET", "/api/workspaces", None), 0.0);
    assert_eq!(only_exe.status, 404);
    assert!(only_exe.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no workspace log"));
    let both = get_in(
        Stores {
            executions: Some(&m),
            workspaces: Some(&s),
        },
        "/api/info",
    );
    assert_eq!(
        both.body["holds"],
        json!({"executions": true, "workspaces": true})
    );
}

#[test]
fn the_change_token_moves_with_an_append() {
    let (s, _) = storage();
    let before = get(&s, "/api/changes").body["token"].clone();
    let ws = WorkspaceRef::new("acme", "prod");
    let mut tx = s.begin(&ws).unwrap();
    tx.append(&[Entry::new("e9", json!({}), obj(json!({"type": "x"})))])
        .unwrap();
    tx.commit().unwrap();
    assert_ne!(get(&s, "/api/changes").body["token"], before);
}

#[test]
fn the_change_token_moves_with_a_dead_letter_alone() {
    let (s, _) = storage();
    let before = get(&s, "/api/changes").body["token"].clone();
    let ws = WorkspaceRef::new("acme", "prod");
    let mut tx = s.begin(&ws).unwrap();
    tx.dead_letter(&[EvaluationError::new("page", 3, "ValueError")])
        .unwrap();
    tx.commit().unwrap();
    assert_eq!(s.head_seq(&ws).unwrap(), 6, "the log did not move");
    assert_ne!(get(&s, "/api/changes").body["token"], before);
}

#[test]
fn workspaces_list_heads_and_cursor_lag() {
    let (s, _) = storage();
    let a = get(&s, "/api/workspaces");
    assert_eq!(a.status, 200, "{:?}", a.body);
    let w = &a.body["items"][0];
    assert_eq!(
        (w["tenant_id"].as_str(), w["workspace_id"].as_str()),
        (Some("acme"), Some("prod"))
    );
    assert_eq!(w["head_seq"], 6);
    assert!(w["head_ts"].as_str().unwrap().starts_with("2026-01-01T12:00:00"));
    assert_eq!(w["cursors"], json!([{"name": "exporter", "seq": 2, "lag": 4}]));
    let one = get(&s, "/api/workspaces/acme/prod");
    assert_eq!(one.body["head_seq"], 6);
    assert_eq!(get(&s, "/api/workspaces/acme/nope").status, 404);
    assert_eq!(get(&s, "/api/workspaces/acme/nope/log").status, 404);
}

#[test]
fn the_log_filters_pages_and_tails() {
    let (s, _) = storage();
    let seqs = |target: &str| -> Vec<i64> {
        let a = get(&s, target);
        assert_eq!(a.status, 200, "{target}: {:?}", a.body);
        a.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["seq"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(seqs("/api/workspaces/acme/prod/log"), [1, 2, 3, 4, 5, 6]);
    assert_eq!(seqs("/api/workspaces/acme/prod/log?after=2&before=5"), [3, 4]);
    assert_eq!(seqs("/api/workspaces/acme/prod/log?last=2"), [5, 6]);
    assert_eq!(
        seqs("/api/workspaces/acme/prod/log?type=oncall:error,oncall:acked"),
        [1, 4]
    );
    let page = get(&s, "/api/workspaces/acme/prod/log?limit=2");
    assert_eq!(page.body["next_after"], 2);
    assert_eq!(page.body["head_seq"], 6);
    assert_eq!(page.body["items"][1]["event"]["who"], "<script>alert(1)</script>");
    assert_eq!(
        get(&s, "/api/workspaces/acme/prod/log?after=4").body["next_after"],
        Value::Null
    );
}

#[test]
fn an_envelope_shows_its_causal_chain() {
    let (s, _) = storage();
    let a = get(&s, "/api/workspaces/acme/prod/envelopes/e2");
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_eq!(a.body["envelope"]["id"], "e2");
    assert_eq!(a.body["causes"], json!([1]));
    assert_eq!(a.body["caused"], json!([4]));
    let chain: Vec<i64> = a.body["chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(chain, [1, 2, 4], "the correlation's envelopes, not the heartbeat");
    assert_eq!(a.body["chain"][1]["rule"], "page");
    let root = get(&s, "/api/workspaces/acme/prod/envelopes/e1");
    assert_eq!(root.body["causes"], json!([]));
    assert_eq!(root.body["caused"], json!([2, 4]));
    assert_eq!(get(&s, "/api/workspaces/acme/prod/envelopes/nope").status, 404);
}

#[test]
fn runs_say_due_or_held_and_by_which() {
    let (s, _) = storage();
    let a = get(&s, "/api/workspaces/acme/prod/runs");
    assert_eq!(a.status, 200, "{:?}", a.body);
    let by_id = |id: &str| {
        a.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["run"]["id"] == id)
            .unwrap()
            .clone()
    };
    // The ordered, blocking rule: r3 waits behind the dead r1 (the earliest holder).
    assert_eq!(by_id("r3")["held_by"], json!({"id": "r1", "status": "dead"}));
    assert_eq!(by_id("r3")["due"], false);
    assert_eq!(by_id("r2")["lease"]["holder"], "worker-1");
    assert_eq!(by_id("r2")["lease"]["lapsed"], false);
    assert_eq!(by_id("r2")["due"], false);
    assert_eq!(by_id("r4")["held_by"], Value::Null);
    let pending = get(&s, "/api/workspaces/acme/prod/runs?status=pending");
    assert_eq!(pending.body["items"].as_array().unwrap().len(), 1);
    let first = get(&s, "/api/workspaces/acme/prod/runs?limit=3");
    let cursor = first.body["next_cursor"].as_str().unwrap().to_owned();
    let second = get(
        &s,
        &format!("/api/workspaces/acme/prod/runs?limit=3&cursor={cursor}"),
    );
    assert_eq!(second.body["items"].as_array().unwrap().len(), 1);
    assert_eq!(second.body["next_cursor"], Value::Null);
    let scoped = get(&s, "/api/workspaces/acme/prod/runs?rule=log&scope=auth");
    assert_eq!(scoped.body["items"].as_array().unwrap().len(), 1);
}

#[test]
fn dead_letters_leases_cursors_and_rules() {
    let (s, clock) = storage();
    let dl = get(&s, "/api/workspaces/acme/prod/dead-letters");
    assert_eq!(
        dl.body["items"],
        json!([{"rule": "page", "seq": 2, "error": "KeyError"}])
    );
    assert_eq!(
        get(&s, "/api/workspaces/acme/prod/dead-letters?rule=other").body["items"],
        json!([])
    );
    let leases = get(&s, "/api/workspaces/acme/prod/leases");
    assert_eq!(leases.body["items"][0]["key"], "run:r2");
    assert_eq!(leases.body["items"][0]["lapsed"], false);
    clock.set(at(1000));
    let later = api().handle_stores(
        Stores {
            executions: None,
            workspaces: Some(&s),
        },
        &ApiRequest::from_target("GET", "/api/workspaces/acme/prod/leases", None),
        at(1000).secs_f64(),
    );
    assert_eq!(later.body["items"][0]["lapsed"], true);
    let cursors = get(&s, "/api/workspaces/acme/prod/cursors");
    assert_eq!(
        cursors.body["items"],
        json!([{"name": "exporter", "seq": 2, "lag": 4}])
    );
    let rules = get(&s, "/api/workspaces/acme/prod/rules");
    assert_eq!(rules.body["items"][0]["version"], 2);
    assert_eq!(
        rules.body["items"][0]["provenance"]["by"],
        "<img src=x onerror=alert(1)>"
    );
    let history = get(&s, "/api/workspaces/acme/prod/rules/page/history");
    assert_eq!(history.body["items"].as_array().unwrap().len(), 2);
    assert_eq!(
        get(&s, "/api/workspaces/acme/prod/rules/nope/history").status,
        404
    );
}

/// The leases page is a page by key: `limit` rows (50 by default) after `after`, and
/// `next_after` while more follow; paging on lists every row once, lapsed ones included.
#[test]
fn leases_page_by_key() {
    let (s, _) = storage();
    let w = WorkspaceRef::new("acme", "prod");
    for i in 0..60 {
        let ttl = Duration::from_secs(if i % 2 == 0 { 1 } else { 600 });
        assert!(s.acquire_lease(&w, &format!("k{i:02}"), "h", ttl).unwrap());
    }
    let all: Vec<String> = s.leases(&w).unwrap().into_iter().map(|l| l.key).collect();
    assert_eq!(all.len(), 61);
    let first = get(&s, "/api/workspaces/acme/prod/leases");
    assert_eq!(
        first.body["items"].as_array().unwrap().len(),
        crate::DEFAULT_LIMIT
    );
    assert_eq!(first.body["next_after"], "k49");
    let mut seen = Vec::new();
    let mut target = "/api/workspaces/acme/prod/leases?limit=7".to_owned();
    loop {
        let page = get(&s, &target);
        assert_eq!(page.status, 200, "{:?}", page.body);
        let items = page.body["items"].as_array().unwrap();
        assert!(items.len() <= 7);
        seen.extend(items.iter().map(|l| l["key"].as_str().unwrap().to_owned()));
        match page.body["next_after"].as_str() {
            Some(next) => target = format!("/api/workspaces/acme/prod/leases?limit=7&after={next}"),
            None => break,
        }
    }
    assert_eq!(seen, all);
    // A page that ends on the last key says so: no empty page after it.
    let last = get(&s, "/api/workspaces/acme/prod/leases?limit=61");
    assert_eq!(last.body["next_after"], Value::Null);
    // The page's now (20 s) is past the 1 s leases' expiry, before the others'.
    let rows = s.leases_of(&w, &["k10".into(), "k11".into()]).unwrap();
    let lapsed = get(&s, "/api/workspaces/acme/prod/leases?after=k09&limit=2");
    assert_eq!(
        lapsed.body["items"],
        json!([
            {"key": "k10", "holder": "h", "expires_at": rows[0].expires_at.to_json_text(), "lapsed": true},
            {"key": "k11", "holder": "h", "expires_at": rows[1].expires_at.to_json_text(), "lapsed": false},
        ])
    );
    // After a key that is not there: from the next one.
    let between = get(&s, "/api/workspaces/acme/prod/leases?after=k5&limit=1");
    assert_eq!(between.body["items"][0]["key"], "k50");
    assert_eq!(between.body["next_after"], "k50");
}

/// The dead letters page by position: `limit` (50 by default) after `after`, of a rule or
/// all, and `next_after` while more follow; paging on lists every one once, oldest first.
#[test]
fn dead_letters_page_by_position() {
    let (s, _) = storage();
    let w = WorkspaceRef::new("acme", "prod");
    let mut tx = s.begin(&w).unwrap();
    let letters: Vec<EvaluationError> = (0..60)
        .map(|i| EvaluationError::new(if i % 3 == 0 { "rare" } else { "page" }, 100 + i, "boom"))
        .collect();
    tx.dead_letter(&letters).unwrap();
    tx.commit().unwrap();
    let first = get(&s, "/api/workspaces/acme/prod/dead-letters");
    assert_eq!(
        first.body["items"].as_array().unwrap().len(),
        crate::DEFAULT_LIMIT
    );
    assert!(first.body["next_after"].is_i64(), "{:?}", first.body);
    for rule in [None, Some("rare"), Some("page")] {
        let all: Vec<Value> = s
            .dead_letters(&w, rule)
            .unwrap()
            .into_iter()
            .map(|l| Value::Object(l.doc().clone()))
            .collect();
        let base = match rule {
            Some(r) => format!("/api/workspaces/acme/prod/dead-letters?limit=7&rule={r}"),
            None => "/api/workspaces/acme/prod/dead-letters?limit=7".to_owned(),
        };
        let (mut seen, mut target) = (Vec::new(), base.clone());
        loop {
            let page = get(&s, &target);
            assert_eq!(page.status, 200, "{:?}", page.body);
            let items = page.body["items"].as_array().unwrap();
            assert!(items.len() <= 7);
            seen.extend(items.iter().cloned());
            match page.body["next_after"].as_i64() {
                Some(next) => target = format!("{base}&after={next}"),
                None => break,
            }
        }
        assert_eq!(seen, all, "{rule:?}");
    }
    let whole = get(&s, "/api/workspaces/acme/prod/dead-letters?limit=61");
    assert_eq!(whole.body["items"].as_array().unwrap().len(), 61);
    assert_eq!(whole.body["next_after"], Value::Null);
}

#[test]
fn due_runs_follow_the_stored_rules_policy() {
    let (s, _) = storage();
    let a = get(&s, "/api/due-runs?now=2026-01-01T12:00:30Z");
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert_eq!(a.body["policy"]["ordered"], json!(["page"]));
    // r3 is held by the dead r1 (blocking) and r2 runs under a live lease.
    assert_eq!(a.body["items"], json!([]));
    let unordered = get(&s, "/api/due-runs?now=now&limit=10&disabled=nothing");
    assert_eq!(unordered.status, 200);
    let before = get(&s, "/api/due-runs?now=0");
    assert_eq!(before.body["items"], json!([]));
}

#[test]
fn bad_parameters_are_400s_with_the_error_shape() {
    let (s, _) = storage();
    for target in [
        "/api/workspaces?x=1",
        "/api/workspaces/acme/prod/log?limit=0",
        "/api/workspaces/acme/prod/log?limit=2&last=2",
        "/api/workspaces/acme/prod/log?after=-1",
        "/api/workspaces/acme/prod/log?after=x",
        "/api/workspaces/acme/prod/log?last=1&last=2",
        "/api/workspaces/acme/prod/log?colour=red",
        "/api/workspaces/acme/prod/runs?status=sleeping",
        "/api/workspaces/acme/prod/runs?cursor=garbage",
        // ["runs", usize::MAX]: an offset that overflowed the page arithmetic (a panic),
        // found by the cursor fuzz target (fuzz/regressions/cursor/runs-offset-overflow).
        "/api/workspaces/acme/prod/runs?cursor=WyJydW5zIiwxODQ0Njc0NDA3MzcwOTU1MTYxNV0",
        "/api/workspaces/acme/prod/runs?limit=100001",
        "/api/workspaces/acme/prod/leases?now=1",
        "/api/workspaces/acme/prod/dead-letters?limit=0",
        "/api/workspaces/acme/prod/dead-letters?after=-1",
        "/api/workspaces/acme/prod/dead-letters?after=x",
        "/api/workspaces/acme/prod/leases?limit=0",
        "/api/workspaces/acme/prod/leases?limit=x",
        "/api/workspaces/acme/prod/leases?after=a%00b",
        "/api/workspaces/acme/prod/leases?after=a&after=b",
        "/api/workspaces/%FF/prod/log",
        "/api/due-runs?now=yesterday",
        "/api/due-runs?now=-5",
        "/api/due-runs?limit=0",
    ] {
        let a = get(&s, target);
        assert_eq!(a.status, 400, "{target}: {:?}", a.body);
        // A parameter the store refuses is its INVALID_INPUT, as in the execution API.
        let code = a.body["error"]["code"].as_str().unwrap();
        assert!(
            ["BAD_REQUEST", "INVALID_INPUT"].contains(&code),
            "{target}: {code}"
        );
        assert!(a.body["error"]["message"].is_string(), "{target}");
    }
    for target in [
        "/api/workspaces/acme",
        "/api/workspaces/acme/prod/nope",
        "/api/workspaces//prod/log",
        "/api/workspaces/acme/prod/rules/page",
    ] {
        assert_eq!(get(&s, target).status, 404, "{target}");
    }
    let post = api().handle_stores(
        Stores {
            executions: None,
            workspaces: Some(&s),
        },
        &ApiRequest::from_target("POST", "/api/workspaces", None),
        0.0,
    );
    assert_eq!(post.status, 405);
}
