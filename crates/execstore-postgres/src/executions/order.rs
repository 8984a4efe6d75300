//! The listing in a time order ([`ListOrder::UpdatedDesc`], [`ListOrder::CreatedDesc`]) and
//! the counts by status of a listing's filter, over the listing keys (`{pfx}execstore_keys`)
//! and the filter of `filters.rs`.
//!
//! A time order is a backward walk of the keys' `(updated_at, id)` or `(created_at, id)`
//! index in two arms: the keys with that time after the cursor's key (a row-value range of
//! the index), then those without one (`IS NULL`, a range of the same index by id,
//! descending), each at most a page of ids; the outer query parses only those rows'
//! documents and orders them with NULLs last, as every backend does. A cursor inside the
//! NULL tail skips the first arm.
//!
//! A `where` filter that few executions match (at most [`FEW_MATCHES`], read by a probe that
//! stops past it, through the declared attributes' indexes) turns the walk off: the arms take
//! those ids (`k.id = ANY`, lookups of the keys' primary key) and order them by the time plus
//! zero, which no index gives, so they are sorted. A probe of declared attributes evaluates
//! the whole filter, so the probe and the page read one snapshot (a read-only `REPEATABLE
//! READ` transaction) and the page does not test the filter again (parsing each match's
//! document: 41 ms for 1,000 at 1,000,000 executions); a pinned state's ids are a superset,
//! filtered by the page. A
//! walk would test execution after execution until a page of rare matches turned up, all of
//! them when they are old: the planner cannot know where in the time order the matches lie,
//! and at 300,000 executions it walked for 5 s to find 300. (Left to itself with the filter
//! alone, it hashed the matches against every key.)
//!
//! [`ListOrder::UpdatedDesc`]: execstore::executions::ListOrder::UpdatedDesc
//! [`ListOrder::CreatedDesc`]: execstore::executions::ListOrder::CreatedDesc

use execstore::executions::{ExecutionPage, ExecutionSummary, ListOrder, ListQuery, Status, TimeKey};
use execstore::Result;
use postgres::types::ToSql;

use super::filters::{where_clause, Arg, Conditions, Filtered};
use super::rows::{col, corrupt, limit_param};
use super::sql::Stmts;
use super::PgStore;

/// At most this many executions matching a `where` filter make the listing sort its matches
/// instead of walking a time index (see the module's documentation).
pub(crate) const FEW_MATCHES: i64 = 2000;

/// Runs one statement of a listing (on a pooled connection, or in a transaction).
type Run<'a> = dyn FnMut(&str, &[&(dyn ToSql + Sync)]) -> Result<Vec<postgres::Row>> + 'a;

/// A probe's matches ([`PgStore::probe`]).
struct Few {
    ids: Vec<String>,
    /// Exactly the filter's matches (else a superset the page filters).
    exact: bool,
}

/// The keys' column of a time order's key.
fn time_column(order: ListOrder) -> &'static str {
    match order {
        ListOrder::CreatedDesc => "created_at",
        _ => "updated_at",
    }
}

impl Stmts {
    /// The listing of `query` in its time order (its time descending), resuming after
    /// `after` (the decoded cursor), fetching `fetch` rows.
    pub(crate) fn list_by_time(
        &self,
        query: &ListQuery,
        after: Option<&TimeKey>,
        statuses: &[&str],
        fetch: i64,
        few: Option<&[String]>,
    ) -> Filtered {
        let time_col = time_column(query.order);
        // With few matches, a key no index gives: the matches are read and sorted.
        let order_key = if few.is_some() {
            format!("k.{time_col} + 0")
        } else {
            format!("k.{time_col}")
        };
        let mut c = Conditions::default();
        let limit = c.param(Arg::Int(fetch));
        let mut arms = Vec::new();
        let ids = few.map(|ids| c.param(Arg::Texts(ids.to_vec())));
        let in_null_tail = after.is_some_and(|key| key.time.is_none());
        if !in_null_tail {
            let from = self.filter_conditions(query, statuses, &mut c);
            c.terms.extend(ids.iter().map(|p| format!("k.id = ANY({p})")));
            match after {
                Some(TimeKey { time: Some(time), id }) => {
                    let time = c.param(Arg::Real(*time));
                    let id = c.param(Arg::Text(id.clone()));
                    c.terms.push(format!("(k.{time_col}, k.id) < ({time}, {id})"));
                }
                _ => c.terms.push(format!("k.{time_col} IS NOT NULL")),
            }
            let terms = std::mem::take(&mut c.terms);
            arms.push(format!(
                "(SELECT k.id FROM {from}{} ORDER BY {order_key} DESC, k.id DESC LIMIT {limit})",
                where_clause(&terms)
            ));
        }
        let from = self.filter_conditions(query, statuses, &mut c);
        c.terms.extend(ids.iter().map(|p| format!("k.id = ANY({p})")));
        c.terms.push(format!("k.{time_col} IS NULL"));
        if let Some(TimeKey { id, .. }) = after.filter(|_| in_null_tail) {
            let id = c.param(Arg::Text(id.clone()));
            c.terms.push(format!("k.id < {id}"));
        }
        arms.push(format!(
            "(SELECT k.id FROM {from}{} ORDER BY {order_key} DESC, k.id DESC LIMIT {limit})",
            where_clause(&c.terms)
        ));
        Filtered {
            sql: format!(
                "{select} WHERE (e.id COLLATE \"C\") IN ({arms}) \
                 ORDER BY doc.{time_col} DESC NULLS LAST, (e.id COLLATE \"C\") DESC LIMIT {limit}",
                select = self.list_select,
                arms = arms.join(" UNION ALL "),
            ),
            args: c.args,
        }
    }

    /// The counts by status of the rows `filter` (a [`ListQuery::count_filter`] with only a
    /// definition and roots-only) selects, from the kept counts and their deltas.
    pub(crate) fn maintained_counts(&self, filter: &ListQuery) -> Filtered {
        let mut terms = Vec::new();
        let mut args = Vec::new();
        if let Some(definition_id) = &filter.definition_id {
            args.push(Arg::Text(definition_id.clone()));
            terms.push(format!("definition_id = ${}", args.len()));
        }
        if filter.roots_only {
            terms.push("root".to_owned());
        }
        let cond = where_clause(&terms);
        Filtered {
            sql: format!(
                "SELECT NULLIF(status, ''), SUM(n)::int8 FROM (SELECT status, n FROM {counts}{cond} \
                 UNION ALL SELECT status, n FROM {deltas}{cond}) c GROUP BY 1",
                counts = self.counts_table,
                deltas = self.count_deltas_table,
            ),
            args,
        }
    }

    /// The counts by status of the rows `filter` selects (a [`ListQuery::count_filter`]).
    pub(crate) fn count_by_status(&self, filter: &ListQuery) -> Filtered {
        let mut c = Conditions::default();
        let from = self.filter_conditions(filter, &[], &mut c);
        Filtered {
            sql: format!(
                "SELECT k.status, COUNT(*)::int8 FROM {from}{} GROUP BY 1",
                where_clause(&c.terms)
            ),
            args: c.args,
        }
    }
}

impl PgStore {
    /// The context paths of `query`'s `where` that are not declared as search attributes, so
    /// are scanned (read once a listing: the declared attributes are a query).
    pub(crate) fn scanned_paths(&self, query: &ListQuery) -> Result<Vec<String>> {
        match &query.filter {
            Some(f) if f.paths().iter().any(|p| p.root == "context") => Ok(
                execstore::executions::search::scanned_paths(f, &self.list_attributes()?),
            ),
            _ => Ok(Vec::new()),
        }
    }

    /// The ids of the executions `query`'s `where` filter may match, when they are at most
    /// [`FEW_MATCHES`] (see [`PgStore::probe`]). `None` when more match, or without such a
    /// filter. (The listing probes inside its snapshot; this is the tests' view.)
    #[cfg(test)]
    pub(crate) fn few_matches(&self, query: &ListQuery, scanned: &[String]) -> Result<Option<Vec<String>>> {
        let mut conn = self.conn()?;
        Ok(self
            .probe(query, scanned, &mut |sql, args| conn.query(sql, args))?
            .map(|few| few.ids))
    }

    /// Whether `query`'s `where` is probed through the declared attributes' indexes: it
    /// reads the context, every context path it reads is declared (`scanned` is empty: with
    /// one scanned, the probe would read every document to say so), and it pins no state.
    fn probes_attributes(query: &ListQuery, scanned: &[String]) -> bool {
        query.filter.as_ref().is_some_and(|filter| {
            execstore::executions::search::pinned_state(filter).is_none()
                && filter.paths().iter().any(|p| p.root == "context")
                && scanned.is_empty()
        })
    }

    /// The executions `query`'s `where` filter may match, when they are at most
    /// [`FEW_MATCHES`], found through indexes (each statement run by `run`): those in the
    /// state it pins (`state = X`: at `X` or below it, read off the listing keys'
    /// active-path index, a superset the listing filters), else the matches of a filter on
    /// declared attributes ([`PgStore::probes_attributes`]: the whole filter evaluated, so
    /// exactly its matches in the probe's snapshot). `None` when more match, or without such
    /// a filter.
    fn probe(&self, query: &ListQuery, scanned: &[String], run: &mut Run<'_>) -> Result<Option<Few>> {
        let Some(filter) = &query.filter else {
            return Ok(None);
        };
        let (rows, exact) = if let Some(state) = execstore::executions::search::pinned_state(filter) {
            // In the state: at it, or below it (`X.` up to `X/`, `/` following `.`).
            let sql = format!(
                "SELECT k.id::text FROM {} k WHERE k.active_path = $1::text \
                 OR (k.active_path >= $2::text AND k.active_path < $3::text) LIMIT {}",
                self.sql.keys,
                FEW_MATCHES + 1
            );
            (
                run(&sql, &[&state, &format!("{state}."), &format!("{state}/")])?,
                false,
            )
        } else {
            if !Self::probes_attributes(query, scanned) {
                return Ok(None);
            }
            let mut args = Vec::new();
            let term = super::search::condition(filter, &mut args);
            // The keys joined when the filter reads them too (`state`, `status`, times).
            let from = if super::search::reads_keys(filter) {
                format!(
                    "{} e JOIN {} k ON {}",
                    self.sql.executions,
                    self.sql.keys,
                    super::sql::KEYS_JOIN
                )
            } else {
                format!("{} e", self.sql.executions)
            };
            let sql = format!(
                "SELECT (e.id COLLATE \"C\")::text FROM {from} WHERE {term} LIMIT {}",
                FEW_MATCHES + 1
            );
            let args: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a.as_sql()).collect();
            (run(&sql, &args)?, true)
        };
        if rows.len() > usize::try_from(FEW_MATCHES).unwrap_or(usize::MAX) {
            return Ok(None);
        }
        let ids = rows
            .iter()
            .map(|row| col(row, 0))
            .collect::<Result<Vec<String>>>()?;
        Ok(Some(Few { ids, exact }))
    }

    /// A page in a time order ([`ListOrder::UpdatedDesc`], [`ListOrder::CreatedDesc`]);
    /// `scanned`: see [`PgStore::scanned_paths`].
    pub(crate) fn list_page_by_time(&self, query: &ListQuery, scanned: &[String]) -> Result<ExecutionPage> {
        let after = query.validated_time_after()?;
        let mut statuses: Vec<&'static str> = Vec::new();
        if let Some(set) = &query.status {
            if set.is_empty() {
                return Ok(ExecutionPage::default());
            }
            statuses = set.iter().map(|s| s.as_str()).collect();
            statuses.sort_unstable();
            statuses.dedup();
        }
        let fetch = limit_param(query.limit.saturating_add(1));
        let page = |run: &mut Run<'_>| {
            let few = self.probe(query, scanned, run)?;
            // Exact matches: the page need not test the filter on each again.
            let unfiltered;
            let listed = match &few {
                Some(Few { exact: true, .. }) => {
                    let mut q = query.clone();
                    q.filter = None;
                    unfiltered = q;
                    &unfiltered
                }
                _ => query,
            };
            let ids = few.as_ref().map(|few| few.ids.as_slice());
            let ordered = self
                .sql
                .list_by_time(listed, after.as_ref(), &statuses, fetch, ids);
            let args: Vec<&(dyn ToSql + Sync)> = ordered.args.iter().map(|a| a.as_sql()).collect();
            run(&ordered.sql, &args)
        };
        // The probe's matches are exact in its snapshot: the page reads the same one.
        let rows = if Self::probes_attributes(query, scanned) {
            self.snapshot(|tx| page(&mut |sql, args| tx.query(sql, args)))?
        } else {
            let mut conn = self.conn()?;
            page(&mut |sql, args| conn.query(sql, args))?
        };
        Ok(ExecutionPage::from_overfetch_in(
            query.order,
            summaries(&rows)?,
            query.limit,
        ))
    }

    /// The counts by status of what `query`'s listing selects: from the kept counts
    /// (migration 8) when the filter has no time window, search nor `where`, after folding
    /// the deltas in where this store may write (a fold that fails, a folder busy elsewhere,
    /// only leaves more deltas to sum).
    pub(crate) fn count_filtered(&self, query: &ListQuery) -> Result<Vec<(Status, u64)>> {
        let filter = query.count_filter()?;
        let kept = self.counted && !filter.has_time_or_search();
        let counted = if kept {
            self.sql.maintained_counts(&filter)
        } else {
            self.sql.count_by_status(&filter)
        };
        let args: Vec<&(dyn ToSql + Sync)> = counted.args.iter().map(|a| a.as_sql()).collect();
        let rows = if kept && !self.read_only {
            let mut conn = self.conn()?;
            let _ = conn.execute(&self.sql.fold_counts, &[]);
            conn.query(&counted.sql, &args)?
        } else {
            self.query(&counted.sql, &args)?
        };
        let mut counts = [0u64; Status::ALL.len()];
        for row in &rows {
            // A row without a status reads as PENDING, as in the listing.
            let status = match col::<Option<String>>(row, 0)? {
                Some(s) => s
                    .parse::<Status>()
                    .map_err(|e| corrupt("an execution's status".to_owned(), e))?,
                None => Status::Pending,
            };
            let n: i64 = col(row, 1)?;
            if let Some(slot) = Status::ALL.iter().position(|s| *s == status) {
                counts[slot] += u64::try_from(n).unwrap_or(0);
            }
        }
        Ok(Status::ALL.into_iter().zip(counts).collect())
    }
}

/// The summaries of a listing's rows (the columns of `LIST_COLUMNS`).
pub(crate) fn summaries(rows: &[postgres::Row]) -> Result<Vec<ExecutionSummary>> {
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        let id: String = col(row, 0)?;
        let status = match col::<Option<String>>(row, 3)? {
            Some(s) => s
                .parse::<Status>()
                .map_err(|e| corrupt(format!("execution {id} status"), e))?,
            None => Status::Pending,
        };
        items.push(ExecutionSummary {
            definition_id: col(row, 1)?,
            version: col(row, 2)?,
            status,
            outcome: col(row, 4)?,
            active_path: col(row, 5)?,
            parent_id: col(row, 6)?,
            finished_at: col(row, 7)?,
            updated_at: col(row, 8)?,
            created_at: col(row, 9)?,
            id,
        });
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{analyze, explain, fill, on_own_prefix};
    use super::super::PgStore;
    use execstore::{
        executions::{encode_created_cursor, encode_updated_cursor, ListOrder, ListQuery, Status},
        ExecutionStore,
    };

    /// The listing by `updated_at` walks the keys' `(updated_at, id)` index backwards (first
    /// page, after a cursor, in the NULL tail, with a window), with the planner's own choices
    /// on 6,000 executions with statistics: no sequential scan, the executions with a time
    /// read by a backward index walk (not sorted), and the page in that order. (The NULL tail
    /// is the planner's to read as it likes: a range of the same index, sorted or not.)
    #[test]
    fn updated_order_walks_the_index() {
        walks_the_index(ListOrder::UpdatedDesc, "updated");
    }

    /// The listing by `created_at` walks the keys' `(created_at, id)` index, as the
    /// `updated` order its own.
    #[test]
    fn created_order_walks_the_index() {
        walks_the_index(ListOrder::CreatedDesc, "created");
    }

    fn walks_the_index(order: ListOrder, time: &str) {
        on_own_prefix("order", &format!("lo{time}"), |url, prefix, store| {
            check_plans(url, prefix, store, order, time)
        });
    }

    fn check_plans(url: &str, prefix: &str, store: &PgStore, order: ListOrder, time: &str) {
        let mut client = fill(url, prefix, store, |exe, n| {
            exe.status = Status::ALL[n % Status::ALL.len()];
            exe.updated_at = (n % 100 != 0).then(|| 2e9 + ((n * 7919) % 6000) as f64);
            exe.created_at = (n % 100 != 0).then(|| 2e9 + ((n * 4999) % 6000) as f64);
        });
        let index = format!("{prefix}_execstore_k_{time}");
        let cursor = |at, id: &str| match order {
            ListOrder::CreatedDesc => encode_created_cursor(at, id),
            _ => encode_updated_cursor(at, id),
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
                q().cursor(Some(cursor(Some(2e9 + 3000.0), "e03000"))),
            ),
            ("in the tail", q().cursor(Some(cursor(None, "e03000")))),
            ("with a window", window(q())),
        ];
        for (what, query) in cases {
            let after = query.validated_time_after().unwrap();
            let plan = explain(
                &mut client,
                &store.sql.list_by_time(&query, after.as_ref(), &[], 51, None),
            );
            assert!(plan.contains(&index), "{what}: {index} not used:\n{plan}");
            assert!(!plan.contains("Seq Scan"), "{what}: a sequential scan:\n{plan}");
            if what != "in the tail" {
                // The executions with a time: a walk of the index from the end, not a sort.
                let walk = format!("Scan Backward using {index}");
                assert!(
                    plan.contains(&walk),
                    "{what}: no backward walk of {index}:\n{plan}"
                );
            }
            let page = store.list_executions(&query).unwrap();
            // Every hundredth has no time: 30 of them below e03000.
            let expected = if what == "in the tail" { 30 } else { 50 };
            assert_eq!(page.items.len(), expected, "{what}");
            assert!(page.items.windows(2).all(|w| order.compare(&w[0], &w[1]).is_lt()));
        }
    }

    /// A `where` on a declared attribute that few executions match (here 10 of 6,000, the
    /// oldest) is answered by reading its matches from the attribute's index and sorting them,
    /// not by walking the time index backwards past every newer execution; one that many
    /// match (every execution) keeps the walk. Both give the page of a scan.
    #[test]
    fn few_matches_of_an_attribute_are_sorted_not_walked() {
        on_own_prefix("order", "lofew", |url, prefix, store| {
            let mut client = fill(url, prefix, store, |exe, n| {
                exe.updated_at = Some(2e9 + n as f64);
                let customer = if n < 10 {
                    "rare".to_owned()
                } else {
                    format!("c-{}", n % 50)
                };
                exe.context.insert("customer".into(), customer.into());
                exe.context.insert("kind".into(), "every".into());
            });
            store.declare_attribute("context.customer").unwrap();
            store.declare_attribute("context.kind").unwrap();
            analyze(&mut client, prefix);
            let (rare, every) = (w("context.customer = rare"), w("context.kind = every"));
            let few = |q: &ListQuery| store.few_matches(q, &store.scanned_paths(q).unwrap()).unwrap();
            let mut matched = few(&rare).expect("10 match");
            matched.sort();
            let want: Vec<String> = (0..10).map(|n| format!("e{n:05}")).collect();
            assert_eq!(matched, want);
            assert!(few(&every).is_none(), "6,000 match");
            assert!(few(&ListQuery::new()).is_none(), "no filter");
            // An undeclared path is not probed: the probe would read every document.
            assert!(few(&w("context.other = x")).is_none());
            let walk = format!("Scan Backward using {prefix}_execstore_k_updated");
            let plan = explain(
                &mut client,
                &store.sql.list_by_time(&rare, None, &[], 6, Some(&matched)),
            );
            let lookups = format!("using {prefix}_execstore_keys_pkey");
            assert!(plan.contains(&lookups), "the matches' keys looked up:\n{plan}");
            assert!(!plan.contains(&walk), "no walk of the time index:\n{plan}");
            assert!(!plan.contains("Seq Scan"), "no sequential scan:\n{plan}");
            let plan = explain(&mut client, &store.sql.list_by_time(&every, None, &[], 6, None));
            assert!(plan.contains(&walk), "many matches: the walk:\n{plan}");
            // The pages: the newest of the matches, by updated_at descending.
            let ids = |q: &ListQuery| page_ids(store, q);
            assert_eq!(ids(&rare), ["e00009", "e00008", "e00007", "e00006", "e00005"]);
            let cursor = store.list_executions(&rare).unwrap().next_cursor;
            assert_eq!(
                ids(&rare.clone().cursor(cursor)),
                ["e00004", "e00003", "e00002", "e00001", "e00000"]
            );
            assert_eq!(ids(&every), ["e05999", "e05998", "e05997", "e05996", "e05995"]);
        });
    }

    /// The first 5 in the updated order that the `where` text selects.
    fn w(text: &str) -> ListQuery {
        ListQuery::new()
            .order(ListOrder::UpdatedDesc)
            .limit(5)
            .filter(execstore::executions::parse_where(text, 0.0).unwrap())
    }

    /// The ids of `q`'s first page.
    fn page_ids(store: &PgStore, q: &ListQuery) -> Vec<String> {
        store
            .list_executions(q)
            .unwrap()
            .items
            .into_iter()
            .map(|e| e.id)
            .collect()
    }

    /// A `where` pinning a state few executions are at is answered from their ids (read off
    /// the keys' active-path index), not by a walk of the time index; a crowded state walks;
    /// a filter on declared attributes that also reads the keys (`status`) is probed with
    /// the keys joined.
    #[test]
    fn a_rare_state_is_sorted_not_walked() {
        on_own_prefix("order", "lostate", |url, prefix, store| {
            let mut client = fill(url, prefix, store, |exe, n| {
                exe.updated_at = Some(2e9 + n as f64);
                // One of them below the state: in it too.
                exe.active_path = Some(
                    match (n % 600, n) {
                        (7, 5407) => "rare.deep",
                        (7, _) => "rare",
                        _ => "busy",
                    }
                    .into(),
                );
                exe.status = Status::Running;
                exe.context
                    .insert("customer".into(), format!("c-{}", n % 50).into());
            });
            store.declare_attribute("context.customer").unwrap();
            analyze(&mut client, prefix);
            let few = |q: &ListQuery| store.few_matches(q, &store.scanned_paths(q).unwrap()).unwrap();
            let ids = |q: &ListQuery| page_ids(store, q);
            let rare = w("state = rare");
            let mut matched = few(&rare).expect("10 at the state");
            matched.sort();
            let want: Vec<String> = (0..10).map(|i| format!("e{:05}", i * 600 + 7)).collect();
            assert_eq!(matched, want);
            let walk = format!("Scan Backward using {prefix}_execstore_k_updated");
            let plan = explain(
                &mut client,
                &store.sql.list_by_time(&rare, None, &[], 6, Some(&matched)),
            );
            assert!(!plan.contains(&walk), "no walk of the time index:\n{plan}");
            assert_eq!(ids(&rare), ["e05407", "e04807", "e04207", "e03607", "e03007"]);
            // And-ed with another term, the state's ids are a superset the listing filters.
            let both = w("state = rare and context.customer = c-7");
            assert!(few(&both).is_some());
            assert_eq!(ids(&both), ["e05407", "e04807", "e04207", "e03607", "e03007"]);
            let none = w("state = rare and context.customer = c-8");
            assert!(ids(&none).is_empty());
            assert!(few(&w("state = busy")).is_none(), "5,990 at the state");
            assert_eq!(
                ids(&w("state = busy")),
                ["e05999", "e05998", "e05997", "e05996", "e05995"]
            );
            // Declared attributes and a key in one filter: probed with the keys joined.
            let mixed = w("context.customer = c-7 and status = RUNNING");
            assert_eq!(few(&mixed).map(|m| m.len()), Some(120));
            assert_eq!(ids(&mixed), ["e05957", "e05907", "e05857", "e05807", "e05757"]);
        });
    }
}
