# shellcheck shell=bash
# scripts/lib/reflexr.sh: the reflexr 0.1.1 venv (Python 3.12), for the workspace interop tests
# and the W2 comparison (bench/compare-w2). Source it; it only defines things.
#
#   REFLEXR_VERSION          the reflexr release execstore's workspace tables are compatible with
#   reflexr_venv_dir         $EXECSTORE_CACHE/reflexr-$REFLEXR_VERSION (default cache ~/.cache/execstore)
#   reflexr_base_python      a Python >= 3.12 to make the venv with: $EXECSTORE_PYTHON312, pyenv's
#                            3.12.x, or python3.12 on PATH; fails if there is none
#   has_reflexr PYTHON       whether PYTHON imports reflexr at exactly $REFLEXR_VERSION, with
#                            its sqlite and postgres extras (aiosqlite, asyncpg)
#   make_reflexr_venv VENV   (re)create VENV and pip-install reflexr[sqlite,postgres]==$REFLEXR_VERSION

REFLEXR_VERSION=0.1.1

reflexr_venv_dir() {
	printf '%s/reflexr-%s\n' "${EXECSTORE_CACHE:-${HOME:-/root}/.cache/execstore}" "$REFLEXR_VERSION"
}

reflexr_base_python() {
	local p
	if [[ -n ${EXECSTORE_PYTHON312:-} ]]; then
		printf '%s\n' "$EXECSTORE_PYTHON312"
		return 0
	fi
	if command -v pyenv >/dev/null 2>&1; then
		p=$(ls -d "$(pyenv root)"/versions/3.12*/bin/python 2>/dev/null | sort -V | tail -n 1)
		if [[ -n $p && -x $p ]]; then
			printf '%s\n' "$p"
			return 0
		fi
	fi
	for p in python3.12 python3.13; do
		if command -v "$p" >/dev/null 2>&1; then
			command -v "$p"
			return 0
		fi
	done
	echo "reflexr.sh: reflexr $REFLEXR_VERSION needs Python >= 3.12 (set EXECSTORE_PYTHON312)" >&2
	return 1
}

has_reflexr() { # PYTHON
	"$1" - "$REFLEXR_VERSION" >/dev/null 2>&1 <<'PY'
import importlib.metadata, sys
import reflexr.sql, aiosqlite, asyncpg  # noqa: F401
sys.exit(importlib.metadata.version("reflexr") != sys.argv[1])
PY
}

make_reflexr_venv() { # VENV
	local venv=$1 base
	base=$(reflexr_base_python) || return 1
	rm -rf "$venv"
	mkdir -p "$(dirname "$venv")"
	"$base" -m venv "$venv"
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
		"reflexr[sqlite,postgres]==$REFLEXR_VERSION"
}
