// The workspace log of the npm package in headless Chromium (playwright-core, Debian's
// chromium), as a bundler-free page imports it (`index.js`: the wasm loaded by fetch, top-level
// await): a transaction commits and rolls back, a subscription replays and wakes on commits,
// errors carry their code. Run: node --test tests/js/  (needs `npm run build:wasm` and
// /usr/bin/chromium)
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";

import { ARGS, CHROMIUM, noChromium } from "./chromium.mjs";
import { serveRepository } from "./serve.mjs";

const skip = noChromium;

describe("WorkspaceStore in Chromium", { skip }, () => {
  let server;
  let browser;

  before(async () => {
    server = await serveRepository();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  test("transactions, a subscription woken by commits, error codes", async () => {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (error) => errors.push(error));
    // Any document of the server's origin: the test imports the package itself.
    await page.goto(`${server.url}/package.json`);
    const got = await page.evaluate(async () => {
      const { WorkspaceStore } = await import("/crates/execstore-wasm/npm/index.js");
      const store = WorkspaceStore.memory();
      const ws = { tenant_id: "acme", workspace_id: "prod" };
      const entry = (id) => ({ id, actor: { kind: "source" }, event: { type: "t:a", id } });
      const seen = [];
      const reading = (async () => {
        for await (const envelope of store.subscribe(ws)) {
          seen.push(envelope.seq);
          if (envelope.seq === 4) break;
        }
      })();
      const committed = await store.transaction(ws, async (tx) => {
        const envelopes = tx.append([entry("a"), entry("b")]);
        await new Promise((resolve) => setTimeout(resolve, 5));
        return envelopes.map((e) => e.seq);
      });
      const rolledBack = await store
        .transaction(ws, (tx) => {
          tx.append([entry("c")]);
          throw new Error("no");
        })
        .catch((e) => e.message);
      await store.transaction(ws, (tx) => tx.append([entry("c")]));
      const duplicate = await store.transaction(ws, (tx) => tx.append([entry("a")])).catch((e) => ({
        isError: e instanceof Error,
        name: e.name,
        code: e.code,
        key: e.key,
      }));
      await store.transaction(ws, (tx) => tx.append([entry("d")]));
      await reading;
      const invalid = (() => {
        try {
          store.read(ws, { after_seq: -1 });
        } catch (e) {
          return { code: e.code, field: e.field };
        }
        return null;
      })();
      return { committed, rolledBack, duplicate, seen, invalid, head: store.headSeq(ws), ids: store.read(ws).map((e) => e.id) };
    });
    assert.deepEqual(errors, []);
    assert.deepEqual(got.committed, [1, 2]);
    assert.equal(got.rolledBack, "no");
    assert.deepEqual(got.duplicate, { isError: true, name: "StoreError", code: "ALREADY_EXISTS", key: "a" });
    assert.deepEqual(got.seen, [1, 2, 3, 4]);
    assert.deepEqual(got.invalid, { code: "INVALID_INPUT", field: "after_seq" });
    assert.equal(got.head, 4);
    assert.deepEqual(got.ids, ["a", "b", "c", "d"]);
    await page.close();
  });
});
