"""Workload W2 (bench/W2.md) on reflexr 0.1.1's own SqlStorage over SQLite: one JSON line.

Run with the reflexr venv's Python (scripts/lib/reflexr.sh makes it):

    python bench/reflexr_w2.py --db /tmp/w2.db [--synchronous normal] [--wal] [--workspaces 4] ...

The same deterministic calls as `execstore bench --workload w2`, so both write the same rows
(`w0_log_sha256` matches). `--wal` puts the file in WAL mode as execstore does (reflexr's
engine leaves SQLite's default rollback journal); `--synchronous` sets PRAGMA synchronous.
"""

import argparse
import asyncio
import hashlib
import json
import sys
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import event

from reflexr.core import Event, Run
from reflexr.core.actors import SourceActor
from reflexr.sql import SqlStorage, create_sqlite_engine, migrate
from reflexr.workspace import Entry, RunPolicy, WorkspaceRef, run_lease

T0 = datetime(2026, 1, 1, tzinfo=UTC)
KINDS = ["error", "deploy", "heartbeat", "metric"]
STATUSES = ["pending"] * 4 + ["retrying", "running"] + ["succeeded"] * 3 + ["dead"]


class Bench(Event, abstract=True, event_namespace="bench"):
    pass


class Error(Bench, name="error"):
    service: str
    severity: int
    n: int


class Deploy(Bench, name="deploy"):
    service: str
    severity: int
    n: int


class Heartbeat(Bench, name="heartbeat"):
    service: str
    severity: int
    n: int


class Metric(Bench, name="metric"):
    service: str
    severity: int
    n: int


EVENT_TYPES = [Error, Deploy, Heartbeat, Metric]


class CountingClock:
    """T0, then 1 ms more at every call."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> datetime:
        now = T0 + timedelta(milliseconds=self.calls)
        self.calls += 1
        return now


def workspace(w: int) -> WorkspaceRef:
    return WorkspaceRef(f"t{w % 2}", f"w{w}")


def entry(event_id: str, i: int) -> Entry:
    kind = EVENT_TYPES[i % 4]
    return Entry(
        id=event_id,
        actor=SourceActor(name="bench"),
        event=kind(service=f"svc-{i % 17}", severity=i % 10, n=i),
    )


def bench_run(w: int, j: int) -> Run:
    run_id = f"w{w}-r{j:07d}"
    scope_key = f"s{(j // 10) % 100}"
    return Run(
        id=run_id,
        rule=f"bench:r{j % 10}",
        scope_key=scope_key,
        scope={"s": scope_key},
        fired_seq=j + 1,
        matched=(j + 1,),
        correlation_id=run_id,
        depth=0,
        status=STATUSES[(j // 7) % 10],
        next_attempt_at=T0 + timedelta(seconds=j % 3600),
        created_at=T0,
        updated_at=T0,
    )


def per_s(n: int, t: float) -> float:
    return round(n / max(t, 1e-9))


def ms(t: float, n: int) -> float:
    return round(t * 1000 / max(n, 1), 3)


def percentile(values: list[int], p: float) -> int | None:
    if not values:
        return None
    values = sorted(values)
    return values[round((len(values) - 1) * p)]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--workspaces", type=int, default=4)
    parser.add_argument("--w2-events", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--runs", type=int, default=100000)
    parser.add_argument("--reads", type=int, default=200)
    parser.add_argument("--due-calls", type=int, default=50)
    parser.add_argument("--subscribe-events", type=int, default=200)
    parser.add_argument("--synchronous", choices=["full", "normal", "off"])
    parser.add_argument("--wal", action="store_true")
    a = parser.parse_args()

    engine = create_sqlite_engine(f"sqlite+aiosqlite:///{a.db}")

    def pragmas(dbapi_connection, _record):  # noqa: ANN001
        cursor = dbapi_connection.cursor()
        if a.wal:
            cursor.execute("PRAGMA journal_mode=WAL")
        if a.synchronous:
            cursor.execute(f"PRAGMA synchronous={a.synchronous.upper()}")
        cursor.close()

    event.listen(engine.sync_engine, "connect", pragmas)
    await migrate(engine)
    storage = SqlStorage(engine, clock=CountingClock(), poll_interval=timedelta(seconds=0.5))
    out: dict[str, object] = {
        "impl": "reflexr-0.1.1-sqlstorage",
        "backend": "sqlite",
        "workspaces": a.workspaces,
        "events": a.w2_events,
        "batch": a.batch,
        "runs": a.runs,
    }
    W, E, B = a.workspaces, a.w2_events, a.batch

    started = time.perf_counter()
    for r in range(E // B):
        for w in range(W):
            entries = [entry(f"w{w}-e{i:08d}", i) for i in range(r * B, (r + 1) * B)]
            async with storage.transaction(workspace(w)) as tx:
                await tx.append(entries)
    t = time.perf_counter() - started
    out["appends_per_s"] = per_s(W * E, t)
    out["append_tx_per_s"] = per_s(W * E // B, t)
    digest = hashlib.sha256()
    for envelope in await storage.read(workspace(0)):
        digest.update(json.dumps(envelope.model_dump(mode="json")).encode())
        digest.update(b"\n")
    out["w0_log_sha256"] = digest.hexdigest()
    heads = [await storage.head_seq(workspace(w)) for w in range(W)]

    times = [0.0, 0.0, 0.0]
    for q in range(a.reads):
        ref = workspace(q % W)
        calls = [
            (dict(last=100), 100),
            (dict(types=["bench:deploy"], last=50), 50),
            (dict(after_seq=E // 2, limit=100), 100),
        ]
        for k, (kwargs, want) in enumerate(calls):
            s = time.perf_counter()
            got = await storage.read(ref, **kwargs)
            times[k] += time.perf_counter() - s
            assert len(got) == min(want, E), (k, len(got))
    out["tail_read_ms"] = ms(times[0], a.reads)
    out["typed_tail_read_ms"] = ms(times[1], a.reads)
    out["window_read_ms"] = ms(times[2], a.reads)

    per_ws = a.runs // W
    started = time.perf_counter()
    for w in range(W):
        for c in range(0, per_ws, 1000):
            runs = [bench_run(w, j) for j in range(c, min(c + 1000, per_ws))]
            async with storage.transaction(workspace(w)) as tx:
                await tx.save_runs(runs)
        for j in range(per_ws):
            if STATUSES[(j // 7) % 10] == "running" and j % 2 == 0:
                await storage.acquire_lease(
                    workspace(w), run_lease(f"w{w}-r{j:07d}"), "bench", timedelta(seconds=3600)
                )
    out["runs_saved_per_s"] = per_s(a.runs, time.perf_counter() - started)

    policy = RunPolicy(
        ordered=frozenset(f"bench:r{i}" for i in range(5)),
        blocking=frozenset({"bench:r0", "bench:r1"}),
        disabled=frozenset({"bench:r9"}),
    )
    now = T0 + timedelta(seconds=1800)
    started = time.perf_counter()
    due_rows = 0
    for d in range(a.due_calls):
        due = await storage.due_runs(now=now, limit=100, policy=policy)
        if d == 0:
            due_rows = len(due)
    out["due_runs_ms"] = ms(time.perf_counter() - started, a.due_calls)
    out["due_rows"] = due_rows

    ref0 = workspace(0)
    head = await storage.head_seq(ref0)
    received: list[float] = []
    sent: list[float] = []

    async def follow() -> None:
        async for _envelope in storage.subscribe(ref0, after_seq=head):
            received.append(time.perf_counter())
            if len(received) == a.subscribe_events:
                return

    follower = asyncio.create_task(follow())
    await asyncio.sleep(0.05)
    for k in range(a.subscribe_events):
        async with storage.transaction(ref0) as tx:
            await tx.append([entry(f"sub-{k:06d}", k)])
        sent.append(time.perf_counter())
        await asyncio.sleep(0.002)
    await asyncio.wait_for(follower, 120)
    lat = [round((r - s) * 1e6) for s, r in zip(sent, received)]
    out["subscribe_p50_us"] = percentile(lat, 0.5)
    out["subscribe_p99_us"] = percentile(lat, 0.99)
    out["subscribe_xproc_p50_us"] = None
    out["head_seqs"] = heads
    await engine.dispose()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
