# shellcheck shell=bash
# scripts/lib/fuzz.sh: a short real run of every fuzz target (fuzz/, libFuzzer through
# cargo-fuzz, on nightly). Source it; it only defines things. scripts/test calls:
#
#   fuzz_run   with EXECSTORE_FUZZ_SECONDS set and rustup's `nightly` installed: installs
#              cargo-fuzz $CARGO_FUZZ_VERSION into the cache if missing, builds the targets (release, with
#              debug assertions, so an overflow is a crash), and runs each for
#              $EXECSTORE_FUZZ_SECONDS seconds from the committed seed corpus (fuzz/corpus/NAME),
#              writing what it discovers to a temporary folder, never to the corpus. Prints
#              libFuzzer's closing line (`#N DONE ... exec/s`) of each, and one libtest-style
#              result line per target (`test fuzz::NAME ... ok`, `... FAILED`, `... ignored,
#              REASON`) for the test command's totals. Without nightly every target counts as
#              skipped, saying so. A crash leaves its input in fuzz/artifacts/NAME/.
#
# The seed corpus and every finding are also replayed on stable, without libFuzzer, by
# `cargo test --workspace` (crates/execstore-fuzz-targets/tests/replay.rs).
#
# The real run is opt-in: its cold build (release, debug assertions, AddressSanitizer, SQLite's
# C among it) took 10 minutes on this project's shared 2-core machine (other builds running),
# past the few minutes a step of the test command may take; warm, the step took 61 s with 10 s
# a target. By default every target counts as skipped, saying how to turn it on.
#
# Environment:
#   EXECSTORE_FUZZ_SECONDS  seconds per target (default 0: no real run, the targets skipped).

CARGO_FUZZ_VERSION=0.13.2
FUZZ_TARGETS=(cursor ingest pyjson monitor differential)

_fuzz_say() { printf '    %s\n' "$*"; }

# Every target as skipped for REASON, in libtest's words.
_fuzz_skip_all() {
	local t
	for t in "${FUZZ_TARGETS[@]}"; do
		printf 'test fuzz::%s ... ignored, %s\n' "$t" "$1"
	done
	printf 'test result: ok. 0 passed; 0 failed; %d ignored; 0 measured; 0 filtered out\n' "${#FUZZ_TARGETS[@]}"
}

_fuzz_cargo_fuzz() {
	local root="${EXECSTORE_CACHE:-$HOME/.cache/execstore}/cargo-fuzz-$CARGO_FUZZ_VERSION"
	if [ ! -x "$root/bin/cargo-fuzz" ]; then
		_fuzz_say "cargo install cargo-fuzz $CARGO_FUZZ_VERSION (into $root)"
		cargo install cargo-fuzz --version "=$CARGO_FUZZ_VERSION" --locked --root "$root" >&2 || return 1
	fi
	printf '%s/bin\n' "$root"
}

fuzz_run() {
	local seconds="${EXECSTORE_FUZZ_SECONDS:-0}"
	if [ "$seconds" = 0 ]; then
		_fuzz_say "skipped: a real run is opt-in (EXECSTORE_FUZZ_SECONDS=10); cargo test replayed the seed corpus"
		_fuzz_skip_all "real fuzzing is opt-in: EXECSTORE_FUZZ_SECONDS=N (cargo test replays the seed corpus)"
		return 0
	fi
	if ! command -v rustup >/dev/null || ! rustup run nightly rustc --version >/dev/null 2>&1; then
		_fuzz_say "skipped: no nightly toolchain (libFuzzer needs it; the seed corpus is replayed by cargo test)"
		_fuzz_skip_all "no nightly toolchain for libFuzzer (cargo test replays the seed corpus)"
		return 0
	fi
	local bin
	bin=$(_fuzz_cargo_fuzz) || return 1
	local start=$SECONDS
	(cd fuzz && PATH="$bin:$PATH" cargo +nightly fuzz build -O -a) || return 1
	_fuzz_say "built in $((SECONDS - start))s"
	local t scratch log failed=0 passed=0 done_line
	scratch=$(mktemp -d "${TMPDIR:-/tmp}/execstore-fuzz.XXXXXX")
	for t in "${FUZZ_TARGETS[@]}"; do
		mkdir -p "$scratch/$t"
		log="$scratch/$t.log"
		if (cd fuzz && PATH="$bin:$PATH" cargo +nightly fuzz run -O -a "$t" "$scratch/$t" "corpus/$t" -- \
			-max_total_time="$seconds" -max_len=4096) >"$log" 2>&1; then
			done_line=$(grep -a -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 | tr -s '[:space:]' ' ')
			_fuzz_say "$t: ${done_line:-done}"
			printf 'test fuzz::%s ... ok\n' "$t"
			passed=$((passed + 1))
		else
			tail -40 "$log"
			printf 'test fuzz::%s ... FAILED\n' "$t"
			failed=$((failed + 1))
		fi
	done
	rm -rf "$scratch"
	printf 'test result: %s. %d passed; %d failed; 0 ignored; 0 measured; 0 filtered out\n' \
		"$([ "$failed" = 0 ] && echo ok || echo FAILED)" "$passed" "$failed"
	_fuzz_say "fuzzing took $((SECONDS - start))s"
	[ "$failed" = 0 ]
}
