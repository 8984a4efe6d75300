//! The API's one route table: each endpoint is a row of (method, pattern, handler), matched
//! once by [`Call::route`]. A new endpoint is a row here and its handler.
//!
//! A pattern is the path with `{name}` for a path parameter: one whole, non-empty segment,
//! as in the native router, handed to the handler still percent-encoded (handlers decode
//! what they use, so a bad encoding is a 400 after the method was checked). A path that no
//! row's pattern matches is a 404; one that some rows match, none with the request's method,
//! is a 405 naming the methods those rows answer (`HEAD` is answered as `GET`).
//!
//! Every row whose method is not `GET` is a write: it is answered through the one write path
//! (`writes.rs`: token, role, `reason`, audit), never by its handler alone.

use crate::{decode, decode_lossy, ApiError, ApiResult, Call};

/// What answers a matched row: the call, and the pattern's path parameters in order.
pub(crate) type Handler = for<'c, 'a> fn(&'c Call<'a>, &[&str]) -> ApiResult;

/// One endpoint.
pub(crate) struct Endpoint {
    /// The method it answers (`GET` also answers `HEAD`).
    pub(crate) method: &'static str,
    /// The path, `{name}` standing for a path parameter.
    pub(crate) pattern: &'static str,
    /// What answers it.
    pub(crate) handler: Handler,
}

const fn row(method: &'static str, pattern: &'static str, handler: Handler) -> Endpoint {
    Endpoint {
        method,
        pattern,
        handler,
    }
}

/// Every endpoint of the API (the native server adds the workspace tail's event stream,
/// `/api/workspaces/{tenant}/{workspace}/stream`, which needs a live connection).
#[rustfmt::skip]
pub(crate) const ROUTES: &[Endpoint] = &[
    row("GET", "/api/info", |c, _| Ok(c.info())),
    row("GET", "/api/changes", |c, _| c.changes()),
    row("GET", "/api/counts", |c, _| c.counts()),
    row("GET", "/api/metrics", |c, _| c.metrics()),
    // Executions
    row("GET", "/api/executions", |c, _| c.executions()),
    row("GET", "/api/executions/{id}", |c, a| c.execution(decode(a[0])?)),
    row("GET", "/api/executions/{id}/trace", |c, a| c.trace(decode(a[0])?)),
    row("GET", "/api/executions/{id}/pending", |c, a| c.pending(decode(a[0])?)),
    row("GET", "/api/executions/{id}/bundle", |c, a| c.bundle(decode(a[0])?)),
    row("GET", "/api/executions/{id}/graph", |c, a| c.execution_graph(decode(a[0])?)),
    row("GET", "/api/definitions/{id}/graph", |c, a| c.definition_graph(decode(a[0])?)),
    row("GET", "/api/executions/{id}/chart", |c, a| c.execution_chart(decode(a[0])?)),
    row("GET", "/api/definitions/{id}/chart", |c, a| c.definition_chart(decode(a[0])?)),
    row("GET", "/api/executions/{id}/audit", |c, a| c.execution_audit(decode(a[0])?)),
    // Search (search.rs): attributes and the where box's suggestions.
    row("GET", "/api/attributes", |c, _| c.attributes()),
    row("POST", "/api/attributes", |c, _| c.attribute_write(false)),
    row("POST", "/api/attributes/drop", |c, _| c.attribute_write(true)),
    row("GET", "/api/suggest", |c, _| c.suggest()),
    // Control (control.rs): one action on one execution, or on many.
    row("POST", "/api/executions/{id}/suspend", |c, a| c.control(decode(a[0])?, "suspend")),
    row("POST", "/api/executions/{id}/resume", |c, a| c.control(decode(a[0])?, "resume")),
    row("POST", "/api/executions/{id}/terminate", |c, a| c.control(decode(a[0])?, "terminate")),
    row("POST", "/api/executions/{id}/purge", |c, a| c.control(decode(a[0])?, "purge")),
    row("POST", "/api/control/suspend", |c, _| c.bulk_control("suspend")),
    row("POST", "/api/control/resume", |c, _| c.bulk_control("resume")),
    row("POST", "/api/control/terminate", |c, _| c.bulk_control("terminate")),
    row("POST", "/api/control/purge", |c, _| c.bulk_control("purge")),
    row("POST", "/api/control/suspend/matching", |c, _| c.bulk_matching("suspend")),
    row("POST", "/api/control/resume/matching", |c, _| c.bulk_matching("resume")),
    row("POST", "/api/control/terminate/matching", |c, _| c.bulk_matching("terminate")),
    row("POST", "/api/control/purge/matching", |c, _| c.bulk_matching("purge")),
    // ... and how many that would be (a read: the count the UI shows before it asks why)
    row("GET", "/api/control/suspend/matching", |c, _| c.bulk_matching("suspend")),
    row("GET", "/api/control/resume/matching", |c, _| c.bulk_matching("resume")),
    row("GET", "/api/control/terminate/matching", |c, _| c.bulk_matching("terminate")),
    row("GET", "/api/control/purge/matching", |c, _| c.bulk_matching("purge")),
    // Recover (recover.rs): an event through the outbox, harel's retry of a FAILED one.
    row("POST", "/api/executions/{id}/send", |c, a| c.send(decode(a[0])?)),
    row("POST", "/api/executions/{id}/retry", |c, a| c.retry(decode(a[0])?)),
    row("GET", "/api/executions/{id}/retry-targets", |c, a| c.retry_targets(decode(a[0])?)),
    // The store's queues
    row("GET", "/api/outbox", |c, _| c.outbox()),
    row("POST", "/api/outbox/{seq}/ack", |c, a| c.ack_outbox(a[0])),
    row("GET", "/api/spawns", |c, _| c.spawns()),
    row("POST", "/api/spawns/{seq}/ack", |c, a| c.ack_spawn(a[0])),
    row("GET", "/api/timers", |c, _| c.timers()),
    row("DELETE", "/api/timers", |c, _| c.delete_timer()),
    // The operator's records (operator.rs): the audit log, the team's saved views
    row("GET", "/api/audit", |c, _| c.audit()),
    row("GET", "/api/views", |c, _| c.views()),
    row("PUT", "/api/views/{name}", |c, a| c.put_view(a[0])),
    row("DELETE", "/api/views/{name}", |c, a| c.delete_view(a[0])),
    // The workspace log (workspaces/): {t} a tenant, {w} one of its workspaces
    row("GET", "/api/due-runs", |c, _| c.due_runs()),
    row("GET", "/api/workspaces", |c, _| c.workspaces()),
    row("GET", "/api/workspaces/{t}/{w}", |c, a| c.workspace_info(a[0], a[1])),
    row("GET", "/api/workspaces/{t}/{w}/log", |c, a| c.log(a[0], a[1])),
    row("GET", "/api/workspaces/{t}/{w}/envelopes/{id}", |c, a| c.envelope(a[0], a[1], a[2])),
    row("GET", "/api/workspaces/{t}/{w}/runs", |c, a| c.runs(a[0], a[1])),
    row("GET", "/api/workspaces/{t}/{w}/suggest", |c, a| c.ws_suggest(a[0], a[1])),
    row("GET", "/api/workspaces/{t}/{w}/dead-letters", |c, a| c.dead_letters(a[0], a[1])),
    row("GET", "/api/workspaces/{t}/{w}/leases", |c, a| c.leases(a[0], a[1])),
    row("GET", "/api/workspaces/{t}/{w}/cursors", |c, a| c.cursors(a[0], a[1])),
    row("GET", "/api/workspaces/{t}/{w}/rules", |c, a| c.rules(a[0], a[1])),
    row("GET", "/api/workspaces/{t}/{w}/rules/{name}/history", |c, a| c.rule_history(a[0], a[1], a[2])),
    // Workspace recovery (workspaces/recover.rs)
    row("POST", "/api/workspaces/{t}/{w}/runs/retry-dead", |c, a| c.retry_dead_runs(a[0], a[1])),
    row("POST", "/api/workspaces/{t}/{w}/runs/{id}/retry", |c, a| c.retry_run(a[0], a[1], a[2])),
    row("POST", "/api/workspaces/{t}/{w}/dead-letters/replay", |c, a| c.replay_dead_letter(a[0], a[1])),
    row("POST", "/api/workspaces/{t}/{w}/dead-letters/replay-all", |c, a| c.replay_dead_letters(a[0], a[1])),
    row("POST", "/api/workspaces/{t}/{w}/leases/{key}/release", |c, a| c.release_lease(a[0], a[1], a[2])),
    row("POST", "/api/workspaces/{t}/{w}/rules/{name}/pause", |c, a| c.set_rule_enabled(a[0], a[1], a[2], false)),
    row("POST", "/api/workspaces/{t}/{w}/rules/{name}/resume", |c, a| c.set_rule_enabled(a[0], a[1], a[2], true)),
];

/// `{action: role}` for every write of the table (`/api/info`'s `actions`).
pub(crate) fn write_roles() -> serde_json::Value {
    let map: serde_json::Map<String, serde_json::Value> = ROUTES
        .iter()
        .filter(|e| e.method != "GET")
        .map(|e| {
            (
                crate::writes::action_name(e),
                crate::writes::required_role(e).as_str().into(),
            )
        })
        .collect();
    serde_json::Value::Object(map)
}

/// The path parameters of `path` if `pattern` matches it (both split on `/`).
fn matches<'p>(pattern: &str, path: &'p str) -> Option<Vec<&'p str>> {
    let mut args = Vec::new();
    let mut want = pattern.split('/');
    let mut got = path.split('/');
    loop {
        match (want.next(), got.next()) {
            (None, None) => return Some(args),
            (Some(w), Some(g)) if w.starts_with('{') => {
                if g.is_empty() {
                    return None;
                }
                args.push(g);
            }
            (Some(w), Some(g)) if w == g => {}
            _ => return None,
        }
    }
}

impl Call<'_> {
    /// Answers the request by the row of [`ROUTES`] its method and path match.
    pub(crate) fn route(&self) -> ApiResult {
        let path = self.request.path;
        let method = match self.request.method {
            "HEAD" => "GET",
            m => m,
        };
        let mut allowed: Vec<&str> = Vec::new();
        for endpoint in ROUTES {
            let Some(args) = matches(endpoint.pattern, path) else {
                continue;
            };
            if endpoint.method == method {
                if method == "GET" {
                    return (endpoint.handler)(self, &args);
                }
                return self.write(endpoint, &args);
            }
            allowed.push(endpoint.method);
        }
        if allowed.is_empty() {
            return Err(ApiError::not_found(format!(
                "no endpoint {} (see README.md, \"Monitor\")",
                decode_lossy(path)
            )));
        }
        Err(ApiError::new(
            405,
            "METHOD_NOT_ALLOWED",
            format!(
                "{} answers {} only, not {}",
                decode_lossy(path),
                allowed.join(" and "),
                self.request.method
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Arc;

    use execstore::workspace::{ManualClock, MemoryWorkspaceStorage, Timestamp};
    use execstore::MemoryStore;
    use serde_json::{Map, Value};

    use super::*;
    use crate::{ApiRequest, ApiResponse, MonitorApi, Stores};

    /// A row's pattern as a concrete path: each parameter a plausible value.
    fn concrete(pattern: &str) -> String {
        pattern
            .split('/')
            .map(|s| match s {
                "{seq}" => "1",
                s if s.starts_with('{') => "x",
                s => s,
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    fn answer(method: &str, path: &str) -> ApiResponse {
        let store = MemoryStore::new();
        let clock = Arc::new(ManualClock::new(
            Timestamp::from_micros(1_767_268_800_000_000).unwrap(),
        ));
        let log = MemoryWorkspaceStorage::new(clock);
        let api = MonitorApi::new(Map::new(), Some("s3cret"));
        let stores = Stores {
            executions: Some(&store),
            workspaces: Some(&log),
        };
        let request = ApiRequest::from_target(method, path, Some("Bearer s3cret"))
            .with_body(b"{\"targets\": [], \"query\": \"a=1\", \"reason\": \"test\"}");
        api.handle_stores(stores, &request, 1_767_268_800.0)
    }

    fn no_endpoint(a: &ApiResponse) -> bool {
        a.status == 404
            && a.body["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("no endpoint"))
    }

    #[test]
    fn the_table_has_one_row_per_method_and_pattern() {
        let mut seen = HashSet::new();
        for e in ROUTES {
            assert!(e.pattern.starts_with("/api/"), "{}", e.pattern);
            assert!(
                ["GET", "POST", "PUT", "DELETE"].contains(&e.method),
                "{} {}",
                e.method,
                e.pattern
            );
            assert!(
                seen.insert((e.method, e.pattern)),
                "twice: {} {}",
                e.method,
                e.pattern
            );
        }
    }

    #[test]
    fn every_row_is_answered_by_its_handler_and_other_methods_are_405s() {
        for e in ROUTES {
            let path = concrete(e.pattern);
            let a = answer(e.method, &path);
            assert!(
                !no_endpoint(&a) && a.status != 405,
                "{} {path}: {:?}",
                e.method,
                a.body
            );
            if e.method == "GET" {
                let head = answer("HEAD", &path);
                assert_eq!((head.status, &head.body), (a.status, &a.body), "HEAD {path}");
            }
            // The methods the table lists for this path, and no other, answer.
            let allowed: Vec<&str> = ROUTES
                .iter()
                .filter(|r| matches(r.pattern, &path).is_some())
                .map(|r| r.method)
                .collect();
            let refused = answer("PATCH", &path);
            assert_eq!(refused.status, 405, "PATCH {path}");
            assert_eq!(
                refused.body["error"]["message"],
                Value::from(format!(
                    "{path} answers {} only, not PATCH",
                    allowed.join(" and ")
                ))
            );
        }
    }

    #[test]
    fn parameters_are_whole_non_empty_segments() {
        assert_eq!(
            matches("/api/executions/{id}", "/api/executions/a%20b"),
            Some(vec!["a%20b"])
        );
        assert_eq!(matches("/api/executions/{id}", "/api/executions/"), None);
        assert_eq!(matches("/api/executions/{id}", "/api/executions/a/b"), None);
        assert_eq!(matches("/api/executions", "/api/executions/"), None);
        assert_eq!(
            matches(
                "/api/workspaces/{tenant}/{workspace}/rules/{name}/history",
                "/api/workspaces/t/w/rules/r/history"
            ),
            Some(vec!["t", "w", "r"])
        );
        for path in [
            "/api/executions/x/nope",
            "/api/control/nope",
            "/api/workspaces/t",
            "/api/workspaces/t/w/x",
            "/x",
        ] {
            assert!(no_endpoint(&answer("GET", path)), "{path}");
        }
    }
}
