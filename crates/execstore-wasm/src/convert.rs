//! JS values in and out: objects through their JSON text (so key order and unknown fields
//! survive exactly as in the core), scalars checked by type so that a string version or a
//! NaN time is `INVALID_INPUT` before anything runs.

use js_sys::JSON;
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::{JsCast, JsValue};

use crate::errors::{backend, describe, invalid, WasmError};

/// The largest integer a JS number holds exactly.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// How [`object`] treats keys the shape does not know.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unknown {
    /// Kept (an execution's and an event's fields of a newer engine go to `extra`).
    Keep,
    /// Refused: a misspelt option or effect must not be silently dropped.
    Refuse,
}

/// Parses the JS value `value` (the argument `field`) as a `T`, through `JSON.stringify`:
/// object keys keep their order, `NaN` and `Infinity` become `null` (refused where a number
/// is expected), `undefined` properties vanish. A mismatch is `INVALID_INPUT` naming the
/// path inside the value, e.g. `effects.timers[0].fire_at`.
pub(crate) fn object<T: DeserializeOwned>(
    value: &JsValue,
    field: &str,
    unknown: Unknown,
) -> Result<T, WasmError> {
    if value.is_undefined() || value.is_null() {
        return Err(invalid(field, "is missing"));
    }
    let text = JSON::stringify(value)
        .map_err(|e| invalid(field, format!("is not JSON ({})", describe(&e))))?
        .as_string()
        .ok_or_else(|| invalid(field, "is not a JSON value"))?;
    // The common case first, without the path tracking: a value that parses and (where
    // refused) has no unknown key. Anything else is parsed again below, tracked, for the
    // exact path of what is wrong or unknown.
    let mut json = serde_json::Deserializer::from_str(&text);
    let fast = match unknown {
        Unknown::Keep => T::deserialize(&mut json).ok(),
        Unknown::Refuse => {
            let mut clean = true;
            serde_ignored::deserialize(&mut json, |_| clean = false)
                .ok()
                .filter(|_| clean)
        }
    };
    if let Some(parsed) = fast.filter(|_| json.end().is_ok()) {
        return Ok(parsed);
    }
    let mut ignored = Vec::new();
    let mut track = serde_path_to_error::Track::new();
    let mut json = serde_json::Deserializer::from_str(&text);
    let parsed = serde_ignored::deserialize(
        serde_path_to_error::Deserializer::new(&mut json, &mut track),
        |path| ignored.push(path.to_string()),
    );
    let parsed: T = parsed.map_err(|e| {
        // JSON has no NaN or Infinity (they became null): name the number itself.
        if let Some((path, n)) = non_finite(value, field.to_owned(), 0) {
            return invalid(path, format!("must be a finite number, not {}", js_number(n)));
        }
        let mut path = join(field, &track.path().to_string());
        let reason = reason(&e);
        // serde's path stops at the object that lacks the field: name the field itself.
        if let Some(missing) = reason
            .strip_prefix("missing field `")
            .and_then(|r| r.strip_suffix('`'))
        {
            path = format!("{path}.{missing}");
        }
        invalid(path, reason)
    })?;
    if unknown == Unknown::Refuse {
        if let Some(path) = ignored.first() {
            return Err(invalid(join(field, path), "is not a known field"));
        }
    }
    Ok(parsed)
}

/// The path and value of the first NaN or infinite number inside `value`, if any (looked
/// for only once parsing failed, so a good value costs nothing).
fn non_finite(value: &JsValue, path: String, depth: usize) -> Option<(String, f64)> {
    if let Some(n) = value.as_f64() {
        return (!n.is_finite()).then_some((path, n));
    }
    if depth > 64 || !value.is_object() {
        return None;
    }
    if js_sys::Array::is_array(value) {
        return js_sys::Array::from(value)
            .iter()
            .enumerate()
            .find_map(|(i, v)| non_finite(&v, format!("{path}[{i}]"), depth + 1));
    }
    js_sys::Object::entries(value.unchecked_ref())
        .iter()
        .find_map(|entry| {
            let entry = js_sys::Array::from(&entry);
            let key = entry.get(0).as_string().unwrap_or_default();
            non_finite(&entry.get(1), format!("{path}.{key}"), depth + 1)
        })
}

/// Refuses a NaN or infinite number anywhere inside the JS value `value` (the argument
/// `field`), naming where: for a document whose numbers `JSON.stringify` would otherwise turn
/// into `null` without a word (an event's `data`).
pub(crate) fn finite_everywhere(value: &JsValue, field: &str) -> Result<(), WasmError> {
    match non_finite(value, field.to_owned(), 0) {
        Some((path, n)) => Err(invalid(
            path,
            format!("must be a finite number, not {}", js_number(n)),
        )),
        None => Ok(()),
    }
}

/// Refuses a NaN or infinite number at any of `keys` of the JS object `value` (the argument
/// or item `field`) that parsed as none (`.1` true). `JSON.stringify` writes such a number as
/// `null`, which an optional field takes as "not set": `created_after: NaN` would be no
/// bound at all. Only the keys that parsed as none are read, one property read each.
pub(crate) fn finite_where_none(
    value: &JsValue,
    field: &str,
    keys: &[(&str, bool)],
) -> Result<(), WasmError> {
    if !value.is_object() {
        return Ok(());
    }
    for &(key, none) in keys {
        if none {
            finite_at(value, &JsValue::from_str(key), field, key)?;
        }
    }
    Ok(())
}

/// An execution's optional time fields, in the order [`execution_times`] checks them.
const EXECUTION_TIMES: [&str; 4] = ["created_at", "updated_at", "finished_at", "expires_at"];

thread_local! {
    /// [`EXECUTION_TIMES`] as JS strings, made once: a commit reads them without making a
    /// string each time (measured: making them cost 2 µs a commit).
    static EXECUTION_TIME_KEYS: [JsValue; 4] = EXECUTION_TIMES.map(JsValue::from_str);
}

/// The time fields of an execution that `exe` (parsed from the JS object `value`) has not
/// set: a NaN or infinite number given there is `INVALID_INPUT` (see [`finite_where_none`];
/// `finished_at: NaN` would be stored as no finish time).
pub(crate) fn execution_times(
    value: &JsValue,
    field: &str,
    exe: &execstore::Execution,
) -> Result<(), WasmError> {
    let unset = [
        exe.created_at.is_none(),
        exe.updated_at.is_none(),
        exe.finished_at.is_none(),
        exe.expires_at.is_none(),
    ];
    if !unset.contains(&true) {
        return Ok(());
    }
    EXECUTION_TIME_KEYS.with(|keys| {
        for ((name, key), none) in EXECUTION_TIMES.iter().zip(keys).zip(unset) {
            if none {
                finite_at(value, key, field, name)?;
            }
        }
        Ok(())
    })
}

/// `INVALID_INPUT` for `field.name` if the property `key` of `value` is a NaN or infinite
/// number.
fn finite_at(value: &JsValue, key: &JsValue, field: &str, name: &str) -> Result<(), WasmError> {
    let got = js_sys::Reflect::get(value, key).unwrap_or(JsValue::UNDEFINED);
    match got.as_f64() {
        Some(n) if !n.is_finite() => Err(invalid(
            join(field, name),
            format!("must be a finite number, not {}", js_number(n)),
        )),
        _ => Ok(()),
    }
}

/// A number as JS writes it (`NaN`, `Infinity`, `-Infinity`, ...), for messages.
fn js_number(n: f64) -> String {
    match n {
        n if n.is_nan() => "NaN".into(),
        f64::INFINITY => "Infinity".into(),
        f64::NEG_INFINITY => "-Infinity".into(),
        n => n.to_string(),
    }
}

/// `field` and a path inside it (`"."` or `""` for the value itself).
fn join(field: &str, path: &str) -> String {
    match path {
        "" | "." | "?" => field.to_owned(),
        p if p.starts_with('[') => format!("{field}{p}"),
        p => format!("{field}.{p}"),
    }
}

/// serde_json's message without its "at line 1 column N" (the text is ours, not the user's).
fn reason(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// The JS value of `value`, through its JSON text (`JSON.parse`), keys in order.
pub(crate) fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, WasmError> {
    let text = serde_json::to_string(value).map_err(|e| backend(format!("cannot encode a result: {e}")))?;
    JSON::parse(&text).map_err(|e| backend(format!("cannot decode a result: {}", describe(&e))))
}

/// A required string argument, exactly as given: every string that names something (an id,
/// a prefix, a cursor, a kind, a key, a path) comes in through here. A JS string is UTF-16
/// and may hold a lone surrogate (`"a\udc00"`), which no UTF-8 string can: wasm-bindgen's
/// conversion would turn it into U+FFFD, so that `"a\udc00"` would name the execution
/// `"a\u{fffd}"`. Such a string is `INVALID_INPUT`, never converted lossily.
pub(crate) fn string(value: &JsValue, field: &str) -> Result<String, WasmError> {
    let text = value
        .as_string()
        .ok_or_else(|| invalid(field, format!("must be a string, not {}", type_of(value))))?;
    well_formed(value, field, text)
}

/// `text` (`value` converted by wasm-bindgen) if `value` had no lone surrogate. The
/// conversion writes U+FFFD for each, so only a text holding U+FFFD is looked at again
/// (in the JS string itself): a good string costs one scan of its bytes.
fn well_formed(value: &JsValue, field: &str, text: String) -> Result<String, WasmError> {
    if !text.contains('\u{FFFD}') || value.unchecked_ref::<js_sys::JsString>().is_valid_utf16() {
        return Ok(text);
    }
    Err(invalid(
        field,
        "holds a lone UTF-16 surrogate (not well-formed Unicode text)",
    ))
}

/// An optional string argument (`undefined` or `null`: none).
pub(crate) fn opt_string(value: &JsValue, field: &str) -> Result<Option<String>, WasmError> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    string(value, field).map(Some)
}

/// A required finite number.
pub(crate) fn number(value: &JsValue, field: &str) -> Result<f64, WasmError> {
    match value.as_f64() {
        Some(n) if n.is_finite() => Ok(n),
        Some(n) => Err(invalid(
            field,
            format!("must be a finite number, not {}", js_number(n)),
        )),
        None => Err(invalid(
            field,
            format!("must be a number, not {}", type_of(value)),
        )),
    }
}

/// A required integer (a JS number with no fraction, within the exactly representable
/// range).
pub(crate) fn integer(value: &JsValue, field: &str) -> Result<i64, WasmError> {
    let n = number(value, field)?;
    if n.fract() != 0.0 || n.abs() > MAX_SAFE_INTEGER {
        return Err(invalid(field, format!("must be an integer, not {n}")));
    }
    Ok(n as i64)
}

/// An optional integer (`undefined` or `null`: none).
pub(crate) fn opt_integer(value: &JsValue, field: &str) -> Result<Option<i64>, WasmError> {
    if value.is_undefined() || value.is_null() {
        return Ok(None);
    }
    integer(value, field).map(Some)
}

/// A page size: `undefined` or `null` gives `default`; the store checks the range.
pub(crate) fn limit(value: &JsValue, field: &str, default: usize) -> Result<usize, WasmError> {
    match opt_integer(value, field)? {
        None => Ok(default),
        // Zero and anything too large are refused by the store's own check, with its message.
        Some(n) => usize::try_from(n).map_err(|_| invalid(field, format!("{n} is not a page size"))),
    }
}

/// An optional boolean (`undefined` or `null`: `default`).
pub(crate) fn opt_bool(value: &JsValue, field: &str, default: bool) -> Result<bool, WasmError> {
    if value.is_undefined() || value.is_null() {
        return Ok(default);
    }
    value
        .as_bool()
        .ok_or_else(|| invalid(field, format!("must be a boolean, not {}", type_of(value))))
}

/// An array of integers.
pub(crate) fn integers(value: &JsValue, field: &str) -> Result<Vec<i64>, WasmError> {
    if !js_sys::Array::is_array(value) {
        return Err(invalid(
            field,
            format!("must be an array, not {}", type_of(value)),
        ));
    }
    js_sys::Array::from(value)
        .iter()
        .enumerate()
        .map(|(i, v)| integer(&v, &format!("{field}[{i}]")))
        .collect()
}

/// JS's name for the kind of `value`, for messages.
fn type_of(value: &JsValue) -> String {
    if value.is_null() {
        return "null".into();
    }
    if js_sys::Array::is_array(value) {
        return "an array".into();
    }
    value.js_typeof().as_string().unwrap_or_else(|| "unknown".into())
}
