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

/// The id a cursor resumes after; anything not made by [`encode_cursor`] is refused.
pub fn decode_cursor(cursor: &str) -> Result<String> {
    let bad = |why: &str| {
        StoreError::invalid(
            "cursor",
            format!("{cursor:?} is not a cursor of this store ({why})"),
        )
    };
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad("not base64url"))?;
    let text = String::from_utf8(bytes).map_err(|_| bad("not UTF-8"))?;
    match text.strip_prefix(CURSOR_TAG) {
        Some(id) if !id.is_empty() => Ok(id.to_owned()),
        _ => Err(bad("unknown format")),
    }
}
