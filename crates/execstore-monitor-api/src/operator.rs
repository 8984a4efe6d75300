//! The operator's endpoints: the audit log (`GET /api/audit`, `GET
//! /api/executions/{id}/audit`) and the team's saved views (`GET /api/views`, `PUT` and
//! `DELETE /api/views/{name}`, writes through the write path).

use execstore::operator::{check_view_name, AuditEntry, AuditQuery, SavedView, PENDING, PENDING_MEANS};
use serde_json::{json, Value};

use crate::params::{check_id, Params};
use crate::{decode, ApiError, ApiResult, Call, Caller, Role};

fn entry_json(e: &AuditEntry) -> Value {
    json!({
        "id": e.id,
        "at": e.at,
        "actor": e.actor,
        "role": e.role,
        "action": e.action,
        "target": e.target,
        "reason": e.reason,
        "outcome": e.outcome,
        "message": e.message,
        "params": e.params,
        "note": (e.outcome == PENDING).then_some(PENDING_MEANS),
    })
}

fn view_json(v: &SavedView) -> Value {
    json!({ "name": v.name, "query": v.query, "owner": v.owner, "updated_at": v.updated_at })
}

impl Call<'_> {
    /// `GET /api/audit?target=&actor=&since=&until=&cursor=&limit=`: newest first; `next` is
    /// the cursor of the page after this one (`null`: none).
    pub(crate) fn audit(&self) -> ApiResult {
        self.audit_of(None)
    }

    /// `GET /api/executions/{id}/audit`: the entries on one execution.
    pub(crate) fn execution_audit(&self, id: String) -> ApiResult {
        check_id(&id)?;
        self.audit_of(Some(id))
    }

    fn audit_of(&self, target: Option<String>) -> ApiResult {
        let known: &[&str] = if target.is_some() {
            &["actor", "since", "until", "cursor", "limit"]
        } else {
            &["target", "actor", "since", "until", "cursor", "limit"]
        };
        let params = Params::new(self.request.query, known, self.now)?;
        let before = match params.get("cursor") {
            None => None,
            Some(c) => Some(
                c.parse::<i64>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| ApiError::bad_request(format!("cursor {c:?} is not an audit cursor")))?,
            ),
        };
        let query = AuditQuery {
            target: target.or_else(|| params.get("target").map(str::to_owned)),
            actor: params.get("actor").map(str::to_owned),
            since: params.moment("since")?,
            until: params.moment("until")?,
            before,
            limit: params.limit()?,
        };
        let items = self.operator().list_audit(&query)?;
        let next = (items.len() == query.limit)
            .then(|| items.last().map(|e| e.id.to_string()))
            .flatten();
        Ok(json!({
            "items": items.iter().map(entry_json).collect::<Vec<_>>(),
            "next": next,
        }))
    }

    /// `GET /api/views`: every saved view, by name.
    pub(crate) fn views(&self) -> ApiResult {
        Params::new(self.request.query, &[], self.now)?;
        let items = self.operator().list_views()?;
        Ok(json!({ "items": items.iter().map(view_json).collect::<Vec<_>>() }))
    }

    /// `PUT /api/views/{name}` with `{"query": "..."}` (and the write path's `reason`):
    /// saves the view as the caller's.
    pub(crate) fn put_view(&self, raw_name: &str) -> ApiResult {
        Params::new(self.request.query, &[], self.now)?;
        let name = decode(raw_name)?;
        check_view_name(&name)?;
        let body: serde_json::Map<String, Value> =
            serde_json::from_slice(self.request.body).map_err(|e| {
                ApiError::new(
                    400,
                    "INVALID_INPUT",
                    format!("the body must be {{\"query\": \"...\"}}: {e}"),
                )
            })?;
        let query = match body.get("query") {
            Some(Value::String(q)) => q.trim_start_matches('?').to_owned(),
            _ => {
                return Err(ApiError::new(
                    400,
                    "INVALID_INPUT",
                    "the body needs \"query\": the list URL's query, a string",
                ))
            }
        };
        if let Some(key) = body.keys().find(|k| *k != "query") {
            return Err(ApiError::new(
                400,
                "INVALID_INPUT",
                format!("unknown key {key:?} (only \"query\")"),
            ));
        }
        let view = SavedView {
            name,
            query,
            owner: self.caller.name().to_owned(),
            updated_at: self.now,
        };
        self.operator().put_view(&view)?;
        Ok(json!({ "view": view_json(&view) }))
    }

    /// `DELETE /api/views/{name}`: the owner's, or any with the `admin` role.
    pub(crate) fn delete_view(&self, raw_name: &str) -> ApiResult {
        Params::new(self.request.query, &[], self.now)?;
        let name = decode(raw_name)?;
        check_view_name(&name)?;
        let store = self.operator();
        let Some(view) = store.list_views()?.into_iter().find(|v| v.name == name) else {
            return Err(ApiError::not_found(format!("no saved view {name:?}")));
        };
        let admin = matches!(&self.caller, Caller::Known { role, .. } if role.allows(Role::Admin));
        if view.owner != self.caller.name() && !admin {
            return Err(ApiError::new(
                403,
                "FORBIDDEN",
                format!(
                    "the view {name:?} is {}'s: deleting another's view needs the admin role",
                    view.owner
                ),
            ));
        }
        store.delete_view(&name)?;
        Ok(json!({ "deleted": name }))
    }
}
