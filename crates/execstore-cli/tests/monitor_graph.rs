//! The statechart pictures' API end to end: `execstore monitor` as a process, over a demo
//! store and over a file harel 0.9 wrote. `GET /api/executions/{id}/graph` must say what the
//! execution's own trace says (recounted here from `/trace`), and `GET
//! /api/definitions/{id}/graph` where every execution of the definition sits (recounted from
//! the list), with the monitor's parameter and error rules.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

use common::{start_monitor, Monitor};
use serde_json::Value;
use tempfile::TempDir;

fn start(args: &[&str]) -> Monitor {
    start_monitor(args, &[])
}

impl Monitor {
    fn get(&self, path: &str) -> (u16, Value) {
        let mut response = self
            .agent
            .get(format!("{}{path}", self.url))
            .call()
            .expect("request");
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}")),
        )
    }

    fn ok(&self, path: &str) -> Value {
        let (status, body) = self.get(path);
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    fn every_execution(&self, filter: &str) -> Vec<Value> {
        let mut items = Vec::new();
        let mut cursor = String::new();
        loop {
            let page = self.ok(&format!("api/executions?limit=10000&{filter}{cursor}"));
            items.extend(page["items"].as_array().unwrap().iter().cloned());
            match page["next_cursor"].as_str() {
                Some(next) => cursor = format!("&cursor={next}"),
                None => return items,
            }
        }
    }
}

fn skip(reason: &str) {
    use std::io::Write as _;
    let thread = std::thread::current();
    let line = format!("SKIPPED: {}: {reason}\n", thread.name().unwrap_or("?"));
    let _ = std::io::stderr().write_all(line.as_bytes());
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The graph's transitions as `(from, to) -> count`.
fn transition_counts(graph: &Value) -> BTreeMap<(String, String), u64> {
    graph["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let end = |k: &str| t[k].as_str().unwrap_or("").to_owned();
            ((end("from"), end("to")), t["count"].as_u64().unwrap())
        })
        .collect()
}

fn state<'a>(graph: &'a Value, path: &str) -> &'a Value {
    graph["states"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["path"] == path)
        .unwrap_or_else(|| panic!("no state {path} in {graph}"))
}

/// Checks execution `id`'s graph against its trace, recounted here.
fn check_execution(m: &Monitor, id: &str) -> Value {
    let g = m.ok(&format!("api/executions/{}/graph", enc(id)));
    let trace = m.ok(&format!("api/executions/{}/trace", enc(id)))["items"].clone();
    let detail = m.ok(&format!("api/executions/{}", enc(id)))["execution"].clone();
    let steps = trace.as_array().unwrap();
    let graph = &g["graph"];
    assert_eq!(graph["steps"].as_u64(), Some(steps.len() as u64), "{id}");
    assert_eq!(g["active_path"], detail["active_path"], "{id}");
    let mut want: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut entered: BTreeMap<String, u64> = BTreeMap::new();
    let mut visited = BTreeSet::new();
    for s in steps {
        let end = |k: &str| s[k].as_str().unwrap_or("").to_owned();
        *want.entry((end("from_path"), end("to_path"))).or_default() += 1;
        *entered.entry(end("to_path")).or_default() += 1;
        visited.extend(
            [end("from_path"), end("to_path")]
                .into_iter()
                .filter(|p| !p.is_empty()),
        );
    }
    if let Some(active) = detail["active_path"].as_str() {
        visited.insert(active.to_owned());
        assert_eq!(state(graph, active)["now"], 1, "{id}: the active state");
    }
    assert_eq!(transition_counts(graph), want, "{id}");
    let got: BTreeSet<String> = graph["states"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["visited"] == true)
        .map(|s| s["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(got, visited, "{id}");
    for path in &visited {
        let s = state(graph, path);
        assert_eq!(
            s["entered"].as_u64(),
            Some(entered.get(path).copied().unwrap_or(0)),
            "{id} {path}"
        );
        // Its enclosing states are in the graph, each with its own parent.
        let mut at = s;
        while let Some(parent) = at["parent"].as_str() {
            at = state(graph, parent);
            assert_eq!(at["composite"], true, "{id}: {parent} holds {path}");
        }
    }
    g
}

/// Checks definition `d`'s graph against the list: where each execution sits now.
fn check_definition(m: &Monitor, d: &str) -> Value {
    let g = m.ok(&format!("api/definitions/{}/graph", enc(d)));
    let items = m.every_execution(&format!("definition={}", enc(d)));
    assert_eq!(g["executions"].as_u64(), Some(items.len() as u64));
    assert_eq!(g["traces_read"].as_u64(), Some(items.len() as u64));
    let mut at: BTreeMap<String, u64> = BTreeMap::new();
    for e in &items {
        if let Some(p) = e["active_path"].as_str() {
            *at.entry(p.to_owned()).or_default() += 1;
        }
    }
    for s in g["graph"]["states"].as_array().unwrap() {
        let path = s["path"].as_str().unwrap();
        assert_eq!(
            s["now"].as_u64(),
            Some(at.get(path).copied().unwrap_or(0)),
            "{d}: {path}"
        );
        let within: u64 = at
            .iter()
            .filter(|(p, _)| *p == path || p.starts_with(&format!("{path}.")))
            .map(|(_, n)| n)
            .sum();
        assert_eq!(s["now_within"].as_u64(), Some(within), "{d}: inside {path}");
    }
    // The transitions are every execution's steps added up.
    let mut sum: BTreeMap<(String, String), u64> = BTreeMap::new();
    for e in &items {
        let one = m.ok(&format!(
            "api/executions/{}/graph",
            enc(e["id"].as_str().unwrap())
        ));
        for (k, n) in transition_counts(&one["graph"]) {
            *sum.entry(k).or_default() += n;
        }
    }
    assert_eq!(transition_counts(&g["graph"]), sum, "{d}");
    g
}

fn demo(n: u32) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.db");
    let out = Command::new(env!("CARGO_BIN_EXE_execstore"))
        .args([
            "demo",
            "--no-serve",
            "--seed",
            "5",
            "--executions",
            &n.to_string(),
            "--db",
        ])
        .arg(&db)
        .env_remove("EXECSTORE_DB")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (dir, db)
}

#[test]
fn the_demo_graphs_say_what_the_traces_and_the_list_say() {
    let (_dir, db) = demo(120);
    let before = std::fs::read(&db).unwrap();
    let m = start(&["monitor", "--db", db.to_str().unwrap()]);
    let all = m.every_execution("");
    let mut definitions = BTreeSet::new();
    for e in &all {
        check_execution(&m, e["id"].as_str().unwrap());
        definitions.insert(e["definition_id"].as_str().unwrap().to_owned());
    }
    assert!(definitions.len() >= 3, "{definitions:?}");
    for d in &definitions {
        check_definition(&m, d);
    }
    // The demo's guards are carried: the orders' checkout is guarded.
    let orders = m.ok("api/definitions/orders/graph");
    let guarded = orders["graph"]["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["to"] == "order.checkout.address" && t["from"] == "order.cart")
        .expect("cart -> checkout.address");
    assert_eq!(guarded["guards"][0]["name"], "cart_not_empty");
    assert_eq!(guarded["guards"][0]["count"], guarded["count"]);
    // SQLite keeps where executions sit (migrations 7 and 8), and the answer says so; the
    // transitions come from the traces of the `traces` most recently updated (one: that
    // execution's steps alone; 0: none). States always from every execution.
    assert_eq!(orders["maintained"], true);
    let one = m.ok("api/definitions/orders/graph?traces=1");
    assert_eq!(one["traces_read"], 1);
    assert_eq!(one["executions"], orders["executions"]);
    let newest = m.ok("api/executions?definition=orders&order=updated&limit=1")["items"][0]["id"].clone();
    let newest = m.ok(&format!("api/executions/{}/graph", enc(newest.as_str().unwrap())));
    assert_eq!(
        transition_counts(&one["graph"]),
        transition_counts(&newest["graph"]),
        "the newest execution's steps"
    );
    assert_ne!(one["graph"], orders["graph"]);
    let none = m.ok("api/definitions/orders/graph?traces=0");
    assert_eq!(none["traces_read"], 0);
    assert_eq!(none["executions"], orders["executions"]);
    assert!(none["graph"]["transitions"].as_array().unwrap().is_empty());
    assert!(!none["graph"]["states"].as_array().unwrap().is_empty());
    drop(m);
    assert!(
        std::fs::read(&db).unwrap() == before,
        "reading the graphs changed nothing"
    );
}

#[test]
fn bad_requests_are_typed_errors() {
    let (_dir, db) = demo(20);
    let m = start(&["monitor", "--db", db.to_str().unwrap()]);
    for (path, status, code) in [
        ("api/executions/nope/graph", 404, "NOT_FOUND"),
        ("api/definitions/nope/graph", 404, "NOT_FOUND"),
        ("api/definitions/orders/graph?traces=-1", 400, "BAD_REQUEST"),
        ("api/definitions/orders/graph?traces=100001", 400, "BAD_REQUEST"),
        ("api/definitions/orders/graph?traces=NaN", 400, "BAD_REQUEST"),
        ("api/definitions/orders/graph?limit=5", 400, "BAD_REQUEST"),
        (
            "api/definitions/orders/graph?traces=1&traces=2",
            400,
            "BAD_REQUEST",
        ),
        ("api/executions/x/graph?traces=1", 400, "BAD_REQUEST"),
        ("api/executions/%FF/graph", 400, "BAD_REQUEST"),
        ("api/definitions", 404, "NOT_FOUND"),
    ] {
        let (got, body) = m.get(path);
        assert_eq!(
            (got, body["error"]["code"].as_str()),
            (status, Some(code)),
            "{path}: {body}"
        );
    }
    let mut response = m
        .agent
        .post(format!("{}api/definitions/orders/graph", m.url))
        .send_empty()
        .unwrap();
    assert_eq!(response.status().as_u16(), 405);
    let _ = response.body_mut().read_to_string();
    // The picture's code and its layout library are served from the binary (no CDN).
    for (asset, needle) in [
        ("graph.js", "./vendor/dagre.esm.js"),
        ("vendor/dagre.esm.js", "export{"),
    ] {
        let mut response = m.agent.get(format!("{}{asset}", m.url)).call().unwrap();
        assert_eq!(response.status().as_u16(), 200, "{asset}");
        let kind = response.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(kind.starts_with("text/javascript"), "{asset}: {kind}");
        let text = response
            .body_mut()
            .with_config()
            .limit(1 << 22)
            .read_to_string()
            .unwrap();
        assert!(text.contains(needle), "{asset}");
    }
}

#[test]
fn a_file_harel_wrote_is_drawn_as_harel_ran_it() {
    let Ok(python) = std::env::var("EXECSTORE_HAREL_PYTHON") else {
        skip("EXECSTORE_HAREL_PYTHON is not set: no harel 0.9 to write the file (scripts/test sets it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("harel.db");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/browser/harel_graph_fixture.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(&db)
        .arg("10")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let m = start(&["monitor", "--db", db.to_str().unwrap(), "--prefix", "harel"]);
    let g = check_execution(&m, "shop-000");
    let graph = &g["graph"];
    let paths: Vec<&str> = graph["states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "cart",
            "checkout",
            "shipped",
            "checkout.address",
            "checkout.payment"
        ]
    );
    assert_eq!(
        state(graph, "checkout")["visited"],
        false,
        "only its states were active"
    );
    assert_eq!(g["active_path"], "shipped");
    assert_eq!(g["status"], "DONE");
    let counts = transition_counts(graph);
    let key = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(counts[&key("", "cart")], 1);
    assert_eq!(counts[&key("cart", "cart")], 1);
    assert_eq!(counts[&key("checkout.address", "checkout.payment")], 2);
    assert_eq!(counts[&key("checkout.payment", "shipped")], 1);
    let shop = check_definition(&m, "shop");
    assert_eq!(shop["executions"], 10);
    assert!(state(&shop["graph"], "checkout")["now_within"].as_u64().unwrap() > 0);
    // The execution written with hostile names is drawn with them, as data.
    let evil = check_execution(&m, "evil-1");
    assert_eq!(evil["definition_id"], "<script>alert(1)</script>");
    assert_eq!(
        state(&evil["graph"], "<script>alert(1)</script>")["composite"],
        true
    );
}
