//! A request's query parameters.

use std::collections::HashSet;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use execstore::executions::{DueTimer, Status};
use execstore::kit::validate::MAX_PAGE;
use serde_json::json;

use crate::{ApiError, DEFAULT_LIMIT};

/// A request's query parameters: each known name at most once, any other name refused (a
/// misspelt filter is an error, not a silently unfiltered answer).
pub(crate) struct Params {
    pairs: Vec<(String, String)>,
    now: f64,
}

impl Params {
    /// The request's clock (epoch seconds): `now` in times, and relative times' origin.
    pub(crate) fn now(&self) -> f64 {
        self.now
    }

    /// Parses `query` (form encoding, as servers do: `+` is a space) against `known`.
    pub(crate) fn new(query: &str, known: &[&str], now: f64) -> Result<Self, ApiError> {
        // Form decoding turns bytes that are not UTF-8 into U+FFFD: `id_prefix=%FF` would
        // look for ids starting with U+FFFD. Refused first instead. The pairs are separated by
        // ASCII (`&`, `=`), so the whole query decodes as UTF-8 exactly when every name and
        // value does.
        if percent_encoding::percent_decode_str(query).decode_utf8().is_err() {
            return Err(ApiError::bad_request(format!(
                "Invalid query: {query:?} is not UTF-8 once percent-decoded"
            )));
        }
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
            .map_err(|e| ApiError::bad_request(format!("Failed to deserialize query string: {e}")))?;
        let mut seen = HashSet::new();
        for (name, _) in &pairs {
            if !known.contains(&name.as_str()) {
                return Err(ApiError::bad_request(format!(
                    "unknown parameter {name:?} (known: {})",
                    known.join(", ")
                )));
            }
            if !seen.insert(name.as_str()) {
                return Err(ApiError::bad_request(format!("parameter {name:?} given twice")));
            }
        }
        Ok(Params { pairs, now })
    }

    /// The value of `name`; an empty value counts as absent.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    pub(crate) fn limit(&self) -> Result<usize, ApiError> {
        match self.get("limit") {
            None => Ok(DEFAULT_LIMIT),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
                _ => Err(ApiError::bad_request(format!(
                    "limit {v:?} is not a whole number in 1..={MAX_PAGE}"
                ))),
            },
        }
    }

    pub(crate) fn flag(&self, name: &str) -> Result<bool, ApiError> {
        match self.get(name) {
            None | Some("false" | "0") => Ok(false),
            Some("true" | "1") => Ok(true),
            Some(v) => Err(ApiError::bad_request(format!(
                "{name} {v:?} is not true, false, 1 or 0"
            ))),
        }
    }

    pub(crate) fn seq(&self, name: &str) -> Result<Option<i64>, ApiError> {
        self.get(name)
            .map(|v| {
                v.parse::<i64>()
                    .ok()
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| ApiError::bad_request(format!("{name} {v:?} is not a sequence number")))
            })
            .transpose()
    }

    /// Epoch seconds, or `now`.
    pub(crate) fn time(&self, name: &str) -> Result<Option<f64>, ApiError> {
        self.get(name)
            .map(|v| {
                if v.eq_ignore_ascii_case("now") {
                    return Ok(self.now);
                }
                v.parse::<f64>()
                    .ok()
                    .filter(|t| t.is_finite() && *t >= 0.0)
                    .ok_or_else(|| {
                        ApiError::bad_request(format!("{name} {v:?} is not epoch seconds or \"now\""))
                    })
            })
            .transpose()
    }

    /// Epoch seconds, an RFC 3339 date-time with an offset, or `now` (the list's windows).
    pub(crate) fn moment(&self, name: &str) -> Result<Option<f64>, ApiError> {
        let Some(v) = self.get(name) else {
            return Ok(None);
        };
        if let Ok(t) = self.time(name) {
            return Ok(t);
        }
        match execstore::workspace::Timestamp::parse_json_text(v) {
            Ok(ts) if ts.secs_f64() >= 0.0 => Ok(Some(ts.secs_f64())),
            _ => Err(ApiError::bad_request(format!(
                "{name} {v:?} is not epoch seconds, an RFC 3339 time with an offset or \"now\""
            ))),
        }
    }

    pub(crate) fn statuses(&self) -> Result<Option<Vec<Status>>, ApiError> {
        self.get("status")
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().parse::<Status>().map_err(ApiError::from))
                    .collect()
            })
            .transpose()
    }
}

/// An outbox or spawn seq in a path (`/api/outbox/{seq}/ack`).
pub(crate) fn seq_in_path(raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| ApiError::bad_request(format!("{raw:?} is not a sequence number")))
}

/// An execution id in a path: one the store would refuse is a 400, not a 404.
pub(crate) fn check_id(id: &str) -> Result<(), ApiError> {
    execstore::kit::validate::check_id("id", id)?;
    Ok(())
}

/// The opaque cursor of the timers listing: the last timer of the page, as JSON.
pub(crate) fn encode_timer_cursor(timer: &DueTimer) -> String {
    URL_SAFE_NO_PAD.encode(json!([timer.execution_id, timer.path, timer.fire_at]).to_string())
}

pub(crate) fn decode_timer_cursor(cursor: &str) -> Result<DueTimer, ApiError> {
    let bad = || ApiError::bad_request(format!("{cursor:?} is not a cursor of this listing"));
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let (execution_id, path, fire_at): (String, String, f64) =
        serde_json::from_slice(&bytes).map_err(|_| bad())?;
    Ok(DueTimer {
        execution_id,
        path,
        fire_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_cursors_round_trip_and_refuse_garbage() {
        let t = DueTimer {
            execution_id: "a\"b".into(),
            path: "x.y".into(),
            fire_at: 1.5,
        };
        assert_eq!(decode_timer_cursor(&encode_timer_cursor(&t)).unwrap(), t);
        assert!(decode_timer_cursor("!!").is_err());
        assert!(decode_timer_cursor(&URL_SAFE_NO_PAD.encode("[1]")).is_err());
    }

    #[test]
    fn known_names_once_each() {
        assert!(Params::new("limit=5&q=a+b", &["limit", "q"], 0.0).is_ok());
        assert_eq!(Params::new("q=a+b", &["q"], 0.0).unwrap().get("q"), Some("a b"));
        assert!(Params::new("limit=5&limit=6", &["limit"], 0.0).is_err());
        assert!(Params::new("colour=red", &["limit"], 0.0).is_err());
        assert_eq!(
            Params::new("t=now", &["t"], 42.0).unwrap().time("t").unwrap(),
            Some(42.0)
        );
    }

    /// Decoded lossily, `%FF` would be U+FFFD: a search for ids starting with `a\u{fffd}`.
    #[test]
    fn values_that_are_not_utf8_once_decoded_are_refused() {
        for bad in [
            "q=a%FF",
            "q=%ED%A0%80",
            "q=a%C0%80",
            "q%FF=a",
            "limit=5&q=a%E2%82",
        ] {
            let e = Params::new(bad, &["q", "limit"], 0.0).err().expect(bad);
            assert_eq!(e.status, 400, "{bad}");
        }
        let ok = Params::new("q=a%EF%BF%BD+b", &["q"], 0.0).unwrap();
        assert_eq!(ok.get("q"), Some("a\u{fffd} b"));
    }
}
