# shellcheck shell=bash
# scripts/lib/prefetch.sh: what the test command fetches in the background while its first
# builds (cargo fmt, clippy, the wasm32 core) keep both cores busy. Fetching is network and
# disk, not CPU: on a fresh machine it used to run alone, step by step. Source it after
# apt.sh, harel.sh, reflexr.sh, prometheus.sh and python.sh; it only defines things.
#
#   prefetch_start  returns at once, having started in the background: as root, apt-get update
#                   and a download (--download-only) of the Debian packages later steps install
#                   and this machine lacks; the harel, reflexr and prometheus_client venvs the
#                   later steps would make, when they are missing; the Python package's
#                   tools (maturin, and zig, auditwheel, twine for the PyPI checks), each
#                   skipped when present. Its output goes to a log.
#   prefetch_wait   waits for it and says what it did and how long it took. The steps after it
#                   find the venvs present and install the packages from apt's cache, without
#                   another apt-get update. Nothing here is trusted: a step that finds its
#                   venv or package missing makes it again in the foreground, as before.

PREFETCH_PIDS=()
PREFETCH_LOG=""
PREFETCH_STARTED=0

# The Debian packages the test command's steps install when missing (postgres.sh, component.sh,
# wasm.sh, browser.sh), those of them not installed here.
_prefetch_debian_missing() {
	local p
	for p in postgresql clang wasi-libc chromium chromium-driver; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || printf '%s\n' "$p"
	done
}

prefetch_start() {
	PREFETCH_LOG=$(mktemp "${TMPDIR:-/tmp}/execstore-prefetch.XXXXXX")
	PREFETCH_STARTED=$SECONDS
	local debs=()
	if command -v dpkg-query >/dev/null && [ "$(id -u)" -eq 0 ]; then
		mapfile -t debs < <(_prefetch_debian_missing)
	fi
	if [ ${#debs[@]} -gt 0 ]; then
		printf '    downloading %s from Debian (installed by the steps that need them)\n' "${debs[*]}"
		(
			export DEBIAN_FRONTEND=noninteractive
			apt-get update -qq &&
				apt-get install -y -qq --download-only --no-install-recommends \
					-o DPkg::Lock::Timeout=300 "${debs[@]}" &&
				echo "apt: ${debs[*]} downloaded"
		) >>"$PREFETCH_LOG" 2>&1 &
		PREFETCH_PIDS+=($!)
		PREFETCH_APT_PID=$!
	fi
	local venv
	venv=$(harel_venv_dir)
	if [ -z "${EXECSTORE_HAREL_PYTHON:-}" ] && ! has_harel "$venv/bin/python"; then
		printf '    making %s\n' "$venv"
		(make_harel_venv "$venv" && echo "venv: $venv") >>"$PREFETCH_LOG" 2>&1 &
		PREFETCH_PIDS+=($!)
	fi
	venv=$(reflexr_venv_dir)
	if [ -z "${EXECSTORE_REFLEXR_PYTHON:-}" ] && ! has_reflexr "$venv/bin/python"; then
		printf '    making %s\n' "$venv"
		(make_reflexr_venv "$venv" && echo "venv: $venv") >>"$PREFETCH_LOG" 2>&1 &
		PREFETCH_PIDS+=($!)
	fi
	venv=$(prometheus_venv_dir)
	if [ -z "${EXECSTORE_PROMETHEUS_PYTHON:-}" ] && ! has_prometheus_client "$venv/bin/python"; then
		printf '    making %s\n' "$venv"
		(ensure_prometheus_client && echo "venv: $venv") >>"$PREFETCH_LOG" 2>&1 &
		PREFETCH_PIDS+=($!)
	fi
	# maturin, and the PyPI checks' tools (zig among them: the biggest download of the run)
	printf '    the Python package tools: maturin %s, ziglang %s, auditwheel, twine\n' "$MATURIN_VERSION" "$ZIGLANG_VERSION"
	(python_maturin >/dev/null && pypi_tools >/dev/null && echo "python tools: maturin, $(pypi_tools)") \
		>>"$PREFETCH_LOG" 2>&1 &
	PREFETCH_PIDS+=($!)
	[ ${#PREFETCH_PIDS[@]} -gt 0 ] || printf '    nothing to fetch: every package and venv is present\n'
}

prefetch_wait() {
	[ ${#PREFETCH_PIDS[@]} -gt 0 ] || return 0
	local pid failed=0
	for pid in "${PREFETCH_PIDS[@]}"; do
		if ! wait "$pid"; then
			failed=1
		elif [ "$pid" = "${PREFETCH_APT_PID:-}" ]; then
			# apt's lists are fresh: apt_install need not update them again
			export EXECSTORE_APT_UPDATED=1
		fi
	done
	PREFETCH_PIDS=()
	sed 's/^/    /' "$PREFETCH_LOG"
	rm -f "$PREFETCH_LOG"
	if [ "$failed" -ne 0 ]; then
		printf '    some of it failed (above): the steps that need it will try again\n'
	fi
	printf '    fetched in the background in %d s\n' $((SECONDS - PREFETCH_STARTED))
}
