"""harel 0.9's engine on harel's own SqliteStore and on execstore.harel.SqliteStore, side by side.

    python bench/harel_engine_bench.py [--executions N] [--events K] [--listing 100000] [--dir D]

Two measurements, each on a fresh SQLite file per store (harel's prefix "harel"):

- engine: `DurableRunner(execution="inline")` creates N executions of a small chart (harel's
  DSL: a loop state counting `Tick`s, a durable timeout) and feeds each K `Tick` events, then
  fires the timers; events/s end to end (create + events + timer firings, every step one
  commit), on each store.
- listing: a store holding `--listing` executions (seeded once, in bulk, through harel's
  tables, then copied for each store); the time to page through all of them (`limit=1000`),
  to read the first page of a filtered query, and a page deep in the listing.

Prints one JSON object: per-store numbers and the ratios (execstore / harel: above 1 means
execstore is faster for rates, below 1 means it is faster for times).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from harel.dsl import definition_from_dsl
from harel.engine.durable import DurableRunner
from harel.engine.execution import Execution, Status
from harel.engine.store import SqliteStore as HarelSqliteStore
from harel.spec.states import Event

from execstore.harel import SqliteStore as ExecstoreSqliteStore

CHART = """
machine counter {
  initial counting
  state counting {
    timeout 30
  }
  from counting to counting on Tick set context.n = context.n + 1
  from counting to done on Timeout
  final done success
}
"""

STORES: dict[str, Callable[[Path], Any]] = {
    "harel": lambda p: HarelSqliteStore(p),
    "execstore": lambda p: ExecstoreSqliteStore(p),
}


def engine(make: Callable[[Path], Any], path: Path, executions: int, events: int) -> dict[str, float]:
    store = make(path)
    now = [1_700_000_000.0]
    runner = DurableRunner(store, {"counter": definition_from_dsl(CHART)}, clock=lambda: now[0], execution="inline")
    t0 = time.perf_counter()
    ids = [runner.create("counter", {"n": 0}, execution_id=f"c-{i:06}").id for i in range(executions)]
    for k in range(events):
        for eid in ids:
            runner.process(eid, Event(id=f"{eid}-t{k}", kind="Tick"))
    now[0] += 60
    fired = runner.fire_due_timers()
    elapsed = time.perf_counter() - t0
    steps = executions + executions * events + fired
    last = store.load(ids[-1])
    assert last is not None and last.status == Status.DONE and last.context["n"] == events, last
    store.close()
    return {"steps": steps, "seconds": round(elapsed, 3), "steps_per_s": round(steps / elapsed, 1)}


def seed(path: Path, n: int) -> None:
    HarelSqliteStore(path).close()  # harel's tables
    conn = sqlite3.connect(path)
    statuses = [Status.RUNNING, Status.DONE, Status.FAILED, Status.SUSPENDED]
    rows = []
    for i in range(n):
        exe = Execution(
            id=f"e-{i:07}",
            definition_id=f"d{i % 5}",
            status=statuses[i % 4],
            active_path="a.b",
            context={"i": i, "payload": "x" * 200},
            version=1,
            parent_id=None if i % 10 else f"e-{i - 1:07}",
        )
        rows.append((exe.id, exe.definition_id, exe.model_dump_json(), 1))
    conn.executemany("INSERT INTO harel_executions (id, definition_id, data, version) VALUES (?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()


def listing(make: Callable[[Path], Any], path: Path, n: int) -> dict[str, float]:
    store = make(path)
    store.list_executions(limit=1)  # warm
    t0 = time.perf_counter()
    seen, cursor = 0, None
    while True:
        page = store.list_executions(limit=1000, cursor=cursor)
        seen += len(page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
    full = time.perf_counter() - t0
    assert seen == n, seen
    t0 = time.perf_counter()
    for _ in range(20):
        page = store.list_executions(status=[Status.FAILED], definition_id="d2", roots_only=True, limit=100)
    filtered = (time.perf_counter() - t0) / 20
    # a page deep in the listing: follow the cursors to 90% of the way, then time one page
    cursor, got = None, 0
    while got < int(n * 0.9):
        page = store.list_executions(limit=1000, cursor=cursor)
        got += len(page.items)
        cursor = page.next_cursor
    t0 = time.perf_counter()
    for _ in range(20):
        store.list_executions(limit=100, cursor=cursor)
    deep = (time.perf_counter() - t0) / 20
    store.close()
    return {
        "full_scan_s": round(full, 4),
        "filtered_first_page_ms": round(filtered * 1000, 3),
        "deep_page_ms": round(deep * 1000, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--executions", type=int, default=200)
    ap.add_argument("--events", type=int, default=10)
    ap.add_argument("--listing", type=int, default=100_000)
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="harel-engine-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"executions": args.executions, "events": args.events, "listing_n": args.listing}
    for name, make in STORES.items():
        out.setdefault("engine", {})[name] = engine(make, base / f"engine-{name}.db", args.executions, args.events)
    if args.listing:
        seeded = base / "seed.db"
        seed(seeded, args.listing)
        for name, make in STORES.items():
            path = base / f"listing-{name}.db"
            shutil.copy(seeded, path)
            out.setdefault("listing", {})[name] = listing(make, path, args.listing)
    e = out["engine"]
    out["ratios"] = {"engine_steps_per_s": round(e["execstore"]["steps_per_s"] / e["harel"]["steps_per_s"], 2)}
    if args.listing:
        h, x = out["listing"]["harel"], out["listing"]["execstore"]
        out["ratios"].update({k: round(h[k] / x[k], 2) for k in h})  # harel's time / execstore's: >1 = faster
    if args.dir is None:
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
