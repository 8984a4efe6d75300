//! List queries: a filter, a page size and where to resume (a cursor of [`super::cursor`]).

use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};
use crate::executions::cursor::{decode_order_cursor, CursorKind, OrderKey};
use crate::executions::model::{Execution, ExecutionPage, ExecutionSummary, Status};
use crate::executions::search::{check_filter, execution_matches};
use crate::kit::filter::Filter;
use crate::kit::validate::{check_limit, check_time};

/// How many summaries a page holds when the query does not say (harel's default).
pub const DEFAULT_LIST_LIMIT: usize = 100;

/// The longest [`ListQuery::search`] accepted, in bytes.
pub const MAX_SEARCH_BYTES: usize = 256;

/// A window of epoch seconds over one of an execution's times: from `after` (inclusive)
/// until `before` (exclusive), either end open when `None`. Half-open, so consecutive
/// windows tile time without overlap. An execution without that time (`None`, e.g.
/// `finished_at` of a running one) is outside every window that has a bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeRange {
    /// Keep times at or after this.
    pub after: Option<f64>,
    /// Keep times strictly before this.
    pub before: Option<f64>,
}

impl TimeRange {
    /// The window `[after, before)`.
    pub fn new(after: Option<f64>, before: Option<f64>) -> Self {
        TimeRange { after, before }
    }

    /// Whether either end is set (an unset window keeps everything, `None` times included).
    pub fn is_set(&self) -> bool {
        self.after.is_some() || self.before.is_some()
    }

    /// Whether `time` is inside the window.
    pub fn contains(&self, time: Option<f64>) -> bool {
        if !self.is_set() {
            return true;
        }
        match time {
            None => false,
            Some(t) => self.after.is_none_or(|a| t >= a) && self.before.is_none_or(|b| t < b),
        }
    }

    /// Checks both ends (finite, not negative) and their order (`after` not past `before`);
    /// `field` names the window in the error (`"updated"`, ...).
    pub fn check(&self, field: &str) -> Result<()> {
        if let Some(a) = self.after {
            check_time(&format!("{field}_after"), a)?;
        }
        if let Some(b) = self.before {
            check_time(&format!("{field}_before"), b)?;
        }
        if let (Some(a), Some(b)) = (self.after, self.before) {
            if a > b {
                return Err(StoreError::invalid(
                    field,
                    format!("the window is inverted: {field}_after {a} is past {field}_before {b}"),
                ));
            }
        }
        Ok(())
    }
}

/// Whether an execution matches a [`ListQuery::search`] text `search`: its id starts with
/// `search`, or it is in state `search`, that is its active path is `search` itself or a
/// descendant of it (`search` followed by `.`, harel's path separator). Case-sensitive,
/// literal (no wildcards). Both halves are ranges of an index (the id; the active path), so
/// the SQL backends answer a search from indexes.
pub fn search_matches(search: &str, id: &str, active_path: Option<&str>) -> bool {
    id.starts_with(search)
        || active_path.is_some_and(|path| {
            path.strip_prefix(search)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        })
}

/// The order of a listing's pages ([`ListQuery::order`]). Every backend orders identically,
/// each from an index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListOrder {
    /// By id, ascending (harel's own listing; the core's default).
    #[default]
    Id,
    /// Most recently updated first: `updated_at` descending, ties by id descending, the
    /// executions without an `updated_at` last (by id descending). The keyset cursor holds
    /// the last summary's `(updated_at, id)`. A walk of the pages returns every execution
    /// that was not updated during the walk exactly once, in this order; one updated
    /// during the walk moves towards the front and is returned at most once (where it was,
    /// if the walk got there before the update, else not at all: the next walk shows it
    /// first). An update that moves `updated_at` backwards (a writer with a clock behind the
    /// others) may show an execution twice.
    UpdatedDesc,
    /// Newest created first: `created_at` descending, ties by id descending, the executions
    /// without a `created_at` last (by id descending). The keyset cursor holds the last
    /// summary's `(created_at, id)`. An execution's `created_at` does not change once
    /// written, so a walk of the pages returns every execution that existed when it began
    /// exactly once; one created during the walk shows only if it sorts after the cursor.
    CreatedDesc,
}

impl ListOrder {
    /// Every order, for checks and surfaces.
    pub const ALL: [ListOrder; 3] = [ListOrder::Id, ListOrder::UpdatedDesc, ListOrder::CreatedDesc];

    /// The order's name in URLs, the CLI and the packages: `id`, `updated`, `created`.
    pub fn as_str(self) -> &'static str {
        match self {
            ListOrder::Id => "id",
            ListOrder::UpdatedDesc => "updated",
            ListOrder::CreatedDesc => "created",
        }
    }

    /// The time a summary is ordered by in this order (`updated_at` or `created_at`; none
    /// in the id order).
    pub fn time_of(self, summary: &ExecutionSummary) -> Option<f64> {
        match self {
            ListOrder::Id => None,
            ListOrder::UpdatedDesc => summary.updated_at,
            ListOrder::CreatedDesc => summary.created_at,
        }
    }

    /// The time an execution is ordered by in this order (as [`ListOrder::time_of`]).
    pub fn time_of_execution(self, exe: &Execution) -> Option<f64> {
        match self {
            ListOrder::Id => None,
            ListOrder::UpdatedDesc => exe.updated_at,
            ListOrder::CreatedDesc => exe.created_at,
        }
    }

    /// How two summaries compare in this order (`Less`: `a` is listed first).
    pub fn compare(self, a: &ExecutionSummary, b: &ExecutionSummary) -> std::cmp::Ordering {
        self.compare_keys(self.time_of(a), &a.id, self.time_of(b), &b.id)
    }

    /// How two `(time, id)` keys compare in this order, the time being the order's own
    /// ([`ListOrder::time_of`]; ignored by the id order) (`Less`: `a` is listed first).
    pub fn compare_keys(
        self,
        a_time: Option<f64>,
        a_id: &str,
        b_time: Option<f64>,
        b_id: &str,
    ) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        match self {
            ListOrder::Id => a_id.cmp(b_id),
            ListOrder::UpdatedDesc | ListOrder::CreatedDesc => {
                let by_time = match (a_time, b_time) {
                    (Some(a), Some(b)) => b.total_cmp(&a),
                    (Some(_), None) => Ordering::Less,
                    (None, Some(_)) => Ordering::Greater,
                    (None, None) => Ordering::Equal,
                };
                by_time.then_with(|| b_id.cmp(a_id))
            }
        }
    }
}

impl std::fmt::Display for ListOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ListOrder {
    type Err = StoreError;

    /// `id`, `updated` or `created` (also the serde names `updated_desc`, `created_desc`);
    /// anything else is [`StoreError::InvalidInput`].
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "id" => Ok(ListOrder::Id),
            "updated" | "updated_desc" => Ok(ListOrder::UpdatedDesc),
            "created" | "created_desc" => Ok(ListOrder::CreatedDesc),
            other => Err(StoreError::invalid(
                "order",
                format!("{other:?} is not an order (id, updated, created)"),
            )),
        }
    }
}

/// Where the next page of a listing in a time order ([`ListOrder::UpdatedDesc`],
/// [`ListOrder::CreatedDesc`]) resumes: strictly after this key in that order.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeKey {
    /// The last summary's time in the order (`updated_at` or `created_at`; `None`: the walk
    /// is in the tail of executions without one).
    pub time: Option<f64>,
    /// The last summary's id.
    pub id: String,
}

/// What [`crate::ExecutionStore::list_executions`] returns: a filter, a page size and where
/// to resume. Pages are in the query's [`ListOrder`] (by id unless told otherwise); every
/// backend filters and orders in the same way.
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
    /// At most this many summaries per page (1 to [`crate::kit::validate::MAX_PAGE`]).
    pub limit: usize,
    /// The `next_cursor` of the previous page; `None` for the first page.
    pub cursor: Option<String>,
    /// Keep executions whose `created_at` is in this window.
    #[serde(default)]
    pub created: TimeRange,
    /// Keep executions whose `updated_at` is in this window.
    #[serde(default)]
    pub updated: TimeRange,
    /// Keep executions whose `finished_at` is in this window.
    #[serde(default)]
    pub finished: TimeRange,
    /// Keep executions this text finds (see [`search_matches`]: an id prefix, or a state
    /// the execution is in); 1 to [`MAX_SEARCH_BYTES`] bytes, no NUL.
    #[serde(default)]
    pub search: Option<String>,
    /// The order of the pages (by id unless set); a cursor is only good for the order it
    /// was made in.
    #[serde(default)]
    pub order: ListOrder,
    /// Keep executions this `where` filter finds (see [`crate::executions::search`]; made by
    /// [`crate::executions::parse_where`]). Combined with every other filter (`and`).
    #[serde(default, rename = "where")]
    pub filter: Option<Filter>,
}

impl Default for ListQuery {
    fn default() -> Self {
        ListQuery {
            status: None,
            definition_id: None,
            roots_only: false,
            limit: DEFAULT_LIST_LIMIT,
            cursor: None,
            created: TimeRange::default(),
            updated: TimeRange::default(),
            finished: TimeRange::default(),
            search: None,
            order: ListOrder::Id,
            filter: None,
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

    /// Keeps executions created in `[after, before)`.
    pub fn created_between(mut self, after: Option<f64>, before: Option<f64>) -> Self {
        self.created = TimeRange::new(after, before);
        self
    }

    /// Keeps executions last updated in `[after, before)`.
    pub fn updated_between(mut self, after: Option<f64>, before: Option<f64>) -> Self {
        self.updated = TimeRange::new(after, before);
        self
    }

    /// Keeps executions finished in `[after, before)`.
    pub fn finished_between(mut self, after: Option<f64>, before: Option<f64>) -> Self {
        self.finished = TimeRange::new(after, before);
        self
    }

    /// Keeps executions that `search` finds (see [`search_matches`]).
    pub fn search(mut self, search: impl Into<String>) -> Self {
        self.search = Some(search.into());
        self
    }

    /// Keeps executions `filter` finds.
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Lists in this order.
    pub fn order(mut self, order: ListOrder) -> Self {
        self.order = order;
        self
    }

    /// Checks the query (as [`ListQuery::validated_after`]) for a listing in a time order
    /// (the query's own, [`ListOrder::UpdatedDesc`] or [`ListOrder::CreatedDesc`]) and
    /// decodes its cursor into the key to resume after. A cursor made for another order is
    /// [`StoreError::InvalidInput`].
    pub fn validated_time_after(&self) -> Result<Option<TimeKey>> {
        Ok(self
            .validated_key(self.order)?
            .map(|OrderKey { time, id, .. }| TimeKey { time, id }))
    }

    /// Checks the query and decodes its cursor, refusing one made in another order than
    /// `order`.
    fn validated_key(&self, order: ListOrder) -> Result<Option<OrderKey>> {
        self.check_filters()?;
        let Some(cursor) = &self.cursor else {
            return Ok(None);
        };
        let key = decode_order_cursor(cursor)?;
        let made_in = match key.kind {
            CursorKind::Id => ListOrder::Id,
            CursorKind::Updated => ListOrder::UpdatedDesc,
            CursorKind::Created => ListOrder::CreatedDesc,
        };
        if made_in != order {
            return Err(StoreError::invalid(
                "cursor",
                format!("the cursor is of the {made_in} order, the query lists by {order}"),
            ));
        }
        Ok(Some(key))
    }

    /// The query without what the counts by status ignore (status, cursor, limit and
    /// order): the filter of [`crate::ExecutionStore::count_by_status`], checked (as the
    /// listing checks it, and a definition id that cannot be one is
    /// [`StoreError::InvalidInput`]).
    pub fn count_filter(&self) -> Result<ListQuery> {
        let filter = ListQuery {
            status: None,
            cursor: None,
            limit: DEFAULT_LIST_LIMIT,
            order: ListOrder::Id,
            ..self.clone()
        };
        filter.check_filters()?;
        if let Some(definition_id) = &filter.definition_id {
            crate::kit::validate::check_id("definition_id", definition_id)?;
        }
        Ok(filter)
    }

    /// Checks the query and decodes its cursor into the id to resume after, for a listing
    /// in [`ListOrder::Id`] (a cursor of another order is [`StoreError::InvalidInput`]).
    /// A cursor that this crate did not make, a time that is NaN, infinite or negative, an
    /// inverted window, and an empty, over-long or NUL-holding search are
    /// [`StoreError::InvalidInput`].
    pub fn validated_after(&self) -> Result<Option<String>> {
        Ok(self.validated_key(ListOrder::Id)?.map(|key| key.id))
    }

    /// Checks the page size, the windows and the search.
    fn check_filters(&self) -> Result<()> {
        check_limit("limit", self.limit)?;
        self.created.check("created")?;
        self.updated.check("updated")?;
        self.finished.check("finished")?;
        if let Some(search) = &self.search {
            if search.is_empty() {
                return Err(StoreError::invalid("search", "must not be empty"));
            }
            if search.len() > MAX_SEARCH_BYTES {
                return Err(StoreError::invalid(
                    "search",
                    format!("longer than {MAX_SEARCH_BYTES} bytes"),
                ));
            }
            if search.contains('\0') {
                return Err(StoreError::invalid("search", "contains a NUL character"));
            }
        }
        if let Some(filter) = &self.filter {
            check_filter(filter)?;
        }
        Ok(())
    }

    /// Whether the query filters by time, search or `where` (beyond status, definition and
    /// roots).
    pub fn has_time_or_search(&self) -> bool {
        self.created.is_set()
            || self.updated.is_set()
            || self.finished.is_set()
            || self.search.is_some()
            || self.filter.is_some()
    }

    /// Whether a summary passes the status, definition and roots filters (for backends
    /// that filter in memory; the time windows and the search need
    /// [`ListQuery::matches_execution`]).
    pub fn matches(&self, status: Status, definition_id: &str, parent_id: Option<&str>) -> bool {
        self.status.as_ref().is_none_or(|set| set.contains(&status))
            && self.definition_id.as_deref().is_none_or(|d| d == definition_id)
            && (!self.roots_only || parent_id.is_none())
    }

    /// Whether an execution passes every filter of the query.
    pub fn matches_execution(&self, exe: &Execution) -> bool {
        self.matches(exe.status, &exe.definition_id, exe.parent_id.as_deref())
            && self.created.contains(exe.created_at)
            && self.updated.contains(exe.updated_at)
            && self.finished.contains(exe.finished_at)
            && self
                .search
                .as_deref()
                .is_none_or(|s| search_matches(s, &exe.id, exe.active_path.as_deref()))
            && self.filter.as_ref().is_none_or(|f| execution_matches(f, exe))
    }
}

// Here rather than in model.rs: a page's cursor is of its query's order (model knows no
// query).
impl ExecutionPage {
    /// [`ExecutionPage::from_overfetch`] for a listing in `order`: the cursor holds the last
    /// summary's key in that order.
    pub fn from_overfetch_in(order: ListOrder, mut items: Vec<ExecutionSummary>, limit: usize) -> Self {
        let next_cursor = if items.len() > limit {
            items.truncate(limit);
            items.last().map(|last| match order {
                ListOrder::Id => crate::executions::cursor::encode_cursor(&last.id),
                ListOrder::UpdatedDesc => {
                    crate::executions::cursor::encode_updated_cursor(last.updated_at, &last.id)
                }
                ListOrder::CreatedDesc => {
                    crate::executions::cursor::encode_created_cursor(last.created_at, &last.id)
                }
            })
        } else {
            None
        };
        ExecutionPage {
            items,
            next_cursor,
            scan: Vec::new(),
        }
    }
}
