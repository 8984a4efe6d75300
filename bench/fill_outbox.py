#!/usr/bin/env python3
"""Append ROWS undelivered events to the outbox of an existing store file (for bench/rss.sh).

    fill_outbox.py DB ROWS [--prefix P] [--targets T]

The store must already exist (made by execstore, so its schema and migrations are execstore's
own); this only INSERTs into `{prefix}outbox (target_id, event)`, in one transaction, the rows
W1's commits would have written (WORKLOAD.md §5): event `out_event_id(r, i)`, kind "progress",
data {round, counter, path}, serialized exactly as harel's `Event.model_dump_json()`, addressed
to `exe_id(1, i)`; row n is round r = n div T + 1 of execution i = n mod T. Standard library only.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys

MASK = (1 << 64) - 1


def splitmix64(x: int) -> int:
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def exe_id(seed: int, i: int) -> str:
    base = ((seed << 32) + 2 * i) & MASK
    return f"{splitmix64(base):016x}{splitmix64((base + 1) & MASK):016x}"


def rows(count: int, targets: int):
    ids = [exe_id(1, i) for i in range(min(count, targets))]
    for n in range(count):
        r, i = n // targets + 1, n % targets
        event = (
            f'{{"id":"{r:08x}{i:016x}00000001","kind":"progress","created_time":null,'
            f'"received_time":null,"data":{{"round":{r},"counter":{r},"path":"root.work.s{r:02d}"}}}}'
        )
        yield ids[i], event


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="fill_outbox.py", description=__doc__.split("\n\n")[0])
    p.add_argument("db")
    p.add_argument("rows", type=int)
    p.add_argument("--prefix", default="", help='table prefix, e.g. "harel" (default: none)')
    p.add_argument("--targets", type=int, default=100_000, help="distinct target executions")
    a = p.parse_args(argv)
    table = f"{a.prefix}_outbox" if a.prefix else "outbox"

    conn = sqlite3.connect(f"file:{a.db}?mode=rw", uri=True)  # never create: execstore made it
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")  # throwaway fill
    before = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    with conn:
        conn.executemany(f"INSERT INTO {table} (target_id, event) VALUES (?, ?)", rows(a.rows, a.targets))
    after = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    print(f"fill_outbox: {table}: {before} -> {after} rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
