//! Which index drives a time-ordered listing's walk (`order.rs`) when the query has more
//! than one of the filters that migration 6 indexes in the order's key: a status, a
//! definition, roots only.
//!
//! Each of those filters has an index of `(key, time, id)` (roots: a partial index of
//! `(time, id)`), so any one of them can drive a walk from the most recent down and stop
//! after a page; the others are checked on the rows it reads. The walk reads about a page
//! divided by the share of the driver's rows that pass the other filters, so the smallest
//! driver wins: its size is read from the counts kept by migration 5 (a few rows). Without
//! them the preference is status, definition, roots.
//!
//! A window on another time field than the order's (a `created` window in the `updated`
//! order, a `finished` window) is no range of the walked index: the walk checks it on every
//! row it reads, and a window far from the most recent (or empty) makes it read the whole
//! store. So such a window's size is counted first on its own index, at most
//! [`WINDOW_SORT_CAP`] entries read: a window that small drives instead ([`Driver::Window`]:
//! its range read and its ids sorted, at most that many); a larger one is checked on the walk.
//!
//! So is a `where` that pins the active path (`state = X`, alone or and-ed): the walk of
//! the order's index would read every execution more recent than the state's (SQLite's
//! statistics, when `ANALYZE` made some, say a state holds many: most executions sit in a
//! few states), so the state's executions are counted first on migration 2's
//! `(active_path, id)` index, and drive when they are few.
//!
//! SQLite without statistics cannot know this, and might walk the wrong index (or one
//! index by equality and sort): every filter that is not the driver is written with a
//! unary `+` (`+definition_id = ?`), which keeps its index out of the choice and leaves
//! the result the same.

use execstore::executions::{ListOrder, ListQuery, TimeRange};
use rusqlite::types::Value;

use super::filters::{Conditions, Filtered, WhereClause};
use super::sql::Stmts;

/// The index a time-ordered walk follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Driver {
    /// `(status, time, id)`: one status's range.
    Status,
    /// `(definition_id, time, id)`: one definition's range.
    Definition,
    /// `(time, id) WHERE parent_id IS NULL`: the roots.
    Roots,
    /// `(time, id)`: every execution (no indexed filter).
    Time,
    /// The index of a window on another time field than the order's: its range, sorted.
    Window,
}

/// The most entries a window on another time field may have to drive the walk: each row it
/// reads is parsed for the order's time (about 5 us a row on a loaded 2-core machine), so
/// at most about 10 ms; a larger window is checked on the walk, which stops after a page
/// when the window holds recent executions (the monitor's "last hour") but reads every
/// execution more recent than an old one.
pub(crate) const WINDOW_SORT_CAP: i64 = 2_000;

/// The time field of a time order's key.
pub(crate) fn order_field(order: ListOrder) -> &'static str {
    match order {
        ListOrder::CreatedDesc => "created_at",
        _ => "updated_at",
    }
}

/// The windows of `query` on other time fields than its order's (none when the order's own
/// field has a window: that range bounds the walk already).
pub(crate) fn other_windows(query: &ListQuery) -> Vec<(&'static str, &TimeRange)> {
    let own = order_field(query.order);
    let windows = [
        ("created_at", &query.created),
        ("updated_at", &query.updated),
        ("finished_at", &query.finished),
    ];
    if windows.iter().any(|(f, r)| *f == own && r.is_set()) {
        return Vec::new();
    }
    windows
        .into_iter()
        .filter(|(f, r)| *f != own && r.is_set())
        .collect()
}

/// The sizes of the candidate drivers of one query, from the kept counts.
#[derive(Debug, Default)]
pub(crate) struct Sizes {
    /// Executions by status string (the document's, `""` when it has none).
    by_status: Vec<(String, u64)>,
    /// Executions of the query's definition.
    definition: u64,
    /// Root executions.
    roots: u64,
}

impl Sizes {
    /// From the rows of [`Stmts::driver_sizes`]: status, its count, the definition's share
    /// of it, the roots' share of it.
    pub(crate) fn from_rows(rows: impl IntoIterator<Item = (String, u64, u64, u64)>) -> Self {
        let mut sizes = Sizes::default();
        for (status, n, definition, roots) in rows {
            sizes.definition += definition;
            sizes.roots += roots;
            sizes.by_status.push((status, n));
        }
        sizes
    }

    fn status(&self, status: &str) -> u64 {
        self.by_status
            .iter()
            .filter(|(s, _)| s == status)
            .map(|(_, n)| n)
            .sum()
    }
}

/// How many of the indexed filters `query` has, with `statuses` its distinct statuses: a
/// choice (and the counts read for it) is needed only from two on.
pub(crate) fn indexed_filters(query: &ListQuery, statuses: &[&str]) -> usize {
    usize::from(!statuses.is_empty())
        + usize::from(query.definition_id.is_some())
        + usize::from(query.roots_only)
}

/// The driver of the walk over `status`'s executions (`None`: every status) under `query`'s
/// definition and roots filters: the smallest candidate by `sizes`, or the first of status,
/// definition, roots without them.
pub(crate) fn choose(query: &ListQuery, status: Option<&str>, sizes: Option<&Sizes>) -> Driver {
    let mut candidates: Vec<(Driver, u64)> = Vec::with_capacity(3);
    if let Some(status) = status {
        candidates.push((Driver::Status, sizes.map_or(0, |z| z.status(status))));
    }
    if query.definition_id.is_some() {
        candidates.push((Driver::Definition, sizes.map_or(0, |z| z.definition)));
    }
    if query.roots_only {
        candidates.push((Driver::Roots, sizes.map_or(0, |z| z.roots)));
    }
    // `min_by_key` keeps the first of equal sizes: the preference order.
    candidates
        .into_iter()
        .min_by_key(|(_, n)| *n)
        .map_or(Driver::Time, |(driver, _)| driver)
}

impl Stmts {
    /// The counts by status, each with its executions of definition `?1` and its roots, from
    /// migration 5's kept counts.
    pub(crate) fn driver_sizes(&self) -> String {
        format!(
            "SELECT status, SUM(n), SUM(CASE WHEN definition_id = ?1 THEN n ELSE 0 END), \
             SUM(CASE WHEN root = 1 THEN n ELSE 0 END) FROM {} GROUP BY status",
            self.counts_table
        )
    }

    /// How many executions are in the state `?1` (at it, or below it: `?2` = `?1.` up to
    /// `?3` = `?1/`, `/` following `.`), counted on the active path's index (migration 2) up
    /// to `?4`.
    pub(crate) fn state_count(&self) -> String {
        format!(
            "SELECT COUNT(*) FROM (SELECT 1 FROM {} WHERE json_extract(data,'$.active_path') = ?1 \
             OR (json_extract(data,'$.active_path') >= ?2 AND json_extract(data,'$.active_path') < ?3) LIMIT ?4)",
            self.executions
        )
    }

    /// How many executions the window `range` on `field` holds, counted on its index up to
    /// [`WINDOW_SORT_CAP`] + 1.
    pub(crate) fn window_count(&self, field: &str, range: &TimeRange) -> Filtered {
        let mut c = Conditions::default();
        c.window(field, range, false);
        c.args.push(Value::Integer(WINDOW_SORT_CAP + 1));
        Filtered {
            sql: format!(
                "SELECT COUNT(*) FROM (SELECT 1 FROM {}{} LIMIT ?)",
                self.executions,
                c.terms.where_clause()
            ),
            args: c.args,
        }
    }

    /// The definition, `status` and roots-only filters of `query`, each not `driver`'s
    /// written with a `+` so that its index is not used.
    pub(crate) fn key_conditions(
        &self,
        query: &ListQuery,
        status: Option<&str>,
        driver: Driver,
        c: &mut Conditions,
    ) {
        let hint = |d: Driver| if d == driver { "" } else { "+" };
        if let Some(definition) = &query.definition_id {
            c.push(
                format!("{}definition_id = ?", hint(Driver::Definition)),
                [Value::Text(definition.clone())],
            );
        }
        if let Some(status) = status {
            c.push(
                format!("{}json_extract(data,'$.status') = ?", hint(Driver::Status)),
                [Value::Text(status.to_owned())],
            );
        }
        if query.roots_only {
            c.push(
                format!("{}json_extract(data,'$.parent_id') IS NULL", hint(Driver::Roots)),
                [],
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes() -> Sizes {
        Sizes::from_rows([
            ("RUNNING".to_owned(), 900, 10, 500),
            ("DONE".to_owned(), 50, 40, 30),
            ("".to_owned(), 5, 0, 5),
        ])
    }

    #[test]
    fn the_smallest_driver_wins() {
        let z = sizes();
        let q = ListQuery::new();
        assert_eq!(choose(&q, None, Some(&z)), Driver::Time);
        assert_eq!(choose(&q, Some("RUNNING"), Some(&z)), Driver::Status);
        let d = q.clone().definition("d");
        // The definition has 50 executions, RUNNING 900, DONE 50 (a tie keeps the status).
        assert_eq!(choose(&d, Some("RUNNING"), Some(&z)), Driver::Definition);
        assert_eq!(choose(&d, Some("DONE"), Some(&z)), Driver::Status);
        assert_eq!(choose(&d, Some("FAILED"), Some(&z)), Driver::Status);
        let r = q.clone().roots_only(true);
        // 535 roots.
        assert_eq!(choose(&r, Some("RUNNING"), Some(&z)), Driver::Roots);
        assert_eq!(choose(&r, Some("DONE"), Some(&z)), Driver::Status);
        assert_eq!(choose(&r, None, Some(&z)), Driver::Roots);
        assert_eq!(
            choose(&d.clone().roots_only(true), None, Some(&z)),
            Driver::Definition
        );
        // Without the counts: status, then definition, then roots.
        assert_eq!(choose(&d, Some("RUNNING"), None), Driver::Status);
        assert_eq!(choose(&d.roots_only(true), None, None), Driver::Definition);
        assert_eq!(indexed_filters(&r, &["DONE", "RUNNING"]), 2);
    }
}
