//! The monitor API's handler (`MonitorApi::handle_stores`) on any request: method, path,
//! query, `Authorization` and body, against a memory store and a workspace log holding some
//! of everything, through a writable API (with a token) and a read-only one.

use std::sync::Arc;
use std::time::Duration;

use arbitrary::{Result, Unstructured};
use execstore::workspace::{
    Entry, EvaluationError, ManualClock, MemoryWorkspaceStorage, NewRun, Run, StoredRule, StoredRuleStatus,
    Timestamp, WorkspaceRef, WorkspaceStorage,
};
use execstore::{
    executions::{encode_cursor, DueTimer, Event, Status},
    Effects, Execution, ExecutionStore, MemoryStore,
};
use execstore_monitor_api::{cursors, ApiRequest, MonitorApi, Stores};
use serde_json::{json, Map, Value};

use crate::pools::{self, pick_str};

const TOKEN: &str = "s3cret";
const NOW: f64 = 1_700_000_300.0;

/// Any request: a status from 200 to 599 with a JSON body (on an error, `{"error": {"code",
/// "message"}}` with a 4xx or 5xx), the same answer for `HEAD` as for `GET`, and without the
/// token (or on the read-only API) nothing in either store changes.
pub fn monitor(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(request) = Request::arbitrary(&mut u) else {
        return;
    };
    let executions = executions();
    let workspaces = workspaces();
    let stores = Stores {
        executions: Some(&executions),
        workspaces: Some(&workspaces),
    };
    let before = snapshot(&executions, &workspaces);
    let api = MonitorApi::new(Map::new(), request.writable.then_some(TOKEN));
    let response = api.handle_stores(stores, &request.as_api(), NOW);
    let status = response.status;
    assert!((200..600).contains(&status), "status {status} for {request:?}");
    let text = serde_json::to_string(&response.body).expect("a body serializes");
    assert_eq!(
        serde_json::from_str::<Value>(&text).ok().as_ref(),
        Some(&response.body),
        "the body is JSON that reads back equal"
    );
    if status == 200 {
        assert!(response.body.is_object(), "a 200's body is an object: {text}");
    } else {
        assert!(status >= 400, "status {status} for {request:?}");
        let error = &response.body["error"];
        assert!(
            error["code"].as_str().is_some_and(|c| !c.is_empty()) && error["message"].is_string(),
            "an error body names its code and message: {text}"
        );
        assert_eq!(response.body.as_object().map(Map::len), Some(1), "{text}");
    }
    let authorized = request.writable && request.authorization.as_deref() == Some(&format!("Bearer {TOKEN}"));
    if !authorized {
        assert_eq!(
            snapshot(&executions, &workspaces),
            before,
            "a request without the token changed the store: {request:?} answered {status} {text}"
        );
    }
    if request.method == "GET" && !authorized && status != 405 {
        let head = api.handle_stores(
            stores,
            &ApiRequest {
                method: "HEAD",
                ..request.as_api()
            },
            NOW,
        );
        assert_eq!(head, response, "HEAD answers as GET");
    }
}

/// What an input asks and what it is answered, `METHOD /path?query -> status` (`None`: the
/// bytes spell no request): for the seed generator, which keeps inputs of distinct answers.
#[doc(hidden)]
pub fn describe(data: &[u8]) -> Option<String> {
    let mut u = Unstructured::new(data);
    let request = Request::arbitrary(&mut u).ok()?;
    let executions = executions();
    let workspaces = workspaces();
    let stores = Stores {
        executions: Some(&executions),
        workspaces: Some(&workspaces),
    };
    let api = MonitorApi::new(Map::new(), request.writable.then_some(TOKEN));
    let response = api.handle_stores(stores, &request.as_api(), NOW);
    let code = response.body["error"]["code"].as_str().unwrap_or("").to_owned();
    Some(format!(
        "{} {} -> {} {code}",
        request.method, request.path, response.status
    ))
}

#[derive(Debug)]
struct Request {
    writable: bool,
    method: String,
    path: String,
    query: String,
    authorization: Option<String>,
    body: Vec<u8>,
}

const METHODS: &[&str] = &["GET", "GET", "POST", "POST", "DELETE", "HEAD", "PUT"];

const SEGMENTS: &[&str] = &[
    "executions",
    "info",
    "changes",
    "counts",
    "outbox",
    "spawns",
    "timers",
    "control",
    "definitions",
    "graph",
    "trace",
    "pending",
    "ack",
    "suspend",
    "resume",
    "terminate",
    "purge",
    "workspaces",
    "due-runs",
    "log",
    "runs",
    "dead-letters",
    "leases",
    "cursors",
    "rules",
    "history",
    "envelopes",
    "acme",
    "prod",
    "alert-1",
    "rule-a",
    "orders",
    "1",
    "2",
    "0",
    "-1",
    "order-1",
    "a%20b",
    "%C3%A9-commande",
    "%FF",
    "",
    "..",
];

const PARAMS: &[&str] = &[
    "limit",
    "cursor",
    "status",
    "definition",
    "roots_only",
    "q",
    "search",
    "due_before",
    "created_after",
    "created_before",
    "updated_after",
    "updated_before",
    "finished_after",
    "finished_before",
    "after",
    "before",
    "type",
    "last",
    "rule",
    "scope",
    "ordered",
    "blocking",
    "disabled",
    "now",
    "traces",
    "expected_version",
    "execution_id",
    "path",
    "fire_at",
];

const VALUES: &[&str] = &[
    "1",
    "2",
    "50",
    "0",
    "-1",
    "10001",
    "now",
    "true",
    "false",
    "RUNNING",
    "running,done",
    "pending",
    "1700000000",
    "2026-01-01T00:00:00Z",
    "1e309",
    "NaN",
    "order",
    "order.checkout",
    "root.work.timeout",
    "rule-a",
    "acme",
    "%FF",
    "a+b",
];

impl Request {
    fn arbitrary(u: &mut Unstructured<'_>) -> Result<Request> {
        let writable = u.arbitrary()?;
        let method = pick_str(u, METHODS)?;
        let path = if u.ratio(1, 16)? {
            u.arbitrary()?
        } else {
            let n = u.int_in_range(0..=5)?;
            let mut path = String::from("/api");
            for _ in 0..n {
                path.push('/');
                path.push_str(&pick_str(u, SEGMENTS)?);
            }
            path
        };
        let query = if u.ratio(1, 16)? {
            u.arbitrary()?
        } else {
            let n = u.int_in_range(0..=3)?;
            let mut pairs = Vec::new();
            for _ in 0..n {
                let name = pick_str(u, PARAMS)?;
                let value = if name == "cursor" {
                    cursor(u)?
                } else {
                    pick_str(u, VALUES)?
                };
                pairs.push(format!("{name}={}", encode_component(&value)));
            }
            pairs.join("&")
        };
        let authorization = match u.int_in_range(0..=3)? {
            0 => None,
            1 => Some(format!("Bearer {TOKEN}")),
            2 => Some("Bearer nope".to_owned()),
            _ => Some(u.arbitrary()?),
        };
        let body = match u.int_in_range(0..=3)? {
            0 => Vec::new(),
            1 => {
                let targets: Vec<Value> = (0..u.int_in_range(0..=3)?)
                    .map(|_| -> Result<Value> {
                        let id = pick_str(u, pools::IDS)?;
                        Ok(match u.int_in_range(0..=2)? {
                            0 => json!({ "id": id }),
                            1 => json!({ "id": id, "expected_version": u.int_in_range(0..=3)? }),
                            _ => json!({ "id": id, "expected_version": u.arbitrary::<i64>()? }),
                        })
                    })
                    .collect::<Result<_>>()?;
                json!({ "targets": targets }).to_string().into_bytes()
            }
            _ => u.arbitrary()?,
        };
        Ok(Request {
            writable,
            method,
            path,
            query,
            authorization,
            body,
        })
    }

    fn as_api(&self) -> ApiRequest<'_> {
        ApiRequest {
            method: &self.method,
            path: &self.path,
            query: &self.query,
            authorization: self.authorization.as_deref(),
            body: &self.body,
        }
    }
}

/// A cursor parameter: one of each listing's own making, or anything.
fn cursor(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=3)? {
        0 => encode_cursor(&pick_str(u, pools::IDS)?),
        1 => cursors::encode_runs(u.arbitrary()?),
        2 => cursors::encode_timer(&DueTimer {
            execution_id: pick_str(u, pools::IDS)?,
            path: pick_str(u, pools::PATHS)?,
            fire_at: pools::pick_time(u)?,
        }),
        _ => u.arbitrary()?,
    })
}

/// `value` percent-encoded for a query string (every byte outside unreserved characters).
pub(crate) fn encode_component(value: &str) -> String {
    value
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Executions in several statuses, a parent with a child, outbox entries, spawns, timers
/// and trace steps.
pub(crate) fn executions() -> MemoryStore {
    let store = MemoryStore::new();
    let statuses = [
        Status::Running,
        Status::Done,
        Status::Suspended,
        Status::Failed,
        Status::Pending,
    ];
    for (i, id) in pools::IDS.iter().enumerate() {
        let mut exe = Execution::new(*id, pools::DEFINITIONS[i % pools::DEFINITIONS.len()]);
        exe.status = statuses[i % statuses.len()];
        exe.active_path = Some(pools::PATHS[i % pools::PATHS.len()].to_owned());
        exe.created_at = Some(1_700_000_000.0 + i as f64);
        exe.updated_at = Some(1_700_000_100.0 + i as f64);
        if exe.status == Status::Done {
            exe.finished_at = Some(1_700_000_200.0);
        }
        if id.ends_with(":pay") {
            exe.parent_id = Some(pools::IDS[0].to_owned());
        }
        let mut trace = Map::new();
        trace.insert("event_kind".into(), json!("Checkout"));
        trace.insert("from_path".into(), json!("order.cart"));
        trace.insert("to_path".into(), json!("order.checkout"));
        let effects = Effects::new()
            .emit(
                Some(pools::IDS[(i + 1) % pools::IDS.len()]),
                Event::new(format!("out-{i}"), "Charge"),
            )
            .processed(format!("in-{i}"))
            .schedule(pools::PATHS[0], pools::TIMES[i % 4])
            .spawn(format!("{id}:c"), "order.pay", Map::new())
            .trace(trace);
        store.commit(&mut exe, &effects).expect("the fixture commits");
    }
    store
}

/// One workspace with a log, a run, a dead letter, a stored rule, a lease and a cursor.
pub(crate) fn workspaces() -> MemoryWorkspaceStorage {
    let start = Timestamp::from_secs_f64(1_700_000_000.0).expect("a time");
    let storage = MemoryWorkspaceStorage::new(Arc::new(ManualClock::new(start)));
    let ws = WorkspaceRef::new("acme", "prod");
    let mut tx = storage.begin(&ws).expect("begin");
    let entries: Vec<Entry> = (1..=3)
        .map(|i| {
            let event = json!({"type": "oncall:alert", "service": "auth", "severity": i});
            let event = event.as_object().cloned().unwrap_or_default();
            Entry::new(
                format!("alert-{i}"),
                json!({"kind": "source", "name": "monitor"}),
                event,
            )
        })
        .collect();
    tx.append(&entries).expect("append");
    let run = Run::pending(NewRun {
        id: "run-1".into(),
        rule: "rule-a".into(),
        scope_key: "auth".into(),
        scope: Map::new(),
        fired_seq: 1,
        matched: vec![1],
        correlation_id: "alert-1".into(),
        depth: 0,
        now: start,
    })
    .expect("a run");
    tx.save_runs(&[run]).expect("runs");
    tx.dead_letter(&[EvaluationError::new("rule-a", 2, "boom")])
        .expect("dead letter");
    let rule = json!({"name": "rule-a", "on": ["oncall:alert"]});
    tx.save_stored_rule(&StoredRule {
        rule: rule.as_object().cloned().unwrap_or_default(),
        version: 1,
        status: StoredRuleStatus::Active,
        provenance: Map::new(),
    })
    .expect("stored rule");
    tx.commit().expect("commit");
    storage
        .acquire_lease(&ws, "run:run-1", "worker-1", Duration::from_secs(60))
        .expect("lease");
    storage.save_cursor(&ws, "relay", 2).expect("cursor");
    storage
}

/// Everything both stores hold, as text.
fn snapshot(executions: &MemoryStore, workspaces: &MemoryWorkspaceStorage) -> String {
    let mut out = String::new();
    let ids = executions.ids_with_prefix("").unwrap_or_default();
    let mut all = Vec::new();
    for page in execstore::executions::paging::execution_pages(
        executions,
        execstore::executions::ListQuery::new().limit(100),
    ) {
        all.extend(page.expect("the fixture lists").items.into_iter().map(|s| s.id));
    }
    for id in ids.iter().chain(&all) {
        out += &format!("{:?}\n{:?}\n", executions.load(id), executions.read_trace(id));
    }
    out += &format!("{:?}\n", executions.pending_outbox(None, 1000));
    out += &format!("{:?}\n", executions.pending_spawns(None, 1000));
    out += &format!(
        "{:?}\n",
        executions.due_timers(execstore::kit::validate::ALL_TIMERS, None, 1000)
    );
    for ws in workspaces.workspaces().unwrap_or_default() {
        out += &format!(
            "{ws:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}\n",
            workspaces.workspace_info(&ws),
            workspaces.read(&ws, &execstore::workspace::LogQuery::new()),
            workspaces.runs(&ws, &execstore::workspace::RunQuery::default()),
            workspaces.dead_letters(&ws, None),
            workspaces.leases(&ws),
            workspaces.cursors(&ws),
            workspaces.stored_rules(&ws),
            workspaces.progress(&ws),
        );
    }
    out
}
