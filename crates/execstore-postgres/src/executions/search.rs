//! Search attributes and the `where` filter on PostgreSQL.
//!
//! A declared context path gets two expression indexes over the executions' documents
//! (recorded in `{pfx}execstore_attributes`, migration 7), partial (`IS NOT NULL`: an
//! execution without the path costs its commits nothing):
//!
//! - `_j`: the value as `jsonb` (`data::jsonb #> '{context,...}'`): equality of any kind,
//!   numeric ranges (jsonb orders numbers as numbers) and `exists`;
//! - `_t`: the value as text in the `"C"` collation (`#>>`): prefixes and text ranges in
//!   byte order, whatever the database's collation.
//!
//! The filter is one condition following `execstore::kit::filter::eval` term for term, over
//! the listing keys `k` (id, status, times, active path) and the execution `e` (definition,
//! parent, context), spelled as the indexes are.
//!
//! Declaring builds each index with `CREATE INDEX CONCURRENTLY`, outside any transaction, so
//! commits to the table go on while it builds (a plain `CREATE INDEX` holds a lock that makes
//! every writer wait for the whole build: 70-80 s at 1,000,000 executions). Then the table is
//! analyzed, so the planner knows the indexed values, and only then is the attribute
//! recorded: a declaration that fails (or dies) midway leaves no row saying it is indexed. A
//! failed concurrent build leaves an `INVALID` index behind: the failing call drops it, and a
//! later declaration of the same path drops one it finds (from a process killed while
//! building) before building again, so declaring twice stays idempotent and never keeps an
//! index PostgreSQL does not use.

use execstore::executions::search::{attribute_path, MAX_ATTRIBUTES};
use execstore::executions::SearchAttribute;
use execstore::kit::filter::{Cmp, Expr, Filter, Op, Path, Term, Value as V};
use execstore::{Result, StoreError};

use super::filters::Arg;
use super::rows::prefix_upper_bound;
use super::schema::{parseable, Sql as _};
use super::PgStore;
use crate::db::Db as _;

/// The document as `jsonb` (harel's text may hold `\u0000` and lone surrogates, which `jsonb`
/// refuses: see [`parseable`]), over the column of `table` (`"e."` in the listing, `""` in
/// the index). Migration 10 rebuilt the indexes of earlier declarations with this spelling.
fn jsonb(table: &str) -> String {
    format!("({}::jsonb)", parseable(&format!("{table}data")))
}

/// The path as a text array literal: `'{"context","odd key"}'` (keys hold no quote,
/// backslash or apostrophe: checked by `execstore::executions::search`).
fn path_array(path: &Path) -> String {
    let keys: Vec<String> = std::iter::once(&path.root)
        .chain(&path.keys)
        .map(|k| format!("\"{k}\""))
        .collect();
    format!("'{{{}}}'", keys.join(","))
}

/// The value at a context path, as `jsonb` and as `"C"` text.
fn exprs(table: &str, path: &Path) -> (String, String) {
    let doc = jsonb(table);
    let array = path_array(path);
    (
        format!("({doc} #> {array})"),
        format!("(({doc} #>> {array}) COLLATE \"C\")"),
    )
}

fn index_name(pfx: &str, path: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in path.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{pfx}execstore_attr_{hash:016x}")
}

impl PgStore {
    fn attributes_table(&self) -> String {
        format!("{}execstore_attributes", self.sql.pfx)
    }

    /// The declared attributes, by path (none in a database without migration 7).
    pub(crate) fn list_attributes(&self) -> Result<Vec<SearchAttribute>> {
        let table = self.attributes_table();
        let present = self.query("SELECT to_regclass($1::text) IS NOT NULL", &[&table])?;
        if !present.first().is_some_and(|r| r.get::<_, bool>(0)) {
            return Ok(Vec::new());
        }
        let rows = self.query(
            &format!("SELECT path FROM {table} ORDER BY path COLLATE \"C\""),
            &[],
        )?;
        Ok(rows.iter().map(|r| SearchAttribute { path: r.get(0) }).collect())
    }

    /// Refuses a new path past [`MAX_ATTRIBUTES`]; whether `canonical` is recorded already.
    fn check_room(&self, canonical: &str) -> Result<bool> {
        let table = self.attributes_table();
        let known = !self
            .query(
                &format!("SELECT 1 FROM {table} WHERE path = $1::text"),
                &[&canonical],
            )?
            .is_empty();
        if !known {
            let count: i64 = self
                .query_one(&format!("SELECT COUNT(*) FROM {table}"), &[])?
                .get(0);
            if count >= MAX_ATTRIBUTES as i64 {
                return Err(StoreError::invalid(
                    "path",
                    format!("the store already keeps {MAX_ATTRIBUTES} search attributes"),
                ));
            }
        }
        Ok(known)
    }

    pub(crate) fn declare(&self, text: &str) -> Result<SearchAttribute> {
        let path = attribute_path(text)?;
        let canonical = path.to_string();
        let index = index_name(&self.sql.pfx, &canonical);
        let known = self.check_room(&canonical)?;
        let executions = &self.sql.executions;
        let builds = index_builds(&index, &path);
        let mut conn = self.conn()?;
        let built = (|| {
            for (name, columns) in &builds {
                // Left INVALID by a build that failed or was killed: PostgreSQL keeps it
                // (writers maintain it) but never reads it, and IF NOT EXISTS would keep it.
                if invalid_index(&mut conn.client, name)? {
                    conn.client
                        .batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"))
                        .db()?;
                }
                // One statement a call: CONCURRENTLY cannot run inside a transaction block.
                conn.client
                    .batch_execute(&format!(
                        "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {executions} {columns}"
                    ))
                    .db()?;
            }
            // The planner knows an expression index's values only from the table's statistics.
            conn.client.batch_execute(&format!("ANALYZE {executions}")).db()
        })();
        if let Err(e) = built {
            // Undo what this call left: an INVALID index of a failed build, and for a path not
            // declared before, any index it built (no row will name it).
            for (name, _) in &builds {
                if !known || invalid_index(&mut conn.client, name).unwrap_or(true) {
                    let _ = conn
                        .client
                        .batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"));
                }
            }
            return Err(e);
        }
        drop(conn);
        if !known {
            let table = self.attributes_table();
            let recorded = self.write(|tx, _| {
                let count: i64 = tx.query_one(&format!("SELECT COUNT(*) FROM {table}"), &[])?.get(0);
                if count >= MAX_ATTRIBUTES as i64 {
                    // Declarations made at the same time filled the store meanwhile.
                    let mine = tx.query_opt(&format!("SELECT 1 FROM {table} WHERE path = $1::text"), &[&canonical])?;
                    if mine.is_none() {
                        return Err(StoreError::invalid(
                            "path",
                            format!("the store already keeps {MAX_ATTRIBUTES} search attributes"),
                        ));
                    }
                }
                tx.execute(
                    &format!("INSERT INTO {table} (path, index_name) VALUES ($1::text, $2::text) ON CONFLICT DO NOTHING"),
                    &[&canonical, &index],
                )?;
                Ok(())
            });
            if let Err(e) = recorded {
                if self.check_room(&canonical).map(|known| !known).unwrap_or(false) {
                    let mut conn = self.conn()?;
                    for (name, _) in &builds {
                        let _ = conn
                            .client
                            .batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"));
                    }
                }
                return Err(e);
            }
        }
        Ok(SearchAttribute { path: canonical })
    }

    pub(crate) fn undeclare(&self, text: &str) -> Result<bool> {
        let canonical = attribute_path(text)?.to_string();
        let index = index_name(&self.sql.pfx, &canonical);
        let table = self.attributes_table();
        self.write(|tx, _| {
            let gone = tx.execute(
                &format!("DELETE FROM {table} WHERE path = $1::text"),
                &[&canonical],
            )?;
            if gone == 0 {
                return Ok(false);
            }
            tx.execute(&format!("DROP INDEX IF EXISTS {index}_j, {index}_t"), &[])?;
            Ok(true)
        })
    }
}

/// The two indexes of the attribute at `path` whose indexes are named after `index`: each
/// name and what follows `ON <executions>`.
fn index_builds(index: &str, path: &Path) -> [(String, String); 2] {
    let (j, t) = exprs("", path);
    [
        (
            format!("{index}_j"),
            format!("({j}, (id COLLATE \"C\")) WHERE {j} IS NOT NULL"),
        ),
        (
            format!("{index}_t"),
            format!("({t}, (id COLLATE \"C\")) WHERE {j} IS NOT NULL"),
        ),
    ]
}

/// Migration 10: every declared attribute's indexes built again with this build's spelling
/// of the document ([`jsonb`]), in the migration's transaction (so plainly, not
/// concurrently), and the table analyzed if there were any.
pub(crate) fn rebuild_attribute_indexes(
    tx: &mut postgres::Transaction<'_>,
    tables: &super::schema::Tables,
) -> Result<()> {
    let table = tables.sql("{pfx}execstore_attributes");
    let rows = tx
        .query(
            &format!("SELECT path, index_name FROM {table} ORDER BY path COLLATE \"C\""),
            &[],
        )
        .db()?;
    for row in &rows {
        let (text, index): (String, String) = (row.get(0), row.get(1));
        let path = attribute_path(&text)?;
        for (name, columns) in index_builds(&index, &path) {
            tx.batch_execute(&format!(
                "DROP INDEX IF EXISTS {name}; CREATE INDEX {name} ON {} {columns}",
                tables.executions
            ))
            .db()?;
        }
    }
    if !rows.is_empty() {
        tx.batch_execute(&format!("ANALYZE {}", tables.executions)).db()?;
    }
    Ok(())
}

/// Whether the index `name` (in the session's search path) exists and is `INVALID`: left by
/// a `CREATE INDEX CONCURRENTLY` that failed or was killed.
fn invalid_index(client: &mut postgres::Client, name: &str) -> Result<bool> {
    let row = client
        .query_opt(
            "SELECT NOT i.indisvalid FROM pg_index i WHERE i.indexrelid = to_regclass($1::text)",
            &[&name],
        )
        .db()?;
    Ok(row.is_some_and(|r| r.get::<_, bool>(0)))
}

/// `e` ordered by bytes, as Rust and SQLite order text (an equality keeps the column's own
/// collation, so that the column's index answers it; the database's collations are
/// deterministic, so equal is equal bytes either way). The active path is `"C"` already.
fn c_order(e: &str) -> String {
    format!("({e} COLLATE \"C\")")
}

/// How a root's value is read.
enum Kind {
    /// Text (id, status, definition, state, parent): ordered in the `"C"` collation.
    Text(String),
    /// Seconds (created, updated, finished).
    Time(String),
    /// A context path: its `jsonb` and its `"C"` text.
    Json(String, String),
}

fn kind_of(path: &Path) -> Kind {
    let field = |name: &str| format!("({}->>'{name}')", jsonb("e."));
    match path.root.as_str() {
        "id" => Kind::Text("k.id".into()),
        "status" => Kind::Text("k.status".into()),
        "definition" => Kind::Text("e.definition_id".into()),
        "state" => Kind::Text("k.active_path".into()),
        "parent" => Kind::Text(field("parent_id")),
        "created" => Kind::Time("k.created_at".into()),
        "updated" => Kind::Time("k.updated_at".into()),
        "finished" => Kind::Time("k.finished_at".into()),
        _ => {
            let (j, t) = exprs("e.", path);
            Kind::Json(j, t)
        }
    }
}

/// Builds the condition, numbering parameters after those already in `args`.
struct Sql<'a> {
    args: &'a mut Vec<Arg>,
}

impl Sql<'_> {
    fn text(&mut self, s: &str) -> String {
        self.args.push(Arg::Text(s.to_owned()));
        format!("${}::text", self.args.len())
    }

    fn real(&mut self, n: f64) -> String {
        self.args.push(Arg::Real(n));
        format!("${}::float8", self.args.len())
    }

    fn expr(&mut self, e: &Expr) -> String {
        match e {
            Expr::Term(t) => self.term(t),
            Expr::And(parts) => self.join(parts, " AND "),
            Expr::Or(parts) => self.join(parts, " OR "),
        }
    }

    fn join(&mut self, parts: &[Expr], op: &str) -> String {
        let sql: Vec<String> = parts.iter().map(|p| self.expr(p)).collect();
        format!("({})", sql.join(op))
    }

    fn term(&mut self, t: &Term) -> String {
        let kind = kind_of(&t.path);
        let state = t.path.root == "state";
        match &t.op {
            Op::Cmp(Cmp::Eq, v) if state => self.in_state(&kind, v),
            Op::Cmp(Cmp::Ne, v) if state => format!("NOT COALESCE({}, false)", self.in_state(&kind, v)),
            Op::In(vs) if state => {
                let any: Vec<String> = vs.iter().map(|v| self.in_state(&kind, v)).collect();
                format!("({})", any.join(" OR "))
            }
            Op::Cmp(Cmp::Eq, v) => self.equals(&kind, v),
            Op::Cmp(Cmp::Ne, v) => format!("NOT COALESCE({}, false)", self.equals(&kind, v)),
            Op::In(vs) => {
                let any: Vec<String> = vs.iter().map(|v| self.equals(&kind, v)).collect();
                format!("({})", any.join(" OR "))
            }
            Op::Cmp(cmp, v) => self.range(&kind, cmp.as_str(), v),
            Op::Prefix(p) => {
                let (e, guard) = match &kind {
                    Kind::Text(e) => (c_order(e), String::new()),
                    Kind::Json(j, t) => (t.clone(), format!(" AND jsonb_typeof({j}) = 'string'")),
                    Kind::Time(_) => return "false".into(),
                };
                let from = self.text(p);
                let range = match prefix_upper_bound(p) {
                    Some(upper) => format!("{e} >= {from} AND {e} < {}", self.text(&upper)),
                    None => format!("{e} >= {from}"),
                };
                format!("({range}{guard})")
            }
            Op::Exists => self.exists(&kind),
            Op::Missing => format!("NOT COALESCE({}, false)", self.exists(&kind)),
        }
    }

    fn exists(&mut self, kind: &Kind) -> String {
        match kind {
            Kind::Text(e) | Kind::Time(e) => format!("{e} IS NOT NULL"),
            Kind::Json(j, _) => format!("({j} IS NOT NULL AND {j} <> 'null'::jsonb)"),
        }
    }

    fn equals(&mut self, kind: &Kind, v: &V) -> String {
        match (kind, v) {
            (Kind::Text(e), V::Str(s)) => format!("{e} = {}", self.text(s)),
            (Kind::Time(e), V::Num(n)) => format!("{e} = {}", self.real(*n)),
            (Kind::Json(j, _), V::Str(s)) => format!("{j} = to_jsonb({})", self.text(s)),
            (Kind::Json(j, _), V::Num(n)) => format!("{j} = to_jsonb({})", self.real(*n)),
            (Kind::Json(j, _), V::Bool(b)) => format!("{j} = '{b}'::jsonb"),
            (Kind::Json(j, _), V::Null) => format!("{j} = 'null'::jsonb"),
            _ => "false".into(),
        }
    }

    fn range(&mut self, kind: &Kind, op: &str, v: &V) -> String {
        match (kind, v) {
            (Kind::Text(e), V::Str(s)) => format!("{} {op} {}", c_order(e), self.text(s)),
            (Kind::Time(e), V::Num(n)) => format!("{e} {op} {}", self.real(*n)),
            (Kind::Json(j, t), V::Str(s)) => {
                format!("({t} {op} {} AND jsonb_typeof({j}) = 'string')", self.text(s))
            }
            (Kind::Json(j, _), V::Num(n)) => {
                format!(
                    "({j} {op} to_jsonb({}) AND jsonb_typeof({j}) = 'number')",
                    self.real(*n)
                )
            }
            _ => "false".into(),
        }
    }

    fn in_state(&mut self, kind: &Kind, v: &V) -> String {
        let (Kind::Text(e), V::Str(s)) = (kind, v) else {
            return "false".into();
        };
        let exact = self.text(s);
        let from = self.text(&format!("{s}."));
        let to = self.text(&format!("{s}/"));
        format!("({e} = {exact} OR ({e} >= {from} AND {e} < {to}))")
    }
}

/// Whether `filter`'s [`condition`] reads the listing keys (`k`: an id, status, state or
/// time), so must be joined to them.
pub(crate) fn reads_keys(filter: &Filter) -> bool {
    filter.paths().iter().any(|p| match kind_of(p) {
        Kind::Text(column) | Kind::Time(column) => column.starts_with("k."),
        Kind::Json(..) => false,
    })
}

/// The filter as one condition over `k` and `e`, its parameters appended to `args`.
pub(crate) fn condition(filter: &Filter, args: &mut Vec<Arg>) -> String {
    Sql { args }.expr(&filter.expr)
}

#[cfg(test)]
mod tests {
    use execstore::executions::parse_where;

    use super::{condition, reads_keys};

    /// The probe joins the listing keys exactly when the condition reads them: a filter on
    /// the context alone goes without the join (a thousand key lookups fewer at 1,000,000),
    /// one that reads an id, a status, a state or a time gets it (without it the statement
    /// names a table it does not have).
    #[test]
    fn the_keys_are_joined_exactly_when_the_condition_reads_them() {
        let cases = [
            ("context.f01 = \"a\"", false),
            ("context.n > 3 and context.tag in (\"x\", \"y\")", false),
            ("definition = \"d\" and context.f01 = \"a\"", false),
            ("status = RUNNING and context.f01 = \"a\"", true),
            ("context.f01 = \"a\" or state = \"root.s1\"", true),
            ("id = \"abc\"", true),
            ("updated > 5 and context.f01 = \"a\"", true),
        ];
        for (text, joined) in cases {
            let filter = parse_where(text, 100.0).unwrap();
            let sql = condition(&filter, &mut Vec::new());
            assert_eq!(reads_keys(&filter), joined, "{text}: {sql}");
            assert_eq!(sql.contains("k."), joined, "{text}: {sql}");
        }
    }
}
