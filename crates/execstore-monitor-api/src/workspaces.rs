//! The workspace log's endpoints (reflexr's tables): workspaces, a workspace's log, an
//! envelope's causal chain, runs (due now or held, and by which), dead letters, leases,
//! cursors, stored rules and their history, and the due runs across workspaces.

use std::collections::{BTreeSet, HashMap};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use execstore::workspace::{
    run_lease, Envelope, LogQuery, Run, RunPolicy, RunQuery, RunStatus, StoredRuleStatus, Timestamp,
    WorkspaceRef, WorkspaceStorage, MAX_READ,
};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::params::Params;
use crate::{decode, ApiError, ApiResult, Call, DEFAULT_LIMIT};

/// How many envelopes of a correlation an envelope's detail looks through.
const CHAIN_SCAN_CAP: usize = 20_000;
/// The most runs the runs listing reads to page through (its cursor is an offset).
const RUNS_SCAN_CAP: usize = 100_000;

/// A workspace endpoint, with its path parameters still percent-encoded.
pub(crate) enum WsRoute<'p> {
    List,
    Info(&'p str, &'p str),
    Log(&'p str, &'p str),
    Envelope(&'p str, &'p str, &'p str),
    Runs(&'p str, &'p str),
    DeadLetters(&'p str, &'p str),
    Leases(&'p str, &'p str),
    Cursors(&'p str, &'p str),
    Rules(&'p str, &'p str),
    RuleHistory(&'p str, &'p str, &'p str),
    DueRuns,
}

impl<'p> WsRoute<'p> {
    /// The route of the segments after `/api/workspaces`; `None`: no such endpoint.
    pub(crate) fn parse(rest: &[&'p str]) -> Option<Self> {
        let full = |s: &&str| !s.is_empty();
        Some(match rest {
            [] => WsRoute::List,
            [t, w, tail @ ..] if full(t) && full(w) => match tail {
                [] => WsRoute::Info(t, w),
                ["log"] => WsRoute::Log(t, w),
                ["envelopes", id] if full(id) => WsRoute::Envelope(t, w, id),
                ["runs"] => WsRoute::Runs(t, w),
                ["dead-letters"] => WsRoute::DeadLetters(t, w),
                ["leases"] => WsRoute::Leases(t, w),
                ["cursors"] => WsRoute::Cursors(t, w),
                ["rules"] => WsRoute::Rules(t, w),
                ["rules", name, "history"] if full(name) => WsRoute::RuleHistory(t, w, name),
                _ => return None,
            },
            _ => return None,
        })
    }
}

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

/// The run policy a listing judges runs by: what the stored rules say (`ordering: "scope"`,
/// `on_dead_letter: "block"`, `enabled: false`), plus the rules the request names (rules
/// defined in code are not in the store).
fn policy(
    storage: &dyn WorkspaceStorage,
    workspaces: &[WorkspaceRef],
    params: &Params,
) -> Result<RunPolicy, ApiError> {
    let mut policy = RunPolicy::new();
    for ws in workspaces {
        for stored in storage.stored_rules(ws)? {
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
    }
    policy.disabled.extend(list(params, "disabled"));
    // A blocking rule is ordered (reflexr's `on_dead_letter="block"` implies ordering).
    let blocking: BTreeSet<String> = list(params, "blocking").into_iter().collect();
    policy.ordered.extend(list(params, "ordered"));
    policy.ordered.extend(blocking.iter().cloned());
    policy.blocking.extend(blocking);
    Ok(policy)
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

/// The workspace-wide change token part: every workspace's head.
pub(crate) fn token(storage: &dyn WorkspaceStorage) -> Result<String, ApiError> {
    let mut hash = Sha256::new();
    for ws in storage.workspaces()? {
        let head = storage.head_seq(&ws)?;
        let leases = storage.leases(&ws)?.len();
        let cursors: i64 = storage.cursors(&ws)?.iter().map(|(_, s)| s).sum();
        hash.update(
            json!([ws.tenant_id, ws.workspace_id, head, leases, cursors])
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

    pub(crate) fn workspace_route(&self, route: WsRoute<'_>) -> ApiResult {
        match route {
            WsRoute::List => self.workspaces(),
            WsRoute::Info(t, w) => self.workspace_info(t, w),
            WsRoute::Log(t, w) => self.log(t, w),
            WsRoute::Envelope(t, w, id) => self.envelope(t, w, id),
            WsRoute::Runs(t, w) => self.runs(t, w),
            WsRoute::DeadLetters(t, w) => self.dead_letters(t, w),
            WsRoute::Leases(t, w) => self.leases(t, w),
            WsRoute::Cursors(t, w) => self.cursors(t, w),
            WsRoute::Rules(t, w) => self.rules(t, w),
            WsRoute::RuleHistory(t, w, name) => self.rule_history(t, w, name),
            WsRoute::DueRuns => self.due_runs(),
        }
    }

    fn workspaces(&self) -> ApiResult {
        self.ws_params(&[])?;
        let storage = self.ws()?;
        let mut items = Vec::new();
        for ws in storage.workspaces()? {
            let info = storage.workspace_info(&ws)?;
            let head = info.as_ref().map_or(0, |i| i.head_seq);
            let cursors: Vec<Value> = storage
                .cursors(&ws)?
                .into_iter()
                .map(|(name, seq)| json!({ "name": name, "seq": seq, "lag": head - seq }))
                .collect();
            items.push(json!({
                "tenant_id": ws.tenant_id,
                "workspace_id": ws.workspace_id,
                "head_seq": head,
                "head_ts": info.and_then(|i| i.head_ts).map(ts),
                "cursors": cursors,
            }));
        }
        Ok(json!({ "items": items, "now": self.now }))
    }

    fn workspace_info(&self, t: &str, w: &str) -> ApiResult {
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

    fn log(&self, t: &str, w: &str) -> ApiResult {
        let params = self.ws_params(&["after", "before", "type", "limit", "last"])?;
        let (ws, head, _) = self.workspace(t, w)?;
        let page = |name: &str| -> Result<Option<usize>, ApiError> {
            params
                .get(name)
                .map(|v| match v.parse::<usize>() {
                    Ok(n) if (1..=MAX_READ.min(execstore::validate::MAX_PAGE)).contains(&n) => Ok(n),
                    _ => Err(ApiError::bad_request(format!(
                        "{name} {v:?} is not a whole number in 1..={}",
                        execstore::validate::MAX_PAGE
                    ))),
                })
                .transpose()
        };
        let (limit, last) = (page("limit")?, page("last")?);
        if limit.is_some() && last.is_some() {
            return Err(ApiError::bad_request("give at most one of limit and last"));
        }
        let types = list(&params, "type");
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

    /// An envelope and its causal chain: the envelopes of its correlation, each with the
    /// envelope whose run caused it (`parent_seq`: the run's fired seq), its causes (root
    /// first) and what it caused (its descendants, by seq).
    fn envelope(&self, t: &str, w: &str, raw_id: &str) -> ApiResult {
        self.ws_params(&[])?;
        let (ws, _, _) = self.workspace(t, w)?;
        let storage = self.ws()?;
        let id = decode(raw_id)?;
        execstore::validate::check_id("id", &id)?;
        let envelope = storage
            .envelope(&ws, &id)?
            .ok_or_else(|| ApiError::not_found(format!("no envelope {id} in this workspace")))?;
        // The correlation's envelopes: from its root (whose id is the correlation id) on.
        let root_seq = storage
            .envelope(&ws, &envelope.correlation_id)?
            .map_or(envelope.seq, |r| r.seq.min(envelope.seq));
        let mut chain: Vec<Envelope> = Vec::new();
        let mut after = root_seq - 1;
        let mut scanned = 0;
        let mut truncated = false;
        loop {
            let page = storage.read(&ws, &LogQuery::new().after(after).limit(1000))?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            scanned += page.len();
            let full = page.len() == 1000;
            chain.extend(
                page.into_iter()
                    .filter(|e| e.correlation_id == envelope.correlation_id),
            );
            if !full {
                break;
            }
            if scanned >= CHAIN_SCAN_CAP {
                truncated = true;
                break;
            }
        }
        // Each envelope's cause: the envelope that fired the run named in its causation.
        let mut runs: HashMap<String, Option<Run>> = HashMap::new();
        let mut nodes = Vec::new();
        let mut parent_of: HashMap<i64, i64> = HashMap::new();
        for e in &chain {
            let run_id = e
                .causation
                .as_ref()
                .and_then(|c| c.get("run_id"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            let mut parent = None;
            let mut rule = None;
            if let Some(run_id) = &run_id {
                if !runs.contains_key(run_id) {
                    let run = match execstore::validate::check_id("run_id", run_id) {
                        Ok(()) => storage.run(&ws, run_id)?,
                        Err(_) => None,
                    };
                    runs.insert(run_id.clone(), run);
                }
                if let Some(run) = &runs[run_id] {
                    rule = Some(run.rule().to_owned());
                    if run.fired_seq() < e.seq {
                        parent = Some(run.fired_seq());
                        parent_of.insert(e.seq, run.fired_seq());
                    }
                }
            }
            nodes.push(json!({
                "seq": e.seq,
                "id": e.id,
                "ts": ts(e.ts),
                "type": e.event_type(),
                "actor": e.actor,
                "causation": e.causation,
                "run_id": run_id,
                "rule": rule,
                "parent_seq": parent,
            }));
        }
        let mut causes = Vec::new();
        let mut at = envelope.seq;
        while let Some(p) = parent_of.get(&at) {
            if causes.contains(p) || causes.len() > chain.len() {
                break;
            }
            causes.push(*p);
            at = *p;
        }
        causes.reverse();
        let mut caused = Vec::new();
        let mut frontier = vec![envelope.seq];
        while let Some(s) = frontier.pop() {
            for (child, parent) in &parent_of {
                if *parent == s && !caused.contains(child) {
                    caused.push(*child);
                    frontier.push(*child);
                }
            }
        }
        caused.sort_unstable();
        Ok(json!({
            "envelope": envelope.to_value(),
            "chain": nodes,
            "causes": causes,
            "caused": caused,
            "truncated": truncated,
        }))
    }

    fn runs(&self, t: &str, w: &str) -> ApiResult {
        let params = self.ws_params(&[
            "status", "rule", "scope", "limit", "cursor", "ordered", "blocking", "disabled",
        ])?;
        let (ws, _, _) = self.workspace(t, w)?;
        let storage = self.ws()?;
        let limit = params.limit()?;
        let status = params.get("status").map(RunStatus::parse).transpose()?;
        let offset = match params.get("cursor") {
            None => 0,
            Some(c) => decode_offset(c)?,
        };
        let want = offset + limit + 1;
        if want > RUNS_SCAN_CAP {
            return Err(ApiError::bad_request(format!(
                "the runs listing pages through the newest {RUNS_SCAN_CAP} runs only: narrow the filters"
            )));
        }
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
        let policy = policy(storage, std::slice::from_ref(&ws), &params)?;
        let now = Timestamp::from_secs_f64(self.now).map_err(ApiError::from)?;
        let leases: HashMap<String, (String, Timestamp)> = storage
            .leases(&ws)?
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
        let next_cursor = more.then(|| encode_offset(offset + limit));
        Ok(json!({ "items": items, "next_cursor": next_cursor, "now": self.now }))
    }

    fn dead_letters(&self, t: &str, w: &str) -> ApiResult {
        let params = self.ws_params(&["rule"])?;
        let (ws, _, _) = self.workspace(t, w)?;
        if let Some(rule) = params.get("rule") {
            execstore::validate::check_id("rule", rule)?;
        }
        let items: Vec<Value> = self
            .ws()?
            .dead_letters(&ws, params.get("rule"))?
            .into_iter()
            .map(|l| Value::Object(l.doc().clone()))
            .collect();
        Ok(json!({ "items": items }))
    }

    fn leases(&self, t: &str, w: &str) -> ApiResult {
        self.ws_params(&[])?;
        let (ws, _, _) = self.workspace(t, w)?;
        let now = Timestamp::from_secs_f64(self.now).map_err(ApiError::from)?;
        let items: Vec<Value> = self
            .ws()?
            .leases(&ws)?
            .into_iter()
            .map(|l| {
                json!({
                    "key": l.key,
                    "holder": l.holder,
                    "expires_at": ts(l.expires_at),
                    "lapsed": l.expires_at <= now,
                })
            })
            .collect();
        Ok(json!({ "items": items, "now": self.now }))
    }

    fn cursors(&self, t: &str, w: &str) -> ApiResult {
        self.ws_params(&[])?;
        let (ws, head, _) = self.workspace(t, w)?;
        let items: Vec<Value> = self
            .ws()?
            .cursors(&ws)?
            .into_iter()
            .map(|(name, seq)| json!({ "name": name, "seq": seq, "lag": head - seq }))
            .collect();
        Ok(json!({ "items": items, "head_seq": head }))
    }

    fn rules(&self, t: &str, w: &str) -> ApiResult {
        self.ws_params(&[])?;
        let (ws, _, _) = self.workspace(t, w)?;
        let items: Vec<Value> = self
            .ws()?
            .stored_rules(&ws)?
            .into_iter()
            .map(|r| {
                json!({
                    "name": r.name(),
                    "rule": Value::Object(r.rule.clone()),
                    "version": r.version,
                    "status": r.status.as_str(),
                    "provenance": Value::Object(r.provenance.clone()),
                })
            })
            .collect();
        Ok(json!({ "items": items }))
    }

    fn rule_history(&self, t: &str, w: &str, raw_name: &str) -> ApiResult {
        self.ws_params(&[])?;
        let (ws, _, _) = self.workspace(t, w)?;
        let name = decode(raw_name)?;
        execstore::validate::check_id("name", &name)?;
        let items: Vec<Value> = self
            .ws()?
            .rule_history(&ws, &name)?
            .iter()
            .map(Envelope::to_value)
            .collect();
        if items.is_empty() {
            return Err(ApiError::not_found(format!(
                "no stored rule {name} in this workspace"
            )));
        }
        Ok(json!({ "name": name, "items": items }))
    }

    fn due_runs(&self) -> ApiResult {
        let params = self.ws_params(&["now", "limit", "ordered", "blocking", "disabled"])?;
        let storage = self.ws()?;
        let now = match time_param(&params, "now", self.now)? {
            Some(t) => t,
            None => Timestamp::from_secs_f64(self.now).map_err(ApiError::from)?,
        };
        let limit = params.limit()?;
        let workspaces = storage.workspaces()?;
        let policy = policy(storage, &workspaces, &params)?;
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

fn encode_offset(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(json!(["runs", offset]).to_string())
}

fn decode_offset(cursor: &str) -> Result<usize, ApiError> {
    let bad = || ApiError::bad_request(format!("{cursor:?} is not a cursor of this listing"));
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let (kind, offset): (String, usize) = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    if kind != "runs" {
        return Err(bad());
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use execstore::workspace::{
        Entry, EvaluationError, ManualClock, MemoryWorkspaceStorage, NewRun, StoredRule, RULE_INSTALLED,
    };
    use execstore::MemoryStore;

    use super::*;
    use crate::{ApiRequest, ApiResponse, MonitorApi, Stores};

    const T0: i64 = 1_767_268_800_000_000;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_micros(T0 + secs * 1_000_000).unwrap()
    }

    fn obj(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn run(id: &str, rule: &str, scope: &str, fired: i64, created: i64) -> Run {
        Run::pending(NewRun {
            id: id.into(),
            rule: rule.into(),
            scope_key: scope.into(),
            scope: obj(json!({ "k": scope })),
            fired_seq: fired,
            matched: vec![fired],
            correlation_id: "e1".into(),
            depth: 0,
            now: at(created),
        })
        .unwrap()
    }

    /// acme/prod: a log with a causal chain, runs of an ordered rule, a dead letter, a lease,
    /// a cursor and a stored rule in two versions.
    fn storage() -> (MemoryWorkspaceStorage, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(at(0)));
        let s = MemoryWorkspaceStorage::new(clock.clone());
        let ws = WorkspaceRef::new("acme", "prod");
        let mut tx = s.begin(&ws).unwrap();
        let mut caused = Entry::new(
            "e2",
            json!({"kind": "agent", "name": "pager"}),
            obj(json!({"type": "oncall:paged", "who": "<script>alert(1)</script>"})),
        );
        caused.causation = Some(json!({"firing_id": "f1", "run_id": "r1", "depth": 1}));
        caused.correlation_id = Some("e1".into());
        let mut grandchild = Entry::new(
            "e4",
            json!({"kind": "agent"}),
            obj(json!({"type": "oncall:acked"})),
        );
        grandchild.causation = Some(json!({"run_id": "r2"}));
        grandchild.correlation_id = Some("e1".into());
        tx.append(&[
            Entry::new(
                "e1",
                json!({"kind": "source", "name": "m"}),
                obj(json!({"type": "oncall:error"})),
            ),
            caused,
            Entry::new(
                "e3",
                json!({"kind": "source"}),
                obj(json!({"type": "oncall:heartbeat"})),
            ),
            grandchild,
        ])
        .unwrap();
        let r1 = run("r1", "page", "auth", 1, 1);
        let r2 = run("r2", "page", "auth", 2, 2);
        let r3 = run("r3", "page", "auth", 3, 3);
        let other = run("r4", "log", "auth", 3, 3)
            .with(obj(json!({"status": "succeeded"})))
            .unwrap();
        tx.save_runs(&[
            r1.with(obj(json!({"status": "dead", "error": "boom"}))).unwrap(),
            r2.with(obj(json!({"status": "running", "attempts": 1}))).unwrap(),
            r3,
            other,
        ])
        .unwrap();
        tx.dead_letter(&[EvaluationError::new("page", 2, "KeyError")])
            .unwrap();
        let rule = |v: &str| {
            obj(json!({"name": "page", "description": v, "ordering": "scope", "on_dead_letter": "block"}))
        };
        for version in 1..=2 {
            tx.save_stored_rule(&StoredRule {
                rule: rule(&format!("v{version}")),
                version,
                status: StoredRuleStatus::Active,
                provenance: obj(json!({"by": "<img src=x onerror=alert(1)>"})),
            })
            .unwrap();
            tx.append(&[Entry::new(
                format!("install-{version}"),
                json!({"kind": "user"}),
                obj(json!({"type": RULE_INSTALLED, "rule": "page", "version": version, "spec": rule("x"), "provenance": {}})),
            )])
            .unwrap();
        }
        tx.commit().unwrap();
        s.save_cursor(&ws, "exporter", 2).unwrap();
        assert!(s
            .acquire_lease(&ws, "run:r2", "worker-1", Duration::from_secs(60))
            .unwrap());
        clock.set(at(10));
        (s, clock)
    }

    fn api() -> MonitorApi {
        MonitorApi::new(serde_json::Map::new(), None)
    }

    fn get_in(stores: Stores<'_>, target: &str) -> ApiResponse {
        api().handle_stores(
            stores,
            &ApiRequest::from_target("GET", target, None),
            at(20).secs_f64(),
        )
    }

    fn get(s: &MemoryWorkspaceStorage, target: &str) -> ApiResponse {
        get_in(
            Stores {
                executions: None,
                workspaces: Some(s),
            },
            target,
        )
    }

    #[test]
    fn info_says_what_the_store_holds_and_the_other_contract_is_a_404() {
        let (s, _) = storage();
        let info = get(&s, "/api/info");
        assert_eq!(
            info.body["holds"],
            json!({"executions": false, "workspaces": true})
        );
        let exe = get(&s, "/api/executions");
        assert_eq!(exe.status, 404);
        assert!(exe.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no executions"));
        assert_eq!(get(&s, "/api/changes").status, 200);
        let m = MemoryStore::new();
        let only_exe = api().handle(&m, &ApiRequest::from_target("GET", "/api/workspaces", None), 0.0);
        assert_eq!(only_exe.status, 404);
        assert!(only_exe.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no workspace log"));
        let both = get_in(
            Stores {
                executions: Some(&m),
                workspaces: Some(&s),
            },
            "/api/info",
        );
        assert_eq!(
            both.body["holds"],
            json!({"executions": true, "workspaces": true})
        );
    }

    #[test]
    fn the_change_token_moves_with_an_append() {
        let (s, _) = storage();
        let before = get(&s, "/api/changes").body["token"].clone();
        let ws = WorkspaceRef::new("acme", "prod");
        let mut tx = s.begin(&ws).unwrap();
        tx.append(&[Entry::new("e9", json!({}), obj(json!({"type": "x"})))])
            .unwrap();
        tx.commit().unwrap();
        assert_ne!(get(&s, "/api/changes").body["token"], before);
    }

    #[test]
    fn workspaces_list_heads_and_cursor_lag() {
        let (s, _) = storage();
        let a = get(&s, "/api/workspaces");
        assert_eq!(a.status, 200, "{:?}", a.body);
        let w = &a.body["items"][0];
        assert_eq!(
            (w["tenant_id"].as_str(), w["workspace_id"].as_str()),
            (Some("acme"), Some("prod"))
        );
        assert_eq!(w["head_seq"], 6);
        assert!(w["head_ts"].as_str().unwrap().starts_with("2026-01-01T12:00:00"));
        assert_eq!(w["cursors"], json!([{"name": "exporter", "seq": 2, "lag": 4}]));
        let one = get(&s, "/api/workspaces/acme/prod");
        assert_eq!(one.body["head_seq"], 6);
        assert_eq!(get(&s, "/api/workspaces/acme/nope").status, 404);
        assert_eq!(get(&s, "/api/workspaces/acme/nope/log").status, 404);
    }

    #[test]
    fn the_log_filters_pages_and_tails() {
        let (s, _) = storage();
        let seqs = |target: &str| -> Vec<i64> {
            let a = get(&s, target);
            assert_eq!(a.status, 200, "{target}: {:?}", a.body);
            a.body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["seq"].as_i64().unwrap())
                .collect()
        };
        assert_eq!(seqs("/api/workspaces/acme/prod/log"), [1, 2, 3, 4, 5, 6]);
        assert_eq!(seqs("/api/workspaces/acme/prod/log?after=2&before=5"), [3, 4]);
        assert_eq!(seqs("/api/workspaces/acme/prod/log?last=2"), [5, 6]);
        assert_eq!(
            seqs("/api/workspaces/acme/prod/log?type=oncall:error,oncall:acked"),
            [1, 4]
        );
        let page = get(&s, "/api/workspaces/acme/prod/log?limit=2");
        assert_eq!(page.body["next_after"], 2);
        assert_eq!(page.body["head_seq"], 6);
        assert_eq!(page.body["items"][1]["event"]["who"], "<script>alert(1)</script>");
        assert_eq!(
            get(&s, "/api/workspaces/acme/prod/log?after=4").body["next_after"],
            Value::Null
        );
    }

    #[test]
    fn an_envelope_shows_its_causal_chain() {
        let (s, _) = storage();
        let a = get(&s, "/api/workspaces/acme/prod/envelopes/e2");
        assert_eq!(a.status, 200, "{:?}", a.body);
        assert_eq!(a.body["envelope"]["id"], "e2");
        assert_eq!(a.body["causes"], json!([1]));
        assert_eq!(a.body["caused"], json!([4]));
        let chain: Vec<i64> = a.body["chain"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["seq"].as_i64().unwrap())
            .collect();
        assert_eq!(chain, [1, 2, 4], "the correlation's envelopes, not the heartbeat");
        assert_eq!(a.body["chain"][1]["rule"], "page");
        let root = get(&s, "/api/workspaces/acme/prod/envelopes/e1");
        assert_eq!(root.body["causes"], json!([]));
        assert_eq!(root.body["caused"], json!([2, 4]));
        assert_eq!(get(&s, "/api/workspaces/acme/prod/envelopes/nope").status, 404);
    }

    #[test]
    fn runs_say_due_or_held_and_by_which() {
        let (s, _) = storage();
        let a = get(&s, "/api/workspaces/acme/prod/runs");
        assert_eq!(a.status, 200, "{:?}", a.body);
        let by_id = |id: &str| {
            a.body["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["run"]["id"] == id)
                .unwrap()
                .clone()
        };
        // The ordered, blocking rule: r3 waits behind the dead r1 (the earliest holder).
        assert_eq!(by_id("r3")["held_by"], json!({"id": "r1", "status": "dead"}));
        assert_eq!(by_id("r3")["due"], false);
        assert_eq!(by_id("r2")["lease"]["holder"], "worker-1");
        assert_eq!(by_id("r2")["lease"]["lapsed"], false);
        assert_eq!(by_id("r2")["due"], false);
        assert_eq!(by_id("r4")["held_by"], Value::Null);
        let pending = get(&s, "/api/workspaces/acme/prod/runs?status=pending");
        assert_eq!(pending.body["items"].as_array().unwrap().len(), 1);
        let first = get(&s, "/api/workspaces/acme/prod/runs?limit=3");
        let cursor = first.body["next_cursor"].as_str().unwrap().to_owned();
        let second = get(
            &s,
            &format!("/api/workspaces/acme/prod/runs?limit=3&cursor={cursor}"),
        );
        assert_eq!(second.body["items"].as_array().unwrap().len(), 1);
        assert_eq!(second.body["next_cursor"], Value::Null);
        let scoped = get(&s, "/api/workspaces/acme/prod/runs?rule=log&scope=auth");
        assert_eq!(scoped.body["items"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn dead_letters_leases_cursors_and_rules() {
        let (s, clock) = storage();
        let dl = get(&s, "/api/workspaces/acme/prod/dead-letters");
        assert_eq!(
            dl.body["items"],
            json!([{"rule": "page", "seq": 2, "error": "KeyError"}])
        );
        assert_eq!(
            get(&s, "/api/workspaces/acme/prod/dead-letters?rule=other").body["items"],
            json!([])
        );
        let leases = get(&s, "/api/workspaces/acme/prod/leases");
        assert_eq!(leases.body["items"][0]["key"], "run:r2");
        assert_eq!(leases.body["items"][0]["lapsed"], false);
        clock.set(at(1000));
        let later = api().handle_stores(
            Stores {
                executions: None,
                workspaces: Some(&s),
            },
            &ApiRequest::from_target("GET", "/api/workspaces/acme/prod/leases", None),
            at(1000).secs_f64(),
        );
        assert_eq!(later.body["items"][0]["lapsed"], true);
        let cursors = get(&s, "/api/workspaces/acme/prod/cursors");
        assert_eq!(
            cursors.body["items"],
            json!([{"name": "exporter", "seq": 2, "lag": 4}])
        );
        let rules = get(&s, "/api/workspaces/acme/prod/rules");
        assert_eq!(rules.body["items"][0]["version"], 2);
        assert_eq!(
            rules.body["items"][0]["provenance"]["by"],
            "<img src=x onerror=alert(1)>"
        );
        let history = get(&s, "/api/workspaces/acme/prod/rules/page/history");
        assert_eq!(history.body["items"].as_array().unwrap().len(), 2);
        assert_eq!(
            get(&s, "/api/workspaces/acme/prod/rules/nope/history").status,
            404
        );
    }

    #[test]
    fn due_runs_follow_the_stored_rules_policy() {
        let (s, _) = storage();
        let a = get(&s, "/api/due-runs?now=2026-01-01T12:00:30Z");
        assert_eq!(a.status, 200, "{:?}", a.body);
        assert_eq!(a.body["policy"]["ordered"], json!(["page"]));
        // r3 is held by the dead r1 (blocking) and r2 runs under a live lease.
        assert_eq!(a.body["items"], json!([]));
        let unordered = get(&s, "/api/due-runs?now=now&limit=10&disabled=nothing");
        assert_eq!(unordered.status, 200);
        let before = get(&s, "/api/due-runs?now=0");
        assert_eq!(before.body["items"], json!([]));
    }

    #[test]
    fn bad_parameters_are_400s_with_the_error_shape() {
        let (s, _) = storage();
        for target in [
            "/api/workspaces?x=1",
            "/api/workspaces/acme/prod/log?limit=0",
            "/api/workspaces/acme/prod/log?limit=2&last=2",
            "/api/workspaces/acme/prod/log?after=-1",
            "/api/workspaces/acme/prod/log?after=x",
            "/api/workspaces/acme/prod/log?last=1&last=2",
            "/api/workspaces/acme/prod/log?colour=red",
            "/api/workspaces/acme/prod/runs?status=sleeping",
            "/api/workspaces/acme/prod/runs?cursor=garbage",
            "/api/workspaces/acme/prod/runs?limit=100001",
            "/api/workspaces/acme/prod/leases?now=1",
            "/api/workspaces/%FF/prod/log",
            "/api/due-runs?now=yesterday",
            "/api/due-runs?now=-5",
            "/api/due-runs?limit=0",
        ] {
            let a = get(&s, target);
            assert_eq!(a.status, 400, "{target}: {:?}", a.body);
            // A parameter the store refuses is its INVALID_INPUT, as in the execution API.
            let code = a.body["error"]["code"].as_str().unwrap();
            assert!(
                ["BAD_REQUEST", "INVALID_INPUT"].contains(&code),
                "{target}: {code}"
            );
            assert!(a.body["error"]["message"].is_string(), "{target}");
        }
        for target in [
            "/api/workspaces/acme",
            "/api/workspaces/acme/prod/nope",
            "/api/workspaces//prod/log",
            "/api/workspaces/acme/prod/rules/page",
        ] {
            assert_eq!(get(&s, target).status, 404, "{target}");
        }
        let post = api().handle_stores(
            Stores {
                executions: None,
                workspaces: Some(&s),
            },
            &ApiRequest::from_target("POST", "/api/workspaces", None),
            0.0,
        );
        assert_eq!(post.status, 405);
    }
}
