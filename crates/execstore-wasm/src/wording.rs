//! serde's error wording put in JavaScript's words, in one place: every `StoreError` a JS
//! caller sees goes through [`js_words`] (errors.rs `WasmError::to_js`), whether its text
//! came from this package's argument parsing (convert.rs) or from the core's decoders. serde
//! says `invalid type: integer `-1`, expected struct JsRef` or `expected i64`: Rust's
//! names for Rust's types, which mean nothing to a JS caller. What it says becomes "must be
//! an object, not the number -1" and "must be an integer", in the words the package's own
//! checks use ("must be a string, not number").

/// `text` with serde's wording (`invalid type: ...`, `invalid value: ...`, `invalid length
/// ...`, `unknown variant ...`, `unknown field ...`, `missing field ...`, `duplicate field
/// ...`) put in JS's words. A text with none of them is returned as it is; anything before
/// serde's phrase (`invalid input: options.store: `) is kept.
pub(crate) fn js_words(text: &str) -> String {
    const PHRASES: [&str; 7] = [
        "invalid type: ",
        "invalid value: ",
        "invalid length ",
        "unknown variant ",
        "unknown field ",
        "missing field ",
        "duplicate field ",
    ];
    let Some((at, phrase)) = PHRASES
        .iter()
        .filter_map(|p| text.find(p).map(|at| (at, *p)))
        .min_by_key(|(at, _)| *at)
    else {
        return text.to_owned();
    };
    let (head, rest) = (&text[..at], &text[at + phrase.len()..]);
    let said = match phrase {
        "invalid type: " | "invalid value: " => got_expected(rest)
            .map(|(got, expected)| format!("must be {}, not {}", expected_words(expected), got_words(got))),
        "invalid length " => got_expected(rest).map(|(length, expected)| {
            let expected = expected_words(expected);
            if expected == "an object" {
                format!("must be an object, not an array of {}", got_words(length))
            } else {
                format!("must be {expected}, not an array of {}", got_words(length))
            }
        }),
        "unknown variant " => got_expected(rest)
            .map(|(got, expected)| format!("must be {}, not {}", one_of(expected), quoted(got))),
        "unknown field " => got_expected(rest).map(|(got, expected)| {
            format!(
                "has the unknown field {} (known: {})",
                quoted(got),
                list(expected)
            )
        }),
        "missing field " => Some(format!("lacks the field {}", quoted(rest))),
        "duplicate field " => Some(format!("has the field {} twice", quoted(rest))),
        _ => None,
    };
    match said {
        Some(said) => format!("{head}{said}"),
        None => text.to_owned(),
    }
}

/// `what, expected what` split at serde's `, expected ` (`got` may itself hold a comma: a
/// string value).
fn got_expected(rest: &str) -> Option<(&str, &str)> {
    let at = rest.rfind(", expected ")?;
    Some((&rest[..at], &rest[at + ", expected ".len()..]))
}

/// What serde says it got (`integer `-1``, `floating point `1.5``, `string "x"`,
/// `sequence`, `map`...), as JS would name it.
fn got_words(got: &str) -> String {
    let literal = |prefix: &str| got.strip_prefix(prefix).map(|v| v.trim_matches('`').to_owned());
    if let Some(n) = literal("integer ").or_else(|| literal("floating point ")) {
        return format!("the number {n}");
    }
    if let Some(b) = literal("boolean ") {
        return b;
    }
    if let Some(s) = got.strip_prefix("string ") {
        return format!("the string {s}");
    }
    match got {
        "sequence" => "an array".into(),
        "map" => "an object".into(),
        "null" | "unit value" | "unit" | "Option value" => "null".into(),
        // a length (`invalid length 0`): the array's
        n if n.parse::<u64>().is_ok() => {
            format!("{n} item{}", if n == "1" { "" } else { "s" })
        }
        other => other.into(),
    }
}

/// What serde says it expected, as JS would name it: Rust's type names (`i64`, `u32`,
/// `struct JsRef`, `a sequence`) become `an integer`, `an object`, `an array`...
fn expected_words(expected: &str) -> String {
    let e = expected.trim();
    if e.starts_with("struct ") || e == "a map" || e == "map" || e.starts_with("a map ") {
        return "an object".into();
    }
    if let Some(n) = e
        .strip_prefix("a tuple of size ")
        .or_else(|| e.strip_prefix("tuple of size "))
        .or_else(|| e.strip_prefix("an array of length "))
    {
        return format!("an array of {n} items");
    }
    if e.starts_with("tuple ") || e == "a sequence" || e == "sequence" || e.starts_with("a sequence ") {
        return "an array".into();
    }
    match e {
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "an integer".into(),
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "an integer, 0 or more".into(),
        "f32" | "f64" => "a number".into(),
        "a string" | "string" | "a borrowed string" | "char" | "a character" => "a string".into(),
        "a boolean" | "bool" => "a boolean".into(),
        "unit" | "unit value" => "null".into(),
        "option" => "a value or null".into(),
        e if e.starts_with("enum ") || e.starts_with("variant identifier") => {
            "one of the allowed values".into()
        }
        e if e.starts_with("one of ") || e.starts_with('`') => one_of(e),
        other => other.into(),
    }
}

/// serde's `one of `a`, `b`` or `` `a` `` (or `there are no variants`) as JS's
/// `one of "a", "b"` or `"a"`.
fn one_of(expected: &str) -> String {
    match expected.strip_prefix("one of ") {
        Some(rest) => format!("one of {}", list(rest)),
        None if expected.starts_with('`') => quoted(expected),
        None => expected.to_owned(),
    }
}

/// serde's `` `a`, `b` `` (or `one of ...`, or `there are no fields`) as `"a", "b"`.
fn list(names: &str) -> String {
    let names = names.strip_prefix("one of ").unwrap_or(names);
    names.split(", ").map(quoted).collect::<Vec<_>>().join(", ")
}

/// serde's `` `name` `` as JS's `"name"` (anything else as it is).
fn quoted(name: &str) -> String {
    match name.strip_prefix('`').and_then(|n| n.strip_suffix('`')) {
        Some(n) => format!("\"{n}\""),
        None => name.to_owned(),
    }
}
