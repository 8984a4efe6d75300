//! Runs (due now, or held by an earlier run of their scope, and by which) and the due runs
//! across workspaces, judged by the stored rules' run policy.

use std::collections::{BTreeSet, HashMap};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use execstore::workspace::{
    run_lease, Run, RunPolicy, RunQuery, RunStatus, StoredRuleStatus, Timestamp, WorkspaceRef,
    WorkspaceStorage,
};
use serde_json::{json, Value};

use super::{list, time_param, ts};
use crate::params::Params;
use crate::{ApiError, ApiResult, Call};

/// The most runs the runs listing reads to page through (its cursor is an offset).
const RUNS_SCAN_CAP: usize = 100_000;

/// The run policy a listing judges runs by: what the stored rules say (`ordering: "scope"`,
/// `on_dead_letter: "block"`, `enabled: false`), plus the rules the request names (rules
/// defined in code are not in the store).
pub(crate) fn policy(
    storage: &dyn WorkspaceStorage,
    workspace: Option<&WorkspaceRef>,
    params: &Params,
) -> Result<RunPolicy, ApiError> {
    let mut policy = RunPolicy::new();
    // One workspace's stored rules, or every workspace's in one read.
    let rules = match workspace {
        Some(ws) => storage.stored_rules(ws)?,
        None => storage
            .all_stored_rules()?
            .into_iter()
            .map(|(_, rule)| rule)
            .collect(),
    };
    for stored in rules {
        if stored.status != StoredRuleStatus::Active {
            continue;
        }
        let name = stored.name().to_owned();
        if stored.rule.get("ordering").and_then(Value::as_str) == Some("scope") {
            policy.ordered.insert(name.clone());
        }
        if stored.rule.get("on_dead_letter").and_then(Value::as_str) == Some("block") {
            policy.blocking.insert(name.clone());
        }
        if stored.rule.get("enabled") == Some(&Value::Bool(false)) {
            policy.disabled.insert(name);
        }
    }
    policy.disabled.extend(list(params, "disabled"));
    // A blocking rule is ordered (reflexr's `on_dead_letter="block"` implies ordering).
    let blocking: BTreeSet<String> = list(params, "blocking").into_iter().collect();
    policy.ordered.extend(list(params, "ordered"));
    policy.ordered.extend(blocking.iter().cloned());
    policy.blocking.extend(blocking);
    Ok(policy)
}

fn created_at(run: &Run) -> Option<Timestamp> {
    run.doc()
        .get("created_at")
        .and_then(Value::as_str)
        .and_then(|t| Timestamp::parse_json_text(t).ok())
}

/// A scope's runs in the order they start: fired seq, then creation.
fn start_order(runs: &mut [Run]) {
    runs.sort_by(|a, b| {
        a.fired_seq()
            .cmp(&b.fired_seq())
            .then_with(|| created_at(a).cmp(&created_at(b)))
    });
}

impl Call<'_> {
    pub(crate) fn runs(&self, t: &str, w: &str) -> ApiResult {
        let params = self.ws_params(&[
            "status", "rule", "scope", "limit", "cursor", "ordered", "blocking", "disabled", "where", "scan",
        ])?;
        let (ws, _, _) = self.workspace(t, w)?;
        let storage = self.ws()?;
        let limit = params.limit()?;
        let status = params.get("status").map(RunStatus::parse).transpose()?;
        if let Some(filter) = super::search::run_where(&params)? {
            let more = super::search::run_terms(status, params.get("rule"), params.get("scope"));
            let filter = super::search::and_terms(filter, more);
            let (runs, next_cursor, info) = self.run_search(&ws, &params, filter, limit)?;
            let items = self.run_items(storage, &ws, &params, runs)?;
            return Ok(
                json!({ "items": items, "next_cursor": next_cursor, "search": info, "now": self.now }),
            );
        }
        let offset = match params.get("cursor") {
            None => 0,
            Some(c) => decode_offset(c)?,
        };
        // Checked: a cursor is the client's text, and its offset may be any usize.
        let want = offset
            .checked_add(limit)
            .and_then(|n| n.checked_add(1))
            .filter(|want| *want <= RUNS_SCAN_CAP)
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "the runs listing pages through the newest {RUNS_SCAN_CAP} runs only: narrow the filters"
                ))
            })?;
        let query = RunQuery {
            rule: params.get("rule").map(str::to_owned),
            status,
            scope_key: params.get("scope").map(str::to_owned),
            limit: Some(want),
        };
        let mut runs = storage.runs(&ws, &query)?;
        let more = runs.len() > offset + limit;
        runs.truncate(offset + limit);
        let runs: Vec<Run> = runs.into_iter().skip(offset).collect();
        let items = self.run_items(storage, &ws, &params, runs)?;
        let next_cursor = more.then(|| encode_offset(offset + limit));
        Ok(json!({ "items": items, "next_cursor": next_cursor, "now": self.now }))
    }

    /// The listing's items for `runs`: each with whether it is due, what holds it, its lease.
    fn run_items(
        &self,
        storage: &dyn WorkspaceStorage,
        ws: &WorkspaceRef,
        params: &Params,
        runs: Vec<Run>,
    ) -> Result<Vec<Value>, ApiError> {
        let ws = ws.clone();
        let policy = policy(storage, Some(&ws), params)?;
        let now = Timestamp::from_secs_f64(self.now).map_err(ApiError::from)?;
        // The run leases of this page's runs only (a workspace may hold tens of thousands).
        let keys: Vec<String> = runs.iter().map(|r| run_lease(r.id())).collect();
        let leases: HashMap<String, (String, Timestamp)> = storage
            .leases_of(&ws, &keys)?
            .into_iter()
            .map(|l| (l.key, (l.holder, l.expires_at)))
            .collect();
        let mut scopes: HashMap<(String, String), Vec<Run>> = HashMap::new();
        let mut items = Vec::with_capacity(runs.len());
        for run in runs {
            let waiting = run.status().is_waiting();
            let mut held_by = Value::Null;
            if waiting && policy.ordered.contains(run.rule()) {
                let key = (run.rule().to_owned(), run.scope_key().to_owned());
                if !scopes.contains_key(&key) {
                    let mut all = storage.runs(
                        &ws,
                        &RunQuery {
                            rule: Some(key.0.clone()),
                            scope_key: Some(key.1.clone()),
                            ..RunQuery::default()
                        },
                    )?;
                    start_order(&mut all);
                    scopes.insert(key.clone(), all);
                }
                let scope = &scopes[&key];
                if let Some(me) = scope.iter().position(|r| r.id() == run.id()) {
                    if let Some(holder) = scope[..me].iter().find(|r| policy.holds(r)) {
                        held_by = json!({ "id": holder.id(), "status": holder.status().as_str() });
                    }
                }
            }
            let lease = leases.get(&run_lease(run.id())).map(|(holder, expires)| {
                json!({ "holder": holder, "expires_at": ts(*expires), "lapsed": *expires <= now })
            });
            let due = match run.status() {
                s if s.is_waiting() => {
                    !policy.disabled.contains(run.rule()) && held_by.is_null() && run.next_attempt_at() <= now
                }
                // A running run whose lease is missing or lapsed is due again.
                RunStatus::Running => lease.as_ref().is_none_or(|l| l["lapsed"].as_bool() == Some(true)),
                _ => false,
            };
            items.push(json!({
                "run": Value::Object(run.doc().clone()),
                "due": due,
                "held_by": held_by,
                "lease": lease,
                "ordered": policy.ordered.contains(run.rule()),
                "blocking": policy.blocks(run.rule()),
            }));
        }
        Ok(items)
    }

    pub(crate) fn due_runs(&self) -> ApiResult {
        let params = self.ws_params(&["now", "limit", "ordered", "blocking", "disabled"])?;
        let storage = self.ws()?;
        let now = match time_param(&params, "now", self.now)? {
            Some(t) => t,
            None => Timestamp::from_secs_f64(self.now).map_err(ApiError::from)?,
        };
        let limit = params.limit()?;
        let policy = policy(storage, None, &params)?;
        let items: Vec<Value> = storage
            .due_runs(now, limit, &policy)?
            .into_iter()
            .map(|(ws, run)| {
                json!({
                    "tenant_id": ws.tenant_id,
                    "workspace_id": ws.workspace_id,
                    "run": Value::Object(run.doc().clone()),
                })
            })
            .collect();
        let policy_json = json!({
            "ordered": policy.ordered,
            "blocking": policy.blocking,
            "disabled": policy.disabled,
        });
        Ok(json!({ "items": items, "at": ts(now), "policy": policy_json, "now": self.now }))
    }
}

pub(crate) fn encode_offset(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(json!(["runs", offset]).to_string())
}

pub(crate) fn decode_offset(cursor: &str) -> Result<usize, ApiError> {
    let bad = || ApiError::bad_request(format!("{cursor:?} is not a cursor of this listing"));
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let (kind, offset): (String, usize) = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    if kind != "runs" {
        return Err(bad());
    }
    Ok(offset)
}
