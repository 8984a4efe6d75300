//! The workspace recovery endpoints (writes): [`execstore::workspace::recover`] on one
//! workspace, each one transaction writing what reflexr writes (docs/recover.md):
//!
//! * `POST .../runs/{id}/retry`: reflexr's `retry_run`; `POST .../runs/retry-dead` with
//!   `{"rule"?}`: the same for every dead run (at most [`MAX_RETRY_DEAD`]).
//! * `POST .../dead-letters/replay` with `{"rule", "seq", "mode"?}`: the dead letter's rule
//!   replayed from just before its envelope; `POST .../dead-letters/replay-all` with
//!   `{"mode"?}`: every dead-lettered rule of the workspace from its earliest one.
//! * `POST .../leases/{key}/release`: a lapsed lease removed.
//! * `POST .../rules/{name}/pause` and `.../resume` `[?expected_version=V]`: a stored rule's
//!   next version with `enabled` flipped.
//!
//! The facts these append are by the actor [`actor`] (h-ops's write path names the token's
//! holder in the audit log); each fact's id is made from the workspace, the action, its
//! target and the time.

use execstore::workspace::recover::{self, Operator, ReplayMode};
use execstore::workspace::{RunQuery, RunStatus, Timestamp, WorkspaceRef};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::params::Params;
use crate::recover::{body_object, invalid};
use crate::{decode, ApiError, ApiResult, Call, Caller};

/// The most dead runs one `runs/retry-dead` retries.
pub(crate) const MAX_RETRY_DEAD: usize = 1000;

/// Who the monitor's facts are by (reflexr's `SystemActor`): the monitor, and the name of
/// the token that asked (the audit log has the rest: role, reason, outcome).
pub(crate) fn actor(caller: &Caller) -> Value {
    match caller {
        Caller::Known { name, .. } => {
            json!({"kind": "system", "name": format!("execstore-monitor ({name})")})
        }
        _ => json!({"kind": "system", "name": "execstore-monitor"}),
    }
}

impl Call<'_> {
    fn ws_operator(&self, ws: &WorkspaceRef, action: &str, target: &str) -> Result<Operator, ApiError> {
        let now = Timestamp::from_secs_f64(self.now).map_err(ApiError::from)?;
        let mut h = Sha256::new();
        for part in [ws.tenant_id.as_str(), ws.workspace_id.as_str(), action, target] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        h.update(self.now.to_bits().to_le_bytes());
        let hex: String = h.finalize()[..8].iter().map(|b| format!("{b:02x}")).collect();
        Ok(Operator {
            actor: actor(&self.caller),
            event_id: format!("evt_{hex}"),
            now,
        })
    }

    fn mode(body: &mut serde_json::Map<String, Value>) -> Result<ReplayMode, ApiError> {
        match body.remove("mode") {
            None | Some(Value::Null) => Ok(ReplayMode::Rebuild),
            Some(Value::String(m)) => ReplayMode::parse(&m).map_err(ApiError::from),
            Some(_) => Err(invalid("\"mode\" must be \"rebuild\" or \"refire\"")),
        }
    }

    /// `POST /api/workspaces/{t}/{w}/runs/{id}/retry`.
    pub(crate) fn retry_run(&self, t: &str, w: &str, raw_id: &str) -> ApiResult {
        Params::new(self.request.query, &[], self.now)?;
        body_object(self.request.body, &[])?;
        let (ws, _, _) = self.workspace(t, w)?;
        let id = decode(raw_id)?;
        let op = self.ws_operator(&ws, "retry", &id)?;
        let run = recover::retry_run(self.ws()?, &ws, &id, &op)?;
        Ok(json!({"action": "retry", "run": Value::Object(run.doc().clone()), "fact": op.event_id}))
    }

    /// `POST /api/workspaces/{t}/{w}/runs/retry-dead`.
    pub(crate) fn retry_dead_runs(&self, t: &str, w: &str) -> ApiResult {
        Params::new(self.request.query, &[], self.now)?;
        let mut body = body_object(self.request.body, &["rule"])?;
        let rule = match body.remove("rule") {
            None | Some(Value::Null) => None,
            Some(Value::String(r)) => {
                execstore::kit::validate::check_id("rule", &r)?;
                Some(r)
            }
            Some(_) => return Err(invalid("\"rule\" must be a string")),
        };
        let (ws, _, _) = self.workspace(t, w)?;
        let storage = self.ws()?;
        let query = RunQuery {
            rule,
            status: Some(RunStatus::Dead),
            limit: Some(MAX_RETRY_DEAD + 1),
            ..Default::default()
        };
        let dead = storage.runs(&ws, &query)?;
        if dead.len() > MAX_RETRY_DEAD {
            return Err(invalid(format!(
                "more than {MAX_RETRY_DEAD} dead runs: retry them by rule; nothing was changed"
            )));
        }
        let results: Vec<Value> = dead
            .iter()
            .map(|run| {
                let outcome = self
                    .ws_operator(&ws, "retry", run.id())
                    .and_then(|op| recover::retry_run(storage, &ws, run.id(), &op).map_err(ApiError::from));
                match outcome {
                    Ok(_) => json!({"id": run.id(), "ok": true}),
                    Err(e) => json!({"id": run.id(), "ok": false, "status": e.status, "error": {"code": e.code, "message": e.message}}),
                }
            })
            .collect();
        let retried = results.iter().filter(|r| r["ok"] == json!(true)).count();
        Ok(json!({"action": "retry-dead", "retried": retried, "results": results}))
    }

    /// `POST /api/workspaces/{t}/{w}/dead-letters/replay`.
    pub(crate) fn replay_dead_letter(&self, t: &str, w: &str) -> ApiResult {
        Params::new(self.request.query, &[], self.now)?;
        let mut body = body_object(self.request.body, &["rule", "seq", "mode"])?;
        let rule = match body.remove("rule") {
            Some(Value::String(r)) if !r.is_empty() => r,
            _ => return Err(invalid("\"rule\" (a string) is required")),
        };
        let seq = body
            .remove("seq")
            .and_then(|v| v.as_i64())
            .filter(|s| *s >= 1)
            .ok_or_else(|| invalid("\"seq\" (the dead letter's, 1 or more) is required"))?;
        let mode = Self::mode(&mut body)?;
        let (ws, _, _) = self.workspace(t, w)?;
        let op = self.ws_operator(&ws, "replay", &format!("{rule}@{seq}"))?;
        let r = recover::replay_dead_letter(self.ws()?, &ws, &rule, seq, mode, &op)?;
        Ok(json!({"action": "replay", "replayed": [replayed(&r)]}))
    }

    /// `POST /api/workspaces/{t}/{w}/dead-letters/replay-all`.
    pub(crate) fn replay_dead_letters(&self, t: &str, w: &str) -> ApiResult {
        Params::new(self.request.query, &[], self.now)?;
        let mut body = body_object(self.request.body, &["mode"])?;
        let mode = Self::mode(&mut body)?;
        let (ws, _, _) = self.workspace(t, w)?;
        let op = self.ws_operator(&ws, "replay-all", "")?;
        let all = recover::replay_dead_letters(self.ws()?, &ws, mode, &op)?;
        Ok(json!({"action": "replay-all", "replayed": all.iter().map(replayed).collect::<Vec<_>>()}))
    }

    /// `POST /api/workspaces/{t}/{w}/leases/{key}/release`.
    pub(crate) fn release_lease(&self, t: &str, w: &str, raw_key: &str) -> ApiResult {
        Params::new(self.request.query, &[], self.now)?;
        body_object(self.request.body, &[])?;
        let (ws, _, _) = self.workspace(t, w)?;
        let key = decode(raw_key)?;
        let now = Timestamp::from_secs_f64(self.now).map_err(ApiError::from)?;
        let lease = recover::release_lapsed_lease(self.ws()?, &ws, &key, now)?;
        Ok(json!({
            "action": "release", "key": lease.key, "holder": lease.holder,
            "expires_at": lease.expires_at.to_json_text(),
        }))
    }

    /// `POST /api/workspaces/{t}/{w}/rules/{name}/{pause|resume}`.
    pub(crate) fn set_rule_enabled(&self, t: &str, w: &str, raw_name: &str, enabled: bool) -> ApiResult {
        let params = Params::new(self.request.query, &["expected_version"], self.now)?;
        let expected = params.seq("expected_version")?;
        body_object(self.request.body, &[])?;
        let (ws, _, _) = self.workspace(t, w)?;
        let name = decode(raw_name)?;
        let action = if enabled { "resume" } else { "pause" };
        let op = self.ws_operator(&ws, action, &name)?;
        let before = self
            .ws()?
            .stored_rules(&ws)?
            .into_iter()
            .find(|r| r.name() == name)
            .map(|r| r.version);
        let rule = recover::set_rule_enabled(self.ws()?, &ws, &name, enabled, expected, &op)?;
        Ok(json!({
            "action": action, "name": name, "version": rule.version,
            "enabled": rule.rule.get("enabled").cloned().unwrap_or(Value::Bool(true)),
            "changed": before != Some(rule.version),
        }))
    }
}

fn replayed(r: &recover::Replayed) -> Value {
    json!({"rule": r.rule, "from_seq": r.from_seq, "generation": r.generation, "seq": r.seq})
}

#[cfg(test)]
#[path = "recover_tests.rs"]
mod tests;
