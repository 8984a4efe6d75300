//! The listing with time windows or a search (`ListQuery::created` ... `search`): one
//! statement per query, built with its parameters.
//!
//! Every filter is a condition on the listing keys (`{pfx}execstore_keys`, migration 6):
//! each window a range of its index (`created_at`, `updated_at`, `finished_at`), the search
//! a range of the keys' `"C"`-collated primary key or of the `active_path` index (a
//! `BitmapOr` of the two); the planner picks among them and the status index (a definition
//! joins the executions' own index). The page is chosen first over the keys alone, then only
//! its rows' documents are parsed for the summary: keyset paging by id as in the plain
//! listing.

use execstore::executions::{ListQuery, TimeRange};
use postgres::types::ToSql;

use super::rows::prefix_upper_bound;
use super::sql::{Stmts, KEYS_JOIN};

/// One parameter of a filtered listing.
#[derive(Debug)]
pub(crate) enum Arg {
    Text(String),
    Real(f64),
    Int(i64),
    Texts(Vec<String>),
}

impl Arg {
    pub(crate) fn as_sql(&self) -> &(dyn ToSql + Sync) {
        match self {
            Arg::Text(s) => s,
            Arg::Real(f) => f,
            Arg::Int(i) => i,
            Arg::Texts(t) => t,
        }
    }
}

/// One filtered listing: its SQL and its parameters, in order.
pub(crate) struct Filtered {
    pub(crate) sql: String,
    pub(crate) args: Vec<Arg>,
}

/// Builds the WHERE clause and its parameters in step (`$n` numbered as pushed).
#[derive(Default)]
pub(crate) struct Conditions {
    pub(crate) terms: Vec<String>,
    pub(crate) args: Vec<Arg>,
}

impl Conditions {
    /// A placeholder for `arg` (`$n`, with its type cast).
    pub(crate) fn param(&mut self, arg: Arg) -> String {
        let cast = match arg {
            Arg::Text(_) => "text",
            Arg::Real(_) => "float8",
            Arg::Int(_) => "int8",
            Arg::Texts(_) => "text[]",
        };
        self.args.push(arg);
        format!("${}::{cast}", self.args.len())
    }

    fn window(&mut self, column: &str, range: &TimeRange) {
        let expr = format!("k.{column}");
        if let Some(after) = range.after {
            let p = self.param(Arg::Real(after));
            self.terms.push(format!("{expr} >= {p}"));
        }
        if let Some(before) = range.before {
            let p = self.param(Arg::Real(before));
            self.terms.push(format!("{expr} < {p}"));
        }
    }

    /// The search: an id range, or the active path equal to the text or inside `text.` ..
    /// `text/` (`/` follows `.`), each in the `"C"` collation's byte order.
    fn search(&mut self, search: &str) {
        let id = "k.id";
        let path = "k.active_path";
        let from = self.param(Arg::Text(search.to_owned()));
        let ids = match prefix_upper_bound(search) {
            Some(upper) => {
                let to = self.param(Arg::Text(upper));
                format!("({id} >= {from} AND {id} < {to})")
            }
            None => format!("{id} >= {from}"),
        };
        let exact = self.param(Arg::Text(search.to_owned()));
        let below_from = self.param(Arg::Text(format!("{search}.")));
        let below_to = self.param(Arg::Text(format!("{search}/")));
        self.terms.push(format!(
            "({ids} OR {path} = {exact} OR ({path} >= {below_from} AND {path} < {below_to}))"
        ));
    }
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
            let p = c.param(Arg::Text(after.to_owned()));
            c.terms.push(format!("k.id > {p}"));
        }
        let from = self.filter_conditions(query, statuses, &mut c);
        let limit = c.param(Arg::Int(fetch));
        let filter = where_clause(&c.terms);
        Filtered {
            sql: format!(
                "{select} WHERE (e.id COLLATE \"C\") IN (SELECT k.id FROM {from}{filter} ORDER BY k.id LIMIT {limit}) \
                 ORDER BY (e.id COLLATE \"C\")",
                select = self.list_select,
            ),
            args: c.args,
        }
    }

    /// Every filter of `query` but its cursor (the listing's, in any order, and the counts'):
    /// definition, statuses (`statuses`, the query's own), roots, the time windows, the
    /// search, as conditions on the keys `k`. Returns the FROM clause they need.
    pub(crate) fn filter_conditions(
        &self,
        query: &ListQuery,
        statuses: &[&str],
        c: &mut Conditions,
    ) -> String {
        let mut from = format!("{} k", self.keys);
        if let Some(definition) = &query.definition_id {
            let p = c.param(Arg::Text(definition.clone()));
            from.push_str(&format!(" JOIN {} e ON {KEYS_JOIN}", self.executions));
            c.terms.push(format!("e.definition_id = {p}"));
        }
        if !statuses.is_empty() {
            let marks: Vec<String> = statuses
                .iter()
                .map(|s| c.param(Arg::Text((*s).to_owned())))
                .collect();
            c.terms.push(format!("k.status IN ({})", marks.join(", ")));
        }
        if query.roots_only {
            c.terms.push("k.root".to_owned());
        }
        c.window("created_at", &query.created);
        c.window("updated_at", &query.updated);
        c.window("finished_at", &query.finished);
        if let Some(search) = &query.search {
            c.search(search);
        }
        if let Some(filter) = &query.filter {
            if query.definition_id.is_none() {
                from.push_str(&format!(" JOIN {} e ON {KEYS_JOIN}", self.executions));
            }
            let term = super::search::condition(filter, &mut c.args);
            c.terms.push(term);
        }
        from
    }
}

/// The terms of a WHERE clause joined (` WHERE a AND b`), or nothing.
pub(crate) fn where_clause(terms: &[String]) -> String {
    if terms.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", terms.join(" AND "))
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{analyze, explain, fill, on_own_prefix};
    use super::super::PgStore;
    use execstore::{
        executions::{ListQuery, Status},
        ExecutionStore,
    };

    /// Each time window and the search are answered from the migration's indexes, with the
    /// planner's own choices (no setting changed, statistics gathered) on 6,000 executions:
    /// the plan of the statement the store runs names the index and has no sequential scan.
    #[test]
    fn time_windows_and_search_use_indexes() {
        on_own_prefix("filters", "lfplan", check_plans);
    }

    fn check_plans(url: &str, prefix: &str, store: &PgStore) {
        let mut client = fill(url, prefix, store, |exe, n| {
            exe.status = Status::ALL[n % Status::ALL.len()];
            exe.active_path = Some(format!("root.s{}.t{}", n % 97, n % 3));
            exe.created_at = Some(1e9 + n as f64);
            exe.updated_at = Some(2e9 + n as f64);
            exe.finished_at = (n % 2 == 0).then_some(3e9 + n as f64);
        });
        let idx = |name: &str| format!("{prefix}_execstore_k_{name}");
        let q = ListQuery::new;
        let cases: Vec<(&str, ListQuery, Vec<String>)> = vec![
            (
                "created",
                q().created_between(Some(1e9 + 10.0), Some(1e9 + 20.0)),
                vec![idx("created")],
            ),
            (
                "updated after",
                q().updated_between(Some(2e9 + 5990.0), None),
                vec![idx("updated")],
            ),
            (
                "finished before",
                q().finished_between(None, Some(3e9 + 10.0)),
                vec![idx("finished")],
            ),
            (
                "search",
                q().search("root.s3"),
                vec![format!("{prefix}_execstore_keys_pkey"), idx("active_path")],
            ),
            (
                "created + cursor + roots",
                q().created_between(Some(1e9 + 100.0), Some(1e9 + 130.0))
                    .roots_only(true)
                    .cursor(Some(execstore::executions::encode_cursor("e00110"))),
                vec![idx("created")],
            ),
            (
                "updated + search",
                q().updated_between(Some(2e9), Some(2e9 + 50.0))
                    .search("root.s1.t0"),
                vec![],
            ),
            (
                "finished + statuses + definition",
                q().finished_between(Some(3e9), Some(3e9 + 40.0))
                    .status([Status::Done, Status::Failed])
                    .definition("d2"),
                vec![],
            ),
        ];
        for (what, query, indexes) in cases {
            let after = query.validated_after().unwrap();
            let statuses: Vec<&str> = query.status.iter().flatten().map(|s| s.as_str()).collect();
            let f = store.sql.list_filtered(&query, after.as_deref(), &statuses, 51);
            let plan = explain(&mut client, &f);
            for index in &indexes {
                assert!(plan.contains(index.as_str()), "{what}: {index} not used:\n{plan}");
            }
            assert!(!plan.contains("Seq Scan"), "{what}: a sequential scan:\n{plan}");
            assert!(plan.contains("Index"), "{what}: no index:\n{plan}");
            // And the listing itself answers, with what the query asked for.
            let page = store.list_executions(&query.clone().limit(50)).unwrap();
            assert!(page
                .items
                .iter()
                .all(|s| query.status.as_ref().is_none_or(|st| st.contains(&s.status))));
        }
    }

    /// A `where` filter on a declared attribute is answered from its indexes (equality, a
    /// numeric range, a prefix, with a status), statistics gathered, on 6,000 executions;
    /// undeclared, the same filter reads every document (a sequential scan).
    #[test]
    fn declared_attributes_use_their_indexes() {
        on_own_prefix("filters", "attrplan", check_attribute_plans);
    }

    fn check_attribute_plans(url: &str, prefix: &str, store: &PgStore) {
        let mut client = fill(url, prefix, store, |exe, n| {
            exe.status = Status::ALL[n % Status::ALL.len()];
            exe.context
                .insert("customer".into(), format!("c-{}", n % 600).into());
            exe.context.insert("total".into(), n.into());
        });
        let w = |text: &str| ListQuery::new().filter(execstore::executions::parse_where(text, 0.0).unwrap());
        let cases = [
            ("equals", w("context.customer = c-17"), "_j"),
            (
                "numeric range",
                w("context.total >= 100 and context.total < 120"),
                "_j",
            ),
            ("prefix", w("context.customer ^= c-59"), "_t"),
            (
                "with a status",
                w("context.customer = c-17").status([Status::Running]),
                "_j",
            ),
        ];
        let plan_of = |client: &mut postgres::Client, query: &ListQuery| {
            let after = query.validated_after().unwrap();
            let statuses: Vec<&str> = query.status.iter().flatten().map(|s| s.as_str()).collect();
            explain(
                client,
                &store.sql.list_filtered(query, after.as_deref(), &statuses, 51),
            )
        };
        for (what, query, _) in &cases[..3] {
            let plan = plan_of(&mut client, query);
            assert!(
                plan.contains(&format!("Seq Scan on {prefix}_executions")),
                "{what}: undeclared:\n{plan}"
            );
        }
        let expected: Vec<_> = cases
            .iter()
            .map(|(_, q, _)| store.list_executions(q).unwrap().items)
            .collect();
        store.declare_attribute("context.customer").unwrap();
        store.declare_attribute("context.total").unwrap();
        analyze(&mut client, prefix);
        for ((what, query, suffix), items) in cases.iter().zip(expected) {
            let plan = plan_of(&mut client, query);
            assert!(
                plan.contains(&format!("{prefix}_execstore_attr_")) && plan.contains(suffix),
                "{what}: the attribute's index is not used:\n{plan}"
            );
            assert!(
                !plan.contains(&format!("Seq Scan on {prefix}_executions")),
                "{what}: a sequential scan:\n{plan}"
            );
            let page = store.list_executions(query).unwrap();
            assert_eq!(page.items, items, "{what}: the same answer from the index");
            assert!(page.scan.is_empty(), "{what}");
        }
    }
}
