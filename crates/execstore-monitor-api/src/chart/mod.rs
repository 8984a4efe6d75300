//! The statechart drawn from a machine's stored definition (see [`build`]):
//! `GET /api/definitions/{id}/chart?fqn=` and `GET /api/executions/{id}/chart`. The
//! definition is the store's definition document of (id, fqn) (`put_definition`), else, for
//! a store written before those existed, the `definition` an execution's first trace step
//! (`xstate.init`, or `xstate.migrate` for a later version) holds. Without either the
//! answer's `chart` is null and a picture draws the trace graph (`/graph`) as before.

pub mod build;

use execstore::executions::{DefinitionDoc, ListOrder, ListQuery, TraceStep};
use execstore::ExecutionStore;
use serde_json::{json, Value};

use crate::graph::build as graph;
use crate::graph::DEFAULT_TRACES;
use crate::{ApiError, ApiResult, Call};
use build::{chart_of, is_xstate_definition, value_paths};

/// How many executions of a definition are looked through for a trace step holding the
/// definition when the store keeps no document of it.
const TRACE_LOOKUPS: usize = 20;

/// The definition a trace holds for the execution's current version: the last step with a
/// `definition` object (`xstate.init`, then each `xstate.migrate`).
fn definition_in_trace(steps: &[TraceStep]) -> Option<Value> {
    steps
        .iter()
        .rev()
        .filter_map(|s| s.get("definition"))
        .find(|d| is_xstate_definition(d))
        .cloned()
}

/// A definition found: the document, where it was found (`document` or `trace`), and the
/// document's first-seen time.
type Found = (Option<Value>, Option<&'static str>, Option<f64>);

/// The definition of `(id, fqn)`: the stored document, else one found in a trace.
fn find_definition(
    store: &dyn ExecutionStore,
    id: &str,
    fqn: Option<&str>,
    trace_of: Option<&str>,
) -> Result<Found, ApiError> {
    if let Some(fqn) = fqn {
        if let Some(DefinitionDoc {
            document, first_seen, ..
        }) = store.get_definition(id, fqn)?
        {
            return Ok((Some(document), Some("document"), Some(first_seen)));
        }
    }
    if let Some(exe) = trace_of {
        let found = definition_in_trace(&store.read_trace(exe)?);
        let source = found.as_ref().map(|_| "trace");
        return Ok((found, source, None));
    }
    let page = store.list_executions(
        &ListQuery::new()
            .definition(id)
            .order(ListOrder::UpdatedDesc)
            .limit(TRACE_LOOKUPS),
    )?;
    for summary in page.items {
        let Some(exe) = store.load(&summary.id)? else {
            continue;
        };
        if exe.definition_fqn.as_deref() != fqn {
            continue;
        }
        if let Some(found) = definition_in_trace(&store.read_trace(&exe.id)?) {
            return Ok((Some(found), Some("trace"), None));
        }
    }
    Ok((None, None, None))
}

fn to_value<T: serde::Serialize>(v: &T) -> ApiResult {
    serde_json::to_value(v).map_err(|e| ApiError::internal(e.to_string()))
}

impl Call<'_> {
    /// `GET /api/definitions/{id}/chart?fqn=F&traces=N`: `{definition_id, definition_fqn,
    /// source, first_seen, chart, graph}`; without `fqn`, the version of the execution
    /// updated last. `graph` is `/graph`'s answer (null when no execution is stored), and
    /// `chart.nodes[].now` and the edges' counts are its.
    pub(crate) fn definition_chart(&self, definition: String) -> ApiResult {
        let params = crate::params::Params::new(self.request.query, &["fqn", "traces"], self.now)?;
        execstore::kit::validate::check_id("definition", &definition)?;
        let traces = match params.get("traces") {
            None => DEFAULT_TRACES,
            Some(v) => v
                .parse::<usize>()
                .ok()
                .filter(|n| *n <= graph::MAX_TRACES)
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "traces {v:?} is not a whole number in 0..={}",
                        graph::MAX_TRACES
                    ))
                })?,
        };
        let store = self.exec()?;
        let fqn = match params.get("fqn") {
            Some(f) => {
                execstore::kit::validate::check_id("fqn", f)?;
                Some(f.to_owned())
            }
            None => {
                let latest = store.list_executions(
                    &ListQuery::new()
                        .definition(&definition)
                        .order(ListOrder::UpdatedDesc)
                        .limit(1),
                )?;
                match latest.items.first() {
                    Some(s) => store.load(&s.id)?.and_then(|e| e.definition_fqn),
                    None => None,
                }
            }
        };
        let (document, source, first_seen) = find_definition(store, &definition, fqn.as_deref(), None)?;
        // The trace graph: the counts, and the picture when there is no definition.
        let graph = match graph::definition_graph(store, &definition, traces) {
            Ok(g) => Some(g),
            Err(execstore::StoreError::NotFound { .. }) => None,
            Err(e) => return Err(e.into()),
        };
        let chart = document.filter(is_xstate_definition).map(|doc| {
            let mut chart = chart_of(&doc);
            if let Some(g) = &graph {
                chart.add_counts(&g.graph);
            }
            chart
        });
        if chart.is_none() && graph.is_none() {
            return Err(ApiError::not_found(format!(
                "no definition {definition:?} is stored"
            )));
        }
        let mut graph = graph.as_ref().map(to_value).transpose()?;
        if let Some(Value::Object(map)) = graph.as_mut() {
            map.insert("errors".into(), to_value(&self.unreadable()?)?);
        }
        Ok(json!({
            "definition_id": definition,
            "definition_fqn": fqn,
            "source": if chart.is_some() { source } else { None },
            "first_seen": first_seen,
            "chart": chart.as_ref().map(to_value).transpose()?,
            "graph": graph,
        }))
    }

    /// `GET /api/executions/{id}/chart`: `{id, definition_id, definition_fqn, source,
    /// first_seen, active_path, active, chart, graph}`: its definition's chart, the states it
    /// is in marked `active` (every state of its XState value, `active` lists their paths),
    /// the edges counted over its own trace; `graph` is `/graph`'s answer.
    pub(crate) fn execution_chart(&self, id: String) -> ApiResult {
        crate::params::Params::new(self.request.query, &[], self.now)?;
        crate::params::check_id(&id)?;
        let store = self.exec()?;
        let exe = store
            .load(&id)?
            .ok_or_else(|| ApiError::not_found(format!("no execution {id:?}")))?;
        let (document, source, first_seen) =
            find_definition(store, &exe.definition_id, exe.definition_fqn.as_deref(), None)?;
        let (document, source) = match document {
            Some(d) => (Some(d), source),
            None => {
                let (d, s, _) = find_definition(store, &exe.definition_id, None, Some(&exe.id))?;
                (d, s)
            }
        };
        let value = exe
            .context
            .get("$xstate")
            .and_then(|x| x.get("snapshot"))
            .and_then(|s| s.get("value"));
        let mut active = value.map(value_paths).unwrap_or_default();
        if active.is_empty() {
            if let Some(p) = exe.active_path.as_deref() {
                let mut at = String::new();
                for part in p.split('.') {
                    if !at.is_empty() {
                        at.push('.');
                    }
                    at.push_str(part);
                    active.push(at.clone());
                }
            }
        }
        let graph = graph::execution_graph(store, &id)?;
        let chart = document.filter(is_xstate_definition).map(|doc| {
            let mut chart = chart_of(&doc);
            chart.add_counts(&graph.graph);
            for node in &mut chart.nodes {
                node.active = false;
            }
            chart.mark_active(&active);
            chart
        });
        Ok(json!({
            "id": exe.id,
            "definition_id": exe.definition_id,
            "definition_fqn": exe.definition_fqn,
            "source": if chart.is_some() { source } else { None },
            "first_seen": first_seen,
            "active_path": exe.active_path,
            "active": active,
            "chart": chart.as_ref().map(to_value).transpose()?,
            "graph": to_value(&graph)?,
        }))
    }
}

#[cfg(test)]
mod tests;
