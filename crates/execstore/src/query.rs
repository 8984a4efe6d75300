//! List queries and their opaque keyset cursors.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::model::Status;
use crate::validate::check_limit;

/// How many summaries a page holds when the query does not say (harel's default).
pub const DEFAULT_LIST_LIMIT: usize = 100;

/// What [`crate::ExecutionStore::list_executions`] returns: a filter, a page size and where
/// to resume. Pages are ordered by id; every backend filters in the same way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ListQuery {
    /// Keep executions whose status is any of these; `None` keeps every status (and an
    /// empty set keeps none).
    pub status: Option<Vec<Status>>,
    /// Keep executions of this definition only.
    pub definition_id: Option<String>,
    /// Keep root executions only (no `parent_id`).
    pub roots_only: bool,
    /// At most this many summaries per page (1 to [`crate::validate::MAX_PAGE`]).
    pub limit: usize,
    /// The `next_cursor` of the previous page; `None` for the first page.
    pub cursor: Option<String>,
}

impl Default for ListQuery {
    fn default() -> Self {
        ListQuery {
            status: None,
            definition_id: None,
            roots_only: false,
            limit: DEFAULT_LIST_LIMIT,
            cursor: None,
        }
    }
}

impl ListQuery {
    /// Every execution, first page, [`DEFAULT_LIST_LIMIT`] per page.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps these statuses.
    pub fn status(mut self, statuses: impl IntoIterator<Item = Status>) -> Self {
        self.status = Some(statuses.into_iter().collect());
        self
    }

    /// Keeps this definition.
    pub fn definition(mut self, definition_id: impl Into<String>) -> Self {
        self.definition_id = Some(definition_id.into());
        self
    }

    /// Keeps roots only, or not.
    pub fn roots_only(mut self, roots_only: bool) -> Self {
        self.roots_only = roots_only;
        self
    }

    /// Sets the page size.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// Resumes after the page that returned `cursor`.
    pub fn cursor(mut self, cursor: Option<String>) -> Self {
        self.cursor = cursor;
        self
    }

    /// Checks the query and decodes its cursor into the id to resume after.
    /// A cursor that this crate did not make is [`StoreError::InvalidInput`].
    pub fn validated_after(&self) -> Result<Option<String>> {
        check_limit("limit", self.limit)?;
        self.cursor.as_deref().map(decode_cursor).transpose()
    }

    /// Whether a summary passes the filter (for backends that filter in memory).
    pub fn matches(&self, status: Status, definition_id: &str, parent_id: Option<&str>) -> bool {
        self.status.as_ref().is_none_or(|set| set.contains(&status))
            && self.definition_id.as_deref().is_none_or(|d| d == definition_id)
            && (!self.roots_only || parent_id.is_none())
    }
}

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
