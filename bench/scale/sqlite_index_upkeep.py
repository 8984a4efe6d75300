#!/usr/bin/env python3
"""bench/scale/sqlite_index_upkeep.py: what each way of indexing the listing's keys costs a
W1 step on SQLite, measured on the bare schema (no store, no engine).

    python3 bench/scale/sqlite_index_upkeep.py [--executions N] [--events K] [--rounds R]

W1's documents (../shared/bench/WORKLOAD.md: about 1.7 KB, every field of the context and the
active path changing at each step, the status staying RUNNING) are inserted one transaction
each, then stepped K times each, one `UPDATE ... SET data = ?` transaction a step, in WAL
with `synchronous = NORMAL`, on five schemas, alternating, R rounds:

  none   harel's table alone (its primary key, and the definition's index)
  m4     the indexes execstore had before the scale work (migration 4): an expression index of
         two keys for each of the status, created, updated, finished (partial) and the
         active path
  m12    the indexes execstore has now (SQLite migration 12): the same five, with the listing's
         and the graph's keys after the id (five keys for created, updated, the active path)
  keys   the listing's keys as columns of a table of their own (as PostgreSQL's migration 6
         has them), with the same indexes as m12 over its columns, no index over the
         document; a step updates only the columns that changed (the updated time and the
         active path)
  cols   the same keys as columns added to harel's table (harel's statements name their
         columns, so they would leave them to a trigger), the same indexes over them; a step's
         one `UPDATE` sets the document and the two keys that moved

SQLite rewrites the entries of every index whose expression reads a column the `UPDATE`
assigns, whether the key changed or not: each expression index over `data` costs every step,
which is why `keys` writes a second row yet steps faster, and `cols` faster still. Prints the medians, and each as a
multiple of m12's. Python's own sqlite3 (whatever SQLite it links), so ratios, not rates.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import time


def document(i: int, r: int) -> str:
    """Execution `i` after `r` steps, shaped as W1's."""
    context: dict[str, object] = {"counter": r}
    for j in range(1, 20):
        u = f"e{i:08d}-k{j:02d}-g{r:05d}-"
        context[f"f{j:02d}"] = u + u
    return json.dumps({
        "id": f"{i:032x}", "definition_id": f"def-{i % 5}", "definition_fqn": "bench.definitions.Workflow0",
        "root_path": "", "status": "RUNNING", "outcome": None, "error": None,
        "active_path": f"root.work.s{r:02d}",
        "history": {f"root.work.h{q:02d}": f"root.work.s{q:02d}" for q in range(1, r + 1)},
        "context": context, "processed_events": r, "version": r + 1, "priority": 0, "parent_id": None,
        "child_id": None, "deferred": [], "children": {}, "invoke_seq": {},
        "created_at": 1000.0 + i, "updated_at": 2000.0 + i * 100 + r, "finished_at": None, "expires_at": None,
    })


def j(key: str) -> str:
    return f"json_extract(data,'$.{key}')"


ROOT = f"{j('parent_id')} IS NULL"
SCHEMAS = {
    "none": [],
    "m4": [
        f"CREATE INDEX x_status ON executions ({j('status')}, id)",
        f"CREATE INDEX x_finished ON executions ({j('finished_at')}, id) WHERE {j('finished_at')} IS NOT NULL",
        f"CREATE INDEX x_updated ON executions ({j('updated_at')}, id)",
        f"CREATE INDEX x_created ON executions ({j('created_at')}, id)",
        f"CREATE INDEX x_path ON executions ({j('active_path')}, id)",
    ],
    "m12": [
        f"CREATE INDEX x_status ON executions ({j('status')}, id)",
        f"CREATE INDEX x_finished ON executions ({j('finished_at')}, id) WHERE {j('finished_at')} IS NOT NULL",
        f"CREATE INDEX x_updated ON executions ({j('updated_at')}, id, {j('status')}, definition_id, {ROOT})",
        f"CREATE INDEX x_created ON executions ({j('created_at')}, id, {j('status')}, definition_id, {ROOT})",
        f"CREATE INDEX x_path ON executions ({j('active_path')}, id, definition_id, {j('status')}, "
        "data -> '$.active_path')",
    ],
    "keys": [
        "CREATE TABLE keys (id TEXT PRIMARY KEY, definition_id TEXT, status TEXT, root INTEGER, created REAL, "
        "updated REAL, finished REAL, path TEXT) WITHOUT ROWID",
        "CREATE INDEX k_status ON keys (status, id)",
        "CREATE INDEX k_finished ON keys (finished, id) WHERE finished IS NOT NULL",
        "CREATE INDEX k_updated ON keys (updated, id, status, definition_id, root)",
        "CREATE INDEX k_created ON keys (created, id, status, definition_id, root)",
        "CREATE INDEX k_path ON keys (path, id, definition_id, status)",
    ],
    "cols": [
        *(f"ALTER TABLE executions ADD COLUMN {c}" for c in ("status", "root", "created", "updated", "finished",
                                                            "path")),
        "CREATE INDEX c_status ON executions (status, id)",
        "CREATE INDEX c_finished ON executions (finished, id) WHERE finished IS NOT NULL",
        "CREATE INDEX c_updated ON executions (updated, id, status, definition_id, root)",
        "CREATE INDEX c_created ON executions (created, id, status, definition_id, root)",
        "CREATE INDEX c_path ON executions (path, id, definition_id, status)",
    ],
}


def run(schema: str, n: int, k: int, directory: str) -> tuple[float, float]:
    """One run on a fresh file: inserts per second, steps per second."""
    path = os.path.join(directory, f"{schema}.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("CREATE TABLE executions (id TEXT PRIMARY KEY, definition_id TEXT NOT NULL, data TEXT NOT NULL, "
               "version INTEGER NOT NULL)")
    db.execute("CREATE INDEX x_definition ON executions (definition_id, id)")
    for sql in SCHEMAS[schema]:
        db.execute(sql)
    keys, cols = schema == "keys", schema == "cols"
    ids = [f"{i:032x}" for i in range(n)]
    start = time.perf_counter()
    for i in range(n):
        db.execute("BEGIN")
        if cols:
            db.execute("INSERT INTO executions VALUES (?, ?, ?, 1, 'RUNNING', 1, ?, ?, NULL, ?)",
                       (ids[i], f"def-{i % 5}", document(i, 0), 1000.0 + i, 2000.0 + i * 100, "root.work.s00"))
        else:
            db.execute("INSERT INTO executions VALUES (?, ?, ?, 1)", (ids[i], f"def-{i % 5}", document(i, 0)))
        if keys:
            db.execute("INSERT INTO keys VALUES (?, ?, 'RUNNING', 1, ?, ?, NULL, ?)",
                       (ids[i], f"def-{i % 5}", 1000.0 + i, 2000.0 + i * 100, "root.work.s00"))
        db.execute("COMMIT")
    inserts = n / (time.perf_counter() - start)
    start = time.perf_counter()
    for r in range(1, k + 1):
        for i in range(n):
            data = document(i, r)
            db.execute("BEGIN")
            if cols:
                db.execute("UPDATE executions SET data = ?, version = ?, updated = ?, path = ? "
                           "WHERE id = ? AND version = ?",
                           (data, r + 1, 2000.0 + i * 100 + r, f"root.work.s{r:02d}", ids[i], r))
            else:
                db.execute("UPDATE executions SET data = ?, version = ? WHERE id = ? AND version = ?",
                           (data, r + 1, ids[i], r))
            if keys:
                db.execute("UPDATE keys SET updated = ?, path = ? WHERE id = ?",
                           (2000.0 + i * 100 + r, f"root.work.s{r:02d}", ids[i]))
            db.execute("COMMIT")
    steps = n * k / (time.perf_counter() - start)
    db.close()
    return inserts, steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--executions", type=int, default=2000)
    ap.add_argument("--events", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    if min(a.executions, a.events, a.rounds) < 1:
        ap.error("--executions, --events and --rounds must be positive")
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in SCHEMAS}
    with tempfile.TemporaryDirectory() as directory:
        for _ in range(a.rounds):
            for name in SCHEMAS:
                results[name].append(run(name, a.executions, a.events, directory))
    print(f"SQLite {sqlite3.sqlite_version}, {a.executions} executions x {a.events} steps, "
          f"medians of {a.rounds} alternating rounds; x = over m12")
    base = [statistics.median(x[i] for x in results["m12"]) for i in (0, 1)]
    for name, runs in results.items():
        inserts, steps = (statistics.median(x[i] for x in runs) for i in (0, 1))
        print(f"{name:5} inserts/s {inserts:8.0f} ({inserts / base[0]:.2f}x)   steps/s {steps:8.0f} "
              f"({steps / base[1]:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
