"""reflexr opens a database execstore wrote, reads everything back, and appends to it.

Usage: read_back.py TARGET OUT SPEC [--schema NAME]

SPEC is JSON: {"probe": ..., "now": micros, "leases": [[tenant, workspace, key, holder,
expires], ...], "append_to": [tenant, workspace], "append": [entry, ...]}. The script runs
reflexr's migrate (which must find its head recorded and change nothing; OUT reports the
schema before and after), reads the probe through SqlStorage (rx.dump), asks for every lease
as another holder and then as its own, and appends the entries in one transaction. OUT:
{"schema_before", "schema_after", "version", "dump", "leases": [[key, intruder_got_it,
holder_renewed]], "appended": [stored envelope, ...]}.
"""

import asyncio
from datetime import timedelta

import rx
from reflexr.sql import SqlStorage
from reflexr.workspace import WorkspaceRef


async def main() -> None:
    target, rest, schema = rx.args()
    out_path, spec_path = rest
    spec = rx.read_json(spec_path)
    eng = rx.engine(target, schema)
    try:
        migrated = await rx.migrate_checked(eng, schema)
        clock = rx.Clock(rx.from_micros(spec["now"]))
        storage = SqlStorage(eng, clock=clock)
        dump = await rx.dump(storage, spec["probe"])
        leases = []
        for tenant, workspace, key, holder, _expires in spec["leases"]:
            ref = WorkspaceRef(tenant, workspace)
            intruder = await storage.acquire_lease(ref, key, "intruder", timedelta(seconds=1))
            renewed = await storage.acquire_lease(ref, key, holder, timedelta(seconds=60))
            leases.append([key, intruder, renewed])
        async with storage.transaction(rx.ref_of(spec["append_to"])) as tx:
            appended = await tx.append([rx.entry_of(e) for e in spec["append"]])
        rx.write_json(
            out_path,
            {**migrated, "dump": dump, "leases": leases, "appended": [rx.stored(e) for e in appended]},
        )
    finally:
        await eng.dispose()


asyncio.run(main())
