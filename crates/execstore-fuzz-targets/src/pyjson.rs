//! `execstore::kit::pyjson`: the JSON text of Python's `json.dumps`, and its reader.

use execstore::kit::pyjson::{dumps, loads, python_float_repr};
use serde_json::Value;

/// Any text as JSON, and any 8 bytes as a double: what `dumps` writes is ASCII, parses back
/// (by `loads` and by serde_json) to the value written, and is written again byte for byte;
/// `loads` reads whatever serde_json reads as serde_json does.
pub fn pyjson(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let plain = serde_json::from_str::<Value>(&text);
    let loaded = loads(&text);
    if let Ok(value) = &plain {
        assert_eq!(
            loaded.as_ref().ok(),
            Some(value),
            "loads reads JSON as serde_json does"
        );
        let compact = serde_json::to_string(value).expect("a Value serializes");
        assert_eq!(
            &serde_json::from_str::<Value>(&compact).expect("serde_json reads its own text"),
            value
        );
    }
    if let Ok(value) = &loaded {
        round_trip(value);
    }
    for chunk in data.chunks_exact(8) {
        let mut bits = [0u8; 8];
        bits.copy_from_slice(chunk);
        float(f64::from_le_bytes(bits));
    }
}

fn round_trip(value: &Value) {
    let text = dumps(value);
    assert!(text.is_ascii(), "dumps writes ASCII only: {text:?}");
    let back = serde_json::from_str::<Value>(&text).unwrap_or_else(|e| panic!("dumps wrote {text:?}: {e}"));
    assert_eq!(&back, value, "serde_json reads back what dumps wrote");
    assert_eq!(
        loads(&text).ok().as_ref(),
        Some(value),
        "loads reads back what dumps wrote"
    );
    assert_eq!(dumps(&back), text, "writing again gives the same bytes");
    // The object reader takes exactly the objects.
    assert_eq!(
        execstore::kit::pyjson::loads_object(&text).is_ok(),
        value.is_object()
    );
}

fn float(x: f64) {
    let repr = python_float_repr(x);
    if !x.is_finite() {
        let want = if x.is_nan() {
            "NaN"
        } else if x > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        };
        assert_eq!(repr, want);
        return;
    }
    let parsed: f64 = repr
        .parse()
        .unwrap_or_else(|e| panic!("{x:?} written as {repr:?}: {e}"));
    assert_eq!(
        parsed.to_bits(),
        x.to_bits(),
        "{x:?} written as {repr:?} reads back"
    );
    // Python's repr is a float token: a point or an exponent, never an integer's spelling.
    assert!(repr.contains(['.', 'e']), "{x:?} written as {repr:?}");
    let as_json = serde_json::from_str::<Value>(&repr).unwrap_or_else(|e| panic!("{repr:?}: {e}"));
    assert!(as_json.is_f64(), "{repr:?} reads as a float");
    assert_eq!(dumps(&Value::from(x)), repr, "dumps writes a double as its repr");
    // The shortest digits: one fewer significant digit no longer reads back as x.
    let mantissa = repr.trim_start_matches('-').split(['e']).next().unwrap_or("");
    let digits = mantissa.replace('.', "");
    let significant = digits.trim_start_matches('0').trim_end_matches('0').len();
    assert!(
        significant <= 17,
        "{x:?} written with {significant} digits: {repr:?}"
    );
}
