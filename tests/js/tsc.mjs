// TypeScript's compiler on a snippet written against the package (as its users import it):
// the type tests' one way to ask "does this compile under --strict?".
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const TSC = require.resolve("typescript/bin/tsc");
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Compiles `code` (a main.ts) under --strict against the package; tsc's diagnostics ("" when it compiles). */
export function tscSnippet(code) {
  const dir = mkdtempSync(join(tmpdir(), "execstore-types-"));
  try {
    symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
    writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
    writeFileSync(join(dir, "main.ts"), code);
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        strict: true, noEmit: true, target: "es2022", module: "nodenext", moduleResolution: "nodenext",
        lib: ["esnext", "dom"], skipLibCheck: false, types: [],
      },
      files: ["main.ts"],
    }));
    execFileSync(process.execPath, [TSC, "-p", dir], { encoding: "utf8", stdio: "pipe" });
    return "";
  } catch (error) {
    return `${error.stdout ?? ""}${error.stderr ?? ""}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs tsc on the project `project` (a tsconfig file name) of the folder `dir`; its
 * diagnostics ("" when it compiles). */
export function tscProject(dir, project) {
  try {
    execFileSync(process.execPath, [TSC, "-p", join(dir, project)], { encoding: "utf8", stdio: "pipe" });
    return "";
  } catch (error) {
    return `${error.stdout ?? ""}${error.stderr ?? ""}`;
  }
}

/** Compiles `dir`'s tsconfig.misuse.json and asserts that tsc reports an error on exactly the
 * lines of `dir`/misuse.ts that end in `// error` (at least `min` of them). */
export function assertMisusesFail(dir, min = 9) {
  const output = tscProject(dir, "tsconfig.misuse.json");
  const lines = readFileSync(join(dir, "misuse.ts"), "utf8").split("\n");
  const expected = lines.flatMap((line, i) => (line.endsWith("// error") ? [i + 1] : []));
  const reported = new Set([...output.matchAll(/misuse\.ts\((\d+),\d+\): error/g)].map((m) => Number(m[1])));
  assert.ok(expected.length >= min);
  for (const line of expected) {
    assert.ok(reported.has(line), `no type error on misuse.ts line ${line}: ${lines[line - 1]}\n${output}`);
  }
  for (const line of reported) {
    assert.ok(expected.includes(line), `unexpected type error on misuse.ts line ${line}\n${output}`);
  }
}
