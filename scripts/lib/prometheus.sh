# shellcheck shell=bash
# Prometheus' own Python client, whose text parser (prometheus_client.parser) reads the
# monitor's /metrics answer in crates/execstore-monitor-api/tests/prometheus.rs.
#
#   PROMETHEUS_CLIENT_VERSION  the version installed
#   prometheus_venv_dir        where its venv is kept (in the cache)
#   has_prometheus_client PY   whether PY imports prometheus_client at that version
#   ensure_prometheus_client   makes the venv unless present; exports EXECSTORE_PROMETHEUS_PYTHON

PROMETHEUS_CLIENT_VERSION=0.26.0

prometheus_venv_dir() {
	printf '%s/prometheus-client-%s\n' "${EXECSTORE_CACHE:-${HOME:-/root}/.cache/execstore}" "$PROMETHEUS_CLIENT_VERSION"
}

has_prometheus_client() { # PYTHON
	"$1" - "$PROMETHEUS_CLIENT_VERSION" >/dev/null 2>&1 <<'PY'
import importlib.metadata, sys
import prometheus_client.parser  # noqa: F401
sys.exit(importlib.metadata.version("prometheus_client") != sys.argv[1])
PY
}

ensure_prometheus_client() {
	local venv py
	venv=$(prometheus_venv_dir)
	py="$venv/bin/python"
	if [ -x "$py" ] && has_prometheus_client "$py"; then
		printf '    prometheus_client %s present in %s\n' "$PROMETHEUS_CLIENT_VERSION" "$venv"
	else
		rm -rf "$venv"
		mkdir -p "$(dirname "$venv")"
		python3 -m venv "$venv"
		"$py" -m pip install --quiet --disable-pip-version-check --no-input \
			"prometheus_client==$PROMETHEUS_CLIENT_VERSION"
		has_prometheus_client "$py" || {
			printf 'error: %s does not import prometheus_client %s\n' "$py" "$PROMETHEUS_CLIENT_VERSION" >&2
			return 1
		}
	fi
	export EXECSTORE_PROMETHEUS_PYTHON="$py"
}
