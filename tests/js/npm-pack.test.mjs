// The npm package as its users get it: `npm pack` of crates/execstore-wasm/npm, the tarball
// installed in a fresh folder (offline: the tarball, and xstate from npm's cache), then every
// example of its README run there: each ```js block in Node (its `// → ...` comments are the
// lines it must print, in order), each ```ts block type-checked by `tsc --strict` against the
// installed declarations and then run. A block that starts with `// in a page` or `// in a
// dedicated worker` runs only in a browser: it is syntax-checked and its imports resolved.
// Then `npm publish --dry-run` on the tarball, which must pass without a login or a network.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const PACKAGE = join(ROOT, "crates/execstore-wasm/npm");
const TSC = require.resolve("typescript/bin/tsc");
const XSTATE = JSON.parse(readFileSync(join(ROOT, "node_modules/xstate/package.json"), "utf8")).version;
const README = readFileSync(join(PACKAGE, "README.md"), "utf8");
const MANIFEST = JSON.parse(readFileSync(join(PACKAGE, "package.json"), "utf8"));

/** npm with a config of its own (no login) and --offline: npm's cache only, no request to
 * any registry (xstate comes from the cache the repository's own `npm ci` filled), no update
 * check. */
function npm(args, cwd, userconfig) {
  const run = spawnSync("npm", [...args, "--userconfig", userconfig, "--offline", "--no-update-notifier"], {
    cwd,
    encoding: "utf8",
    timeout: 120_000,
  });
  return { status: run.status, out: `${run.stdout}${run.stderr}`, stdout: run.stdout };
}

/** The README's fenced blocks of `lang`, with their line numbers. */
function blocks(lang) {
  const found = [];
  const lines = README.split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() !== "```" + lang) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && lines[end].trim() !== "```") end++;
    found.push({ line: start + 1, code: lines.slice(start, end).join("\n") + "\n" });
    i = end;
  }
  return found;
}

/** What a block must print: its `// → ...` comments, in order. */
function expectedOutput(code) {
  return [...code.matchAll(/\/\/ → (.*)$/gm)].map((m) => m[1].trim());
}

const BROWSER_ONLY = /^\/\/ in a (page|dedicated worker)/;

describe("npm pack: the package as installed", () => {
  let dir;
  let tarball;
  let userconfig;

  before(() => {
    assert.ok(
      existsSync(join(PACKAGE, "wasm/execstore_bg.wasm")) && existsSync(join(PACKAGE, "web/edge/handler.js")),
      "the package is not built: run `npm run build:wasm` (scripts/build-wasm)",
    );
    dir = mkdtempSync(join(tmpdir(), "execstore-npm-pack-"));
    userconfig = join(dir, "npmrc");
    // npm's own registry (the cache's entries are keyed by it), no credentials for it
    writeFileSync(userconfig, "registry=https://registry.npmjs.org/\naudit=false\nfund=false\n");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test("npm pack holds what the package needs and nothing of the repository's", () => {
    const packed = npm(["pack", "--json", "--pack-destination", dir], PACKAGE, userconfig);
    assert.equal(packed.status, 0, packed.out);
    const [info] = JSON.parse(packed.stdout);
    tarball = join(dir, info.filename);
    const files = info.files.map((f) => f.path).sort();
    for (const needed of [
      "LICENSE", "README.md", "package.json", "index.js", "index.d.ts", "node.js", "edge.d.ts",
      "wasm/execstore.js", "wasm/execstore_bg.wasm", "web/edge/handler.js", "web/index.html", "web/app.js",
      "web/views/index.js", "web/vendor/dagre.esm.js", "web/vendor/dagre.LICENSE",
    ]) {
      assert.ok(files.includes(needed), `${needed} is not in the tarball: ${files.join(" ")}`);
    }
    // every file an export or `files` names is there
    const targets = Object.values(MANIFEST.exports).flatMap((e) => (typeof e === "string" ? [e] : Object.values(e)));
    for (const target of targets) assert.ok(files.includes(target.replace(/^\.\//, "")), `export ${target} is not packed`);
    for (const file of files) {
      assert.doesNotMatch(file, /(^|\/)(\.gitignore|local[^/]*|.*\.rs|.*\.test\.mjs|Cargo\.toml)$/, `${file} should not ship`);
    }
    const bytes = statSync(tarball).size;
    console.log(`npm pack: ${info.filename}, ${bytes} bytes packed, ${info.unpackedSize} unpacked, ${files.length} files`);
    assert.ok(bytes < 3 * 1024 * 1024, `the tarball is ${bytes} bytes`);
  });

  test("it installs offline in a fresh folder, with its metadata", () => {
    assert.ok(tarball, "packed");
    const app = join(dir, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
    let installed = npm(["install", tarball, `xstate@${XSTATE}`, "--no-audit", "--no-fund"], app, userconfig);
    if (installed.status !== 0 && /ENOTCACHED/.test(installed.out)) {
      // npm's cache lacks xstate (a cleaned cache): pack the repository's installed copy instead
      const xstate = npm(["pack", "--json", "--pack-destination", dir, join(ROOT, "node_modules/xstate")], dir, userconfig);
      assert.equal(xstate.status, 0, xstate.out);
      const local = join(dir, JSON.parse(xstate.stdout)[0].filename);
      installed = npm(["install", tarball, local, "--no-audit", "--no-fund"], app, userconfig);
    }
    assert.equal(installed.status, 0, installed.out);
    const manifest = JSON.parse(readFileSync(join(app, "node_modules/execstore/package.json"), "utf8"));
    for (const key of ["description", "license", "repository", "homepage", "bugs", "keywords", "author"]) {
      assert.ok(manifest[key], `package.json has no ${key}`);
    }
    assert.equal(manifest.license, "MIT OR Apache-2.0");
    assert.match(readFileSync(join(app, "node_modules/execstore/LICENSE"), "utf8"), /MIT License[\s\S]*Apache License/);
  });

  test("the README speaks of the package as installed", () => {
    assert.match(README, /npm install execstore/);
    assert.match(README, /## Build from source/);
    // outside "Build from source", no path that exists only in the repository
    const body = README.replace(/## Build from source[\s\S]*?\n## /, "## ");
    for (const path of ["crates/", "tests/", "bench/", "docs/", "web/", "scripts/", "../../"]) {
      for (const match of body.matchAll(new RegExp(`[\`("' ]${path.replace(/[./]/g, "\\$&")}[^\\s)\`"']*`, "g"))) {
        assert.fail(`the README names the repository path ${match[0].slice(1)}`);
      }
    }
  });

  test("every ```js example of the README runs against the installed package", () => {
    const app = join(dir, "app");
    const examples = blocks("js");
    assert.ok(examples.length >= 6, `${examples.length} js blocks`);
    let ran = 0;
    for (const { line, code } of examples) {
      const file = join(app, `readme-${line}.mjs`);
      writeFileSync(file, code);
      if (BROWSER_ONLY.test(code)) {
        // A browser's: valid JS whose imports the installed package has.
        const checked = spawnSync(process.execPath, ["--check", file], { encoding: "utf8" });
        assert.equal(checked.status, 0, `README line ${line}: ${checked.stderr}`);
        for (const [, specifier] of code.matchAll(/from "([^"]+)"/g)) {
          const resolved = spawnSync(process.execPath, ["--input-type=module", "-e", `import.meta.resolve(${JSON.stringify(specifier)})`], { cwd: app, encoding: "utf8" });
          assert.equal(resolved.status, 0, `README line ${line}: ${specifier} does not resolve: ${resolved.stderr}`);
        }
        continue;
      }
      const run = spawnSync(process.execPath, [file], { cwd: app, encoding: "utf8", timeout: 60_000 });
      assert.equal(run.status, 0, `README line ${line} failed (${run.status} ${run.signal ?? ""}):\n${code}\n${run.stderr}`);
      const want = expectedOutput(code);
      if (want.length > 0) {
        assert.deepEqual(run.stdout.trim().split("\n").map((l) => l.trim()), want, `README line ${line}'s output`);
      }
      ran++;
    }
    assert.ok(ran >= 4, `${ran} examples ran`);
  });

  test("every ```ts example type-checks under tsc --strict against the installed declarations, and runs", () => {
    const app = join(dir, "app");
    const examples = blocks("ts");
    assert.ok(examples.length >= 1, "a TypeScript example");
    for (const { line, code } of examples) {
      const project = join(app, `ts-${line}`);
      mkdirSync(project);
      writeFileSync(join(project, "example.ts"), code);
      writeFileSync(join(project, "tsconfig.json"), JSON.stringify({
        compilerOptions: {
          strict: true, target: "es2022", module: "nodenext", moduleResolution: "nodenext",
          lib: ["es2022", "dom"], skipLibCheck: false, types: [], outDir: "out",
        },
        files: ["example.ts"],
      }));
      try {
        execFileSync(process.execPath, [TSC, "-p", project], { encoding: "utf8", stdio: "pipe" });
      } catch (error) {
        assert.fail(`README line ${line} does not type-check:\n${error.stdout}${error.stderr}`);
      }
      // out/ sits inside the app, beside its node_modules: run what tsc wrote
      writeFileSync(join(project, "out/package.json"), JSON.stringify({ type: "module" }));
      const run = spawnSync(process.execPath, [join(project, "out/example.js")], { cwd: app, encoding: "utf8", timeout: 60_000 });
      assert.equal(run.status, 0, `README line ${line} failed:\n${run.stderr}`);
      const want = expectedOutput(code);
      if (want.length > 0) assert.deepEqual(run.stdout.trim().split("\n"), want, `README line ${line}'s output`);
    }
  });

  test("npm publish --dry-run passes, with no login and offline", () => {
    assert.ok(tarball, "packed");
    const published = npm(["publish", tarball, "--dry-run"], dir, userconfig);
    assert.equal(published.status, 0, published.out);
    assert.match(published.out, /\+ execstore@0\.1\.0/);
    assert.doesNotMatch(published.out, /auto-corrected|npm error/i, published.out);
    console.log(`npm publish --dry-run: ${published.out.split("\n").filter((l) => /publish|\+ execstore/.test(l)).join(" | ")}`);
  });
});
