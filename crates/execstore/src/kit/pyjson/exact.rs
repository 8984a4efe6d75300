//! Python's JSON values that JSON itself cannot hold, kept exactly.
//!
//! harel writes trace steps and spawn contexts with `json.dumps`, which writes the floats
//! `NaN`, `Infinity` and `-Infinity` as those bare tokens and a string's lone surrogate
//! (`'\ud800'`) as its escape: text a strict JSON reader refuses, and values a
//! `serde_json::Value` cannot hold (its numbers are finite, its strings Unicode). To keep
//! them, [`loads_exact`] reads such text into a `Value` that marks them with the
//! noncharacter U+10FFFF ([`MARK`]: Unicode keeps noncharacters for a program's internal
//! use), and [`dumps_exact`] writes that `Value` back as the same bytes `json.dumps` wrote:
//!
//! - the number `NaN` is the string `MARK + "NaN"` (likewise `"Infinity"`, `"-Infinity"`);
//! - a lone surrogate in a string (or key) is `MARK + "u" + four lower-case hex digits`;
//! - a U+10FFFF the text itself held is `MARK + MARK`.
//!
//! Any other use of `MARK` in a value handed to [`dumps_exact`] is refused. Surfaces that
//! show such a value call [`shown`]: the marked numbers become the strings `"NaN"`, ... and a
//! lone surrogate the six characters of its escape, `\ud800`.

use serde_json::{Map, Value};
use std::fmt::Write as _;

use super::python_float_repr;

/// The noncharacter that marks, in a `Value` read by [`loads_exact`], what JSON cannot hold.
pub const MARK: char = '\u{10FFFF}';

/// `MARK` as a JSON string escape.
const MARK_ESCAPE: &str = "\\udbff\\udfff";

/// The bare tokens `json.dumps` writes for non-finite floats.
const NON_FINITE: [&str; 3] = ["-Infinity", "Infinity", "NaN"];

/// A value [`dumps_exact`] cannot write: `MARK` used other than as described above.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the string {0:?} uses U+10FFFF, which marks a value JSON cannot hold, other than as such a mark")]
pub struct BadMark(pub String);

/// Parses the JSON text Python's `json.dumps` writes, keeping `NaN`, `±Infinity` and lone
/// surrogates as marked values (see the module's documentation). Text a strict JSON
/// reader takes is read as it would read it, except for U+10FFFF itself (`MARK + MARK`).
pub fn loads_exact(text: &str) -> serde_json::Result<Value> {
    if !text.contains(MARK) && !contains_surrogate_escape(text) {
        match serde_json::from_str(text) {
            Ok(value) => return Ok(value),
            Err(first) => {
                let strict = rewrite(text);
                if strict == text {
                    return Err(first);
                }
                return serde_json::from_str(&strict).map_err(|_| first);
            }
        }
    }
    serde_json::from_str(&rewrite(text))
}

/// [`loads_exact`] for a text that must hold a JSON object (a trace step, a spawn context).
pub fn loads_object_exact(text: &str) -> serde_json::Result<Map<String, Value>> {
    serde_json::from_value(loads_exact(text)?)
}

/// `value` as `json.dumps` writes it, the marked values of [`loads_exact`] included: the
/// text [`loads_exact`] read, byte for byte, when `json.dumps` wrote it.
pub fn dumps_exact(value: &Value) -> Result<String, BadMark> {
    let mut out = String::with_capacity(128);
    write_value(&mut out, value)?;
    Ok(out)
}

/// [`dumps_exact`] of a JSON object.
pub fn dumps_object_exact(object: &Map<String, Value>) -> Result<String, BadMark> {
    let mut out = String::with_capacity(128);
    write_object(&mut out, object)?;
    Ok(out)
}

/// `value` for showing: each marked number as the string `"NaN"`, `"Infinity"` or
/// `"-Infinity"`, each lone surrogate as its escape's six characters (`\ud800`), a
/// `MARK + MARK` as U+10FFFF. A value without marks is returned as it is.
pub fn shown(value: &Value) -> Value {
    match value {
        Value::String(s) if s.contains(MARK) => match non_finite(s) {
            Some(token) => Value::String(token.to_owned()),
            None => Value::String(shown_str(s)),
        },
        Value::Array(items) => Value::Array(items.iter().map(shown).collect()),
        Value::Object(map) => Value::Object(shown_object(map)),
        other => other.clone(),
    }
}

/// [`shown`] of a JSON object (keys too).
pub fn shown_object(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .map(|(k, v)| {
            let key = if k.contains(MARK) { shown_str(k) } else { k.clone() };
            (key, shown(v))
        })
        .collect()
}

/// A string's marks shown as text; a mark that does not parse is left as it is.
fn shown_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let after = &rest[at + MARK.len_utf8()..];
        match decode_mark(after) {
            Some((Decoded::Mark, used)) => {
                out.push(MARK);
                rest = &after[used..];
            }
            Some((Decoded::Surrogate(unit), used)) => {
                let _ = write!(out, "\\u{unit:04x}");
                rest = &after[used..];
            }
            None => {
                out.push(MARK);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether `s` is a marked number (`NaN`, `Infinity`, `-Infinity`) of [`loads_exact`].
pub fn is_non_finite(s: &str) -> bool {
    non_finite(s).is_some()
}

/// The token a marked number stands for, if `s` is one.
fn non_finite(s: &str) -> Option<&'static str> {
    let token = s.strip_prefix(MARK)?;
    NON_FINITE.into_iter().find(|t| *t == token)
}

enum Decoded {
    /// `MARK + MARK`: U+10FFFF itself.
    Mark,
    /// `MARK + "u" + hex`: a lone surrogate.
    Surrogate(u16),
}

/// What follows a `MARK` in a string, and how many bytes of `after` it takes.
fn decode_mark(after: &str) -> Option<(Decoded, usize)> {
    if after.starts_with(MARK) {
        return Some((Decoded::Mark, MARK.len_utf8()));
    }
    let hex = after.strip_prefix('u')?.get(..4)?;
    if !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let unit = u16::from_str_radix(hex, 16).ok()?;
    (0xD800..=0xDFFF)
        .contains(&unit)
        .then_some((Decoded::Surrogate(unit), 5))
}

fn contains_surrogate_escape(text: &str) -> bool {
    text.as_bytes()
        .windows(3)
        .any(|w| w[0] == b'\\' && w[1] == b'u' && matches!(w[2], b'd' | b'D'))
}

/// `text` as strict JSON: non-finite tokens outside strings become marked strings, lone
/// surrogate escapes and U+10FFFF inside strings become marks. Anything malformed is copied
/// for the strict reader to refuse.
fn rewrite(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut rest = text;
    while let Some(ch) = rest.chars().next() {
        if !in_string {
            if ch == '"' {
                in_string = true;
            } else if let Some(token) = NON_FINITE.into_iter().find(|t| rest.starts_with(t)) {
                out.push('"');
                out.push_str(MARK_ESCAPE);
                out.push_str(token);
                out.push('"');
                rest = &rest[token.len()..];
                continue;
            }
            out.push(ch);
            rest = &rest[ch.len_utf8()..];
            continue;
        }
        match ch {
            '"' => in_string = false,
            MARK => {
                out.push_str(MARK_ESCAPE);
                out.push_str(MARK_ESCAPE);
                rest = &rest[ch.len_utf8()..];
                continue;
            }
            '\\' => {
                if let Some(unit) = unit_at(rest) {
                    let low = unit_at(&rest[6..]).filter(|l| (0xDC00..=0xDFFF).contains(l));
                    match (unit, low) {
                        (0xD800..=0xDBFF, Some(low)) => {
                            if unit == 0xDBFF && low == 0xDFFF {
                                out.push_str(MARK_ESCAPE);
                                out.push_str(MARK_ESCAPE);
                            } else {
                                out.push_str(&rest[..12]);
                            }
                            rest = &rest[12..];
                        }
                        (0xD800..=0xDFFF, _) => {
                            out.push_str(MARK_ESCAPE);
                            let _ = write!(out, "u{unit:04x}");
                            rest = &rest[6..];
                        }
                        _ => {
                            out.push_str(&rest[..6]);
                            rest = &rest[6..];
                        }
                    }
                    continue;
                }
                // Any other escape: copy the backslash and the character it escapes.
                out.push('\\');
                rest = &rest[1..];
                if let Some(next) = rest.chars().next() {
                    out.push(next);
                    rest = &rest[next.len_utf8()..];
                }
                continue;
            }
            _ => {}
        }
        out.push(ch);
        rest = &rest[ch.len_utf8()..];
    }
    out
}

/// The code unit of a `\uXXXX` escape at the start of `s`.
fn unit_at(s: &str) -> Option<u16> {
    let hex = s.strip_prefix("\\u")?.get(..4)?;
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u16::from_str_radix(hex, 16).ok()
}

fn write_value(out: &mut String, value: &Value) -> Result<(), BadMark> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                let _ = write!(out, "{n}");
            } else {
                out.push_str(&python_float_repr(n.as_f64().unwrap_or(f64::NAN)));
            }
        }
        Value::String(s) => match non_finite(s) {
            Some(token) => out.push_str(token),
            None => write_str(out, s)?,
        },
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item)?;
            }
            out.push(']');
        }
        Value::Object(map) => write_object(out, map)?,
    }
    Ok(())
}

fn write_object(out: &mut String, map: &Map<String, Value>) -> Result<(), BadMark> {
    out.push('{');
    for (i, (key, item)) in map.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_str(out, key)?;
        out.push_str(": ");
        write_value(out, item)?;
    }
    out.push('}');
    Ok(())
}

/// A string as `json.dumps` writes it (`ensure_ascii`), its marks written as what they mark.
fn write_str(out: &mut String, s: &str) -> Result<(), BadMark> {
    out.push('"');
    let mut chars = s.char_indices();
    while let Some((at, ch)) = chars.next() {
        match ch {
            MARK => {
                let after = &s[at + MARK.len_utf8()..];
                let (decoded, used) = decode_mark(after).ok_or_else(|| BadMark(s.to_owned()))?;
                match decoded {
                    Decoded::Mark => out.push_str(MARK_ESCAPE),
                    Decoded::Surrogate(unit) => {
                        let _ = write!(out, "\\u{unit:04x}");
                    }
                }
                // Skip what the mark used (ASCII, or one MARK).
                let mut skipped = 0;
                while skipped < used {
                    match chars.next() {
                        Some((_, c)) => skipped += c.len_utf8(),
                        None => break,
                    }
                }
            }
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(ch),
            _ => {
                let mut units = [0u16; 2];
                for unit in ch.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What Python 3.11 writes for
    /// `json.dumps({"n": float("nan"), "i": [float("inf"), -float("inf")], "s": "a\ud800b",
    /// "\udc00k": "\U0010ffff", "t": "NaN", "p": "\U0001f600", "f": 0.1, "z": 7})`.
    const PYTHON: &str = r#"{"n": NaN, "i": [Infinity, -Infinity], "s": "a\ud800b", "\udc00k": "\udbff\udfff", "t": "NaN", "p": "\ud83d\ude00", "f": 0.1, "z": 7}"#;

    #[test]
    fn python_text_round_trips_byte_for_byte() {
        let value = loads_exact(PYTHON).unwrap();
        assert_eq!(dumps_exact(&value).unwrap(), PYTHON);
        let object = loads_object_exact(PYTHON).unwrap();
        assert_eq!(dumps_object_exact(&object).unwrap(), PYTHON);
        // The marks, as the module documents them.
        assert_eq!(value["n"], json!("\u{10FFFF}NaN"));
        assert_eq!(value["i"], json!(["\u{10FFFF}Infinity", "\u{10FFFF}-Infinity"]));
        assert_eq!(value["s"], json!("a\u{10FFFF}ud800b"));
        assert_eq!(value["\u{10FFFF}udc00k"], json!("\u{10FFFF}\u{10FFFF}"));
        assert_eq!(value["t"], json!("NaN"), "a string is a string");
        assert_eq!(value["p"], json!("😀"));
    }

    #[test]
    fn shown_is_strict_json_with_the_values_as_text() {
        let value = loads_exact(PYTHON).unwrap();
        let shown = shown(&value);
        assert_eq!(
            shown,
            json!({"n": "NaN", "i": ["Infinity", "-Infinity"], "s": "a\\ud800b", "\\udc00k": "\u{10FFFF}",
                   "t": "NaN", "p": "😀", "f": 0.1, "z": 7})
        );
        let keys: Vec<&String> = shown.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            ["n", "i", "s", "\\udc00k", "t", "p", "f", "z"],
            "keys keep their order"
        );
        assert_eq!(super::shown(&json!({"a": [1, "b"]})), json!({"a": [1, "b"]}));
    }

    #[test]
    fn without_marks_it_writes_what_dumps_writes() {
        let v = json!({"a": [1, 2.0, "é😀\u{7f}\u{1}\u{8}\u{c}"], "b": {"c": null, "d": true}, "e": "q\"\n\\", "f": -0.0, "g": 1e22, "h": u64::MAX});
        assert_eq!(dumps_exact(&v).unwrap(), super::super::dumps(&v));
        assert_eq!(loads_exact(&dumps_exact(&v).unwrap()).unwrap(), v);
    }

    #[test]
    fn a_stray_mark_is_refused_and_bad_text_is_an_error() {
        for s in [
            "\u{10FFFF}",
            "x\u{10FFFF}y",
            "\u{10FFFF}u12",
            "\u{10FFFF}u0041",
            "\u{10FFFF}uD800",
        ] {
            assert_eq!(
                dumps_exact(&json!({ "k": s })),
                Err(BadMark(s.to_owned())),
                "{s:?}"
            );
        }
        assert!(
            dumps_exact(&json!({ "\u{10FFFF}NaN": 1 })).is_err(),
            "a key is never a number"
        );
        for bad in [
            "{not json",
            r#"{"a": Nan}"#,
            r#"{"a": "\u12"}"#,
            r#"{"a": +Infinity}"#,
            "NaN NaN",
        ] {
            assert!(loads_exact(bad).is_err(), "{bad}");
        }
        // Upper-case escapes read the same; tokens inside strings are strings.
        assert_eq!(
            loads_exact(r#"["\uD800", "Infinity \" NaN"]"#).unwrap(),
            json!(["\u{10FFFF}ud800", "Infinity \" NaN"])
        );
    }
}
