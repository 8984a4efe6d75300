// The package's TypeScript declarations: a typical use compiles under --strict, misuses do
// not (so the types say something, they are not `any`), and the public declarations contain
// no `any`. Run: node --test tests/js/  (needs `npm run build:wasm`, and `npm ci` for tsc)
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { assertMisusesFail, tscProject } from "./tsc.mjs";

const HERE = fileURLToPath(new URL("./types/", import.meta.url));
const PACKAGE = fileURLToPath(new URL("../../crates/execstore-wasm/npm/", import.meta.url));

/** Runs tsc on a project of tests/js/types/; its diagnostics ("" when it compiles). */
const tsc = (project) => tscProject(HERE, project);

test("a typical use compiles under --strict", () => {
  assert.equal(tsc("tsconfig.json"), "");
});

test("every misuse is a type error", () => {
  assertMisusesFail(HERE);
});

test("the public declarations contain no `any`", () => {
  const generated = readFileSync(`${PACKAGE}wasm/execstore.d.ts`, "utf8");
  // The shapes and the Store class; InitOutput (the raw wasm exports) is not re-exported.
  const publicPart = generated.slice(0, generated.indexOf("export type InitInput"));
  assert.match(publicPart, /export class Store/);
  const files = { "wasm/execstore.d.ts (public part)": publicPart };
  for (const name of ["index.d.ts", "client.d.ts", "workspace-client.d.ts"]) files[name] = readFileSync(`${PACKAGE}${name}`, "utf8");
  for (const [name, text] of Object.entries(files)) {
    const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
    assert.doesNotMatch(code, /\bany\b/, `${name} declares an any`);
  }
});
