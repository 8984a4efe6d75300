//! The one write path, through the API's public face: tokens with names and roles, the
//! required reason, and the audit entry every write leaves (refusals and failures too),
//! never holding a token.

use std::sync::Arc;

use execstore::executions::Status;
use execstore::operator::{
    AuditEntry, AuditQuery, MemoryOperatorStore, OperatorStore, SavedView, OK, PENDING, PENDING_MEANS,
};
use execstore::{Execution, ExecutionStore, MemoryStore, StoreError};
use execstore_monitor_api::{ApiRequest, ApiResponse, MonitorApi, Role, Secret, TokenEntry, Tokens};
use serde_json::{json, Map, Value};

const NOW: f64 = 1_800_000_000.0;
const ADMIN: &str = "Bearer adm1n-secret";
const ACT: &str = "Bearer act0r-secret";
const READ: &str = "Bearer r3ader-secret";

struct Fixture {
    api: MonitorApi,
    store: MemoryStore,
    audit: Arc<MemoryOperatorStore>,
}

fn fixture() -> Fixture {
    let tokens = Tokens::new(vec![
        TokenEntry {
            name: "ada".into(),
            role: Role::Admin,
            secret: Secret::Sha256(execstore_monitor_api::digest("adm1n-secret")),
        },
        TokenEntry {
            name: "otto".into(),
            role: Role::Act,
            secret: Secret::Plain("act0r-secret".into()),
        },
        TokenEntry {
            name: "rita".into(),
            role: Role::Read,
            secret: Secret::Plain("r3ader-secret".into()),
        },
    ])
    .expect("tokens");
    let audit = Arc::new(MemoryOperatorStore::new());
    let api = MonitorApi::with_tokens(Map::new(), tokens).with_operator(audit.clone());
    let store = MemoryStore::new();
    for (id, status) in [("run", Status::Running), ("done", Status::Done)] {
        let mut exe = Execution::new(id, "d");
        exe.status = status;
        store.save(&mut exe).expect("save");
    }
    Fixture { api, store, audit }
}

impl Fixture {
    fn call(&self, method: &str, target: &str, auth: Option<&str>, body: &str) -> ApiResponse {
        let request = ApiRequest::from_target(method, target, auth).with_body(body.as_bytes());
        self.api.handle(&self.store, &request, NOW)
    }

    fn entries(&self) -> Vec<Value> {
        self.audit
            .list_audit(&AuditQuery::new())
            .expect("audit")
            .into_iter()
            .map(|e| serde_json::to_value(e).expect("json"))
            .collect()
    }

    fn status(&self, id: &str) -> Option<Status> {
        self.store.load(id).expect("load").map(|e| e.status)
    }
}

fn code(r: &ApiResponse) -> &Value {
    &r.body["error"]["code"]
}

#[test]
fn roles_decide_what_a_token_may_write() {
    let f = fixture();
    let why = r#"{"reason": "incident 42"}"#;
    // read: no write at all.
    let r = f.call("POST", "/api/executions/run/suspend", Some(READ), why);
    assert_eq!((r.status, code(&r)), (403, &json!("FORBIDDEN")), "{}", r.body);
    assert_eq!(f.status("run"), Some(Status::Running));
    // act: suspend yes, purge no.
    let r = f.call("POST", "/api/executions/run/suspend", Some(ACT), why);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(f.status("run"), Some(Status::Suspended));
    let r = f.call("POST", "/api/executions/done/purge", Some(ACT), why);
    assert_eq!((r.status, code(&r)), (403, &json!("FORBIDDEN")));
    let r = f.call(
        "POST",
        "/api/control/purge",
        Some(ACT),
        r#"{"reason": "x", "targets": [{"id": "done"}]}"#,
    );
    assert_eq!((r.status, code(&r)), (403, &json!("FORBIDDEN")));
    assert_eq!(f.status("done"), Some(Status::Done), "not purged");
    // admin: purge.
    let r = f.call("POST", "/api/executions/done/purge", Some(ADMIN), why);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(f.status("done"), None);
    // No token, a wrong one: 401.
    for auth in [None, Some("Bearer nope"), Some("Basic adm1n-secret")] {
        let r = f.call("POST", "/api/executions/run/resume", auth, why);
        assert_eq!((r.status, code(&r)), (401, &json!("UNAUTHORIZED")), "{auth:?}");
    }
    assert_eq!(f.status("run"), Some(Status::Suspended));
}

#[test]
fn a_write_without_a_reason_is_400_and_changes_nothing() {
    let f = fixture();
    let long = json!({ "reason": "x".repeat(501) }).to_string();
    let at_limit = json!({ "reason": "é".repeat(500) }).to_string();
    for body in [
        "",
        "{}",
        "[]",
        "not json",
        r#"{"reason": ""}"#,
        r#"{"reason": "   "}"#,
        r#"{"reason": 7}"#,
        &long,
    ] {
        let r = f.call("POST", "/api/executions/run/terminate", Some(ADMIN), body);
        // A body that is not a JSON object is malformed input; an object without a good
        // reason is REASON_REQUIRED; either way nothing changes.
        let want = if matches!(body, "[]" | "not json") {
            "INVALID_INPUT"
        } else {
            "REASON_REQUIRED"
        };
        assert_eq!(
            (r.status, code(&r)),
            (400, &json!(want)),
            "{body:.40}: {}",
            r.body
        );
        let r = f.call("POST", "/api/control/terminate", Some(ADMIN), body);
        assert_eq!(r.status, 400, "{body:.40}");
    }
    assert_eq!(f.status("run"), Some(Status::Running));
    assert!(f.entries().is_empty(), "{:?}", f.entries());
    let r = f.call("POST", "/api/executions/run/terminate", Some(ADMIN), &at_limit);
    assert_eq!(r.status, 200, "500 characters is fine: {}", r.body);
}

#[test]
fn the_audit_records_successes_failures_and_refusals_without_tokens() {
    let f = fixture();
    let r = f.call(
        "POST",
        "/api/executions/run/suspend?expected_version=1",
        Some(ACT),
        r#"{"reason": "customer asked"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // A failed action: a stale version.
    let r = f.call(
        "POST",
        "/api/executions/run/resume?expected_version=1",
        Some(ACT),
        r#"{"reason": "retry"}"#,
    );
    assert_eq!(r.status, 409);
    // Refused: the role, and an unknown token.
    let r = f.call(
        "POST",
        "/api/executions/run/purge",
        Some(ACT),
        r#"{"reason": "cleanup"}"#,
    );
    assert_eq!(r.status, 403);
    let r = f.call(
        "POST",
        "/api/executions/run/terminate",
        Some("Bearer guessed-token"),
        r#"{"reason": "hm"}"#,
    );
    assert_eq!(r.status, 401);
    // A bulk action: the request's entry, then one entry per target.
    let r = f.call(
        "POST",
        "/api/control/terminate",
        Some(ADMIN),
        r#"{"reason": "incident 7", "targets": [{"id": "run", "expected_version": 2}, {"id": "nope"}]}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);

    let got: Vec<Value> = f
        .entries()
        .into_iter()
        .map(|mut e| {
            e.as_object_mut().expect("object").remove("id");
            e
        })
        .collect();
    let want = [
        json!({"at": NOW, "actor": "ada", "role": "admin", "action": "control.terminate", "target": "nope",
               "reason": "incident 7", "outcome": "NOT_FOUND", "message": got[0]["message"], "params": {"bulk": true}}),
        json!({"at": NOW, "actor": "ada", "role": "admin", "action": "control.terminate", "target": "run",
               "reason": "incident 7", "outcome": "ok", "message": null, "params": {"bulk": true, "expected_version": 2}}),
        json!({"at": NOW, "actor": "ada", "role": "admin", "action": "control.terminate", "target": "",
               "reason": "incident 7", "outcome": "ok", "message": null,
               "params": {"targets": [{"id": "run", "expected_version": 2}, {"id": "nope"}]}}),
        json!({"at": NOW, "actor": "anonymous", "role": "", "action": "executions.terminate", "target": "run",
               "reason": "hm", "outcome": "UNAUTHORIZED", "message": got[3]["message"], "params": {}}),
        json!({"at": NOW, "actor": "otto", "role": "act", "action": "executions.purge", "target": "run",
               "reason": "cleanup", "outcome": "FORBIDDEN", "message": "otto has the role act: executions.purge needs admin", "params": {}}),
        json!({"at": NOW, "actor": "otto", "role": "act", "action": "executions.resume", "target": "run",
               "reason": "retry", "outcome": "CONFLICT", "message": got[5]["message"], "params": {"expected_version": 1}}),
        json!({"at": NOW, "actor": "otto", "role": "act", "action": "executions.suspend", "target": "run",
               "reason": "customer asked", "outcome": "ok", "message": null, "params": {"expected_version": 1}}),
    ];
    assert_eq!(got, want);
    assert!(got[0]["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert!(
        got[5]["message"].as_str().is_some_and(|m| m.contains("version")),
        "{}",
        got[5]
    );
    let all = serde_json::to_string(&got).expect("json");
    for secret in ["adm1n", "act0r", "r3ader", "guessed-token"] {
        assert!(!all.contains(secret), "{secret} in the audit: {all}");
    }

    // Read back through the API: all, by target, by actor, paged, per execution.
    let r = f.call("GET", "/api/audit?limit=4", None, "");
    assert_eq!(r.status, 200);
    assert_eq!(r.body["items"].as_array().map(Vec::len), Some(4));
    let next = r.body["next"].as_str().expect("a next page").to_owned();
    let r = f.call("GET", &format!("/api/audit?limit=4&cursor={next}"), None, "");
    assert_eq!(r.body["items"].as_array().map(Vec::len), Some(3));
    assert_eq!(r.body["next"], Value::Null);
    let r = f.call("GET", "/api/audit?actor=otto", None, "");
    assert_eq!(r.body["items"].as_array().map(Vec::len), Some(3));
    let r = f.call("GET", "/api/executions/run/audit", None, "");
    assert_eq!(r.body["items"].as_array().map(Vec::len), Some(5));
    let r = f.call(
        "GET",
        "/api/audit?target=nope&since=2020-01-01T00:00:00Z",
        None,
        "",
    );
    assert_eq!(r.body["items"].as_array().map(Vec::len), Some(1));
    for bad in [
        "/api/audit?cursor=x",
        "/api/audit?limit=0",
        "/api/audit?who=x",
        "/api/executions/run/audit?target=x",
    ] {
        assert_eq!(f.call("GET", bad, None, "").status, 400, "{bad}");
    }
}

/// An operator store that fails: every write refused (`records: false`), or entries recorded
/// but never completed (`records: true`: the outcome's update fails).
struct Failing {
    records: bool,
    inner: MemoryOperatorStore,
}

fn down() -> StoreError {
    StoreError::Backend {
        message: "the audit table is gone".into(),
        retryable: false,
        source: None,
    }
}

impl OperatorStore for Failing {
    fn record_audit(&self, entry: &AuditEntry) -> Result<i64, StoreError> {
        if self.records {
            self.inner.record_audit(entry)
        } else {
            Err(down())
        }
    }
    fn set_audit_outcome(&self, _: i64, _: &str, _: Option<&str>) -> Result<bool, StoreError> {
        Err(down())
    }
    fn list_audit(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, StoreError> {
        self.inner.list_audit(query)
    }
    fn list_views(&self) -> Result<Vec<SavedView>, StoreError> {
        self.inner.list_views()
    }
    fn put_view(&self, view: &SavedView) -> Result<(), StoreError> {
        self.inner.put_view(view)
    }
    fn delete_view(&self, name: &str) -> Result<bool, StoreError> {
        self.inner.delete_view(name)
    }
}

fn with_operator(f: Fixture, records: bool) -> (Fixture, Arc<Failing>) {
    let failing = Arc::new(Failing {
        records,
        inner: MemoryOperatorStore::new(),
    });
    let api = f.api.clone().with_operator(failing.clone());
    (Fixture { api, ..f }, failing)
}

#[test]
fn no_action_is_made_when_its_audit_entry_cannot_be_recorded_first() {
    let (f, failing) = with_operator(fixture(), false);
    let why = r#"{"reason": "incident 9"}"#;
    let refused = |r: &ApiResponse| {
        assert_eq!(
            (r.status, code(r)),
            (503, &json!("AUDIT_UNAVAILABLE")),
            "{}",
            r.body
        );
        let message = r.body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("not made") && message.contains("gone"),
            "{message}"
        );
    };
    refused(&f.call("POST", "/api/executions/run/suspend", Some(ACT), why));
    refused(&f.call("POST", "/api/executions/done/purge", Some(ADMIN), why));
    refused(&f.call(
        "POST",
        "/api/control/terminate",
        Some(ADMIN),
        r#"{"reason": "x", "targets": [{"id": "run"}, {"id": "done"}]}"#,
    ));
    refused(&f.call(
        "POST",
        "/api/control/terminate/matching?status=RUNNING",
        Some(ADMIN),
        r#"{"reason": "x"}"#,
    ));
    refused(&f.call(
        "PUT",
        "/api/views/mine",
        Some(ACT),
        r#"{"reason": "x", "query": "status=FAILED"}"#,
    ));
    assert_eq!(
        f.status("run"),
        Some(Status::Running),
        "not suspended or terminated"
    );
    assert_eq!(f.status("done"), Some(Status::Done), "not purged");
    assert!(failing.list_views().expect("views").is_empty(), "no view saved");
    assert!(failing.list_audit(&AuditQuery::new()).expect("audit").is_empty());
}

#[test]
fn an_action_whose_outcome_cannot_be_recorded_stays_pending_and_says_so() {
    let (f, failing) = with_operator(fixture(), true);
    let r = f.call(
        "POST",
        "/api/executions/run/suspend",
        Some(ACT),
        r#"{"reason": "incident 9"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body["audit_error"].as_str().is_some_and(|m| m.contains("gone")),
        "{}",
        r.body
    );
    assert_eq!(f.status("run"), Some(Status::Suspended), "the action is made");
    let entries = failing.list_audit(&AuditQuery::new()).expect("audit");
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (
            entries[0].outcome.as_str(),
            entries[0].action.as_str(),
            entries[0].target.as_str()
        ),
        (PENDING, "executions.suspend", "run")
    );
    // The API says what PENDING means.
    let r = f.call("GET", "/api/executions/run/audit", None, "");
    assert_eq!(r.body["items"][0]["outcome"], json!(PENDING));
    assert_eq!(r.body["items"][0]["note"], json!(PENDING_MEANS));
}

#[test]
fn input_the_log_cannot_hold_as_is_is_recorded_as_it_can_and_refused_by_the_handler() {
    // Before anything runs the entry is recorded: a body too large for the log, or a NUL in
    // the target, must not turn the handler's 400 into a refusal by the log.
    let f = fixture();
    // Over the API's 256 KiB of event data, and the log's 16 KiB of parameters.
    let big = json!({"reason": "big", "event": {"name": "A", "data": {"x": "y".repeat(300_000)}}});
    let r = f.call("POST", "/api/executions/run/send", Some(ACT), &big.to_string());
    assert_eq!(
        (r.status, code(&r)),
        (400, &json!("INVALID_INPUT")),
        "{:.300}",
        r.body.to_string()
    );
    let r = f.call(
        "POST",
        "/api/executions/a%00b/suspend?x=%00",
        Some(ACT),
        r#"{"reason": "nul", "k\u0000": "v\u0000"}"#,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let got = f.entries();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[1]["outcome"], json!("INVALID_INPUT"));
    assert_eq!(got[1]["params"]["event"]["omitted"], json!(true));
    assert_eq!(got[0]["target"], json!("a\u{fffd}b"));
    assert_eq!(
        got[0]["params"],
        json!({"x": "\u{fffd}", "k\u{fffd}": "v\u{fffd}"})
    );
    assert_ne!(got[0]["outcome"], json!(PENDING));
}

#[test]
fn a_completed_write_has_its_outcome_and_no_note() {
    let f = fixture();
    let r = f.call(
        "PUT",
        "/api/views/first",
        Some(ACT),
        r#"{"reason": "r", "query": "a=1"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let entries = f.audit.list_audit(&AuditQuery::new()).expect("audit");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].outcome, OK);
    let r = f.call("GET", "/api/audit", None, "");
    assert_eq!(r.body["items"][0]["note"], Value::Null);
}

#[test]
fn info_says_who_calls_and_what_each_write_needs() {
    let f = fixture();
    let r = f.call("GET", "/api/info", Some(ACT), "");
    assert_eq!(r.body["caller"], json!({"name": "otto", "role": "act"}));
    assert_eq!(r.body["writable"], true);
    assert_eq!(r.body["actions"]["executions.suspend"], "act");
    assert_eq!(r.body["actions"]["executions.purge"], "admin");
    assert_eq!(r.body["actions"]["control.purge"], "admin");
    assert_eq!(r.body["actions"]["views.put"], "act");
    let r = f.call("GET", "/api/info", None, "");
    assert_eq!(r.body["caller"], Value::Null);
    let r = f.call("GET", "/api/info", Some("Bearer wrong"), "");
    assert_eq!(r.body["caller"], Value::Null);
    assert!(r.body["caller_error"].is_string());
    assert!(!r.body.to_string().contains("wrong"));
}

#[test]
fn saved_views_are_writes_and_only_the_owner_or_an_admin_deletes_one() {
    let f = fixture();
    let put = |auth, name: &str, body: &str| f.call("PUT", &format!("/api/views/{name}"), Some(auth), body);
    let r = put(
        ACT,
        "Failed%20orders",
        r#"{"query": "?status=FAILED", "reason": "for the team"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["view"]["query"], "status=FAILED");
    assert_eq!(
        put(ACT, "x", r#"{"query": "a=1"}"#).status,
        400,
        "a reason is needed"
    );
    assert_eq!(put(READ, "x", r#"{"query": "a=1", "reason": "r"}"#).status, 403);
    assert_eq!(put(ACT, "x", r#"{"query": 5, "reason": "r"}"#).status, 400);
    assert_eq!(put(ACT, "%20x", r#"{"query": "a", "reason": "r"}"#).status, 400);
    let r = f.call("GET", "/api/views", None, "");
    assert_eq!(
        r.body["items"],
        json!([{"name": "Failed orders", "query": "status=FAILED", "owner": "otto", "updated_at": NOW}])
    );
    put(ADMIN, "mine", r#"{"query": "a=1", "reason": "r"}"#);
    // otto cannot delete ada's view; ada can delete otto's.
    let del = |auth, name: &str| {
        f.call(
            "DELETE",
            &format!("/api/views/{name}"),
            Some(auth),
            r#"{"reason": "tidy"}"#,
        )
    };
    assert_eq!(del(ACT, "mine").status, 403);
    assert_eq!(del(ADMIN, "Failed%20orders").status, 200);
    assert_eq!(del(ADMIN, "Failed%20orders").status, 404);
    let names: Vec<Value> = f.call("GET", "/api/views", None, "").body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|v| v["name"].clone())
        .collect();
    assert_eq!(names, [json!("mine")]);
    let actions: Vec<String> = f
        .entries()
        .iter()
        .map(|e| {
            format!(
                "{} {} {}",
                e["action"].as_str().unwrap_or(""),
                e["target"].as_str().unwrap_or(""),
                e["outcome"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert!(
        actions.contains(&"views.delete mine FORBIDDEN".to_owned()),
        "{actions:?}"
    );
    assert!(
        actions.contains(&"views.put Failed orders ok".to_owned()),
        "{actions:?}"
    );
}

#[test]
fn the_single_token_is_one_admin_named_token() {
    let store = MemoryStore::new();
    let mut exe = Execution::new("e", "d");
    exe.status = Status::Done;
    store.save(&mut exe).expect("save");
    let api = MonitorApi::new(Map::new(), Some("s3cret"));
    let request = ApiRequest::from_target("POST", "/api/executions/e/purge", Some("Bearer s3cret"))
        .with_body(br#"{"reason": "old"}"#);
    assert_eq!(api.handle(&store, &request, NOW).status, 200);
    let audit = api.handle(&store, &ApiRequest::from_target("GET", "/api/audit", None), NOW);
    assert_eq!(audit.body["items"][0]["actor"], "token");
    assert_eq!(audit.body["items"][0]["role"], "admin");
    // Read-only: 403, nothing recorded.
    let ro = MonitorApi::new(Map::new(), None);
    let r = ro.handle(&store, &request, NOW);
    assert_eq!(r.body["error"]["code"], "READ_ONLY");
    let audit = ro.handle(&store, &ApiRequest::from_target("GET", "/api/audit", None), NOW);
    assert_eq!(audit.body["items"], json!([]));
}
