"""The argument checks ``execstore.harel`` and ``execstore.reflexr`` share: what would be lost
on the way into the store is refused with ``execstore.InvalidInputError`` instead, and nothing
is changed."""

from __future__ import annotations

import math
from typing import Optional

from execstore._core import invalid_input


def text(field: str, value: str) -> str:
    """`value`, a str that names something (an id, a prefix, a cursor, a key), if it is
    well-formed text. A Python str can hold a lone surrogate (``"a\\udc00"``), which no UTF-8
    text can: it would name nothing stored, or the wrong thing once converted, so it is
    refused. ASCII (the common case) is known at once."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise invalid_input(field, "holds a lone surrogate (not well-formed Unicode text)") from None
    return value


def time(field: str, value: Optional[float]) -> None:
    """Refuses a NaN or infinite time (epoch seconds): pydantic writes it as ``null`` in the
    JSON the store is given, so a NaN ``finished_at`` would be stored as no finish time."""
    if value is not None and not math.isfinite(value):
        raise invalid_input(field, f"{value} is not a finite number of seconds")


def finite(field: str, value: object, depth: int = 0) -> None:
    """Refuses a NaN or infinite float, or a str (a key too) holding a lone surrogate, anywhere
    inside the JSON-like `value` (dicts, lists, tuples), naming where: pydantic writes such a
    float as ``null``, so it would be stored as another value."""
    if depth > 128:
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise invalid_input(field, f"must be a finite number, not {value}")
    elif isinstance(value, str):
        text(field, value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                text(field, key)
            finite(f"{field}.{key}", item, depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            finite(f"{field}[{i}]", item, depth + 1)


def string(name: str, value: object) -> str:
    """`value` if it is a str of well-formed text (see :func:`text`); a TypeError otherwise."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return text(name, value)


def integer(name: str, value: object) -> int:
    """`value` if it is an int (not a bool); a TypeError otherwise."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    return value


def number(name: str, value: object) -> float:
    """`value` as a float if it is an int or a float (not a bool); a TypeError otherwise."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    return float(value)
