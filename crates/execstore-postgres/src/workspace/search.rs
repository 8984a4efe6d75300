//! Searching reflexr's log and runs (docs/search.md, "The workspace log and runs"): a
//! `where` filter as a SQL condition over `reflexr_events` and `reflexr_runs` that keeps every
//! match and rules out most of the rest, within a bounded window of rows; the front's
//! reference matcher decides on what it lets through. reflexr's columns are `JSON`, read with
//! `#>` / `#>>` and `json_typeof` (no cast to `jsonb`, which would refuse a `\u0000`); a
//! number is cast only under a `CASE` that has seen it is one. Terms it cannot spell exactly
//! (a negation, a time in reflexr's text) are left to the matcher (`TRUE`).

use execstore::kit::filter::{Cmp, Expr, Filter, Op, Path, Term, Value as V};
use execstore::workspace::{Envelope, Run, RunRow, WorkspaceRef};
use execstore::Result;
use postgres::types::ToSql;

use super::rows::{col, limit};
use super::PgWorkspaceDriver;

/// Where a path's value is.
enum Kind {
    /// A text column, never null.
    Text(&'static str),
    /// An integer column, never null.
    Int(&'static str),
    /// A `JSON` column and the keys inside it.
    Json(&'static str, Vec<String>),
    /// Not spelled in SQL: left to the matcher.
    Unknown,
}

fn keys(first: &str, rest: &[String]) -> Vec<String> {
    std::iter::once(first.to_owned())
        .chain(rest.iter().cloned())
        .collect()
}

fn log_kind(path: &Path) -> Kind {
    match path.root.as_str() {
        "seq" => Kind::Int("seq"),
        "id" => Kind::Text("event_id"),
        "type" => Kind::Text("event_type"),
        "correlation_id" | "traceparent" => Kind::Json("envelope", keys(&path.root, &[])),
        "event" | "actor" | "causation" => Kind::Json("envelope", keys(&path.root, &path.keys)),
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
            Kind::Json("r.body", keys(&path.root, &[]))
        }
        "scope" => Kind::Json("r.body", keys("scope", &path.keys)),
        "event" => Kind::Json("e.envelope", keys("event", &path.keys)),
        _ => Kind::Unknown,
    }
}

/// A parameter of the condition.
enum Arg {
    Text(String),
    Real(f64),
    Int(i32),
    Keys(Vec<String>),
}

impl Arg {
    fn sql(&self) -> &(dyn ToSql + Sync) {
        match self {
            Arg::Text(s) => s,
            Arg::Real(n) => n,
            Arg::Int(n) => n,
            Arg::Keys(k) => k,
        }
    }
}

struct Sql<'a> {
    kind: &'a dyn Fn(&Path) -> Kind,
    base: usize,
    args: Vec<Arg>,
}

impl Sql<'_> {
    fn arg(&mut self, a: Arg) -> String {
        let ty = match a {
            Arg::Text(_) => "text",
            Arg::Real(_) => "float8",
            Arg::Int(_) => "int4",
            Arg::Keys(_) => "text[]",
        };
        self.args.push(a);
        format!("${}::{ty}", self.base + self.args.len())
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

    /// The value as `json`, as text (`#>>`) and its JSON type.
    fn json(&mut self, col: &str, keys: &[String]) -> (String, String, String) {
        let p = self.arg(Arg::Keys(keys.to_vec()));
        (
            format!("({col} #> {p})"),
            format!("({col} #>> {p})"),
            format!("json_typeof({col} #> {p})"),
        )
    }

    fn term(&mut self, t: &Term) -> String {
        let kind = (self.kind)(&t.path);
        match &t.op {
            // Negations must hold where the value is absent: the matcher decides them.
            Op::Cmp(Cmp::Ne, _) | Op::Missing => "TRUE".into(),
            Op::Cmp(Cmp::Eq, v) => self.equals(&kind, v),
            Op::In(vs) => {
                let any: Vec<String> = vs.iter().map(|v| self.equals(&kind, v)).collect();
                format!("({})", any.join(" OR "))
            }
            Op::Cmp(cmp, v) => self.range(&kind, cmp.as_str(), v),
            Op::Prefix(p) => {
                let n = i32::try_from(p.chars().count()).unwrap_or(i32::MAX);
                match kind {
                    Kind::Text(c) => {
                        let (a, b) = (self.arg(Arg::Int(n)), self.arg(Arg::Text(p.clone())));
                        format!("left({c}, {a}) = {b}")
                    }
                    Kind::Json(col, keys) => {
                        let (_, text, ty) = self.json(col, &keys);
                        let (a, b) = (self.arg(Arg::Int(n)), self.arg(Arg::Text(p.clone())));
                        format!("({ty} = 'string' AND left({text}, {a}) = {b})")
                    }
                    Kind::Int(_) => "FALSE".into(),
                    Kind::Unknown => "TRUE".into(),
                }
            }
            Op::Exists => match kind {
                Kind::Json(col, keys) => {
                    let (_, _, ty) = self.json(col, &keys);
                    format!("COALESCE({ty}, 'null') <> 'null'")
                }
                _ => "TRUE".into(),
            },
        }
    }

    fn equals(&mut self, kind: &Kind, v: &V) -> String {
        match (kind, v) {
            (Kind::Text(c), V::Str(s)) => format!("{c} = {}", self.arg(Arg::Text(s.clone()))),
            (Kind::Int(c), V::Num(n)) => format!("{c} = {}", self.arg(Arg::Real(*n))),
            (Kind::Text(_) | Kind::Int(_), _) => "FALSE".into(),
            (Kind::Json(col, keys), v) => {
                let (_, text, ty) = self.json(col, keys);
                match v {
                    V::Str(s) => format!(
                        "({ty} = 'string' AND {text} = {})",
                        self.arg(Arg::Text(s.clone()))
                    ),
                    V::Num(n) => format!(
                        "(CASE WHEN {ty} = 'number' THEN {text}::float8 END) = {}",
                        self.arg(Arg::Real(*n))
                    ),
                    V::Bool(b) => format!("({ty} = 'boolean' AND {text} = '{b}')"),
                    V::Null => format!("{ty} = 'null'"),
                }
            }
            (Kind::Unknown, _) => "TRUE".into(),
        }
    }

    fn range(&mut self, kind: &Kind, op: &str, v: &V) -> String {
        match (kind, v) {
            (Kind::Text(c), V::Str(s)) => {
                format!("{c} COLLATE \"C\" {op} {}", self.arg(Arg::Text(s.clone())))
            }
            (Kind::Int(c), V::Num(n)) => format!("{c} {op} {}", self.arg(Arg::Real(*n))),
            (Kind::Json(col, keys), V::Str(s)) => {
                let (_, text, ty) = self.json(col, keys);
                format!(
                    "({ty} = 'string' AND {text} COLLATE \"C\" {op} {})",
                    self.arg(Arg::Text(s.clone()))
                )
            }
            (Kind::Json(col, keys), V::Num(n)) => {
                let (_, text, ty) = self.json(col, keys);
                format!(
                    "(CASE WHEN {ty} = 'number' THEN {text}::float8 END) {op} {}",
                    self.arg(Arg::Real(*n))
                )
            }
            (Kind::Unknown, _) => "TRUE".into(),
            _ => "FALSE".into(),
        }
    }
}

fn condition(filter: &Filter, kind: &dyn Fn(&Path) -> Kind, base: usize) -> (String, Vec<Arg>) {
    let mut sql = Sql {
        kind,
        base,
        args: Vec::new(),
    };
    let text = sql.expr(&filter.expr);
    (text, sql.args)
}

impl PgWorkspaceDriver {
    /// Up to `n` envelopes of `after < seq <= upto` that may match, in scan order: the
    /// primary key's range, narrowed by the condition.
    pub(super) fn search_candidates(
        &self,
        ws: &WorkspaceRef,
        filter: &Filter,
        (after, upto): (i64, i64),
        newest_first: bool,
        n: usize,
    ) -> Result<Vec<Envelope>> {
        let (cond, args) = condition(filter, &log_kind, 5);
        let text = format!(
            "SELECT envelope::text FROM reflexr_events WHERE tenant_id = $1 AND workspace_id = $2 \
             AND seq > $3 AND seq <= $4 AND {cond} ORDER BY seq {} LIMIT $5",
            if newest_first { "DESC" } else { "ASC" }
        );
        let n = limit(n);
        let mut all: Vec<&(dyn ToSql + Sync)> = vec![&ws.tenant_id, &ws.workspace_id, &after, &upto, &n];
        all.extend(args.iter().map(Arg::sql));
        self.conn_for(ws)?
            .query(&text, &all)?
            .iter()
            .map(|row| Envelope::from_json(&col::<String>(row, 0)?))
            .collect()
    }

    /// The window of at most `scan` runs below `before`, newest first (over
    /// `ix_reflexr_runs_position`), each with its body (and firing envelope) when the
    /// condition lets it through.
    pub(super) fn search_run_rows(
        &self,
        ws: &WorkspaceRef,
        filter: &Filter,
        before: Option<i64>,
        scan: usize,
        with_event: bool,
    ) -> Result<Vec<RunRow>> {
        let (cond, args) = condition(filter, &run_kind, 4);
        let (event, join) = if with_event {
            (
                "e.envelope::text",
                " LEFT JOIN reflexr_events e ON e.tenant_id = r.tenant_id \
                 AND e.workspace_id = r.workspace_id AND e.seq = r.fired_seq",
            )
        } else {
            ("NULL::text", "")
        };
        let text = format!(
            "SELECT position, CASE WHEN hit THEN body END, CASE WHEN hit THEN envelope END FROM (\
             SELECT r.\"position\" AS position, r.body::text AS body, {event} AS envelope, \
             COALESCE({cond}, FALSE) AS hit FROM (\
             SELECT * FROM reflexr_runs WHERE tenant_id = $1 AND workspace_id = $2 AND \"position\" < $3 \
             ORDER BY \"position\" DESC LIMIT $4) r{join}) w ORDER BY position DESC"
        );
        let before = before.unwrap_or(i64::MAX);
        let scan = limit(scan);
        let mut all: Vec<&(dyn ToSql + Sync)> = vec![&ws.tenant_id, &ws.workspace_id, &before, &scan];
        all.extend(args.iter().map(Arg::sql));
        self.conn_for(ws)?
            .query(&text, &all)?
            .iter()
            .map(|row| {
                let position: i64 = col(row, 0)?;
                let body: Option<String> = col(row, 1)?;
                let envelope: Option<String> = col(row, 2)?;
                let candidate = match body {
                    Some(body) => Some((
                        Run::from_json(&body)?,
                        envelope.map(|e| Envelope::from_json(&e)).transpose()?,
                    )),
                    None => None,
                };
                Ok(RunRow { position, candidate })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every term but a negation narrows, each parameter numbered after the statement's own
    /// and typed, the JSON path one array bound once per use.
    #[test]
    fn conditions_narrow_and_number_their_parameters() {
        let f = execstore::workspace::parse_log_where(
            "event.service = auth and (seq > 3 or event.amount >= 2.5) and event.x != 1 and id ^= ev-",
            0.0,
        )
        .unwrap();
        let (sql, args) = condition(&f, &log_kind, 5);
        assert_eq!(
            sql,
            "((json_typeof(envelope #> $6::text[]) = 'string' AND (envelope #>> $6::text[]) = $7::text) \
             AND (seq > $8::float8 OR (CASE WHEN json_typeof(envelope #> $9::text[]) = 'number' \
             THEN (envelope #>> $9::text[])::float8 END) >= $10::float8) AND TRUE \
             AND left(event_id, $11::int4) = $12::text)"
        );
        assert_eq!(args.len(), 7);
        let f = execstore::workspace::parse_run_where("scope.c exists and event.k = true", 0.0).unwrap();
        let (sql, _) = condition(&f, &run_kind, 4);
        assert!(sql.contains("json_typeof(r.body #> $5::text[])"), "{sql}");
        assert!(
            sql.contains("(json_typeof(e.envelope #> $6::text[]) = 'boolean'"),
            "{sql}"
        );
    }
}
