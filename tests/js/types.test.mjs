// The package's TypeScript declarations: a typical use compiles under --strict, misuses do
// not (so the types say something, they are not `any`), and the public declarations contain
// no `any`. Run: node --test tests/js/  (needs `npm run build:wasm`, and `npm ci` for tsc)
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const TSC = require.resolve("typescript/bin/tsc");
const HERE = fileURLToPath(new URL("./types/", import.meta.url));
const PACKAGE = fileURLToPath(new URL("../../crates/execstore-wasm/npm/", import.meta.url));

/** Runs tsc on a project of tests/js/types/; its diagnostics ("" when it compiles). */
function tsc(project) {
  try {
    execFileSync(process.execPath, [TSC, "-p", `${HERE}${project}`], { encoding: "utf8", stdio: "pipe" });
    return "";
  } catch (error) {
    return error.stdout + error.stderr;
  }
}

test("a typical use compiles under --strict", () => {
  assert.equal(tsc("tsconfig.json"), "");
});

test("every misuse is a type error", () => {
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
