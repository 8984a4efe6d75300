// TypeScript's compiler on a snippet written against the package (as its users import it):
// the type tests' one way to ask "does this compile under --strict?".
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
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
