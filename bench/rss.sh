#!/usr/bin/env bash
# bench/rss.sh: peak resident memory (GNU /usr/bin/time -v, "Maximum resident set size") of
#
#   (a) list     `execstore --db X --json list --all` on a store of N executions (default 100k),
#                made by `execstore bench --executions N --events 1` (every execution listed,
#                whatever its status; the output is checked to hold N items);
#   (b) drain    draining an outbox of M rows (default 1M): a store made by `execstore demo`,
#                its outbox filled with W1-shaped events (bench/fill_outbox.py, harel's exact
#                JSON), then drained by the CLI's drain command. The CLI has none yet: this
#                reports it missing, unless --drain-cmd names one ('{db}' is the store path,
#                '{bin}' the execstore binary), e.g. --drain-cmd '{bin} --db {db} outbox drain';
#                after the run the outbox must be empty;
#   (c) bench    for reference, the whole `execstore bench --executions M/10 --events 10`
#                process: its W1 outbox phase drains M rows through the store API (paged
#                pending_outbox + one ack each), so its peak bounds that drain from above
#                (skip with --no-bench).
#
# and compares each with the limit (64 MiB). Exit status 1 if one is over the limit, or a run
# fails; a missing drain command is reported, not a failure.
#
#   bench/rss.sh [--executions N] [--outbox M] [--limit-mib L] [--drain-cmd CMD] [--no-bench]
#                [--keep DIR]
#
# --keep DIR keeps the stores and the outputs in DIR (default: a temp dir, removed).
# Installs GNU time (apt-get install -y time) if /usr/bin/time is missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"

executions=100000
outbox=1000000
limit_mib=64
drain_cmd=""
with_bench=1
keep=""

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}
die() {
	printf 'rss: %s\n' "$*" >&2
	exit 1
}
usage_error() {
	printf 'rss: %s (see --help)\n' "$*" >&2
	exit 2
}
log() { printf 'rss: %s\n' "$*" >&2; }
positive() { [[ $2 =~ ^[1-9][0-9]*$ ]] || usage_error "$1 wants a positive integer, got '$2'"; }

while [ $# -gt 0 ]; do
	case "$1" in
	--executions | --outbox | --limit-mib | --drain-cmd | --keep)
		[ $# -ge 2 ] || usage_error "$1 needs a value"
		case "$1" in
		--executions) positive "$1" "$2" && executions=$2 ;;
		--outbox) positive "$1" "$2" && outbox=$2 ;;
		--limit-mib) positive "$1" "$2" && limit_mib=$2 ;;
		--drain-cmd) drain_cmd=$2 ;;
		--keep) keep=$2 ;;
		esac
		shift 2
		;;
	--no-bench)
		with_bench=0
		shift
		;;
	-h | --help)
		usage
		exit 0
		;;
	*) usage_error "unknown argument '$1'" ;;
	esac
done

# --- tools ----------------------------------------------------------------------------------

if [ ! -x /usr/bin/time ] || ! /usr/bin/time -v true >/dev/null 2>&1; then
	log "installing GNU time"
	if [ "$(id -u)" = 0 ]; then
		apt-get install -y time >&2 || { apt-get update >&2 && apt-get install -y time >&2; }
	else
		sudo apt-get install -y time >&2
	fi
fi
/usr/bin/time -v true >/dev/null 2>&1 || die "/usr/bin/time is not GNU time (no -v)"
command -v python3 >/dev/null || die "python3 is needed (stdlib only)"

log "cargo build --release -p execstore-cli"
(cd "$root" && cargo build --release -p execstore-cli >&2)
bin="${CARGO_TARGET_DIR:-$root/target}/release/execstore"
case "$bin" in /*) ;; *) bin="$root/$bin" ;; esac
[ -x "$bin" ] || die "no binary at $bin after the build"

if [ -n "$keep" ]; then
	mkdir -p "$keep"
	dir=$(cd "$keep" && pwd)
else
	dir=$(mktemp -d "${TMPDIR:-/tmp}/execstore-rss.XXXXXX")
	trap 'rm -rf "$dir"' EXIT
fi

# --- helpers --------------------------------------------------------------------------------

results=() # "name|peak KiB or -|wall|note"
over=0

measure() { # NAME NOTE OUT CMD... -> CMD's stdout to OUT, its peak RSS into results
	local name=$1 note=$2 out=$3 tv="$dir/$1.time" rc=0
	shift 3
	log "measuring $name: $*"
	/usr/bin/time -v -o "$tv" "$@" >"$out" || rc=$?
	[ "$rc" -eq 0 ] || die "$name failed (exit $rc): $*"
	local kib wall
	kib=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tv")
	wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$tv")
	[ -n "$kib" ] || die "no 'Maximum resident set size' in $tv"
	[ "$kib" -le $((limit_mib * 1024)) ] || over=1
	results+=("$name|$kib|$wall|$note")
}

table_prefix() { # DB -> "harel" if its tables are harel_*, else empty
	python3 - "$1" <<'PY'
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
names = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
print("harel" if "harel_executions" in names and "executions" not in names else "")
PY
}

prefix_args() { # DB -> the CLI's --prefix flag for it, if any
	local p
	p=$(table_prefix "$1")
	[ -z "$p" ] || printf -- '--prefix\n%s\n' "$p"
}

# --- (a) listing N executions ---------------------------------------------------------------

list_db="$dir/list.db"
rm -f "$list_db" "$list_db-wal" "$list_db-shm"
log "(a) making a store of $executions executions with execstore bench --events 1"
"$bin" bench --backend sqlite --db "$list_db" --executions "$executions" --events 1 \
	--synchronous off --trace off >"$dir/list-store.json"
mapfile -t pa < <(prefix_args "$list_db")
measure "list --all --json ($executions executions)" "execstore ${pa[*]:+${pa[*]} }--json list --all" \
	"$dir/list.json" "$bin" --db "$list_db" "${pa[@]}" --json list --all
listed=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$dir/list.json")
[ "$listed" -eq "$executions" ] || die "list --all printed $listed items, the store holds $executions"
log "(a) listed $listed executions ($(wc -c <"$dir/list.json") bytes of JSON)"

# --- (b) draining an M-row outbox -----------------------------------------------------------

out_db="$dir/outbox.db"
rm -f "$out_db" "$out_db-wal" "$out_db-shm"
log "(b) making a store with execstore demo, then filling its outbox with $outbox rows"
"$bin" demo --no-serve --db "$out_db" --executions 20 >/dev/null
out_prefix=$(table_prefix "$out_db")
python3 "$here/fill_outbox.py" "$out_db" "$outbox" ${out_prefix:+--prefix "$out_prefix"}
pending() {
	python3 - "$out_db" "${out_prefix:+${out_prefix}_}outbox" <<'PY'
import sqlite3, sys
print(sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True).execute(f"SELECT count(*) FROM {sys.argv[2]}").fetchone()[0])
PY
}
before=$(pending)
if [ -z "$drain_cmd" ] && "$bin" --help 2>/dev/null | grep -qE '^ +drain( |$)'; then
	drain_cmd='{bin} --db {db} drain'
fi
if [ -n "$drain_cmd" ]; then
	cmd=${drain_cmd//\{bin\}/$bin}
	cmd=${cmd//\{db\}/$out_db}
	read -r -a argv <<<"$cmd"
	measure "drain outbox ($before rows)" "$drain_cmd" "$dir/drain.out" "${argv[@]}"
	left=$(pending)
	[ "$left" -eq 0 ] || die "after the drain $left of $before outbox rows are still pending"
else
	results+=("drain outbox ($before rows)|-|-|MISSING: the CLI has no drain command (execstore outbox only lists); pass --drain-cmd")
fi

# --- (c) the W1 bench process, which drains M rows through the store API --------------------

if [ "$with_bench" = 1 ]; then
	n=$((outbox / 10))
	[ "$n" -ge 1 ] || n=1
	bench_db="$dir/bench.db"
	rm -f "$bench_db" "$bench_db-wal" "$bench_db-shm"
	measure "bench W1 N=$n K=10 (drains $((n * 10)) outbox rows)" \
		"whole process; synchronous off, trace off" "$dir/bench.json" \
		"$bin" bench --backend sqlite --db "$bench_db" --executions "$n" --events 10 \
		--synchronous off --trace off
	acked=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["outbox_acked"])' "$dir/bench.json")
	[ "$acked" -eq $((n * 10)) ] || die "the bench acked $acked outbox rows, expected $((n * 10))"
fi

# --- report ---------------------------------------------------------------------------------

echo "peak RSS (GNU time -v, Maximum resident set size); limit ${limit_mib} MiB"
{
	echo "measurement|peak RSS|verdict|wall|what ran"
	for r in "${results[@]}"; do
		IFS='|' read -r name kib wall note <<<"$r"
		if [ "$kib" = - ]; then
			echo "$name|-|not measured|-|$note"
		else
			mib=$(awk -v k="$kib" 'BEGIN { printf "%.1f MiB", k / 1024 }')
			verdict=PASS
			[ "$kib" -le $((limit_mib * 1024)) ] || verdict="OVER (> ${limit_mib} MiB)"
			echo "$name|$mib|$verdict|$wall|$note"
		fi
	done
} | column -t -s '|' -o ' | '
[ -z "$keep" ] || echo "stores and outputs kept in $dir"
exit "$over"
