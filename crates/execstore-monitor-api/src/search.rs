//! Finding executions by their data (docs/search.md): `GET /api/attributes` (the declared
//! search attributes), `POST /api/attributes` (declare one: `{"path": "context.KEY"}`, a
//! write behind the token), `POST /api/attributes/drop` (drop one, same body), and
//! `GET /api/suggest?path=TEXT` (known paths starting with TEXT and, for a whole path, its
//! frequent values), the `where` box's suggestions. `?where=` on `/api/executions` and
//! `/api/counts` is read here too ([`Call::where_filter`]).
//!
//! Suggestions are cheap by construction: they read a sample of at most [`SAMPLE`]
//! executions (those updated in the last day first, else the first by id), never the store.

use std::collections::BTreeMap;

use execstore::executions::search::EXECUTION_ROOTS;
use execstore::executions::{parse_where, ListQuery, Status};
use execstore::kit::filter::{Filter, Path};
use serde_json::{json, Map, Value};

use crate::params::Params;
use crate::{ApiError, ApiResult, Call};

/// How many executions the suggestions read at most.
pub(crate) const SAMPLE: usize = 200;
/// How deep below `context` a suggested path goes.
const DEPTH: usize = 3;
/// How many paths and values a suggestion lists at most.
const SUGGESTIONS: usize = 20;

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(400, "INVALID_INPUT", message)
}

impl Call<'_> {
    /// `GET /api/attributes`.
    pub(crate) fn attributes(&self) -> ApiResult {
        Params::new(self.request.query, &[], self.now)?;
        let all = self.exec()?.attributes()?;
        Ok(json!({ "attributes": all }))
    }

    /// `POST /api/attributes` (`drop`: `POST /api/attributes/drop`), body `{"path": ...}`.
    pub(crate) fn attribute_write(&self, drop: bool) -> ApiResult {
        Params::new(self.request.query, &[], self.now)?;
        let path = body_path(self.request.body)?;
        let store = self.exec()?;
        if drop {
            let dropped = store.drop_attribute(&path)?;
            Ok(json!({ "path": path, "dropped": dropped }))
        } else {
            let attribute = store.declare_attribute(&path)?;
            Ok(json!({ "path": attribute.path, "declared": true }))
        }
    }

    /// `GET /api/suggest?path=TEXT`: `paths`, the known paths starting with TEXT (each with
    /// whether it is `declared`, and how many sampled executions hold it), and `values`, the
    /// most frequent values of the path TEXT names (for a path of an execution's field or
    /// context; empty otherwise); `sampled`: how many executions were read.
    pub(crate) fn suggest(&self) -> ApiResult {
        let params = Params::new(self.request.query, &["path"], self.now)?;
        let typed = params.get("path").unwrap_or("").trim().to_owned();
        if typed.len() > 512 {
            return Err(invalid("path: longer than 512 bytes"));
        }
        let store = self.exec()?;
        let declared: Vec<String> = store.attributes()?.into_iter().map(|a| a.path).collect();
        let sample = self.sample()?;
        // Every path and its count, and the values of the path asked for.
        let mut paths: BTreeMap<String, usize> = BTreeMap::new();
        for root in EXECUTION_ROOTS.iter().filter(|r| !r.json) {
            paths.insert(root.name.to_owned(), sample.len());
        }
        for exe in &sample {
            let mut found = Vec::new();
            walk(
                &Value::Object(exe.context.clone()),
                &mut Path::root("context"),
                &mut found,
            );
            for p in found {
                *paths.entry(p).or_default() += 1;
            }
        }
        for d in &declared {
            paths.entry(d.clone()).or_default();
        }
        let mut listed: Vec<(&String, &usize)> =
            paths.iter().filter(|(p, _)| p.starts_with(&typed)).collect();
        listed.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let listed: Vec<Value> = listed
            .into_iter()
            .take(SUGGESTIONS)
            .map(|(p, n)| json!({ "path": p, "count": n, "declared": declared.contains(p) || !p.starts_with("context.") }))
            .collect();
        let values = match execstore::executions::search::attribute_path(&typed) {
            Ok(path) => frequent(sample.iter().filter_map(|e| {
                e.context
                    .get(&path.keys[0])
                    .and_then(|v| execstore::kit::filter::eval::lookup(v, &path.keys[1..]))
                    .cloned()
            })),
            Err(_) => match typed.as_str() {
                "status" => Status::ALL
                    .iter()
                    .map(|s| json!({ "value": s.as_str().to_lowercase(), "count": null }))
                    .collect(),
                "definition" => frequent(sample.iter().map(|e| Value::from(e.definition_id.clone()))),
                "state" => frequent(
                    sample
                        .iter()
                        .filter_map(|e| e.active_path.clone().map(Value::from)),
                ),
                _ => Vec::new(),
            },
        };
        Ok(json!({ "paths": listed, "values": values, "sampled": sample.len() }))
    }

    /// The executions the suggestions read: those updated in the last day, else the first
    /// by id, at most [`SAMPLE`].
    fn sample(&self) -> Result<Vec<execstore::Execution>, ApiError> {
        let store = self.exec()?;
        let recent = ListQuery::new()
            .limit(SAMPLE)
            .updated_between(Some((self.now - 86_400.0).max(0.0)), None);
        let mut page = store.list_executions(&recent)?;
        if page.items.is_empty() {
            page = store.list_executions(&ListQuery::new().limit(SAMPLE))?;
        }
        let mut out = Vec::with_capacity(page.items.len());
        for s in page.items {
            if let Some(exe) = store.load(&s.id)? {
                out.push(exe);
            }
        }
        Ok(out)
    }
}

/// Every path of a JSON object below `at`, to [`DEPTH`] keys (objects are walked, their
/// leaves and arrays named).
pub(crate) fn walk(value: &Value, at: &mut Path, out: &mut Vec<String>) {
    let Value::Object(map) = value else { return };
    for (key, v) in map {
        if key
            .chars()
            .any(|c| matches!(c, '"' | '\\' | '\'') || c.is_control())
        {
            continue;
        }
        at.keys.push(key.clone());
        out.push(at.to_string());
        if at.keys.len() < DEPTH {
            walk(v, at, out);
        }
        at.keys.pop();
    }
}

/// The most frequent scalar values, most frequent first, as the `where` language writes them.
pub(crate) fn frequent(values: impl Iterator<Item = Value>) -> Vec<Value> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for v in values {
        let text = match v {
            Value::String(s) => Value::String(s).to_string(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Null => "null".to_owned(),
            _ => continue,
        };
        *counts.entry(text).or_default() += 1;
    }
    let mut sorted: Vec<(String, usize)> = counts.into_iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    sorted
        .into_iter()
        .take(SUGGESTIONS)
        .map(|(value, count)| json!({ "value": value, "count": count }))
        .collect()
}

/// The `path` of a write's JSON object body (other keys, such as the write path's `reason`,
/// are left to it).
fn body_path(body: &[u8]) -> Result<String, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        invalid(format!(
            "the body must be JSON {{\"path\": \"context.KEY\"}}: {e}"
        ))
    })?;
    let Value::Object(body) = value else {
        return Err(invalid(
            "the body must be a JSON object {\"path\": \"context.KEY\"}",
        ));
    };
    let body: Map<String, Value> = body;
    match body.get("path") {
        Some(Value::String(p)) => Ok(p.clone()),
        Some(_) => Err(invalid("\"path\" must be a string")),
        None => Err(invalid("the body has no \"path\"")),
    }
}

/// The `where` parameter's filter (relative times against the request's clock); none when
/// absent or blank.
pub(crate) fn where_of(params: &Params) -> Result<Option<Filter>, ApiError> {
    match params.get("where").map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => Ok(Some(parse_where(text, params.now())?)),
    }
}
