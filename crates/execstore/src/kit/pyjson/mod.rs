//! JSON text exactly as Python's `json.dumps` writes it with default arguments, which is how
//! harel stores trace steps and spawn contexts: `", "` and `": "` separators, every
//! character outside printable ASCII escaped as `\uXXXX`, and floats as Python's `repr`.
//! Writing the same bytes keeps an execstore file indistinguishable from harel's. Trace
//! steps and spawn contexts go through [`loads_exact`] and [`dumps_exact`], which also keep
//! the `NaN`, `Infinity` and lone surrogates `json.dumps` writes (see `exact.rs`).

mod exact;

pub use exact::{
    dumps_exact, dumps_object_exact, is_non_finite, loads_exact, loads_object_exact, shown, shown_object,
    BadMark, MARK,
};

use serde::Serialize;
use serde_json::ser::{CharEscape, Formatter, Serializer};
use std::io::{self, Write};

/// `value` as `json.dumps(value)` would write it.
pub fn dumps<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::with_capacity(128);
    let mut ser = Serializer::with_formatter(&mut out, PythonFormatter);
    // Writing into a Vec cannot fail, and every map key here is a string.
    if value.serialize(&mut ser).is_err() {
        return String::new();
    }
    // The formatter writes ASCII only.
    String::from_utf8(out).unwrap_or_default()
}

struct PythonFormatter;

impl Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn write_string_fragment<W: ?Sized + Write>(&mut self, w: &mut W, fragment: &str) -> io::Result<()> {
        // ensure_ascii: everything outside ' '..='~' becomes \uXXXX (UTF-16, lower-case hex).
        let mut start = 0;
        for (i, ch) in fragment.char_indices() {
            if (' '..='~').contains(&ch) {
                continue;
            }
            w.write_all(&fragment.as_bytes()[start..i])?;
            let mut units = [0u16; 2];
            for unit in ch.encode_utf16(&mut units) {
                write!(w, "\\u{unit:04x}")?;
            }
            start = i + ch.len_utf8();
        }
        w.write_all(&fragment.as_bytes()[start..])
    }

    fn write_char_escape<W: ?Sized + Write>(&mut self, w: &mut W, escape: CharEscape) -> io::Result<()> {
        let s: &[u8] = match escape {
            CharEscape::Quote => b"\\\"",
            CharEscape::ReverseSolidus => b"\\\\",
            CharEscape::Solidus => b"/",
            CharEscape::Backspace => b"\\b",
            CharEscape::FormFeed => b"\\f",
            CharEscape::LineFeed => b"\\n",
            CharEscape::CarriageReturn => b"\\r",
            CharEscape::Tab => b"\\t",
            CharEscape::AsciiControl(byte) => return write!(w, "\\u{byte:04x}"),
        };
        w.write_all(s)
    }

    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        w.write_all(python_float_repr(value).as_bytes())
    }

    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(w, f64::from(value))
    }
}

/// Python's `repr(float)`: the shortest round-trip digits (ties broken as Python breaks
/// them, which serde_json's formatter matches), fixed notation for decimal exponents in
/// -4..16, otherwise `d.ddde+XX`.
pub fn python_float_repr(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let (negative, digits, exp) = shortest_digits(value);
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        if point <= 0 {
            format!("{sign}0.{}{digits}", "0".repeat((-point) as usize))
        } else if (point as usize) >= digits.len() {
            format!("{sign}{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            let (int, frac) = digits.split_at(point as usize);
            format!("{sign}{int}.{frac}")
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{first}{frac}e{esign}{:02}", exp.abs())
    }
}

/// The shortest round-trip decimal digits of a finite `value` (no leading or trailing
/// zeros, `"0"` for zero) and the decimal exponent of the first digit, taken from
/// serde_json's own formatting so both writers agree digit for digit.
fn shortest_digits(value: f64) -> (bool, String, i32) {
    let text = serde_json::to_string(&value).unwrap_or_default();
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.as_str()),
    };
    let (mantissa, exp) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.trim_start_matches('+').parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all: String = format!("{int}{frac}");
    let leading = all.len() - all.trim_start_matches('0').len();
    let digits = all.trim_start_matches('0').trim_end_matches('0');
    if digits.is_empty() {
        return (negative, "0".into(), 0);
    }
    // The first significant digit sits `leading` places into `int ++ frac`.
    let exp = exp + int.len() as i32 - 1 - leading as i32;
    (negative, digits.to_owned(), exp)
}

/// Parses JSON that Python's `json.dumps` wrote, which may hold the bare tokens `NaN`,
/// `Infinity` and `-Infinity` (not JSON): they are read as `null`, so one such value does
/// not make a whole trace or spawn row unreadable.
pub fn loads(text: &str) -> serde_json::Result<serde_json::Value> {
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(first) => {
            let cleaned = replace_non_finite(text);
            if cleaned == text {
                return Err(first);
            }
            serde_json::from_str(&cleaned).map_err(|_| first)
        }
    }
}

/// [`loads`] for a text that must hold a JSON object (a trace step, a spawn context).
pub fn loads_object(text: &str) -> serde_json::Result<serde_json::Map<String, serde_json::Value>> {
    serde_json::from_value(loads(text)?)
}

/// `text` with every `NaN`, `Infinity` and `-Infinity` outside strings replaced by `null`.
fn replace_non_finite(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(ch) = rest.chars().next() {
        if in_string {
            if escaped {
                escaped = false;
            } else if ch == '\\' {
                escaped = true;
            } else if ch == '"' {
                in_string = false;
            }
        } else if ch == '"' {
            in_string = true;
        } else {
            let token = ["-Infinity", "Infinity", "NaN"]
                .into_iter()
                .find(|t| rest.starts_with(t));
            if let Some(token) = token {
                out.push_str("null");
                rest = &rest[token.len()..];
                continue;
            }
        }
        out.push(ch);
        rest = &rest[ch.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_match_python_repr() {
        for (v, want) in [
            (0.0, "0.0"),
            (1.0, "1.0"),
            (-2.5, "-2.5"),
            (1700000000.0, "1700000000.0"),
            (0.1, "0.1"),
            (1e-4, "0.0001"),
            (1.5e-5, "1.5e-05"),
            (1e16, "1e+16"),
            (1.2345e17, "1.2345e+17"),
            (123456789012345.6, "123456789012345.6"),
            (1e100, "1e+100"),
            (1e22, "1e+22"),
            (-0.0, "-0.0"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            // A tie between two shortest spellings: Python rounds half-even.
            (f64::from_bits(0x4307_577f_5547_b22a), "821266108446277.2"),
            (1e15, "1000000000000000.0"),
            (123.0, "123.0"),
            (0.00012, "0.00012"),
        ] {
            assert_eq!(python_float_repr(v), want, "{v}");
        }
    }

    #[test]
    fn dumps_matches_python() {
        // json.dumps({"a": [1, 2.0, "é😀\x7f"], "b": {"c": None, "d": True}, "e": "q\"\n"})
        let v = json!({"a": [1, 2.0, "é😀\u{7f}"], "b": {"c": null, "d": true}, "e": "q\"\n"});
        assert_eq!(
            dumps(&v),
            r#"{"a": [1, 2.0, "\u00e9\ud83d\ude00\u007f"], "b": {"c": null, "d": true}, "e": "q\"\n"}"#
        );
        assert_eq!(dumps(&json!({})), "{}");
        assert_eq!(dumps(&json!([])), "[]");
    }
}

#[cfg(test)]
mod loads_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn loads_reads_python_non_finite_tokens_as_null() {
        let text = r#"{"x": NaN, "y": Infinity, "z": -Infinity, "s": "NaN \" Infinity", "n": [1, NaN]}"#;
        assert_eq!(
            loads(text).unwrap(),
            json!({"x": null, "y": null, "z": null, "s": "NaN \" Infinity", "n": [1, null]})
        );
        assert!(loads("{not json").is_err());
        assert_eq!(loads(r#"{"a": 1}"#).unwrap(), json!({"a": 1}));
    }
}
