//! The meaning of a term over a JSON value: the reference that every backend's SQL follows.
//!
//! - `= v`: the value is of `v`'s kind and equal (numbers as numbers: `1` equals `1.0`;
//!   `= null` finds a JSON null, not an absent key); `!= v` is its negation (absent differs).
//! - `<`, `<=`, `>`, `>=`: numbers with numbers, texts with texts (by bytes); a value of
//!   another kind, or absent, never matches.
//! - `^= "p"`: a text starting with `p` (by bytes).
//! - `exists`: present and not null; `not exists`: its negation.
//! - `in (a, b)`: `= a or = b`.

use std::cmp::Ordering;

use serde_json::Value as Json;

use super::{Cmp, Expr, Op, Term, Value};

/// Whether `found` (absent: `None`) equals `v` as `= v` means it.
pub fn equals(found: Option<&Json>, v: &Value) -> bool {
    match (found, v) {
        (Some(Json::String(a)), Value::Str(b)) => a == b,
        (Some(Json::Number(a)), Value::Num(b)) => a.as_f64() == Some(*b),
        (Some(Json::Bool(a)), Value::Bool(b)) => a == b,
        (Some(Json::Null), Value::Null) => true,
        _ => false,
    }
}

/// How `found` orders against `v`, when they are of one kind (number or text).
pub fn order(found: Option<&Json>, v: &Value) -> Option<Ordering> {
    match (found, v) {
        (Some(Json::String(a)), Value::Str(b)) => Some(a.as_str().cmp(b.as_str())),
        (Some(Json::Number(a)), Value::Num(b)) => a.as_f64()?.partial_cmp(b),
        _ => None,
    }
}

/// Whether `found` passes `op`.
pub fn op_matches(op: &Op, found: Option<&Json>) -> bool {
    match op {
        Op::Cmp(Cmp::Eq, v) => equals(found, v),
        Op::Cmp(Cmp::Ne, v) => !equals(found, v),
        Op::Cmp(cmp, v) => order(found, v).is_some_and(|o| match cmp {
            Cmp::Lt => o == Ordering::Less,
            Cmp::Le => o != Ordering::Greater,
            Cmp::Gt => o == Ordering::Greater,
            Cmp::Ge => o != Ordering::Less,
            Cmp::Eq | Cmp::Ne => false,
        }),
        Op::Prefix(p) => matches!(found, Some(Json::String(s)) if s.starts_with(p.as_str())),
        Op::Exists => found.is_some_and(|v| !v.is_null()),
        Op::Missing => found.is_none_or(|v| v.is_null()),
        Op::In(values) => values.iter().any(|v| equals(found, v)),
    }
}

/// The value at `keys` below `doc` (object keys only), or `None`.
pub fn lookup<'a>(doc: &'a Json, keys: &[String]) -> Option<&'a Json> {
    keys.iter().try_fold(doc, |at, key| at.as_object()?.get(key))
}

impl Expr {
    /// Whether the condition holds, given whether each term does.
    pub fn matches(&self, term: &mut dyn FnMut(&Term) -> bool) -> bool {
        match self {
            Expr::Term(t) => term(t),
            Expr::And(parts) => parts.iter().all(|p| p.matches(term)),
            Expr::Or(parts) => parts.iter().any(|p| p.matches(term)),
        }
    }
}
