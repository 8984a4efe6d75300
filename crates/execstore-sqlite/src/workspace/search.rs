//! Searching reflexr's log and runs (docs/search.md, "The workspace log and runs"): a
//! `where` filter as a SQL condition over `reflexr_events` and `reflexr_runs` that keeps every
//! match and rules out most of the rest (`json_extract` over the stored JSON, the columns
//! where reflexr keeps them), within a bounded window of rows; the front's reference matcher
//! decides on what it lets through. Terms it cannot spell exactly (a negation, a time in
//! reflexr's text) are left to the matcher (`1`).

use execstore::kit::filter::{Cmp, Expr, Filter, Op, Path, Term, Value as V};
use execstore::workspace::{Envelope, Run, RunRow, WorkspaceRef};
use execstore::Result;
use rusqlite::types::Value;
use rusqlite::ToSql;

use super::sql;
use crate::db::error::Db;

/// Where a path's value is.
enum Kind {
    /// A text column, never null.
    Text(&'static str),
    /// An integer column, never null.
    Int(&'static str),
    /// A JSON document column and the JSON path inside it.
    Json(&'static str, String),
    /// Not spelled in SQL: left to the matcher.
    Unknown,
}

fn json_path(first: &str, keys: &[String]) -> String {
    // Keys hold no quote or backslash (the filter's check), so quoting them is enough.
    let mut p = format!("$.\"{first}\"");
    for k in keys {
        p.push_str(&format!(".\"{k}\""));
    }
    p
}

fn log_kind(path: &Path) -> Kind {
    match path.root.as_str() {
        "seq" => Kind::Int("seq"),
        "id" => Kind::Text("event_id"),
        "type" => Kind::Text("event_type"),
        "correlation_id" | "traceparent" => Kind::Json("envelope", json_path(&path.root, &[])),
        "event" | "actor" | "causation" => Kind::Json("envelope", json_path(&path.root, &path.keys)),
        _ => Kind::Unknown,
    }
}

fn run_kind(path: &Path) -> Kind {
    match path.root.as_str() {
        "id" => Kind::Text("r.id"),
        "rule" => Kind::Text("r.rule"),
        "scope_key" => Kind::Text("r.scope_key"),
        "status" => Kind::Text("r.status"),
        "fired_seq" => Kind::Int("r.fired_seq"),
        "attempts" | "depth" | "correlation_id" | "error" | "reason" => {
            Kind::Json("r.body", json_path(&path.root, &[]))
        }
        "scope" => Kind::Json("r.body", json_path("scope", &path.keys)),
        "event" => Kind::Json("e.envelope", json_path("event", &path.keys)),
        _ => Kind::Unknown,
    }
}

/// Builds the condition with numbered parameters (`?5`), after the statement's first `base`.
struct Sql<'a> {
    kind: &'a dyn Fn(&Path) -> Kind,
    base: usize,
    args: Vec<Value>,
}

impl Sql<'_> {
    fn arg(&mut self, v: Value) -> String {
        self.args.push(v);
        format!("?{}", self.base + self.args.len())
    }

    fn expr(&mut self, e: &Expr) -> String {
        match e {
            Expr::Term(t) => self.term(t),
            Expr::And(parts) => self.join(parts, " AND "),
            Expr::Or(parts) => self.join(parts, " OR "),
        }
    }

    fn join(&mut self, parts: &[Expr], op: &str) -> String {
        let sql: Vec<String> = parts.iter().map(|p| self.expr(p)).collect();
        format!("({})", sql.join(op))
    }

    /// The value and its JSON type, for a JSON path.
    fn json(&mut self, col: &str, path: &str) -> (String, String) {
        let p = self.arg(Value::Text(path.to_owned()));
        (
            format!("json_extract({col}, {p})"),
            format!("json_type({col}, {p})"),
        )
    }

    fn term(&mut self, t: &Term) -> String {
        let kind = (self.kind)(&t.path);
        match &t.op {
            // Negations must hold where the value is absent: the matcher decides them.
            Op::Cmp(Cmp::Ne, _) | Op::Missing => "1".into(),
            Op::Cmp(Cmp::Eq, v) => self.equals(&kind, v),
            Op::In(vs) => {
                let any: Vec<String> = vs.iter().map(|v| self.equals(&kind, v)).collect();
                format!("({})", any.join(" OR "))
            }
            Op::Cmp(cmp, v) => self.range(&kind, cmp.as_str(), v),
            Op::Prefix(p) => {
                let n = p.chars().count() as i64;
                match kind {
                    Kind::Text(c) => {
                        let (a, b) = (self.arg(Value::Integer(n)), self.arg(Value::Text(p.clone())));
                        format!("substr({c}, 1, {a}) = {b}")
                    }
                    Kind::Json(col, path) => {
                        let (x, ty) = self.json(col, &path);
                        let (a, b) = (self.arg(Value::Integer(n)), self.arg(Value::Text(p.clone())));
                        format!("({ty} = 'text' AND substr({x}, 1, {a}) = {b})")
                    }
                    Kind::Int(_) => "0".into(),
                    Kind::Unknown => "1".into(),
                }
            }
            Op::Exists => match kind {
                Kind::Json(col, path) => format!("{} IS NOT NULL", self.json(col, &path).0),
                _ => "1".into(),
            },
        }
    }

    fn equals(&mut self, kind: &Kind, v: &V) -> String {
        match (kind, v) {
            (Kind::Text(c), V::Str(s)) => format!("{c} = {}", self.arg(Value::Text(s.clone()))),
            (Kind::Int(c), V::Num(n)) => format!("{c} = {}", self.arg(Value::Real(*n))),
            (Kind::Text(_) | Kind::Int(_), _) => "0".into(),
            (Kind::Json(col, path), v) => {
                let (x, ty) = self.json(col, path);
                match v {
                    V::Str(s) => format!("({ty} = 'text' AND {x} = {})", self.arg(Value::Text(s.clone()))),
                    V::Num(n) => format!(
                        "({ty} IN ('integer','real') AND {x} = {})",
                        self.arg(Value::Real(*n))
                    ),
                    V::Bool(b) => format!("{ty} = '{b}'"),
                    V::Null => format!("{ty} = 'null'"),
                }
            }
            (Kind::Unknown, _) => "1".into(),
        }
    }

    fn range(&mut self, kind: &Kind, op: &str, v: &V) -> String {
        match (kind, v) {
            (Kind::Text(c), V::Str(s)) => format!("{c} {op} {}", self.arg(Value::Text(s.clone()))),
            (Kind::Int(c), V::Num(n)) => format!("{c} {op} {}", self.arg(Value::Real(*n))),
            (Kind::Json(col, path), V::Str(s)) => {
                let (x, ty) = self.json(col, path);
                format!(
                    "({ty} = 'text' AND {x} {op} {})",
                    self.arg(Value::Text(s.clone()))
                )
            }
            (Kind::Json(col, path), V::Num(n)) => {
                let (x, ty) = self.json(col, path);
                format!(
                    "({ty} IN ('integer','real') AND {x} {op} {})",
                    self.arg(Value::Real(*n))
                )
            }
            (Kind::Unknown, _) => "1".into(),
            _ => "0".into(),
        }
    }
}

fn condition(filter: &Filter, kind: &dyn Fn(&Path) -> Kind, base: usize) -> (String, Vec<Value>) {
    let mut sql = Sql {
        kind,
        base,
        args: Vec::new(),
    };
    let text = sql.expr(&filter.expr);
    (text, sql.args)
}

/// Up to `limit` envelopes of `after < seq <= upto` that may match, in scan order: the
/// primary key's range, narrowed by the condition.
pub(crate) fn log_candidates(
    conn: &rusqlite::Connection,
    workspace: &WorkspaceRef,
    filter: &Filter,
    (after, upto): (i64, i64),
    newest_first: bool,
    limit: usize,
) -> Result<Vec<Envelope>> {
    let (cond, cond_args) = condition(filter, &log_kind, 5);
    let text = format!(
        "SELECT envelope FROM reflexr_events WHERE tenant_id = ?1 AND workspace_id = ?2 \
         AND seq > ?3 AND seq <= ?4 AND {cond} ORDER BY seq {} LIMIT ?5",
        if newest_first { "DESC" } else { "ASC" }
    );
    let limit = sql::limit_param(Some(limit));
    let mut args: Vec<&dyn ToSql> = vec![&workspace.tenant_id, &workspace.workspace_id, &after, &upto];
    args.push(&limit);
    args.extend(cond_args.iter().map(|a| a as &dyn ToSql));
    sql::all(conn, &text, &args, sql::envelope)
}

/// The window of at most `scan` runs below `before`, newest first (over
/// `ix_reflexr_runs_position`), each with its body (and firing envelope) when the condition
/// lets it through.
pub(crate) fn run_rows(
    conn: &rusqlite::Connection,
    workspace: &WorkspaceRef,
    filter: &Filter,
    before: Option<i64>,
    scan: usize,
    with_event: bool,
) -> Result<Vec<RunRow>> {
    let (cond, cond_args) = condition(filter, &run_kind, 4);
    let (event, join) = if with_event {
        (
            "e.envelope",
            " LEFT JOIN reflexr_events e ON e.tenant_id = r.tenant_id \
             AND e.workspace_id = r.workspace_id AND e.seq = r.fired_seq",
        )
    } else {
        ("NULL", "")
    };
    let text = format!(
        "SELECT position, CASE WHEN hit THEN body END, CASE WHEN hit THEN envelope END FROM (\
         SELECT r.position AS position, r.body AS body, {event} AS envelope, ({cond}) AS hit FROM (\
         SELECT * FROM reflexr_runs WHERE tenant_id = ?1 AND workspace_id = ?2 AND position < ?3 \
         ORDER BY position DESC LIMIT ?4) r{join}) ORDER BY position DESC"
    );
    let before = before.unwrap_or(i64::MAX);
    let scan = sql::limit_param(Some(scan));
    let mut args: Vec<&dyn ToSql> = vec![&workspace.tenant_id, &workspace.workspace_id, &before, &scan];
    args.extend(cond_args.iter().map(|a| a as &dyn ToSql));
    sql::all(conn, &text, &args, |row| {
        let position: i64 = row.get(0).db()?;
        let body: Option<String> = row.get(1).db()?;
        let envelope: Option<String> = row.get(2).db()?;
        let candidate = match body {
            Some(body) => Some((
                Run::from_json(&body)?,
                envelope.map(|e| Envelope::from_json(&e)).transpose()?,
            )),
            None => None,
        };
        Ok(RunRow { position, candidate })
    })
}
