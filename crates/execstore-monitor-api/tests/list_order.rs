//! `GET /api/executions`' order (most recently updated first unless `order=id` or
//! `order=created`) and
//! `GET /api/counts` following every filter of the list.

use execstore::{executions::Status, Execution, ExecutionStore, MemoryStore};
use execstore_monitor_api::{ApiRequest, MonitorApi};
use serde_json::{Map, Value};

/// 2026-01-01T00:00:00Z.
const T0: f64 = 1_767_225_600.0;

/// `x00`..`x11`: created at T0 + i minutes; updated at T0 + (i * 5 % 12) hours (so the
/// update order is not the id order); statuses cycle RUNNING, DONE, FAILED; definitions
/// `orders` (even) and `refunds` (odd); `x03` a child of `x02`.
fn store() -> MemoryStore {
    let store = MemoryStore::new();
    for i in 0..12usize {
        let definition = if i % 2 == 0 { "orders" } else { "refunds" };
        let mut exe = Execution::new(format!("x{i:02}"), definition);
        exe.created_at = Some(T0 + 60.0 * i as f64);
        exe.updated_at = Some(T0 + 3600.0 * ((i * 5) % 12) as f64);
        exe.status = [Status::Running, Status::Done, Status::Failed][i % 3];
        exe.active_path = Some(if i % 2 == 0 { "order.pay" } else { "refund.wait" }.into());
        if i == 3 {
            exe.parent_id = Some("x02".into());
        }
        store.save(&mut exe).unwrap();
    }
    store
}

fn get(store: &MemoryStore, target: &str) -> (u16, Value) {
    let api = MonitorApi::new(Map::new(), None);
    let r = api.handle(
        store,
        &ApiRequest::from_target("GET", target, None),
        T0 + 86_400.0,
    );
    (r.status, r.body)
}

fn ok(store: &MemoryStore, target: &str) -> Value {
    let (status, body) = get(store, target);
    assert_eq!(status, 200, "{target}: {body}");
    body
}

/// Every item of `filter` at page size `limit`, following `next_cursor`.
fn walk(store: &MemoryStore, filter: &str, limit: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut target = format!("/api/executions?limit={limit}&{filter}");
        if let Some(c) = &cursor {
            target.push_str(&format!("&cursor={c}"));
        }
        let body = ok(store, &target);
        out.extend(body["items"].as_array().unwrap().iter().cloned());
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return out,
        }
    }
}

fn ids(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

fn x(numbers: &[usize]) -> Vec<String> {
    numbers.iter().map(|i| format!("x{i:02}")).collect()
}

#[test]
fn the_list_is_most_recently_updated_first_unless_told() {
    let s = store();
    // Hours: x00 0, x01 5, x02 10, x03 3, x04 8, x05 1, x06 6, x07 11, x08 4, x09 9, x10 2, x11 7.
    let by_updated = x(&[7, 2, 9, 4, 11, 6, 1, 8, 3, 10, 5, 0]);
    let first = ok(&s, "/api/executions");
    assert_eq!(first["order"], "updated");
    assert_eq!(ids(first["items"].as_array().unwrap()), by_updated);
    for limit in [1, 2, 5, 12] {
        assert_eq!(ids(&walk(&s, "", limit)), by_updated, "pages of {limit}");
        assert_eq!(ids(&walk(&s, "order=updated", limit)), by_updated);
        assert_eq!(ids(&walk(&s, "order=id", limit)), x(&(0..12).collect::<Vec<_>>()));
    }
    // With filters the order holds.
    assert_eq!(ids(&walk(&s, "status=DONE", 2)), x(&[7, 4, 1, 10]));
    let window = format!("updated_after={}&definition=orders", T0 + 4.0 * 3600.0);
    assert_eq!(ids(&walk(&s, &window, 2)), x(&[2, 4, 6, 8]));
    // `q`, an id prefix, lists by id and says so.
    let q = ok(&s, "/api/executions?q=x0");
    assert_eq!(q["order"], "id");
    assert_eq!(
        ids(q["items"].as_array().unwrap()),
        x(&(0..10).collect::<Vec<_>>())
    );
    // A cursor of one order is refused by the other; an unknown order is refused.
    let page = ok(&s, "/api/executions?limit=3");
    let cursor = page["next_cursor"].as_str().unwrap();
    for target in [
        format!("/api/executions?order=id&cursor={cursor}"),
        "/api/executions?order=newest".to_owned(),
        "/api/executions?order=updated_at".to_owned(),
        format!(
            "/api/executions?cursor={}",
            ok(&s, "/api/executions?order=id&limit=3")["next_cursor"]
                .as_str()
                .unwrap()
        ),
    ] {
        let (status, body) = get(&s, &target);
        assert_eq!(status, 400, "{target}: {body}");
        assert_eq!(body["error"]["code"], "INVALID_INPUT", "{target}: {body}");
    }
}

/// `order=created` lists newest created first, at every page size and with filters, says so,
/// and its cursor is refused by the other orders (and theirs by it).
#[test]
fn the_list_is_newest_created_first_when_told() {
    let s = store();
    let by_created = x(&(0..12).rev().collect::<Vec<_>>());
    let first = ok(&s, "/api/executions?order=created");
    assert_eq!(first["order"], "created");
    assert_eq!(ids(first["items"].as_array().unwrap()), by_created);
    assert_eq!(first["items"][0]["created_at"], T0 + 660.0);
    for limit in [1, 2, 5, 12] {
        assert_eq!(
            ids(&walk(&s, "order=created", limit)),
            by_created,
            "pages of {limit}"
        );
    }
    assert_eq!(ids(&walk(&s, "order=created&status=DONE", 2)), x(&[10, 7, 4, 1]));
    let window = format!(
        "order=created&updated_after={}&definition=orders",
        T0 + 4.0 * 3600.0
    );
    assert_eq!(ids(&walk(&s, &window, 2)), x(&[8, 6, 4, 2]));
    let created = ok(&s, "/api/executions?order=created&limit=3")["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let updated = ok(&s, "/api/executions?limit=3")["next_cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    for target in [
        format!("/api/executions?order=id&cursor={created}"),
        format!("/api/executions?order=updated&cursor={created}"),
        format!("/api/executions?order=created&cursor={updated}"),
    ] {
        let (status, body) = get(&s, &target);
        assert_eq!(status, 400, "{target}: {body}");
        assert_eq!(body["error"]["code"], "INVALID_INPUT", "{target}: {body}");
    }
}

/// The counts of `filter` are the statuses of exactly the rows the list walks with it.
#[test]
fn counts_follow_every_filter_of_the_list() {
    let s = store();
    let filters = [
        String::new(),
        "definition=orders".to_owned(),
        "roots_only=true".to_owned(),
        format!("created_after={}&created_before={}", T0 + 120.0, T0 + 420.0),
        format!("updated_after={}", T0 + 6.0 * 3600.0),
        "search=refund".to_owned(),
        "search=x1".to_owned(),
        "q=x1".to_owned(),
        "q=x0&definition=refunds".to_owned(),
        format!(
            "definition=refunds&roots_only=true&updated_before={}",
            T0 + 9.0 * 3600.0
        ),
    ];
    for filter in &filters {
        let listed = walk(&s, filter, 5);
        let counts = ok(&s, &format!("/api/counts?{filter}"));
        let mut total = 0;
        for status in Status::ALL {
            let n = listed.iter().filter(|i| i["status"] == status.as_str()).count();
            assert_eq!(counts["counts"][status.as_str()], n, "{filter}: {status}");
            total += n;
        }
        assert_eq!(counts["total"], total, "{filter}");
        // The list's status filter, page size, cursor and order leave the counts alone.
        let noisy = ok(&s, &format!("/api/counts?{filter}&status=DONE&limit=1&order=id"));
        assert_eq!(noisy["counts"], counts["counts"], "{filter}");
    }
    // A window of 5 minutes holds 5 rows: the counts say 5, not the store's 12.
    let window = format!("created_after={}&created_before={}", T0 + 120.0, T0 + 420.0);
    assert_eq!(ok(&s, &format!("/api/counts?{window}"))["total"], 5);
    assert_eq!(ok(&s, "/api/counts")["total"], 12);
    // Bad filters are a 400, as on the list.
    for bad in [
        "created_after=yesterday",
        "updated_after=-5",
        "roots_only=maybe",
        "colour=red",
    ] {
        let (status, body) = get(&s, &format!("/api/counts?{bad}"));
        assert_eq!(status, 400, "{bad}: {body}");
    }
}
