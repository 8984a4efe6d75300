//! Columns as records: the conversions every read of the workspace log shares.

use execstore::kit::pyjson;
use execstore::workspace::{StoredRule, StoredRuleStatus, Timestamp};
use execstore::{executions::JsonObject, Result, StoreError};
use postgres::types::FromSql;
use postgres::Row;

/// A column of `row`, or `Corrupt` if it does not hold the expected type.
pub(super) fn col<'a, T: FromSql<'a>>(row: &'a Row, idx: usize) -> Result<T> {
    row.try_get(idx).map_err(|e| corrupt("row", e))
}

pub(super) fn corrupt(what: &str, reason: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        what: what.to_owned(),
        reason: reason.to_string(),
    }
}

/// A time read with `ts!` (UTC, pydantic's text), as a UTC [`Timestamp`].
pub(super) fn time(text: &str) -> Result<Timestamp> {
    Timestamp::parse_json_text(text)
        .map(Timestamp::to_utc)
        .map_err(|e| corrupt("timestamp", e))
}

/// An optional time column.
pub(super) fn opt_time(row: &Row, idx: usize) -> Result<Option<Timestamp>> {
    col::<Option<String>>(row, idx)?.map(|t| time(&t)).transpose()
}

/// A time as bound: pydantic's text, exact to the microsecond, with its offset.
pub(super) fn bind_time(at: Timestamp) -> String {
    at.to_json_text()
}

/// A stored rule from `version, status, rule::text, provenance::text` at `idx..`.
pub(super) fn stored_rule(row: &Row) -> Result<StoredRule> {
    let object = |idx: usize, what: &str| -> Result<JsonObject> {
        pyjson::loads_object(&col::<String>(row, idx)?).map_err(|e| corrupt(what, e))
    };
    let status: String = col(row, 1)?;
    Ok(StoredRule {
        version: col(row, 0)?,
        status: StoredRuleStatus::parse(&status).map_err(|e| corrupt("stored rule status", e))?,
        rule: object(2, "stored rule")?,
        provenance: object(3, "stored rule provenance")?,
    })
}

/// A `LIMIT` as bound.
pub(super) fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
