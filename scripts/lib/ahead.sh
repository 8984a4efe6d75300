# shellcheck shell=bash
# scripts/lib/ahead.sh: the builds of later steps, started early in the background at the
# lowest CPU priority. Source it after wasm.sh, python.sh and fuzz.sh; it only defines things.
#
# The test command's steps used to build one after the other: the Python wheel (maturin, zig:
# every dependency again for the explicit target), then wasm-bindgen-cli (cargo install), the
# npm package's wasm (a release build with LTO) and the wasm32 test binaries. Meanwhile the
# steps before them often leave a core idle: the tests of `cargo test` wait on fsync,
# PostgreSQL, child processes and sleeps, pytest runs one test at a time. Started under
# `nice -n 19`, these builds take that idle time and yield the CPU to the foreground whenever
# it wants it (the scheduler's weight at nice 19 is about 1/70 of nice 0's), so the
# foreground's tests see the machine they saw before, and the later steps find their builds
# done, or less to wait for.
#
#   ahead_start   returns at once, having started (wasm skipped when EXECSTORE_SKIP_WASM
#                 says so):
#                   wasm:  wasm_install_build (wasm-bindgen-cli), `npm run build:wasm` (the
#                          package's wasm) and `cargo test --no-run` of the wasm32 suites;
#                   wheel: python_wheel into a fresh folder, built in target/wheel
#                          (EXECSTORE_WHEEL_TARGET_DIR), never the workspace's target directory,
#                          whose lock the foreground's cargo holds;
#                   fuzz:  fuzz_build (cargo-fuzz, nightly, fuzz/target), when fuzz_wanted,
#                          once wasm and wheel have ended: the last step needs it, so it
#                          takes no idle time from the builds needed sooner.
#   ahead_wait NAME
#                 waits for NAME's build and returns its status; its output is printed
#                 (indented) when it failed. The step that waits runs the same commands again
#                 after a failure, in the foreground, where cargo finds what was built: a
#                 failure is shown where it used to be, never hidden.
#   AHEAD_WHEEL   the wheel the background built (after ahead_wait wheel succeeded).

declare -A AHEAD_PIDS=()
declare -A AHEAD_LOGS=()
AHEAD_WHEEL=""
AHEAD_DIR=""

# The wasm32 test binaries wasm_test runs (their build only).
_ahead_wasm_tests() {
	CARGO_TARGET_DIR="$(_wasm_target_dir)" cargo test --target "$WASM_RUST_TARGET" -p execstore-wasm \
		--test conformance_node --test conformance_opfs --test workspace_opfs --no-run
}

_ahead_wasm() {
	wasm_install_build && CARGO_TARGET_DIR="$(_wasm_target_dir)" npm run --silent build:wasm &&
		_ahead_wasm_tests
}

# Whether PID is still running (a zombie, ended and not yet reaped, is not).
_ahead_running() {
	local state
	state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ]
}

_ahead_fuzz() { # PIDS of the builds to let go first
	local pid
	for pid in "$@"; do
		while _ahead_running "$pid"; do sleep 5; done
	done
	fuzz_build
}

_ahead_wheel() {
	local wheel
	# its own target directory: cargo locks the one it builds in, and this build must never
	# keep the foreground's `cargo test` waiting for the workspace's
	wheel=$(CARGO_TARGET_DIR="${EXECSTORE_WHEEL_TARGET_DIR:-$PWD/target/wheel}" \
		python_wheel "$AHEAD_DIR/wheel" --quiet) || return 1
	printf '%s\n' "$wheel" >"$AHEAD_DIR/wheel.path"
}

ahead_start() {
	AHEAD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/execstore-ahead.XXXXXX")
	local name args
	for name in wasm wheel fuzz; do
		[ "$name" = wasm ] && [ -n "${EXECSTORE_SKIP_WASM:-}" ] && continue
		[ "$name" = fuzz ] && ! fuzz_wanted && continue
		args=()
		[ "$name" = fuzz ] && args=("${AHEAD_PIDS[@]}")
		AHEAD_LOGS[$name]="$AHEAD_DIR/$name.log"
		# a function of this shell, in a subshell at the lowest priority
		(renice -n 19 -p "$BASHPID" >/dev/null && "_ahead_$name" "${args[@]}") >"${AHEAD_LOGS[$name]}" 2>&1 &
		AHEAD_PIDS[$name]=$!
		printf '    started in the background (nice 19): %s\n' "$name"
	done
}

ahead_wait() { # NAME
	local name=$1 pid started=$SECONDS rc=0
	pid=${AHEAD_PIDS[$name]:-}
	[ -n "$pid" ] || return 1
	wait "$pid" || rc=$?
	unset "AHEAD_PIDS[$name]"
	if [ "$rc" -eq 0 ]; then
		printf '    built in the background: %s (waited %d s for it)\n' "$name" $((SECONDS - started))
		[ "$name" = wheel ] && AHEAD_WHEEL=$(cat "$AHEAD_DIR/wheel.path")
	else
		printf '    the background build of %s failed (exit %d); its output, then the step builds it again:\n' "$name" "$rc"
		sed 's/^/    | /' "${AHEAD_LOGS[$name]}" | tail -60
	fi
	return "$rc"
}

# PID and every process under it.
_ahead_kill_tree() {
	local child
	for child in $(pgrep -P "$1" 2>/dev/null); do
		_ahead_kill_tree "$child"
	done
	kill "$1" 2>/dev/null
}

# Stops what is still running (the test command's exit, after a failure before the wait).
ahead_stop() {
	local pid
	for pid in "${AHEAD_PIDS[@]}"; do
		_ahead_kill_tree "$pid"
	done
	[ -z "$AHEAD_DIR" ] || rm -rf "$AHEAD_DIR"
}
