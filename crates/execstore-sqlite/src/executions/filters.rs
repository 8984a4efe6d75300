//! The listing with time windows or a search (`ListQuery::created` ... `search`): one
//! statement per query, built with its parameters.
//!
//! Each window is a range of an expression index of migration 2 (`created_at`, `updated_at`,
//! `finished_at`, each with the id), the search a range of the id index or of the
//! `active_path` index; SQLite picks among them and the status and definition indexes. The
//! page is chosen first over ids alone (`SELECT id ... ORDER BY +id LIMIT n`, which the
//! chosen index covers, so a sort of a wide window sorts ids, not documents), then only its
//! rows are read: keyset paging by id as in the plain listing.
//!
//! The `+` keeps the id index out of the choice (for the order and the cursor): without
//! statistics SQLite rates a one-sided window as a quarter of the table and would rather
//! walk every id in order, parsing each document, than sort the window's ids; a window
//! that is most of the table costs a sort of its ids instead, never a read of its documents.

use execstore::executions::{ListQuery, TimeRange};
use rusqlite::types::Value;

use super::prefix_upper_bound;
use super::sql::Stmts;

/// One filtered listing: its SQL and its parameters, in order.
pub(crate) struct Filtered {
    pub(crate) sql: String,
    pub(crate) args: Vec<Value>,
}

/// Builds the WHERE clause and its parameters in step, so they cannot drift apart.
#[derive(Default)]
pub(crate) struct Conditions {
    pub(crate) terms: Vec<String>,
    pub(crate) args: Vec<Value>,
}

/// The terms of a WHERE clause joined (` WHERE a AND b`), or nothing.
pub(crate) trait WhereClause {
    fn where_clause(&self) -> String;
}

impl WhereClause for Vec<String> {
    fn where_clause(&self) -> String {
        if self.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.join(" AND "))
        }
    }
}

impl Conditions {
    pub(crate) fn push(&mut self, term: impl Into<String>, args: impl IntoIterator<Item = Value>) {
        self.terms.push(term.into());
        self.args.extend(args);
    }

    /// The window `range` on the time `field`; `plus` writes it `+json_extract(...)`, which
    /// keeps its index out of SQLite's choice.
    pub(crate) fn window(&mut self, field: &str, range: &TimeRange, plus: bool) {
        let plus = if plus { "+" } else { "" };
        let expr = format!("{plus}json_extract(data,'$.{field}')");
        if let Some(after) = range.after {
            self.push(format!("{expr} >= ?"), [Value::Real(after)]);
        }
        if let Some(before) = range.before {
            self.push(format!("{expr} < ?"), [Value::Real(before)]);
        }
    }
}

/// The search's condition: an id range, or the active path equal to the text or inside
/// `text.` .. `text/` (`/` follows `.`), each a range of an index in BINARY order.
fn search_condition(search: &str, c: &mut Conditions) {
    let path = "json_extract(data,'$.active_path')";
    let text = || Value::Text(search.to_owned());
    let (ids, id_args) = match prefix_upper_bound(search) {
        Some(upper) => ("(id >= ? AND id < ?)", vec![text(), Value::Text(upper)]),
        None => ("id >= ?", vec![text()]),
    };
    let mut args = id_args;
    args.extend([
        text(),
        Value::Text(format!("{search}.")),
        Value::Text(format!("{search}/")),
    ]);
    c.push(
        format!("({ids} OR {path} = ? OR ({path} >= ? AND {path} < ?))"),
        args,
    );
}

impl Stmts {
    /// The listing of `query` resuming after `after` (the decoded cursor), fetching
    /// `fetch` rows (the page and one more, to know whether another page follows).
    pub(crate) fn list_filtered(
        &self,
        query: &ListQuery,
        after: Option<&str>,
        statuses: &[&str],
        fetch: i64,
    ) -> Filtered {
        let mut c = Conditions::default();
        if let Some(after) = after {
            c.push("+id > ?", [Value::Text(after.to_owned())]);
        }
        self.filter_conditions(query, statuses, &mut c);
        let mut args = c.args;
        args.push(Value::Integer(fetch));
        let filter = c.terms.where_clause();
        Filtered {
            sql: format!(
                "{select} WHERE id IN (SELECT id FROM {table}{filter} ORDER BY +id LIMIT ?) ORDER BY id",
                select = self.list_select,
                table = self.executions,
            ),
            args,
        }
    }

    /// Every filter of `query` but its cursor (the listing's, in any order, and the counts'):
    /// definition, statuses (`statuses`, the query's own), roots, the time windows, the search.
    pub(crate) fn filter_conditions(&self, query: &ListQuery, statuses: &[&str], c: &mut Conditions) {
        if let Some(definition) = &query.definition_id {
            c.push("definition_id = ?", [Value::Text(definition.clone())]);
        }
        if !statuses.is_empty() {
            let marks = vec!["?"; statuses.len()].join(", ");
            // With a time window, the status is checked on the rows the window's index (or
            // a more selective one) reads: migration 6's `(status, time, id)` indexes, made for
            // the time orders, would otherwise look best to SQLite without statistics (an
            // equality and a range) even beside a declared attribute's equality.
            let hint = if query.created.is_set() || query.updated.is_set() || query.finished.is_set() {
                "+"
            } else {
                ""
            };
            c.push(
                format!("{hint}json_extract(data,'$.status') IN ({marks})"),
                statuses.iter().map(|s| Value::Text((*s).to_owned())),
            );
        }
        if query.roots_only {
            c.push("json_extract(data,'$.parent_id') IS NULL", []);
        }
        self.other_conditions(query, c);
    }

    /// The filters of `query` other than its definition, statuses and roots-only: the time
    /// windows, the search and the `where` filter.
    pub(crate) fn other_conditions(&self, query: &ListQuery, c: &mut Conditions) {
        self.other_conditions_hinted(query, |_| false, c);
    }

    /// [`Stmts::other_conditions`], with the windows on the time fields for which `plus`
    /// answers true written with a `+` (their index kept out of SQLite's choice).
    pub(crate) fn other_conditions_hinted(
        &self,
        query: &ListQuery,
        plus: impl Fn(&str) -> bool,
        c: &mut Conditions,
    ) {
        for (field, range) in [
            ("created_at", &query.created),
            ("updated_at", &query.updated),
            ("finished_at", &query.finished),
        ] {
            c.window(field, range, plus(field));
        }
        if let Some(search) = &query.search {
            search_condition(search, c);
        }
        if let Some(filter) = &query.filter {
            let (term, args) = super::where_sql::condition(filter);
            c.push(term, args);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{SqliteOptions, SqliteStore};
    use execstore::{
        executions::{ListQuery, Status},
        Execution, ExecutionStore,
    };

    /// The query plan of `query`'s filtered listing, one line per step.
    fn plan(store: &SqliteStore, query: &ListQuery) -> Vec<String> {
        let after = query.validated_after().unwrap();
        let statuses: Vec<&str> = query.status.iter().flatten().map(|s| s.as_str()).collect();
        super::super::tests::filtered_plan(
            store,
            store.sql.list_filtered(query, after.as_deref(), &statuses, 51),
        )
    }

    /// Each time window and the search are answered from an index (a `SEARCH`, never a
    /// `SCAN` of the table or of a whole index), alone, with a cursor and with the other
    /// filters, on a store of 3,000 executions and no statistics (what a store has unless
    /// someone runs ANALYZE).
    #[test]
    fn time_windows_and_search_use_indexes() {
        for (prefix, pfx) in [(None, ""), (Some("harel"), "harel_")] {
            let mut options = SqliteOptions::new();
            options.prefix = prefix.map(str::to_owned);
            let store = SqliteStore::open_in_memory(options).unwrap();
            let executions = format!("{pfx}executions");
            for i in 0..3000 {
                let mut exe = Execution::new(format!("e{i:05}"), format!("d{}", i % 5));
                exe.status = Status::ALL[i % Status::ALL.len()];
                exe.active_path = Some(format!("root.s{}.t{}", i % 7, i % 3));
                exe.created_at = Some(1e9 + i as f64);
                exe.updated_at = Some(2e9 + i as f64);
                exe.finished_at = (i % 2 == 0).then_some(3e9 + i as f64);
                if i % 4 == 0 {
                    exe.parent_id = Some("e00000".into());
                }
                store.save(&mut exe).unwrap();
            }
            let idx = |name: &str| format!("{pfx}execstore_executions_by_{name}");
            let listing = |name: &str| format!("{pfx}execstore_executions_listing_{name}");
            let q = ListQuery::new;
            let cases: Vec<(&str, ListQuery, Vec<String>)> = vec![
                (
                    "created",
                    q().created_between(Some(1e9 + 10.0), Some(1e9 + 20.0)),
                    vec![listing("created")],
                ),
                (
                    "updated after",
                    q().updated_between(Some(2e9 + 2990.0), None),
                    vec![listing("updated")],
                ),
                (
                    "finished before",
                    q().finished_between(None, Some(3e9 + 10.0)),
                    vec![idx("finished")],
                ),
                (
                    "search",
                    q().search("root.s3"),
                    vec![format!("sqlite_autoindex_{executions}_1"), idx("active_path")],
                ),
                (
                    "created + cursor + roots",
                    q().created_between(Some(1e9), Some(1e9 + 100.0))
                        .roots_only(true)
                        .cursor(Some(execstore::executions::encode_cursor("e00050"))),
                    // The window's range of `created_at` (migration 9), roots checked on it.
                    vec![listing("created")],
                ),
                (
                    "updated + search",
                    q().updated_between(Some(2e9), Some(2e9 + 50.0))
                        .search("root.s1.t0"),
                    vec![],
                ),
                (
                    "finished + status + definition",
                    q().finished_between(Some(3e9), Some(3e9 + 100.0))
                        .status([Status::Done, Status::Failed])
                        .definition("d2"),
                    vec![],
                ),
            ];
            for (what, query, indexes) in cases {
                let p = plan(&store, &query);
                for index in &indexes {
                    assert!(
                        p.iter().any(|s| s.contains(index.as_str())),
                        "{what}: {index} not used: {p:?}"
                    );
                }
                for step in p.iter().filter(|s| s.contains(&executions)) {
                    assert!(step.starts_with("SEARCH"), "{what}: a full scan: {step} in {p:?}");
                }
                // And the listing itself answers (the plan is of the statement it runs).
                store.list_executions(&query).unwrap();
            }
        }
    }

    /// A `where` filter on a declared attribute is answered from its index (equality, a
    /// numeric range, a prefix, exists, and with the listing's other filters), on 3,000
    /// executions without statistics; the same filter before the declaration scans the table.
    #[test]
    fn declared_attributes_use_their_index() {
        let store = SqliteStore::open_in_memory(SqliteOptions::new()).unwrap();
        for i in 0..3000 {
            let mut exe = Execution::new(format!("e{i:05}"), format!("d{}", i % 5));
            exe.status = Status::ALL[i % Status::ALL.len()];
            exe.created_at = Some(1e9 + i as f64);
            let ctx = serde_json::json!({"customer": format!("c-{}", i % 300), "total": i, "odd key": i % 7});
            exe.context = ctx.as_object().unwrap().clone();
            store.save(&mut exe).unwrap();
        }
        let w = |text: &str| ListQuery::new().filter(execstore::executions::parse_where(text, 0.0).unwrap());
        let cases = [
            ("equals", w("context.customer = c-17"), "context.customer"),
            (
                "numeric range",
                w("context.total >= 100 and context.total < 120"),
                "context.total",
            ),
            ("prefix", w("context.customer ^= c-29"), "context.customer"),
            (
                "a quoted key",
                w("context.\"odd key\" = 3"),
                "context.\"odd key\"",
            ),
            (
                "with status and a window",
                w("context.customer = c-17")
                    .status([Status::Running])
                    .created_between(Some(1e9), None),
                "context.customer",
            ),
        ];
        let executions = "executions";
        for (what, query, path) in &cases {
            let p = plan(&store, query);
            assert!(p.iter().all(|s| !s.contains("execstore_attr_")), "{what}: {p:?}");
            // Alone (not narrowed by an indexed filter), the table is scanned.
            if !what.starts_with("with") {
                assert!(
                    p.iter().any(|s| s.starts_with(&format!("SCAN {executions}"))),
                    "{what}: undeclared, the table is scanned: {p:?}"
                );
            }
            assert_eq!(store.list_executions(query).unwrap().scan, vec![path.to_string()]);
        }
        for path in ["context.customer", "context.total", "context.\"odd key\""] {
            store.declare_attribute(path).unwrap();
        }
        for (what, query, _) in &cases {
            let p = plan(&store, query);
            assert!(
                p.iter().any(|s| s.contains("execstore_attr_")),
                "{what}: the attribute's index is not used: {p:?}"
            );
            for step in p.iter().filter(|s| s.contains(executions)) {
                assert!(step.starts_with("SEARCH"), "{what}: a full scan: {step} in {p:?}");
            }
            assert!(store.list_executions(query).unwrap().scan.is_empty(), "{what}");
        }
        assert_eq!(store.list_executions(&cases[0].1).unwrap().items.len(), 10);
        // Dropped, the index is gone and the filter scans again, with the same answer.
        let before = store.list_executions(&cases[1].1).unwrap().items;
        assert!(store.drop_attribute("context.total").unwrap());
        let p = plan(&store, &cases[1].1);
        assert!(p.iter().all(|s| !s.contains("execstore_attr_")), "{p:?}");
        assert_eq!(store.list_executions(&cases[1].1).unwrap().items, before);
    }
}
