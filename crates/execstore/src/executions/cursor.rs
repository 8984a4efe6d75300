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
            kind: CursorKind::Id,
            id,
            ..
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

const CREATED_TAG: &str = "created:";

/// The cursor that resumes a listing newest created first after the summary
/// `(created_at, id)`: the updated cursor's key under a tag of its own.
pub fn encode_created_cursor(created_at: Option<f64>, id: &str) -> String {
    let time = created_at.map_or_else(|| "-".to_owned(), |t| format!("{:016x}", t.to_bits()));
    URL_SAFE_NO_PAD.encode(format!("{CREATED_TAG}{time}:{id}"))
}

/// The order a cursor was made in. (Not the query's `ListOrder` itself: the query module
/// reads cursors, so a cursor knows nothing of queries.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CursorKind {
    /// [`encode_cursor`]'s.
    Id,
    /// [`encode_updated_cursor`]'s.
    Updated,
    /// [`encode_created_cursor`]'s.
    Created,
}

/// A decoded cursor of any order: its kind, the time of a time order's key (`None` in the id
/// order and in a time order's tail of executions without that time) and the id.
pub(crate) struct OrderKey {
    pub(crate) kind: CursorKind,
    pub(crate) time: Option<f64>,
    pub(crate) id: String,
}

/// Decodes a cursor of any order; anything not made by [`encode_cursor`],
/// [`encode_updated_cursor`] or [`encode_created_cursor`] is refused.
pub(crate) fn decode_order_cursor(cursor: &str) -> Result<OrderKey> {
    let bad = |why: &str| bad(cursor, why);
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad("not base64url"))?;
    let text = String::from_utf8(bytes).map_err(|_| bad("not UTF-8"))?;
    if let Some(id) = text.strip_prefix(CURSOR_TAG) {
        if id.is_empty() {
            return Err(bad("unknown format"));
        }
        return Ok(OrderKey {
            kind: CursorKind::Id,
            time: None,
            id: id.to_owned(),
        });
    }
    let (kind, rest) = time_tagged(&text).ok_or_else(|| bad("unknown format"))?;
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
        kind,
        time,
        id: id.to_owned(),
    })
}

/// The kind of a time order's cursor text and the key after its tag, or `None`.
fn time_tagged(text: &str) -> Option<(CursorKind, &str)> {
    [
        (UPDATED_TAG, CursorKind::Updated),
        (CREATED_TAG, CursorKind::Created),
    ]
    .into_iter()
    .find_map(|(tag, kind)| text.strip_prefix(tag).map(|rest| (kind, rest)))
}
