// The operator's pieces in Chromium: named tokens (the header says who, actions a role cannot
// make are not offered), the reason every write asks for, the Audit page, the execution
// detail's Audit section, and saved views (this browser's and the team's).
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { apiGet, artifacts, browser, demo, page, serve, tempDir } from "./helpers.mjs";

const ADMIN = "ops-admin-token";
const ACTOR = "ops-act-token";

function assertCalm(p, { allow = null } = {}) {
  assert.deepEqual(p.problems.dialogs, [], "no dialog may open");
  const errors = p.problems.errors.filter((e) => !(allow && allow.test(e)));
  assert.deepEqual(errors, [], "no page error");
}

function tokensFile(dir) {
  const sha = createHash("sha256").update(ADMIN).digest("hex");
  const path = join(dir, "tokens.toml");
  writeFileSync(path, `[[token]]\nname = "ada"\nrole = "admin"\nsha256 = "${sha}"\n\n[[token]]\nname = "otto"\nrole = "act"\ntoken = "${ACTOR}"\n`);
  return path;
}

test("operators: tokens, reasons, audit, saved views", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 120, seed: 5 });
  const url = await serve(t, ["monitor", "--db", db, "--tokens", tokensFile(dir)]);
  const b = await browser(t);
  const { body: running } = await apiGet(url, "api/executions?status=RUNNING&roots_only=true&limit=1");
  const id = running.items[0].id;

  await t.test("the header names the token; act is not offered purge; a write needs its reason", async () => {
    const p = await page(b);
    await p.goto(`${url}?id=${encodeURIComponent(id)}#token=${ACTOR}`);
    await p.waitForSelector("#caller");
    assert.equal(await p.textContent("#caller"), "otto · act");
    await p.waitForSelector('#detail-actions [data-action="suspend"]');
    await p.click('#detail-actions [data-action="suspend"]');
    await p.waitForSelector("#detail-actions .reason-input");
    assert.equal(await p.isDisabled('#detail-actions [data-confirm="yes"]'), true, "no reason: no confirming");
    await p.fill("#detail-actions .reason-input", "   ");
    assert.equal(await p.isDisabled('#detail-actions [data-confirm="yes"]'), true, "blank is no reason");
    await p.fill("#detail-actions .reason-input", "customer asked to pause");
    await p.screenshot({ path: join(artifacts, "operators-reason.png") });
    await p.click('#detail-actions [data-confirm="yes"]');
    await p.waitForFunction(() => document.querySelector(".detail-head .pill")?.textContent === "SUSPENDED", null, { timeout: 10000 });
    // The detail's audit section shows it, with who and why.
    await p.waitForSelector('#detail-audit tr[data-outcome="ok"]', { timeout: 10000 });
    const row = await p.textContent("#detail-audit tbody tr");
    assert.match(row, /otto/);
    assert.match(row, /executions\.suspend/);
    assert.match(row, /customer asked to pause/);
    await p.screenshot({ path: join(artifacts, "operators-detail-audit.png") });
    // A FAILED root with act: purge is admin's, not offered.
    const { body: failed } = await apiGet(url, "api/executions?status=DONE&roots_only=true&limit=1");
    await p.goto(`${url}?id=${encodeURIComponent(failed.items[0].id)}`);
    await p.waitForSelector("#detail-actions");
    const offered = await p.$$eval("#detail-actions [data-action]", (xs) => xs.map((x) => x.dataset.action));
    assert.deepEqual(offered, [], "purge needs admin: not offered to act");
    assertCalm(p);
  });

  await t.test("the Audit page lists writes, refusals included, filtered by who", async () => {
    // A refused write (act may not purge) and an unknown token, straight through the API.
    const post = (path, token, body) => fetch(new URL(path, url), {
      method: "POST", headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    assert.equal((await post(`api/executions/${encodeURIComponent(id)}/purge`, ACTOR, { reason: "tidy" })).status, 403);
    assert.equal((await post(`api/executions/${encodeURIComponent(id)}/resume`, "nope", { reason: "?" })).status, 401);
    assert.equal((await post(`api/executions/${encodeURIComponent(id)}/resume`, ADMIN, {})).status, 400);
    const p = await page(b);
    await p.goto(`${url}?view=audit`);
    await p.waitForSelector(".audit-grid tbody tr");
    assert.equal(await p.textContent("h1"), "Audit");
    const rows = await p.$$eval(".audit-grid tbody tr", (xs) => xs.map((x) => x.dataset.outcome));
    assert.deepEqual(rows, ["UNAUTHORIZED", "FORBIDDEN", "ok"], "newest first; the reasonless write is not an action");
    const text = await p.textContent(".audit-grid");
    assert.match(text, /anonymous/);
    assert.ok(!text.includes(ACTOR) && !text.includes("nope"), "no token on the page");
    await p.screenshot({ path: join(artifacts, "operators-audit.png") });
    await p.fill("#audit-actor", "otto");
    await p.click('#audit-filters button[type="submit"]');
    await p.waitForFunction(() => location.search.includes("actor=otto"));
    await p.waitForFunction(() => document.querySelectorAll(".audit-grid tbody tr").length === 2, null, { timeout: 10000 });
    // The target links to the execution.
    await p.click(".audit-grid tbody tr .target a");
    await p.waitForFunction((want) => new URLSearchParams(location.search).get("id") === want, id);
    assertCalm(p, { allow: /status of 40[013]/ });
  });

  await t.test("saved views: in this browser and for the team, opened from the menu", async () => {
    const p = await page(b);
    await p.goto(`${url}?status=FAILED&roots=1#token=${ADMIN}`);
    await p.waitForSelector("#saved-views");
    await p.click("#saved-views > summary");
    await p.waitForSelector("#view-name");
    await p.fill("#view-name", "Failed roots");
    await p.click("#save-local");
    await p.waitForSelector('#views-browser [data-name="Failed roots"]');
    await p.fill("#view-name", "Team failed");
    await p.click("#save-team");
    await p.fill("#saved-views .reason-input", "for the on-call rota");
    await p.click('#saved-views [data-confirm="yes"]');
    await p.waitForSelector('#views-team [data-name="Team failed"]');
    const { body: views } = await apiGet(url, "api/views");
    assert.deepEqual(views.items.map((v) => [v.name, v.query, v.owner]), [["Team failed", "status=FAILED&roots=1", "ada"]]);
    await p.screenshot({ path: join(artifacts, "operators-saved-views.png") });
    // Elsewhere, the menu opens them: the URL is the view.
    await p.goto(`${url}?status=DONE`);
    await p.click("#saved-views > summary");
    await p.click('#views-browser [data-name="Failed roots"]');
    await p.waitForFunction(() => location.search === "?status=FAILED&roots=1");
    await p.waitForFunction(() => document.querySelector("#roots")?.checked === true);
    await p.click("#saved-views > summary");
    await p.click('#views-team [data-name="Team failed"]');
    await p.waitForFunction(() => location.search === "?status=FAILED&roots=1");
    // Deleting the team's view is a write with its reason.
    await p.click("#saved-views > summary");
    await p.click('#views-team [data-delete="Team failed"]');
    await p.fill("#views-team .reason-input", "not needed any more");
    await p.click('#views-team [data-confirm="yes"]');
    await p.waitForSelector("#saved-views-status");
    assert.deepEqual((await apiGet(url, "api/views")).body.items, []);
    const { body: audit } = await apiGet(url, "api/audit?actor=ada");
    assert.deepEqual(audit.items.map((e) => [e.action, e.target, e.reason]), [
      ["views.delete", "Team failed", "not needed any more"],
      ["views.put", "Team failed", "for the on-call rota"],
    ]);
    assertCalm(p);
  });
});
