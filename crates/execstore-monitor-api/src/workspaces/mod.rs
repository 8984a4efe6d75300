//! The workspace log's endpoints (reflexr's tables): workspaces, a workspace's log, an
//! envelope's causal chain, runs (due now or held, and by which), dead letters, leases,
//! cursors, stored rules and their history, and the due runs across workspaces.
//!
//! Here: the shared parameter helpers, the change token, the workspace list and
//! a workspace's log; `chain`: an envelope's causal chain; `runs`: runs and due runs under
//! the stored rules' policy; `records`: dead letters, leases, cursors and stored rules.

mod chain;
mod records;
mod recover;
mod runs;
mod search;
#[cfg(test)]
mod search_tests;

pub(crate) use runs::policy as stored_policy;
pub(crate) use runs::{decode_offset as decode_runs_cursor, encode_offset as encode_runs_cursor};
#[cfg(test)]
mod tests;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use execstore::workspace::{Envelope, LogQuery, Timestamp, WorkspaceRef, WorkspaceStorage, MAX_READ};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::params::Params;
use crate::{decode, ApiError, ApiResult, Call, DEFAULT_LIMIT};

fn ts(t: Timestamp) -> Value {
    Value::from(t.to_json_text())
}

/// A comma-separated list parameter (empty items dropped).
fn list(params: &Params, name: &str) -> Vec<String> {
    params
        .get(name)
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A time parameter: `now`, epoch seconds, or an RFC 3339 date-time.
fn time_param(params: &Params, name: &str, now: f64) -> Result<Option<Timestamp>, ApiError> {
    let Some(v) = params.get(name) else {
        return Ok(None);
    };
    let bad = || {
        ApiError::bad_request(format!(
            "{name} {v:?} is not \"now\", epoch seconds or an RFC 3339 time"
        ))
    };
    if v.eq_ignore_ascii_case("now") {
        return Timestamp::from_secs_f64(now).map(Some).map_err(|_| bad());
    }
    if let Ok(secs) = v.parse::<f64>() {
        if !secs.is_finite() || secs < 0.0 {
            return Err(bad());
        }
        return Timestamp::from_secs_f64(secs).map(Some).map_err(|_| bad());
    }
    Timestamp::parse_json_text(v).map(Some).map_err(|_| bad())
}

/// The workspace-wide change token part: every workspace's head, leases, cursors and dead
/// letters.
pub(crate) fn token(storage: &dyn WorkspaceStorage) -> Result<String, ApiError> {
    let mut hash = Sha256::new();
    // One call for every workspace (the backends answer it in a few queries), not four each.
    for summary in storage.workspace_summaries()? {
        let ws = &summary.info.workspace;
        let head = summary.info.head_seq;
        let leases = summary.leases;
        let cursors: i64 = summary.cursors.iter().map(|(_, s)| s).sum();
        // A dead letter is recorded beside the log, not in it: counted on its own.
        let dead = summary.dead_letters;
        hash.update(
            json!([ws.tenant_id, ws.workspace_id, head, leases, cursors, dead])
                .to_string()
                .as_bytes(),
        );
    }
    Ok(URL_SAFE_NO_PAD.encode(&hash.finalize()[..12]))
}

impl Call<'_> {
    fn ws_params(&self, known: &[&str]) -> Result<Params, ApiError> {
        Params::new(self.request.query, known, self.now)
    }

    pub(crate) fn workspace_token(&self, storage: &dyn WorkspaceStorage) -> Result<String, ApiError> {
        token(storage)
    }

    /// A workspace named in a path, checked, and known to the store (404 otherwise).
    fn workspace(&self, t: &str, w: &str) -> Result<(WorkspaceRef, i64, Option<Timestamp>), ApiError> {
        let ws = WorkspaceRef::new(decode(t)?, decode(w)?);
        ws.check()?;
        let info = self.ws()?.workspace_info(&ws)?.ok_or_else(|| {
            ApiError::not_found(format!(
                "no workspace {} of tenant {}",
                ws.workspace_id, ws.tenant_id
            ))
        })?;
        Ok((ws, info.head_seq, info.head_ts))
    }

    pub(crate) fn workspaces(&self) -> ApiResult {
        self.ws_params(&[])?;
        let storage = self.ws()?;
        let mut items = Vec::new();
        for summary in storage.workspace_summaries()? {
            let ws = &summary.info.workspace;
            let head = summary.info.head_seq;
            let cursors: Vec<Value> = summary
                .cursors
                .iter()
                .map(|(name, seq)| json!({ "name": name, "seq": seq, "lag": head - seq }))
                .collect();
            items.push(json!({
                "tenant_id": ws.tenant_id,
                "workspace_id": ws.workspace_id,
                "head_seq": head,
                "head_ts": summary.info.head_ts.map(ts),
                "cursors": cursors,
            }));
        }
        Ok(json!({ "items": items, "now": self.now }))
    }

    pub(crate) fn workspace_info(&self, t: &str, w: &str) -> ApiResult {
        self.ws_params(&[])?;
        let (ws, head, head_ts) = self.workspace(t, w)?;
        Ok(json!({
            "tenant_id": ws.tenant_id,
            "workspace_id": ws.workspace_id,
            "head_seq": head,
            "head_ts": head_ts.map(ts),
            "now": self.now,
        }))
    }

    pub(crate) fn log(&self, t: &str, w: &str) -> ApiResult {
        let params = self.ws_params(&["after", "before", "type", "limit", "last", "where", "scan"])?;
        let (ws, head, _) = self.workspace(t, w)?;
        let page = |name: &str| -> Result<Option<usize>, ApiError> {
            params
                .get(name)
                .map(|v| match v.parse::<usize>() {
                    Ok(n) if (1..=MAX_READ.min(execstore::kit::validate::MAX_PAGE)).contains(&n) => Ok(n),
                    _ => Err(ApiError::bad_request(format!(
                        "{name} {v:?} is not a whole number in 1..={}",
                        execstore::kit::validate::MAX_PAGE
                    ))),
                })
                .transpose()
        };
        let (limit, last) = (page("limit")?, page("last")?);
        if limit.is_some() && last.is_some() {
            return Err(ApiError::bad_request("give at most one of limit and last"));
        }
        let types = list(&params, "type");
        if let Some(filter) = search::log_where(&params)? {
            let filter = search::and_terms(filter, search::type_terms(&types));
            return self.log_search(&ws, head, &params, filter, (limit, last));
        }
        let mut query = LogQuery::new().after(params.seq("after")?.unwrap_or(0));
        if let Some(before) = params.seq("before")? {
            query = query.before(before);
        }
        if !types.is_empty() {
            query = query.types(types);
        }
        let limit = match last {
            Some(n) => {
                query = query.last(n);
                None
            }
            None => {
                let n = limit.unwrap_or(DEFAULT_LIMIT);
                query = query.limit(n);
                Some(n)
            }
        };
        let items = self.ws()?.read(&ws, &query)?;
        let next_after = limit
            .filter(|n| items.len() == *n)
            .and_then(|_| items.last().map(|e| e.seq));
        Ok(json!({
            "items": items.iter().map(Envelope::to_value).collect::<Vec<_>>(),
            "head_seq": head,
            "next_after": next_after,
            "now": self.now,
        }))
    }
}
