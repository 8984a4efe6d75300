"""reflexr reads what execstore's recovery commands wrote (tests/tests/workspace_recover_sqlite.rs).

Usage: recover_with_reflexr.py TARGET OUT SPEC [--schema NAME]

SPEC is JSON: {"workspace": [tenant, workspace], "now": micros, "dead_run": the run as it was
before execstore retried it (JSON), "run_id", "facts": [event ids], "rule", "lease"}. Through
reflexr's own SqlStorage the script reads the run, the facts (each event parsed by reflexr's
event registry: run_requeued, rule_reset, rule_installed), the rule's progress and the stored
rule, applies reflexr's own `retry` to the run as it was, and asks for the released lease as a
new holder. OUT: {"run": stored, "reflexr_retry": stored, "facts": [[type, stored event]],
"progress": stored, "stored_rule": stored, "enabled": bool, "due": [run ids], "lease_taken": bool}.
"""

import asyncio
from datetime import timedelta

import rx
from reflexr.core import Run, retry
from reflexr.sql import SqlStorage
from reflexr.workspace import RunPolicy


async def main() -> None:
    target, rest, schema = rx.args()
    out_path, spec_path = rest
    spec = rx.read_json(spec_path)
    eng = rx.engine(target, schema)
    try:
        now = rx.from_micros(spec["now"])
        storage = SqlStorage(eng, clock=rx.Clock(now))
        ref = rx.ref_of(spec["workspace"])
        run = await storage.run(ref, spec["run_id"])
        before = Run.model_validate(spec["dead_run"])
        theirs, _fact = retry(before, now=now)
        facts = []
        async with storage.transaction(ref) as tx:
            for event_id in spec["facts"]:
                envelope = await tx.envelope(event_id)
                facts.append([type(envelope.event).__name__, rx.stored(envelope.event)])
            progress = await tx.progress(spec["rule"])
            stored_rule = await tx.stored_rule(spec["rule"])
        due = [r.id for _w, r in await storage.due_runs(now=now, limit=100, policy=RunPolicy())]
        taken = await storage.acquire_lease(ref, spec["lease"], "new-holder", timedelta(seconds=30))
        rx.write_json(
            out_path,
            {
                "run": rx.stored(run),
                "reflexr_retry": rx.stored(theirs),
                "facts": facts,
                "progress": rx.stored(progress),
                "stored_rule": rx.stored(stored_rule),
                "enabled": stored_rule.rule.enabled,
                "due": due,
                "lease_taken": taken,
            },
        )
    finally:
        await eng.dispose()


asyncio.run(main())
