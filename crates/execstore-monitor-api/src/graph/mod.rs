//! The statechart pictures' data: an execution's graph and a definition's (see [`build`]),
//! built from the store's contract reads only.

pub mod build;

use crate::params::Params;
use crate::{ApiError, ApiResult, Call};
use build as graph;
use build::MAX_TRACES;

/// How many executions' traces a definition's graph reads when the request does not say (the
/// most recently updated): 2,000 traces of W1's 20 steps are read in about 0.1 s.
pub const DEFAULT_TRACES: usize = 2_000;

impl Call<'_> {
    /// `GET /api/executions/{id}/graph`: `{id, definition_id, status, active_path,
    /// first_index, graph: {states, transitions, steps, truncated}}`.
    pub(crate) fn execution_graph(&self, id: String) -> ApiResult {
        Params::new(self.request.query, &[], self.now)?;
        crate::params::check_id(&id)?;
        let g = graph::execution_graph(self.exec()?, &id)?;
        serde_json::to_value(&g).map_err(internal)
    }

    /// `GET /api/definitions/{id}/graph?traces=N`: `{definition_id, executions, traces_read,
    /// maintained, by_status, graph}`, every execution's current state and the traces of the
    /// `traces` most recently updated (default [`DEFAULT_TRACES`]).
    pub(crate) fn definition_graph(&self, definition: String) -> ApiResult {
        let params = Params::new(self.request.query, &["traces"], self.now)?;
        let traces = match params.get("traces") {
            None => DEFAULT_TRACES,
            Some(v) => v
                .parse::<usize>()
                .ok()
                .filter(|n| *n <= MAX_TRACES)
                .ok_or_else(|| {
                    ApiError::bad_request(format!("traces {v:?} is not a whole number in 0..={MAX_TRACES}"))
                })?,
        };
        execstore::kit::validate::check_id("definition", &definition)?;
        let g = graph::definition_graph(self.exec()?, &definition, traces)?;
        let mut answer = serde_json::to_value(&g).map_err(internal)?;
        if let Some(map) = answer.as_object_mut() {
            map.insert(
                "errors".into(),
                serde_json::to_value(self.unreadable()?).map_err(internal)?,
            );
        }
        Ok(answer)
    }
}

fn internal(e: serde_json::Error) -> ApiError {
    ApiError::internal(e.to_string())
}

#[cfg(test)]
mod tests {
    use crate::{ApiRequest, ApiResponse, MonitorApi};
    use execstore::{executions::Status, Effects, Execution, ExecutionStore, MemoryStore};
    use serde_json::{json, Map};

    fn get(store: &MemoryStore, target: &str) -> ApiResponse {
        MonitorApi::new(Map::new(), None).handle(store, &ApiRequest::from_target("GET", target, None), 0.0)
    }

    fn store() -> MemoryStore {
        let store = MemoryStore::new();
        for (id, path) in [("a/1", "s.x"), ("a/2", "s.y")] {
            let mut exe = Execution::new(id, "d <b>");
            exe.status = Status::Running;
            exe.active_path = Some(path.into());
            store.save(&mut exe).unwrap();
            let step = json!({"event_kind": "Go", "from_path": "s.x", "to_path": path, "guards": ["ok"]});
            store
                .commit(&mut exe, &Effects::new().trace(step.as_object().unwrap().clone()))
                .unwrap();
        }
        store
    }

    #[test]
    fn execution_graph_answers_and_refuses() {
        let store = store();
        let a = get(&store, "/api/executions/a%2F2/graph");
        assert_eq!(a.status, 200, "{:?}", a.body);
        assert_eq!(a.body["active_path"], "s.y");
        let states = a.body["graph"]["states"].as_array().unwrap();
        let paths: Vec<&str> = states.iter().map(|s| s["path"].as_str().unwrap()).collect();
        assert_eq!(paths, ["s", "s.x", "s.y"]);
        assert_eq!(states[2]["now"], 1);
        let t = &a.body["graph"]["transitions"][0];
        assert_eq!(
            (t["from"].as_str(), t["to"].as_str(), &t["count"]),
            (Some("s.x"), Some("s.y"), &json!(1))
        );
        assert_eq!(t["guards"][0], json!({"name": "ok", "count": 1}));
        assert_eq!(get(&store, "/api/executions/nope/graph").status, 404);
        assert_eq!(get(&store, "/api/executions/a%2F2/graph?x=1").status, 400);
        assert_eq!(get(&store, "/api/executions/%FF/graph").status, 400);
        let post = MonitorApi::new(Map::new(), None).handle(
            &store,
            &ApiRequest::from_target("POST", "/api/executions/a%2F2/graph", None),
            0.0,
        );
        assert_eq!(post.status, 405);
    }

    #[test]
    fn definition_graph_counts_every_execution() {
        let store = store();
        let d = get(&store, "/api/definitions/d%20%3Cb%3E/graph");
        assert_eq!(d.status, 200, "{:?}", d.body);
        assert_eq!(
            (
                &d.body["executions"],
                &d.body["traces_read"],
                &d.body["maintained"]
            ),
            (&json!(2), &json!(2), &json!(false))
        );
        let s = d.body["graph"]["states"].as_array().unwrap();
        assert_eq!(s[0]["path"], "s");
        assert_eq!(s[0]["now_within"], 2);
        let zero = get(&store, "/api/definitions/d%20%3Cb%3E/graph?traces=0");
        assert_eq!(zero.body["traces_read"], 0);
        assert_eq!(zero.body["graph"]["transitions"], json!([]));
        for bad in [
            "?traces=-1",
            "?traces=100001",
            "?traces=x",
            "?traces=1&traces=2",
            "?limit=3",
        ] {
            let r = get(&store, &format!("/api/definitions/d%20%3Cb%3E/graph{bad}"));
            assert_eq!(
                (r.status, r.body["error"]["code"].as_str()),
                (400, Some("BAD_REQUEST")),
                "{bad}"
            );
        }
        let none = get(&store, "/api/definitions/nope/graph");
        assert_eq!(
            (none.status, none.body["error"]["code"].as_str()),
            (404, Some("NOT_FOUND"))
        );
        assert_eq!(get(&store, "/api/definitions/nope").status, 404);
        assert_eq!(get(&store, "/api/definitions//graph").status, 404);
    }
}
