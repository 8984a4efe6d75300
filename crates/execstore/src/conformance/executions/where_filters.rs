//! The behaviour suite's checks of the `where` filter and search attributes (feature
//! `conformance`), run by [`conformance_tests!`](crate::conformance_tests) on every backend:
//! every backend finds what [`crate::executions::search::execution_matches`] finds, with the
//! paths declared or not, and says which paths it scanned.
//!
//! Attributes belong to a whole store, which a backend's harness may share between checks:
//! each check declares paths no other check uses, and drops them at its end.

use crate::conformance::executions::{all_pages, scope};
use crate::executions::search::execution_matches;
use crate::executions::{parse_where, Execution, ExecutionStore, ListOrder, ListQuery, Status};
use crate::kit::filter::{Cmp, Expr, Filter, Op, Path, Term, Value};
use crate::StoreError;

/// The base time of these checks (far from the other checks' windows).
const T: f64 = 8.5e9;

/// Twenty executions with contexts of every kind at `context.<k>.*`.
fn populate(store: &dyn ExecutionStore, ns: &str, k: &str) -> Vec<Execution> {
    (0..20usize)
        .map(|i| {
            let mut exe = Execution::new(format!("{ns}e{i:02}"), format!("{ns}{}", ["A", "B"][i % 2]));
            exe.status = [Status::Running, Status::Done, Status::Failed, Status::Suspended][i % 4];
            exe.active_path = Some(["order.pay", "order.pay.card", "order.payx", "ship"][i % 4].to_owned());
            exe.created_at = Some(T + i as f64);
            exe.updated_at = Some(T + 100.0 + i as f64);
            exe.finished_at = (i % 4 == 1).then_some(T + 200.0 + i as f64);
            if i == 7 {
                exe.parent_id = Some(format!("{ns}e06"));
            }
            let customer = match i % 5 {
                0 => serde_json::json!(format!("c-{}", i % 3)),
                1 => serde_json::json!(format!("c-1{i}")),
                2 => serde_json::json!(i), // a number where others hold text
                3 => serde_json::Value::Null,
                _ => serde_json::json!(true),
            };
            let mut ctx = serde_json::json!({
                "customer": customer,
                "total": (i as f64) * 10.5,
                "odd key": {"x.y": format!("v{}", i % 2)},
                "tags": ["a", "b"],
            });
            if i % 6 == 5 {
                ctx.as_object_mut().map(|o| o.remove("total"));
            }
            let mut wrapper = serde_json::Map::new();
            wrapper.insert(k.to_owned(), ctx);
            exe.context = wrapper;
            store.save(&mut exe).expect("save");
            exe
        })
        .collect()
}

/// The queries of the checks over `context.<k>`.
fn queries(k: &str) -> Vec<String> {
    [
        "context.K.customer = \"c-1\"",
        "context.K.customer = c-1",
        "context.K.customer != c-1",
        "context.K.customer ^= \"c-1\"",
        "context.K.customer = 2",
        "context.K.customer = 2.0",
        "context.K.customer = true",
        "context.K.customer = 1",
        "context.K.customer = null",
        "context.K.customer exists",
        "context.K.customer not exists",
        "context.K.customer in (c-0, c-2, 12, false)",
        "context.K.customer > c-1",
        "context.K.customer <= 7",
        "context.K.total >= 50",
        "context.K.total < 52.5",
        "context.K.total > 20 and context.K.total <= 100.5",
        "context.K.total not exists",
        "context.K.total = 0",
        "context.K.\"odd key\".\"x.y\" = v1",
        "context.K.tags exists",
        "context.K.tags = a",
        "context.K.nothing exists",
        "context.K.customer exists and status in (running, done)",
        "context.K.total > 30 and (status = failed or state = order.pay)",
        "state = order.pay",
        "state != order.pay",
        "state ^= order.pay",
        "state in (ship, order.payx)",
        "definition = NSB and context.K.total >= 0",
        "parent exists or context.K.customer = c-0",
        "finished exists and context.K.total > 0",
        "created >= T5 and created < T9",
        "updated > T110 or context.K.customer = true",
        "finished not exists and context.K.customer ^= c",
        "id ^= NSe1 and context.K.total < 1000",
        "id > NSe15",
        "context.K.total >= 0 or context.K.total not exists",
    ]
    .iter()
    .map(|q| q.replace('K', k))
    .collect()
}

/// The ids (without `ns`) of every page of `query` (scoped to `ns`), at two page sizes.
fn listed(store: &dyn ExecutionStore, query: &ListQuery, ns: &str) -> Vec<String> {
    let full = all_pages(store, query.clone().limit(1000));
    let paged = all_pages(store, query.clone().limit(3));
    assert_eq!(paged, full, "{query:?} paged by 3: gaps or repeats");
    full.iter().map(|s| s.id[ns.len()..].to_owned()).collect()
}

fn scoped(text: &str, ns: &str) -> Filter {
    let text = text
        .replace("NS", ns)
        .replace("T5", &(T + 5.0).to_string())
        .replace("T9", &(T + 9.0).to_string())
        .replace("T110", &(T + 110.0).to_string());
    let f = parse_where(&text, 0.0).unwrap_or_else(|e| panic!("{text}: {e}"));
    parse_where(&format!("id ^= \"{ns}\""), 0.0)
        .expect("scope")
        .and(f)
}

/// Every backend lists what the reference finds, for every query, before and after the
/// paths are declared, alone and with the listing's other filters; the page names the
/// context paths it scanned (the undeclared ones), and the counts follow the filter.
pub fn where_filter_matches_reference(store: &dyn ExecutionStore) {
    let ns = scope("where");
    let k = format!("w{}", ns.len() + ns.bytes().map(usize::from).sum::<usize>());
    let written = populate(store, &ns, &k);
    let supports = match store.declare_attribute(&format!("context.{k}.probe")) {
        Ok(_) => {
            store
                .drop_attribute(&format!("context.{k}.probe"))
                .expect("drop probe");
            true
        }
        Err(StoreError::Backend { .. }) => false,
        Err(e) => panic!("declare: {e}"),
    };
    for declared in [false, true] {
        if declared {
            if !supports {
                break;
            }
            for path in ["customer", "total", "\"odd key\".\"x.y\""] {
                let a = store
                    .declare_attribute(&format!("context.{k}.{path}"))
                    .expect("declare");
                assert_eq!(a.path, format!("context.{k}.{path}"));
            }
        }
        for text in queries(&k) {
            let filter = scoped(&text, &ns);
            let expected: Vec<String> = written
                .iter()
                .filter(|e| execution_matches(&filter, e))
                .map(|e| e.id[ns.len()..].to_owned())
                .collect();
            let query = ListQuery::new().filter(filter.clone());
            assert_eq!(
                listed(store, &query, &ns),
                expected,
                "{text} (declared: {declared})"
            );
            // In a time order too (a backend may probe the filter's matches first there).
            let mut by_time = listed(store, &query.clone().order(ListOrder::UpdatedDesc), &ns);
            by_time.sort();
            let mut sorted = expected.clone();
            sorted.sort();
            assert_eq!(
                by_time, sorted,
                "{text} in the updated order (declared: {declared})"
            );
            // With the other filters of the listing.
            let narrowed = query
                .clone()
                .status([Status::Running, Status::Failed])
                .definition(format!("{ns}A"));
            let expected_narrowed: Vec<String> = written
                .iter()
                .filter(|e| narrowed.matches_execution(e))
                .map(|e| e.id[ns.len()..].to_owned())
                .collect();
            assert_eq!(
                listed(store, &narrowed, &ns),
                expected_narrowed,
                "{text} narrowed"
            );
            let window = query
                .clone()
                .created_between(Some(T + 3.0), Some(T + 13.0))
                .search(format!("{ns}e1"));
            let expected_window: Vec<String> = written
                .iter()
                .filter(|e| window.matches_execution(e))
                .map(|e| e.id[ns.len()..].to_owned())
                .collect();
            assert_eq!(listed(store, &window, &ns), expected_window, "{text} in a window");
            // Which paths were scanned.
            let page = store.list_executions(&query.clone().limit(5)).expect("page");
            let mut scanned: Vec<String> = filter
                .paths()
                .into_iter()
                .filter(|p| p.root == "context")
                .map(|p| p.to_string())
                .collect();
            if declared {
                scanned.retain(|p| p.ends_with(".nothing") || p.ends_with(".tags"));
            }
            assert_eq!(page.scan, scanned, "{text}: scanned paths (declared: {declared})");
            // The counts follow the filter: the backend's own counts (one GROUP BY on the SQL
            // backends), not a count of the pages.
            let counts = store.count_by_status(&query).expect("counts");
            let total: u64 = counts.iter().map(|(_, n)| n).sum();
            assert_eq!(total as usize, expected.len(), "{text}: counts");
        }
    }
    // An update moves an execution in and out of a declared path's answer.
    let mut moved = written[0].clone();
    moved
        .context
        .insert(k.clone(), serde_json::json!({"customer": "c-moved", "total": -1}));
    store.save(&mut moved).expect("update");
    let find = |text: &str| listed(store, &ListQuery::new().filter(scoped(text, &ns)), &ns);
    assert_eq!(find(&format!("context.{k}.customer = c-moved")), ["e00"]);
    assert_eq!(find(&format!("context.{k}.total < 0")), ["e00"]);
    assert!(find(&format!("context.{k}.customer = c-0 and id = \"{ns}e00\"")).is_empty());
    if supports {
        for path in ["customer", "total", "\"odd key\".\"x.y\""] {
            assert!(store
                .drop_attribute(&format!("context.{k}.{path}"))
                .expect("drop"));
        }
    }
}

/// Declaring, listing and dropping attributes: canonical paths, idempotent declare, drop
/// says whether there was one, bad paths are `InvalidInput` and change nothing.
pub fn where_attributes_declare_list_drop(store: &dyn ExecutionStore) {
    let ns = scope("attr");
    let k = format!("a{}", ns.bytes().map(usize::from).sum::<usize>());
    let path = format!("context.{k}.customer_id");
    match store.declare_attribute(&path) {
        Ok(a) => assert_eq!(a.path, path),
        Err(StoreError::Backend { .. }) => {
            assert!(store.attributes().expect("attributes").is_empty());
            return;
        }
        Err(e) => panic!("declare: {e}"),
    }
    // Again, written differently: the same attribute.
    let again = store
        .declare_attribute(&format!("context.\"{k}\".\"customer_id\""))
        .expect("again");
    assert_eq!(again.path, path);
    let odd = format!("context.{k}.\"odd key\"");
    store.declare_attribute(&odd).expect("odd");
    let listed: Vec<String> = store
        .attributes()
        .expect("attributes")
        .into_iter()
        .map(|a| a.path)
        .collect();
    assert_eq!(
        listed.iter().filter(|p| **p == path || **p == odd).count(),
        2,
        "{listed:?}"
    );
    let before = store.attributes().expect("attributes");
    for bad in [
        "status",
        "context",
        "",
        "context.a = 1",
        "context.\"a'b\"",
        "context.x and y",
        "ctx.a",
    ] {
        for result in [
            store.declare_attribute(bad).map(|_| ()),
            store.drop_attribute(bad).map(|_| ()),
        ] {
            assert!(
                matches!(result, Err(StoreError::InvalidInput { .. })),
                "{bad}: {result:?}"
            );
        }
    }
    assert_eq!(
        store.attributes().expect("attributes"),
        before,
        "bad input changed nothing"
    );
    assert!(store.drop_attribute(&path).expect("drop"));
    assert!(!store.drop_attribute(&path).expect("drop again"));
    assert!(store.drop_attribute(&odd).expect("drop odd"));
    let left: Vec<String> = store
        .attributes()
        .expect("attributes")
        .into_iter()
        .map(|a| a.path)
        .collect();
    assert!(!left.contains(&path) && !left.contains(&odd), "{left:?}");
}

/// A filter that is not well formed is `InvalidInput` on `where` in every backend (a
/// `ListQuery` may be built or deserialized without the parser).
pub fn where_bad_filter_rejected(store: &dyn ExecutionStore) {
    let term = |root: &str, keys: &[&str], op: Op| Filter {
        expr: Expr::Term(Term {
            path: Path {
                root: root.to_owned(),
                keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            },
            op,
        }),
    };
    for bad in [
        term("nope", &[], Op::Exists),
        term("context", &[], Op::Exists),
        term("status", &["x"], Op::Exists),
        term("created", &[], Op::Cmp(Cmp::Gt, Value::Str("-1h".into()))),
        term("created", &[], Op::Prefix("1".into())),
        term("context", &["a\"b"], Op::Exists),
    ] {
        let result = store.list_executions(&ListQuery::new().filter(bad.clone()));
        assert!(
            matches!(&result, Err(StoreError::InvalidInput { field, .. }) if field == "where"),
            "{bad:?}: {result:?}"
        );
    }
    for bad in [
        "status = nope",
        "created > yesterday",
        "x = 1",
        "context.a = ",
        "context = 1",
    ] {
        assert!(
            matches!(parse_where(bad, 0.0), Err(StoreError::InvalidInput { .. })),
            "{bad}"
        );
    }
}
