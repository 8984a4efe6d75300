"""harel 0.9's control plane on a SQLite file, for the differential tests of execstore's.

    control_with_harel.py DB OUT_JSON --setup
    control_with_harel.py DB OUT_JSON --program PROGRAM_JSON [--snapshots DIR]

`--setup` writes, through harel's own `SqliteStore`, the fixture the tests copy: execution
trees in every status (parents listing region children, a grandchild under a finished child,
a descendant only found by its id prefix, a listed child that is no longer stored), with
backlogs, timers, dedupe markers and traces, and roots finished long ago, recently, or
undated. `--program` runs a list of control calls (`harel.engine.control`'s `suspend`,
`resume`, `terminate`, `purge`, `purge_finished`), each with its fixed clock, and writes
each call's result to OUT_JSON as {"results": [...]}: {"ok": ...} or {"error": KIND,
"message": ...}, KIND being NOT_FOUND (harel's KeyError), REFUSED (PurgeRefused) or
INVALID_INPUT (another ValueError). With `--snapshots DIR`, a copy of the database after
call N is written to DIR/N.db (SQLite's online backup), so every step can be compared.
"""

from __future__ import annotations

import argparse
import json
import sys

import harel_dump

T0 = 1700000000.0


def setup(store) -> None:
    from harel.engine.execution import ChildState, Execution, Status
    from harel.engine.store import TimerOp
    from harel.spec.states import Event

    def put(id, status, parent=None, children=(), finished_at=None, effects=False, **extra):
        exe = Execution(
            id=id,
            definition_id="order" if parent is None else "order.region",
            root_path="" if parent is None else "order.r",
            status=Status(status),
            active_path="order.a",
            context={"n": 1, "text": "naïve ✓ 😀", "f": [0.1, 1e20]},
            history={"order": "order.a"},
            parent_id=parent,
            child_id=None if parent is None else id.rsplit(":", 1)[-1],
            children={c: ChildState(root_path="order.r", key=c.rsplit(":", 1)[-1]) for c in children},
            created_at=T0,
            updated_at=T0 + 1.5,
            finished_at=finished_at,
            **extra,
        )
        store.save(exe)
        if effects:
            store.commit(
                exe,
                [(id, Event(id=f"{id}-out", kind="Backlog", data={"x": 1})), (None, Event(id=f"{id}-bc", kind="Any"))],
                processed_event_id=f"{id}-in",
                timers=(TimerOp("schedule", "order.t", T0 + 600.0),),
                spawns=((f"{id}:spawned", "order.s", {"seed": 1}),),
                trace={"event_kind": "Go", "from_path": None, "to_path": "order.a", "timestamp": T0 + 2.0},
            )

    old, new = T0 - 7200.0, T0 - 60.0
    # a running tree: regions running, done (with a running grandchild), failed, pending
    put("run-1", "RUNNING", children=["run-1:a", "run-1:b", "run-1:c", "run-1:d"], effects=True)
    put("run-1:a", "RUNNING", "run-1", effects=True)
    put("run-1:b", "DONE", "run-1", children=["run-1:b:g"], finished_at=T0)
    put("run-1:b:g", "RUNNING", "run-1:b", effects=True)
    put("run-1:c", "FAILED", "run-1", error="ValueError: boom")
    put("run-1:d", "PENDING", "run-1")
    put("done-1", "DONE", children=["done-1:k"], finished_at=T0)
    put("done-1:k", "RUNNING", "done-1")
    put("susp-1", "SUSPENDED", children=["susp-1:a"], effects=True)
    put("susp-1:a", "SUSPENDED", "susp-1")
    put("fail-1", "FAILED", error="KeyError: 'x'", effects=True)
    put("pend-1", "PENDING")
    put("canc-1", "CANCELLED", finished_at=T0)
    put("cncl-1", "CANCELLING", expires_at=T0 + 50.0)
    # finished trees for purge / purge_finished
    put("old-done", "DONE", children=["old-done:a", "old-done:gone"], finished_at=old, effects=True)
    put("old-done:a", "CANCELLED", "old-done", children=["old-done:a:g"], finished_at=old, effects=True)
    put("old-done:a:g", "DONE", "old-done:a", finished_at=old)
    put("old-done:x", "DONE", "old-done", finished_at=old)  # dropped from `children`
    put("old-done:zz", "RUNNING")  # a root whose id merely shares the prefix
    gone = store.load("old-done")
    store.commit(gone, [("old-done:gone", Event(id="late", kind="Late"))])
    put("old-canc", "CANCELLED", finished_at=old + 1.0, effects=True)
    put("new-done", "DONE", finished_at=new)
    put("undated", "DONE")
    put("old-live", "DONE", children=["old-live:k"], finished_at=old)
    put("old-live:k", "RUNNING", "old-live")
    put("old-fail", "FAILED", finished_at=old)


def snapshot(db: str, path: str) -> None:
    import sqlite3

    src, dst = sqlite3.connect(db), sqlite3.connect(path)
    with dst:
        src.backup(dst)
    src.close()
    dst.close()


def run(store, program: list[dict], db: str, snapshots: str | None) -> list[dict]:
    from harel.engine import control
    from harel.engine.execution import Status

    results = []
    for call in program:
        op, now = call["op"], call.get("now", 0.0)
        clock = lambda now=now: now  # noqa: E731
        archived: list[dict] = []
        try:
            if op in ("suspend", "resume", "terminate"):
                getattr(control, op)(store, call["id"], clock=clock)
                out = None
            elif op == "purge":
                done = control.purge(store, call["id"], archive=archived.append if call.get("archive") else None)
                out = {"purged": done, "archives": archived}
            elif op == "purge_finished":
                kwargs = {"older_than": call["older_than"], "now": now, "dry_run": call.get("dry_run", False)}
                if "statuses" in call:
                    kwargs["statuses"] = [Status(s) for s in call["statuses"]]
                for k in ("include_undated", "limit"):
                    if k in call:
                        kwargs[k] = call[k]
                if call.get("archive"):
                    kwargs["archive"] = archived.append
                report = control.purge_finished(store, **kwargs)
                out = {
                    "purged": report.purged,
                    "skipped_undated": report.skipped_undated,
                    "refused": report.refused,
                    "archives": archived,
                }
            else:
                raise SystemExit(f"unknown op {op}")
            results.append({"ok": out})
        except KeyError as e:
            results.append({"error": "NOT_FOUND", "message": str(e)})
        except control.PurgeRefused as e:
            results.append({"error": "REFUSED", "message": str(e)})
        except ValueError as e:
            results.append({"error": "INVALID_INPUT", "message": str(e)})
        if snapshots:
            snapshot(db, f"{snapshots}/{len(results) - 1}.db")
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("out")
    ap.add_argument("--setup", action="store_true")
    ap.add_argument("--program")
    ap.add_argument("--snapshots")
    args = ap.parse_args()
    harel_dump.check_version()
    store = harel_dump.open_store(args.db)
    if args.setup:
        setup(store)
        out = {"ok": True}
    else:
        with open(args.program, encoding="utf-8") as f:
            out = {"results": run(store, json.load(f), args.db, args.snapshots)}
    store.close()
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)


if __name__ == "__main__":
    sys.exit(main())
