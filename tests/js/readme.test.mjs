// README.md's JavaScript quick start runs as a user pastes it (an ES module of its own),
// twice: what it prints is what its comment says.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

test("README.md's JavaScript quick start runs, twice", (t) => {
  const readme = readFileSync(join(here, "../../README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Quick start"));
  const block = section.match(/\*\*JavaScript\*\*[\s\S]*?```js\n([\s\S]*?)```/);
  assert.ok(block, "README.md's Quick start has a JavaScript block");
  const expected = [...block[1].matchAll(/console\.log\(.*\);\s*\/\/ (.*)$/gm)].map((m) => m[1].trim());
  assert.ok(expected.length > 0, "the block says what it prints");
  // beside the tests, so that `execstore` resolves as the repository's package (node_modules)
  const dir = mkdtempSync(join(here, ".readme-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "quick-start.mjs");
  writeFileSync(file, block[1]);
  for (const run of [1, 2]) {
    const out = execFileSync(process.execPath, [file], { cwd: dir, encoding: "utf8" });
    assert.deepEqual(out.trim().split("\n"), expected, `run ${run} prints what README says`);
  }
});
