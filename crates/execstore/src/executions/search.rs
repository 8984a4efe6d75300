//! Finding executions by their data: the `where` language over an execution
//! ([`EXECUTION_ROOTS`], [`parse_where`], [`execution_matches`]) and search attributes
//! ([`SearchAttribute`]), the context paths a store keeps indexed.
//!
//! The paths of an execution: `id`, `status`, `definition`, `state` (`state = a.b` finds
//! executions in state `a.b`, that is whose active path is `a.b` or below it, as the
//! listing's search does), `parent`, `created`, `updated`, `finished` (times) and
//! `context.<keys>` (the execution's context document).

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::error::{Result, StoreError};
use crate::executions::model::{Execution, Status};
use crate::kit::filter::{self, eval, Cmp, Filter, Op, Path, RootKind, Term, Value};

/// The roots of an execution's paths.
pub const EXECUTION_ROOTS: &[RootKind] = &[
    RootKind {
        name: "id",
        json: false,
        time: false,
    },
    RootKind {
        name: "status",
        json: false,
        time: false,
    },
    RootKind {
        name: "definition",
        json: false,
        time: false,
    },
    RootKind {
        name: "state",
        json: false,
        time: false,
    },
    RootKind {
        name: "parent",
        json: false,
        time: false,
    },
    RootKind {
        name: "created",
        json: false,
        time: true,
    },
    RootKind {
        name: "updated",
        json: false,
        time: true,
    },
    RootKind {
        name: "finished",
        json: false,
        time: true,
    },
    RootKind {
        name: "context",
        json: true,
        time: false,
    },
];

/// The most search attributes one store keeps.
pub const MAX_ATTRIBUTES: usize = 64;

/// Parses a `where` text over executions, checks its paths and resolves its times against
/// `now` (epoch seconds: the caller's clock). Bad input is [`StoreError::InvalidInput`].
pub fn parse_where(text: &str, now: f64) -> Result<Filter> {
    let mut f = filter::parse(text)?;
    f.check_paths(EXECUTION_ROOTS)?;
    f.resolve_times(EXECUTION_ROOTS, now)?;
    normalize_statuses(&mut f)?;
    check_filter(&f)?;
    Ok(f)
}

/// `status = running` is `status = "RUNNING"` (statuses are stored upper-case): each value
/// of `status` names a status, in any case; another is [`StoreError::InvalidInput`].
fn normalize_statuses(f: &mut Filter) -> Result<()> {
    let status = |v: &mut Value| -> Result<()> {
        if let Value::Str(s) = v {
            let parsed: Status = s.parse().map_err(|_| {
                let all: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
                StoreError::invalid("where", format!("status {s:?} is none of {}", all.join(", ")))
            })?;
            *s = parsed.as_str().to_owned();
        }
        Ok(())
    };
    f.expr.terms_mut(&mut |t| {
        if t.path.root != "status" {
            return Ok(());
        }
        match &mut t.op {
            Op::Cmp(Cmp::Eq | Cmp::Ne, v) => status(v),
            Op::In(vs) => vs.iter_mut().try_for_each(status),
            _ => Ok(()),
        }
    })
}

/// Checks a filter built or deserialized without [`parse_where`]: known paths, time values
/// that are numbers, and keys that a backend can spell in its JSON path.
pub fn check_filter(f: &Filter) -> Result<()> {
    f.check_paths(EXECUTION_ROOTS)?;
    for t in f.expr.terms() {
        for key in &t.path.keys {
            check_key(key)?;
        }
        let time = EXECUTION_ROOTS.iter().any(|r| r.time && r.name == t.path.root);
        if time {
            let is_num = |v: &Value| matches!(v, Value::Num(n) if n.is_finite()) || *v == Value::Null;
            let ok = match &t.op {
                Op::Cmp(_, v) => is_num(v),
                Op::In(vs) => vs.iter().all(is_num),
                Op::Prefix(_) => false,
                Op::Exists | Op::Missing => true,
            };
            if !ok {
                return Err(StoreError::invalid(
                    "where",
                    format!("{}: expected a time in {t}", t.path),
                ));
            }
        }
    }
    Ok(())
}

/// A key of a context path: no quote, backslash, apostrophe or control character (they
/// would need escaping in every backend's JSON path; harel's contexts do not use them).
fn check_key(key: &str) -> Result<()> {
    if key
        .chars()
        .any(|c| matches!(c, '"' | '\\' | '\'') || c.is_control())
    {
        return Err(StoreError::invalid(
            "where",
            format!("the key {key:?} holds a quote, a backslash or a control character"),
        ));
    }
    Ok(())
}

/// The value of a path of `exe` as JSON (`None`: absent).
fn value_of(exe: &Execution, path: &Path) -> Option<Json> {
    let text = |s: &str| Some(Json::String(s.to_owned()));
    let time = |t: Option<f64>| t.and_then(serde_json::Number::from_f64).map(Json::Number);
    match path.root.as_str() {
        "id" => text(&exe.id),
        "status" => text(exe.status.as_str()),
        "definition" => text(&exe.definition_id),
        "state" => exe.active_path.as_deref().and_then(text),
        "parent" => exe.parent_id.as_deref().and_then(text),
        "created" => time(exe.created_at),
        "updated" => time(exe.updated_at),
        "finished" => time(exe.finished_at),
        _ => None,
    }
}

/// Whether the active path `path` is in state `state` (equal, or below it at a `.`).
pub fn in_state(path: &str, state: &str) -> bool {
    path.strip_prefix(state)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// Whether `exe` passes one term.
fn term_matches(exe: &Execution, t: &Term) -> bool {
    if t.path.root == "context" {
        let found = exe
            .context
            .get(&t.path.keys[0])
            .and_then(|v| eval::lookup(v, &t.path.keys[1..]));
        return eval::op_matches(&t.op, found);
    }
    if t.path.root == "state" {
        // `=`, `!=` and `in` mean "in state"; the other operators compare the path as text.
        let path = exe.active_path.as_deref();
        let in_any = |vs: &[Value]| {
            vs.iter()
                .any(|v| matches!((v, path), (Value::Str(s), Some(p)) if in_state(p, s)))
        };
        match &t.op {
            Op::Cmp(Cmp::Eq, v) => return in_any(std::slice::from_ref(v)),
            Op::Cmp(Cmp::Ne, v) => return !in_any(std::slice::from_ref(v)),
            Op::In(vs) => return in_any(vs),
            _ => {}
        }
    }
    eval::op_matches(&t.op, value_of(exe, &t.path).as_ref())
}

/// Whether `exe` passes `filter`: the reference every backend's listing follows.
pub fn execution_matches(filter: &Filter, exe: &Execution) -> bool {
    filter.expr.matches(&mut |t| term_matches(exe, t))
}

/// A context path a store keeps queryable by index (declared with
/// [`crate::ExecutionStore::declare_attribute`]). Paths of a filter that are neither
/// attributes nor the indexed fields of every execution are answered by a scan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchAttribute {
    /// The canonical path, `context.customer_id` (as [`Path`]'s `Display` writes it).
    pub path: String,
}

/// Parses an attribute's path (`context.customer_id`, `context."odd key"`) into its
/// canonical form. Anything but a context path is [`StoreError::InvalidInput`] on `path`.
pub fn attribute_path(text: &str) -> Result<Path> {
    let invalid = |why: String| StoreError::invalid("path", why);
    let f = filter::parse(&format!("{text} exists")).map_err(|e| invalid(format!("{text:?}: {e}")))?;
    let [t] = f.expr.terms()[..] else {
        return Err(invalid(format!("{text:?} is not one path")));
    };
    if t.path.root != "context" || t.path.keys.is_empty() {
        return Err(invalid(format!(
            "{text:?}: a search attribute is a path of the context, such as context.customer_id"
        )));
    }
    for key in &t.path.keys {
        check_key(key).map_err(|e| invalid(e.to_string()))?;
    }
    Ok(t.path.clone())
}

/// The state `filter` pins: a `state = "X"` term (in `X`: at it or below it) that every
/// match meets (the filter itself, or one of its top-level `and` terms). A backend may read
/// the state's executions first when they are few, as an index of the active path gives
/// them.
pub fn pinned_state(filter: &Filter) -> Option<&str> {
    fn pinned(e: &filter::Expr) -> Option<&str> {
        match e {
            filter::Expr::Term(Term {
                path,
                op: Op::Cmp(Cmp::Eq, Value::Str(state)),
            }) if path.root == "state" && path.keys.is_empty() => Some(state.as_str()),
            _ => None,
        }
    }
    match &filter.expr {
        filter::Expr::And(parts) => parts.iter().find_map(pinned),
        e => pinned(e),
    }
}

/// The paths of `filter` that are answered by a scan, given the store's `declared`
/// attributes: every context path not declared (the other roots are indexed everywhere).
pub fn scanned_paths(filter: &Filter, declared: &[SearchAttribute]) -> Vec<String> {
    filter
        .paths()
        .into_iter()
        .filter(|p| p.root == "context")
        .map(|p| p.to_string())
        .filter(|p| !declared.iter().any(|a| &a.path == p))
        .collect()
}
