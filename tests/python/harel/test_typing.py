"""`mypy --strict` passes on a typical use of execstore.harel (typed_use.py), which also runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def test_mypy_strict_on_typical_use(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), "typed_use.py"],
        cwd=HERE,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_typical_use_runs() -> None:
    env = dict(os.environ)
    result = subprocess.run([sys.executable, "typed_use.py"], cwd=HERE, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
