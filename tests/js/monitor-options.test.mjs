// `new MonitorApi(options)` takes what the package's README says it takes, option by option
// (its table under "The monitor's API"), and refuses what it does not, with a clear error;
// and `execstore/edge`, the handler the README shows, is the package's export.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import * as execstore from "execstore";
import { createHandler } from "execstore/edge";

const { MonitorApi, Store } = execstore;
const README = readFileSync(new URL("../../crates/execstore-wasm/npm/README.md", import.meta.url), "utf8");

function store() {
  const s = Store.memory();
  s.commit({ id: "order-1", definition_id: "orders", status: "RUNNING", version: 0 });
  return s;
}
const info = (api, s) => JSON.parse(api.handle(s, "GET", "/api/info").body);
const suspend = (api, s, authorization) =>
  api.handle(s, "POST", "/api/executions/order-1/suspend", authorization, '{"reason":"checking"}');

describe("new MonitorApi(options), as the README documents it", () => {
  test("the README's table names exactly the options tested here", () => {
    const section = README.slice(README.indexOf("## The monitor's API"), README.indexOf("### The monitor at the edge"));
    const documented = [...section.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]).sort();
    assert.deepEqual(documented, ["backend", "metrics", "prefix", "store", "token", "tokens"]);
  });

  test("none at all: read-only, backend sqlite", () => {
    const s = store();
    for (const api of [new MonitorApi(), new MonitorApi({})]) {
      const i = info(api, s);
      assert.equal(i.writable, false);
      assert.equal(i.backend, "sqlite");
      assert.equal(suspend(api, s, "Bearer x").status, 403);
    }
  });

  test("store, backend, prefix: what /api/info shows", () => {
    const s = store();
    const i = info(new MonitorApi({ store: "orders.db", backend: "memory", prefix: "harel" }), s);
    assert.equal(i.store, "orders.db");
    assert.equal(i.backend, "memory");
    assert.equal(i.prefix, "harel");
    assert.equal(info(new MonitorApi({ prefix: null }), s).prefix, null);
  });

  test("store is a name, not the Store: passing the Store says so", () => {
    assert.throws(
      () => new MonitorApi({ store: Store.memory() }),
      (e) => e.code === "INVALID_INPUT" && e.field === "options.store" && e.reason === "must be a string, not an object",
    );
  });

  test("token: writes need it, and change the store", () => {
    const s = store();
    const api = new MonitorApi({ token: "s3cret" });
    assert.equal(info(api, s).writable, true);
    assert.equal(suspend(api, s).status, 401);
    assert.equal(suspend(api, s, "Bearer wrong").status, 401);
    assert.equal(s.load("order-1").status, "RUNNING");
    assert.equal(suspend(api, s, "Bearer s3cret").status, 200);
    assert.equal(s.load("order-1").status, "SUSPENDED");
  });

  test("tokens: each name's role decides", () => {
    const s = store();
    const api = new MonitorApi({
      tokens: [
        { name: "ann", role: "read", token: "t-read" },
        { name: "bob", role: "act", token: "t-act" },
      ],
    });
    assert.equal(suspend(api, s, "Bearer t-read").status, 403);
    assert.equal(s.load("order-1").status, "RUNNING");
    assert.equal(suspend(api, s, "Bearer t-act").status, 200);
    assert.throws(() => new MonitorApi({ tokens: [{ name: "c", role: "boss", token: "t" }] }), (e) => e.field === "options.tokens[0].role");
    assert.throws(() => new MonitorApi({ token: "a", tokens: [] }), (e) => e.code === "INVALID_INPUT");
  });

  test("metrics: a ring sampled by sampleMetrics", () => {
    const s = store();
    const api = new MonitorApi({ metrics: { periodSeconds: 5, keep: 3 } });
    assert.equal(api.metricsPeriod, 5);
    assert.equal(api.sampleMetrics(s), true);
    assert.equal(new MonitorApi({}).sampleMetrics(s), false);
  });

  test("an option it does not have is refused, not ignored", () => {
    assert.throws(() => new MonitorApi({ tokn: "x" }), (e) => e.code === "INVALID_INPUT" && e.field === "options.tokn");
  });
});

describe("execstore/edge", () => {
  test("the package's edge handler serves the API over a Store, read-only without a token", async () => {
    const s = store();
    const handler = createHandler({ execstore, store: s, label: "orders" });
    const i = await (await handler(new Request("http://localhost/api/info"))).json();
    assert.equal(i.store, "orders");
    assert.equal(i.writable, false);
    const list = await (await handler(new Request("http://localhost/api/executions"))).json();
    assert.deepEqual(list.items.map((e) => e.id), ["order-1"]);
  });
});
