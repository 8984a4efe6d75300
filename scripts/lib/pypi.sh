# shellcheck shell=bash
# scripts/lib/pypi.sh: the Python package as PyPI would carry it: a manylinux wheel linked by
# zig, the sdist, their metadata checks, and installs of both in fresh venvs
# (tests/python/pypi). python.sh sources it; it only defines things.
#
#   ZIGLANG_VERSION, AUDITWHEEL_VERSION, TWINE_VERSION, WHEEL_VERSION   the pinned tools (PyPI)
#   WHEEL_MAX_BYTES          the release wheel's size limit (6 MiB)
#   pypi_tools               a cached venv with the tools above and pytest; prints its bin/
#   pypi_sdist OUTDIR        `maturin sdist` into OUTDIR; prints the sdist's path
#   pypi_split_symbols WHEEL SYMDIR
#                            moves the debug info of WHEEL's compiled module into
#                            SYMDIR/_core.abi3.so.debug, strips the module (a .gnu_debuglink
#                            names that file) and repacks WHEEL in place; prints its path
#   pypi_test WHEEL SDIST    tests/python/pypi: auditwheel, twine check, the metadata, the
#                            README's quick starts from the wheel (Python 3.11, execstore[harel])
#                            and from the sdist (Python 3.12, execstore[reflexr]), the
#                            ImportError of a missing engine. The sdist builds in the dev profile
#                            into EXECSTORE_SDIST_TARGET_DIR (default: the workspace's target
#                            directory), so only execstore's own crates compile there

ZIGLANG_VERSION=0.17.0
AUDITWHEEL_VERSION=6.8.2
TWINE_VERSION=7.0.0
WHEEL_VERSION=0.48.0
WHEEL_MAX_BYTES=$((6 * 1024 * 1024))

# shellcheck source=cargo.sh
. "$(dirname "${BASH_SOURCE[0]}")/cargo.sh"

pypi_tools() {
	local dir stamp
	dir="$(_python_cache)/pypi-tools"
	stamp="ziglang==$ZIGLANG_VERSION auditwheel==$AUDITWHEEL_VERSION twine==$TWINE_VERSION wheel==$WHEEL_VERSION pytest==$PYTEST_VERSION"
	if [[ "$(cat "$dir/.stamp" 2>/dev/null)" != "$stamp" ]]; then
		echo "pypi: installing $stamp into $dir" >&2
		# shellcheck disable=SC2086 # the stamp is the list of packages
		python_venv "$dir" python3 $stamp >&2 || return 1
		printf '%s\n' "$stamp" >"$dir/.stamp"
	fi
	printf '%s\n' "$dir/bin"
}

pypi_sdist() { # OUTDIR
	local out=$1 maturin
	maturin=$(python_maturin) || return 1
	mkdir -p "$out"
	"$maturin" sdist -m crates/execstore-python/Cargo.toml --out "$out" >&2 || return 1
	ls "$out"/execstore-*.tar.gz | head -n 1
}

pypi_split_symbols() { # WHEEL SYMDIR
	local wheel=$1 symdir=$2 tools tmp so
	tools=$(pypi_tools) || return 1
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/execstore-repack.XXXXXX")
	"$tools/python" -m wheel unpack "$wheel" -d "$tmp" >&2 || { rm -rf "$tmp"; return 1; }
	so=$(ls "$tmp"/*/execstore/_core*.so)
	mkdir -p "$symdir"
	rm -f "$symdir/_core.abi3.so.debug"
	mkdir -p "$tmp/out" &&
		objcopy --only-keep-debug "$so" "$symdir/_core.abi3.so.debug" &&
		objcopy --strip-debug --strip-unneeded --add-gnu-debuglink="$symdir/_core.abi3.so.debug" "$so" &&
		rm "$wheel" &&
		"$tools/python" -m wheel pack "$(dirname "$(dirname "$so")")" -d "$tmp/out" >&2 &&
		mv "$tmp"/out/*.whl "$(dirname "$wheel")/" || {
		rm -rf "$tmp"
		return 1
	}
	rm -rf "$tmp"
	ls "$(dirname "$wheel")"/execstore-*.whl | head -n 1
}

pypi_test() { # WHEEL SDIST
	local wheel=$1 sdist=$2 tools reflexr_base target dir rc=0
	tools=$(pypi_tools) || return 1
	reflexr_base=$(reflexr_base_python) || return 1
	target=${EXECSTORE_SDIST_TARGET_DIR:-$(cargo_target_dir)} || return 1
	dir=$(mktemp -d "${TMPDIR:-/tmp}/execstore-pypi.XXXXXX")
	# The sdist's own build (pip, maturin's PEP 517 backend, isolated) in the dev profile in
	# the shared target directory: its dependencies are those `cargo test` built.
	(cd "$dir" && EXECSTORE_WHEEL="$wheel" EXECSTORE_SDIST="$sdist" EXECSTORE_PYTHON311=python3 \
		EXECSTORE_PYTHON312="$reflexr_base" EXECSTORE_PYPI_TOOLS="$tools" \
		EXECSTORE_SDIST_TARGET_DIR="$target" "$tools/python" -m pytest -q -rs -p no:cacheprovider \
		-W ignore::pytest.PytestConfigWarning --durations=0 "$OLDPWD/tests/python/pypi") || rc=1
	rm -rf "$dir"
	return "$rc"
}
