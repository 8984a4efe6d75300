#!/usr/bin/env python3
"""Workload W1 on harel 0.9's own SqliteStore, printed as one JSON line.

The peer of `execstore bench` in `bench/compare`: the same deterministic calls
(../shared/bench/WORKLOAD.md from the repository's root, "W1") driven through the real
`harel.engine.store.SqliteStore` (prefix "harel", create_schema=True) with
harel's own models (`Execution`, `Event`, `TimerOp`). Written from the spec, so
that a figure it prints is what harel itself costs on this workload.

Run it with a Python that has harel==0.9.0 (bench/compare uses the project's
venv, the one scripts/test makes):

    python bench/harel_w1.py --executions 2000 --events 20 --synchronous normal

Flags are those of `execstore bench` where they apply: --db, --executions,
--events, --trace, --synchronous, --seed. The JSON keys and their order are
the spec's (§7): the required keys, then the extras (configuration echo and
the cross-checks compare uses to confirm both peers ran the same workload).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from typing import Callable, Optional

from harel.engine.execution import Execution, Status
from harel.engine.store import SqliteStore, TimerOp
from harel.engine.store._base import _encode_offset
from harel.spec.states import Event

PREFIX = "harel"
TRACE_MAX = 200  # WORKLOAD.md §1: harel's DEFAULT_TRACE_MAX
PAGE = 100  # list_executions page size
DUE_NOW = 1e12  # due_timers(now)
MEDIAN_OF = 5  # repeats of the median-timed phases
MASK = (1 << 64) - 1
TIMER_PATH = "root.work.timeout"


# --- generation primitives (WORKLOAD.md §3) -------------------------------------------------


def splitmix64(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def exe_id(seed: int, i: int) -> str:
    base = ((seed << 32) + 2 * i) & MASK
    return f"{splitmix64(base):016x}{splitmix64((base + 1) & MASK):016x}"


def def_index(i: int) -> int:
    return (i // 5) % 5


def ctx_value(i: int, j: int, g: int) -> str:
    u = f"e{i:08d}-k{j:02d}-g{g:05d}-"
    return u + u


def in_event_id(r: int, i: int) -> str:
    return f"{r:08x}{i:016x}00000000"


def out_event_id(r: int, i: int) -> str:
    return f"{r:08x}{i:016x}00000001"


def round_keys(r: int) -> list[int]:
    """The three context keys (as numbers j) round r updates, in update order."""
    return [((3 * (r - 1) + t) % 19) + 1 for t in range(3)]


def new_execution(ids: list[str], i: int) -> Execution:
    """Execution i as phase 0 builds it (version 0; `save` stores version 1). `ids` are the
    execution ids, exe_id(S, 0 .. N-1)."""
    d = def_index(i)
    context: dict = {"counter": 0}
    for j in range(1, 20):
        context[f"f{j:02d}"] = ctx_value(i, j, 0)
    return Execution(
        id=ids[i],
        definition_id=f"def-{d}",
        definition_fqn=f"bench.definitions.Workflow{d}",
        root_path="",
        status=Status.RUNNING,
        outcome=None,
        error=None,
        active_path="root.work.s00",
        history={},
        context=context,
        processed_events=0,
        version=0,
        priority=0,
        parent_id=ids[i - 1] if i % 5 == 4 else None,
        child_id=None,
        deferred=[],
        children={},
        invoke_seq={},
        created_at=None,
        updated_at=None,
        finished_at=None,
        expires_at=None,
    )


def event_step(store: SqliteStore, eid: str, r: int, k: int, i: int, trace_on: bool) -> None:
    """One step of phase 1 on execution i (id `eid`): load, dedupe check, mutate, commit with
    all effects."""
    exe = store.load(eid)
    if exe is None:
        raise SystemExit(f"harel_w1: execution {i} ({eid}) is missing in round {r}")
    processed = in_event_id(r, i)
    if store.is_processed(eid, processed):
        raise SystemExit(f"harel_w1: event {processed} already processed (W1 never repeats one)")

    old = exe.active_path
    new = f"root.work.s{r:02d}"
    exe.history[f"root.work.h{r:02d}"] = new
    exe.active_path = new
    context_out = {}
    for j in round_keys(r):
        key = f"f{j:02d}"
        value = ctx_value(i, j, r)
        exe.context[key] = value
        context_out[key] = value
    exe.context["counter"] += 1
    exe.processed_events += 1
    if r == k and i % 2 == 1:
        exe.status = Status.DONE

    event = Event(
        id=out_event_id(r, i),
        kind="progress",
        created_time=None,
        received_time=None,
        data={"round": r, "counter": exe.context["counter"], "path": new},
    )
    if r % 2 == 0:
        timer = TimerOp("schedule", TIMER_PATH, 1700000000.0 + 1000.0 * r + (i % 1000))
        action = "schedule"
    else:
        timer = TimerOp("cancel", TIMER_PATH)
        action = "cancel"
    spawns: tuple = ()
    if r % 10 == 0:
        spawns = ((f"{eid}-r{r:04d}", "root.fork.region", {"parent_id": eid, "round": r}),)
    trace: Optional[dict] = None
    if trace_on:
        trace = {
            "event": "tick",
            "round": r,
            "transition": f"{old} -> {new}",
            "actions": ["assign", "emit:progress", f"timer:{action}"],
            "context_out": context_out,
        }
    store.commit(exe, [(eid, event)], processed_event_id=processed, timers=(timer,), spawns=spawns, trace=trace)


# --- helpers --------------------------------------------------------------------------------


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    """(seconds, result) of one call, on the monotonic high-resolution clock."""
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def median_ms(fn: Callable[[], object]) -> tuple[float, object]:
    """Median over MEDIAN_OF calls, in ms, and the last call's result."""
    times, result = [], None
    for _ in range(MEDIAN_OF):
        dt, result = timed(fn)
        times.append(dt)
    return statistics.median(times) * 1000.0, result


def offset_cursor(offset: int) -> str:
    """WORKLOAD.md §6: standard padded base64 of the decimal ASCII text of the offset."""
    return base64.b64encode(str(offset).encode("ascii")).decode("ascii")


def harel_version() -> str:
    return importlib.metadata.version("harel")


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="harel_w1.py",
        description="Workload W1 (WORKLOAD.md) on harel 0.9's SqliteStore; prints one JSON line.",
    )
    p.add_argument("--db", help="database file; must not exist yet (nor PATH-wal, PATH-shm). "
                                "Default: a fresh temp file, deleted after the run")
    p.add_argument("--executions", type=int, default=2000, metavar="N")
    p.add_argument("--events", type=int, default=20, metavar="K", help="rounds (events per execution)")
    p.add_argument("--trace", choices=("on", "off"), default="on")
    p.add_argument("--synchronous", choices=("full", "normal", "off"), default=None,
                   help="PRAGMA synchronous on the store's connection (default: not set)")
    p.add_argument("--seed", type=int, default=1, metavar="S", help="0 <= S < 2^32")
    a = p.parse_args(argv)
    if a.executions < 1:
        p.error("--executions must be at least 1")
    if a.events < 0:
        p.error("--events must not be negative")
    if not 0 <= a.seed < 2**32:
        p.error("--seed must be in 0 .. 2^32-1")
    if a.db is not None:
        for path in (a.db, a.db + "-wal", a.db + "-shm"):
            if os.path.exists(path):
                p.error(f"--db: {path} already exists (W1 needs a fresh database)")
    return a


# --- the workload ---------------------------------------------------------------------------


def run(a: argparse.Namespace, db: str) -> dict:
    n, k, seed, trace_on = a.executions, a.events, a.seed, a.trace == "on"

    ids = [exe_id(seed, i) for i in range(n)]  # once, like any driver keeps its ids

    wall0 = time.perf_counter()
    store = SqliteStore(db, prefix=PREFIX, create_schema=True)
    if store.trace_max != TRACE_MAX:
        raise SystemExit(f"harel_w1: harel's trace_max is {store.trace_max}, W1 expects {TRACE_MAX}")
    if a.synchronous is not None:
        # harel has no option for it: the pragma goes on the store's own connection
        store._conn.execute(f"PRAGMA synchronous={a.synchronous.upper()}")

    # phase 0: create
    def create() -> None:
        for i in range(n):
            store.save(new_execution(ids, i))

    create_s, _ = timed(create)

    # phase 1: K rounds of event steps
    def rounds() -> None:
        for r in range(1, k + 1):
            for i in range(n):
                event_step(store, ids[i], r, k, i, trace_on)

    commit_s, _ = timed(rounds)

    # list_all_pages_ms: one full pass of RUNNING roots
    def list_all() -> tuple[int, int]:
        cursor, rows, pages = None, 0, 0
        while True:
            page = store.list_executions(status=[Status.RUNNING], roots_only=True, limit=PAGE, cursor=cursor)
            rows += len(page.items)
            pages += 1
            cursor = page.next_cursor
            if cursor is None:
                return rows, pages

    list_all_s, (list_rows, list_pages) = timed(list_all)

    # list_mid_page_ms: the page at offset (P div 2) * 100
    mid_cursor = offset_cursor((list_pages // 2) * PAGE)
    if _encode_offset((list_pages // 2) * PAGE) != mid_cursor:
        raise SystemExit("harel_w1: harel's cursor encoder disagrees with WORKLOAD.md §6")
    list_mid_ms, _ = median_ms(
        lambda: store.list_executions(status=[Status.RUNNING], roots_only=True, limit=PAGE, cursor=mid_cursor)
    )

    # due_timers_ms
    due_ms, due = median_ms(lambda: store.due_timers(DUE_NOW))

    # outbox_drain_acks_per_s: one pending read, then one ack (DELETE + COMMIT) per entry
    def drain() -> int:
        entries = store.pending_outbox()
        for e in entries:
            store.ack_outbox(e.seq)
        return len(entries)

    drain_s, acked = timed(drain)

    # read_trace_100_ms: one pass over the first min(100, N) executions
    trace_ids = ids[: min(100, n)]
    read_trace_ms, trace_rows = median_ms(lambda: sum(len(store.read_trace(x)) for x in trace_ids))

    # outside all timings (the phases above change no execution): the stored text of execution 0
    row = store._conn.execute(f"SELECT data FROM {PREFIX}_executions WHERE id = ?", (ids[0],)).fetchone()
    exe0_sha = hashlib.sha256(row[0].encode("utf-8")).hexdigest()

    # db_bytes: after close (the last connection's close checkpoints and removes -wal)
    store.close()
    wall_s = time.perf_counter() - wall0
    db_bytes = os.path.getsize(db)
    wal = db + "-wal"
    wal_bytes = os.path.getsize(wal) if os.path.exists(wal) else 0

    return {
        "impl": f"harel-{harel_version()}-sqlitestore",
        "executions": n,
        "events": k,
        "commit_events_per_s": round(n * k / commit_s, 1) if commit_s > 0 else None,
        "list_all_pages_ms": round(list_all_s * 1000.0, 3),
        "list_mid_page_ms": round(list_mid_ms, 3),
        "due_timers_ms": round(due_ms, 3),
        "outbox_drain_acks_per_s": round(acked / drain_s, 1) if drain_s > 0 else None,
        "read_trace_100_ms": round(read_trace_ms, 3),
        "db_bytes": db_bytes,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        # extras
        "trace": trace_on,
        "synchronous": a.synchronous,
        "seed": seed,
        "create_saves_per_s": round(n / create_s, 1) if create_s > 0 else None,
        "list_rows": list_rows,
        "list_pages": list_pages,
        "due_timers_rows": len(due),
        "outbox_acked": acked,
        "read_trace_rows": trace_rows,
        "wal_bytes_after_close": wal_bytes,
        "exe0_data_sha256": exe0_sha,
        "wall_s": round(wall_s, 3),
    }


def main(argv: list[str]) -> int:
    a = parse_args(argv)
    if a.db is not None:
        out = run(a, a.db)
    else:
        tmp = tempfile.mkdtemp(prefix="harel_w1-")
        try:
            out = run(a, os.path.join(tmp, "w1.db"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
