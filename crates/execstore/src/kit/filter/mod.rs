//! The one query language (`where`) of every listing: terms such as `status = running`,
//! `context.customer_id = "c-17"`, `context.total >= 100`, `created > -1h`,
//! `context.tags exists`, joined by `and` / `or`, grouped by parentheses. docs/search.md in the
//! repository documents it with examples.
//!
//! This module is the language itself, independent of what is filtered: [`parse`] turns a text
//! into a [`Filter`] (an [`Expr`] tree of [`Term`]s over [`Path`]s), with a typed error naming
//! the character where it went wrong; a contract then checks the paths it knows
//! ([`Filter::check_paths`]) and resolves time values ([`Filter::resolve_times`], with the
//! caller's `now`: the core reads no clock). [`Filter`]'s `Display` is its canonical text,
//! which parses back to the same filter (a surface that carries a filter as text, such as the
//! WIT component, uses it). [`eval`] matches a term against a JSON value, the reference every
//! SQL translation follows.

pub mod eval;
mod parse;
mod time;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use parse::{parse, MAX_DEPTH, MAX_TERMS, MAX_WHERE_BYTES};
pub use time::parse_time;

use crate::error::{Result, StoreError};

/// A parsed `where` text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Filter {
    /// The condition.
    pub expr: Expr,
}

/// A condition: a term, or terms joined.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expr {
    /// Every part holds (two or more).
    And(Vec<Expr>),
    /// Any part holds (two or more).
    Or(Vec<Expr>),
    /// One comparison.
    Term(Term),
}

/// One comparison: a path and what its value must be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Term {
    /// What is compared.
    pub path: Path,
    /// How.
    pub op: Op,
}

/// A path: a root (`status`, `context`, `event`, ...) and, below a JSON root, its keys.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Path {
    /// The first name (`context` in `context.customer.id`).
    pub root: String,
    /// The keys after it (`["customer", "id"]`), each an object key.
    pub keys: Vec<String>,
}

/// A comparison's operator and operand.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// `=`, `!=`, `<`, `<=`, `>`, `>=` and a value.
    Cmp(Cmp, Value),
    /// `^=` (or `starts`): a string starting with this text.
    Prefix(String),
    /// `exists`: present and not null.
    Exists,
    /// `not exists`: absent or null.
    Missing,
    /// `in (a, b, ...)`: equal to any of these.
    In(Vec<Value>),
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cmp {
    /// `=`
    Eq,
    /// `!=` (the negation of `=`: an absent value differs)
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Cmp {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Cmp::Eq => "=",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }

    /// Whether it orders (`<` ... `>=`) rather than tests equality.
    pub fn is_range(self) -> bool {
        matches!(self, Cmp::Lt | Cmp::Le | Cmp::Gt | Cmp::Ge)
    }
}

/// A value a path is compared with: a JSON scalar.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Value {
    /// A string (quoted, or a bare word that is not a number, `true`, `false` or `null`).
    Str(String),
    /// A number.
    Num(f64),
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
}

impl Path {
    /// A path of a root alone (`status`).
    pub fn root(root: &str) -> Self {
        Path {
            root: root.to_owned(),
            keys: Vec::new(),
        }
    }

    /// Whether a key can be written bare (otherwise it is quoted).
    fn bare(key: &str) -> bool {
        !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            && !matches!(
                key.to_ascii_lowercase().as_str(),
                "and" | "or" | "in" | "exists" | "not" | "starts"
            )
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.root)?;
        for key in &self.keys {
            if Path::bare(key) {
                write!(f, ".{key}")?;
            } else {
                write!(f, ".{}", serde_json::Value::String(key.clone()))?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) => write!(f, "{}", serde_json::Value::String(s.clone())),
            Value::Num(n) if n.fract() == 0.0 && n.abs() < 1e15 => write!(f, "{}", *n as i64),
            Value::Num(n) => match serde_json::Number::from_f64(*n) {
                Some(n) => write!(f, "{n}"),
                None => f.write_str("null"),
            },
            Value::Bool(b) => write!(f, "{b}"),
            Value::Null => f.write_str("null"),
        }
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.op {
            Op::Cmp(cmp, value) => write!(f, "{} {} {value}", self.path, cmp.as_str()),
            Op::Prefix(text) => write!(f, "{} ^= {}", self.path, Value::Str(text.clone())),
            Op::Exists => write!(f, "{} exists", self.path),
            Op::Missing => write!(f, "{} not exists", self.path),
            Op::In(values) => {
                write!(f, "{} in (", self.path)?;
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str(")")
            }
        }
    }
}

impl Expr {
    fn fmt_in(&self, f: &mut fmt::Formatter<'_>, inside_and: bool) -> fmt::Result {
        match self {
            Expr::Term(t) => write!(f, "{t}"),
            Expr::And(parts) => {
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" and ")?;
                    }
                    p.fmt_in(f, true)?;
                }
                Ok(())
            }
            Expr::Or(parts) => {
                if inside_and {
                    f.write_str("(")?;
                }
                for (i, p) in parts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" or ")?;
                    }
                    p.fmt_in(f, false)?;
                }
                if inside_and {
                    f.write_str(")")?;
                }
                Ok(())
            }
        }
    }

    /// Every term, depth first.
    pub fn terms(&self) -> Vec<&Term> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect<'a>(&'a self, out: &mut Vec<&'a Term>) {
        match self {
            Expr::Term(t) => out.push(t),
            Expr::And(parts) | Expr::Or(parts) => parts.iter().for_each(|p| p.collect(out)),
        }
    }

    /// Calls `f` on every term, depth first, stopping at its first error.
    pub fn terms_mut(&mut self, f: &mut dyn FnMut(&mut Term) -> Result<()>) -> Result<()> {
        match self {
            Expr::Term(t) => f(t),
            Expr::And(parts) | Expr::Or(parts) => parts.iter_mut().try_for_each(|p| p.terms_mut(f)),
        }
    }
}

impl fmt::Display for Filter {
    /// The canonical text: parses back to this filter.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.expr.fmt_in(f, false)
    }
}

/// What a contract knows of one root: whether it takes keys (a JSON document) and whether
/// its values are times (resolved against `now`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RootKind {
    /// The root's name.
    pub name: &'static str,
    /// `context.a.b`: keys below it are required; otherwise none are allowed.
    pub json: bool,
    /// Values are times (epoch seconds, ISO-8601, or relative to now such as `-15m`).
    pub time: bool,
}

impl Filter {
    /// Every distinct path the filter reads, in the order first met.
    pub fn paths(&self) -> Vec<&Path> {
        let mut out: Vec<&Path> = Vec::new();
        for t in self.expr.terms() {
            if !out.contains(&&t.path) {
                out.push(&t.path);
            }
        }
        out
    }

    /// Checks every path against the roots a contract knows: an unknown root, keys below a
    /// plain root or none below a JSON one is [`StoreError::InvalidInput`] naming the roots.
    pub fn check_paths(&self, roots: &[RootKind]) -> Result<()> {
        for t in self.expr.terms() {
            let Some(kind) = roots.iter().find(|r| r.name == t.path.root) else {
                let names: Vec<&str> = roots.iter().map(|r| r.name).collect();
                return Err(StoreError::invalid(
                    "where",
                    format!("unknown path {}: expected one of {}", t.path, names.join(", ")),
                ));
            };
            if kind.json && t.path.keys.is_empty() {
                return Err(StoreError::invalid(
                    "where",
                    format!(
                        "{} needs a key below it, such as {}.customer_id",
                        t.path, kind.name
                    ),
                ));
            }
            if !kind.json && !t.path.keys.is_empty() {
                return Err(StoreError::invalid(
                    "where",
                    format!("{} has no keys below it (write {})", t.path, kind.name),
                ));
            }
        }
        Ok(())
    }

    /// Turns the values of time roots into epoch seconds: a number stays, a text is ISO-8601
    /// or relative to `now` (`-15m`, `-1h`, `-7d`; see [`parse_time`]). A value that is no
    /// time, or an operator a time does not take (`^=`), is [`StoreError::InvalidInput`].
    pub fn resolve_times(&mut self, roots: &[RootKind], now: f64) -> Result<()> {
        let is_time = |p: &Path| roots.iter().any(|r| r.name == p.root && r.time);
        let resolve = |path: &Path, v: &mut Value| -> Result<()> {
            match v {
                Value::Num(_) | Value::Null => Ok(()),
                Value::Str(s) => {
                    *v = Value::Num(parse_time(s, now).map_err(|why| {
                        StoreError::invalid("where", format!("{path}: {s:?} is not a time: {why}"))
                    })?);
                    Ok(())
                }
                Value::Bool(_) => Err(StoreError::invalid(
                    "where",
                    format!("{path}: expected a time (epoch seconds, ISO-8601 or -15m), found {v}"),
                )),
            }
        };
        self.expr.terms_mut(&mut |t| {
            if !is_time(&t.path) {
                return Ok(());
            }
            let path = t.path.clone();
            match &mut t.op {
                Op::Cmp(_, v) => resolve(&path, v),
                Op::In(vs) => vs.iter_mut().try_for_each(|v| resolve(&path, v)),
                Op::Prefix(_) => Err(StoreError::invalid(
                    "where",
                    format!("{path} is a time: ^= does not apply (use >= and <)"),
                )),
                Op::Exists | Op::Missing => Ok(()),
            }
        })
    }

    /// The filter joined with another (`self and other`).
    pub fn and(self, other: Filter) -> Filter {
        let mut parts = Vec::new();
        for e in [self.expr, other.expr] {
            match e {
                Expr::And(p) => parts.extend(p),
                e => parts.push(e),
            }
        }
        Filter {
            expr: Expr::And(parts),
        }
    }
}

#[cfg(test)]
mod tests;
