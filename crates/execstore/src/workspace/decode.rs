//! The one decoder of each workspace record a surface receives as JSON (the npm package's JS
//! objects, Python's JSON text, the component's WIT strings), so that a bad record fails with
//! the same [`StoreError::InvalidInput`], naming the same field, on every surface.
//!
//! A record's decoder names fields relative to the record (`event`, `version`); a surface
//! decoding a list puts them under the item ([`decode_list`]: `entries[1].event`), and a
//! surface with one argument under its name ([`StoreError::within`]: `stored.status`). Keys a
//! record does not know are refused: a misspelt `correlation_id` must not be dropped silently.

use super::model::{
    opt_str_field, Entry, EvaluationError, RuleProgress, Run, ScopeState, StoredRule, StoredRuleStatus,
};
use crate::error::{Result, StoreError};
use crate::executions::model::JsonObject;
use crate::kit::pyjson;
use serde_json::Value;

/// Parses JSON text given as input for `field` (Python's compatible JSON: `NaN`, lone
/// surrogates); text that does not parse is `InvalidInput` naming `field`.
pub fn input_value(field: &str, text: &str) -> Result<Value> {
    pyjson::loads(text).map_err(|e| StoreError::invalid(field, format!("is not JSON text: {e}")))
}

/// Parses JSON text given as input for `field`, which must be one JSON object.
pub fn input_object(field: &str, text: &str) -> Result<JsonObject> {
    match input_value(field, text)? {
        Value::Object(map) => Ok(map),
        _ => Err(StoreError::invalid(field, "must be the JSON text of one object")),
    }
}

/// Decodes the JSON text of one record given as input for `field` with the record's decoder
/// (`Entry::from_value`, ...): text that is not one JSON object is `InvalidInput` naming
/// `field`, and the record's own errors are named under it (`entries[0].event`).
pub fn decode_text<T>(field: &str, text: &str, from_value: impl FnOnce(&Value) -> Result<T>) -> Result<T> {
    let value = Value::Object(input_object(field, text)?);
    from_value(&value).map_err(|e| e.within(|| field.to_owned()))
}

/// Decodes a list of records' JSON texts (the argument `field`) with [`decode_text`], item
/// `i` named `field[i]`.
pub fn decode_texts<T, S: AsRef<str>>(
    field: &str,
    texts: &[S],
    from_value: impl Fn(&Value) -> Result<T>,
) -> Result<Vec<T>> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| decode_text(&format!("{field}[{i}]"), text.as_ref(), &from_value))
        .collect()
}

/// Decodes `value` (the argument `field`), which must be a JSON array of objects, item by
/// item with `decode`; an item's error is named under `field[i]`.
pub fn decode_list<T>(
    field: &str,
    value: &Value,
    mut decode: impl FnMut(&JsonObject) -> Result<T>,
) -> Result<Vec<T>> {
    let Value::Array(items) = value else {
        return Err(StoreError::invalid(field, "must be a list"));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::Object(map) => decode(map).map_err(|e| e.within(|| format!("{field}[{i}]"))),
            _ => Err(StoreError::invalid(
                format!("{field}[{i}]"),
                "must be a JSON object",
            )),
        })
        .collect()
}

/// Refuses any key of `map` not in `known`.
fn only(map: &JsonObject, known: &[&str]) -> Result<()> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => Err(StoreError::invalid(key.as_str(), "is not a known field")),
        None => Ok(()),
    }
}

fn object(what: &str, value: &Value) -> Result<JsonObject> {
    match value {
        Value::Object(map) => Ok(map.clone()),
        _ => Err(StoreError::invalid(what, "must be a JSON object")),
    }
}

fn required_str(map: &JsonObject, key: &str) -> Result<String> {
    match map.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        None | Some(Value::Null) => Err(StoreError::invalid(key, "is required")),
        Some(_) => Err(StoreError::invalid(key, "must be a string")),
    }
}

fn required_object(map: &JsonObject, key: &str) -> Result<JsonObject> {
    match map.get(key) {
        Some(Value::Object(o)) => Ok(o.clone()),
        None | Some(Value::Null) => Err(StoreError::invalid(key, "is required (a JSON object)")),
        Some(_) => Err(StoreError::invalid(key, "must be a JSON object")),
    }
}

const ENTRY_FIELDS: [&str; 6] = [
    "id",
    "actor",
    "event",
    "causation",
    "correlation_id",
    "traceparent",
];

impl Entry {
    /// An entry from its JSON object (reflexr's `Entry` as JSON): `id` and `event` required,
    /// `actor` any JSON (`null` when missing), `causation` any JSON or `null`, `correlation_id`
    /// and `traceparent` a string or `null`; no other key.
    pub fn from_object(map: &JsonObject) -> Result<Entry> {
        only(map, &ENTRY_FIELDS)?;
        Ok(Entry {
            id: required_str(map, "id")?,
            actor: map.get("actor").cloned().unwrap_or(Value::Null),
            event: required_object(map, "event")?,
            causation: map.get("causation").filter(|v| !v.is_null()).cloned(),
            correlation_id: opt_str_field(map, "correlation_id")?,
            traceparent: opt_str_field(map, "traceparent")?,
        })
    }

    /// An entry from a JSON value, which must be an object ([`Entry::from_object`]).
    pub fn from_value(value: &Value) -> Result<Entry> {
        Entry::from_object(&object("entry", value)?)
    }
}

const STORED_RULE_FIELDS: [&str; 4] = ["rule", "version", "status", "provenance"];

impl StoredRule {
    /// A stored rule from its JSON object (reflexr's `StoredRule` as JSON): `rule` (an object
    /// with a string `name`) and `version` (1 or more) required, `status` `"active"` (the
    /// default) or `"archived"`, `provenance` an object (`{}` when missing or `null`); no
    /// other key. Checked as [`StoredRule::check`] checks it.
    pub fn from_object(map: &JsonObject) -> Result<StoredRule> {
        only(map, &STORED_RULE_FIELDS)?;
        let version = match map.get("version") {
            Some(v) => v
                .as_i64()
                .ok_or_else(|| StoreError::invalid("version", "must be an integer"))?,
            None => return Err(StoreError::invalid("version", "is required")),
        };
        let status = match map.get("status") {
            None | Some(Value::Null) => StoredRuleStatus::Active,
            Some(Value::String(s)) => StoredRuleStatus::parse(s)?,
            Some(_) => return Err(StoreError::invalid("status", "must be a string")),
        };
        let provenance = match map.get("provenance") {
            None | Some(Value::Null) => JsonObject::new(),
            Some(Value::Object(p)) => p.clone(),
            Some(_) => return Err(StoreError::invalid("provenance", "must be a JSON object")),
        };
        let stored = StoredRule {
            rule: required_object(map, "rule")?,
            version,
            status,
            provenance,
        };
        stored.check()?;
        Ok(stored)
    }

    /// A stored rule from a JSON value, which must be an object ([`StoredRule::from_object`]).
    pub fn from_value(value: &Value) -> Result<StoredRule> {
        StoredRule::from_object(&object("stored", value)?)
    }

    /// The stored rule as reflexr's JSON object (`rule`, `version`, `status`, `provenance`).
    pub fn to_value(&self) -> Value {
        let mut map = JsonObject::new();
        map.insert("rule".into(), Value::Object(self.rule.clone()));
        map.insert("version".into(), Value::from(self.version));
        map.insert("status".into(), Value::from(self.status.as_str()));
        map.insert("provenance".into(), Value::Object(self.provenance.clone()));
        Value::Object(map)
    }

    /// The stored rule's JSON text as reflexr's `model_dump_json` order has it.
    pub fn to_json(&self) -> String {
        pyjson::dumps(&self.to_value())
    }
}

impl Run {
    /// A run from a JSON value given as input, which must be an object ([`Run::from_doc`]).
    pub fn from_value(value: &Value) -> Result<Run> {
        Run::from_doc(object("run", value)?)
    }
}

impl EvaluationError {
    /// A dead letter from a JSON value given as input, which must be an object naming its
    /// `rule` ([`EvaluationError::from_doc`]).
    pub fn from_value(value: &Value) -> Result<EvaluationError> {
        EvaluationError::from_doc(object("error", value)?)
    }
}

impl RuleProgress {
    /// A rule's progress from a JSON value given as input, which must be an object.
    pub fn from_value(value: &Value) -> Result<RuleProgress> {
        Ok(RuleProgress::from_doc(object("progress", value)?))
    }
}

impl ScopeState {
    /// A scope's state from a JSON value given as input, which must be an object.
    pub fn from_value(value: &Value) -> Result<ScopeState> {
        Ok(ScopeState::from_doc(object("state", value)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field_of<T: std::fmt::Debug>(r: Result<T>) -> (String, String) {
        match r {
            Err(StoreError::InvalidInput { field, reason }) => (field, reason),
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn an_entry_decodes_with_its_defaults() {
        let e = Entry::from_value(&json!({"id": "e1", "event": {"type": "t:a", "n": 1}})).unwrap();
        assert_eq!(e.id, "e1");
        assert_eq!(e.actor, Value::Null);
        assert_eq!(e.event["n"], json!(1));
        assert_eq!((e.causation, e.correlation_id, e.traceparent), (None, None, None));
        let full = json!({"id": "e2", "actor": {"kind": "source"}, "event": {"type": "t:a"},
            "causation": null, "correlation_id": "c", "traceparent": "00-ab"});
        let e = Entry::from_value(&full).unwrap();
        assert_eq!(e.actor, json!({"kind": "source"}));
        assert_eq!(e.causation, None, "a null causation is none");
        assert_eq!(e.correlation_id.as_deref(), Some("c"));
        assert_eq!(e.traceparent.as_deref(), Some("00-ab"));
    }

    #[test]
    fn a_bad_entry_names_its_field() {
        let cases = [
            (json!({"event": {"type": "t"}}), "id", "is required"),
            (json!({"id": 7, "event": {"type": "t"}}), "id", "must be a string"),
            (json!({"id": "x"}), "event", "is required (a JSON object)"),
            (
                json!({"id": "x", "event": "text"}),
                "event",
                "must be a JSON object",
            ),
            (
                json!({"id": "x", "event": {}, "traceparent": 1}),
                "traceparent",
                "must be a string or null",
            ),
            (
                json!({"id": "x", "event": {}, "correlation_id": []}),
                "correlation_id",
                "must be a string or null",
            ),
            (
                json!({"id": "x", "event": {}, "corelation_id": "c"}),
                "corelation_id",
                "is not a known field",
            ),
            (json!("entry"), "entry", "must be a JSON object"),
        ];
        for (value, field, reason) in cases {
            assert_eq!(
                field_of(Entry::from_value(&value)),
                (field.into(), reason.into()),
                "{value}"
            );
        }
    }

    #[test]
    fn a_list_names_the_item() {
        let list = json!([{"id": "a", "event": {"type": "t"}}, {"id": "b", "event": 1}]);
        let got = field_of(decode_list("entries", &list, Entry::from_object));
        assert_eq!(got.0, "entries[1].event");
        let got = field_of(decode_list(
            "entries",
            &json!([{"id": "a", "event": {}}, 3]),
            Entry::from_object,
        ));
        assert_eq!(got, ("entries[1]".into(), "must be a JSON object".into()));
        let got = field_of(decode_list("entries", &json!({"id": "a"}), Entry::from_object));
        assert_eq!(got, ("entries".into(), "must be a list".into()));
        let ok = decode_list(
            "entries",
            &list.as_array().unwrap()[..1].to_vec().into(),
            Entry::from_object,
        );
        assert_eq!(ok.unwrap()[0].id, "a");
    }

    #[test]
    fn a_stored_rule_decodes_checks_and_round_trips() {
        let s = StoredRule::from_value(&json!({"rule": {"name": "r1", "when": "x"}, "version": 2})).unwrap();
        assert_eq!(
            (s.name(), s.version, s.status),
            ("r1", 2, StoredRuleStatus::Active)
        );
        assert!(s.provenance.is_empty());
        let again = StoredRule::from_value(&s.to_value()).unwrap();
        assert_eq!(again, s);
        assert_eq!(
            s.to_json(),
            r#"{"rule": {"name": "r1", "when": "x"}, "version": 2, "status": "active", "provenance": {}}"#
        );
        let archived =
            json!({"rule": {"name": "r1"}, "version": 3, "status": "archived", "provenance": {"by": "me"}});
        let s = StoredRule::from_value(&archived).unwrap();
        assert_eq!(
            (s.status, s.provenance["by"].clone()),
            (StoredRuleStatus::Archived, json!("me"))
        );
    }

    #[test]
    fn a_bad_stored_rule_names_its_field() {
        let cases = [
            (json!({"version": 1}), "rule"),
            (json!({"rule": "r", "version": 1}), "rule"),
            (json!({"rule": {"when": "x"}, "version": 1}), "rule.name"),
            (json!({"rule": {"name": "r"}}), "version"),
            (json!({"rule": {"name": "r"}, "version": "1"}), "version"),
            (json!({"rule": {"name": "r"}, "version": 1.5}), "version"),
            (json!({"rule": {"name": "r"}, "version": 0}), "version"),
            (
                json!({"rule": {"name": "r"}, "version": 1, "status": "paused"}),
                "status",
            ),
            (
                json!({"rule": {"name": "r"}, "version": 1, "status": 1}),
                "status",
            ),
            (
                json!({"rule": {"name": "r"}, "version": 1, "provenance": []}),
                "provenance",
            ),
            (json!({"rule": {"name": "r"}, "version": 1, "note": "x"}), "note"),
            (json!([]), "stored"),
        ];
        for (value, field) in cases {
            assert_eq!(field_of(StoredRule::from_value(&value)).0, field, "{value}");
        }
        let under = StoredRule::from_value(&json!({"rule": {"name": "r"}, "version": 1, "status": "x"}))
            .map_err(|e| e.within(|| "stored".into()));
        assert_eq!(field_of(under).0, "stored.status");
    }

    #[test]
    fn input_text_must_parse_and_be_an_object_where_one_is_asked() {
        assert_eq!(input_value("actor", "[1, \"a\"]").unwrap(), json!([1, "a"]));
        assert_eq!(field_of(input_value("actor", "{")).0, "actor");
        let (field, reason) = field_of(input_object("event", "[1]"));
        assert_eq!(
            (field.as_str(), reason.as_str()),
            ("event", "must be the JSON text of one object")
        );
        assert_eq!(
            input_object("event", r#"{"type": "t"}"#).unwrap()["type"],
            json!("t")
        );
    }

    #[test]
    fn json_text_records_are_named_under_their_argument() {
        let bad = decode_text("entries[2]", r#"{"id": "x", "event": 1}"#, Entry::from_value);
        assert_eq!(field_of(bad).0, "entries[2].event");
        let bad = decode_text("entries[2]", "[]", Entry::from_value);
        assert_eq!(
            field_of(bad),
            ("entries[2]".into(), "must be the JSON text of one object".into())
        );
        let e = decode_text(
            "entry",
            r#"{"id": "x", "event": {"type": "t"}}"#,
            Entry::from_value,
        )
        .unwrap();
        assert_eq!(e.id, "x");
        let texts = [
            r#"{"id": "x", "event": {}}"#,
            r#"{"id": "y", "event": {}, "actor": 1}"#,
        ];
        let got = decode_texts("entries", &texts, Entry::from_value).unwrap();
        assert_eq!((got[0].id.as_str(), got[1].actor.clone()), ("x", json!(1)));
        let texts = [r#"{"id": "x", "event": {}}"#, r#"{"event": {}}"#];
        assert_eq!(
            field_of(decode_texts("entries", &texts, Entry::from_value)).0,
            "entries[1].id"
        );
        let stored = decode_text(
            "stored",
            r#"{"rule": {"name": "r"}, "version": 1, "status": 2}"#,
            StoredRule::from_value,
        );
        assert_eq!(field_of(stored).0, "stored.status");
    }

    #[test]
    fn the_document_records_decode_from_values() {
        let run = Run::from_value(&json!({"id": "r"}));
        assert_eq!(field_of(run).0, "rule");
        assert_eq!(field_of(Run::from_value(&json!(1))).0, "run");
        assert_eq!(
            field_of(EvaluationError::from_value(&json!({"seq": 1}))).0,
            "rule"
        );
        assert_eq!(
            EvaluationError::from_value(&json!({"rule": "r", "seq": 1}))
                .unwrap()
                .rule(),
            "r"
        );
        assert_eq!(field_of(RuleProgress::from_value(&json!(null))).0, "progress");
        assert_eq!(
            ScopeState::from_value(&json!({"n": 1})).unwrap().doc()["n"],
            json!(1)
        );
    }
}
