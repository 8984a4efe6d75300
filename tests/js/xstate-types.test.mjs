// execstore/xstate's TypeScript declarations: a typical use compiles under --strict, misuses
// do not (the types say something), and the declarations contain no `any`.
// Run: node --test tests/js/xstate-types.test.mjs  (needs `npm ci`: typescript, xstate)
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { assertMisusesFail, tscProject } from "./tsc.mjs";

const HERE = fileURLToPath(new URL("./xstate-types/", import.meta.url));
const PACKAGE = fileURLToPath(new URL("../../crates/execstore-wasm/npm/", import.meta.url));

/** Runs tsc on a project of tests/js/xstate-types/; its diagnostics ("" when it compiles). */
const tsc = (project) => tscProject(HERE, project);

test("a typical use of execstore/xstate compiles under --strict", () => {
  assert.equal(tsc("tsconfig.json"), "");
});

test("every misuse of execstore/xstate is a type error", () => {
  assertMisusesFail(HERE);
});

test("execstore/xstate declares no `any`", () => {
  const text = readFileSync(`${PACKAGE}xstate.d.ts`, "utf8");
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
  assert.doesNotMatch(code, /\bany\b/);
});
