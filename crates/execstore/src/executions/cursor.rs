//! The opaque keyset cursor of a listing: where the next page of
//! [`crate::ExecutionStore::list_executions`] resumes.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

use crate::error::{Result, StoreError};

const CURSOR_TAG: &str = "after:";

/// The cursor that resumes a listing after the execution `last_id`.
pub fn encode_cursor(last_id: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{CURSOR_TAG}{last_id}"))
}

/// The id a cursor resumes after; anything not made by [`encode_cursor`] is refused (a
/// cursor of the updated order too).
pub fn decode_cursor(cursor: &str) -> Result<String> {
    match decode_order_cursor(cursor)? {
        OrderKey {
            updated: false, id, ..
        } => Ok(id),
        OrderKey { .. } => Err(bad(cursor, "unknown format")),
    }
}

/// The refusal of `cursor`, saying `why`.
fn bad(cursor: &str, why: &str) -> StoreError {
    StoreError::invalid(
        "cursor",
        format!("{cursor:?} is not a cursor of this store ({why})"),
    )
}

const UPDATED_TAG: &str = "updated:";

/// The cursor that resumes a listing most recently updated first after the
/// summary `(updated_at, id)`. The time is kept exactly (its bits), so the keyset resumes on
/// the very key.
pub fn encode_updated_cursor(updated_at: Option<f64>, id: &str) -> String {
    let time = updated_at.map_or_else(|| "-".to_owned(), |t| format!("{:016x}", t.to_bits()));
    URL_SAFE_NO_PAD.encode(format!("{UPDATED_TAG}{time}:{id}"))
}

/// A decoded cursor of any order: `updated` for one of the updated order (its time in
/// `time`), else one of the id order. (Not the query's `ListOrder` itself: the query
/// module reads cursors, so a cursor knows nothing of queries.)
pub(crate) struct OrderKey {
    pub(crate) updated: bool,
    pub(crate) time: Option<f64>,
    pub(crate) id: String,
}

/// Decodes a cursor of any order; anything not made by [`encode_cursor`] or
/// [`encode_updated_cursor`] is refused.
pub(crate) fn decode_order_cursor(cursor: &str) -> Result<OrderKey> {
    let bad = |why: &str| bad(cursor, why);
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad("not base64url"))?;
    let text = String::from_utf8(bytes).map_err(|_| bad("not UTF-8"))?;
    if let Some(id) = text.strip_prefix(CURSOR_TAG) {
        if id.is_empty() {
            return Err(bad("unknown format"));
        }
        return Ok(OrderKey {
            updated: false,
            time: None,
            id: id.to_owned(),
        });
    }
    let rest = text
        .strip_prefix(UPDATED_TAG)
        .ok_or_else(|| bad("unknown format"))?;
    let (time, id) = rest.split_once(':').ok_or_else(|| bad("unknown format"))?;
    if id.is_empty() {
        return Err(bad("unknown format"));
    }
    let time = match time {
        "-" => None,
        bits if bits.len() == 16 => {
            let bits = u64::from_str_radix(bits, 16).map_err(|_| bad("unknown format"))?;
            let t = f64::from_bits(bits);
            if !t.is_finite() {
                return Err(bad("not a time"));
            }
            Some(t)
        }
        _ => return Err(bad("unknown format")),
    };
    Ok(OrderKey {
        updated: true,
        time,
        id: id.to_owned(),
    })
}
