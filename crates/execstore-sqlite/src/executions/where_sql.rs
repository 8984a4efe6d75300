//! A `where` filter as one SQL condition over the executions table, following
//! `execstore::kit::filter::eval` term for term: a context path is compared only with values
//! of its own JSON kind (`json_type` guards what `json_extract` alone would mix up: `true`
//! is 1, an object is its text), the fields of every execution by their indexed expressions
//! (migrations 1 and 2), a declared attribute by its index's expression (attributes.rs).
//!
//! `!=` and `not exists` are negations that must hold where the value is absent, so they
//! wrap the positive condition in `NOT COALESCE(..., 0)` (SQL's NULL is not false).

use execstore::kit::filter::{Cmp, Expr, Filter, Op, Path, Term, Value as V};
use rusqlite::types::Value;

use super::attributes::{extract, json_path};
use super::prefix_upper_bound;

/// How a root's value is stored.
enum Kind {
    /// A text column or a field that is always text (id, status, definition, ...).
    Text,
    /// A number of seconds (created_at, ...).
    Time,
    /// Any JSON value (a context path): needs kind guards.
    Json,
}

/// The SQL of a path and its kind.
fn expr_of(path: &Path) -> (String, Kind) {
    let field = |name: &str| format!("json_extract(data,'$.{name}')");
    match path.root.as_str() {
        "id" => ("id".into(), Kind::Text),
        "definition" => ("definition_id".into(), Kind::Text),
        "status" => (field("status"), Kind::Text),
        "state" => (field("active_path"), Kind::Text),
        "parent" => (field("parent_id"), Kind::Text),
        "created" => (field("created_at"), Kind::Time),
        "updated" => (field("updated_at"), Kind::Time),
        "finished" => (field("finished_at"), Kind::Time),
        _ => (extract(path), Kind::Json),
    }
}

/// Builds the condition and its parameters in step.
struct Sql {
    args: Vec<Value>,
}

impl Sql {
    fn arg(&mut self, v: Value) -> &'static str {
        self.args.push(v);
        "?"
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

    fn term(&mut self, t: &Term) -> String {
        let (e, kind) = expr_of(&t.path);
        let ty = format!("json_type(data,'{}')", json_path(&t.path));
        let state = t.path.root == "state";
        match &t.op {
            Op::Cmp(Cmp::Eq, v) if state => self.in_state(&e, v),
            Op::Cmp(Cmp::Ne, v) if state => format!("NOT COALESCE({}, 0)", self.in_state(&e, v)),
            Op::In(vs) if state => {
                let any: Vec<String> = vs.iter().map(|v| self.in_state(&e, v)).collect();
                format!("({})", any.join(" OR "))
            }
            Op::Cmp(Cmp::Eq, v) => self.equals(&e, &ty, &kind, v),
            Op::Cmp(Cmp::Ne, v) => format!("NOT COALESCE({}, 0)", self.equals(&e, &ty, &kind, v)),
            Op::In(vs) => {
                let any: Vec<String> = vs.iter().map(|v| self.equals(&e, &ty, &kind, v)).collect();
                format!("({})", any.join(" OR "))
            }
            Op::Cmp(cmp, v) => self.range(&e, &ty, &kind, cmp.as_str(), v),
            Op::Prefix(p) => {
                let from = self.arg(Value::Text(p.clone()));
                let range = match prefix_upper_bound(p) {
                    Some(upper) => format!("{e} >= {from} AND {e} < {}", self.arg(Value::Text(upper))),
                    None => format!("{e} >= {from}"),
                };
                match kind {
                    Kind::Text => format!("({range})"),
                    Kind::Json => format!("({range} AND {ty} = 'text')"),
                    Kind::Time => "0".into(),
                }
            }
            Op::Exists => format!("{e} IS NOT NULL"),
            Op::Missing => format!("{e} IS NULL"),
        }
    }

    /// `= v` as the reference's `equals`.
    fn equals(&mut self, e: &str, ty: &str, kind: &Kind, v: &V) -> String {
        match (kind, v) {
            (Kind::Text, V::Str(s)) => format!("{e} = {}", self.arg(Value::Text(s.clone()))),
            (Kind::Time, V::Num(n)) => format!("{e} = {}", self.arg(Value::Real(*n))),
            (Kind::Json, V::Str(s)) => {
                format!("({e} = {} AND {ty} = 'text')", self.arg(Value::Text(s.clone())))
            }
            (Kind::Json, V::Num(n)) => {
                format!(
                    "({e} = {} AND {ty} IN ('integer','real'))",
                    self.arg(Value::Real(*n))
                )
            }
            (Kind::Json, V::Bool(b)) => format!("{ty} = '{b}'"),
            (Kind::Json, V::Null) => format!("{ty} = 'null'"),
            // A text field is never a number, a boolean or null; a time never a text.
            _ => "0".into(),
        }
    }

    fn range(&mut self, e: &str, ty: &str, kind: &Kind, op: &str, v: &V) -> String {
        match (kind, v) {
            (Kind::Text, V::Str(s)) => format!("{e} {op} {}", self.arg(Value::Text(s.clone()))),
            (Kind::Time, V::Num(n)) => format!("{e} {op} {}", self.arg(Value::Real(*n))),
            (Kind::Json, V::Str(s)) => {
                format!(
                    "({e} {op} {} AND {ty} = 'text')",
                    self.arg(Value::Text(s.clone()))
                )
            }
            (Kind::Json, V::Num(n)) => {
                format!(
                    "({e} {op} {} AND {ty} IN ('integer','real'))",
                    self.arg(Value::Real(*n))
                )
            }
            _ => "0".into(),
        }
    }

    /// In state `v`: the active path equal to it, or inside `v.` .. `v/` (`/` follows `.`).
    fn in_state(&mut self, e: &str, v: &V) -> String {
        let V::Str(s) = v else { return "0".into() };
        let exact = self.arg(Value::Text(s.clone()));
        let from = self.arg(Value::Text(format!("{s}.")));
        let to = self.arg(Value::Text(format!("{s}/")));
        format!("({e} = {exact} OR ({e} >= {from} AND {e} < {to}))")
    }
}

/// The filter as a condition and its parameters, in order.
pub(crate) fn condition(filter: &Filter) -> (String, Vec<Value>) {
    let mut sql = Sql { args: Vec::new() };
    let text = sql.expr(&filter.expr);
    (text, sql.args)
}
