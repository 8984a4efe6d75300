# shellcheck shell=bash
# scripts/lib/component.sh: the store as a WIT component (wit/store.wit). Source it; it only
# defines things. scripts/test calls, in order:
#
#   component_install_tools  the rust target wasm32-wasip2 (rustup), if missing; with the
#                            `sqlite` feature also Debian's `clang` and `wasi-libc` (the C
#                            compiler and WASI headers SQLite's C needs), if missing. Exports
#                            the defaults below, so the cargo test that follows builds the
#                            component the same way.
#   component_build          builds crates/execstore-component for wasm32-wasip2 into
#                            target/component (its own target dir: the host's tests build it
#                            too, and must not wait on the lock of the cargo running them);
#                            prints the .wasm's path and size, raw and gzipped
#   component_test           runs crates/execstore-component-host's tests: the core's
#                            behaviour suite and the boundary checks, through the component
#                            in wasmtime
#
# Environment:
#   EXECSTORE_COMPONENT_FEATURES  cargo features of the component (default: sqlite, which
#                                 compiles the SQLite adapter in, so the behaviour suite also
#                                 runs on SQLite inside the component; set it empty to leave
#                                 SQLite out and skip those tests).
#   CFLAGS_wasm32_wasip2          default --target=wasm32-wasi: Debian's clang 14 does not
#                                 know the wasip2 triple and would compile SQLite against the
#                                 host's glibc headers; as wasm32-wasi it uses wasi-libc's
#                                 (/usr/include/wasm32-wasi), whose C ABI is the same for
#                                 both WASI versions. The tests pass the same default.
#   EXECSTORE_SKIP_COMPONENT      a reason: the host's tests compile to one ignored test that
#                                 says so, and component_build does nothing. For a machine
#                                 without rustup's wasm32-wasip2 target.
#
# The host's tests also run under a plain `cargo test --workspace`: they build the component
# themselves (a no-op when component_build ran) and fail, saying how to fix it, when it
# cannot be built and EXECSTORE_SKIP_COMPONENT is not set.

# shellcheck source=apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

COMPONENT_TARGET=wasm32-wasip2
# Where the tests look for the component (crates/execstore-component-host/tests/support).
COMPONENT_WASM=target/component/$COMPONENT_TARGET/component/execstore_component.wasm

_component_note() { printf '    %s\n' "$*"; }

_component_skipped() {
	if [ -n "${EXECSTORE_SKIP_COMPONENT:-}" ]; then
		_component_note "skipped: EXECSTORE_SKIP_COMPONENT=$EXECSTORE_SKIP_COMPONENT"
		return 0
	fi
	return 1
}

_component_has_sqlite() {
	[[ ",${EXECSTORE_COMPONENT_FEATURES// /,}," == *,sqlite,* ]]
}

component_install_tools() {
	_component_skipped && return 0
	export EXECSTORE_COMPONENT_FEATURES="${EXECSTORE_COMPONENT_FEATURES-sqlite}"
	if ! command -v rustup >/dev/null; then
		_component_note "no rustup: assuming the target $COMPONENT_TARGET is installed"
	elif rustup target list --installed | grep -qx "$COMPONENT_TARGET"; then
		_component_note "rust target $COMPONENT_TARGET present"
	else
		rustup target add "$COMPONENT_TARGET"
	fi
	if _component_has_sqlite; then
		export CFLAGS_wasm32_wasip2="${CFLAGS_wasm32_wasip2---target=wasm32-wasi}"
		if command -v clang >/dev/null && [ -f /usr/include/wasm32-wasi/stdio.h ]; then
			_component_note "clang and wasi-libc present (SQLite in the component)"
		else
			apt_install clang wasi-libc
		fi
	fi
	_component_note "component features: ${EXECSTORE_COMPONENT_FEATURES:-(none: memory only)}"
}

component_build() {
	_component_skipped && return 0
	local features=()
	if [ -n "${EXECSTORE_COMPONENT_FEATURES:-}" ]; then
		features=(--features "$EXECSTORE_COMPONENT_FEATURES")
	fi
	# `cargo rustc --crate-type cdylib`: the crate is an rlib natively (see its Cargo.toml).
	CARGO_TARGET_DIR=target/component cargo rustc --locked -p execstore-component \
		--target "$COMPONENT_TARGET" --profile component --crate-type cdylib "${features[@]}"
	[ -f "$COMPONENT_WASM" ] || {
		printf 'error: %s was not built\n' "$COMPONENT_WASM" >&2
		return 1
	}
	local raw gz
	raw=$(wc -c <"$COMPONENT_WASM")
	gz=$(gzip -9c "$COMPONENT_WASM" | wc -c)
	_component_note "$COMPONENT_WASM: $raw bytes, $gz gzipped"
}

# Runs the host's tests (extra arguments go to `cargo test`, e.g. --no-fail-fast). They
# build the component again, which is a no-op after component_build.
component_test() {
	cargo test --locked -p execstore-component-host "$@"
}
