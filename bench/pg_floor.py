#!/usr/bin/env python3
"""bench/pg_floor.py: how fast a W1 step can go on a PostgreSQL server, whatever the store.

    python bench/pg_floor.py [--db URL] [--executions N] [--events K] [--seconds S]
                             [--repeat R] [--execstore BIN] [--baseline BIN] [--pgbench PATH]

A W1 event step (../shared/bench/WORKLOAD.md, relative to the repository's root) is three
calls that each wait for the server: `load`, `is_processed`, and the commit, which waits for
the server's WAL flush too. This program measures the fastest any client could make them:
pgbench (PostgreSQL's own C client, prepared statements, one connection) runs

  floor-3-calls   the two reads, then the whole step's writes as ONE statement (data-modifying
                  CTEs: the CAS update of a W1-sized row on the version the load read, the
                  outbox insert, the dedupe insert, the timer upsert, the trace insert at
                  MAX(idx) + 1 and the ring delete of what is past harel's 200), autocommit
  floor-2-calls   the same with the two reads as one statement (what `load_for_event` does)

on harel 0.9's own tables (harel's `store_schema("postgres", ...)`, so no index but harel's
primary keys) under a unique prefix, dropped at the end. The floor does less than a store
must (no JSON to decode or encode, constant values, no listing index, its writes do not wait
on the CAS's outcome), so it is an upper bound on what a store can reach on this server: a
goal above it cannot be met by any implementation of the same calls. At the end it checks
that every floor step wrote (its CAS found the version it read, its outbox row exists).

With --execstore BIN, each round also runs `BIN bench --backend postgres` (W1 as specified,
then with `--event-read load-for-event`); with --baseline BIN, an older build's `bench` (W1 as
specified), e.g. the commit a speed goal is relative to. Rounds alternate all runs. Prints
each run's JSON line, then the medians, each as a multiple of the baseline's when given.

Needs psycopg 3 and harel 0.9 (the venv bench/compare-pg uses: $EXECSTORE_CACHE/harel-0.9.0,
default ~/.cache/execstore) and pgbench (--pgbench, else the one beside the newest Debian
server binaries, as the test command finds them, else the one on PATH). The server: --db or
$EXECSTORE_PG_URL.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from typing import Callable

import psycopg
from harel.engine.schema import Names, store_schema

# harel's DEFAULT_TRACE_MAX, W1's trace ring.
TRACE_MAX = 200

# pgbench reads `:name` in a script as a variable: the literals below must not hold one.
VARIABLE = re.compile(r":[A-Za-z0-9_]")


def w1_row(i: int, rounds: int) -> str:
    """An execution as W1 stores it after `rounds` steps: the same fields and sizes (about
    1.7 KB at K=10). The separators have a space after ':' (pgbench's variables)."""
    context = {"counter": rounds}
    for j in range(1, 20):
        u = f"e{i:08d}-k{j:02d}-g{rounds:05d}-"
        context[f"f{j:02d}"] = u + u
    exe = {
        "id": f"{i:032x}", "definition_id": "def-0", "definition_fqn": "bench.definitions.Workflow0",
        "root_path": "", "status": "RUNNING", "outcome": None, "error": None,
        "active_path": f"root.work.s{rounds:02d}",
        "history": {f"root.work.h{r:02d}": f"root.work.s{r:02d}" for r in range(1, rounds + 1)},
        "context": context, "processed_events": rounds, "version": rounds + 1, "priority": 0,
        "parent_id": None, "child_id": None, "deferred": [], "children": {}, "invoke_seq": {},
        "created_at": None, "updated_at": None, "finished_at": None, "expires_at": None,
    }
    return json.dumps(exe, separators=(",", ": "))


def literal(text: str) -> str:
    if VARIABLE.search(text):
        raise ValueError(f"a literal holds a pgbench variable: {VARIABLE.search(text).group()}")
    return "'" + text.replace("'", "''") + "'"


def scripts(names: Names, n: int, rounds: int) -> dict[str, str]:
    """The two pgbench scripts, keyed by run name, on harel's tables `names`."""
    t = {k: getattr(names, k) for k in ("executions", "outbox", "processed_events", "timers", "trace")}
    data = literal(w1_row(0, rounds))
    event = literal(json.dumps({"id": "0" * 32, "kind": "progress", "created_time": None, "received_time": None,
                                "data": {"round": 1, "counter": 1, "path": "root.work.s01"}}, separators=(",", ": ")))
    u = f"e{0:08d}-k01-g00001-"
    trace = literal(json.dumps({"event": "tick", "round": 1, "transition": "root.work.s00 -> root.work.s01",
                                "actions": ["assign", "emit progress", "timer schedule"],
                                "context_out": {f"f0{j}": u + u for j in (1, 2, 3)}}))
    exe = "('e' || :i::int)"
    head = f"\\set i random(1, {n})\n\\set ev random(1, 1000000000000)\n"
    load = f"SELECT data, version AS v FROM {t['executions']} WHERE id = {exe} \\gset\n"
    check = f"SELECT 1 FROM {t['processed_events']} WHERE execution_id = {exe} AND event_id = 'x' || :ev::bigint;\n"
    both = (f"SELECT data, version AS v, EXISTS (SELECT 1 FROM {t['processed_events']} WHERE execution_id = {exe} "
            f"AND event_id = 'x' || :ev::bigint) AS seen FROM {t['executions']} WHERE id = {exe} \\gset\n")
    step = (
        f"WITH u AS (UPDATE {t['executions']} SET data = {data}, version = :v + 1 WHERE id = {exe} AND version = :v "
        f"RETURNING id), "
        f"o AS (INSERT INTO {t['outbox']} (target_id, event) VALUES ({exe}, {event}) RETURNING seq), "
        f"p AS (INSERT INTO {t['processed_events']} VALUES ({exe}, 'p' || :ev::bigint) ON CONFLICT DO NOTHING), "
        f"m AS (INSERT INTO {t['timers']} VALUES ({exe}, 'root.work.timeout', :ev::float8) "
        f"ON CONFLICT (execution_id, path) DO UPDATE SET fire_at = EXCLUDED.fire_at), "
        f"r AS (INSERT INTO {t['trace']} SELECT {exe}, COALESCE(MAX(idx), -1) + 1, {trace} FROM {t['trace']} "
        f"WHERE execution_id = {exe}), "
        f"d AS (DELETE FROM {t['trace']} WHERE execution_id = {exe} AND idx <= "
        f"(SELECT MAX(idx) FROM {t['trace']} WHERE execution_id = {exe}) - {TRACE_MAX}) "
        f"SELECT (SELECT count(*) FROM u), (SELECT seq FROM o);\n"
    )
    return {"floor-3-calls": head + load + check + step, "floor-2-calls": head + both + step}


def find_pgbench(given: str | None) -> str:
    """`given`, else the pgbench beside the server binaries the test command uses
    (scripts/lib/postgres.sh's pg_bin_dir), else the one on PATH."""
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            sys.exit(f"pg_floor: --pgbench {given} is not an executable file")
        return given
    lib = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "lib", "postgres.sh")
    bin_dir = subprocess.run(["bash", "-c", '. "$1" && pg_bin_dir', "bash", lib],
                             capture_output=True, text=True).stdout.strip()
    found = os.path.join(bin_dir, "pgbench") if bin_dir else shutil.which("pgbench")
    if not found or not os.access(found, os.X_OK):
        sys.exit("pg_floor: no pgbench (Debian: the postgresql package); pass --pgbench PATH")
    return found


def pgbench(exe: str, url: str, script: str, seconds: int) -> tuple[float, int]:
    """Runs `script` for `seconds` on one connection: its steps per second and how many."""
    out = subprocess.run([exe, "-n", "-M", "prepared", "-c", "1", "-j", "1", "-T", str(seconds), "-f", script, url],
                         capture_output=True, text=True)
    tps = re.search(r"^tps = ([0-9.]+)", out.stdout, re.M)
    done = re.search(r"number of transactions actually processed: ([0-9]+)", out.stdout)
    failed = re.search(r"number of failed transactions: ([1-9][0-9]*)", out.stdout)
    if out.returncode != 0 or not tps or not done or failed:
        sys.exit(f"pg_floor: pgbench failed ({out.returncode}):\n{out.stdout}{out.stderr}")
    return float(tps.group(1)), int(done.group(1))


def store_bench(exe: str, url: str, n: int, k: int, extra: list[str]) -> tuple[float, int]:
    """Runs `exe bench --backend postgres` in tables of its own: its commit rate, and 0 (no
    step of it is in the floor's tables)."""
    out = subprocess.run([exe, "bench", "--backend", "postgres", "--db", url, "--executions", str(n),
                          "--events", str(k), *extra], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"pg_floor: {exe} bench failed ({out.returncode}):\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])["commit_events_per_s"], 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", default=os.environ.get("EXECSTORE_PG_URL"))
    ap.add_argument("--executions", type=int, default=500)
    ap.add_argument("--events", type=int, default=10, help="K: the row's size is W1's after K steps")
    ap.add_argument("--seconds", type=int, default=10, help="each pgbench run's length")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--execstore", help="an execstore binary: its `bench --backend postgres` runs too")
    ap.add_argument("--baseline", help="an older execstore binary, the figure goals are relative to")
    ap.add_argument("--pgbench")
    a = ap.parse_args()
    if not a.db or not re.match(r"postgres(ql)?://", a.db):
        ap.error("no server: pass --db postgres://USER@HOST:PORT/DATABASE or set EXECSTORE_PG_URL")
    if min(a.executions, a.events, a.seconds, a.repeat) < 1:
        ap.error("--executions, --events, --seconds and --repeat must be positive")
    exe = find_pgbench(a.pgbench)

    names = Names("floor_" + uuid.uuid4().hex[:8])
    results: dict[str, list[float]] = {}
    steps = 0
    with psycopg.connect(a.db, autocommit=True) as conn, tempfile.TemporaryDirectory() as tmp:
        try:
            for sql in store_schema("postgres", names.prefix):
                conn.execute(sql)
            conn.execute(f"INSERT INTO {names.executions} SELECT 'e' || g, 'def-0', %s, %s "
                         f"FROM generate_series(1, %s) g", (w1_row(0, a.events), a.events + 1, a.executions))
            conn.execute(f"ANALYZE {names.executions}")
            files = {}
            for name, text in scripts(names, a.executions, a.events).items():
                files[name] = os.path.join(tmp, name + ".sql")
                with open(files[name], "w", encoding="utf-8") as f:
                    f.write(text)
            for rnd in range(1, a.repeat + 1):
                runs: list[tuple[str, Callable[[], tuple[float, int]]]] = []
                if a.baseline:
                    runs.append(("baseline", lambda: store_bench(a.baseline, a.db, a.executions, a.events, [])))
                if a.execstore:
                    runs.append(("execstore", lambda: store_bench(a.execstore, a.db, a.executions, a.events, [])))
                    runs.append(("execstore-load-for-event", lambda: store_bench(
                        a.execstore, a.db, a.executions, a.events, ["--event-read", "load-for-event"])))
                for name, path in files.items():
                    runs.append((name, lambda path=path: pgbench(exe, a.db, path, a.seconds)))
                for name, run in runs:
                    rate, done = run()
                    steps += done
                    results.setdefault(name, []).append(rate)
                    print(json.dumps({"run": name, "round": rnd, "events_per_s": round(rate, 1)}), flush=True)
            # Every floor step must have written: its CAS found the version it read.
            (moved,) = conn.execute(f"SELECT sum(version) - %s FROM {names.executions}",
                                    (a.executions * (a.events + 1),)).fetchone()
            (emitted,) = conn.execute(f"SELECT count(*) FROM {names.outbox}").fetchone()
            if moved != steps or emitted != steps:
                sys.exit(f"pg_floor: {steps} floor steps ran, but {moved} versions moved and {emitted} "
                         "outbox rows exist: a step did not write")
        finally:
            for table in ("executions", "outbox", "processed_events", "timers", "spawns", "trace"):
                conn.execute(f"DROP TABLE IF EXISTS {getattr(names, table)}")
            conn.execute(f"DROP FUNCTION IF EXISTS {names.commit_cas}(text, text, text, bigint, text)")

    base = statistics.median(results["baseline"]) if "baseline" in results else None
    print(f"\nW1 event steps per second, one client, N={a.executions} K={a.events}, "
          f"median of {a.repeat}" + ("; x = over the baseline" if base else ""))
    for name, rates in results.items():
        m = statistics.median(rates)
        print(f"{name:26} {m:9.1f}/s  {1e6 / m:7.1f} us" + (f"  {m / base:5.2f}x" if base else "")
              + f"   ({min(rates):.1f}..{max(rates):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
