"""The engines ``execstore.harel`` and ``execstore.reflexr`` plug into are optional
dependencies (the extras ``execstore[harel]`` and ``execstore[reflexr]``): importing either
module without its engine installed raises an ``ImportError`` that says how to install it."""

from __future__ import annotations

import sys
from importlib.util import find_spec

# The engine each module needs, the version tested, the modules it imports, and the oldest
# Python the engine runs on.
_ENGINES = {
    "harel": ("0.9.0", ("harel",), (3, 11)),
    "reflexr": ("0.1.1", ("reflexr", "pydantic"), (3, 12)),
}


def require(engine: str) -> None:
    """Raises ``ModuleNotFoundError`` (an ``ImportError``) naming the extra to install when a
    module ``execstore.<engine>`` imports is missing; does nothing otherwise."""
    version, modules, python = _ENGINES[engine]
    missing = [name for name in modules if find_spec(name) is None]
    if not missing:
        return
    message = f"execstore.{engine} needs {engine} {version}, which is not installed"
    if sys.version_info[:2] < python:
        message += (
            f"; {engine} {version} needs Python {python[0]}.{python[1]} or later and this is "
            f"Python {sys.version_info[0]}.{sys.version_info[1]}: in a Python "
            f"{python[0]}.{python[1]}+ environment, "
        )
    else:
        message += ": "
    message += f'pip install "execstore[{engine}]"'
    raise ModuleNotFoundError(message, name=missing[0])
