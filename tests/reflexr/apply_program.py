"""reflexr applies a program of storage calls (workspace_common::program) to a new database.

Usage: apply_program.py TARGET OUT PROGRAM [--schema NAME]

PROGRAM is JSON: {"t0": micros, "ops": [op, ...]}, each op a transaction
({"op": "tx", "workspace", "now", "commit", "calls": [...]}) or a lease or cursor call. The
clock stands at each op's "now". OUT: {"results": [one per op: the stored envelopes each
append returned, or a lease's answer]}.
"""

import asyncio
from datetime import datetime, timedelta
from typing import Any

import rx
from reflexr.sql import SqlStorage, migrate


class _Rollback(Exception):
    pass


async def apply_tx(tx: Any, calls: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for c in calls:
        kind = c["call"]
        if kind == "append":
            envelopes = await tx.append([rx.entry_of(e) for e in c["entries"]])
            out.append([rx.stored(e) for e in envelopes])
        elif kind == "save_runs":
            await tx.save_runs([rx.RECORDS["run"].model_validate(r) for r in c["runs"]])
        elif kind == "save_progress":
            await tx.save_progress(c["rule"], rx.RECORDS["progress"].model_validate(c["progress"]))
        elif kind == "save_states":
            states = {k: rx.RECORDS["state"].model_validate(s) for k, s in c["states"]}
            await tx.save_states(c["rule"], states)
        elif kind == "clear_states":
            await tx.clear_states(c["rule"])
        elif kind == "dead_letter":
            await tx.dead_letter([rx.RECORDS["dead_letter"].model_validate(e) for e in c["errors"]])
        elif kind == "save_schedule":
            await tx.save_schedule(c["name"], datetime.fromisoformat(c["at"]))
        elif kind == "save_stored_rule":
            await tx.save_stored_rule(rx.RECORDS["stored_rule"].model_validate(c["stored"]))
        else:
            raise ValueError(f"unknown call {kind}")
    return out


async def main() -> None:
    target, rest, schema = rx.args()
    out_path, program_path = rest
    program = rx.read_json(program_path)
    eng = rx.engine(target, schema)
    try:
        await migrate(eng)
        clock = rx.Clock(rx.from_micros(program["t0"]))
        storage = SqlStorage(eng, clock=clock)
        results: list[Any] = []
        for op in program["ops"]:
            if "now" in op:
                clock.now = rx.from_micros(op["now"])
            ref = rx.ref_of(op["workspace"])
            kind = op["op"]
            if kind == "tx":
                result: Any = None
                try:
                    async with storage.transaction(ref) as tx:
                        result = await apply_tx(tx, op["calls"])
                        if not op["commit"]:
                            raise _Rollback
                except _Rollback:
                    pass
                results.append(result)
            elif kind == "acquire_lease":
                ttl = timedelta(milliseconds=op["ttl_ms"])
                results.append(await storage.acquire_lease(ref, op["key"], op["holder"], ttl))
            elif kind == "release_lease":
                results.append(await storage.release_lease(ref, op["key"], op["holder"]))
            elif kind == "save_cursor":
                results.append(await storage.save_cursor(ref, op["name"], op["seq"]))
            else:
                raise ValueError(f"unknown op {kind}")
        rx.write_json(out_path, {"results": results})
    finally:
        await eng.dispose()


asyncio.run(main())
