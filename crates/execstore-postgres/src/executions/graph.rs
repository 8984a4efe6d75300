//! Migration 9: the figures a definition's graph is drawn from
//! ([`ExecutionStore::graph_figures`](execstore::ExecutionStore::graph_figures)), kept by
//! triggers so that every writer (execstore's step and batch functions, harel 0.9's own
//! store, any statement) keeps them right, and the graph reads a few rows per definition.
//!
//! As the counts (migration 8), a writer never updates a shared row: each change appends
//! `+n`/`-n` rows to `{pfx}execstore_graph_deltas`, and a reader folds them into
//! `{pfx}execstore_graph` now and then (`{pfx}execstore_fold_graph`, one folder at a time);
//! the figures are the table plus the deltas. A row is `(definition, kind, a, b, c, n)`: kind
//! 0 counts executions at the active path `a` (its JSON text, `''` for none) with the status
//! `b`, kind 1 trace steps from `a` to `b` on event `c`, kind 2 the guards `c` recorded on
//! the steps from `a` to `b` (values as JSON text, `''` when absent; see
//! `execstore::executions::graph`).
//!
//! - where executions sit: a trigger on the listing keys (a new row, or a change of status or
//!   active path; the definition found by the execution's primary key), one on harel's table
//!   for a deleted execution (it reads the keys before the keys trigger deletes them: triggers
//!   of one event fire in name order) or one moved to another definition or id;
//! - the steps: a trigger on harel's trace table, under the definition of the step's
//!   execution (none: not counted). An execution inserted after steps of its own were
//!   written counts them, a deleted or moved one takes its remaining steps out (or along).
//!
//! A step is read as JSON with `NaN`, `Infinity` and `-Infinity` (which Python's
//! `json.dumps` writes) as `null`, and NUL escapes as the keys read them. Every surrogate's
//! escape (`\ud800`: PostgreSQL's JSON refuses a lone one, which Python writes) is read as
//! the six characters of its text, its backslash doubled (an escape is a backslash after an
//! even run of them), and undone in the labels, so a label keeps it as a scan does; entries
//! without `\ud` skip that. (A label with a backslash itself before such text, `\\ud800`,
//! reads as the escape: a figure's label, never a failed write.)

use execstore::executions::FiguresTally;
use execstore::Result;

use super::rows::col;
use super::schema::{Sql, Tables};

/// Migration 9's statements (one batch).
pub(crate) const GRAPH: &str = r#"CREATE TABLE IF NOT EXISTS {pfx}execstore_graph (definition_id TEXT NOT NULL,
  kind SMALLINT NOT NULL, a TEXT NOT NULL, b TEXT NOT NULL, c TEXT NOT NULL, n BIGINT NOT NULL,
  PRIMARY KEY (definition_id, kind, a, b, c));
CREATE TABLE IF NOT EXISTS {pfx}execstore_graph_deltas (definition_id TEXT NOT NULL, kind SMALLINT NOT NULL,
  a TEXT NOT NULL, b TEXT NOT NULL, c TEXT NOT NULL, n INT NOT NULL);
CREATE INDEX IF NOT EXISTS {pfx}execstore_graph_deltas_def ON {pfx}execstore_graph_deltas (definition_id);
CREATE OR REPLACE FUNCTION {pfx}execstore_graph_unmark(p text)
RETURNS text LANGUAGE sql IMMUTABLE AS $fn$
  SELECT CASE WHEN strpos(p, '\\u') = 0 THEN p
    ELSE regexp_replace(p, '(?<!\\)((?:\\\\)*)\\\\(u[dD][89a-fA-F][0-9a-fA-F]{2})', '\1\\\2', 'g') END
$fn$;
CREATE OR REPLACE FUNCTION {pfx}execstore_graph_step_rows(p_entry text)
RETURNS TABLE (kind smallint, a text, b text, c text, n int)
LANGUAGE sql IMMUTABLE AS $fn$
  WITH s AS (SELECT replace(replace(replace(replace(
    CASE WHEN strpos(p_entry, '\ud') + strpos(p_entry, '\uD') = 0 THEN p_entry
      ELSE regexp_replace(p_entry, '(?<!\\)((?:\\\\)*)\\(u[dD][89a-fA-F][0-9a-fA-F]{2})', '\1\\\\\2', 'g') END,
    '\u0000', '\ufffd'), '-Infinity', 'null'), 'Infinity', 'null'), 'NaN', 'null')::json AS j),
  k AS (SELECT j, {pfx}execstore_graph_unmark(COALESCE((j -> 'from_path')::text, '')) AS a,
    {pfx}execstore_graph_unmark(COALESCE((j -> 'to_path')::text, '')) AS b FROM s)
  SELECT 1::smallint, a, b, {pfx}execstore_graph_unmark(COALESCE((j -> 'event_kind')::text, '')), 1 FROM k
  UNION ALL
  SELECT 2::smallint, a, b, {pfx}execstore_graph_unmark(g::text), 1
  FROM k, json_array_elements(CASE WHEN json_typeof(j -> 'guards') = 'array' THEN j -> 'guards' ELSE '[]' END) g
$fn$;
CREATE OR REPLACE FUNCTION {pfx}execstore_graph_trace() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    DELETE FROM {pfx}execstore_graph WHERE kind > 0;
    DELETE FROM {pfx}execstore_graph_deltas WHERE kind > 0;
    RETURN NULL;
  END IF;
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
    SELECT e.definition_id, s.kind, s.a, s.b, s.c, -s.n
    FROM {executions} e, {pfx}execstore_graph_step_rows(OLD.entry) s WHERE e.id = OLD.execution_id;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
    SELECT e.definition_id, s.kind, s.a, s.b, s.c, s.n
    FROM {executions} e, {pfx}execstore_graph_step_rows(NEW.entry) s WHERE e.id = NEW.execution_id;
  END IF;
  RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_write ON {trace};
CREATE TRIGGER {pfx}execstore_graph_trace_write AFTER INSERT OR UPDATE OR DELETE ON {trace} FOR EACH ROW
  EXECUTE FUNCTION {pfx}execstore_graph_trace();
DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_truncate ON {trace};
CREATE TRIGGER {pfx}execstore_graph_trace_truncate AFTER TRUNCATE ON {trace} FOR EACH STATEMENT
  EXECUTE FUNCTION {pfx}execstore_graph_trace();
CREATE OR REPLACE FUNCTION {pfx}execstore_graph_key() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
    SELECT e.definition_id, 0, COALESCE(to_json(OLD.active_path)::text, ''), COALESCE(OLD.status, ''), '', -1
    FROM {executions} e WHERE e.id = OLD.id;
  END IF;
  INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
  SELECT e.definition_id, 0, COALESCE(to_json(NEW.active_path)::text, ''), COALESCE(NEW.status, ''), '', 1
  FROM {executions} e WHERE e.id = NEW.id;
  RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS {pfx}execstore_graph_key_insert ON {pfx}execstore_keys;
CREATE TRIGGER {pfx}execstore_graph_key_insert AFTER INSERT ON {pfx}execstore_keys FOR EACH ROW
  EXECUTE FUNCTION {pfx}execstore_graph_key();
DROP TRIGGER IF EXISTS {pfx}execstore_graph_key_update ON {pfx}execstore_keys;
CREATE TRIGGER {pfx}execstore_graph_key_update AFTER UPDATE ON {pfx}execstore_keys FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.active_path IS DISTINCT FROM NEW.active_path)
  EXECUTE FUNCTION {pfx}execstore_graph_key();
CREATE OR REPLACE FUNCTION {pfx}execstore_graph_execution() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    TRUNCATE {pfx}execstore_graph, {pfx}execstore_graph_deltas;
    RETURN NULL;
  END IF;
  IF TG_OP <> 'INSERT' THEN
    -- Where it sat (its keys, still there: this trigger sorts before the keys trigger's).
    INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
    SELECT OLD.definition_id, 0, COALESCE(to_json(k.active_path)::text, ''), COALESCE(k.status, ''), '', -1
    FROM {pfx}execstore_keys k WHERE k.id = OLD.id;
    INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
    SELECT OLD.definition_id, s.kind, s.a, s.b, s.c, -s.n
    FROM {trace} t, {pfx}execstore_graph_step_rows(t.entry) s WHERE t.execution_id = OLD.id;
  END IF;
  IF TG_OP = 'UPDATE' AND OLD.id = NEW.id THEN
    -- Moved to another definition: where it sat, there (a change of its keys written after
    -- this is counted under the new definition by the keys trigger; a new id is a new keys row).
    INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
    SELECT NEW.definition_id, 0, COALESCE(to_json(k.active_path)::text, ''), COALESCE(k.status, ''), '', 1
    FROM {pfx}execstore_keys k WHERE k.id = OLD.id;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
    SELECT NEW.definition_id, s.kind, s.a, s.b, s.c, s.n
    FROM {trace} t, {pfx}execstore_graph_step_rows(t.entry) s WHERE t.execution_id = NEW.id;
  END IF;
  RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS {pfx}execstore_graph_execution_insert ON {executions};
CREATE TRIGGER {pfx}execstore_graph_execution_insert AFTER INSERT OR DELETE ON {executions} FOR EACH ROW
  EXECUTE FUNCTION {pfx}execstore_graph_execution();
DROP TRIGGER IF EXISTS {pfx}execstore_graph_execution_moved ON {executions};
CREATE TRIGGER {pfx}execstore_graph_execution_moved AFTER UPDATE ON {executions} FOR EACH ROW
  WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.definition_id IS DISTINCT FROM NEW.definition_id)
  EXECUTE FUNCTION {pfx}execstore_graph_execution();
DROP TRIGGER IF EXISTS {pfx}execstore_graph_execution_truncate ON {executions};
CREATE TRIGGER {pfx}execstore_graph_execution_truncate AFTER TRUNCATE ON {executions} FOR EACH STATEMENT
  EXECUTE FUNCTION {pfx}execstore_graph_execution();
CREATE OR REPLACE FUNCTION {pfx}execstore_fold_graph() RETURNS void
LANGUAGE plpgsql AS $fn$
BEGIN
  IF pg_try_advisory_xact_lock(hashtext('{pfx}execstore_graph')) THEN
    WITH d AS (DELETE FROM {pfx}execstore_graph_deltas RETURNING definition_id, kind, a, b, c, n)
    INSERT INTO {pfx}execstore_graph AS g (definition_id, kind, a, b, c, n)
    SELECT definition_id, kind, a, b, c, SUM(n) FROM d GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
    ON CONFLICT (definition_id, kind, a, b, c) DO UPDATE SET n = g.n + EXCLUDED.n;
  END IF;
END
$fn$;
DELETE FROM {pfx}execstore_graph_deltas;
DELETE FROM {pfx}execstore_graph;
INSERT INTO {pfx}execstore_graph (definition_id, kind, a, b, c, n)
SELECT e.definition_id, 0, COALESCE(to_json(k.active_path)::text, ''), COALESCE(k.status, ''), '', COUNT(*)
FROM {executions} e JOIN {pfx}execstore_keys k ON k.id = e.id GROUP BY 1, 2, 3, 4, 5;
INSERT INTO {pfx}execstore_graph (definition_id, kind, a, b, c, n)
SELECT e.definition_id, s.kind, s.a, s.b, s.c, SUM(s.n)
FROM {trace} t JOIN {executions} e ON e.id = t.execution_id, LATERAL {pfx}execstore_graph_step_rows(t.entry) s
GROUP BY 1, 2, 3, 4, 5"#;

/// Migration 11's statements (one batch): the trace's deltas written once per statement, and
/// folds bounded in rows.
///
/// Migration 9's row trigger appended a delta row per step (and per guard): a statement
/// copying a million steps (an import, a bulk fill) left millions of rows, all folded by the
/// next reader (18 s at 1,000,000 executions). The statement triggers here read the rows a
/// statement inserted, deleted or updated (its transition tables: PostgreSQL allows them on
/// a trigger of one event, so three triggers share one function) and append their figures
/// summed, a row per figure. A step function's write of one step appends what the row trigger
/// did.
///
/// A step is read in one pass over its JSON (`json_each`, the last of a repeated key as `->`
/// reads it, the values' text as written) where migration 9 read each field with `->`, a
/// parse of the whole entry each: 27 against 51 us for a harel step of 400 bytes, the same
/// labels.
///
/// Writers fold too, so that deltas never pile up for want of a reader (a store written for
/// a day with the monitor closed): one trace statement or listing-keys change in 1,024 (at
/// random: `random()` costs nothing, a shared counter would be a row every writer waits on)
/// folds at most 100,000 deltas ([`FOLD_MAX`](super::sql::FOLD_MAX)) of the graph and of the
/// counts in its own transaction, if that is `READ COMMITTED` (harel's and execstore's: a
/// transaction whose snapshot is older than another fold's commit would fail on the rows that
/// fold deleted, where it must only be slower). The listing keys' trigger (migration 9's, where an
/// execution sits) is redefined with that one addition; the counts' deltas come with it
/// (a new execution, a change of status). The fold's cost per delta is the same wherever it
/// runs, about a microsecond: a writer pays a few a step, spread in the odd fold of a
/// couple of thousand rows.
///
/// `{pfx}execstore_fold_graph(max)` and `{pfx}execstore_fold_counts(max)` fold at most `max`
/// deltas (any, by their physical address, under the same advisory lock as the full folds,
/// which stay for older builds) and answer how many they folded: a reader folds a bounded
/// amount and sums what is left of its definition, so no read pays for everything written
/// since the last one. The statement is planned at each call (`EXECUTE`): a plan a session
/// cached while the deltas were few filters every row by the array of addresses (time growing
/// as the square of the rows: 19 s for 100,000) where a large table wants them looked up.
pub(crate) const GRAPH_BY_STATEMENT: &str = r#"CREATE OR REPLACE FUNCTION {pfx}execstore_graph_step_rows(p_entry text)
RETURNS TABLE (kind smallint, a text, b text, c text, n int)
LANGUAGE sql IMMUTABLE AS $fn$
  WITH s AS (SELECT replace(replace(replace(replace(
    CASE WHEN strpos(p_entry, '\ud') + strpos(p_entry, '\uD') = 0 THEN p_entry
      ELSE regexp_replace(p_entry, '(?<!\\)((?:\\\\)*)\\(u[dD][89a-fA-F][0-9a-fA-F]{2})', '\1\\\\\2', 'g') END,
    '\u0000', '\ufffd'), '-Infinity', 'null'), 'Infinity', 'null'), 'NaN', 'null')::json AS j),
  f AS (SELECT (array_agg(e.value ORDER BY e.o DESC) FILTER (WHERE e.key = 'from_path'))[1] AS fp,
      (array_agg(e.value ORDER BY e.o DESC) FILTER (WHERE e.key = 'to_path'))[1] AS tp,
      (array_agg(e.value ORDER BY e.o DESC) FILTER (WHERE e.key = 'event_kind'))[1] AS ek,
      (array_agg(e.value ORDER BY e.o DESC) FILTER (WHERE e.key = 'guards'))[1] AS gs
    FROM s, json_each(CASE WHEN json_typeof(s.j) = 'object' THEN s.j ELSE '{}' END) WITH ORDINALITY AS e(key, value, o)),
  k AS (SELECT gs, ek, {pfx}execstore_graph_unmark(COALESCE(fp::text, '')) AS a,
    {pfx}execstore_graph_unmark(COALESCE(tp::text, '')) AS b FROM f)
  SELECT 1::smallint, a, b, {pfx}execstore_graph_unmark(COALESCE(ek::text, '')), 1 FROM k
  UNION ALL
  SELECT 2::smallint, a, b, {pfx}execstore_graph_unmark(g::text), 1
  FROM k, json_array_elements(CASE WHEN json_typeof(gs) = 'array' THEN gs ELSE '[]' END) g
$fn$;
CREATE OR REPLACE FUNCTION {pfx}execstore_graph_trace_rows() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
    SELECT e.definition_id, s.kind, s.a, s.b, s.c, -SUM(s.n)
    FROM {pfx}execstore_trace_gone t JOIN {executions} e ON e.id = t.execution_id,
      LATERAL {pfx}execstore_graph_step_rows(t.entry) s
    GROUP BY 1, 2, 3, 4, 5;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
    SELECT e.definition_id, s.kind, s.a, s.b, s.c, SUM(s.n)
    FROM {pfx}execstore_trace_added t JOIN {executions} e ON e.id = t.execution_id,
      LATERAL {pfx}execstore_graph_step_rows(t.entry) s
    GROUP BY 1, 2, 3, 4, 5;
  END IF;
  IF random() < 1.0 / 1024 THEN
    IF current_setting('transaction_isolation') = 'read committed' THEN
      PERFORM {pfx}execstore_fold_graph(100000), {pfx}execstore_fold_counts(100000);
    END IF;
  END IF;
  RETURN NULL;
END
$fn$;
CREATE OR REPLACE FUNCTION {pfx}execstore_graph_key() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
    SELECT e.definition_id, 0, COALESCE(to_json(OLD.active_path)::text, ''), COALESCE(OLD.status, ''), '', -1
    FROM {executions} e WHERE e.id = OLD.id;
  END IF;
  INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
  SELECT e.definition_id, 0, COALESCE(to_json(NEW.active_path)::text, ''), COALESCE(NEW.status, ''), '', 1
  FROM {executions} e WHERE e.id = NEW.id;
  IF random() < 1.0 / 1024 THEN
    IF current_setting('transaction_isolation') = 'read committed' THEN
      PERFORM {pfx}execstore_fold_graph(100000), {pfx}execstore_fold_counts(100000);
    END IF;
  END IF;
  RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_write ON {trace};
DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_inserted ON {trace};
CREATE TRIGGER {pfx}execstore_graph_trace_inserted AFTER INSERT ON {trace}
  REFERENCING NEW TABLE AS {pfx}execstore_trace_added FOR EACH STATEMENT
  EXECUTE FUNCTION {pfx}execstore_graph_trace_rows();
DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_updated ON {trace};
CREATE TRIGGER {pfx}execstore_graph_trace_updated AFTER UPDATE ON {trace}
  REFERENCING OLD TABLE AS {pfx}execstore_trace_gone NEW TABLE AS {pfx}execstore_trace_added FOR EACH STATEMENT
  EXECUTE FUNCTION {pfx}execstore_graph_trace_rows();
DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_deleted ON {trace};
CREATE TRIGGER {pfx}execstore_graph_trace_deleted AFTER DELETE ON {trace}
  REFERENCING OLD TABLE AS {pfx}execstore_trace_gone FOR EACH STATEMENT
  EXECUTE FUNCTION {pfx}execstore_graph_trace_rows();
CREATE OR REPLACE FUNCTION {pfx}execstore_fold_graph(p_max int) RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE v_n bigint := 0;
BEGIN
  IF pg_try_advisory_xact_lock(hashtext('{pfx}execstore_graph')) THEN
    EXECUTE format($q$WITH d AS (DELETE FROM {pfx}execstore_graph_deltas
        WHERE ctid = ANY (ARRAY(SELECT ctid FROM {pfx}execstore_graph_deltas LIMIT %s))
        RETURNING definition_id, kind, a, b, c, n),
      f AS (INSERT INTO {pfx}execstore_graph AS g (definition_id, kind, a, b, c, n)
        SELECT definition_id, kind, a, b, c, SUM(n) FROM d GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
        ON CONFLICT (definition_id, kind, a, b, c) DO UPDATE SET n = g.n + EXCLUDED.n)
    SELECT COUNT(*) FROM d$q$, GREATEST(p_max, 0)) INTO v_n;
  END IF;
  RETURN v_n;
END
$fn$;
CREATE OR REPLACE FUNCTION {pfx}execstore_fold_counts(p_max int) RETURNS bigint
LANGUAGE plpgsql AS $fn$
DECLARE v_n bigint := 0;
BEGIN
  IF pg_try_advisory_xact_lock(hashtext('{pfx}execstore_counts')) THEN
    EXECUTE format($q$WITH d AS (DELETE FROM {pfx}execstore_count_deltas
        WHERE ctid = ANY (ARRAY(SELECT ctid FROM {pfx}execstore_count_deltas LIMIT %s))
        RETURNING definition_id, status, root, n),
      f AS (INSERT INTO {pfx}execstore_counts AS c (definition_id, status, root, n)
        SELECT definition_id, status, root, SUM(n) FROM d GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
        ON CONFLICT (definition_id, status, root) DO UPDATE SET n = c.n + EXCLUDED.n)
    SELECT COUNT(*) FROM d$q$, GREATEST(p_max, 0)) INTO v_n;
  END IF;
  RETURN v_n;
END
$fn$"#;

/// Migration 12's statements (one batch): the steps' and guards' figures are no longer kept.
///
/// The trace's statement triggers (migration 11), migration 9's truncate trigger on the
/// trace, and the functions that read a step go; the executions' trigger keeps only where a
/// deleted or moved execution sat (an insert had only steps to count: its trigger is created
/// again for deletes alone); the steps' and guards' rows (kinds 1 and 2) are deleted. A W1
/// step paid about a sixth of its time for them (docs/scale.md); the graph reads the steps
/// from the traces of a bounded number of executions instead
/// ([`execstore::executions::graph::add_recent_traces`]).
pub(crate) const UNKEPT_STEPS: &str = r#"DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_inserted ON {trace};
DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_updated ON {trace};
DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_deleted ON {trace};
DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_truncate ON {trace};
DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_write ON {trace};
DROP FUNCTION IF EXISTS {pfx}execstore_graph_trace_rows();
DROP FUNCTION IF EXISTS {pfx}execstore_graph_trace();
CREATE OR REPLACE FUNCTION {pfx}execstore_graph_execution() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    TRUNCATE {pfx}execstore_graph, {pfx}execstore_graph_deltas;
    RETURN NULL;
  END IF;
  -- Where it sat (its keys, still there: this trigger sorts before the keys trigger's).
  INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
  SELECT OLD.definition_id, 0, COALESCE(to_json(k.active_path)::text, ''), COALESCE(k.status, ''), '', -1
  FROM {pfx}execstore_keys k WHERE k.id = OLD.id;
  IF TG_OP = 'UPDATE' AND OLD.id = NEW.id THEN
    -- Moved to another definition: where it sat, there (a change of its keys written after
    -- this is counted under the new definition by the keys trigger; a new id is a new keys row).
    INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
    SELECT NEW.definition_id, 0, COALESCE(to_json(k.active_path)::text, ''), COALESCE(k.status, ''), '', 1
    FROM {pfx}execstore_keys k WHERE k.id = OLD.id;
  END IF;
  RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS {pfx}execstore_graph_execution_insert ON {executions};
DROP TRIGGER IF EXISTS {pfx}execstore_graph_execution_delete ON {executions};
CREATE TRIGGER {pfx}execstore_graph_execution_delete AFTER DELETE ON {executions} FOR EACH ROW
  EXECUTE FUNCTION {pfx}execstore_graph_execution();
DROP FUNCTION IF EXISTS {pfx}execstore_graph_step_rows(text);
DROP FUNCTION IF EXISTS {pfx}execstore_graph_unmark(text);
DELETE FROM {pfx}execstore_graph_deltas WHERE kind > 0;
DELETE FROM {pfx}execstore_graph WHERE kind > 0"#;

/// The statements reading the kept figures.
#[derive(Debug)]
pub(crate) struct GraphSql {
    /// The fold of the deltas (a reader's, now and then).
    pub(crate) fold: String,
    /// Where one definition's executions sit (`$1`): the folded rows plus the deltas, summed.
    pub(crate) read: String,
}

impl GraphSql {
    pub(crate) fn new(t: &Tables) -> Self {
        GraphSql {
            fold: t.sql("SELECT {pfx}execstore_fold_graph()"),
            read: t.sql(
                "SELECT a, b, SUM(n)::int8 FROM (\
                 SELECT a, b, n FROM {pfx}execstore_graph WHERE definition_id = $1 AND kind = 0 \
                 UNION ALL SELECT a, b, n FROM {pfx}execstore_graph_deltas \
                 WHERE definition_id = $1 AND kind = 0) x GROUP BY 1, 2 HAVING SUM(n) <> 0",
            ),
        }
    }

    /// Where the executions of `definition` sit, from the rows `read` returned.
    pub(crate) fn now(rows: &[postgres::Row]) -> Result<FiguresTally> {
        let mut tally = FiguresTally::new();
        for row in rows {
            let (a, b): (String, String) = (col(row, 0)?, col(row, 1)?);
            tally.add_stored_now(&a, &b, col(row, 2)?)?;
        }
        Ok(tally)
    }
}
