//! The listing in a time order ([`ListOrder::UpdatedDesc`], [`ListOrder::CreatedDesc`]) and
//! the counts by status of a listing's filter: one statement each, built with their
//! parameters over the filter of `filters.rs`.
//!
//! A time order is a walk of migration 9's `(updated_at, id, ...)` or `(created_at, id, ...)`
//! expression index backwards, in two arms: the executions with that time after the
//! cursor's key (a row-value range of the index, most recent first), then those without one
//! (`IS NULL`, a range of the same index by id, descending). Each arm reads at most a page
//! of ids; the outer query reads only those rows' documents and orders them with NULLs last,
//! as every backend does. A cursor inside the NULL tail skips the first arm.
//!
//! [`ListOrder::UpdatedDesc`]: execstore::executions::ListOrder::UpdatedDesc
//! [`ListOrder::CreatedDesc`]: execstore::executions::ListOrder::CreatedDesc

use execstore::executions::{ListOrder, ListQuery, TimeKey};
use rusqlite::types::Value;

use super::filters::{Conditions, Filtered, WhereClause};
use super::plan::{order_field, Driver};
use super::sql::Stmts;

/// The indexed expression of a time order's key, spelled as migrations 2 and 9 spell it.
fn time_column(order: ListOrder) -> &'static str {
    match order {
        ListOrder::CreatedDesc => "json_extract(data,'$.created_at')",
        _ => "json_extract(data,'$.updated_at')",
    }
}

impl Stmts {
    /// The listing of `query` in its time order (its time descending), resuming after
    /// `after` (the decoded cursor), fetching `fetch` rows; `drivers` the index each status
    /// slot reads (one per status of `statuses`, or one for every status; `plan.rs`),
    /// `window` the field whose range drives instead, its rows sorted (a time field's
    /// window, or `active_path` for a pinned state).
    ///
    /// Each status of the filter (or every status, without one) is walked on its own, two
    /// arms each (the times, then the NULL tail), each arm a range of one index read at most
    /// a page deep: several statuses are merged by the outer sort of at most a page per arm,
    /// where `status IN (...)` would have sorted every match. The first arm bounds the time
    /// below by `-9e999` (every number) rather than `IS NOT NULL`, which SQLite does not
    /// take as a range of the index; a window or a cursor on the order's own time is the
    /// range itself (and leaves no NULL tail to read).
    pub(crate) fn list_by_time(
        &self,
        query: &ListQuery,
        after: Option<&TimeKey>,
        statuses: &[&str],
        drivers: &[Driver],
        window: Option<&str>,
        fetch: i64,
    ) -> Filtered {
        let time_col = time_column(query.order);
        let own_window = match query.order {
            ListOrder::CreatedDesc => &query.created,
            _ => &query.updated,
        };
        let windowed = own_window.after.is_some() || own_window.before.is_some();
        // A pinned state drives by its index (`plan.rs`): named, as SQLite's statistics (when
        // `ANALYZE` made some) may rate a state's equality as no narrower than the table.
        let table = match window {
            Some("active_path") => format!("{} INDEXED BY {}", self.executions, self.state_index),
            _ => self.executions.clone(),
        };
        let mut args = Vec::new();
        let mut arms = Vec::new();
        let in_null_tail = after.is_some_and(|key| key.time.is_none());
        let slots: Vec<Option<&str>> = if statuses.is_empty() {
            vec![None]
        } else {
            statuses.iter().copied().map(Some).collect()
        };
        let own = order_field(query.order);
        debug_assert_eq!(drivers.len(), slots.len(), "one driver per status slot");
        for (status, &driver) in slots.into_iter().zip(drivers) {
            // Another index drives (`plan.rs`: a window on another field, a status's or a
            // definition's executions sorted): the order's own time, like every other
            // filter, is then checked on its rows. Its `ORDER BY` too: a one-sided window
            // looks to SQLite like a quarter of the table, which it would rather walk in the
            // order's index (or the id's) than sort.
            let walked = if driver == Driver::Walk { "" } else { "+" };
            let plus = |field: &str| (field != own || !walked.is_empty()) && Some(field) != window;
            if !in_null_tail {
                let mut c = Conditions::default();
                self.key_conditions(query, status, driver, &mut c);
                self.other_conditions_hinted(query, plus, &mut c);
                match after {
                    Some(TimeKey { time: Some(time), id }) => c.push(
                        // The first term is the index's range; the second leaves out the
                        // ties at or before the cursor's id.
                        format!("{walked}{time_col} <= ? AND ({time_col} < ? OR id < ?)"),
                        [Value::Real(*time), Value::Real(*time), Value::Text(id.clone())],
                    ),
                    _ if windowed => {}
                    _ => c.push(format!("{walked}{time_col} >= -9e999"), []),
                }
                arms.push(format!(
                    "SELECT id FROM (SELECT id FROM {table}{} ORDER BY {walked}{time_col} DESC, {walked}id DESC LIMIT ?)",
                    c.terms.where_clause()
                ));
                args.extend(c.args);
                args.push(Value::Integer(fetch));
            }
            if windowed {
                continue;
            }
            let mut c = Conditions::default();
            self.key_conditions(query, status, driver, &mut c);
            self.other_conditions_hinted(query, plus, &mut c);
            c.push(format!("{walked}{time_col} IS NULL"), []);
            if let Some(TimeKey { id, .. }) = after.filter(|_| in_null_tail) {
                c.push("id < ?", [Value::Text(id.clone())]);
            }
            arms.push(format!(
                "SELECT id FROM (SELECT id FROM {table}{} ORDER BY {walked}id DESC LIMIT ?)",
                c.terms.where_clause()
            ));
            args.extend(c.args);
            args.push(Value::Integer(fetch));
        }
        if arms.is_empty() {
            // A window with a cursor in the NULL tail: nothing is left.
            arms.push(format!("SELECT id FROM {} WHERE 0", self.executions));
        }
        args.push(Value::Integer(fetch));
        Filtered {
            sql: format!(
                "{select} WHERE id IN ({arms}) ORDER BY {time_col} DESC NULLS LAST, id DESC LIMIT ?",
                select = self.list_select,
                arms = arms.join(" UNION ALL "),
            ),
            args,
        }
    }

    /// The counts by status of the rows `filter` selects, read from the maintained counts
    /// (`schema.rs`, migration 5): `filter` (a [`ListQuery::count_filter`]) has no time
    /// window, search nor `where`, only a definition and roots-only.
    pub(crate) fn maintained_counts(&self, filter: &ListQuery) -> Filtered {
        let mut c = Conditions::default();
        if let Some(definition_id) = &filter.definition_id {
            c.push("definition_id = ?", [Value::Text(definition_id.clone())]);
        }
        if filter.roots_only {
            c.push("root = 1", []);
        }
        Filtered {
            sql: format!(
                "SELECT NULLIF(status, ''), SUM(n) FROM {}{} GROUP BY 1",
                self.counts_table,
                c.terms.where_clause()
            ),
            args: c.args,
        }
    }

    /// The counts by status of the rows `filter` selects (a [`ListQuery::count_filter`]).
    pub(crate) fn count_by_status(&self, filter: &ListQuery) -> Filtered {
        let mut c = Conditions::default();
        self.filter_conditions(filter, &[], &mut c);
        Filtered {
            sql: format!(
                "{}{} GROUP BY 1",
                self.status_counts_select,
                c.terms.where_clause()
            ),
            args: c.args,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{SqliteOptions, SqliteStore};
    use execstore::{
        executions::{encode_created_cursor, encode_updated_cursor, ListOrder, ListQuery, Status},
        Execution, ExecutionStore,
    };

    /// The query plan of `query`'s listing in its time order, one line per step, with the
    /// index chosen as the listing chooses it (from the kept counts).
    fn plan(store: &SqliteStore, query: &ListQuery) -> Vec<String> {
        let after = query.validated_time_after().unwrap();
        let mut statuses: Vec<&str> = query.status.iter().flatten().map(|s| s.as_str()).collect();
        statuses.sort_unstable();
        statuses.dedup();
        let (drivers, window) = {
            let conn = store.read().unwrap();
            let window = store.driving_window(&conn, query, false).unwrap();
            let drivers = store.drivers(&conn, query, &statuses, window, 51, false).unwrap();
            (drivers, window)
        };
        super::super::tests::filtered_plan(
            store,
            store
                .sql
                .list_by_time(query, after.as_ref(), &statuses, &drivers, window, 51),
        )
    }

    /// The ids of `query`'s page, as the listing answers it.
    fn page_ids(store: &SqliteStore, query: &ListQuery) -> Vec<String> {
        let page = store.list_executions(query).unwrap();
        page.items.into_iter().map(|s| s.id).collect()
    }

    /// The first `limit` of every execution `query` selects, in its order: read by the id
    /// order's listing (another statement) and sorted here.
    fn reference(store: &SqliteStore, query: &ListQuery, limit: usize) -> Vec<String> {
        let mut by_id = query.clone().order(ListOrder::Id).limit(10_000);
        by_id.cursor = None;
        let mut all = store.list_executions(&by_id).unwrap().items;
        all.sort_by(|a, b| query.order.compare(a, b));
        all.into_iter().take(limit).map(|s| s.id).collect()
    }

    /// The listing in `order` walks migration 9's index named `index` (a `SEARCH` of it,
    /// never a `SCAN` of the table nor a sort of it, reading no row under a status,
    /// definition or roots filter), first page and after a cursor, on a store of 3,000
    /// executions without statistics, or sorts a small filter's executions, and answers in
    /// that order.
    fn walks_the_index(order: ListOrder, index: &str) {
        let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
        for i in 0..3000 {
            let mut exe = Execution::new(format!("e{i:05}"), format!("d{}", i % 5));
            // CANCELLING is rare (51, 4 in each time's NULL tail), RUNNING common (807).
            exe.status = match Status::ALL[i % Status::ALL.len()] {
                Status::Cancelling if i % 70 != 5 && i % 100 > 1 => Status::Running,
                status => status,
            };
            exe.updated_at = (i % 100 != 0).then(|| 2e9 + ((i * 7919) % 3000) as f64);
            exe.created_at = (i % 100 != 1).then(|| 2e9 + ((i * 4999) % 3000) as f64);
            if i % 3 == 0 {
                exe.parent_id = Some("e00000".into());
            }
            if i % 50 == 7 {
                exe.definition_id = "small".into();
            }
            store.save(&mut exe).unwrap();
        }
        // A filter's own index (migration 1), read and sorted.
        let by = |what: &str| format!("execstore_executions_by_{what}");
        let cursor = |time, id: &str| match order {
            ListOrder::CreatedDesc => encode_created_cursor(time, id),
            _ => encode_updated_cursor(time, id),
        };
        let q = || ListQuery::new().order(order).limit(50);
        let window = |q: ListQuery| match order {
            ListOrder::CreatedDesc => q.created_between(Some(2e9 + 100.0), Some(2e9 + 2000.0)),
            _ => q.updated_between(Some(2e9 + 100.0), Some(2e9 + 2000.0)),
        };
        let cases = [
            ("first page", q()),
            (
                "after a cursor",
                q().cursor(Some(cursor(Some(2e9 + 1500.0), "e01500"))),
            ),
            ("in the tail", q().cursor(Some(cursor(None, "e01500")))),
            ("with a window", window(q())),
        ];
        // A narrow window on the other time field (about 100 of 3,000): its own index.
        let other_window = |q: ListQuery| match order {
            ListOrder::CreatedDesc => q.updated_between(Some(2e9 + 100.0), Some(2e9 + 200.0)),
            _ => q.created_between(Some(2e9 + 100.0), Some(2e9 + 200.0)),
        };
        let other_index = match order {
            ListOrder::CreatedDesc => "execstore_executions_listing_updated",
            _ => "execstore_executions_listing_created",
        };
        let running = || q().status([Status::Running]);
        let walk = || index.to_owned();
        // Each filter of a common status, a definition, roots, alone or together, walks the
        // order's index and reads them from it (`Some(false)`: the walk, covering); a
        // filter with few executions (the `small` definition's 60, CANCELLING's 51) is read
        // from its own index and sorted (`Some(true)`), as each of several statuses that is.
        // `None`: another time field's window, its range sorted.
        let filtered = [
            ("status", running(), walk(), Some(false)),
            (
                "two statuses",
                q().status([Status::Running, Status::Done]),
                walk(),
                Some(false),
            ),
            (
                "status after a cursor",
                running().cursor(Some(cursor(Some(2e9 + 1500.0), "e01500"))),
                walk(),
                Some(false),
            ),
            (
                "status in the tail",
                running().cursor(Some(cursor(None, "e02900"))),
                walk(),
                Some(false),
            ),
            ("status with a window", window(running()), walk(), Some(false)),
            ("definition", q().definition("d1"), walk(), Some(false)),
            ("roots", q().roots_only(true), walk(), Some(false)),
            (
                "roots with a window",
                window(q().roots_only(true)),
                walk(),
                Some(false),
            ),
            (
                "status and roots",
                running().roots_only(true),
                walk(),
                Some(false),
            ),
            (
                "two statuses, definition, roots",
                q().status([Status::Running, Status::Done])
                    .definition("d2")
                    .roots_only(true),
                walk(),
                Some(false),
            ),
            (
                "a rare status",
                q().status([Status::Cancelling]),
                by("status"),
                Some(true),
            ),
            (
                "a rare status after a cursor",
                q().status([Status::Cancelling])
                    .cursor(Some(cursor(Some(2e9 + 1500.0), "e01500"))),
                by("status"),
                Some(true),
            ),
            (
                "a rare status in the tail",
                q().status([Status::Cancelling])
                    .cursor(Some(cursor(None, "e02900"))),
                by("status"),
                Some(true),
            ),
            (
                "a small definition",
                q().definition("small"),
                by("definition"),
                Some(true),
            ),
            (
                "a small definition with a window",
                window(q().definition("small")),
                by("definition"),
                Some(true),
            ),
            (
                "status and a small definition",
                running().definition("small"),
                by("definition"),
                Some(true),
            ),
            ("other window", other_window(q()), other_index.to_owned(), None),
            (
                "other window, one-sided",
                match order {
                    ListOrder::CreatedDesc => q().updated_between(Some(2e9 + 2900.0), None),
                    _ => q().created_between(Some(2e9 + 2900.0), None),
                },
                other_index.to_owned(),
                None,
            ),
            (
                "other window with status",
                other_window(running()),
                other_index.to_owned(),
                None,
            ),
        ];
        let cases = cases
            .into_iter()
            .map(|(what, query)| (what, query, index.to_owned(), Some(false)))
            .chain(filtered);
        for (what, query, used, sorted) in cases {
            let used = used.as_str();
            let p = plan(&store, &query);
            assert!(
                p.iter().any(|s| s.contains(used)),
                "{what}: {used} is not used: {p:?}"
            );
            if used != index {
                assert!(
                    !p.iter().any(|s| s.contains(index)),
                    "{what}: {index} is used: {p:?}"
                );
            }
            // Every read of the table is a range of an index (the first page's walk of the
            // index from its end stops after a page), and a walk reads only the index.
            for step in p.iter().filter(|s| s.contains("executions")) {
                let first_page_walk =
                    what == "first page" && step == &format!("SCAN executions USING COVERING INDEX {index}");
                assert!(
                    step.starts_with("SEARCH") || first_page_walk,
                    "{what}: a full scan: {step} in {p:?}"
                );
                if sorted == Some(false) && step.contains(index) {
                    assert!(
                        step.contains("COVERING INDEX"),
                        "{what}: the walk reads rows: {p:?}"
                    );
                }
            }
            let sorts: Vec<usize> = (0..p.len()).filter(|i| p[*i].contains("TEMP B-TREE")).collect();
            if sorted == Some(false) {
                assert_eq!(sorts, [p.len() - 1], "{what}: a sort inside an arm: {p:?}");
            } else {
                // Each arm sorts what it read (at most `WINDOW_SORT_CAP` of a window's, a few
                // of a filter's), and the outer query the arms' pages.
                // (The NULL tail alone is read in the id order of the filter's index.)
                if !what.ends_with("in the tail") {
                    assert!(sorts.len() >= 2, "{what}: the arms do not sort: {p:?}");
                }
                assert_eq!(sorts.last(), Some(&(p.len() - 1)), "{what}: {p:?}");
            }
            let page = store.list_executions(&query).unwrap();
            if what == "in the tail" {
                assert_eq!(page.items.len(), 15, "{what}");
            }
            assert!(page.items.windows(2).all(|w| order.compare(&w[0], &w[1]).is_lt()));
            // The page is the first 50 of what the filter selects, in the order (after the
            // cursor: every item after the cursor's key).
            let ids: Vec<String> = page.items.iter().map(|s| s.id.clone()).collect();
            if query.cursor.is_none() {
                assert_eq!(ids, reference(&store, &query, 50), "{what}");
                assert!(ids.len() >= 5, "{what}: {}", ids.len());
            } else {
                let all = reference(&store, &query, 10_000);
                assert!(!ids.is_empty(), "{what}: nothing after the cursor");
                let at = all.iter().position(|id| id == &ids[0]).unwrap();
                assert_eq!(ids, all[at..(at + ids.len())], "{what}");
            }
        }
    }

    #[test]
    fn updated_order_walks_the_index() {
        walks_the_index(ListOrder::UpdatedDesc, "execstore_executions_listing_updated");
    }

    /// The `created` order answers from migration 9's `created_at` index, as the
    /// `updated` order from its own.
    #[test]
    fn created_order_walks_the_index() {
        walks_the_index(ListOrder::CreatedDesc, "execstore_executions_listing_created");
    }

    /// A filter whose executions are all old (a definition no longer started, an incident's
    /// failures) is sorted from its own index, though the counts alone say a walk would find
    /// a page soon (120 of 3,000: 51 / 4% entries, against 2,400 to sort): the probe walks at
    /// most as far as the sort costs and finds less than a page. The same count, recent, is
    /// walked.
    #[test]
    fn a_filter_of_old_executions_is_sorted_not_walked() {
        let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
        for i in 0..3000 {
            let (definition, status) = match i {
                0..120 => ("old", Status::Failed),
                2880.. => ("new", Status::Cancelled),
                _ => ("d", Status::Running),
            };
            let mut exe = Execution::new(format!("e{i:05}"), definition);
            exe.status = status;
            exe.updated_at = Some(2e9 + i as f64);
            store.save(&mut exe).unwrap();
        }
        let q = || ListQuery::new().order(ListOrder::UpdatedDesc).limit(50);
        let walk = "execstore_executions_listing_updated";
        let cases = [
            (
                "old definition",
                q().definition("old"),
                "execstore_executions_by_definition",
            ),
            (
                "old status",
                q().status([Status::Failed]),
                "execstore_executions_by_status",
            ),
            ("new definition", q().definition("new"), walk),
            ("new status", q().status([Status::Cancelled]), walk),
        ];
        for (what, query, index) in cases {
            let p = plan(&store, &query);
            assert!(p.iter().any(|s| s.contains(index)), "{what}: {p:?}");
            if index != walk {
                assert!(!p.iter().any(|s| s.contains(walk)), "{what}: {p:?}");
            }
            let ids = page_ids(&store, &query);
            assert_eq!(ids, reference(&store, &query, 50), "{what}");
            assert_eq!(ids.len(), 50, "{what}");
        }
        // The probe reads the index alone, from its end.
        let query = q().definition("old").status([Status::Failed]).roots_only(true);
        let probe = store.sql.walk_probe(&query, Some("FAILED"), 2_400, 51);
        let p = super::super::tests::filtered_plan(&store, probe);
        let walks: Vec<&String> = p.iter().filter(|s| s.contains("executions")).collect();
        assert_eq!(
            walks,
            [&format!("SCAN executions USING COVERING INDEX {walk}")],
            "{p:?}"
        );
    }

    /// A read-only open of a file no writer of this build migrated (migration 9's index
    /// absent; migrations 2's and 6's there) reads its listing right, and weighs a walk
    /// step as a sort's, since those indexes hold no filter: a definition of 200 of 3,000,
    /// spread over time, is sorted there (200 rows against 765), where the migrated file
    /// walks its index (probed: 765 entries against 4,000).
    #[test]
    fn a_file_before_migration_9_read_only_sorts_what_a_walk_would_read_row_by_row() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v8.db");
        {
            let store = SqliteStore::open(&path, SqliteOptions::new()).unwrap();
            for i in 0..3000 {
                let definition = if i % 15 == 0 { "spread" } else { "d" };
                let mut exe = Execution::new(format!("e{i:05}"), definition);
                exe.status = Status::Running;
                exe.updated_at = Some(2e9 + i as f64);
                store.save(&mut exe).unwrap();
            }
        }
        let q = ListQuery::new()
            .order(ListOrder::UpdatedDesc)
            .limit(50)
            .definition("spread");
        let migrated = SqliteStore::open(&path, SqliteOptions::new().read_only(true)).unwrap();
        let walk = "execstore_executions_listing_updated";
        let p = plan(&migrated, &q);
        assert!(p.iter().any(|s| s.contains(walk)), "{p:?}");
        let expected = reference(&migrated, &q, 50);
        drop(migrated);
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            super::super::tests::rewind(&conn, 8);
        }
        let old = SqliteStore::open(&path, SqliteOptions::new().read_only(true)).unwrap();
        let p = plan(&old, &q);
        // The definition's own index (migration 1's, or 6's, which SQLite may pick for the
        // same condition), not a walk of migration 2's `(updated_at, id)` reading each row.
        assert!(
            p.iter()
                .any(|s| s.contains("INDEX execstore_executions_by_definition")),
            "{p:?}"
        );
        assert!(
            !p.iter().any(|s| s.contains("execstore_executions_by_updated")),
            "{p:?}"
        );
        let ids = page_ids(&old, &q);
        assert_eq!(ids, expected);
        assert_eq!(reference(&old, &q, 50), expected);
    }

    /// A `where` pinning a state few executions are at (`state = X`, alone or and-ed) is
    /// answered from the active path's index, its few rows sorted, even where `ANALYZE`'s
    /// statistics say a state holds many (the walk of the order's index would read every
    /// execution more recent than the state's); a state holding more than
    /// `WINDOW_SORT_CAP` executions, or one not pinned (inside an `or`), walks the order's
    /// index.
    #[test]
    fn a_rare_state_drives_the_listing() {
        let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
        for i in 0..3000 {
            let mut exe = Execution::new(format!("e{i:05}"), "d");
            // The rare state's 40 are the least recently updated.
            // Ten of them below it: in the state too.
            exe.active_path = Some(
                match i {
                    0..30 => "rare",
                    30..40 => "rare.deep",
                    _ => "busy",
                }
                .into(),
            );
            exe.updated_at = Some(2e9 + i as f64);
            exe.created_at = Some(2e9 + i as f64);
            store.save(&mut exe).unwrap();
        }
        store.read().unwrap().execute_batch("ANALYZE").unwrap();
        let w = |text: &str| {
            ListQuery::new()
                .order(ListOrder::UpdatedDesc)
                .limit(50)
                .filter(execstore::executions::parse_where(text, 0.0).unwrap())
        };
        let walk = "execstore_executions_listing_updated";
        let state = "execstore_executions_by_active_path";
        for text in ["state = rare", "state = rare and definition = d"] {
            let p = plan(&store, &w(text));
            assert!(p.iter().any(|s| s.contains(state)), "{text}: {p:?}");
            assert!(!p.iter().any(|s| s.contains(walk)), "{text}: {p:?}");
            let page = store.list_executions(&w(text)).unwrap();
            let ids: Vec<String> = page.items.iter().map(|s| s.id.clone()).collect();
            assert_eq!(ids, reference(&store, &w(text), 50), "{text}");
            assert_eq!(ids.len(), 40, "{text}");
            assert_eq!(ids[0], "e00039", "{text}: most recently updated first");
        }
        for text in ["state = busy", "state = rare or state = none"] {
            let p = plan(&store, &w(text));
            assert!(p.iter().any(|s| s.contains(walk)), "{text}: {p:?}");
            let page = store.list_executions(&w(text)).unwrap();
            let ids: Vec<String> = page.items.iter().map(|s| s.id.clone()).collect();
            assert_eq!(ids, reference(&store, &w(text), 50), "{text}");
        }
    }
}
