//! Which index a time-ordered listing (`order.rs`) reads when the query filters on a
//! status, a definition or roots only.
//!
//! Migration 9's index per time order holds `(time, id, status, definition_id, root)`: a
//! walk of it from the most recent down checks every one of those filters on the entry it
//! is on, never reading a document, and stops after a page. It reads about a page divided
//! by the share of the store that passes the filters: a page of a status that holds half
//! the store reads two pages of entries, one of a definition that holds 0.01% of a million
//! executions reads them all. So a filter with few executions is answered the other way:
//! its executions read from migration 1's `(status, id)` or `(definition_id, id)` index and
//! sorted by the order's time, [`SORT_COST`] walk steps each. [`choose`] takes the cheaper
//! by the counts kept in migration 8's `now` (a few rows, exact for every combination of
//! status, definition and root-ness). Without them, the walk.
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

/// The index a time-ordered listing reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Driver {
    /// Migration 9's `(time, id, status, definition_id, root)`: walked from the most recent
    /// down, each filter checked on the index entry, until a page passes.
    Walk,
    /// `(status, id)`: the status's executions read and sorted by the order's time.
    Status,
    /// `(definition_id, id)`: the definition's executions read and sorted.
    Definition,
    /// The index of a window on another time field than the order's: its range, sorted.
    Window,
}

/// What sorting one execution costs against walking past one entry of migration 9's index:
/// a sort reads the execution's document for its time (a table seek and a JSON parse), a
/// walk compares the keys in the entry it is on. Measured at 1,000,000 executions (the
/// worst cases in docs/scale.md): about 2.5 us an execution sorted against 0.05 us an
/// entry walked, a ratio near 50. 20 favours the sort of a middling filter, and keeps the
/// probe's budget (and so the worst case, a probe that finds nothing and then the sort)
/// smaller.
pub(crate) const SORT_COST: u64 = 20;

/// [`SORT_COST`] on a file without migration 9's index (a read-only open of a file no
/// writer of this build opened): its time indexes hold no filter, so a walk reads the
/// document of every execution it passes, as a sort does.
pub(crate) const SORT_COST_WITHOUT_LISTING_INDEX: u64 = 1;

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
    /// By status string (the document's, `""` when it has none): every execution, the
    /// query's definition's, the roots, the definition's roots.
    by_status: Vec<(String, [u64; 4])>,
}

impl Sizes {
    /// From the rows of [`Stmts::driver_sizes`]: status, then its count, the definition's
    /// share of it, the roots' share and the definition's roots'.
    pub(crate) fn from_rows(rows: impl IntoIterator<Item = (String, [u64; 4])>) -> Self {
        Sizes {
            by_status: rows.into_iter().collect(),
        }
    }

    /// The executions of `status` (`None`: every status) in the column `column` (0: all,
    /// 1: the definition's, 2: the roots, 3: the definition's roots).
    fn sum(&self, status: Option<&str>, column: usize) -> u64 {
        self.by_status
            .iter()
            .filter(|(s, _)| status.is_none_or(|status| s == status))
            .map(|(_, n)| n[column])
            .sum()
    }
}

/// Whether `query` has a filter the listing index holds (a status, a definition, roots
/// only), with `statuses` its distinct statuses: without one, the walk is the only choice.
pub(crate) fn indexed_filters(query: &ListQuery, statuses: &[&str]) -> bool {
    !statuses.is_empty() || query.definition_id.is_some() || query.roots_only
}

/// What [`choose`] decided for one status's walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Choice {
    /// This index, whatever the data.
    Read(Driver),
    /// The walk, if [`Stmts::walk_probe`] finds a page within `budget` entries of its start
    /// (the filter's executions may all be old, where the counts say only how many there
    /// are); else `sort`.
    Probe {
        /// The most entries the probe walks: what the sort costs, in walk steps.
        budget: u64,
        /// The index sorted when the probe finds less than a page.
        sort: Driver,
    },
}

/// How to read a page of `fetch` of `status`'s executions (`None`: every status) under
/// `query`'s definition and roots filters, by `sizes`: the walk reads about `fetch` divided
/// by the share of the store that passes every filter, if the filter's executions are spread
/// over time as the store's are; a sort of a status's or the definition's executions
/// [`SORT_COST`] per execution. The cheaper sort wins outright when that walk would cost more;
/// else the walk is probed first, at most as far as the sort would cost, since a filter's
/// executions may all be old (a definition no longer started, an incident's failures).
/// Without a sort to fall back on (no status or definition filter) or without the counts:
/// the walk. `sort_cost` is [`SORT_COST`], or [`SORT_COST_WITHOUT_LISTING_INDEX`].
pub(crate) fn choose(
    query: &ListQuery,
    status: Option<&str>,
    sizes: Option<&Sizes>,
    fetch: u64,
    sort_cost: u64,
) -> Choice {
    let Some(sizes) = sizes else {
        return Choice::Read(Driver::Walk);
    };
    let total = sizes.sum(None, 0);
    let column = usize::from(query.definition_id.is_some()) + 2 * usize::from(query.roots_only);
    let passing = sizes.sum(status, column);
    let walk = fetch
        .saturating_mul(total)
        .checked_div(passing)
        .map_or(total, |walk| walk.min(total));
    let mut sort: Option<(Driver, u64)> = None;
    if status.is_some() {
        sort = Some((Driver::Status, sort_cost.saturating_mul(sizes.sum(status, 0))));
    }
    if query.definition_id.is_some() {
        let cost = sort_cost.saturating_mul(sizes.sum(None, 1));
        if sort.is_none_or(|(_, c)| cost < c) {
            sort = Some((Driver::Definition, cost));
        }
    }
    match sort {
        None => Choice::Read(Driver::Walk),
        Some((driver, cost)) if cost < walk => Choice::Read(driver),
        // A walk that reads every entry anyway needs no probe.
        Some(_) if walk >= total => Choice::Read(Driver::Walk),
        Some((driver, cost)) => Choice::Probe {
            budget: cost,
            sort: driver,
        },
    }
}

impl Stmts {
    /// The counts by status, each with its executions of definition `?1`, its roots and the
    /// definition's roots, from the kept counts (migration 8's `now`, summed).
    pub(crate) fn driver_sizes(&self) -> String {
        format!(
            "SELECT status, SUM(n), SUM(CASE WHEN definition_id = ?1 THEN n ELSE 0 END), \
             SUM(CASE WHEN root = 1 THEN n ELSE 0 END), \
             SUM(CASE WHEN definition_id = ?1 AND root = 1 THEN n ELSE 0 END) FROM {} GROUP BY status",
            self.counts_table
        )
    }

    /// How many of the first `budget` entries of the walk of `order`'s listing index pass
    /// `status` and `query`'s definition and roots filters, counted up to `fetch`: a page
    /// found (`fetch`) means the walk reads at most `budget` entries. Only the index is
    /// read (each key is an expression it holds).
    pub(crate) fn walk_probe(
        &self,
        query: &ListQuery,
        status: Option<&str>,
        budget: u64,
        fetch: i64,
    ) -> Filtered {
        let time = format!("json_extract(data,'$.{}')", order_field(query.order));
        let mut c = Conditions::default();
        if let Some(definition) = &query.definition_id {
            c.push("d = ?", [Value::Text(definition.clone())]);
        }
        if let Some(status) = status {
            c.push("s = ?", [Value::Text(status.to_owned())]);
        }
        if query.roots_only {
            c.push("r", []);
        }
        let mut args = vec![Value::Integer(i64::try_from(budget).unwrap_or(i64::MAX))];
        args.extend(c.args);
        args.push(Value::Integer(fetch));
        Filtered {
            sql: format!(
                "SELECT COUNT(*) FROM (SELECT 1 FROM (SELECT json_extract(data,'$.status') AS s, \
                 definition_id AS d, json_extract(data,'$.parent_id') IS NULL AS r FROM {} \
                 ORDER BY {time} DESC, id DESC LIMIT ?){} LIMIT ?)",
                self.executions,
                c.terms.where_clause()
            ),
            args,
        }
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
    /// written with a `+` so that its index is not used (on a walk, none is: each is read
    /// from the walked index's entry, the roots' as the very expression it holds).
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
            c.push("+(json_extract(data,'$.parent_id') IS NULL)", []);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100,000 executions: RUNNING 60,000 (the definition's 360, of them 10 roots), DONE
    /// 39,900 (the definition's 40, all roots), FAILED 100 (none the definition's); 49,100
    /// roots.
    fn sizes() -> Sizes {
        Sizes::from_rows([
            ("RUNNING".to_owned(), [60_000, 360, 30_000, 10]),
            ("DONE".to_owned(), [39_900, 40, 19_000, 40]),
            ("FAILED".to_owned(), [100, 0, 100, 0]),
        ])
    }

    #[test]
    fn the_cheaper_read_wins() {
        let z = sizes();
        let q = ListQuery::new();
        let pick = |q: &ListQuery, status| choose(q, status, Some(&z), 51, SORT_COST);
        let read = Choice::Read;
        let probe = |budget, sort| Choice::Probe { budget, sort };
        // A large status walks (51 / 60% entries), probed at most as far as sorting its
        // 60,000 would cost; a small one sorts (100 x 20 against 51 / 0.1%); one that has
        // no execution sorts nothing.
        assert_eq!(pick(&q, Some("RUNNING")), probe(1_200_000, Driver::Status));
        assert_eq!(pick(&q, Some("FAILED")), read(Driver::Status));
        assert_eq!(pick(&q, Some("PAUSED")), read(Driver::Status));
        // The definition's 400: sorting them (8,000) beats walking 51 / 0.4% (12,750).
        let d = q.clone().definition("d");
        assert_eq!(pick(&d, None), read(Driver::Definition));
        assert_eq!(pick(&d, Some("RUNNING")), read(Driver::Definition));
        // FAILED of the definition: none pass, and FAILED is the smaller to sort.
        assert_eq!(pick(&d, Some("FAILED")), read(Driver::Status));
        // Roots alone are half the store: walked, with nothing to sort instead; DONE's
        // roots probed first; the definition's 50 roots sorted.
        let r = q.clone().roots_only(true);
        assert_eq!(pick(&r, None), read(Driver::Walk));
        assert_eq!(pick(&r, Some("DONE")), probe(798_000, Driver::Status));
        assert_eq!(pick(&d.clone().roots_only(true), None), read(Driver::Definition));
        // Without a filter, or without the counts: the walk.
        assert_eq!(pick(&q, None), read(Driver::Walk));
        assert_eq!(
            choose(&d, Some("FAILED"), None, 51, SORT_COST),
            read(Driver::Walk)
        );
        // The same 400 in a larger store: probed at 10,000 (51 / 4%: 1,275 entries if they
        // are spread), sorted at 1,000,000 (51 / 0.04%, 127,500).
        let grown = |total: u64| Sizes::from_rows([("RUNNING".to_owned(), [total, 400, 0, 0])]);
        assert_eq!(
            choose(&d, None, Some(&grown(10_000)), 51, SORT_COST),
            probe(8_000, Driver::Definition)
        );
        assert_eq!(
            choose(&d, None, Some(&grown(1_000_000)), 51, SORT_COST),
            read(Driver::Definition)
        );
        // Without migration 9's index a walk step costs a sort's: the definition's 400 of
        // 10,000 are sorted (400 against 1,275 rows read).
        assert_eq!(
            choose(
                &d,
                None,
                Some(&grown(10_000)),
                51,
                SORT_COST_WITHOUT_LISTING_INDEX
            ),
            read(Driver::Definition)
        );
        assert!(indexed_filters(&r, &[]) && indexed_filters(&q, &["DONE"]) && !indexed_filters(&q, &[]));
    }
}
