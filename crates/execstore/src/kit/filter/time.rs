//! Times in a `where` text: epoch seconds, ISO-8601, or relative to the caller's `now`.

/// A time as epoch seconds: relative to `now` (`-15m`, `+2h`, `-7d`, `-30s`, `-2w`), an
/// RFC 3339 time (`2026-12-01T10:00:00Z`, `...+02:00`), a date and time without a zone
/// (UTC: `2026-12-01T10:00`, `2026-12-01 10:00:00`) or a date (`2026-12-01`, midnight UTC).
/// A number given as text (`"1700000000"`) is epoch seconds. The error says what was wrong.
pub fn parse_time(text: &str, now: f64) -> Result<f64, String> {
    if let Some(rel) = relative(text) {
        let t = now + rel;
        return if t.is_finite() && t >= 0.0 {
            Ok(t)
        } else {
            Err(format!("{text} from now is before 1970"))
        };
    }
    if let Ok(n) = text.parse::<f64>() {
        if n.is_finite() && n >= 0.0 {
            return Ok(n);
        }
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(seconds(t.timestamp(), t.timestamp_subsec_nanos()));
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(text, format) {
            let t = t.and_utc();
            return Ok(seconds(t.timestamp(), t.timestamp_subsec_nanos()));
        }
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        if let Some(t) = d.and_hms_opt(0, 0, 0) {
            return Ok(t.and_utc().timestamp() as f64);
        }
    }
    Err("expected epoch seconds, ISO-8601 (2026-12-01T10:00:00Z) or a time from now (-15m, -1h, -7d)".into())
}

fn seconds(secs: i64, nanos: u32) -> f64 {
    secs as f64 + f64::from(nanos) / 1e9
}

/// `-15m` as -900 seconds; `None` if the text is not a signed count and a unit.
fn relative(text: &str) -> Option<f64> {
    let sign = match text.chars().next()? {
        '-' => -1.0,
        '+' => 1.0,
        _ => return None,
    };
    let body = &text[1..];
    let unit = body.chars().last()?;
    let count: u32 = body[..body.len() - unit.len_utf8()].parse().ok()?;
    let scale = match unit {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86_400.0,
        'w' => 604_800.0,
        _ => return None,
    };
    Some(sign * f64::from(count) * scale)
}
