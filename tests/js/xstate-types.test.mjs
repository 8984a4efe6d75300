// execstore/xstate's TypeScript declarations: a typical use compiles under --strict, misuses
// do not (the types say something), and the declarations contain no `any`.
// Run: node --test tests/js/xstate-types.test.mjs  (needs `npm ci`: typescript, xstate)
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const TSC = require.resolve("typescript/bin/tsc");
const HERE = fileURLToPath(new URL("./xstate-types/", import.meta.url));
const PACKAGE = fileURLToPath(new URL("../../crates/execstore-wasm/npm/", import.meta.url));

/** Runs tsc on a project of tests/js/xstate-types/; its diagnostics ("" when it compiles). */
function tsc(project) {
  try {
    execFileSync(process.execPath, [TSC, "-p", `${HERE}${project}`], { encoding: "utf8", stdio: "pipe" });
    return "";
  } catch (error) {
    return error.stdout + error.stderr;
  }
}

test("a typical use of execstore/xstate compiles under --strict", () => {
  assert.equal(tsc("tsconfig.json"), "");
});

test("every misuse of execstore/xstate is a type error", () => {
  const output = tsc("tsconfig.misuse.json");
  const lines = readFileSync(`${HERE}misuse.ts`, "utf8").split("\n");
  const expected = lines.flatMap((line, i) => (line.endsWith("// error") ? [i + 1] : []));
  const reported = new Set([...output.matchAll(/misuse\.ts\((\d+),\d+\): error/g)].map((m) => Number(m[1])));
  assert.ok(expected.length >= 9);
  for (const line of expected) {
    assert.ok(reported.has(line), `no type error on misuse.ts line ${line}: ${lines[line - 1]}\n${output}`);
  }
  for (const line of reported) {
    assert.ok(expected.includes(line), `unexpected type error on misuse.ts line ${line}\n${output}`);
  }
});

test("execstore/xstate declares no `any`", () => {
  const text = readFileSync(`${PACKAGE}xstate.d.ts`, "utf8");
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
  assert.doesNotMatch(code, /\bany\b/);
});
