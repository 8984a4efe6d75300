//! What a writer's open mends in a database at this build's latest migration: the triggers
//! the migrations left and the functions they call, where a hand dropped, disabled or
//! replaced one.
//!
//! The listing's keys, the counts and where executions sit stay right under harel's writes,
//! and every other writer's, only through the triggers (`schema.rs`, `graph.rs`). A trigger
//! dropped (`DROP TRIGGER`, or `DROP FUNCTION ... CASCADE`) or disabled (`ALTER TABLE ...
//! DISABLE TRIGGER`), or its function replaced (`CREATE OR REPLACE FUNCTION` with another
//! body), would leave them wrong after such a writer's next write, silently and for good. So
//! each writer's open compares:
//! - execstore's functions with their text as the migrations left it, kept in
//!   `{pfx}execstore_functions` ([`record`], after every open that migrated): one missing or
//!   whose body differs is made again from that text;
//! - the triggers on the store's tables with what the migrations leave ([`left`]): a missing
//!   one is created again by the statement of the migration that last created it, a disabled
//!   one enabled.
//!
//! Then, since some writer may have written meanwhile, the keys are set again from the
//! documents where they differ, and the counts and where executions sit are counted again
//! from them, with every other writer held off (the tables locked until the open's
//! transaction commits).
//!
//! A function's body is compared as stored (`prosrc`, the text given), not its printed
//! definition, which a newer server may print otherwise. Its other attributes (volatility,
//! `SECURITY DEFINER`, settings) are not compared. A database migrated to 14 keeps the
//! functions as they were at that open: a hand's change made before it is not seen. A read-only
//! open cannot mend: where a trigger or function is not as left it reads the documents and
//! scans, as on a database no execstore migrated ([`intact`]).

use std::collections::BTreeMap;

use execstore::Result;
use postgres::GenericClient;

use crate::db::Db as _;

use super::schema::{Sql, Tables, MIGRATIONS};

/// A trigger the migrations leave: its table and the statement that creates it (templates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Left {
    /// The table it is on.
    pub(crate) table: &'static str,
    /// Its `CREATE TRIGGER` statement.
    pub(crate) create: &'static str,
}

/// Every trigger the migrations leave, by name (a template): the last `CREATE TRIGGER` of
/// each name that no later `DROP TRIGGER IF EXISTS` removes, read from the migrations'
/// statements in the order they run.
pub(crate) fn left() -> BTreeMap<&'static str, Left> {
    const CREATE: &str = "CREATE TRIGGER ";
    const DROP: &str = "DROP TRIGGER IF EXISTS ";
    let mut out = BTreeMap::new();
    for text in MIGRATIONS.iter().flat_map(|m| m.statements.iter().copied()) {
        let mut at = 0;
        while let Some(found) = [CREATE, DROP]
            .iter()
            .filter_map(|head| text[at..].find(head).map(|i| (at + i, *head)))
            .min()
        {
            let (start, head) = found;
            let rest = &text[start + head.len()..];
            let name = rest.split_whitespace().next().unwrap_or_default();
            let end = rest.find(';').map_or(text.len(), |i| start + head.len() + i);
            if head == CREATE {
                let create = &text[start..end];
                let table = create
                    .split(" ON ")
                    .nth(1)
                    .and_then(|t| t.split_whitespace().next())
                    .unwrap_or_default();
                out.insert(name, Left { table, create });
            } else {
                out.remove(name);
            }
            at = end;
        }
    }
    out
}

/// The triggers [`left`] names that the store's tables under `tables` lack, and those that
/// are there but do not fire (disabled, or enabled for replicas only), names filled in.
fn broken(client: &mut impl GenericClient, tables: &Tables) -> Result<(Vec<Left>, Vec<Left>)> {
    let left = left();
    let names: Vec<String> = left.keys().map(|n| stored_name(&tables.sql(n))).collect();
    let relations: Vec<String> = {
        let mut t: Vec<String> = left.values().map(|l| tables.sql(l.table)).collect();
        t.sort();
        t.dedup();
        t
    };
    let rows = client
        .query(
            "SELECT t.tgname::text, t.tgenabled IN ('O', 'A') FROM pg_trigger t \
             WHERE NOT t.tgisinternal AND t.tgname::text = ANY($1::text[]) \
             AND t.tgrelid = ANY(SELECT to_regclass(r) FROM unnest($2::text[]) r)",
            &[&names, &relations],
        )
        .db()?;
    let firing: BTreeMap<String, bool> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    let (mut missing, mut disabled) = (Vec::new(), Vec::new());
    for (name, l) in left {
        match firing.get(&stored_name(&tables.sql(name))) {
            None => missing.push(l),
            Some(false) => disabled.push(l),
            Some(true) => {}
        }
    }
    Ok((missing, disabled))
}

/// Whether every function is as [`record`] kept it and every trigger [`left`] names is there
/// and fires: else the keys, counts and where executions sit may be stale (see the module).
pub(crate) fn intact(client: &mut impl GenericClient, tables: &Tables) -> Result<bool> {
    let (missing, disabled) = broken(client, tables)?;
    Ok(missing.is_empty() && disabled.is_empty() && functions_broken(client, tables)?.is_empty())
}

/// Migration 14: each of execstore's functions by its name and argument types, its body and
/// the statement that makes it (`pg_get_functiondef`).
pub(crate) const FUNCTIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS {pfx}execstore_functions \
     (signature TEXT PRIMARY KEY, source TEXT NOT NULL, definition TEXT NOT NULL)";

/// The names of execstore's functions under `tables`' prefix: every name a migration's
/// statement creates (`FUNCTION {pfx}execstore_...`), those a later one dropped included.
/// Named exactly, so that one store's names never take in another's (the prefix `execstore`
/// makes `execstore_execstore_step`, which starts with the bare store's `execstore_`).
pub(crate) fn function_names(tables: &Tables) -> Vec<String> {
    const HEAD: &str = "FUNCTION {pfx}execstore_";
    let mut names: Vec<String> = MIGRATIONS
        .iter()
        .flat_map(|m| m.statements.iter())
        .flat_map(|text| {
            text.match_indices(HEAD)
                .map(move |(at, _)| &text[at + HEAD.len()..])
        })
        .map(|rest| {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            tables.sql(&format!("{{pfx}}execstore_{}", &rest[..end]))
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// execstore's functions in the schema the store's statements make them in (the session's
/// current schema), among the names `$1` ([`function_names`]): their signature and body.
pub(crate) const FUNCTIONS: &str =
    "SELECT p.oid, p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' AS signature, \
     p.prosrc AS source FROM pg_proc p \
     WHERE p.pronamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = current_schema()) \
     AND p.proname = ANY($1::text[])";

/// Keeps the text of execstore's functions as they are now ([`FUNCTIONS_TABLE`]): run after
/// every open that applied a migration, in its transaction, so that the record is what the
/// migrations left.
pub(crate) fn record(client: &mut impl GenericClient, tables: &Tables) -> Result<()> {
    client
        .batch_execute(&tables.sql("DELETE FROM {pfx}execstore_functions"))
        .db()?;
    let insert = format!(
        "INSERT INTO {{pfx}}execstore_functions (signature, source, definition) \
         SELECT f.signature, f.source, pg_get_functiondef(f.oid) FROM ({FUNCTIONS}) f"
    );
    client
        .execute(&tables.sql(&insert), &[&function_names(tables)])
        .db()?;
    Ok(())
}

/// Whether the record of functions ([`FUNCTIONS_TABLE`]) is there (a hand may have dropped it).
fn has_record(client: &mut impl GenericClient, tables: &Tables) -> Result<bool> {
    crate::db::has_table(client, &tables.sql("{pfx}execstore_functions"))
}

/// The statements that make again each function whose body is not the one [`record`] kept,
/// or that is gone. A database whose record a hand dropped is recorded again as it is. Only
/// records of execstore's own names count: a row a hand added under another name makes
/// nothing.
fn functions_broken(client: &mut impl GenericClient, tables: &Tables) -> Result<Vec<String>> {
    if !has_record(client, tables)? {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT r.definition FROM {{pfx}}execstore_functions r LEFT JOIN ({FUNCTIONS}) f \
         ON f.signature = r.signature \
         WHERE split_part(r.signature, '(', 1) = ANY($1::text[]) AND f.source IS DISTINCT FROM r.source \
         ORDER BY r.signature"
    );
    let rows = client.query(&tables.sql(&sql), &[&function_names(tables)]).db()?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// The statements that set the keys, counts and where executions sit again from the rows
/// (templates, one batch), after the tables are locked against every other writer: the keys
/// that differ from their documents are written (their triggers append deltas, which the
/// counting after clears), those of executions gone are deleted, then the counts and where
/// executions sit are counted from the keys as migrations 8 and 9 first counted them.
/// `{keys_of}` is the documents' keys ([`STRICT_KEYS`] or [`TOLERANT_KEYS`]).
const REFILL: &str = r#"LOCK TABLE {executions}, {pfx}execstore_keys IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO {pfx}execstore_keys AS k (id, status, root, created_at, updated_at, finished_at, active_path)
SELECT e.id, d.status, d.parent_id IS NULL, d.created_at, d.updated_at, d.finished_at, d.active_path
FROM {executions} e, {keys_of}
ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, root = EXCLUDED.root,
  created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
  finished_at = EXCLUDED.finished_at, active_path = EXCLUDED.active_path
WHERE (k.status, k.root, k.created_at, k.updated_at, k.finished_at, k.active_path)
  IS DISTINCT FROM (EXCLUDED.status, EXCLUDED.root, EXCLUDED.created_at, EXCLUDED.updated_at,
  EXCLUDED.finished_at, EXCLUDED.active_path);
DELETE FROM {pfx}execstore_keys k WHERE NOT EXISTS (SELECT 1 FROM {executions} e WHERE e.id = k.id);
DELETE FROM {pfx}execstore_count_deltas;
DELETE FROM {pfx}execstore_counts;
INSERT INTO {pfx}execstore_counts (definition_id, status, root, n)
SELECT e.definition_id, COALESCE(k.status, ''), k.root, COUNT(*)
FROM {executions} e JOIN {pfx}execstore_keys k ON k.id = e.id GROUP BY 1, 2, 3;
DELETE FROM {pfx}execstore_graph_deltas;
DELETE FROM {pfx}execstore_graph;
INSERT INTO {pfx}execstore_graph (definition_id, kind, a, b, c, n)
SELECT e.definition_id, 0, COALESCE(to_json(k.active_path)::text, ''), COALESCE(k.status, ''), '', COUNT(*)
FROM {executions} e JOIN {pfx}execstore_keys k ON k.id = e.id GROUP BY 1, 2, 3, 4, 5"#;

/// The keys of every document, read as the keys trigger reads them: one statement, which
/// fails on the first document PostgreSQL cannot read that way.
const STRICT_KEYS: &str = "LATERAL json_to_record({json}) AS d(status text, parent_id text, \
     created_at float8, updated_at float8, finished_at float8, active_path text)";

/// The keys of every document that can be read ([`KEYS_OF`], a function of this session's
/// own), the others left out.
const TOLERANT_KEYS: &str = "LATERAL pg_temp.execstore_keys_of({parseable}) AS d WHERE d.ok";

/// One document's keys, and whether it could be read: a document that is not JSON, not an
/// object, or holds a time that is not a number (class 22, data exceptions, which the keys
/// trigger would have refused) gives `ok` false, each in a subtransaction of its own.
const KEYS_OF: &str = r#"CREATE OR REPLACE FUNCTION pg_temp.execstore_keys_of(p_data text, OUT status text,
  OUT parent_id text, OUT created_at float8, OUT updated_at float8, OUT finished_at float8,
  OUT active_path text, OUT ok boolean)
LANGUAGE plpgsql AS $fn$
BEGIN
  SELECT d.status, d.parent_id, d.created_at, d.updated_at, d.finished_at, d.active_path
    INTO status, parent_id, created_at, updated_at, finished_at, active_path
    FROM json_to_record(p_data::json) AS d(status text, parent_id text, created_at float8,
      updated_at float8, finished_at float8, active_path text);
  ok := true;
EXCEPTION WHEN data_exception THEN
  ok := false;
END
$fn$"#;

/// Sets the keys and figures again ([`REFILL`]). A document no trigger would have accepted
/// (a hand wrote it while the keys trigger was gone) would fail the one statement: then the
/// refill runs again, reading each document on its own and leaving out those it cannot read,
/// whose keys stay as they were (as SQLite's refill leaves their columns), so the open still
/// mends everything else. The first try runs in a savepoint, so nothing of it is left.
fn refill(client: &mut impl GenericClient, tables: &Tables) -> Result<()> {
    let strict = tables.sql(&REFILL.replace("{keys_of}", STRICT_KEYS));
    let mut first = client.transaction().db()?;
    match first.batch_execute(&strict) {
        Ok(()) => return first.commit().db(),
        Err(e) if !is_data_exception(&e) => return Err(crate::db::map_err(e)),
        Err(_) => first.rollback().db()?,
    }
    let parseable = super::schema::parseable("e.data");
    let tolerant = REFILL.replace("{keys_of}", &TOLERANT_KEYS.replace("{parseable}", &parseable));
    client.batch_execute(KEYS_OF).db()?;
    client.batch_execute(&tables.sql(&tolerant)).db()
}

/// Whether `e` is a data exception (SQLSTATE class 22: a text that is not JSON, a JSON that is
/// not an object, a field that is not a number).
fn is_data_exception(e: &postgres::Error) -> bool {
    e.code().is_some_and(|c| c.code().starts_with("22"))
}

/// Makes again the functions not as [`record`] kept them, creates again the triggers
/// [`left`] names that are missing, enables those disabled, and if there were any sets the
/// figures they keep again ([`refill`]); inside the writer's migration transaction, on a
/// database at this build's latest migration.
pub(crate) fn mend(client: &mut impl GenericClient, tables: &Tables) -> Result<()> {
    if !has_record(client, tables)? {
        client.batch_execute(&tables.sql(FUNCTIONS_TABLE)).db()?;
        record(client, tables)?;
    }
    let functions = functions_broken(client, tables)?;
    for definition in &functions {
        // One statement only (the extended protocol refuses several): a record edited to
        // hold more than a function's definition runs nothing else.
        client.execute(definition.as_str(), &[]).db()?;
    }
    let (missing, disabled) = broken(client, tables)?;
    for l in &missing {
        client.batch_execute(&tables.sql(l.create)).db()?;
    }
    for l in &disabled {
        let name = trigger_name(l.create);
        client
            .batch_execute(&tables.sql(&format!("ALTER TABLE {} ENABLE TRIGGER {name}", l.table)))
            .db()?;
    }
    if !(functions.is_empty() && missing.is_empty() && disabled.is_empty()) {
        refill(client, tables)?;
    }
    Ok(())
}

/// The longest name PostgreSQL keeps (`NAMEDATALEN - 1` bytes).
const MAX_NAME: usize = 63;

/// `name` as PostgreSQL stores it: cut to [`MAX_NAME`] bytes, at a character's boundary (as
/// it cuts a longer identifier in a statement, with a notice). A prefix of 30 characters
/// makes some trigger names longer (`<prefix>_execstore_graph_execution_truncate`).
fn stored_name(name: &str) -> String {
    let mut end = name.len().min(MAX_NAME);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_owned()
}

/// The name a `CREATE TRIGGER` statement gives.
fn trigger_name(create: &str) -> &str {
    create
        .trim_start_matches("CREATE TRIGGER ")
        .split_whitespace()
        .next()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The triggers the migrations leave, as the statements name them: none that a later
    /// migration dropped (migration 9's trace triggers, dropped by 11 and 12), the ones made
    /// again under the same name counted once.
    #[test]
    fn left_names_the_latest_triggers() {
        let left = left();
        let names: Vec<&str> = left.keys().copied().collect();
        assert_eq!(
            names,
            [
                "{pfx}execstore_counts_delete",
                "{pfx}execstore_counts_key_insert",
                "{pfx}execstore_counts_key_update",
                "{pfx}execstore_counts_truncate",
                "{pfx}execstore_definition_moved",
                "{pfx}execstore_graph_execution_delete",
                "{pfx}execstore_graph_execution_moved",
                "{pfx}execstore_graph_execution_truncate",
                "{pfx}execstore_graph_key_insert",
                "{pfx}execstore_graph_key_update",
                "{pfx}execstore_keys_delete",
                "{pfx}execstore_keys_truncate",
                "{pfx}execstore_keys_write",
            ]
        );
        for (name, l) in &left {
            assert_eq!(trigger_name(l.create), *name);
            assert!(
                ["{executions}", "{pfx}execstore_keys"].contains(&l.table),
                "{name}: {}",
                l.table
            );
            assert!(!l.create.contains(';'), "{name}");
        }
    }

    /// The functions the migrations create, each once, those a later migration dropped
    /// (the trace's, migration 12) included, under the prefix and no other.
    #[test]
    fn function_names_are_the_migrations() {
        let tables = Tables::new(Some("p")).unwrap();
        let names = function_names(&tables);
        let suffixes: Vec<&str> = names
            .iter()
            .map(|n| n.strip_prefix("p_execstore_").unwrap_or("?"))
            .collect();
        assert_eq!(
            suffixes,
            [
                "commit",
                "commit_batch",
                "counts_key",
                "counts_out",
                "definition_moved",
                "fold_counts",
                "fold_graph",
                "graph_execution",
                "graph_key",
                "graph_step_rows",
                "graph_trace",
                "graph_trace_rows",
                "graph_unmark",
                "keys_sync",
                "step",
            ]
        );
    }
}
