"""Messages per second through harel 0.9's own SqliteTransport and execstore.harel's, in one run,
side by side: send N (publish), then receive N (claim + ack), on a fresh file each, in the
same directory, the two interleaved in chunks of 50 messages (which goes first flips every
chunk), so that a busy machine's changing load weighs on both alike. Sync by default; `--async` adds harel's
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


CHUNK = 50


def run_pair_sync(makes: list[Callable[[Path], Any]], paths: list[Path], n: int, groups: int) -> list[dict[str, float]]:
    """Both transports of a pair, interleaved in chunks of CHUNK messages (which goes first
    flips every chunk), so the machine's load changes weigh on both alike."""
    events = _events(n, groups)
    ts = [make(path) for make, path in zip(makes, paths)]
    sent = [0.0, 0.0]
    got = [0.0, 0.0]
    received: list[list[tuple[str, int]]] = [[], []]
    for c, at in enumerate(range(0, n, CHUNK)):
        for k in (0, 1) if c % 2 == 0 else (1, 0):
            start = time.perf_counter()
            for group, event in events[at : at + CHUNK]:
                ts[k].publish(group, event)
            sent[k] += time.perf_counter() - start
    done = [False, False]
    c = 0
    while not all(done):
        for k in (0, 1) if c % 2 == 0 else (1, 0):
            if done[k]:
                continue
            start = time.perf_counter()
            for _ in range(CHUNK):
                lease = ts[k].claim("bench", 30.0)
                if lease is None:
                    done[k] = True
                    break
                received[k].append((lease.group_id, lease.event.data["i"]))
                ts[k].ack(lease)
            got[k] += time.perf_counter() - start
        c += 1
    for k in (0, 1):
        ts[k].close()
        _check(received[k], n, groups)
    return [
        {"send_per_s": n / sent[k], "receive_per_s": n / got[k], "round_trip_per_s": n / (sent[k] + got[k])}
        for k in (0, 1)
    ]


async def run_pair_async(makes: list[Callable[[Path], Any]], paths: list[Path], n: int, groups: int) -> list[dict[str, float]]:
    """`run_pair_sync` for async transports."""
    events = _events(n, groups)
    ts = [await make(path) for make, path in zip(makes, paths)]
    sent = [0.0, 0.0]
    got = [0.0, 0.0]
    received: list[list[tuple[str, int]]] = [[], []]
    for c, at in enumerate(range(0, n, CHUNK)):
        for k in (0, 1) if c % 2 == 0 else (1, 0):
            start = time.perf_counter()
            for group, event in events[at : at + CHUNK]:
                await ts[k].publish(group, event)
            sent[k] += time.perf_counter() - start
    done = [False, False]
    c = 0
    while not all(done):
        for k in (0, 1) if c % 2 == 0 else (1, 0):
            if done[k]:
                continue
            start = time.perf_counter()
            for _ in range(CHUNK):
                lease = await ts[k].claim("bench", 30.0)
                if lease is None:
                    done[k] = True
                    break
                received[k].append((lease.group_id, lease.event.data["i"]))
                await ts[k].ack(lease)
            got[k] += time.perf_counter() - start
        c += 1
    for k in (0, 1):
        await ts[k].close()
        _check(received[k], n, groups)
    return [
        {"send_per_s": n / sent[k], "receive_per_s": n / got[k], "round_trip_per_s": n / (sent[k] + got[k])}
        for k in (0, 1)
    ]


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
    pairs = [("execstore", "harel")] + ([("execstore-async", "harel-async")] if a.run_async else [])
    pairs += [("execstore-pg", "harel-pg")] if a.pg else []
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        for r in range(a.repeat):
            for ours, theirs in pairs:
                names = [theirs, ours] if r % 2 == 0 else [ours, theirs]
                kind = sides[ours][0]
                makes = [sides[name][1] for name in names]
                paths = [Path(tmp) / f"{name}-{r}.db" for name in names]
                if kind == "sync":
                    res = run_pair_sync(makes, paths, a.messages, a.groups)
                else:
                    res = asyncio.run(run_pair_async(makes, paths, a.messages, a.groups))
                for name, one in zip(names, res):
                    results[name].append(one)
                    if a.json:
                        row = {"impl": name, "round": r, "messages": a.messages, "groups": a.groups, **one}
                        print(json.dumps(row), flush=True)

    if made:
        from execstore._core import HarelTransport

        for prefix in made:
            HarelTransport.drop_postgres(a.pg, prefix)

    keys = ["send_per_s", "receive_per_s", "round_trip_per_s"]
    med = {name: {k: statistics.median(x[k] for x in runs) for k in keys} for name, runs in results.items()}
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
