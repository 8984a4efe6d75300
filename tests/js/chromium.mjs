// Headless Chromium for the package's browser tests: Debian's chromium (or EXECSTORE_CHROMIUM)
// driven by playwright-core, with the flags this machine's closed network needs. Where it is
// missing, `noChromium` says why (the tests are skipped with that reason), unless
// EXECSTORE_REQUIRE_BROWSER is set, which makes a missing browser an error.
import { existsSync } from "node:fs";
import { after, before } from "node:test";
import { chromium } from "playwright-core";

import { serveRepository } from "./serve.mjs";

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

/**
 * A describe block's browser: registers a `before` that starts the repository's server
 * (serve.mjs) and Chromium (one context) and an `after` that closes both. `openPage(path,
 * onPageError?)` opens `path` (e.g. "/tests/js/pages/opfs.html") in a new tab and waits for
 * its `window.ready`; a page error goes to `onPageError` (by default, the console).
 */
export function chromiumSuite() {
  const open = {};
  before(async () => {
    open.server = await serveRepository();
    open.browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
    open.context = await open.browser.newContext();
  });
  after(async () => {
    await open.browser?.close();
    await open.server?.close();
  });
  return {
    async openPage(path, onPageError = (error) => console.error("page error:", error)) {
      const page = await open.context.newPage();
      page.on("pageerror", onPageError);
      await page.goto(`${open.server.url}${path}`);
      await page.waitForFunction(() => window.ready === true);
      return page;
    },
  };
}
