"""The Python package as PyPI would carry it (run by scripts/lib/pypi.sh's `pypi_test`): the
wheel is manylinux, both distributions pass `twine check` and say what PyPI shows, and each
installs in a fresh venv the way a user installs it and runs the README's quick start.

Environment: EXECSTORE_WHEEL, EXECSTORE_SDIST (the distributions), EXECSTORE_PYTHON311 and
EXECSTORE_PYTHON312 (base interpreters for the venvs), EXECSTORE_PYPI_TOOLS (a bin/ with
auditwheel and twine), EXECSTORE_SDIST_TARGET_DIR (the cargo target directory the sdist's
build shares)."""

from __future__ import annotations

import email.parser
import os
import re
import subprocess
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CRATE = ROOT / "crates" / "execstore-python"
WHEEL = Path(os.environ["EXECSTORE_WHEEL"])
SDIST = Path(os.environ["EXECSTORE_SDIST"])
TOOLS = Path(os.environ["EXECSTORE_PYPI_TOOLS"])


def run(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Runs a command; its output (stdout and stderr), failing the test with it on an error."""
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert done.returncode == 0, f"{' '.join(map(str, args))} exited {done.returncode}:\n{done.stdout}"
    return done.stdout


def venv(path: Path, base: str) -> Path:
    run(base, "-m", "venv", path)
    return path / "bin" / "python"


def pip_install(python: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return run(python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input", *args, env=env)


def quick_start(engine: str) -> str:
    """The ```python block under the README's "## Quick start: ENGINE"."""
    readme = (CRATE / "README.md").read_text()
    section = readme.split(f"## Quick start: {engine}\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return block


def missing_engine(python: Path, module: str) -> str:
    """The message of `import MODULE` where its engine is not installed."""
    code = (
        f"try:\n    import {module}\nexcept ImportError as e:\n"
        "    print(type(e).__name__, e.name, '|', e)\nelse:\n    print('imported')\n"
    )
    return run(python, "-c", code).strip()


def wheel_metadata() -> email.message.Message:
    with zipfile.ZipFile(WHEEL) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(z.read(name).decode())


def sdist_metadata() -> email.message.Message:
    with tarfile.open(SDIST) as t:
        (member,) = [m for m in t.getmembers() if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO")]
        f = t.extractfile(member)
        assert f is not None
        return email.parser.Parser().parsestr(f.read().decode())


def test_the_wheel_is_manylinux2014() -> None:
    out = run(TOOLS / "auditwheel", "show", WHEEL)
    print(out)
    assert re.search(r"manylinux_2_17_x86_64", WHEEL.name), WHEEL.name
    assert "is consistent with the following platform tag" in out and '"manylinux_2_17_x86_64"' in out, out


def test_twine_check_passes_on_the_wheel_and_the_sdist() -> None:
    out = run(TOOLS / "twine", "check", "--strict", WHEEL, SDIST)
    print(out)
    assert out.count("PASSED") == 2, out


@pytest.mark.parametrize("read", [wheel_metadata, sdist_metadata], ids=["wheel", "sdist"])
def test_the_metadata_says_what_pypi_shows(read: object) -> None:
    meta = read()  # type: ignore[operator]
    assert meta["Name"] == "execstore"
    assert meta["License-Expression"] == "MIT OR Apache-2.0"
    assert sorted(meta.get_all("License-File")) == ["LICENSE-APACHE", "LICENSE-MIT"]
    assert meta["Requires-Python"] == ">=3.11"
    assert meta["Description-Content-Type"].startswith("text/markdown")
    assert meta.get_payload().startswith("# execstore for Python"), "the long description is the README"
    classifiers = meta.get_all("Classifier")
    for c in ["Programming Language :: Python :: 3.11", "Operating System :: POSIX :: Linux", "Topic :: Database"]:
        assert c in classifiers
    assert sorted(meta.get_all("Provides-Extra")) == ["harel", "reflexr"]
    requires = meta.get_all("Requires-Dist")
    assert "harel==0.9.0 ; extra == 'harel'" in requires, requires
    assert any(
        re.fullmatch(r"reflexr\[sqlite,postgres\]==0\.1\.1 ; python_(full_)?version >= '3\.12' and extra == 'reflexr'", r)
        for r in requires
    ), requires
    # The URLs are the workspace's repository (Cargo.toml), which the crates publish too.
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
    repository = cargo["workspace"]["package"]["repository"]
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert urls["Repository"] == repository
    assert all(u.startswith(repository) for u in urls.values()), urls


def test_the_wheel_installs_with_harel_and_runs_the_quick_start(tmp_path: Path) -> None:
    python = venv(tmp_path / "venv", os.environ["EXECSTORE_PYTHON311"])
    pip_install(python, f"execstore[harel] @ {WHEEL.as_uri()}")
    (tmp_path / "quick.py").write_text(quick_start("harel"))
    # Twice: the example loads what its first run created.
    assert run(python, "quick.py", cwd=tmp_path) == "opened 2\n"
    assert run(python, "quick.py", cwd=tmp_path) == "closed 3\n"
    # reflexr is not installed (and could not be: it needs Python 3.12).
    message = missing_engine(python, "execstore.reflexr")
    assert message.startswith("ModuleNotFoundError reflexr | execstore.reflexr needs reflexr 0.1.1"), message
    assert 'pip install "execstore[reflexr]"' in message and "Python 3.12 or later" in message, message


def test_the_sdist_builds_with_reflexr_and_runs_the_quick_start(tmp_path: Path) -> None:
    python = venv(tmp_path / "venv", os.environ["EXECSTORE_PYTHON312"])
    env = dict(os.environ)
    env["CARGO_TARGET_DIR"] = os.environ["EXECSTORE_SDIST_TARGET_DIR"]
    env["MATURIN_PEP517_ARGS"] = "--profile dev"
    # reflexr first (from pip's cache), then the sdist without the cache: pip keeps the wheels it
    # builds and would otherwise install the last run's instead of building this sdist.
    pip_install(python, "reflexr[sqlite,postgres]==0.1.1")
    out = pip_install(python, "--no-cache-dir", f"execstore[reflexr] @ {SDIST.as_uri()}", env=env)
    assert "Building wheel for execstore" in out and "Successfully installed execstore-0.1.0" in out, out
    assert "Requirement already satisfied: reflexr[postgres,sqlite]==0.1.1" in out, out
    (tmp_path / "quick.py").write_text(quick_start("reflexr"))
    assert run(python, "quick.py", cwd=tmp_path) == "[1]\n"
    assert run(python, "quick.py", cwd=tmp_path) == "[1, 2]\n"
    message = missing_engine(python, "execstore.harel")
    assert message == (
        'ModuleNotFoundError harel | execstore.harel needs harel 0.9.0, which is not installed: pip install "execstore[harel]"'
    ), message
