// The monitor's UI over a store with one execution whose document is garbage: the list still
// renders, and names the bad row (its id, the field, what is wrong) as text.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { artifacts, browser, demo, page, serve, tempDir } from "./helpers.mjs";

/** Garbage over one execution's document (as harel's own file, without execstore's indexes
 * and triggers, each of which refuses it, allows); returns its id. */
function damageOneRow(db) {
  const script = `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for (k, n) in c.execute("SELECT type, name FROM sqlite_master WHERE type IN ('index', 'trigger') AND name LIKE '%execstore%' AND sql IS NOT NULL").fetchall():
    c.execute(f'DROP {k} "{n}"')
c.execute("DROP TABLE execstore_migrations")
(i,) = c.execute("SELECT id FROM executions ORDER BY id LIMIT 1 OFFSET 2").fetchone()
c.execute("UPDATE executions SET data = '{garbage' WHERE id = ?", (i,))
c.commit()
print(i)
`;
  const out = spawnSync("python3", ["-c", script, db], { encoding: "utf8" });
  if (out.status !== 0) throw new Error(`damaging ${db}: ${out.stderr}`);
  return out.stdout.trim();
}

test("one unreadable execution: the list renders and names it", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 40, seed: 3 });
  const bad = damageOneRow(db);
  const url = await serve(t, ["monitor", "--db", db]);
  const b = await browser(t);
  const p = await page(b);
  await p.goto(url);
  await p.waitForSelector(".executions-grid tbody tr");
  const box = await p.textContent(".unreadable");
  assert.ok(box.includes(bad), box);
  assert.ok(box.includes("(data)") && box.includes("not JSON"), box);
  const ids = await p.$$eval(".executions-grid tbody tr", (rows) => rows.map((r) => r.dataset.id));
  assert.ok(ids.length > 0 && !ids.includes(bad), ids.join(","));
  await p.screenshot({ path: join(artifacts, "monitor-unreadable-row.png") });
  assert.deepEqual(p.problems.errors, [], "no page error");
});
