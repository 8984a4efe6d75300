# shellcheck shell=bash
# scripts/lib/browser.sh: the monitor's browser tests (tests/browser: Playwright's
# playwright-core driving Debian's Chromium, run by `node --test`). Source it; it only defines
# things. scripts/test calls, in order:
#
#   browser_install     Debian's `chromium` (for /usr/bin/chromium) and `python3` (the tests'
#                       second writer) from apt if missing; checks Node >= 20 and npm; runs
#                       `npm ci` in tests/browser when its node_modules does not match its
#                       package-lock.json (playwright-core, pinned there). Never downloads a
#                       browser of Playwright's own.
#   browser_test        builds `execstore` (native_cli, scripts/lib/cargo.sh) and runs the tests
#                       against that fresh binary; screenshots go to test-artifacts/. Prints
#                       the measured time to first render of the list at 100,000 executions.
#
# Environment:
#   EXECSTORE_CHROMIUM       the browser (default /usr/bin/chromium)
#   EXECSTORE_ARTIFACTS      where screenshots go (default test-artifacts/)
#   EXECSTORE_SKIP_BROWSER   a reason: both functions say so and do nothing
#
# Works as root on Debian 12 (apt-get), or as a user who has Chromium and Node already.

# shellcheck source=apt.sh
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
# shellcheck source=cargo.sh
. "$(dirname "${BASH_SOURCE[0]}")/cargo.sh"
# shellcheck source=node.sh
. "$(dirname "${BASH_SOURCE[0]}")/node.sh"

BROWSER_TESTS_DIR=tests/browser
BROWSER_NODE_MAJOR_MIN=20

_browser_say() { printf '    %s\n' "$*"; }

_browser_skipped() {
	if [ -n "${EXECSTORE_SKIP_BROWSER:-}" ]; then
		_browser_say "skipped: $EXECSTORE_SKIP_BROWSER (EXECSTORE_SKIP_BROWSER)"
		return 0
	fi
	return 1
}

browser_install() {
	_browser_skipped && return 0
	local chromium="${EXECSTORE_CHROMIUM:-/usr/bin/chromium}" missing=()
	[ -x "$chromium" ] || missing+=(chromium)
	command -v python3 >/dev/null || missing+=(python3)
	if [ ${#missing[@]} -gt 0 ]; then
		apt_install "${missing[@]}" || return 1
	fi
	[ -x "$chromium" ] || {
		echo "browser.sh: no browser at $chromium" >&2
		return 1
	}
	_browser_say "$("$chromium" --version 2>/dev/null | head -n 1)"

	node_require "$BROWSER_NODE_MAJOR_MIN" "the browser tests (playwright-core)" || return 1
	_browser_say "node $(node --version), npm $(npm --version)"

	# npm ci only when the installed tree is not the locked one (npm keeps its own copy of
	# the lock in node_modules/.package-lock.json).
	if cmp -s "$BROWSER_TESTS_DIR/package-lock.json" "$BROWSER_TESTS_DIR/node_modules/.package-lock.json" 2>/dev/null ||
		node -e '
			const lock = require(process.argv[1] + "/package-lock.json");
			const want = lock.packages["node_modules/playwright-core"].version;
			const have = require(process.argv[1] + "/node_modules/playwright-core/package.json").version;
			process.exit(want === have ? 0 : 1);
		' "$PWD/$BROWSER_TESTS_DIR" 2>/dev/null; then
		_browser_say "playwright-core present in $BROWSER_TESTS_DIR/node_modules"
	else
		_browser_say "npm ci in $BROWSER_TESTS_DIR"
		(cd "$BROWSER_TESTS_DIR" && npm ci --no-audit --no-fund --loglevel=error)
	fi
}

browser_test() {
	_browser_skipped && return 0
	local bin log rc=0
	bin=$(native_cli) || return 1
	log=$(mktemp)
	# Two files at a time (as tests/js/ in wasm.sh): one at a time used 0.7 of the machine's
	# two cores; two took these tests from 207 to 174 s, and they passed with tests/js/
	# running beside them.
	EXECSTORE_BIN="$bin" node --test --test-concurrency=2 --test-reporter=spec "$BROWSER_TESTS_DIR/" 2>&1 |
		tee "$log" || rc=${PIPESTATUS[0]}
	local first_render
	first_render=$(grep -m1 -o 'list first render at 100,000 executions: .*' "$log" || true)
	[ -n "$first_render" ] && _browser_say "$first_render"
	_browser_say "screenshots: ${EXECSTORE_ARTIFACTS:-test-artifacts}/monitor-*.png, ui-*.png"
	rm -f "$log"
	return "$rc"
}
