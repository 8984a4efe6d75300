"""Messages per second through harel 0.9's own SqliteTransport and execstore.harel's, in one run,
side by side: send N (publish), then receive N (claim + ack), on a fresh file each, in the
same directory, alternating which goes first. Sync by default; `--async` adds harel's
AsyncSqliteTransport (aiosqlite) against execstore.harel.AsyncSqliteTransport; `--pg URL` adds
harel's PostgresTransport (psycopg) against execstore.harel.PostgresTransport on that server
(fresh tables under a unique prefix per run, dropped after).

    python bench/transport.py [--messages N] [--groups G] [--repeat R] [--async] [--pg URL] [--json]

Run it with a Python that has harel 0.9.0 and the execstore wheel installed (build the wheel
with EXECSTORE_WHEEL_PROFILE=release; see bench/README.md). Both transports run at their
defaults: WAL, synchronous FULL (every transaction waits for an fsync). Each run checks that
every message came out once, in its group's order, and that the transport is empty after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from harel.spec.states import Event


def _events(n: int, groups: int) -> list[tuple[str, Event]]:
    return [(f"exe-{i % groups}", Event(id=f"evt-{i}", kind="Tick", data={"i": i})) for i in range(n)]


def _check(received: list[tuple[str, int]], n: int, groups: int) -> None:
    if len(received) != n:
        raise SystemExit(f"received {len(received)} of {n} messages")
    last: dict[str, int] = {}
    for group, i in received:
        if last.get(group, -1) >= i:
            raise SystemExit(f"{group}: message {i} out of order")
        last[group] = i


def run_sync(make: Callable[[Path], Any], path: Path, n: int, groups: int) -> dict[str, float]:
    events = _events(n, groups)
    t = make(path)
    start = time.perf_counter()
    for group, event in events:
        t.publish(group, event)
    sent = time.perf_counter() - start
    received: list[tuple[str, int]] = []
    start = time.perf_counter()
    while True:
        lease = t.claim("bench", 30.0)
        if lease is None:
            break
        received.append((lease.group_id, lease.event.data["i"]))
        t.ack(lease)
    got = time.perf_counter() - start
    if t.claim("bench", 30.0) is not None:
        raise SystemExit("the transport is not empty")
    t.close()
    _check(received, n, groups)
    return {"send_per_s": n / sent, "receive_per_s": n / got, "round_trip_per_s": n / (sent + got)}


async def run_async(make: Callable[[Path], Any], path: Path, n: int, groups: int) -> dict[str, float]:
    events = _events(n, groups)
    t = await make(path)
    start = time.perf_counter()
    for group, event in events:
        await t.publish(group, event)
    sent = time.perf_counter() - start
    received: list[tuple[str, int]] = []
    start = time.perf_counter()
    while True:
        lease = await t.claim("bench", 30.0)
        if lease is None:
            break
        received.append((lease.group_id, lease.event.data["i"]))
        await t.ack(lease)
    got = time.perf_counter() - start
    await t.close()
    _check(received, n, groups)
    return {"send_per_s": n / sent, "receive_per_s": n / got, "round_trip_per_s": n / (sent + got)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--messages", type=int, default=2000, help="N messages per run (default 2000)")
    p.add_argument("--groups", type=int, default=100, help="spread over G groups (default 100)")
    p.add_argument("--repeat", type=int, default=3, help="rounds; medians are reported (default 3)")
    p.add_argument("--async", dest="run_async", action="store_true", help="also the async transports")
    p.add_argument(
        "--synchronous",
        choices=["full", "normal"],
        default="full",
        help="SQLite's PRAGMA synchronous on both sides (harel's: set on its connection; default full)",
    )
    p.add_argument("--pg", metavar="URL", default=None, help="also the PostgreSQL transports, on this server")
    p.add_argument("--dir", type=Path, default=None, help="where the files go (default: a temp dir)")
    p.add_argument("--json", action="store_true", help="one JSON line per run, then the summary as JSON")
    a = p.parse_args()
    if a.messages < 1 or a.groups < 1 or a.repeat < 1:
        p.error("--messages, --groups and --repeat must be at least 1")

    from harel.engine.transport import SqliteTransport as HarelSync

    from execstore.harel import AsyncSqliteTransport as OursAsync
    from execstore.harel import SqliteTransport as OursSync

    sync_level = a.synchronous

    def harel_sync(path: Path) -> Any:
        t = HarelSync(path)
        t._conn.execute(f"PRAGMA synchronous={sync_level}")  # harel has no option for it
        return t

    sides: dict[str, tuple[str, Callable[[Path], Any]]] = {
        "harel": ("sync", harel_sync),
        "execstore": ("sync", lambda path: OursSync(path, synchronous=sync_level)),
    }
    if a.run_async:
        from harel.engine.aio_transport import AsyncSqliteTransport as HarelAsync

        async def harel_async(path: Path) -> Any:
            t = await HarelAsync.create(str(path))
            await t._conn.execute(f"PRAGMA synchronous={sync_level}")
            return t

        sides["harel-async"] = ("async", harel_async)
        sides["execstore-async"] = ("async", lambda path: OursAsync.create(path, synchronous=sync_level))

    made: list[str] = []
    if a.pg:
        import uuid

        import psycopg
        from harel.engine.transport import PostgresTransport as HarelPg

        from execstore.harel import PostgresTransport as OursPg

        def fresh() -> str:
            made.append("b" + uuid.uuid4().hex[:12])
            return made[-1]

        sides["harel-pg"] = ("sync", lambda _path: HarelPg(psycopg.connect(a.pg), prefix=fresh()))
        sides["execstore-pg"] = ("sync", lambda _path: OursPg(a.pg, prefix=fresh()))

    results: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        for r in range(a.repeat):
            names = list(sides) if r % 2 == 0 else list(reversed(sides))
            for name in names:
                kind, make = sides[name]
                path = Path(tmp) / f"{name}-{r}.db"
                if kind == "sync":
                    res = run_sync(make, path, a.messages, a.groups)
                else:
                    res = asyncio.run(run_async(make, path, a.messages, a.groups))
                results[name].append(res)
                if a.json:
                    print(json.dumps({"impl": name, "round": r, "messages": a.messages, "groups": a.groups, **res}), flush=True)

    if made:
        from execstore._core import HarelTransport

        for prefix in made:
            HarelTransport.drop_postgres(a.pg, prefix)

    keys = ["send_per_s", "receive_per_s", "round_trip_per_s"]
    med = {name: {k: statistics.median(x[k] for x in runs) for k in keys} for name, runs in results.items()}
    pairs = [("execstore", "harel")] + ([("execstore-async", "harel-async")] if a.run_async else [])
    pairs += [("execstore-pg", "harel-pg")] if a.pg else []
    summary = {
        "messages": a.messages,
        "groups": a.groups,
        "repeat": a.repeat,
        "synchronous": a.synchronous,
        "medians": med,
        "ratios": {f"{ours}/{theirs}": {k: med[ours][k] / med[theirs][k] for k in keys} for ours, theirs in pairs},
    }
    if a.json:
        print(json.dumps(summary))
        return
    print(f"{a.messages} messages over {a.groups} groups, {a.repeat} rounds, synchronous {a.synchronous}, medians (messages/s)")
    print(f"{'':18}" + "".join(f"{k:>18}" for k in keys))
    for name in sides:
        print(f"{name:18}" + "".join(f"{med[name][k]:>18,.0f}" for k in keys))
    for ours, theirs in pairs:
        ratio = "".join(f"{med[ours][k] / med[theirs][k]:>17.2f}x" for k in keys)
        print(f"{'ratio ' + ours.removeprefix('execstore'):18}{ratio}")

if __name__ == "__main__":
    sys.exit(main())
