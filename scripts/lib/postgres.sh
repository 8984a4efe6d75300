# shellcheck shell=bash
# scripts/lib/postgres.sh: a throwaway PostgreSQL cluster for the execstore-postgres tests.
# Source it; it only defines things.
#
#   pg_bin_dir               the newest /usr/lib/postgresql/<major>/bin with initdb, or fails
#   pg_install               installs Debian's `postgresql` package if no initdb is found
#   pg_start                 initdb (as the `postgres` OS user) into a temporary directory,
#                            listen on 127.0.0.1 only, on a free port, trust auth; start it and
#                            export EXECSTORE_PG_URL=postgres://postgres@127.0.0.1:PORT/postgres
#                            and EXECSTORE_PG_DIR. Idempotent: a cluster this shell started and
#                            that still answers is reused.
#   pg_stop                  stops the cluster (`pg_ctl stop -m fast`) and removes its directory;
#                            safe to call twice and from a trap:  trap pg_stop EXIT
#
# Run as root (the cluster runs as `postgres`) or as a non-root user (it runs as that user).

# shellcheck source=apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

pg_bin_dir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	if [[ -n $d && -x $d/initdb ]]; then
		printf '%s\n' "$d"
	else
		return 1
	fi
}

pg_install() {
	pg_bin_dir >/dev/null && return 0
	apt_install postgresql
	pg_bin_dir >/dev/null
}

# Runs "$@" as the cluster's owner.
_pg_as_owner() {
	if [[ $(id -u) -eq 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

_pg_free_port() {
	python3 - <<'PY'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

pg_start() {
	local bin dir port
	if [[ -n ${EXECSTORE_PG_DIR:-} && -d ${EXECSTORE_PG_DIR} ]] && bin=$(pg_bin_dir) &&
		_pg_as_owner "$bin/pg_ctl" status -D "$EXECSTORE_PG_DIR/data" >/dev/null 2>&1; then
		return 0 # already running: reuse it
	fi
	pg_install || {
		echo "postgres.sh: no PostgreSQL (initdb) available" >&2
		return 1
	}
	bin=$(pg_bin_dir)
	dir=$(mktemp -d "${TMPDIR:-/tmp}/execstore-pg.XXXXXX")
	chmod 755 "$dir"
	[[ $(id -u) -eq 0 ]] && chown postgres: "$dir"
	_pg_as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C \
		--no-sync >"$dir/initdb.log" 2>&1 || {
		echo "postgres.sh: initdb failed:" >&2
		cat "$dir/initdb.log" >&2
		rm -rf "$dir"
		return 1
	}
	# Local TCP only, trust auth (initdb -A trust wrote pg_hba.conf), sockets in our own dir.
	# fsync stays on: the tests are about durability, and a kill test must see real commits.
	for _ in 1 2 3; do
		port=$(_pg_free_port)
		if _pg_as_owner "$bin/pg_ctl" start -w -t 60 -D "$dir/data" -l "$dir/server.log" \
			-o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c max_connections=200" \
			>/dev/null 2>&1; then
			export EXECSTORE_PG_DIR=$dir
			export EXECSTORE_PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
			return 0
		fi
	done
	echo "postgres.sh: the server did not start:" >&2
	cat "$dir/server.log" >&2
	rm -rf "$dir"
	return 1
}

pg_stop() {
	local dir=${EXECSTORE_PG_DIR:-} bin
	[[ -n $dir && -d $dir ]] || return 0
	if bin=$(pg_bin_dir); then
		_pg_as_owner "$bin/pg_ctl" stop -m fast -w -D "$dir/data" >/dev/null 2>&1 || true
	fi
	rm -rf "$dir"
	unset EXECSTORE_PG_DIR EXECSTORE_PG_URL
}
