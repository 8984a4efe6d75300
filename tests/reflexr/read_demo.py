"""reflexr reads the workspace story `execstore demo` wrote, through its own SqlStorage API.

Usage: read_demo.py TARGET OUT SPEC

TARGET is a copy of the demo file (the lease probes take lapsed leases). SPEC is JSON:
{"now": micros, "rule_names": {"tenant/workspace": [name, ...]}, "cursor_names": {...},
"lease_keys": {...}, "policy": {"disabled", "ordered", "blocking"}}: the names reflexr's API
asks by name for (it lists no cursors, leases or archived rules). The script runs reflexr's
migrate (which must find its head recorded and change nothing), then reads, per workspace:
the head, every envelope, every run, dead letters, progress, schedules, active stored rules,
each named rule's history, each named cursor, and for each lease key whether another holder
gets it now (a lapsed lease) or not (a held one); and the due runs under the policy. Records
are the very text reflexr stores (rx.stored), times microseconds. OUT: {"migrate", "workspaces",
"by_workspace", "due"}.
"""

import asyncio
from datetime import timedelta

import rx
from reflexr.sql import SqlStorage


async def main() -> None:
    target, rest, schema = rx.args()
    out_path, spec_path = rest
    spec = rx.read_json(spec_path)
    eng = rx.engine(target, schema)
    try:
        migrated = await rx.migrate_checked(eng, schema)
        storage = SqlStorage(eng, clock=rx.Clock(rx.from_micros(spec["now"])))
        workspaces = await storage.workspaces()
        # Before the lease probes, which take the lapsed leases.
        due = await storage.due_runs(
            now=rx.from_micros(spec["now"]), limit=10_000, policy=rx.policy_of(spec["policy"])
        )
        by = {}
        for ref in workspaces:
            key = f"{ref.tenant_id}/{ref.workspace_id}"
            d = {"head_seq": await storage.head_seq(ref)}
            d["envelopes"] = [rx.stored(e) for e in await storage.read(ref)]
            d["runs"] = [rx.stored(r) for r in await storage.runs(ref)]
            d["dead_letters"] = [rx.stored(x) for x in await storage.dead_letters(ref)]
            d["progress"] = [[rule, rx.stored(p)] for rule, p in (await storage.progress(ref)).items()]
            d["schedules"] = [[n, rx.micros(at)] for n, at in (await storage.schedules(ref)).items()]
            d["stored_rules"] = [rx.stored(r) for r in await storage.stored_rules(ref)]
            d["history"] = {
                n: [rx.stored(e) for e in await storage.rule_history(ref, n)]
                for n in spec["rule_names"].get(key, [])
            }
            d["cursors"] = {n: await storage.cursor(ref, n) for n in spec["cursor_names"].get(key, [])}
            d["lease_taken_by_another"] = {
                k: await storage.acquire_lease(ref, k, "reflexr-intruder", timedelta(seconds=1))
                for k in spec["lease_keys"].get(key, [])
            }
            by[key] = d
        rx.write_json(
            out_path,
            {
                "migrate": migrated,
                "workspaces": [[w.tenant_id, w.workspace_id] for w in workspaces],
                "by_workspace": by,
                "due": [[w.tenant_id, w.workspace_id, r.id] for w, r in due],
            },
        )
    finally:
        await eng.dispose()


asyncio.run(main())
