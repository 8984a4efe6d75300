"""Records cross into the store through the core's one decoder per record, so a bad record fails
as it does on every surface (the npm package, the component): ``InvalidInputError`` naming the
same field, and nothing written. Called on the extension module, beneath reflexr's models, which
would refuse most of these before they reach the store.
"""

from __future__ import annotations

import json

import pytest

import execstore
from execstore import _core

GOOD = {"id": "e1", "actor": {"kind": "source", "name": "t"}, "event": {"type": "t:a"}}


def field_of(call) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(execstore.InvalidInputError) as info:
        call()
    return str(info.value.field)


def test_bad_entries_and_stored_rules_name_their_field_and_write_nothing() -> None:
    store = _core.WorkspaceStore.memory()
    txn = store.begin("acme", "prod")
    bad_entries = [
        ({**GOOD, "corelation_id": "c"}, "entries[1].corelation_id"),  # a misspelt key is refused
        ({"event": {"type": "t:a"}}, "entries[1].id"),
        ({**GOOD, "event": "text"}, "entries[1].event"),
        ({**GOOD, "traceparent": 7}, "entries[1].traceparent"),
    ]
    for entry, field in bad_entries:
        texts = [json.dumps(GOOD), json.dumps(entry)]
        assert field_of(lambda: txn.append(texts)) == field, entry
    assert field_of(lambda: txn.append([json.dumps(GOOD), "[1]"])) == "entries[1]"
    bad_stored = [
        ({"rule": {"name": "r"}, "version": 1, "status": "paused"}, "stored.status"),
        ({"rule": {"when": "x"}, "version": 1}, "stored.rule.name"),
        ({"rule": {"name": "r"}, "version": "1"}, "stored.version"),
        ({"rule": {"name": "r"}, "version": 1, "note": "x"}, "stored.note"),
    ]
    for stored, field in bad_stored:
        assert field_of(lambda: txn.save_stored_rule(json.dumps(stored))) == field, stored
    assert field_of(lambda: txn.save_runs(["{}"])) == "runs[0].id"
    assert txn.head_seq() == 0 and txn.stored_rules() == []
    (env,) = txn.append([json.dumps(GOOD)])
    assert json.loads(env)["seq"] == 1
    txn.save_stored_rule(json.dumps({"rule": {"name": "r"}, "version": 1}))
    (stored,) = txn.stored_rules()
    assert json.loads(stored) == {"rule": {"name": "r"}, "version": 1, "status": "active", "provenance": {}}
    txn.rollback()
