//! The API's search: `?where=` on `/api/executions` and `/api/counts` (relative times with
//! the monitor's clock, `scan` naming the undeclared paths, a bad query a 400 naming the
//! character), the attributes endpoints (declaring is a write behind the token), and the
//! suggestions of paths and values.

use execstore::{executions::Status, Execution, ExecutionStore, MemoryStore};
use execstore_monitor_api::{ApiRequest, MonitorApi};
use serde_json::{json, Map, Value};

const NOW: f64 = 1_767_225_600.0;

/// `c00`..`c11`: customer `c-(i%4)`, total `i*10`, RUNNING or DONE, updated i hours ago.
fn store() -> MemoryStore {
    let store = MemoryStore::new();
    for i in 0..12 {
        let mut exe = Execution::new(format!("c{i:02}"), "orders");
        exe.status = if i % 2 == 0 { Status::Running } else { Status::Done };
        exe.updated_at = Some(NOW - 3600.0 * i as f64);
        exe.created_at = Some(NOW - 3600.0 * i as f64);
        let ctx = json!({"customer": format!("c-{}", i % 4), "total": i * 10, "address": {"city": "Lyon"}});
        exe.context = ctx.as_object().unwrap().clone();
        store.save(&mut exe).unwrap();
    }
    store
}

fn api() -> MonitorApi {
    MonitorApi::new(Map::new(), Some("tok"))
}

fn call(store: &MemoryStore, method: &str, target: &str, auth: Option<&str>, body: &[u8]) -> (u16, Value) {
    let mut request = ApiRequest::from_target(method, target, auth);
    request.body = body;
    let r = api().handle(store, &request, NOW);
    (r.status, r.body)
}

fn get(store: &MemoryStore, target: &str) -> (u16, Value) {
    call(store, "GET", target, None, b"")
}

fn ids(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn where_filters_the_listing_and_the_counts() {
    let store = store();
    let (status, body) = get(
        &store,
        &format!("/api/executions?where={}", enc("context.customer = \"c-1\"")),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body), ["c01", "c05", "c09"]);
    assert_eq!(body["scan"], json!(["context.customer"]));
    // Combined with the other parameters, and relative times with the monitor's clock.
    let (_, body) = get(
        &store,
        &format!(
            "/api/executions?status=DONE&where={}",
            enc("context.total >= 30 and updated > -6h")
        ),
    );
    assert_eq!(ids(&body), ["c03", "c05"]);
    let (_, body) = get(
        &store,
        &format!("/api/counts?where={}", enc("context.customer in (c-0, c-1)")),
    );
    assert_eq!(body["total"], json!(6), "{body}");
    assert_eq!(body["counts"]["RUNNING"], json!(3));
    assert_eq!(body["counts"]["DONE"], json!(3));
    let (_, all) = get(&store, "/api/counts");
    assert_eq!(all["total"], json!(12));
    // The id search (`q`) keeps the filter and its scan note.
    let (_, body) = get(
        &store,
        &format!("/api/executions?q=c0&where={}", enc("context.total < 30")),
    );
    assert_eq!(ids(&body), ["c00", "c01", "c02"]);
    assert_eq!(body["scan"], json!(["context.total"]));
}

#[test]
fn a_bad_query_is_a_400_naming_the_character() {
    let store = store();
    for (text, says) in [
        ("context.customer =", "at character 19: expected a value"),
        ("nope = 1", "unknown path nope"),
        ("status = sleeping", "status \"sleeping\" is none of"),
        ("updated > yesterday", "is not a time"),
    ] {
        for endpoint in ["executions", "counts"] {
            let (status, body) = get(&store, &format!("/api/{endpoint}?where={}", enc(text)));
            assert_eq!(status, 400, "{text}: {body}");
            assert_eq!(body["error"]["code"], json!("INVALID_INPUT"));
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.contains(says), "{text}: {message}");
        }
    }
}

#[test]
fn attributes_are_declared_behind_the_token_and_stop_the_scan() {
    let store = store();
    let (_, body) = get(&store, "/api/attributes");
    assert_eq!(body, json!({"attributes": []}));
    let declare = br#"{"path": "context.customer", "reason": "incident 42"}"#;
    let (status, _) = call(&store, "POST", "/api/attributes", None, declare);
    assert_eq!(status, 401, "a write needs the token");
    let (status, _) = call(&store, "POST", "/api/attributes", Some("Bearer nope"), declare);
    assert_eq!(status, 401);
    assert!(
        store.attributes().unwrap().is_empty(),
        "refused writes change nothing"
    );
    let (status, body) = call(&store, "POST", "/api/attributes", Some("Bearer tok"), declare);
    assert_eq!(
        (status, &body["path"]),
        (200, &json!("context.customer")),
        "{body}"
    );
    let (_, body) = get(&store, "/api/attributes");
    assert_eq!(body, json!({"attributes": [{"path": "context.customer"}]}));
    let (_, body) = get(
        &store,
        &format!("/api/executions?where={}", enc("context.customer = c-1")),
    );
    assert_eq!(body["scan"], json!([]));
    for bad in [
        &b"{"[..],
        b"[]",
        br#"{"path": 5}"#,
        br#"{"path": "status"}"#,
        br#"{}"#,
    ] {
        let (status, body) = call(&store, "POST", "/api/attributes", Some("Bearer tok"), bad);
        assert_eq!(status, 400, "{}: {body}", String::from_utf8_lossy(bad));
    }
    let (status, body) = call(
        &store,
        "POST",
        "/api/attributes/drop",
        Some("Bearer tok"),
        declare,
    );
    assert_eq!((status, &body["dropped"]), (200, &json!(true)), "{body}");
    let (_, body) = call(
        &store,
        "POST",
        "/api/attributes/drop",
        Some("Bearer tok"),
        declare,
    );
    assert_eq!(body["dropped"], json!(false));
}

#[test]
fn suggestions_name_paths_and_frequent_values() {
    let store = store();
    store.declare_attribute("context.total").unwrap();
    let (status, body) = get(&store, "/api/suggest?path=context.");
    assert_eq!(status, 200, "{body}");
    let paths: Vec<&str> = body["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    for p in [
        "context.customer",
        "context.total",
        "context.address",
        "context.address.city",
    ] {
        assert!(paths.contains(&p), "{p} in {paths:?}");
    }
    let declared = |name: &str| {
        body["paths"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["path"] == json!(name))
            .unwrap()["declared"]
            .clone()
    };
    assert_eq!(declared("context.total"), json!(true));
    assert_eq!(declared("context.customer"), json!(false));
    let (_, body) = get(&store, "/api/suggest?path=context.customer");
    let values: Vec<&str> = body["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["\"c-0\"", "\"c-1\"", "\"c-2\"", "\"c-3\""]);
    assert_eq!(body["values"][0]["count"], json!(3));
    let (_, body) = get(&store, "/api/suggest?path=st");
    let paths: Vec<&str> = body["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["state", "status"]);
    let (_, body) = get(&store, "/api/suggest?path=status");
    assert_eq!(body["values"].as_array().unwrap().len(), Status::ALL.len());
}
