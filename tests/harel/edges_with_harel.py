"""Edge values at the harel/execstore boundary.

    edges_with_harel.py DB OUT_JSON write   harel writes the edge values below; OUT_JSON gets the
                                            raw rows and the key order of harel's read_trace
    edges_with_harel.py DB OUT_JSON check   harel parses every outbox row and every stored
                                            execution one by one; OUT_JSON lists each one it
                                            cannot read (instead of failing on the first)

The edge values: integers beyond 64 bits, NaN and Infinity (which `json.dumps` writes into
trace steps and spawn contexts), a trace step with its own "index" key, and a float whose
shortest spelling is a tie between two last digits (Python's repr rounds it half-even).
"""

from __future__ import annotations

import json
import sys

import harel_dump

TIE_FLOAT = 821266108446277.25  # repr: 821266108446277.2 (.3 is as short and as close)


def write(db: str) -> dict:
    from harel.engine.execution import Execution
    from harel.engine.store import SqliteStore

    store = SqliteStore(db)
    store.save(Execution(id="big-1", definition_id="edges", context={"big": 2**70, "neg": -(2**63) - 1, "u64_plus_1": 2**64}))
    store.save(Execution(id="nan-1", definition_id="edges"))
    store.append_trace("nan-1", {"event_kind": "Tick", "x": float("nan"), "y": float("inf"), "z": float("-inf")})
    store.save(Execution(id="idx-1", definition_id="edges"))
    store.append_trace("idx-1", {"a": 1, "index": 99, "z": 2})
    store.save(Execution(id="tie-1", definition_id="edges"))
    store.append_trace("tie-1", {"event_kind": "Tick", "f": TIE_FLOAT, "g": [0.1, 1e22, 1e-05]})
    store.commit(
        Execution(id="spawner-1", definition_id="edges"),
        [],
        spawns=(("spawner-1:a:0", "a", {"x": float("nan")}), ("spawner-1:b:0", "b", {"ok": 1})),
    )
    idx_keys = [list(step) for step in store.read_trace("idx-1")]
    store.close()
    return {"raw": harel_dump.raw_tables(db), "idx_trace_keys": idx_keys}


def check(db: str) -> dict:
    from harel.engine.execution import Execution
    from harel.spec.states import Event

    raw = harel_dump.raw_tables(db)
    failures = []
    for seq, target, text in raw["outbox"]:
        try:
            Event.model_validate_json(text)
        except Exception as e:  # pydantic.ValidationError
            failures.append({"table": "outbox", "key": seq, "text": text, "error": str(e).splitlines()[-2:]})
    for eid, _defn, data, _version in raw["executions"]:
        try:
            Execution.model_validate_json(data)
        except Exception as e:
            failures.append({"table": "executions", "key": eid, "text": data, "error": str(e).splitlines()[-2:]})
    return {"failures": failures}


def main() -> None:
    if len(sys.argv) != 4 or sys.argv[3] not in ("write", "check"):
        sys.exit(__doc__)
    db, out, mode = sys.argv[1:]
    harel_dump.check_version()
    doc = write(db) if mode == "write" else check(db)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, allow_nan=False)


if __name__ == "__main__":
    main()
