//! JSON text exactly as Python's `json.dumps` writes it with default arguments, which is how
//! harel stores trace steps and spawn contexts: `", "` and `": "` separators, every
//! character outside printable ASCII escaped as `\uXXXX`, and floats as Python's `repr`.
//! Writing the same bytes keeps an execstore file indistinguishable from harel's.

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

/// Python's `repr(float)`: the shortest round-trip digits, fixed notation for decimal
/// exponents in -4..16, otherwise `d.ddde+XX`.
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
    // Rust's `{:e}` gives the shortest round-trip digits too, e.g. "1.5e-5", "-1e16".
    let sci = format!("{value:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
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
