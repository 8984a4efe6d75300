// Headless Chromium for the package's browser tests: Debian's chromium (or EXECSTORE_CHROMIUM)
// driven by playwright-core, with the flags this machine's closed network needs. Where it is
// missing, `noChromium` says why (the tests are skipped with that reason), unless
// EXECSTORE_REQUIRE_BROWSER is set, which makes a missing browser an error.
import { existsSync } from "node:fs";

/** The browser executable. */
export const CHROMIUM = process.env.EXECSTORE_CHROMIUM ?? "/usr/bin/chromium";

/** Launch flags: headless, no sandbox (root), no GPU, no background traffic. */
export const ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--no-first-run",
];

const missing = !existsSync(CHROMIUM);
if (missing && process.env.EXECSTORE_REQUIRE_BROWSER) {
  throw new Error(`EXECSTORE_REQUIRE_BROWSER is set but ${CHROMIUM} does not exist`);
}

/** Why the browser tests cannot run here (a skip reason), or `false`. */
export const noChromium = missing ? `no Chromium at ${CHROMIUM} (apt-get install chromium; scripts/lib/wasm.sh does)` : false;
