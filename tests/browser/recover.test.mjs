// The monitor's recovery actions in Chromium (crates/execstore-cli/web/recover.js, docs/recover.md): send an event
// to a RUNNING execution (checked before sending), retry a FAILED one at a state its trace
// shows, an action over everything the list's filters match (counted first), and the
// workspace buttons (retry a dead run, replay a dead letter, release a lapsed lease, pause
// and resume a stored rule); none of it offered read-only.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { apiGet, artifacts, browser, demo, page, serve, tempDir } from "./helpers.mjs";

const TOKEN = "recover-test-token";

function assertCalm(p, { allow = null } = {}) {
  assert.deepEqual(p.problems.dialogs, [], "no dialog may open");
  const errors = p.problems.errors.filter((e) => !(allow && allow.test(e)));
  assert.deepEqual(errors, [], "no page error");
}

async function one(url, id) {
  return (await apiGet(url, `api/executions/${encodeURIComponent(id)}`)).body.execution;
}

async function outboxOf(url, id) {
  return (await apiGet(url, `api/executions/${encodeURIComponent(id)}/pending`)).body.outbox;
}

async function countOf(url, query) {
  let n = 0;
  for (let cursor = ""; ;) {
    const { body } = await apiGet(url, `api/executions?limit=1000${query}${cursor}`);
    n += body.items.length;
    if (!body.next_cursor) return n;
    cursor = `&cursor=${body.next_cursor}`;
  }
}

test("recovery actions on executions", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 200, seed: 7 });
  const url = await serve(t, ["monitor", "--db", db, "--token", TOKEN]);
  const b = await browser(t);

  await t.test("send an event: bad data is caught before sending; a good one lands in the outbox", async () => {
    const running = (await apiGet(url, "api/executions?status=RUNNING&roots_only=true&limit=1")).body.items[0];
    const id = running.id;
    const before = await outboxOf(url, id);
    const p = await page(b);
    await p.goto(`${url}?id=${encodeURIComponent(id)}#token=${TOKEN}`);
    await p.waitForSelector("#send-form");
    await p.click("#send-submit");
    assert.match(await p.textContent("#send-error"), /Give the event a name/);
    await p.fill("#send-name", "Approve");
    await p.fill("#send-data", "{not json");
    await p.click("#send-submit");
    assert.match(await p.textContent("#send-error"), /not JSON/);
    await p.fill("#send-data", "[1, 2]");
    await p.click("#send-submit");
    assert.match(await p.textContent("#send-error"), /must be a JSON object/);
    assert.deepEqual(await outboxOf(url, id), before, "nothing sent while the form is wrong");

    await p.fill("#send-data", '{"by": "ops", "amount": 5}');
    await p.fill("#send-id", "ev-browser-1");
    await p.click("#send-submit");
    assert.match(await p.textContent("#send-error"), /A reason is required/);
    assert.deepEqual(await outboxOf(url, id), before, "nothing sent without a reason");
    await p.fill("#send-reason", "customer approved by phone");
    await p.click("#send-submit");
    await p.waitForSelector("#recover-result:not([hidden])");
    assert.match(await p.textContent("#recover-result"), /Approve \(id ev-browser-1\) is in the outbox as entry \d+/);
    const after = await outboxOf(url, id);
    const sent = after.find((e) => e.event.id === "ev-browser-1");
    assert.ok(sent, "the entry is pending, addressed to it");
    assert.deepEqual([sent.event.kind, sent.event.data], ["Approve", { by: "ops", amount: 5 }]);
    assert.equal((await one(url, id)).version, running.version, "no step: the version did not move");
    await p.screenshot({ path: join(artifacts, "recover-send.png") });

    // What is typed survives the live refresh that rebuilds the detail.
    await p.fill("#send-name", "Half-typed");
    await p.evaluate(() => { document.querySelector("#send-form").dataset.old = "1"; });
    await p.locator("#detail-id").click();
    await p.keyboard.press("r");
    await p.waitForSelector("#send-form:not([data-old])", { timeout: 10000 });
    assert.equal(await p.inputValue("#send-name"), "Half-typed");
    assertCalm(p);
  });

  await t.test("retry a FAILED execution at a state its trace shows", async () => {
    const failed = (await apiGet(url, "api/executions?status=FAILED&roots_only=true&limit=50")).body.items;
    let chosen = null;
    for (const e of failed) {
      const targets = (await apiGet(url, `api/executions/${encodeURIComponent(e.id)}/retry-targets`)).body;
      if (targets.retryable && targets.targets.length) { chosen = { e, targets }; break; }
    }
    assert.ok(chosen, "the demo has a retryable FAILED execution");
    const { e, targets } = chosen;
    const p = await page(b);
    await p.goto(`${url}?id=${encodeURIComponent(e.id)}#token=${TOKEN}`);
    await p.waitForSelector("#retry-form");
    await p.waitForFunction(() => !document.querySelector("#retry-submit").disabled);
    const offered = await p.$$eval("#retry-target option", (xs) => xs.map((x) => x.value));
    assert.deepEqual(offered, targets.targets);
    const target = offered[0];
    await p.selectOption("#retry-target", target);
    await p.fill("#retry-reason", "the payment service is back");
    await p.click("#retry-submit");
    await p.waitForSelector("#recover-result:not([hidden])");
    assert.match(await p.textContent("#recover-result"), new RegExp(`FAILED → RUNNING at ${target.replace(/\./g, "\\.")}`));
    const now = await one(url, e.id);
    assert.deepEqual([now.status, now.active_path, now.error], ["RUNNING", target, null]);
    await p.waitForSelector("#send-form", { timeout: 10000 }); // now RUNNING: the send form
    await p.screenshot({ path: join(artifacts, "recover-retry.png") });
    assertCalm(p);
  });

  await t.test("everything matching: counted first, then run on the server", async () => {
    const expected = await countOf(url, "&status=RUNNING&definition=orders");
    assert.ok(expected > 1, "the demo has RUNNING orders");
    const p = await page(b);
    const posts = [];
    const counts = [];
    p.on("request", (r) => {
      const u = new URL(r.url());
      if (r.method() !== "GET") posts.push(`${r.method()} ${u.pathname}${u.search}`);
      else if (u.pathname.endsWith("/matching")) counts.push(`${u.pathname}${u.search}`);
    });
    await p.goto(`${url}?status=RUNNING&definition=orders#token=${TOKEN}`);
    await p.waitForSelector("#matching-suspend");
    await p.click("#matching-suspend");
    await p.waitForSelector("#matching-confirm");
    const question = await p.textContent("#matching-confirm .question");
    assert.equal(question, `This will suspend ${expected.toLocaleString("en-US")} execution${expected === 1 ? "" : "s"}.`);
    assert.equal(await countOf(url, "&status=RUNNING&definition=orders"), expected, "a count changes nothing");
    await p.screenshot({ path: join(artifacts, "recover-matching-confirm.png") });
    // The question survives a refresh that rebuilds the list (live refresh, or `r`).
    await p.evaluate(() => { document.querySelector("#matching-confirm").dataset.old = "1"; document.activeElement.blur(); });
    await p.keyboard.press("r");
    await p.waitForSelector("#matching-confirm:not([data-old])", { timeout: 10000 });
    assert.ok(await p.isDisabled("#matching-yes"), "no reason yet: Yes is disabled");
    await p.fill("#matching-reason", "maintenance window");
    await p.click("#matching-yes");
    await p.waitForSelector("#matching-result:not([hidden])", { timeout: 30000 });
    const text = await p.textContent("#matching-result");
    const m = text.match(new RegExp(`suspend: (\\d+) done, (\\d+) unchanged, (\\d+) done with an earlier one \\(its regions or tree\\), (\\d+) failed \\(of ${expected}\\)`));
    assert.ok(m, text);
    const [done, , covered, failedCount] = m.slice(1).map(Number);
    assert.equal(failedCount, 0, "a region its parent moved is no conflict");
    assert.equal(done + covered, expected);
    assert.equal(await countOf(url, "&status=RUNNING&definition=orders"), 0, "every match suspended");
    // the count is a read (GET, no reason yet); the one write is the action, with its reason
    assert.ok(counts.some((c) => /^\/api\/control\/suspend\/matching\?.*definition=orders/.test(c)), counts.join("\n"));
    assert.equal(posts.length, 1, posts.join("\n"));
    assert.match(posts[0], /^POST \/api\/control\/suspend\/matching\?.*definition=orders/);
    await p.screenshot({ path: join(artifacts, "recover-matching-done.png") });
    assertCalm(p);
  });
});

test("recovery actions on workspaces", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 40, seed: 5 });
  const url = await serve(t, ["monitor", "--db", db, "--token", TOKEN]);
  const b = await browser(t);
  const W = "api/workspaces/acme/prod";
  const link = (params) => `?${new URLSearchParams({ view: "workspaces", tenant: "acme", ws: "prod", ...params })}#token=${TOKEN}`;

  await t.test("retry a dead run", async () => {
    const dead = (await apiGet(url, `${W}/runs?status=dead`)).body.items;
    assert.ok(dead.length > 0, "the demo has a dead run");
    const id = dead[0].run.id;
    const p = await page(b);
    await p.goto(`${url}${link({ tab: "runs", status: "dead" })}`);
    await p.waitForSelector('#ws-runs [data-ws-action="retry"]');
    await p.click('#ws-runs [data-ws-action="retry"]');
    await p.fill(".confirm .reason-input", "recovering after the incident");
    await p.click('[data-confirm="yes"]');
    await p.waitForSelector("#ws-action-result:not([hidden])");
    assert.match(await p.textContent("#ws-action-result"), new RegExp(`Run ${id} is pending, due now`));
    const run = (await apiGet(url, `${W}/runs?status=pending`)).body.items.find((i) => i.run.id === id);
    assert.ok(run, "pending now");
    assert.equal(run.run.attempts, 0, "a fresh retry budget");
    await p.screenshot({ path: join(artifacts, "recover-ws-runs.png") });
    assertCalm(p);
  });

  await t.test("replay a dead letter's rule", async () => {
    const [letter] = (await apiGet(url, `${W}/dead-letters`)).body.items;
    const before = (await apiGet(url, `${W}/log?last=5`)).body.items.length;
    const p = await page(b);
    await p.goto(`${url}${link({ tab: "dead-letters" })}`);
    await p.waitForSelector('#ws-dead [data-ws-action="replay"]');
    await p.click('#ws-dead [data-ws-action="replay"]');
    await p.fill(".confirm .reason-input", "recovering after the incident");
    await p.click('[data-confirm="yes"]');
    await p.waitForSelector("#ws-action-result:not([hidden])");
    assert.match(await p.textContent("#ws-action-result"), new RegExp(`${letter.rule} replayed from after seq ${letter.seq - 1} \\(generation \\d+`));
    const height = await p.$eval("#ws-action-result", (e) => e.getBoundingClientRect().height);
    assert.ok(height < 150, `the result is a line or two, not ${height}px tall`);
    const log = (await apiGet(url, `${W}/log?last=1`)).body.items;
    assert.equal(log[log.length - 1].event.type, "reflexr:rule_reset");
    assert.equal(log[log.length - 1].event.reason, "replayed");
    assert.ok(before > 0);
    await p.screenshot({ path: join(artifacts, "recover-ws-dead-letters.png") });
    assertCalm(p);
  });

  await t.test("release a lapsed lease; a held one has no button", async () => {
    const leases = (await apiGet(url, `${W}/leases`)).body.items;
    const lapsed = leases.filter((l) => l.lapsed);
    assert.ok(lapsed.length > 0 && leases.some((l) => !l.lapsed), "the demo has lapsed and held leases");
    const p = await page(b);
    await p.goto(`${url}${link({ tab: "leases" })}`);
    await p.waitForSelector("#ws-leases tbody tr");
    assert.equal(await p.$$eval('#ws-leases [data-ws-action="release"]', (xs) => xs.length), lapsed.length);
    await p.click('#ws-leases [data-ws-action="release"]');
    await p.fill(".confirm .reason-input", "recovering after the incident");
    await p.click('[data-confirm="yes"]');
    await p.waitForSelector("#ws-action-result:not([hidden])");
    assert.match(await p.textContent("#ws-action-result"), new RegExp(`Released ${lapsed[0].key.replace(/[.:]/g, ".")}`));
    const left = (await apiGet(url, `${W}/leases`)).body.items;
    assert.ok(!left.some((l) => l.key === lapsed[0].key), "the lease row is gone");
    assert.equal(left.length, leases.length - 1);
    assertCalm(p);
  });

  await t.test("pause and resume a stored rule", async () => {
    const [rule] = (await apiGet(url, `${W}/rules`)).body.items;
    const p = await page(b);
    await p.goto(`${url}${link({ tab: "rules" })}`);
    await p.waitForSelector('#ws-rules [data-ws-action="pause"]');
    await p.click('#ws-rules [data-ws-action="pause"]');
    await p.fill(".confirm .reason-input", "recovering after the incident");
    await p.click('[data-confirm="yes"]');
    await p.waitForSelector("#ws-action-result:not([hidden])");
    assert.match(await p.textContent("#ws-action-result"), new RegExp(`${rule.name} is paused \\(version ${rule.version + 1}\\)`));
    let now = (await apiGet(url, `${W}/rules`)).body.items.find((r) => r.name === rule.name);
    assert.deepEqual([now.version, now.rule.enabled], [rule.version + 1, false]);
    await p.waitForSelector('#ws-rules [data-ws-action="resume"]', { timeout: 10000 });
    await p.screenshot({ path: join(artifacts, "recover-ws-rules.png") });
    await p.click('#ws-rules [data-ws-action="resume"]');
    await p.fill(".confirm .reason-input", "recovering after the incident");
    await p.click('[data-confirm="yes"]');
    await p.waitForFunction(() => /is resumed/.test(document.querySelector("#ws-action-result")?.textContent || ""), null, { timeout: 10000 });
    now = (await apiGet(url, `${W}/rules`)).body.items.find((r) => r.name === rule.name);
    assert.deepEqual([now.version, now.rule.enabled], [rule.version + 2, true]);
    assertCalm(p);
  });
});

test("read-only: no recovery is offered", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 40, seed: 4 });
  const url = await serve(t, ["monitor", "--db", db]);
  const b = await browser(t);
  const p = await page(b);
  const { body } = await apiGet(url, "api/executions?status=RUNNING&limit=1");
  await p.goto(`${url}?id=${encodeURIComponent(body.items[0].id)}`);
  await p.waitForSelector("#timeline");
  assert.equal(await p.$$eval("#detail-recover, #matching", (xs) => xs.length), 0);
  await p.goto(`${url}?view=workspaces&tenant=acme&ws=prod&tab=dead-letters`);
  await p.waitForSelector("#ws-dead tbody tr");
  assert.equal(await p.$$eval("[data-ws-action]", (xs) => xs.length), 0);
  const r = await fetch(new URL(`api/executions/${encodeURIComponent(body.items[0].id)}/send`, url), { method: "POST", body: '{"event": {"name": "A"}}' });
  assert.equal(r.status, 403);
  assertCalm(p);
});
