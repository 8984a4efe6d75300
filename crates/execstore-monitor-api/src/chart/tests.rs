//! The chart endpoints over a definition written by `execstore/xstate` (the fixture is
//! `definitionJson` of tests/browser/xstate-order.mjs's machine, as the npm package stores it).

use execstore::executions::{DefinitionDoc, Status};
use execstore::{Effects, Execution, ExecutionStore, MemoryStore};
use serde_json::{json, Map, Value};

use super::build::{chart_of, value_paths, ChartEdge};
use crate::{ApiRequest, ApiResponse, MonitorApi};

const FIXTURE: &str = include_str!("order-definition.json");

fn fixture() -> Value {
    serde_json::from_str(FIXTURE).expect("the fixture is JSON")
}

fn get(store: &MemoryStore, target: &str) -> ApiResponse {
    MonitorApi::new(Map::new(), None).handle(store, &ApiRequest::from_target("GET", target, None), 0.0)
}

fn edge<'a>(edges: &'a [ChartEdge], from: &str, label: &str) -> &'a ChartEdge {
    edges
        .iter()
        .find(|e| e.from == from && e.label == label)
        .unwrap_or_else(|| panic!("no edge {from} {label}: {edges:#?}"))
}

#[test]
fn the_chart_has_every_state_and_transition_of_the_definition() {
    let chart = chart_of(&fixture());
    assert_eq!(chart.root, "order");
    assert!(!chart.truncated);
    let node = |id: &str| {
        chart
            .nodes
            .iter()
            .find(|n| n.id == id)
            .unwrap_or_else(|| panic!("no node {id}"))
    };
    assert_eq!(
        (
            node("order").kind.as_str(),
            node("order").parent.as_deref(),
            node("order").path.as_str()
        ),
        ("compound", None, "")
    );
    assert!(node("order.cart").initial && !node("order.paying").initial);
    assert_eq!(node("order.paying.card").path, "paying.card");
    assert!(node("order.paying.card").initial && !node("order.paying.wallet").initial);
    assert_eq!(node("order.fulfil").kind, "parallel");
    assert_eq!(node("order.fulfil.pack.picking").depth, 3);
    assert!(node("order.fulfil.pack.picking").initial);
    assert_eq!(node("order.done").kind, "final");
    assert_eq!(node("order.<b>odd</b>").key, "<b>odd</b>");
    // Parents before children.
    for (i, n) in chart.nodes.iter().enumerate() {
        if let Some(p) = &n.parent {
            assert!(
                chart.nodes[..i].iter().any(|m| &m.id == p),
                "{} after its parent",
                n.id
            );
        }
    }
    assert_eq!(chart.nodes.len(), 18);

    let e = &chart.edges;
    let checkout = edge(e, "order.cart", "CHECKOUT");
    assert_eq!(
        (checkout.kind.as_str(), checkout.to.clone()),
        ("event", vec!["order.paying".to_owned()])
    );
    assert!(
        edge(e, "order.cart", "ADD").to.is_empty(),
        "a transition without a target"
    );
    let after = edge(e, "order.paying", "after 60000ms");
    assert_eq!(
        (after.kind.as_str(), after.delay, after.to.clone()),
        ("after", Some(60000.0), vec!["order.cancelled".to_owned()])
    );
    assert_eq!(edge(e, "order.paying", "onDone").to, ["order.fulfil"]);
    assert_eq!(edge(e, "order.paying", "onError").to, ["order.failed"]);
    assert_eq!(edge(e, "order.fulfil", "onDone").to, ["order.checking"]);
    let big = edge(e, "order.checking", "always [big]");
    assert_eq!(
        (big.kind.as_str(), big.guard.as_deref(), big.to.clone()),
        ("always", Some("big"), vec!["order.review".to_owned()])
    );
    assert_eq!(edge(e, "order.checking", "always").to, ["order.done"]);
    assert_eq!(
        edge(e, "order.fulfil.pack.picking", "PACKED").to,
        ["order.fulfil.pack.packed"]
    );
    assert_eq!(edge(e, "order.<b>odd</b>", "BACK").to, ["order.cart"]);
    // Counts are the traces' alone: none yet.
    assert!(e.iter().all(|x| x.count.is_none()));
}

#[test]
fn a_state_value_names_every_state_it_is_in() {
    assert_eq!(
        value_paths(&json!({"fulfil": {"pack": "picking", "ship": "sent"}})),
        [
            "fulfil",
            "fulfil.pack",
            "fulfil.pack.picking",
            "fulfil.ship",
            "fulfil.ship.sent"
        ]
    );
    assert_eq!(value_paths(&json!("cart")), ["cart"]);
    assert!(value_paths(&json!(5)).is_empty());
}

fn step(kind: &str, from: Option<&str>, to: &str) -> Map<String, Value> {
    let Value::Object(m) = json!({"event_kind": kind, "from_path": from, "to_path": to}) else {
        unreachable!()
    };
    m
}

/// An execution as `execstore/xstate` stores it: fqn, the snapshot's value under `$xstate`,
/// a trace of steps (the first holding the definition when `definition_in_trace`).
fn xstate_execution(store: &MemoryStore, id: &str, fqn: &str, value: Value, steps: &[Map<String, Value>]) {
    let mut exe = Execution::new(id, "order");
    exe.definition_fqn = Some(fqn.into());
    exe.status = Status::Running;
    exe.active_path = steps
        .last()
        .and_then(|s| s["to_path"].as_str())
        .map(str::to_owned);
    exe.context
        .insert("$xstate".into(), json!({"snapshot": {"value": value}}));
    store.save(&mut exe).expect("save");
    for s in steps {
        store
            .commit(&mut exe, &Effects::new().trace(s.clone()))
            .expect("commit");
    }
}

fn order_steps(with_definition: bool) -> Vec<Map<String, Value>> {
    let mut init = step("xstate.init", None, "cart");
    if with_definition {
        init.insert("definition".into(), fixture());
    }
    vec![
        init,
        step("CHECKOUT", Some("cart"), "paying.card"),
        step("SWITCH", Some("paying.card"), "paying.wallet"),
        step("SWITCH", Some("paying.wallet"), "paying.card"),
        step("CHARGE", Some("paying.card"), "fulfil"),
        step("PACKED", Some("fulfil"), "fulfil"),
    ]
}

#[test]
fn an_execution_chart_comes_from_the_stored_definition() {
    let store = MemoryStore::new();
    let doc = DefinitionDoc {
        definition_id: "order".into(),
        definition_fqn: "order@1".into(),
        document: fixture(),
        first_seen: 1_700_000_000.0,
    };
    assert!(store.put_definition(&doc).expect("put"));
    let value = json!({"fulfil": {"pack": "packed", "ship": "label"}});
    xstate_execution(&store, "o/1", "order@1", value, &order_steps(false));

    let r = get(&store, "/api/executions/o%2F1/chart");
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        (r.body["source"].as_str(), r.body["first_seen"].as_f64()),
        (Some("document"), Some(1_700_000_000.0))
    );
    let chart = &r.body["chart"];
    let nodes = chart["nodes"].as_array().expect("nodes");
    let active: Vec<&str> = nodes
        .iter()
        .filter(|n| n["active"] == true)
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        active,
        [
            "order",
            "order.fulfil",
            "order.fulfil.pack",
            "order.fulfil.pack.packed",
            "order.fulfil.ship",
            "order.fulfil.ship.label"
        ]
    );
    let count = |from: &str, label: &str| {
        chart["edges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["from"] == from && e["label"] == label)
            .map(|e| e["count"].clone())
            .unwrap_or_else(|| panic!("no edge {from} {label}"))
    };
    assert_eq!(count("order.cart", "CHECKOUT"), 1);
    assert_eq!(count("order.paying.card", "SWITCH"), 1);
    assert_eq!(count("order.paying.wallet", "SWITCH"), 1);
    assert_eq!(count("order.cart", "ADD"), 0);
    // PACKED from "fulfil" (the deepest state holding both regions): the one PACKED inside.
    assert_eq!(count("order.fulfil.pack.picking", "PACKED"), 1);
    assert_eq!(
        count("order.paying", "onDone"),
        Value::Null,
        "the traces cannot say"
    );
    // The trace graph rides along, as /graph answers it.
    assert_eq!(r.body["graph"]["graph"]["steps"], 6);
    // The trace cap or a purge of the execution does not lose the document.
    let exe = store.load("o/1").unwrap().unwrap();
    assert!(store.purge("o/1", exe.version).unwrap());
    let d = get(&store, "/api/definitions/order/chart?fqn=order%401");
    assert_eq!(
        (d.status, d.body["source"].as_str()),
        (200, Some("document")),
        "{:?}",
        d.body
    );
    assert_eq!(d.body["graph"], Value::Null, "no execution left");
    assert_eq!(d.body["chart"]["nodes"].as_array().unwrap().len(), 18);
}

#[test]
fn a_definition_chart_counts_every_execution_and_falls_back() {
    let store = MemoryStore::new();
    // An older store: no document, the definition in the first trace step.
    xstate_execution(
        &store,
        "a",
        "order@1",
        json!({"paying": "card"}),
        &order_steps(true)[..2],
    );
    xstate_execution(
        &store,
        "b",
        "order@1",
        json!({"paying": "card"}),
        &order_steps(true)[..4],
    );
    let d = get(&store, "/api/definitions/order/chart");
    assert_eq!(d.status, 200, "{:?}", d.body);
    assert_eq!(
        (d.body["source"].as_str(), d.body["definition_fqn"].as_str()),
        (Some("trace"), Some("order@1"))
    );
    assert_eq!(d.body["graph"]["executions"], 2);
    let edges = d.body["chart"]["edges"].as_array().unwrap();
    let checkout = edges
        .iter()
        .find(|e| e["from"] == "order.cart" && e["event"] == "CHECKOUT")
        .unwrap();
    assert_eq!(checkout["count"], 2);
    let card = d.body["chart"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == "order.paying.card")
        .unwrap()
        .clone();
    assert_eq!(
        (card["now"].clone(), card["active"].clone()),
        (json!(2), json!(true))
    );
    let active: Vec<&str> = d.body["chart"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["active"] == true)
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(active, ["order", "order.paying", "order.paying.card"]);

    // No definition anywhere (a harel execution): no chart, the trace graph as before.
    let mut h = Execution::new("h", "harel-def");
    h.status = Status::Running;
    h.active_path = Some("s.a".into());
    store.save(&mut h).unwrap();
    let r = get(&store, "/api/executions/h/chart");
    assert_eq!(
        (r.status, &r.body["chart"], &r.body["source"]),
        (200, &Value::Null, &Value::Null)
    );
    assert_eq!(r.body["graph"]["active_path"], "s.a");
    let g = get(&store, "/api/definitions/harel-def/chart");
    assert_eq!((g.status, &g.body["chart"]), (200, &Value::Null));
    assert_eq!(g.body["graph"]["executions"], 1);

    // Refusals.
    assert_eq!(get(&store, "/api/definitions/nope/chart").status, 404);
    assert_eq!(get(&store, "/api/executions/nope/chart").status, 404);
    for bad in ["?x=1", "?traces=-1", "?fqn=a&fqn=b"] {
        let r = get(&store, &format!("/api/definitions/order/chart{bad}"));
        assert_eq!(r.status, 400, "{bad}: {:?}", r.body);
    }
    assert_eq!(get(&store, "/api/executions/a/chart?x=1").status, 400);
    // Another version without a document or trace: no chart.
    let v2 = get(&store, "/api/definitions/order/chart?fqn=order%402");
    assert_eq!((v2.status, &v2.body["chart"]), (200, &Value::Null));
}
