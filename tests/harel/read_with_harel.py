"""harel 0.9 reads a database another writer (execstore) made; optionally commits to it.

    read_with_harel.py DB OUT_JSON [--commit EXECUTION_ID] [--prefix PREFIX]

DB is a SQLite file or a PostgreSQL URL (tables under PREFIX, default "harel"); either must
exist already: harel opens it without creating anything (SQLite: the file; PostgreSQL:
`create_schema=False`, so harel finds its tables as the other writer made them).

Opens DB with harel's own `SqliteStore` (default prefix "harel") or `PostgresStore`, loads
every execution (ids from `list_executions`), the outbox, spawns, due timers and traces, and
writes what it read to OUT_JSON as "view" (see `harel_dump.view`). Any failure exits non-zero.

With `--commit ID` harel then keeps writing to the file: it loads ID, changes it and commits
it with an emit, a dedupe marker, a timer, a spawn and a trace step, and writes what it did
as "commit" and what it reads afterwards as "view_after".
"""

from __future__ import annotations

import argparse

import harel_dump

T0 = 1700000000.0
COMMIT_TEXT = "written by harel ✓ — ünï 😀"


def harel_commit(store, eid: str) -> dict:
    from harel.engine.execution import Status
    from harel.engine.store import TimerOp
    from harel.spec.states import Event

    exe = store.load(eid)
    if exe is None:
        raise SystemExit(f"--commit {eid}: no such execution")
    before = exe.version
    exe.status = Status.RUNNING
    exe.active_path = "harel.touched"
    exe.context["touched_by"] = COMMIT_TEXT
    exe.context["floats"] = [0.1, 1e-7, 1e20]
    exe.processed_events += 1
    exe.updated_at = T0 + 500.5
    event = Event(id="harel-ev-1", kind="FromHarel", data={"n": 1e20, "s": COMMIT_TEXT})
    seqs = store.commit(
        exe,
        [(eid, event), (None, Event(id="harel-ev-2", kind="Broadcast"))],
        processed_event_id="harel-processed-1",
        timers=(TimerOp("schedule", "harel.timer", T0 + 99.5),),
        spawns=((f"{eid}:harel:0", "harel.region", {"k": COMMIT_TEXT, "f": 1e-7}),),
        trace={
            "event_kind": "FromHarel",
            "event_data": {"n": 1e20},
            "from_path": "before",
            "to_path": "harel.touched",
            "actions": ["harel_action"],
            "context_out": {"touched_by": COMMIT_TEXT},
            "timestamp": T0 + 500.5,
        },
    )
    return {"id": eid, "version_before": before, "version_after": exe.version, "seqs": seqs,
            "exe": exe.model_dump(mode="json")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db")
    ap.add_argument("out")
    ap.add_argument("--commit", metavar="EXECUTION_ID")
    ap.add_argument("--prefix", default=harel_dump.DEFAULT_PREFIX)
    args = ap.parse_args()
    harel_dump.check_version()

    if harel_dump.is_postgres(args.db):
        store = harel_dump.open_store(args.db, args.prefix, create_schema=False)
    else:
        # harel would create an empty database at a wrong path; this script only reads existing ones
        with open(args.db, "rb"):
            pass
        store = harel_dump.open_store(args.db)
    doc = {"view": harel_dump.view(store, args.db, args.prefix)}
    if args.commit:
        doc["commit"] = harel_commit(store, args.commit)
        doc["view_after"] = harel_dump.view(store, args.db, args.prefix)
    store.close()
    harel_dump.write_json(args.out, doc)


if __name__ == "__main__":
    main()
