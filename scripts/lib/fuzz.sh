# shellcheck shell=bash
# scripts/lib/fuzz.sh: a short real run of every fuzz target (fuzz/, libFuzzer through
# cargo-fuzz, on nightly). Source it; it only defines things. scripts/test calls:
#
#   fuzz_wanted  whether there is a real run to make: EXECSTORE_FUZZ_SECONDS is not 0 and
#                rustup's `nightly` is installed. Otherwise sets FUZZ_SKIP (why) and fails.
#   fuzz_build   installs cargo-fuzz $CARGO_FUZZ_VERSION into the cache if missing and builds
#                the targets (`-D`: fuzz/Cargo.toml's dev profile, optimized at level 1, with
#                debug assertions, so an overflow is a crash; the sanitizer
#                EXECSTORE_FUZZ_SANITIZER). The test command starts it in the
#                background (scripts/lib/ahead.sh) once the other background builds are done.
#   fuzz_run     builds (nothing left to do when the background build ran) and runs each target
#                for $EXECSTORE_FUZZ_SECONDS seconds from the committed seed corpus
#                (fuzz/corpus/NAME), writing what it discovers to a temporary folder, never to
#                the corpus. Prints libFuzzer's closing line (`#N DONE ... exec/s`) of each, and
#                one libtest-style result line per target (`test fuzz::NAME ... ok`,
#                `... FAILED`, `... ignored, REASON`) for the test command's totals. Without
#                nightly, or with EXECSTORE_FUZZ_SECONDS=0, every target counts as skipped,
#                saying why. A crash leaves its input in fuzz/artifacts/NAME/.
#
# The seed corpus and every finding are also replayed on stable, without libFuzzer, by
# `cargo test --workspace` (crates/execstore-fuzz-targets/tests/replay.rs).
#
# The run is a smoke run: a few seconds a target, without a sanitizer by default. What it looks
# for is a panic, an overflow (debug assertions) or a property broken (each target asserts its
# own), which need no sanitizer; a memory error in unsafe code or SQLite's C shows without one
# only if it crashes, so long runs keep ASan (docs/testing.md, "Fuzzing"). The cold build with
# AddressSanitizer took 204 s on an idle 2-core machine, 99 s without (and 10 minutes with it
# under other builds), which is why it runs in the background, at nice 19, in the time the
# later steps leave a core idle. A cold CI run (2 cores) still waited for most of it at the
# end; the dev profile at opt-level 1 builds in a third of the release build's time (64
# against 185 s, side by side) and runs nearly as many inputs a second.
# EXECSTORE_FUZZ_SANITIZER=address brings ASan back.
#
# Environment:
#   EXECSTORE_FUZZ_SECONDS    seconds per target (default 4; 0: no real run, the targets
#                             skipped)
#   EXECSTORE_FUZZ_SANITIZER  cargo fuzz's --sanitizer (default none; address, leak, ...)

CARGO_FUZZ_VERSION=0.13.2
FUZZ_TARGETS=(cursor ingest pyjson monitor differential)
FUZZ_SKIP=""

_fuzz_say() { printf '    %s\n' "$*"; }

_fuzz_seconds() { printf '%s\n' "${EXECSTORE_FUZZ_SECONDS:-4}"; }

# Every target as skipped for REASON, in libtest's words.
_fuzz_skip_all() {
	local t
	for t in "${FUZZ_TARGETS[@]}"; do
		printf 'test fuzz::%s ... ignored, %s\n' "$t" "$1"
	done
	printf 'test result: ok. 0 passed; 0 failed; %d ignored; 0 measured; 0 filtered out\n' "${#FUZZ_TARGETS[@]}"
}

# Whether EXECSTORE_FUZZ_SECONDS is a whole number of seconds.
_fuzz_seconds_valid() { [[ $(_fuzz_seconds) =~ ^[0-9]+$ ]]; }

fuzz_wanted() {
	if ! _fuzz_seconds_valid; then
		FUZZ_SKIP="EXECSTORE_FUZZ_SECONDS=$(_fuzz_seconds) is not a whole number of seconds"
		return 1
	fi
	if [ "$(_fuzz_seconds)" -eq 0 ]; then
		FUZZ_SKIP="real fuzzing turned off (EXECSTORE_FUZZ_SECONDS=0; cargo test replays the seed corpus)"
		return 1
	fi
	if ! command -v rustup >/dev/null || ! rustup run nightly rustc --version >/dev/null 2>&1; then
		FUZZ_SKIP="no nightly toolchain for libFuzzer (cargo test replays the seed corpus)"
		return 1
	fi
}

_fuzz_cargo_fuzz() {
	local root="${EXECSTORE_CACHE:-$HOME/.cache/execstore}/cargo-fuzz-$CARGO_FUZZ_VERSION"
	if [ ! -x "$root/bin/cargo-fuzz" ]; then
		_fuzz_say "cargo install cargo-fuzz $CARGO_FUZZ_VERSION (into $root)" >&2
		cargo install cargo-fuzz --version "=$CARGO_FUZZ_VERSION" --locked --root "$root" >&2 || return 1
	fi
	printf '%s/bin\n' "$root"
}

# cargo fuzz SUBCOMMAND ARGS... in fuzz/, with the options every call shares (the same options,
# so `run` finds what `build` built).
_fuzz_cargo() {
	local sub=$1 bin
	shift
	bin=$(_fuzz_cargo_fuzz) || return 1
	(cd fuzz && PATH="$bin:$PATH" cargo +nightly fuzz "$sub" -D -a -s "${EXECSTORE_FUZZ_SANITIZER:-none}" "$@")
}

fuzz_build() { _fuzz_cargo build; }

fuzz_run() {
	if ! _fuzz_seconds_valid; then
		printf 'error: EXECSTORE_FUZZ_SECONDS=%s: seconds per fuzz target must be a whole number (0: none)\n' "$(_fuzz_seconds)" >&2
		return 1
	fi
	if ! fuzz_wanted; then
		_fuzz_say "skipped: $FUZZ_SKIP"
		_fuzz_skip_all "$FUZZ_SKIP"
		return 0
	fi
	local seconds start=$SECONDS
	seconds=$(_fuzz_seconds)
	fuzz_build || return 1
	_fuzz_say "built in $((SECONDS - start))s (sanitizer: ${EXECSTORE_FUZZ_SANITIZER:-none})"
	local t scratch log failed=0 passed=0 done_line
	scratch=$(mktemp -d "${TMPDIR:-/tmp}/execstore-fuzz.XXXXXX")
	for t in "${FUZZ_TARGETS[@]}"; do
		mkdir -p "$scratch/$t"
		log="$scratch/$t.log"
		if _fuzz_cargo run "$t" "$scratch/$t" "corpus/$t" -- \
			-max_total_time="$seconds" -max_len=4096 >"$log" 2>&1; then
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
