# shellcheck shell=bash
# scripts/lib/wasm.sh: the store in WebAssembly (crates/execstore-wasm, the npm package
# `execstore`). Source it; it only defines things. scripts/test calls, in order:
#
#   wasm_install   what the wasm build and tests need, each skipped when present: what
#                  wasm_install_build installs; Debian's chromium and chromium-driver.
#   wasm_test      the core's behaviour suite compiled to wasm32 and run by `cargo test
#                  --target wasm32-unknown-unknown` with wasm-bindgen's test runner as the
#                  target's runner: under Node (memory, SQLite in wasm, in memory and in a
#                  file through Node's fs: Store.openFile) and in headless
#                  Chromium through chromedriver (OPFS in a dedicated worker); then builds the package (`npm run build:wasm`) and the native
#                  `execstore` (native_cli, scripts/lib/cargo.sh: demo files, and the native
#                  monitor the edge handler's answers are compared with), and runs
#                  `node --test tests/js/` (the package in Node, its store files and their
#                  SIGKILL trials (EXECSTORE_NODE_FILE_KILLS), its TypeScript declarations,
#                  the edge handler crates/execstore-cli/web/edge/ in Node, and Playwright + Chromium: OPFS through
#                  the main-thread clients (the execution store's, the workspace log's),
#                  reload, LOCKED, Store.importOpfs, the in-browser monitor
#                  crates/execstore-cli/web/local.html).
#                  Prints the in-browser monitor's time from import to the list's first
#                  render.
#
# scripts/build-wasm (what `npm run build:wasm` runs) calls:
#
#   wasm_install_build  what building the package needs, each skipped when present: the rust
#                  target wasm32-unknown-unknown; Debian's clang (sqlite-wasm-rs compiles
#                  SQLite's C with it); wasm-bindgen-cli at the version of `wasm-bindgen` in
#                  Cargo.lock (cargo install: the bindgen and the test runner; no wasm-pack,
#                  whose install took 2m23s of a fresh run and which only drives these two);
#                  Node >= 20 and `npm ci` at
#                  the root (binaryen, playwright-core, typescript, xstate; node_modules/execstore
#                  links to crates/execstore-wasm/npm).
#   wasm_build     the package's wasm (cargo build --release for wasm32, small code, then
#                  `wasm-bindgen --target web`) into crates/execstore-wasm/npm/wasm, in
#                  CARGO_TARGET_DIR as the caller set it, then optimized by binaryen's
#                  wasm-opt -O3 from npm (package.json pins it). Not Debian's binaryen (108):
#                  it makes wasm that does not load. Measured on W1 in Node: 3-5% less time per event,
#                  and a quarter smaller (3.8 -> 2.8 MB).
#
#   wasm_package_files  what the package ships from elsewhere in the repository, copied into
#                  crates/execstore-wasm/npm/web (generated, never committed): the edge handler
#                  (`execstore/edge`, WASM_WEB_DIR/edge/handler.js) and the monitor's UI files it
#                  serves (WASM_WEB_DIR, less the in-browser monitor's local*). wasm_build calls it.
#                  tests/js/npm-pack.test.mjs packs the package, installs the tarball offline in
#                  a temp folder, runs its README's examples there and `npm publish --dry-run`.
#
#   wasm_bench     (not part of the test command) the wasm file sizes and W1 commits/s in Node
#                  and Chromium beside native `execstore bench` (bench/js/w1.mjs).
#
# Environment:
#   EXECSTORE_WASM_TARGET_DIR  cargo's target dir for wasm builds (default target/wasm)
#   EXECSTORE_CHROMIUM         the browser (default /usr/bin/chromium)
#   EXECSTORE_SKIP_WASM        a reason: every function says so and does nothing
#
# Works as root on Debian 12 (apt-get), or as a user who has the packages already.

# shellcheck source=apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
# shellcheck source=cargo.sh
. "$(dirname "${BASH_SOURCE[0]}")/cargo.sh"
# shellcheck source=node.sh
. "$(dirname "${BASH_SOURCE[0]}")/node.sh"

WASM_RUST_TARGET=wasm32-unknown-unknown
# The monitor's UI (and the edge handler in its edge/): the one path to change if it moves.
WASM_WEB_DIR=crates/execstore-cli/web
WASM_NODE_MAJOR_MIN=20

_wasm_say() { printf '    %s\n' "$*"; }

_wasm_skipped() {
	if [ -n "${EXECSTORE_SKIP_WASM:-}" ]; then
		_wasm_say "skipped: $EXECSTORE_SKIP_WASM (EXECSTORE_SKIP_WASM)"
		return 0
	fi
	return 1
}

_wasm_target_dir() { printf '%s\n' "${EXECSTORE_WASM_TARGET_DIR:-$PWD/target/wasm}"; }

# The version of the `wasm-bindgen` crate that Cargo.lock pins.
_wasm_bindgen_locked() {
	awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock
}

# Node >= $WASM_NODE_MAJOR_MIN, and the root's node_modules as package-lock.json has them.
_wasm_node_modules() {
	node_require "$WASM_NODE_MAJOR_MIN" "the npm package's build and tests" || return 1
	# npm ci only when the installed tree is not the locked one (npm keeps its own copy of
	# the lock, less the root entry, in node_modules/.package-lock.json).
	if node -e '
		const fs = require("fs");
		const want = JSON.parse(fs.readFileSync("package-lock.json", "utf8")).packages;
		const have = JSON.parse(fs.readFileSync("node_modules/.package-lock.json", "utf8")).packages;
		delete want[""];
		process.exit(Object.keys(want).length === Object.keys(have).length &&
			Object.keys(want).every((k) => have[k] && want[k].version === have[k].version) ? 0 : 1);
	' 2>/dev/null; then
		_wasm_say "node_modules matches package-lock.json"
	else
		_wasm_say "npm ci (binaryen, playwright-core, typescript, xstate)"
		npm ci --no-audit --no-fund --loglevel=error || return 1
	fi
}

wasm_install_build() {
	_wasm_skipped && return 0
	if command -v rustup >/dev/null; then
		if rustup target list --installed | grep -qx "$WASM_RUST_TARGET"; then
			_wasm_say "rust target $WASM_RUST_TARGET present"
		else
			rustup target add "$WASM_RUST_TARGET" || return 1
		fi
	fi

	if command -v clang >/dev/null; then
		_wasm_say "clang present"
	else
		apt_install clang || return 1
	fi

	local want have
	want=$(_wasm_bindgen_locked)
	[ -n "$want" ] || {
		echo "wasm.sh: no wasm-bindgen in Cargo.lock" >&2
		return 1
	}
	have=$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }')
	if [ "$have" = "$want" ]; then
		_wasm_say "wasm-bindgen-cli $want present"
	else
		# Not --locked: the CLI's own lock file does not build here. --debug: measured on 2
		# cores, 2m14s instead of 5m13s to install, and a package build's bindgen takes 2.6 s
		# instead of 1.0 s; tools, not what we ship.
		_wasm_say "cargo install --debug wasm-bindgen-cli $want (Cargo.lock's wasm-bindgen)"
		cargo install --debug wasm-bindgen-cli --version "=$want" || return 1
	fi
	_wasm_node_modules
}

# Release code built for size (no debug info, opt-level s, LTO, one codegen unit), without
# touching the workspace's release profile.
wasm_build() {
	_wasm_skipped && return 0
	local out=crates/execstore-wasm/npm/wasm
	CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_OPT_LEVEL=s CARGO_PROFILE_RELEASE_LTO=true \
		CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
		cargo build --release --target "$WASM_RUST_TARGET" -p execstore-wasm --lib || return 1
	mkdir -p "$out" || return 1
	wasm-bindgen --target web --out-dir "$out" --out-name execstore \
		"$(cargo_target_dir)/$WASM_RUST_TARGET/release/execstore_wasm.wasm" || return 1
	# generated, never committed (the folder's own .gitignore, as wasm-pack wrote it)
	printf '*\n' >"$out/.gitignore"
	local wasm=crates/execstore-wasm/npm/wasm/execstore_bg.wasm
	# The features rustc's wasm32-unknown-unknown target enables by default; one the module
	# uses and this list lacks fails validation here, not in a browser.
	_wasm_say "wasm-opt -O3 (binaryen $(node -p 'require("./node_modules/binaryen/package.json").version'))"
	node_modules/.bin/wasm-opt -O3 --enable-bulk-memory --enable-reference-types \
		--enable-multivalue --enable-sign-ext --enable-nontrapping-float-to-int \
		--enable-mutable-globals "$wasm" -o "$wasm.opt" || {
		rm -f "$wasm.opt"
		return 1
	}
	mv "$wasm.opt" "$wasm"
	wasm_package_files
}

wasm_package_files() {
	_wasm_skipped && return 0
	local out=crates/execstore-wasm/npm/web
	rm -rf "$out" && mkdir -p "$out" || return 1
	cp -R "$WASM_WEB_DIR"/. "$out"/ || return 1
	rm -f "$out"/local*
	# generated, never committed: the repository's .gitignore names it (a .gitignore in the
	# folder itself would keep it out of `npm pack` too)
}

wasm_install() {
	_wasm_skipped && return 0
	local started=$SECONDS
	wasm_install_build || return 1

	local chromium="${EXECSTORE_CHROMIUM:-/usr/bin/chromium}" missing=()
	[ -x "$chromium" ] || missing+=(chromium)
	[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
	if [ ${#missing[@]} -gt 0 ]; then
		apt_install "${missing[@]}" || return 1
	else
		_wasm_say "chromium, chromium-driver present"
	fi

	_wasm_say "tools ready in $((SECONDS - started)) s"
}

wasm_test() {
	_wasm_skipped && return 0
	local target_dir rc=0
	target_dir=$(_wasm_target_dir)
	# wasm-bindgen-test-runner gives a headless run 20 s in all by default: on a loaded 2-core
	# machine the OPFS suites take longer than that (the runner then kills Chromium, and the
	# tests it never reached are a failure, not a pass).
	export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-300}
	# wasm-bindgen's runner runs each test binary where the binary asks to be run
	# (`wasm_bindgen_test_configure!`): Node, or a dedicated worker in headless Chromium
	# (through chromedriver, with --no-sandbox among its default arguments).
	_wasm_say "behaviour suites in wasm32: under Node (memory, SQLite in wasm, a file through Node's fs); in headless Chromium (OPFS in a dedicated worker; the workspace log on SQLite in OPFS, sahpool)"
	CARGO_TARGET_DIR="$target_dir" CHROMEDRIVER=/usr/bin/chromedriver \
		CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
		cargo test --target "$WASM_RUST_TARGET" -p execstore-wasm \
		--test conformance_node --test conformance_opfs --test workspace_opfs || rc=1
	if [ -n "${EXECSTORE_WASM_PREBUILT:-}" ]; then
		_wasm_say "npm package: built in the background (scripts/lib/ahead.sh)"
	else
		_wasm_say "npm package: build (cargo build --release, wasm-bindgen --target web)"
		CARGO_TARGET_DIR="$target_dir" npm run --silent build:wasm || return 1
	fi
	_wasm_say "native execstore for the JS tests (native_cli: as cargo test --workspace built it)"
	native_cli >/dev/null || return 1
	_wasm_say "npm package: node --test tests/js/ (Node, TypeScript, edge handler, Playwright + Chromium)"
	local log
	log=$(mktemp)
	# the binary just built: tests/js/native.mjs asks cargo where its target directory is.
	# Two files at a time: one at a time kept about one core of two busy (they wait on
	# Chromium, child processes and fsync); two took this step's tests from 194 to 135 s on
	# this project's 2-core machine, and passed with the browser tests running beside them.
	EXECSTORE_REQUIRE_BIN=1 EXECSTORE_REQUIRE_BROWSER=1 \
		node --test --test-concurrency=2 --test-reporter=spec tests/js/ 2>&1 | tee "$log" || rc=1
	local first_render
	first_render=$(grep -o 'in-browser monitor: .*render: [0-9]* ms' "$log" || true)
	[ -n "$first_render" ] && printf '%s\n' "$first_render" | while IFS= read -r line; do _wasm_say "$line"; done
	rm -f "$log"
	return "$rc"
}

wasm_bench() {
	_wasm_skipped && return 0
	local wasm=crates/execstore-wasm/npm/wasm/execstore_bg.wasm
	[ -f "$wasm" ] || CARGO_TARGET_DIR="$(_wasm_target_dir)" npm run --silent build:wasm || return 1
	_wasm_say "$wasm: $(wc -c <"$wasm") bytes, $(gzip -9 -c "$wasm" | wc -c) gzipped"
	cargo build --release -p execstore-cli || return 1
	node bench/js/w1.mjs --native "$(cargo_target_dir)/release/execstore" --browser "$@"
}
