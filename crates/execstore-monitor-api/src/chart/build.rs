//! A statechart drawn from a machine's definition document (XState v5's
//! `machine.definition` as JSON, as `execstore/xstate` stores it): every state (nested and
//! parallel, initial and final marked) and every transition the definition declares (events,
//! `after` delays, `always`, `onDone`, `onError`), whether or not a trace ever took it.
//!
//! The counts come from the trace graph ([`crate::graph::build`]), read as it is: this module
//! keeps none of its own, so however the graph is counted, the chart follows.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::graph::build::StateGraph;

/// At most this many states are drawn; past it the chart says `truncated`.
pub const MAX_NODES: usize = 2_000;
/// At most this many transitions are drawn (see [`MAX_NODES`]).
pub const MAX_EDGES: usize = 10_000;
/// XState's definitions nest two JSON levels a state: deeper than this is not walked.
const MAX_DEPTH: usize = 60;

/// One state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChartNode {
    /// XState's id (`order.paying.card`, or the state's own `id`): the key edges name.
    pub id: String,
    /// Its key in its parent (`card`).
    pub key: String,
    /// The dotted path of keys below the machine (`paying.card`), as an execution's
    /// `active_path` and trace steps name states; the root's is empty.
    pub path: String,
    /// The id of the state it is in, `None` for the machine itself.
    pub parent: Option<String>,
    /// `atomic`, `compound`, `parallel`, `final` or `history`.
    pub kind: String,
    /// Whether it is its parent's initial state.
    pub initial: bool,
    /// How deep it is (the machine: 0).
    pub depth: usize,
    /// Whether the execution drawn is in it (itself or a state inside it); for a
    /// definition, whether any execution is.
    pub active: bool,
    /// How many executions have it as their active path (from the trace graph).
    pub now: u64,
}

/// One transition.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChartEdge {
    /// The id of the state it leaves.
    pub from: String,
    /// The ids of the states it targets; empty for a transition without a target.
    pub to: Vec<String>,
    /// `event`, `after`, `always`, `done` (`onDone`) or `error` (`onError`).
    pub kind: String,
    /// The event type as XState names it (`PAY`, `xstate.after.1000.order.paying`, ...);
    /// empty for `always`.
    pub event: String,
    /// What a picture writes on it: the event, `after 1000ms`, `always`, `onDone`,
    /// `onError`, with its named guard in brackets.
    pub label: String,
    /// The delay of an `after`, in ms, when it is a number.
    pub delay: Option<f64>,
    /// A named guard (an inline one has no name in the JSON).
    pub guard: Option<String>,
    /// How many trace steps of this event left this state (or a state inside it); `None`
    /// where the traces cannot say (`always`, `onDone`, `onError` run inside another
    /// event's step).
    pub count: Option<u64>,
}

/// The chart.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Chart {
    /// The machine's id.
    pub root: String,
    /// Every state, parents before their children, in the definition's order.
    pub nodes: Vec<ChartNode>,
    /// Every transition, by source state in node order.
    pub edges: Vec<ChartEdge>,
    /// Whether states or transitions were left out ([`MAX_NODES`], [`MAX_EDGES`]).
    pub truncated: bool,
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_owned)
}

/// Whether `doc` looks like an XState definition (an object with a string `id` and an
/// object `states`).
pub fn is_xstate_definition(doc: &Value) -> bool {
    doc.get("id").is_some_and(Value::is_string) && doc.get("states").is_some_and(Value::is_object)
}

struct Walk {
    chart: Chart,
    /// id -> index in nodes.
    index: HashMap<String, usize>,
    /// Raw transitions before targets are resolved: (from id, definition).
    raw: Vec<(String, Value, &'static str)>,
}

impl Walk {
    fn node(
        &mut self,
        def: &Value,
        key: &str,
        path: String,
        parent: Option<String>,
        depth: usize,
        initial: bool,
    ) {
        if depth > MAX_DEPTH || self.chart.nodes.len() >= MAX_NODES {
            self.chart.truncated = true;
            return;
        }
        let id = text(def.get("id")).unwrap_or_else(|| match &parent {
            Some(p) => format!("{p}.{key}"),
            None => key.to_owned(),
        });
        if self.index.contains_key(&id) {
            return;
        }
        self.index.insert(id.clone(), self.chart.nodes.len());
        self.chart.nodes.push(ChartNode {
            id: id.clone(),
            key: key.to_owned(),
            path: path.clone(),
            parent,
            kind: text(def.get("type")).unwrap_or_else(|| "atomic".into()),
            initial,
            depth,
            active: false,
            now: 0,
        });
        // Transitions: `transitions` holds every `on` entry (events, `after`, onDone,
        // onError) in order; `always` is added by execstore/xstate.
        if let Some(Value::Array(ts)) = def.get("transitions") {
            for t in ts {
                self.raw.push((id.clone(), t.clone(), ""));
            }
        } else if let Some(Value::Object(on)) = def.get("on") {
            for ts in on.values() {
                if let Value::Array(ts) = ts {
                    for t in ts {
                        self.raw.push((id.clone(), t.clone(), ""));
                    }
                }
            }
        }
        if let Some(Value::Array(ts)) = def.get("always") {
            for t in ts {
                self.raw.push((id.clone(), t.clone(), "always"));
            }
        }
        let initial_targets: Vec<String> = match def.get("initial").and_then(|i| i.get("target")) {
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .map(|t| t.trim_start_matches('#').to_owned())
                .collect(),
            _ => Vec::new(),
        };
        if let Some(Value::Object(states)) = def.get("states") {
            for (child_key, child) in states {
                let child_path = if path.is_empty() {
                    child_key.clone()
                } else {
                    format!("{path}.{child_key}")
                };
                let child_id = text(child.get("id")).unwrap_or_else(|| format!("{id}.{child_key}"));
                let is_initial = initial_targets.contains(&child_id);
                self.node(
                    child,
                    child_key,
                    child_path,
                    Some(id.clone()),
                    depth + 1,
                    is_initial,
                );
            }
        }
    }

    fn edges(&mut self) {
        for (from, t, forced) in std::mem::take(&mut self.raw) {
            if self.chart.edges.len() >= MAX_EDGES {
                self.chart.truncated = true;
                break;
            }
            let event = text(t.get("eventType")).unwrap_or_default();
            let delay = t.get("delay").and_then(Value::as_f64);
            let kind = if forced == "always" || event.is_empty() {
                "always"
            } else if event.starts_with("xstate.after.") || delay.is_some() {
                "after"
            } else if event.starts_with("xstate.done.") {
                "done"
            } else if event.starts_with("xstate.error.") {
                "error"
            } else {
                "event"
            };
            let guard = match t.get("guard") {
                Some(Value::String(g)) => Some(g.clone()),
                Some(Value::Object(g)) => text(g.get("type")),
                _ => None,
            };
            let to: Vec<String> = match t.get("target") {
                Some(Value::Array(ts)) => ts
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|s| s.trim_start_matches('#').to_owned())
                    .collect(),
                Some(Value::String(s)) => vec![s.trim_start_matches('#').to_owned()],
                _ => Vec::new(),
            };
            let mut label = match kind {
                "always" => "always".to_owned(),
                "after" => match delay {
                    Some(d) => format!("after {d}ms"),
                    None => format!("after {}", event.trim_start_matches("xstate.after.")),
                },
                "done" => "onDone".to_owned(),
                "error" => "onError".to_owned(),
                _ => event.clone(),
            };
            if let Some(g) = &guard {
                label.push_str(&format!(" [{g}]"));
            }
            self.chart.edges.push(ChartEdge {
                from,
                to,
                kind: kind.to_owned(),
                event,
                label,
                delay,
                guard,
                count: None,
            });
        }
    }
}

/// The chart of an XState definition document, without counts or active states.
pub fn chart_of(doc: &Value) -> Chart {
    let mut walk = Walk {
        chart: Chart {
            root: text(doc.get("id")).unwrap_or_default(),
            ..Chart::default()
        },
        index: HashMap::new(),
        raw: Vec::new(),
    };
    let key = text(doc.get("key")).unwrap_or_else(|| walk.chart.root.clone());
    walk.node(doc, &key, String::new(), None, 0, false);
    walk.edges();
    walk.chart
}

/// Every state path (dotted keys below the machine) an XState state value is in: `{a:
/// {b: "c"}, d: "e"}` is `a`, `a.b`, `a.b.c`, `d`, `d.e`.
pub fn value_paths(value: &Value) -> Vec<String> {
    fn walk(v: &Value, prefix: &str, out: &mut Vec<String>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let join = |k: &str| {
            if prefix.is_empty() {
                k.to_owned()
            } else {
                format!("{prefix}.{k}")
            }
        };
        match v {
            Value::String(s) => out.push(join(s)),
            Value::Object(map) => {
                for (k, child) in map {
                    let p = join(k);
                    out.push(p.clone());
                    walk(child, &p, out, depth + 1);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, "", &mut out, 0);
    out
}

impl Chart {
    /// Marks the states at `paths` (and the machine) active.
    pub fn mark_active(&mut self, paths: &[String]) {
        if paths.is_empty() {
            return;
        }
        for node in &mut self.nodes {
            if node.parent.is_none() || paths.contains(&node.path) {
                node.active = true;
            }
        }
    }

    /// Takes the trace graph's counts: each state's `now` (its path's), and on each edge of
    /// an event the steps of that event whose `from` is its state or inside it (the deepest
    /// such edge gets them) or, for a step from a state holding several regions, the one
    /// edge of that event inside it.
    pub fn add_counts(&mut self, graph: &StateGraph) {
        let paths: BTreeMap<String, String> = self
            .nodes
            .iter()
            .map(|n| (n.id.clone(), n.path.clone()))
            .collect();
        let mut now: HashMap<&str, u64> = HashMap::new();
        for s in &graph.states {
            now.insert(s.path.as_str(), s.now);
        }
        let mut occupied = Vec::new();
        for node in &mut self.nodes {
            node.now = now.get(node.path.as_str()).copied().unwrap_or(0);
            if node.now > 0 {
                let mut at = node.path.as_str();
                occupied.push(at.to_owned());
                while let Some((up, _)) = at.rsplit_once('.') {
                    occupied.push(up.to_owned());
                    at = up;
                }
            }
        }
        self.mark_active(&occupied);
        let within = |inner: &str, outer: &str| {
            outer.is_empty()
                || inner == outer
                || inner.strip_prefix(outer).is_some_and(|r| r.starts_with('.'))
        };
        let mut counts: Vec<Option<u64>> = self
            .edges
            .iter()
            .map(|e| matches!(e.kind.as_str(), "event" | "after").then_some(0))
            .collect();
        for t in &graph.transitions {
            let from = t.from.as_deref().unwrap_or("");
            if t.from.is_none() {
                continue;
            }
            for ev in &t.events {
                let candidates: Vec<usize> = (0..self.edges.len())
                    .filter(|&i| counts[i].is_some() && self.edges[i].event == ev.name)
                    .collect();
                let src = |i: usize| paths.get(&self.edges[i].from).map_or("", String::as_str);
                // The deepest edge whose state holds the step's state.
                let holding = candidates
                    .iter()
                    .copied()
                    .filter(|&i| within(from, src(i)))
                    .max_by_key(|&i| src(i).len());
                let chosen = holding.or_else(|| {
                    let inside: Vec<usize> = candidates
                        .iter()
                        .copied()
                        .filter(|&i| within(src(i), from))
                        .collect();
                    (inside.len() == 1).then(|| inside[0])
                });
                if let Some(i) = chosen {
                    if let Some(c) = counts[i].as_mut() {
                        *c += ev.count;
                    }
                }
            }
        }
        for (edge, count) in self.edges.iter_mut().zip(counts) {
            edge.count = count;
        }
    }
}
