//! A statechart as its traces show it: the states visited and the transitions taken, with
//! how often, on which events and under which guards, and where executions sit now.
//!
//! Nothing here knows the definition: the graph is what the stored timeline says. A trace
//! step (harel 0.9's `_trace_step`) names the active leaf before and after the event
//! (`from_path`, `to_path`: dotted paths such as `checkout.payment`, `from_path` null on the
//! initial `Start`), the event's kind (`event_kind`) and, where the engine records them, the
//! guards that held (`guards`). Each dotted path is a state inside its prefixes, so the
//! graph carries the hierarchy: every prefix of a visited path is a (composite) state too.
//!
//! [`execution_graph`] draws one execution, [`definition_graph`] every execution of a
//! definition; both only read through [`ExecutionStore`] (`load`, `read_trace`,
//! `list_executions`), so they answer the same on every backend.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use execstore::executions::{GraphFigures, Status, TraceStep};
use execstore::kit::pyjson;
use execstore::{ExecutionStore, Result, StoreError};

/// At most this many distinct states are kept; past it, new ones are left out and the graph
/// says `truncated` (a trace of hostile or runaway paths cannot make the answer unbounded).
pub const MAX_STATES: usize = 2_000;
/// At most this many distinct transitions are kept (see [`MAX_STATES`]).
pub const MAX_TRANSITIONS: usize = 10_000;
/// At most this many distinct event kinds or guards are listed on one transition; the rest
/// are added up in its `other_events` / `other_guards`.
pub const MAX_LABELS: usize = 50;
/// The most executions' traces [`definition_graph`] may be asked to read.
pub const MAX_TRACES: usize = 100_000;

/// A name and how many times it was seen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Counted {
    /// The event kind or guard.
    pub name: String,
    /// How many steps carried it.
    pub count: u64,
}

/// One state of the graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GraphState {
    /// Its full dotted path (`checkout.payment`).
    pub path: String,
    /// Its last segment (`payment`).
    pub name: String,
    /// The path of the state it is in (`checkout`), `None` at the top.
    pub parent: Option<String>,
    /// How many states it is nested in.
    pub depth: usize,
    /// Whether other states of the graph are inside it.
    pub composite: bool,
    /// Whether a step started or ended here, or an execution sits here (not only inside it).
    pub visited: bool,
    /// How many steps ended here (entries, self-transitions included).
    pub entered: u64,
    /// How many executions have it as their active path now.
    pub now: u64,
    /// How many executions are in it now, itself or any state inside it.
    pub now_within: u64,
    /// [`GraphState::now`] by status (`RUNNING`, `DONE`...), the statuses present only.
    pub now_by_status: BTreeMap<String, u64>,
}

/// One transition taken: every step from one state to another (or the same) state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GraphTransition {
    /// The state it left; `None`: the initial step (no state before it).
    pub from: Option<String>,
    /// The state it reached; `None`: a step that left no active state.
    pub to: Option<String>,
    /// How many steps took it.
    pub count: u64,
    /// The events that drove it, most frequent first (ties by name).
    pub events: Vec<Counted>,
    /// Steps whose event kinds did not fit in `events` ([`MAX_LABELS`]).
    pub other_events: u64,
    /// The guards recorded on its steps, most frequent first (ties by name).
    pub guards: Vec<Counted>,
    /// Guard occurrences that did not fit in `guards`.
    pub other_guards: u64,
}

/// The graph: states (parents before their children, then by path) and transitions (by
/// from, then to).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StateGraph {
    /// Every state visited, and every state containing one.
    pub states: Vec<GraphState>,
    /// Every transition taken.
    pub transitions: Vec<GraphTransition>,
    /// How many trace steps were read.
    pub steps: u64,
    /// Whether states or transitions were left out ([`MAX_STATES`], [`MAX_TRANSITIONS`]).
    pub truncated: bool,
}

#[derive(Default)]
struct StateAcc {
    visited: bool,
    entered: u64,
    now: BTreeMap<String, u64>,
}

#[derive(Default)]
struct TransitionAcc {
    count: u64,
    events: BTreeMap<String, u64>,
    guards: BTreeMap<String, u64>,
}

/// Gathers traces and current states into a [`StateGraph`].
#[derive(Default)]
pub struct GraphBuilder {
    states: BTreeMap<String, StateAcc>,
    transitions: BTreeMap<(Option<String>, Option<String>), TransitionAcc>,
    steps: u64,
    truncated: bool,
}

/// A path of a step: a non-empty string, else none (null, absent, or not a string).
/// A lone surrogate harel wrote (`json.dumps` keeps it) is shown as its escape.
fn path_of(value: &Value) -> Option<String> {
    match value {
        v @ Value::String(s) if !s.is_empty() && !pyjson::is_non_finite(s) => match pyjson::shown(v) {
            Value::String(shown) => Some(shown),
            _ => None,
        },
        _ => None,
    }
}

/// A label of a step: a string as it is, anything else as its JSON; `NaN`, `Infinity` and
/// lone surrogates as text (`pyjson::shown`).
fn label(value: &Value) -> String {
    match pyjson::shown(value) {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// The state a dotted path is in: everything before its last `.`, if that is not empty.
fn parent_of(path: &str) -> Option<&str> {
    path.rsplit_once('.').map(|(p, _)| p).filter(|p| !p.is_empty())
}

impl GraphBuilder {
    /// An empty graph.
    pub fn new() -> Self {
        GraphBuilder::default()
    }

    /// Makes room for `path` (and the states it is in); false if the graph is full.
    fn state(&mut self, path: &str) -> Option<&mut StateAcc> {
        if !self.states.contains_key(path) {
            let mut missing = vec![path];
            let mut at = path;
            while let Some(p) = parent_of(at) {
                if self.states.contains_key(p) {
                    break;
                }
                missing.push(p);
                at = p;
            }
            if self.states.len() + missing.len() > MAX_STATES {
                self.truncated = true;
                return None;
            }
            for p in missing {
                self.states.insert(p.to_owned(), StateAcc::default());
            }
        }
        self.states.get_mut(path)
    }

    /// Adds one execution's trace (oldest first, as `read_trace` gives it).
    pub fn add_trace(&mut self, steps: &[TraceStep]) {
        for step in steps {
            self.add_step(step);
        }
    }

    /// Adds one trace step.
    pub fn add_step(&mut self, step: &TraceStep) {
        let from = step.get("from_path");
        let to = step.get("to_path");
        if let Some(acc) = self.add_steps(from, to, step.get("event_kind"), 1) {
            if let Some(Value::Array(guards)) = step.get("guards") {
                for g in guards {
                    *acc.guards.entry(label(g)).or_default() += 1;
                }
            }
        }
    }

    /// Adds `n` steps from `from` to `to` on `event` (the values as a step holds them,
    /// `None` when absent); the transition they count in, if kept.
    fn add_steps(
        &mut self,
        from: Option<&Value>,
        to: Option<&Value>,
        event: Option<&Value>,
        n: u64,
    ) -> Option<&mut TransitionAcc> {
        self.steps += n;
        let from = from.and_then(path_of);
        let to = to.and_then(path_of);
        // Both ends first: a transition is only kept with both of its states.
        for end in [&from, &to].into_iter().flatten() {
            self.state(end)?.visited = true;
        }
        if let Some(to) = &to {
            if let Some(acc) = self.states.get_mut(to) {
                acc.entered += n;
            }
        }
        let key = (from, to);
        if !self.transitions.contains_key(&key) && self.transitions.len() >= MAX_TRANSITIONS {
            self.truncated = true;
            return None;
        }
        let acc = self.transitions.entry(key).or_default();
        acc.count += n;
        let kind = event.map(label).unwrap_or_default();
        *acc.events.entry(kind).or_default() += n;
        Some(acc)
    }

    /// Adds a store's figures (see [`ExecutionStore::graph_figures`]): where executions
    /// sit, and the steps and guards counted.
    pub fn add_figures(&mut self, figures: &GraphFigures) {
        for f in &figures.now {
            self.add_current_n(f.active_path.as_deref(), f.status, f.n);
        }
        for f in &figures.steps {
            self.add_steps(f.from.as_ref(), f.to.as_ref(), f.event.as_ref(), f.n);
        }
        for f in &figures.guards {
            let key = (f.from.as_ref().and_then(path_of), f.to.as_ref().and_then(path_of));
            if let Some(acc) = self.transitions.get_mut(&key) {
                *acc.guards.entry(label(&f.guard)).or_default() += f.n;
            }
        }
    }

    /// Adds an execution's current state: its active path and status.
    pub fn add_current(&mut self, active_path: Option<&str>, status: Status) {
        self.add_current_n(active_path, status, 1);
    }

    /// Adds `n` executions at one active path with one status.
    fn add_current_n(&mut self, active_path: Option<&str>, status: Status, n: u64) {
        let Some(path) = active_path.filter(|p| !p.is_empty()) else {
            return;
        };
        if let Some(acc) = self.state(path) {
            acc.visited = true;
            *acc.now.entry(status.as_str().to_owned()).or_default() += n;
        }
    }

    /// The graph.
    pub fn finish(self) -> StateGraph {
        let mut within: BTreeMap<&str, u64> = BTreeMap::new();
        for (path, acc) in &self.states {
            let n: u64 = acc.now.values().sum();
            if n == 0 {
                continue;
            }
            let mut at = Some(path.as_str());
            while let Some(p) = at {
                *within.entry(p).or_default() += n;
                at = parent_of(p);
            }
        }
        let composite: std::collections::BTreeSet<&str> =
            self.states.keys().filter_map(|p| parent_of(p)).collect();
        let mut states: Vec<GraphState> = self
            .states
            .iter()
            .map(|(path, acc)| GraphState {
                path: path.clone(),
                name: path.rsplit_once('.').map_or(path.as_str(), |(_, n)| n).to_owned(),
                parent: parent_of(path).map(str::to_owned),
                depth: std::iter::successors(parent_of(path), |p| parent_of(p)).count(),
                composite: composite.contains(path.as_str()),
                visited: acc.visited,
                entered: acc.entered,
                now: acc.now.values().sum(),
                now_within: within.get(path.as_str()).copied().unwrap_or(0),
                now_by_status: acc.now.clone(),
            })
            .collect();
        // Parents first (a drawing needs a cluster before what it holds), then by path.
        states.sort_by(|a, b| a.depth.cmp(&b.depth).then_with(|| a.path.cmp(&b.path)));
        let transitions = self
            .transitions
            .into_iter()
            .map(|((from, to), acc)| {
                let (events, other_events) = ranked(acc.events);
                let (guards, other_guards) = ranked(acc.guards);
                GraphTransition {
                    from,
                    to,
                    count: acc.count,
                    events,
                    other_events,
                    guards,
                    other_guards,
                }
            })
            .collect();
        StateGraph {
            states,
            transitions,
            steps: self.steps,
            truncated: self.truncated,
        }
    }
}

/// Most frequent first (ties by name), at most [`MAX_LABELS`]; the rest added up.
fn ranked(counts: BTreeMap<String, u64>) -> (Vec<Counted>, u64) {
    let mut all: Vec<Counted> = counts
        .into_iter()
        .map(|(name, count)| Counted { name, count })
        .collect();
    all.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.name.cmp(&b.name)));
    let rest = all.split_off(all.len().min(MAX_LABELS));
    (all, rest.iter().map(|c| c.count).sum())
}

/// One execution's graph: its trace, and where it is now.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExecutionGraph {
    /// The execution.
    pub id: String,
    /// Its definition.
    pub definition_id: String,
    /// Its status.
    pub status: Status,
    /// Its active leaf (highlighted in the graph).
    pub active_path: Option<String>,
    /// The index of the oldest step kept: above 0, earlier steps were evicted from the ring.
    pub first_index: Option<u64>,
    /// The graph.
    pub graph: StateGraph,
}

/// The graph of execution `id`: its trace's steps and its active path. `NotFound` if there
/// is no such execution.
pub fn execution_graph(store: &dyn ExecutionStore, id: &str) -> Result<ExecutionGraph> {
    execstore::kit::validate::check_id("id", id)?;
    let exe = store.load(id)?.ok_or_else(|| StoreError::NotFound {
        what: "execution",
        key: id.to_owned(),
    })?;
    let steps = store.read_trace(id)?;
    let mut builder = GraphBuilder::new();
    builder.add_trace(&steps);
    builder.add_current(exe.active_path.as_deref(), exe.status);
    Ok(ExecutionGraph {
        id: exe.id,
        definition_id: exe.definition_id,
        status: exe.status,
        active_path: exe.active_path,
        first_index: steps.first().and_then(|s| s.get("index")).and_then(Value::as_u64),
        graph: builder.finish(),
    })
}

/// Every execution of a definition in one graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DefinitionGraph {
    /// The definition.
    pub definition_id: String,
    /// How many executions it has (all of them counted in the states' `now`).
    pub executions: u64,
    /// How many of them had their trace counted (the `max_traces` most recently updated).
    pub traces_read: u64,
    /// Whether where the executions sit came from what the store keeps up to date with every
    /// write, rather than from reading every execution now (see
    /// [`ExecutionStore::graph_figures`]).
    pub maintained: bool,
    /// Executions per status.
    pub by_status: BTreeMap<String, u64>,
    /// The graph.
    pub graph: StateGraph,
}

/// The graph of every execution of `definition`: where each sits now (all of them), and the
/// transitions of the traces of the `max_traces` most recently updated (0..=[`MAX_TRACES`];
/// none for 0).
/// `NotFound` if the definition has no executions.
pub fn definition_graph(
    store: &dyn ExecutionStore,
    definition: &str,
    max_traces: usize,
) -> Result<DefinitionGraph> {
    execstore::kit::validate::check_id("definition", definition)?;
    if max_traces > MAX_TRACES {
        return Err(StoreError::invalid(
            "max_traces",
            format!("{max_traces} is more than {MAX_TRACES}"),
        ));
    }
    let figures = store.graph_figures(definition, max_traces)?;
    let mut builder = GraphBuilder::new();
    builder.add_figures(&figures);
    Ok(DefinitionGraph {
        definition_id: definition.to_owned(),
        executions: figures.executions,
        traces_read: figures.traces_read,
        maintained: figures.maintained,
        by_status: figures
            .by_status()
            .into_iter()
            .map(|(status, n)| (status.as_str().to_owned(), n))
            .collect(),
        graph: builder.finish(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use execstore::{Effects, Execution, MemoryStore};
    use serde_json::json;

    fn step(kind: &str, from: Option<&str>, to: &str, guards: &[&str]) -> TraceStep {
        json!({"event_kind": kind, "event_data": {}, "from_path": from, "to_path": to,
               "actions": [], "guards": guards, "context_out": {}, "timestamp": 1.0})
        .as_object()
        .unwrap()
        .clone()
    }

    fn run(store: &MemoryStore, id: &str, def: &str, status: Status, steps: &[TraceStep]) {
        let mut exe = Execution::new(id, def);
        exe.status = status;
        exe.active_path = steps
            .last()
            .and_then(|s| s["to_path"].as_str())
            .map(str::to_owned);
        store.save(&mut exe).unwrap();
        for s in steps {
            store.commit(&mut exe, &Effects::new().trace(s.clone())).unwrap();
        }
    }

    fn order_steps() -> Vec<TraceStep> {
        vec![
            step("Start", None, "cart", &[]),
            step("AddItem", Some("cart"), "cart", &[]),
            step("Checkout", Some("cart"), "checkout.address", &["cart_not_empty"]),
            step("Next", Some("checkout.address"), "checkout.payment", &[]),
            step("Back", Some("checkout.payment"), "checkout.address", &[]),
            step("Next", Some("checkout.address"), "checkout.payment", &[]),
        ]
    }

    #[test]
    fn one_execution_shows_its_states_transitions_and_hierarchy() {
        let store = MemoryStore::new();
        run(&store, "o-1", "order", Status::Running, &order_steps());
        let g = execution_graph(&store, "o-1").unwrap();
        assert_eq!(g.active_path.as_deref(), Some("checkout.payment"));
        assert_eq!(g.first_index, Some(0));
        let paths: Vec<&str> = g.graph.states.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(
            paths,
            ["cart", "checkout", "checkout.address", "checkout.payment"]
        );
        let checkout = &g.graph.states[1];
        assert!(checkout.composite && !checkout.visited, "{checkout:?}");
        assert_eq!(checkout.now_within, 1);
        let payment = &g.graph.states[3];
        assert_eq!(
            (payment.parent.as_deref(), payment.depth, payment.entered),
            (Some("checkout"), 1, 2)
        );
        assert_eq!((payment.now, payment.now_by_status["RUNNING"]), (1, 1));
        let next = g
            .graph
            .transitions
            .iter()
            .find(|t| t.from.as_deref() == Some("checkout.address"))
            .unwrap();
        assert_eq!((next.count, next.events[0].name.as_str()), (2, "Next"));
        let start = &g.graph.transitions[0];
        assert_eq!(
            (start.from.as_deref(), start.to.as_deref(), start.count),
            (None, Some("cart"), 1)
        );
        let checkout_t = g
            .graph
            .transitions
            .iter()
            .find(|t| t.to.as_deref() == Some("checkout.address") && t.from.as_deref() == Some("cart"))
            .unwrap();
        assert_eq!(
            checkout_t.guards,
            [Counted {
                name: "cart_not_empty".into(),
                count: 1
            }]
        );
        let self_loop = g.graph.transitions.iter().find(|t| t.from == t.to).unwrap();
        assert_eq!(self_loop.events[0].name, "AddItem");
        assert_eq!(g.graph.steps, 6);
    }

    #[test]
    fn a_definition_adds_up_every_execution_and_where_each_sits() {
        let store = MemoryStore::new();
        let steps = order_steps();
        run(&store, "o-1", "order", Status::Running, &steps);
        run(&store, "o-2", "order", Status::Running, &steps[..3]);
        run(&store, "o-3", "order", Status::Failed, &steps[..3]);
        run(
            &store,
            "p-1",
            "other",
            Status::Running,
            &[step("Start", None, "elsewhere", &[])],
        );
        let g = definition_graph(&store, "order", 10).unwrap();
        assert_eq!((g.executions, g.traces_read), (3, 3));
        assert_eq!(g.by_status.get("FAILED"), Some(&1));
        let at = |p: &str| g.graph.states.iter().find(|s| s.path == p).unwrap();
        assert_eq!(at("checkout.address").now, 2);
        assert_eq!(at("checkout.address").now_by_status.get("FAILED"), Some(&1));
        assert_eq!(at("checkout").now_within, 3);
        assert!(g.graph.states.iter().all(|s| s.path != "elsewhere"));
        let start = g.graph.transitions.iter().find(|t| t.from.is_none()).unwrap();
        assert_eq!(start.count, 3);
        // Only the first trace read: the counts say so.
        let one = definition_graph(&store, "order", 1).unwrap();
        assert_eq!((one.executions, one.traces_read), (3, 1));
        assert_eq!(
            one.graph
                .transitions
                .iter()
                .find(|t| t.from.is_none())
                .unwrap()
                .count,
            1
        );
        assert!(matches!(
            definition_graph(&store, "nope", 10),
            Err(StoreError::NotFound { .. })
        ));
        assert!(matches!(
            definition_graph(&store, "order", MAX_TRACES + 1),
            Err(StoreError::InvalidInput { .. })
        ));
        assert!(matches!(
            execution_graph(&store, "nope"),
            Err(StoreError::NotFound { .. })
        ));
        assert!(matches!(
            execution_graph(&store, ""),
            Err(StoreError::InvalidInput { .. })
        ));
    }

    #[test]
    fn figures_draw_the_graph_the_steps_draw() {
        let store = MemoryStore::new();
        let steps = order_steps();
        run(&store, "o-1", "order", Status::Running, &steps);
        run(&store, "o-2", "order", Status::Failed, &steps[..3]);
        let odd = json!({"from_path": 5, "to_path": "cart", "event_kind": 7, "guards": ["g", 1, "g"]});
        run(
            &store,
            "o-3",
            "order",
            Status::Done,
            &[odd.as_object().unwrap().clone()],
        );
        let mut by_hand = GraphBuilder::new();
        for id in ["o-1", "o-2", "o-3"] {
            let exe = store.load(id).unwrap().unwrap();
            by_hand.add_trace(&store.read_trace(id).unwrap());
            by_hand.add_current(exe.active_path.as_deref(), exe.status);
        }
        let g = definition_graph(&store, "order", MAX_TRACES).unwrap();
        assert!(!g.maintained);
        assert_eq!(g.graph, by_hand.finish());
    }

    #[test]
    fn odd_steps_are_drawn_as_they_are_and_the_graph_stays_bounded() {
        let mut b = GraphBuilder::new();
        // Not a string, absent, a number as the event kind.
        b.add_step(
            json!({"from_path": 5, "to_path": "a", "event_kind": 7, "guards": "x"})
                .as_object()
                .unwrap(),
        );
        b.add_step(json!({}).as_object().unwrap());
        for i in 0..(MAX_STATES + 10) {
            b.add_step(
                json!({"from_path": "a", "to_path": format!("s{i}"), "event_kind": "E"})
                    .as_object()
                    .unwrap(),
            );
        }
        let g = b.finish();
        assert!(g.truncated);
        assert_eq!(g.states.len(), MAX_STATES);
        let first = g
            .transitions
            .iter()
            .find(|t| t.from.is_none() && t.to.as_deref() == Some("a"))
            .unwrap();
        assert_eq!(first.events[0].name, "7");
        assert!(g.transitions.iter().any(|t| t.from.is_none() && t.to.is_none()));
        let mut many = GraphBuilder::new();
        for i in 0..(MAX_LABELS + 5) {
            many.add_step(
                json!({"from_path": "a", "to_path": "b", "event_kind": format!("e{i:03}")})
                    .as_object()
                    .unwrap(),
            );
        }
        let t = &many.finish().transitions[0];
        assert_eq!(
            (t.events.len(), t.other_events, t.count),
            (MAX_LABELS, 5, (MAX_LABELS + 5) as u64)
        );
    }
}
