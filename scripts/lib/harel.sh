# shellcheck shell=bash
# scripts/lib/harel.sh: the harel 0.9.0 venv, shared by scripts/test (interop tests) and
# bench/compare (the harel side of workload W1). Source it; it only defines things.
#
#   HAREL_VERSION            the harel release execstore is compatible with
#   PSYCOPG_VERSION          the psycopg 3 release harel's PostgresStore runs on in the venv
#                            (harel's optional "postgres" extra; the PostgreSQL interop test)
#   harel_venv_dir           where the venv lives: $EXECSTORE_CACHE/harel-$HAREL_VERSION
#                            (EXECSTORE_CACHE defaults to ~/.cache/execstore)
#   has_harel PYTHON         whether PYTHON imports harel at exactly $HAREL_VERSION
#   has_psycopg PYTHON       whether PYTHON imports psycopg at exactly $PSYCOPG_VERSION
#   make_harel_venv VENV     (re)create VENV and pip-install harel==$HAREL_VERSION and
#                            psycopg[binary]==$PSYCOPG_VERSION into it; the caller checks the
#                            result with has_harel and has_psycopg
#   add_psycopg PYTHON       pip-install psycopg[binary]==$PSYCOPG_VERSION into PYTHON's env
#                            (a venv made before psycopg was part of it)

HAREL_VERSION=0.9.0
PSYCOPG_VERSION=3.3.9

harel_venv_dir() {
	printf '%s/harel-%s\n' "${EXECSTORE_CACHE:-${HOME:-/root}/.cache/execstore}" "$HAREL_VERSION"
}

has_harel() { # PYTHON -> whether it imports harel at exactly $HAREL_VERSION
	"$1" - "$HAREL_VERSION" >/dev/null 2>&1 <<'PY'
import importlib.metadata, sys
import harel  # noqa: F401
sys.exit(importlib.metadata.version("harel") != sys.argv[1])
PY
}

has_psycopg() { # PYTHON -> whether it imports psycopg at exactly $PSYCOPG_VERSION
	"$1" - "$PSYCOPG_VERSION" >/dev/null 2>&1 <<'PY'
import importlib.metadata, sys
import psycopg  # noqa: F401
sys.exit(importlib.metadata.version("psycopg") != sys.argv[1])
PY
}

add_psycopg() { # PYTHON
	"$1" -m pip install --quiet --disable-pip-version-check --no-input "psycopg[binary]==$PSYCOPG_VERSION"
}

make_harel_venv() { # VENV
	local venv=$1
	rm -rf "$venv"
	mkdir -p "$(dirname "$venv")"
	python3 -m venv "$venv"
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
		"harel==$HAREL_VERSION" "psycopg[binary]==$PSYCOPG_VERSION"
}
