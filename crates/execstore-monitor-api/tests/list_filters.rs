//! `GET /api/executions` with time windows and a search: the parameters reach the store's
//! filters (epoch seconds, RFC 3339 and `now` alike), pages follow the keyset, and bad values
//! are a 400 with a JSON error, as for the other parameters.

use execstore::{executions::Status, Execution, ExecutionStore, MemoryStore};
use execstore_monitor_api::{ApiRequest, MonitorApi};
use serde_json::{Map, Value};

/// 2026-01-01T00:00:00Z.
const T0: f64 = 1_767_225_600.0;

/// `x00`..`x09`: created at T0 + i minutes, updated an hour later, the even ones DONE (finished
/// two hours later) in `order.checkout.pay`, the odd ones RUNNING in `order.ship`.
fn store() -> MemoryStore {
    let store = MemoryStore::new();
    for i in 0..10 {
        let mut exe = Execution::new(format!("x{i:02}"), "orders");
        let minute = 60.0 * i as f64;
        exe.created_at = Some(T0 + minute);
        exe.updated_at = Some(T0 + 3600.0 + minute);
        if i % 2 == 0 {
            exe.status = Status::Done;
            exe.finished_at = Some(T0 + 7200.0 + minute);
            exe.active_path = Some("order.checkout.pay".into());
        } else {
            exe.status = Status::Running;
            exe.active_path = Some("order.ship".into());
        }
        store.save(&mut exe).unwrap();
    }
    store
}

fn get(store: &MemoryStore, target: &str) -> (u16, Value) {
    let api = MonitorApi::new(Map::new(), None);
    let r = api.handle(store, &ApiRequest::from_target("GET", target, None), T0 + 7500.0);
    (r.status, r.body)
}

fn ids(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

fn x(numbers: &[usize]) -> Vec<String> {
    numbers.iter().map(|i| format!("x{i:02}")).collect()
}

/// Every page of `filter` at page size `limit`, following `next_cursor`.
fn all_pages(store: &MemoryStore, filter: &str, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        // By id: these checks are of the filters (the order has its own, list_order.rs).
        let mut target = format!("/api/executions?order=id&limit={limit}&{filter}");
        if let Some(c) = &cursor {
            target.push_str(&format!("&cursor={c}"));
        }
        let (status, body) = get(store, &target);
        assert_eq!(status, 200, "{target}: {body}");
        out.extend(ids(&body));
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return out,
        }
    }
}

#[test]
fn windows_and_search_filter_the_list() {
    let s = store();
    let w = |a: f64, b: f64| format!("created_after={}&created_before={}", T0 + a, T0 + b);
    assert_eq!(all_pages(&s, &w(120.0, 300.0), 50), x(&[2, 3, 4]));
    // RFC 3339 (percent-encoded `+` offset) and epoch seconds agree.
    let rfc = "created_after=2026-01-01T00:02:00Z&created_before=2026-01-01T01:05:00%2B01:00";
    assert_eq!(all_pages(&s, rfc, 50), x(&[2, 3, 4]));
    assert_eq!(
        all_pages(&s, &format!("updated_after={}", T0 + 4080.0), 50),
        x(&[8, 9])
    );
    assert_eq!(
        all_pages(&s, &format!("updated_before={}", T0 + 3660.0), 50),
        x(&[0])
    );
    // `now` is the request's clock (T0 + 7500 s): finished before it are x00..x04.
    assert_eq!(all_pages(&s, "finished_before=now", 50), x(&[0, 2, 4]));
    assert_eq!(
        all_pages(&s, &format!("finished_after={}&status=DONE", T0 + 7300.0), 50),
        x(&[2, 4, 6, 8])
    );
    // The search, alone, with a window, with the older id-prefix `q`, and paged.
    assert_eq!(all_pages(&s, "search=order.checkout", 50), x(&[0, 2, 4, 6, 8]));
    assert_eq!(all_pages(&s, "search=order.check", 50), x(&[]));
    assert_eq!(all_pages(&s, "search=x0", 50), x(&(0..10).collect::<Vec<_>>()));
    let ship_late = format!("search=order.ship&updated_after={}", T0 + 3780.0);
    assert_eq!(all_pages(&s, &ship_late, 1), x(&[3, 5, 7, 9]));
    assert_eq!(all_pages(&s, &ship_late, 3), x(&[3, 5, 7, 9]));
    assert_eq!(all_pages(&s, "q=x0&search=order.ship", 2), x(&[1, 3, 5, 7, 9]));
    // `q` naming one id exactly still honours the windows.
    assert_eq!(all_pages(&s, &format!("q=x03&{}", w(0.0, 60.0)), 50), x(&[]));
    assert_eq!(all_pages(&s, &format!("q=x03&{}", w(0.0, 600.0)), 50), x(&[3]));
    // An empty value counts as absent, as for every parameter.
    assert_eq!(all_pages(&s, "search=&updated_after=", 50).len(), 10);
}

#[test]
fn bad_windows_and_searches_are_400() {
    let s = store();
    let long = "s".repeat(execstore::executions::MAX_SEARCH_BYTES + 1);
    for query in [
        "created_after=-1".to_owned(),
        "updated_before=NaN".to_owned(),
        "finished_after=inf".to_owned(),
        "updated_after=yesterday".to_owned(),
        "created_after=2026-13-01T00:00:00Z".to_owned(),
        "created_after=2026-01-01T00:00:00".to_owned(),
        "created_after=200&created_before=100".to_owned(),
        "updated_after=1&updated_after=2".to_owned(),
        format!("search={long}"),
        "search=a%00b".to_owned(),
    ] {
        let (status, body) = get(&s, &format!("/api/executions?{query}"));
        assert_eq!(status, 400, "{query}: {body}");
        let code = body["error"]["code"].as_str().unwrap_or_default();
        assert!(!code.is_empty(), "{query}: {body}");
        assert!(body["error"]["message"].as_str().is_some(), "{query}: {body}");
    }
}
