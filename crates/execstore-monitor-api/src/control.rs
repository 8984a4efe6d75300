//! The control endpoints (writes, behind the token): `POST
//! /api/executions/{id}/{suspend|resume|terminate|purge}[?expected_version=V]`, harel 0.9's
//! control plane through [`execstore::control`], with the monitor's clock.
//!
//! `expected_version` is the version the page showed: if the execution moved since, the
//! answer is 409 `CONFLICT` and nothing changes, so the UI can explain and refresh. A silent
//! no-op of harel's (suspending a DONE execution) answers 200 with `changed: []`; an unknown
//! id is 404; a refused purge (a child, a live tree) is 400 `INVALID_INPUT` with harel's
//! reason.

use execstore::control::{self, Command};
use serde_json::json;

use crate::params::{check_id, Params};
use crate::{ApiError, ApiResult, Call};

/// The actions an execution's page offers.
pub(crate) const ACTIONS: [&str; 4] = ["suspend", "resume", "terminate", "purge"];

impl Call<'_> {
    /// `POST /api/executions/{id}/{action}`.
    pub(crate) fn control(&self, id: String, action: &str) -> ApiResult {
        self.api.authorize(self.request.authorization)?;
        check_id(&id)?;
        let params = Params::new(self.request.query, &["expected_version"], self.now)?;
        let expected = params.seq("expected_version")?;
        let store = self.exec()?;
        let command = match action {
            "suspend" => Command::Suspend,
            "resume" => Command::Resume,
            "terminate" => Command::Terminate,
            "purge" => {
                let outcome = control::purge(store, &id, expected, None)?;
                return Ok(json!({
                    "action": "purge",
                    "id": id,
                    "purged": outcome.root_id,
                    "removed": outcome.removed,
                    "swept": outcome.swept,
                }));
            }
            other => return Err(ApiError::not_found(format!("no action {other:?}"))),
        };
        let outcome = control::run(store, command, &id, expected, self.now)?;
        Ok(json!({"action": action, "id": id, "changed": outcome.changed}))
    }
}

#[cfg(test)]
mod tests {
    use execstore::{ChildState, Execution, ExecutionStore, MemoryStore, Status};
    use serde_json::{json, Map, Value};

    use crate::{ApiRequest, ApiResponse, MonitorApi};

    const NOW: f64 = 1_800_000_000.0;

    fn store() -> MemoryStore {
        let store = MemoryStore::new();
        let put = |id: &str, status: Status, parent: Option<&str>, kids: &[&str]| {
            let mut exe = Execution::new(id, "d");
            exe.status = status;
            exe.parent_id = parent.map(str::to_owned);
            for k in kids {
                exe.children
                    .insert((*k).to_owned(), ChildState::region("d.r", "r"));
            }
            store.save(&mut exe).unwrap();
        };
        put("r", Status::Running, None, &["r:a"]);
        put("r:a", Status::Running, Some("r"), &[]);
        put("done", Status::Done, None, &[]);
        store
    }

    fn call(
        api: &MonitorApi,
        store: &MemoryStore,
        method: &str,
        target: &str,
        auth: Option<&str>,
    ) -> ApiResponse {
        api.handle(store, &ApiRequest::from_target(method, target, auth), NOW)
    }

    fn status(store: &MemoryStore, id: &str) -> Option<Status> {
        store.load(id).unwrap().map(|e| e.status)
    }

    fn code(r: &ApiResponse) -> &Value {
        &r.body["error"]["code"]
    }

    #[test]
    fn control_needs_the_token_and_post() {
        let store = store();
        let read_only = MonitorApi::new(Map::new(), None);
        let r = call(&read_only, &store, "POST", "/api/executions/r/suspend", None);
        assert_eq!((r.status, code(&r)), (403, &json!("READ_ONLY")));
        let api = MonitorApi::new(Map::new(), Some("tok"));
        let r = call(&api, &store, "POST", "/api/executions/r/terminate", None);
        assert_eq!((r.status, code(&r)), (401, &json!("UNAUTHORIZED")));
        let r = call(
            &api,
            &store,
            "POST",
            "/api/executions/r/terminate",
            Some("Bearer nope"),
        );
        assert_eq!(r.status, 401);
        let r = call(
            &api,
            &store,
            "GET",
            "/api/executions/r/terminate",
            Some("Bearer tok"),
        );
        assert_eq!(r.status, 405);
        let r = call(
            &api,
            &store,
            "POST",
            "/api/executions/r/explode",
            Some("Bearer tok"),
        );
        assert_eq!(r.status, 404);
        assert_eq!(status(&store, "r"), Some(Status::Running), "nothing changed");
    }

    #[test]
    fn actions_conflicts_and_refusals() {
        let store = store();
        let api = MonitorApi::new(Map::new(), Some("tok"));
        let auth = Some("Bearer tok");
        let r = call(
            &api,
            &store,
            "POST",
            "/api/executions/r/suspend?expected_version=1",
            auth,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["changed"].as_array().map(Vec::len), Some(2));
        assert_eq!(status(&store, "r:a"), Some(Status::Suspended));
        assert_eq!(
            store.load("r").unwrap().unwrap().updated_at,
            Some(NOW),
            "the monitor's clock"
        );

        let r = call(
            &api,
            &store,
            "POST",
            "/api/executions/r/resume?expected_version=1",
            auth,
        );
        assert_eq!((r.status, code(&r)), (409, &json!("CONFLICT")), "{}", r.body);
        assert_eq!(
            status(&store, "r"),
            Some(Status::Suspended),
            "a conflict changes nothing"
        );
        let r = call(&api, &store, "POST", "/api/executions/done/suspend", auth);
        assert_eq!(
            (r.status, &r.body["changed"]),
            (200, &json!([])),
            "harel's silent no-op"
        );
        let r = call(&api, &store, "POST", "/api/executions/nope/terminate", auth);
        assert_eq!((r.status, code(&r)), (404, &json!("NOT_FOUND")));
        let r = call(&api, &store, "POST", "/api/executions/r/purge", auth);
        assert_eq!((r.status, code(&r)), (400, &json!("INVALID_INPUT")));
        assert!(r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("purge refused: not finished"));
        let r = call(&api, &store, "POST", "/api/executions/r%3Aa/purge", auth);
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("is a child of"),
            "{}",
            r.body
        );
        let r = call(
            &api,
            &store,
            "POST",
            "/api/executions/r/purge?expected_version=x",
            auth,
        );
        assert_eq!(r.status, 400);

        let r = call(&api, &store, "POST", "/api/executions/r/terminate", auth);
        assert_eq!(r.status, 200);
        let r = call(&api, &store, "POST", "/api/executions/r/purge", auth);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["removed"], json!(["r:a", "r"]));
        assert_eq!(status(&store, "r"), None);
    }
}
