//! The figures a definition's graph is drawn from ([`crate::ExecutionStore::graph_figures`]): how
//! many of its executions sit at each active path with each status, and how many stored trace
//! steps went from one state to another on each event (with the guards recorded on them).
//!
//! Values are kept as the trace step holds them (`from_path`, `to_path`, `event_kind`, each
//! `guards` item as its JSON value, `None` when the key is absent): what a value shows as is
//! the graph's business (the monitor's `graph` module), so a backend that keeps the figures up
//! to date and one that scans answer the same.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::executions::paging::{execution_pages, PagedReads};
use crate::executions::{ListOrder, ListQuery, Status, TraceStep};
use crate::kit::validate::MAX_PAGE;
use crate::{Result, StoreError};

/// How many executions of a definition sit at one active path with one status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NowFigure {
    /// The active path (`None`: the execution has none).
    pub active_path: Option<String>,
    /// Their status.
    pub status: Status,
    /// How many.
    pub n: u64,
}

/// How many stored trace steps went from one state to another on one event.
#[derive(Clone, Debug, PartialEq)]
pub struct StepFigure {
    /// The step's `from_path` value (`None`: absent).
    pub from: Option<Value>,
    /// The step's `to_path` value (`None`: absent).
    pub to: Option<Value>,
    /// The step's `event_kind` value (`None`: absent).
    pub event: Option<Value>,
    /// How many steps.
    pub n: u64,
}

/// How many times one guard was recorded on the stored steps from one state to another
/// (each item of a step's `guards` array counts once).
#[derive(Clone, Debug, PartialEq)]
pub struct GuardFigure {
    /// The steps' `from_path` value (`None`: absent).
    pub from: Option<Value>,
    /// The steps' `to_path` value (`None`: absent).
    pub to: Option<Value>,
    /// The guard, as the array holds it.
    pub guard: Value,
    /// How many times.
    pub n: u64,
}

/// What a definition's graph is drawn from. Lists are sorted (by their values' JSON text)
/// and hold no zero.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GraphFigures {
    /// How many executions the definition has (readable ones: those a listing shows).
    pub executions: u64,
    /// How many of them had their trace counted in `steps` and `guards`.
    pub traces_read: u64,
    /// Whether where the executions sit (`now`, `executions`) was kept up to date by the
    /// store's writes (figures kept by triggers, or an index every write keeps, read without
    /// the documents), rather than counted by reading every execution now. The steps and
    /// guards are read from the traces of the `traces_read` most recently updated
    /// executions either way.
    pub maintained: bool,
    /// Where the executions sit now.
    pub now: Vec<NowFigure>,
    /// The steps of the traces counted.
    pub steps: Vec<StepFigure>,
    /// The guards of the traces counted.
    pub guards: Vec<GuardFigure>,
}

impl GraphFigures {
    /// The executions per status (the statuses present only).
    pub fn by_status(&self) -> BTreeMap<Status, u64> {
        let mut out = BTreeMap::new();
        for f in &self.now {
            *out.entry(f.status).or_default() += f.n;
        }
        out
    }
}

/// A value's sort key and identity: its JSON text (`""` for absent).
fn key(value: Option<&Value>) -> String {
    value.map(Value::to_string).unwrap_or_default()
}

/// A figure's three values as JSON text (its key; `""` for absent).
type TextKey = (String, String, String);

/// Adds up figures keyed by JSON text; the sum of the figures [`graph_figures_by_scan`] and
/// a backend's stored rows both go through it.
#[derive(Default)]
pub struct FiguresTally {
    now: BTreeMap<(Option<String>, Status), u64>,
    steps: BTreeMap<TextKey, (StepFigure, i64)>,
    guards: BTreeMap<TextKey, (GuardFigure, i64)>,
}

impl FiguresTally {
    /// An empty tally.
    pub fn new() -> Self {
        FiguresTally::default()
    }

    /// Adds `n` executions at `active_path` with `status`.
    pub fn add_now(&mut self, active_path: Option<String>, status: Status, n: u64) {
        *self.now.entry((active_path, status)).or_default() += n;
    }

    /// Adds `n` steps (negative: removes them).
    pub fn add_step(&mut self, from: Option<Value>, to: Option<Value>, event: Option<Value>, n: i64) {
        let k = (key(from.as_ref()), key(to.as_ref()), key(event.as_ref()));
        self.steps
            .entry(k)
            .or_insert((
                StepFigure {
                    from,
                    to,
                    event,
                    n: 0,
                },
                0,
            ))
            .1 += n;
    }

    /// Adds `n` occurrences of `guard` on the steps from `from` to `to`.
    pub fn add_guard(&mut self, from: Option<Value>, to: Option<Value>, guard: Value, n: i64) {
        let k = (key(from.as_ref()), key(to.as_ref()), guard.to_string());
        self.guards
            .entry(k)
            .or_insert((
                GuardFigure {
                    from,
                    to,
                    guard,
                    n: 0,
                },
                0,
            ))
            .1 += n;
    }

    /// Adds one trace step: its ends, its event and its guards.
    pub fn add_trace_step(&mut self, step: &TraceStep) {
        let from = step.get("from_path").cloned();
        let to = step.get("to_path").cloned();
        if let Some(Value::Array(guards)) = step.get("guards") {
            for g in guards {
                self.add_guard(from.clone(), to.clone(), g.clone(), 1);
            }
        }
        self.add_step(from, to, step.get("event_kind").cloned(), 1);
    }

    /// Adds one row of where executions sit as the SQL backends read it: `n` executions at
    /// the active path whose JSON text is `path` (`""` when absent) with the stored status
    /// `status` (`""` reads as PENDING).
    pub fn add_stored_now(&mut self, path: &str, status: &str, n: i64) -> Result<()> {
        let status = match status {
            "" => Status::Pending,
            s => s.parse::<Status>().map_err(|e| StoreError::Corrupt {
                what: "a graph figure's status".into(),
                reason: e.to_string(),
            })?,
        };
        let active_path = match json_of(path) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        self.add_now(active_path, status, u64::try_from(n).unwrap_or(0));
        Ok(())
    }

    /// The figures of a backend that keeps where executions sit (`maintained`), with the
    /// steps of `traces_read` traces added ([`add_recent_traces`]). `NotFound` if
    /// `definition` has no execution.
    pub fn maintained_figures(self, definition: &str, traces_read: u64) -> Result<GraphFigures> {
        let figures = self.finish(traces_read, true);
        if figures.executions == 0 {
            return Err(StoreError::NotFound {
                what: "definition",
                key: definition.to_owned(),
            });
        }
        Ok(figures)
    }

    /// The figures (zeros and negatives left out).
    pub fn finish(self, traces_read: u64, maintained: bool) -> GraphFigures {
        let now: Vec<NowFigure> = self
            .now
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|((active_path, status), n)| NowFigure {
                active_path,
                status,
                n,
            })
            .collect();
        let positive = |n: i64| u64::try_from(n).ok().filter(|n| *n > 0);
        GraphFigures {
            executions: now.iter().map(|f| f.n).sum(),
            traces_read,
            maintained,
            now,
            steps: self
                .steps
                .into_values()
                .filter_map(|(f, n)| Some(StepFigure { n: positive(n)?, ..f }))
                .collect(),
            guards: self
                .guards
                .into_values()
                .filter_map(|(f, n)| Some(GuardFigure { n: positive(n)?, ..f }))
                .collect(),
        }
    }
}

/// A stored value: its JSON text, `""` for absent. A SQL backend reads `NaN` and `Infinity`
/// (which Python's `json.dumps` writes) as `null` (SQLite may write `Infinity` back as
/// `9e999`, which no `Value` holds: kept as that text), so a label that is itself a
/// non-finite number shows so where a scan shows `NaN`; anything else shows as a scan
/// shows it.
fn json_of(text: &str) -> Option<Value> {
    if text.is_empty() {
        return None;
    }
    Some(crate::kit::pyjson::loads_exact(text).unwrap_or_else(|_| Value::String(text.to_owned())))
}

/// Reads the traces of some executions, answering their steps in any order (an execution
/// purged since it was listed has none): what [`add_recent_traces_by`] counts. A backend that
/// reads many traces in one statement gives its own; [`add_recent_traces`] reads one trace
/// at a time through [`PagedReads::trace_of`].
pub type TracesOf<'a> = dyn FnMut(&[String]) -> Result<Vec<TraceStep>> + 'a;

/// Adds to `tally` the steps of the traces of the `max_traces` most recently updated
/// executions of `definition` (the listing's first in [`ListOrder::UpdatedDesc`]), and
/// answers how many traces it read. Every backend reads the steps so: their figures are not
/// kept (a step's would cost every write a sixth of its time on PostgreSQL; see
/// docs/scale.md), so they are a sample, of what happened lately, when the definition has
/// more executions than `max_traces`.
pub fn add_recent_traces<S: PagedReads + ?Sized>(
    store: &S,
    definition: &str,
    max_traces: usize,
    tally: &mut FiguresTally,
) -> Result<u64> {
    add_recent_traces_by(store, definition, max_traces, tally, &mut |ids| {
        let mut steps = Vec::new();
        for id in ids {
            match store.trace_of(id) {
                Ok(trace) => steps.extend(trace),
                Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(steps)
    })
}

/// How many executions' traces [`add_recent_traces_by`] asks `traces` for at a time: what one
/// call holds parsed is this many traces (W1's are 20 steps each), not a page's. A page of
/// 1,000 in one statement took the PostgreSQL monitor serving the graph to 123 MiB.
pub const TRACES_AT_A_TIME: usize = 50;

/// [`add_recent_traces`], the traces read by `traces`, [`TRACES_AT_A_TIME`] executions' at a
/// time.
pub fn add_recent_traces_by<S: PagedReads + ?Sized>(
    store: &S,
    definition: &str,
    max_traces: usize,
    tally: &mut FiguresTally,
    traces: &mut TracesOf<'_>,
) -> Result<u64> {
    let mut traces_read = 0usize;
    if max_traces == 0 {
        return Ok(0);
    }
    let query = ListQuery::new()
        .definition(definition)
        .order(ListOrder::UpdatedDesc)
        .limit(max_traces.min(MAX_PAGE));
    for page in execution_pages(store, query) {
        let ids: Vec<String> = page?
            .items
            .into_iter()
            .take(max_traces - traces_read)
            .map(|s| s.id)
            .collect();
        for chunk in ids.chunks(TRACES_AT_A_TIME) {
            traces(chunk)?.iter().for_each(|step| tally.add_trace_step(step));
        }
        traces_read += ids.len();
        if traces_read >= max_traces {
            break;
        }
    }
    Ok(traces_read as u64)
}

/// The figures of `definition` counted by reading: where every execution of it sits (through
/// the listing), and the traces of the `max_traces` most recently updated
/// ([`add_recent_traces`]). `NotFound` if the definition has no executions. What
/// [`crate::ExecutionStore::graph_figures`] does by default.
pub fn graph_figures_by_scan<S: PagedReads + ?Sized>(
    store: &S,
    definition: &str,
    max_traces: usize,
) -> Result<GraphFigures> {
    crate::kit::validate::check_id("definition", definition)?;
    let mut tally = FiguresTally::new();
    let query = ListQuery::new().definition(definition).limit(MAX_PAGE);
    for page in execution_pages(store, query) {
        for summary in page?.items {
            tally.add_now(summary.active_path.clone(), summary.status, 1);
        }
    }
    let traces_read = add_recent_traces(store, definition, max_traces, &mut tally)?;
    let figures = tally.finish(traces_read, false);
    if figures.executions == 0 {
        return Err(StoreError::NotFound {
            what: "definition",
            key: definition.to_owned(),
        });
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Effects, Execution, ExecutionStore, MemoryStore};
    use serde_json::json;

    /// The traces are asked for `TRACES_AT_A_TIME` executions at a time, never a page's (what
    /// one call holds parsed), the most recently updated first, and no more than `max_traces`.
    #[test]
    fn recent_traces_are_read_a_bounded_number_at_a_time() {
        let store = MemoryStore::new();
        for i in 0..130 {
            let mut exe = Execution::new(format!("e{i:03}"), "d");
            exe.updated_at = Some(f64::from(i));
            store.save(&mut exe).unwrap();
        }
        let mut calls: Vec<Vec<String>> = Vec::new();
        let mut tally = FiguresTally::new();
        let read = add_recent_traces_by(&store, "d", 120, &mut tally, &mut |ids| {
            calls.push(ids.to_vec());
            Ok(Vec::new())
        })
        .unwrap();
        assert_eq!(read, 120);
        let sizes: Vec<usize> = calls.iter().map(Vec::len).collect();
        assert_eq!(sizes, [TRACES_AT_A_TIME, TRACES_AT_A_TIME, 20]);
        assert_eq!(calls[0][0], "e129", "the most recently updated first");
        assert_eq!(calls[2][19], "e010");
    }

    #[test]
    fn scan_adds_up_steps_guards_and_where_executions_sit() {
        let store = MemoryStore::new();
        for (id, path) in [("a", "s.x"), ("b", "s.x"), ("c", "s.y")] {
            let mut exe = Execution::new(id, "d");
            exe.active_path = Some(path.into());
            store.save(&mut exe).unwrap();
            let step = json!({"event_kind": "Go", "from_path": null, "to_path": path, "guards": ["g", "g"]});
            store
                .commit(&mut exe, &Effects::new().trace(step.as_object().unwrap().clone()))
                .unwrap();
        }
        let f = graph_figures_by_scan(&store, "d", 10).unwrap();
        assert_eq!((f.executions, f.traces_read, f.maintained), (3, 3, false));
        assert_eq!(f.now[0].active_path.as_deref(), Some("s.x"));
        assert_eq!(f.now[0].n, 2);
        assert_eq!(f.steps.len(), 2);
        assert_eq!(f.steps[0].from, Some(Value::Null));
        let g: u64 = f.guards.iter().map(|g| g.n).sum();
        assert_eq!(g, 6);
        assert_eq!(graph_figures_by_scan(&store, "d", 1).unwrap().traces_read, 1);
        assert!(matches!(
            graph_figures_by_scan(&store, "nope", 1),
            Err(StoreError::NotFound { .. })
        ));
    }
}
