//! Migration 10: `{pfx}execstore_step` writes the kept figures of its own step itself.
//!
//! Before, a W1 step ran `{pfx}execstore_step`, which called `{pfx}execstore_commit` (a
//! nested plpgsql call) and then wrote the listing keys, and three row triggers kept the
//! figures of migrations 8 and 9 from what it wrote: the trace trigger (parsing the new step
//! and finding its execution's definition), the graph's keys trigger (a `-1`/`+1` row of
//! where the execution sits, finding its definition twice) and the counts' (on a status
//! change). Now the step function is one body: the CAS write (returning the stored
//! definition), the effects, the keys (one `UPDATE` that returns the keys it replaced) and one
//! `INSERT` of every graph delta of the step (where it sat and sits, its trace step and
//! guards, and the steps the ring dropped), plus the counts' deltas when its status or
//! root-ness changed. The rows are the ones the triggers appended, so readers are unchanged.
//!
//! Both functions plan their statements once per session (`plan_cache_mode =
//! force_generic_plan`): with PostgreSQL's default, a statement over a parameter the planner
//! can fold (the trace step given to the immutable `{pfx}execstore_graph_step_rows`, the
//! ring's bound) kept a custom plan and was planned again on every call, which doubled the
//! step's time on the server once the trace ring was full (every plan here is a few primary
//! key lookups, the same whatever the values).
//!
//! The function tells the triggers it keeps the figures itself through the
//! transaction-local setting `execstore.step` (`on` while it runs): the keys trigger, the
//! graph's trace and keys triggers and the counts' keys triggers skip the rows it writes
//! (their `WHEN`, evaluated without calling them). Every other writer (harel 0.9's own
//! store, the batch function, any statement) still fires them; the keys trigger still skips
//! the writes of a caller that sets `execstore.keys_written` (migration 6's protocol). The
//! triggers that see an execution inserted, deleted, moved or truncated are unchanged.

/// Migration 10's statements (one batch): the triggers' `WHEN` clauses, the step function,
/// and generic plans for the commit function too (the batch path).
pub(crate) const STEP_OWN_FIGURES: &str = r#"ALTER FUNCTION {pfx}execstore_commit SET plan_cache_mode = force_generic_plan;
DROP TRIGGER IF EXISTS {pfx}execstore_keys_write ON {executions};
CREATE TRIGGER {pfx}execstore_keys_write AFTER INSERT OR UPDATE ON {executions} FOR EACH ROW
  WHEN (current_setting('execstore.keys_written', true) IS DISTINCT FROM 'on'
    AND current_setting('execstore.step', true) IS DISTINCT FROM 'on')
  EXECUTE FUNCTION {pfx}execstore_keys_sync();
DROP TRIGGER IF EXISTS {pfx}execstore_counts_key_insert ON {pfx}execstore_keys;
CREATE TRIGGER {pfx}execstore_counts_key_insert AFTER INSERT ON {pfx}execstore_keys FOR EACH ROW
  WHEN (current_setting('execstore.step', true) IS DISTINCT FROM 'on')
  EXECUTE FUNCTION {pfx}execstore_counts_key();
DROP TRIGGER IF EXISTS {pfx}execstore_counts_key_update ON {pfx}execstore_keys;
CREATE TRIGGER {pfx}execstore_counts_key_update AFTER UPDATE ON {pfx}execstore_keys FOR EACH ROW
  WHEN ((OLD.status IS DISTINCT FROM NEW.status OR OLD.root IS DISTINCT FROM NEW.root)
    AND current_setting('execstore.step', true) IS DISTINCT FROM 'on')
  EXECUTE FUNCTION {pfx}execstore_counts_key();
DROP TRIGGER IF EXISTS {pfx}execstore_graph_key_insert ON {pfx}execstore_keys;
CREATE TRIGGER {pfx}execstore_graph_key_insert AFTER INSERT ON {pfx}execstore_keys FOR EACH ROW
  WHEN (current_setting('execstore.step', true) IS DISTINCT FROM 'on')
  EXECUTE FUNCTION {pfx}execstore_graph_key();
DROP TRIGGER IF EXISTS {pfx}execstore_graph_key_update ON {pfx}execstore_keys;
CREATE TRIGGER {pfx}execstore_graph_key_update AFTER UPDATE ON {pfx}execstore_keys FOR EACH ROW
  WHEN ((OLD.status IS DISTINCT FROM NEW.status OR OLD.active_path IS DISTINCT FROM NEW.active_path)
    AND current_setting('execstore.step', true) IS DISTINCT FROM 'on')
  EXECUTE FUNCTION {pfx}execstore_graph_key();
DROP TRIGGER IF EXISTS {pfx}execstore_graph_trace_write ON {trace};
CREATE TRIGGER {pfx}execstore_graph_trace_write AFTER INSERT OR UPDATE OR DELETE ON {trace} FOR EACH ROW
  WHEN (current_setting('execstore.step', true) IS DISTINCT FROM 'on')
  EXECUTE FUNCTION {pfx}execstore_graph_trace();
CREATE OR REPLACE FUNCTION {pfx}execstore_step(
  p_id text, p_defn text, p_data text, p_version bigint, p_expected bigint,
  p_targets text[], p_events text[], p_processed text,
  p_children text[], p_root_paths text[], p_contexts text[],
  p_timer_paths text[], p_fire_ats float8[],
  p_trace text, p_trace_max bigint,
  p_status text, p_root boolean, p_created float8, p_updated float8, p_finished float8, p_path text,
  OUT o_ok boolean, OUT o_found bigint, OUT o_seqs bigint[])
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  v_defn text;
  v_idx bigint;
  v_had boolean;
  v_status text;
  v_root boolean;
  v_path text;
  v_moved boolean;
BEGIN
  PERFORM set_config('execstore.step', 'on', true);
  UPDATE {executions} SET data = p_data, version = p_version WHERE id = p_id AND version = p_expected
    RETURNING definition_id INTO v_defn;
  IF NOT FOUND THEN
    IF p_expected = 0 THEN
      -- A new execution. Two writers inserting one new id race on the primary key: the
      -- loser inserts nothing (after waiting for the winner).
      INSERT INTO {executions} (id, definition_id, data, version) VALUES (p_id, p_defn, p_data, p_version)
        ON CONFLICT (id) DO NOTHING RETURNING definition_id INTO v_defn;
    END IF;
    IF NOT FOUND THEN
      SELECT version INTO o_found FROM {executions} WHERE id = p_id;
      o_ok := false;
      PERFORM set_config('execstore.step', 'off', true);
      RETURN;
    END IF;
  END IF;
  o_ok := true;
  o_seqs := ARRAY[]::bigint[];
  IF cardinality(p_events) > 0 THEN
    WITH added AS (
      INSERT INTO {outbox} (target_id, event)
      SELECT e.target_id, e.event FROM unnest(p_targets, p_events) WITH ORDINALITY AS e(target_id, event, n)
      ORDER BY e.n
      RETURNING seq
    ) SELECT array_agg(seq ORDER BY seq) INTO o_seqs FROM added;
    PERFORM pg_notify('{pfx}execstore_outbox', '');
  END IF;
  IF p_processed IS NOT NULL THEN
    INSERT INTO {processed_events} (execution_id, event_id) VALUES (p_id, p_processed) ON CONFLICT DO NOTHING;
  END IF;
  IF cardinality(p_children) > 0 THEN
    INSERT INTO {spawns} (parent_id, child_id, root_path, context)
    SELECT p_id, s.child_id, s.root_path, s.context
    FROM unnest(p_children, p_root_paths, p_contexts) WITH ORDINALITY AS s(child_id, root_path, context, n)
    ORDER BY s.n;
    PERFORM pg_notify('{pfx}execstore_spawns', '');
  END IF;
  IF cardinality(array_remove(p_fire_ats, NULL)) > 0 THEN
    INSERT INTO {timers} (execution_id, path, fire_at)
    SELECT p_id, t.path, t.fire_at FROM unnest(p_timer_paths, p_fire_ats) AS t(path, fire_at)
    WHERE t.fire_at IS NOT NULL
    ON CONFLICT (execution_id, path) DO UPDATE SET fire_at = EXCLUDED.fire_at;
    PERFORM pg_notify('{pfx}execstore_timers', '');
  END IF;
  IF array_position(p_fire_ats, NULL) IS NOT NULL THEN
    DELETE FROM {timers} d USING unnest(p_timer_paths, p_fire_ats) AS t(path, fire_at)
    WHERE t.fire_at IS NULL AND d.execution_id = p_id AND d.path = t.path;
  END IF;
  IF p_trace IS NOT NULL THEN
    INSERT INTO {trace} (execution_id, idx, entry)
    SELECT p_id, COALESCE((SELECT MAX(t.idx) FROM {trace} t WHERE t.execution_id = p_id), -1) + 1, p_trace
    RETURNING idx INTO v_idx;
    -- The ring: only once it is full is there a step to drop, and its figures with it.
    IF p_trace_max IS NOT NULL AND v_idx >= p_trace_max THEN
      WITH gone AS (DELETE FROM {trace} WHERE execution_id = p_id AND idx <= v_idx - p_trace_max RETURNING entry)
      INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
      SELECT v_defn, s.kind, s.a, s.b, s.c, -s.n FROM gone, {pfx}execstore_graph_step_rows(gone.entry) s;
    END IF;
  END IF;
  -- The keys, and the ones they replace (the execution's row lock, taken above, holds every
  -- other writer of them off).
  UPDATE {pfx}execstore_keys k SET status = p_status, root = p_root, created_at = p_created,
    updated_at = p_updated, finished_at = p_finished, active_path = p_path
    FROM {pfx}execstore_keys o WHERE k.id = p_id AND o.id = p_id
    RETURNING o.status, o.root, o.active_path INTO v_status, v_root, v_path;
  v_had := FOUND;
  IF NOT v_had THEN
    INSERT INTO {pfx}execstore_keys (id, status, root, created_at, updated_at, finished_at, active_path)
      VALUES (p_id, p_status, p_root, p_created, p_updated, p_finished, p_path);
  END IF;
  IF NOT v_had OR v_status IS DISTINCT FROM p_status OR v_root IS DISTINCT FROM p_root THEN
    INSERT INTO {pfx}execstore_count_deltas (definition_id, status, root, n)
    SELECT v_defn, COALESCE(v_status, ''), v_root, -1 WHERE v_had
    UNION ALL SELECT v_defn, COALESCE(p_status, ''), p_root, 1;
  END IF;
  v_moved := NOT v_had OR v_status IS DISTINCT FROM p_status OR v_path IS DISTINCT FROM p_path;
  IF v_moved OR p_trace IS NOT NULL THEN
    INSERT INTO {pfx}execstore_graph_deltas (definition_id, kind, a, b, c, n)
    SELECT v_defn, 0, COALESCE(to_json(v_path)::text, ''), COALESCE(v_status, ''), '', -1
      WHERE v_moved AND v_had
    UNION ALL SELECT v_defn, 0, COALESCE(to_json(p_path)::text, ''), COALESCE(p_status, ''), '', 1
      WHERE v_moved
    UNION ALL SELECT v_defn, s.kind, s.a, s.b, s.c, s.n FROM {pfx}execstore_graph_step_rows(p_trace) s
      WHERE p_trace IS NOT NULL;
  END IF;
  PERFORM set_config('execstore.step', 'off', true);
END
$fn$"#;
