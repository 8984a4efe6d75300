//! `?where=` on a workspace's log and runs (docs/search.md, "The workspace log and runs"),
//! and `GET /api/workspaces/{t}/{w}/suggest?of=log|runs&path=TEXT`, the where box's
//! suggestions over a sample of the newest envelopes or runs.
//!
//! A filtered page examines at most `scan` rows (default [`SCAN_ROWS`]) and answers how far
//! it got (`search.scanned`, `search.scanned_to`) and where to go on, so a page over a log of
//! millions of envelopes takes no longer than one over ten thousand.

use std::collections::BTreeMap;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use execstore::kit::filter::{Cmp, Expr, Filter, Op, Path, Term, Value as V};
use execstore::workspace::search::{MAX_SCAN, SCAN_ROWS};
use execstore::workspace::{
    parse_log_where, parse_run_where, Envelope, LogQuery, LogSearch, RunQuery, RunSearch, RunStatus,
    WorkspaceRef, LOG_ROOTS, RUN_ROOTS,
};
use serde_json::{json, Value};

use crate::params::Params;
use crate::search::{frequent, walk};
use crate::{ApiError, ApiResult, Call};

/// How many envelopes or runs the suggestions read at most.
const SAMPLE: usize = 200;

/// The `where` parameter over envelopes (relative times against the request's clock).
pub(super) fn log_where(params: &Params) -> Result<Option<Filter>, ApiError> {
    match params.get("where").map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => Ok(Some(parse_log_where(text, params.now())?)),
    }
}

/// The `where` parameter over runs.
pub(super) fn run_where(params: &Params) -> Result<Option<Filter>, ApiError> {
    match params.get("where").map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => Ok(Some(parse_run_where(text, params.now())?)),
    }
}

/// The `scan` parameter: rows one page examines.
pub(super) fn scan(params: &Params) -> Result<usize, ApiError> {
    match params.get("scan") {
        None => Ok(SCAN_ROWS),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=MAX_SCAN).contains(&n) => Ok(n),
            _ => Err(ApiError::bad_request(format!(
                "scan {v:?} is not a whole number in 1..={MAX_SCAN}"
            ))),
        },
    }
}

fn term(root: &str, op: Op) -> Expr {
    Expr::Term(Term {
        path: Path::root(root),
        op,
    })
}

/// `filter and more` (more: terms the listing's other parameters make).
pub(super) fn and_terms(filter: Filter, more: Vec<Expr>) -> Filter {
    if more.is_empty() {
        return filter;
    }
    let extra = if more.len() == 1 {
        more.into_iter().next().map(|e| Filter { expr: e })
    } else {
        Some(Filter {
            expr: Expr::And(more),
        })
    };
    match extra {
        Some(extra) => filter.and(extra),
        None => filter,
    }
}

/// `type in (...)` for the log's `type` parameter.
pub(super) fn type_terms(types: &[String]) -> Vec<Expr> {
    if types.is_empty() {
        return Vec::new();
    }
    vec![term(
        "type",
        Op::In(types.iter().map(|t| V::Str(t.clone())).collect()),
    )]
}

/// The runs listing's `status`, `rule` and `scope` as terms.
pub(super) fn run_terms(status: Option<RunStatus>, rule: Option<&str>, scope: Option<&str>) -> Vec<Expr> {
    let eq = |root: &str, v: &str| term(root, Op::Cmp(Cmp::Eq, V::Str(v.to_owned())));
    let mut out = Vec::new();
    if let Some(s) = status {
        out.push(eq("status", s.as_str()));
    }
    if let Some(r) = rule {
        out.push(eq("rule", r));
    }
    if let Some(k) = scope {
        out.push(eq("scope_key", k));
    }
    out
}

pub(super) fn encode_position(position: i64) -> String {
    URL_SAFE_NO_PAD.encode(json!(["runs-where", position]).to_string())
}

pub(super) fn decode_position(cursor: &str) -> Result<i64, ApiError> {
    let bad = || ApiError::bad_request(format!("{cursor:?} is not a cursor of this search"));
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let (kind, position): (String, i64) = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    if kind != "runs-where" || position < 0 {
        return Err(bad());
    }
    Ok(position)
}

impl Call<'_> {
    /// The log filtered by `where`: `last` (newest first, from `before` or the head) or
    /// `limit` (oldest first, from `after`); `items` oldest first either way.
    pub(super) fn log_search(
        &self,
        ws: &WorkspaceRef,
        head: i64,
        params: &Params,
        filter: Filter,
        (limit, last): (Option<usize>, Option<usize>),
    ) -> ApiResult {
        let search = LogSearch {
            filter,
            after_seq: params.seq("after")?.unwrap_or(0),
            before_seq: params.seq("before")?,
            newest_first: last.is_some(),
            limit: last.or(limit).unwrap_or(crate::DEFAULT_LIMIT),
            scan: scan(params)?,
        };
        let page = self.ws()?.search_log(ws, &search)?;
        let mut items: Vec<Value> = page.envelopes.iter().map(Envelope::to_value).collect();
        if search.newest_first {
            items.reverse();
        }
        let (next_after, next_before) = if search.newest_first {
            (None, page.next)
        } else {
            (page.next, None)
        };
        Ok(json!({
            "items": items,
            "head_seq": head,
            "next_after": next_after,
            "next_before": next_before,
            "search": {
                "where": search.filter.to_string(),
                "matches": page.envelopes.len(),
                "scanned": page.scanned,
                "scanned_to": page.scanned_to,
                "newest_first": search.newest_first,
                "done": page.next.is_none(),
            },
            "now": self.now,
        }))
    }

    /// The runs a `where` search finds from `cursor`, and the next page's cursor.
    pub(super) fn run_search(
        &self,
        ws: &WorkspaceRef,
        params: &Params,
        filter: Filter,
        limit: usize,
    ) -> Result<(Vec<execstore::workspace::Run>, Option<String>, Value), ApiError> {
        let search = RunSearch {
            filter,
            cursor: params.get("cursor").map(decode_position).transpose()?,
            limit,
            scan: scan(params)?,
        };
        let page = self.ws()?.search_runs(ws, &search)?;
        let info = json!({
            "where": search.filter.to_string(),
            "matches": page.runs.len(),
            "scanned": page.scanned,
            "done": page.next.is_none(),
        });
        Ok((page.runs, page.next.map(encode_position), info))
    }

    /// `GET /api/workspaces/{t}/{w}/suggest?of=log|runs&path=TEXT`: `paths`, the known paths
    /// starting with TEXT (with how many sampled records hold each), and `values`, the most
    /// frequent values of the path TEXT names; `sampled`: how many records were read (the
    /// newest [`SAMPLE`] envelopes or runs, never more).
    pub(crate) fn ws_suggest(&self, t: &str, w: &str) -> ApiResult {
        let params = self.ws_params(&["of", "path"])?;
        let (ws, _, _) = self.workspace(t, w)?;
        let typed = params.get("path").unwrap_or("").trim().to_owned();
        if typed.len() > 512 {
            return Err(ApiError::bad_request("path: longer than 512 bytes"));
        }
        let storage = self.ws()?;
        let runs_of = match params.get("of").unwrap_or("log") {
            "log" => false,
            "runs" => true,
            other => return Err(ApiError::bad_request(format!("of {other:?} is not log or runs"))),
        };
        // Each sampled record as the JSON its paths read: plain roots and documents.
        let docs: Vec<BTreeMap<&'static str, Value>> = if runs_of {
            let runs = storage.runs(
                &ws,
                &RunQuery {
                    limit: Some(SAMPLE),
                    ..RunQuery::default()
                },
            )?;
            runs.iter()
                .map(|r| {
                    let d = r.doc();
                    let mut m = BTreeMap::new();
                    for root in RUN_ROOTS.iter().filter(|r| !r.json && !r.time) {
                        m.insert(root.name, d.get(root.name).cloned().unwrap_or(Value::Null));
                    }
                    m.insert("scope", d.get("scope").cloned().unwrap_or(Value::Null));
                    m
                })
                .collect()
        } else {
            let envelopes = storage.read(&ws, &LogQuery::new().last(SAMPLE))?;
            envelopes
                .iter()
                .map(|e| {
                    let v = e.to_value();
                    let mut m = BTreeMap::new();
                    m.insert("type", Value::from(e.event_type()));
                    m.insert("id", Value::from(e.id.clone()));
                    m.insert("correlation_id", Value::from(e.correlation_id.clone()));
                    for root in ["event", "actor", "causation"] {
                        m.insert(root, v.get(root).cloned().unwrap_or(Value::Null));
                    }
                    m
                })
                .collect()
        };
        let roots = if runs_of { RUN_ROOTS } else { LOG_ROOTS };
        let mut paths: BTreeMap<String, usize> = BTreeMap::new();
        for root in roots.iter().filter(|r| !r.json) {
            paths.insert(root.name.to_owned(), docs.len());
        }
        for doc in &docs {
            for root in roots.iter().filter(|r| r.json) {
                let mut found = Vec::new();
                if let Some(v) = doc.get(root.name) {
                    walk(v, &mut Path::root(root.name), &mut found);
                }
                for p in found {
                    *paths.entry(p).or_default() += 1;
                }
            }
        }
        let mut listed: Vec<(&String, &usize)> =
            paths.iter().filter(|(p, _)| p.starts_with(&typed)).collect();
        listed.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let listed: Vec<Value> = listed
            .into_iter()
            .take(20)
            .map(|(p, n)| json!({ "path": p, "count": n, "declared": true }))
            .collect();
        let values = match execstore::kit::filter::parse(&format!("{typed} exists")) {
            Ok(f) if !typed.is_empty() => {
                let path = f.paths()[0].clone();
                if path.root == "status" && runs_of {
                    RunStatus::ALL
                        .iter()
                        .map(|s| json!({ "value": s.as_str(), "count": null }))
                        .collect()
                } else {
                    frequent(docs.iter().filter_map(|d| {
                        let root = d.get(path.root.as_str())?;
                        execstore::kit::filter::eval::lookup(root, &path.keys).cloned()
                    }))
                }
            }
            _ => Vec::new(),
        };
        Ok(json!({ "paths": listed, "values": values, "sampled": docs.len() }))
    }
}
