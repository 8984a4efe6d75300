"""The exception classes follow the core's one list of error kinds (``StoreError::CODES``).

Every code has its own ``execstore.<Name>Error`` class, exported by the package, and an error of
that kind is raised as that class: a kind the core adds can never come out as another kind's
class (``BackendError`` was the fallback once).
"""

from __future__ import annotations

import execstore
from execstore import _core


def class_name(code: str) -> str:
    return "".join(word.capitalize() for word in code.split("_")) + "Error"


def test_every_code_has_its_class_exported_under_store_error() -> None:
    assert len(_core.ERROR_CODES) == len(set(_core.ERROR_CODES)) >= 6
    for code in _core.ERROR_CODES:
        name = class_name(code)
        cls = getattr(execstore, name, None)
        assert cls is not None, f"execstore has no {name} for {code}"
        assert cls is getattr(_core, name)
        assert issubclass(cls, execstore.StoreError) and cls is not execstore.StoreError
        assert cls.__module__ == "execstore" and cls.__name__ == name
        assert name in execstore.__all__, f"execstore.__all__ lacks {name}"


def test_each_kind_is_raised_as_its_own_class() -> None:
    examples = _core.error_examples()
    assert [e.code for e in examples] == list(_core.ERROR_CODES)
    for e in examples:
        assert type(e).__name__ == class_name(e.code), (e.code, type(e))
        assert type(e) is getattr(execstore, class_name(e.code))
        assert isinstance(e, execstore.StoreError)
    by_code = {e.code: e for e in examples}
    assert by_code["CONFLICT"].expected == 2 and by_code["CONFLICT"].found == 3
    assert by_code["INVALID_INPUT"].field == "timers[0].fire_at"
    assert by_code["NOT_FOUND"].what == "execution" and by_code["ALREADY_EXISTS"].key == "ev-1"
    assert by_code["BACKEND"].retryable is True
    assert [c for c, e in by_code.items() if isinstance(e, execstore.BackendError)] == ["BACKEND"]


def test_invalid_input_is_the_invalid_input_class() -> None:
    e = _core.invalid_input("name", "has a lone surrogate")
    assert type(e) is execstore.InvalidInputError
    assert (e.code, e.field, e.reason) == ("INVALID_INPUT", "name", "has a lone surrogate")
    assert str(e) == "invalid input: name: has a lone surrogate"
