# shellcheck shell=bash
# scripts/lib/python.sh: the Python package `execstore` (crates/execstore-python, PyO3 +
# maturin), built as a wheel and tested in fresh venvs against the real harel and reflexr.
# Source it after harel.sh and reflexr.sh (it sources pypi.sh); it only defines things.
#
#   MATURIN_VERSION, PYTEST_VERSION, PYTEST_ASYNCIO_VERSION, MYPY_VERSION   the pinned tools
#   python_maturin           the pinned maturin (installed into a cached venv if needed)
#   python_wheel OUTDIR [MATURIN_ARGS...]
#                            builds the manylinux2014 wheel (zig; debug profile unless
#                            EXECSTORE_WHEEL_PROFILE=release) into OUTDIR; prints its path
#   python_venv DIR PYTHON PACKAGES...
#                            a fresh venv at DIR from PYTHON with PACKAGES pip-installed
#   python_test_venvs DIR    the venvs python_test needs, without the wheel (check_python makes
#                            them in the background while the wheel builds)
#   python_test WHEEL [DIR]  fresh venvs: Python 3.11 + harel (tests/python/harel) and Python 3.12
#                            + reflexr (tests/python/reflexr), the wheel installed in each; pytest;
#                            then harel_suite_test in the harel venv
#   harel_suite_test PYTHON  harel's own test suite (the test/ of its sdist, fetched with pip and
#                            cached, never copied into the repo), every file of it that builds a
#                            SQLite store, with execstore.harel's stores swapped in
#                            (tests/python/harel_suite: the swap, and the tests skipped, with why)

MATURIN_VERSION=1.16.0
PYTEST_VERSION=9.2.0
PYTEST_ASYNCIO_VERSION=1.5.0
MYPY_VERSION=2.4.1
# harel's suite imports the redis client (its worker tests build a Redis store and transport
# without connecting): the version harel 0.9.0's uv.lock pins.
REDIS_VERSION=8.0.0

_python_cache() {
	printf '%s\n' "${EXECSTORE_CACHE:-${HOME:-/root}/.cache/execstore}"
}

_pip() { # PYTHON ARGS...
	local py=$1
	shift
	"$py" -m pip install --quiet --disable-pip-version-check --no-input "$@"
}

python_venv() { # DIR PYTHON PACKAGES...
	local dir=$1 base=$2
	shift 2
	rm -rf "$dir"
	"$base" -m venv "$dir" || return 1
	[ $# -eq 0 ] || _pip "$dir/bin/python" "$@"
}

python_maturin() { # prints the pinned maturin's path, installing it into a cached venv if needed
	local tools maturin
	tools="$(_python_cache)/maturin-$MATURIN_VERSION"
	maturin="$tools/bin/maturin"
	if ! [ -x "$maturin" ] || ! "$maturin" --version 2>/dev/null | grep -q "$MATURIN_VERSION"; then
		python_venv "$tools" python3 "maturin==$MATURIN_VERSION" >&2 || return 1
	fi
	printf '%s\n' "$maturin"
}

python_wheel() { # OUTDIR [MATURIN_ARGS...]
	local out=$1 maturin profile zig
	shift
	maturin=$(python_maturin) || return 1
	# zig (pypi_tools, scripts/lib/pypi.sh) links against glibc 2.17: a manylinux2014 wheel
	# (linked against this machine's glibc it would be manylinux_2_34).
	zig=$(pypi_tools) || return 1
	profile=${EXECSTORE_WHEEL_PROFILE:-dev}
	mkdir -p "$out"
	PATH="$zig:$PATH" "$maturin" build --zig --compatibility manylinux2014 --profile "$profile" \
		-m crates/execstore-python/Cargo.toml --out "$out" "$@" >&2 || return 1
	ls "$out"/execstore-*.whl | head -n 1
}

python_test_venvs() { # DIR: the two venvs python_test uses, without the wheel (made while it builds)
	local dir=$1 rc=0 reflexr_base
	python_venv "$dir/harel" python3 "harel==$HAREL_VERSION" "psycopg[binary]==$PSYCOPG_VERSION" \
		"pytest==$PYTEST_VERSION" "pytest-asyncio==$PYTEST_ASYNCIO_VERSION" "mypy==$MYPY_VERSION" \
		"redis==$REDIS_VERSION" || rc=1
	reflexr_base=$(reflexr_base_python) || return 1
	python_venv "$dir/reflexr" "$reflexr_base" "reflexr[sqlite,postgres]==$REFLEXR_VERSION" \
		"pytest==$PYTEST_VERSION" "pytest-asyncio==$PYTEST_ASYNCIO_VERSION" "mypy==$MYPY_VERSION" || rc=1
	return "$rc"
}

python_test() { # WHEEL [DIR: made by python_test_venvs; default: made here]
	local wheel=$1 dir=${2:-} rc=0 log_reflexr
	if [ -z "$dir" ]; then
		dir=$(mktemp -d "${TMPDIR:-/tmp}/execstore-py.XXXXXX")
		python_test_venvs "$dir" || rc=1
	fi
	echo "python: harel $HAREL_VERSION venv (Python 3.11) with the wheel" >&2
	[ "$rc" -eq 0 ] && _pip "$dir/harel/bin/python" "$wheel" || rc=1
	echo "python: reflexr $REFLEXR_VERSION venv ($("$dir/reflexr/bin/python" --version 2>&1)) with the wheel" >&2
	[ "$rc" -eq 0 ] && _pip "$dir/reflexr/bin/python" "$wheel" || rc=1
	if [ "$rc" -eq 0 ]; then
		# From a directory without the sources, so `import execstore` is the installed wheel.
		# reflexr's tests beside harel's: each waits on its own servers, files and sleeps as
		# much as it computes; their output is shown one after the other.
		log_reflexr=$(mktemp)
		(cd "$dir" && "$dir/reflexr/bin/python" -m pytest -q -rs -p no:cacheprovider "$OLDPWD/tests/python/reflexr") \
			>"$log_reflexr" 2>&1 &
		local reflexr_pid=$!
		(cd "$dir" && "$dir/harel/bin/python" -m pytest -q -rs -p no:cacheprovider "$OLDPWD/tests/python/harel") || rc=1
		harel_suite_test "$dir/harel/bin/python" || rc=1
		wait "$reflexr_pid" || rc=1
		echo "python: reflexr's tests (run beside harel's)" >&2
		cat "$log_reflexr"
		rm -f "$log_reflexr"
	fi
	rm -rf "$dir"
	return "$rc"
}

harel_suite_test() { # PYTHON (a venv's, with harel, pytest, pytest-asyncio, redis and the wheel)
	local py=$1 cache sdist dir rc=0 files
	cache="$(_python_cache)/harel-$HAREL_VERSION-sdist"
	sdist="$cache/harel-$HAREL_VERSION.tar.gz"
	if ! [ -s "$sdist" ]; then
		echo "python: fetching harel $HAREL_VERSION's sdist (its tests) into $cache" >&2
		mkdir -p "$cache"
		"$py" -m pip download --quiet --disable-pip-version-check --no-input \
			--no-binary :all: --no-deps "harel==$HAREL_VERSION" -d "$cache" >&2 || return 1
	fi
	dir=$(mktemp -d "${TMPDIR:-/tmp}/execstore-harel-suite.XXXXXX")
	tar -xzf "$sdist" -C "$dir" || { rm -rf "$dir"; return 1; }
	dir="$dir/harel-$HAREL_VERSION"
	# The installed harel (the one swapped), not the sdist's copy of its sources.
	rm -rf "$dir/src"
	files=$(cd "$dir" && grep -rl --include='*.py' -e SqliteStore test/unit test/integration | sort)
	echo "python: harel $HAREL_VERSION's own suite, $(wc -w <<<"$files") files, with execstore.harel's stores" >&2
	(cd "$dir" && EXECSTORE_HAREL_SWAP=1 PYTHONPATH="$OLDPWD/tests/python/harel_suite" \
		"$py" -m pytest -q -rs -p no:cacheprovider -o asyncio_default_fixture_loop_scope=function -p swap $files) || rc=1
	rm -rf "$(dirname "$dir")"
	return "$rc"
}

# The packaging tools python_wheel links with, and the PyPI checks.
# shellcheck source=pypi.sh
. "$(dirname "${BASH_SOURCE[0]}")/pypi.sh"
