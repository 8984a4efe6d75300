// The monitor for everyone, in Chromium at desktop and phone (390x844) sizes and in both
// themes: every view has one h1 and no horizontal scroll; status pills, labels and graph text
// meet WCAG AA contrast (computed from the page's styles); graphs fit, zoom, pan and fit
// again; no graph label covers a node; the dark-mode toggle is kept; list rows are real
// links reachable with Tab; the history's three modes, its kind filter, the bundle download
// and the copy buttons; a purged execution's pane says so (purged here or by another
// process) without a 404 in the console; workspace URLs never say `last=undefined`; the Live
// dot turns red when the server is gone. Screenshots: test-artifacts/ui-*.png.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { apiGet, artifacts, browser, demo, page, repo, run, serve, SIZES, stopServer, tempDir, THEMES } from "./helpers.mjs";

/** Fails the test if the page raised an error, logged one (a failed request, say) or opened a dialog. */
function assertCalm(p) {
  assert.deepEqual(p.problems.dialogs, [], "no dialog may open");
  assert.deepEqual(p.problems.errors, [], "no page error and nothing in the console");
}

/** Every view of the demo store (relative addresses), by a short name. */
function views(ids) {
  return {
    list: "",
    detail: `?id=${encodeURIComponent(ids.running)}`,
    outbox: "?view=outbox",
    timers: "?view=timers",
    spawns: "?view=spawns",
    workspaces: "?view=workspaces",
    workspace: "?view=workspaces&tenant=acme&ws=prod",
    runs: "?view=workspaces&tenant=acme&ws=prod&tab=runs",
    "dead-letters": "?view=dead-letters",
    definition: "?view=definition&definition=fulfilment",
  };
}

/** Waits until the view drew (its h1) and its first reads settled. */
async function settle(p) {
  await p.waitForSelector("h1", { state: "attached" });
  await p.waitForFunction(() => !document.querySelector(".state.loading"));
  await p.waitForTimeout(300);
}

/**
 * Text whose contrast against what is behind it is below `min` (WCAG's ratio over the
 * computed colours: the element's `color`, or an SVG text's `fill`, against its backgrounds
 * blended down to the first opaque one; an SVG text against its box's fill). Elements that
 * are not shown, or sit in something made translucent on purpose (a dimmed chart column),
 * are left out.
 */
function lowContrast(p, selector, min = 4.5) {
  return p.evaluate(([selector, min]) => {
    const parse = (c) => {
      let m = c.match(/^rgba?\(([^)]+)\)$/);
      if (m) {
        const [r, g, b, a = 1] = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
        return { r, g, b, a };
      }
      m = c.match(/^color\(srgb ([^)]+)\)$/);
      if (m) {
        const [r, g, b, a = 1] = m[1].split(/[\s/]+/).filter(Boolean).map(Number);
        return { r: r * 255, g: g * 255, b: b * 255, a };
      }
      return null;
    };
    const over = (top, under) => ({
      r: top.r * top.a + under.r * (1 - top.a),
      g: top.g * top.a + under.g * (1 - top.a),
      b: top.b * top.a + under.b * (1 - top.a),
      a: 1,
    });
    const lum = ({ r, g, b }) => {
      const f = (v) => {
        const s = v / 255;
        return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const ratio = (a, b) => {
      const [x, y] = [lum(a), lum(b)].sort((m, n) => n - m);
      return (x + 0.05) / (y + 0.05);
    };
    const background = (el) => {
      const layers = [];
      for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
        const c = parse(getComputedStyle(e).backgroundColor);
        if (c && c.a > 0) {
          layers.push(c);
          if (c.a >= 1) break;
        }
      }
      let bg = { r: 255, g: 255, b: 255, a: 1 };
      if (layers.length && layers[layers.length - 1].a >= 1) bg = layers.pop();
      for (const l of layers.reverse()) bg = over(l, bg);
      return bg;
    };
    const faded = (el) => {
      for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
        if (Number(getComputedStyle(e).opacity) < 1) return true;
      }
      return false;
    };
    const bad = [];
    let checked = 0;
    for (const el of document.querySelectorAll(selector)) {
      const r = el.getBoundingClientRect();
      if (!r.width || !r.height || !el.textContent.trim() || faded(el)) continue;
      if (getComputedStyle(el).visibility === "hidden") continue;
      let fg;
      let bg;
      if (el instanceof SVGElement) {
        fg = parse(getComputedStyle(el).fill);
        const box = el.parentElement.querySelector(":scope > rect");
        bg = box ? parse(getComputedStyle(box).fill) : background(el.closest("svg"));
        if (bg && bg.a < 1) bg = over(bg, background(el.closest("svg")));
      } else {
        fg = parse(getComputedStyle(el).color);
        bg = background(el);
      }
      if (!fg || !bg) continue;
      if (fg.a < 1) fg = over(fg, bg);
      checked++;
      const k = ratio(fg, bg);
      if (k < min) bad.push(`${el.tagName.toLowerCase()}.${String(el.className.baseVal ?? el.className).replace(/\s+/g, ".")} "${el.textContent.trim().slice(0, 24)}": ${k.toFixed(2)}`);
    }
    return { bad, checked };
  }, [selector, min]);
}

const TEXT = [
  ".pill", ".chart .label", ".chart .n", ".grid th", ".grid td", ".muted", ".views a", ".badge", ".fresh",
  ".theme-toggle", ".kind-chip", ".seg button", ".chip-label", ".step-head time", ".step-head .kind",
  ".summary dt", ".summary dd", ".view-head p", ".tabs .tab", ".graph-legend", "button", "label", ".field > span",
  "svg.statechart text",
].join(", ");

/** Ids of the demo store the tests open: a running root with a trace of several kinds. */
async function pickIds(url) {
  const { body } = await apiGet(url, "api/executions?status=RUNNING&roots_only=true&limit=200");
  let best = null;
  for (const e of body.items) {
    const path = `api/executions/${encodeURIComponent(e.id)}`;
    const trace = (await apiGet(url, `${path}/trace`)).body.items;
    const pending = (await apiGet(url, `${path}/pending`)).body;
    const kinds = new Set(trace.map((s) => s.event_kind));
    const score = kinds.size * 10 + (pending.timers.length ? 5 : 0) + Math.min(trace.length, 4);
    if (!best || score > best.score) best = { id: e.id, score, kinds: kinds.size, timers: pending.timers.length };
    if (kinds.size >= 3 && pending.timers.length) break;
  }
  assert.ok(best && best.kinds >= 2, "the demo has a running execution with steps of two kinds or more");
  const done = (await apiGet(url, "api/executions?status=DONE&roots_only=true&limit=50")).body.items;
  return { running: best.id, timers: best.timers, done: done.map((e) => e.id) };
}

test("the monitor for everyone", { concurrency: 4 }, async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 300, seed: 3 });
  const url = await serve(t, ["monitor", "--db", db]);
  const b = await browser(t);
  const ids = await pickIds(url);

  // The views and graphs at each size and theme, four pages at a time (each in a context of
  // its own); the history's checks below use the clipboard, which the browser shares, so they
  // go one at a time.
  const pages = [];
  for (const size of Object.keys(SIZES)) {
    for (const theme of THEMES) {
      pages.push(t.test(`${size}, ${theme}: one h1, no horizontal scroll, AA contrast on every view`, async () => {
        const p = await page(b, { size, theme });
        for (const [name, where] of Object.entries(views(ids))) {
          await p.goto(`${url}${where}`);
          await settle(p);
          if (name === "detail") await p.waitForSelector("#timeline, #history");
          if (name === "definition") await p.waitForSelector("#def-graph svg.statechart g.state");
          const h1 = await p.$$eval("h1", (hs) => hs.map((x) => x.textContent.trim()));
          assert.equal(h1.length, 1, `${name}: one h1 (${JSON.stringify(h1)})`);
          const wide = await p.evaluate(() => ({ page: document.documentElement.scrollWidth, body: document.body.scrollWidth, view: innerWidth }));
          // On a phone the browser widens the layout viewport to hold a page too wide for it
          // (and shows it zoomed out): the page must fit the device's own width.
          const width = SIZES[size].viewport.width;
          assert.ok(wide.page <= width && wide.body <= width && wide.view <= width, `${name} at ${size}: no horizontal scroll (${JSON.stringify(wide)})`);
          // Every header control is on the screen (none pushed off its right edge).
          const off = await p.$$eval(".top a, .top button, .top input, .top select", (els, w) => els
            .filter((el) => el.getClientRects().length && getComputedStyle(el).visibility !== "hidden")
            .map((el) => ({ what: el.id || el.textContent.trim() || el.className, r: el.getBoundingClientRect() }))
            .filter(({ r }) => r.left < 0 || r.right > w + 0.5)
            .map(({ what }) => what), width);
          assert.deepEqual(off, [], `${name} at ${size}: header controls within reach`);
          const { bad, checked } = await lowContrast(p, TEXT);
          assert.ok(checked > 5, `${name}: text was checked (${checked})`);
          assert.deepEqual(bad, [], `${name} at ${size} in ${theme}: text below 4.5:1`);
          if (["list", "detail", "definition", "workspace"].includes(name)) {
            await p.screenshot({ path: join(artifacts, `ui-${name}-${size}-${theme}.png`) });
          }
        }
        assertCalm(p);
        await p.context().close();
      }));

      pages.push(t.test(`${size}, ${theme}: graphs fit the width, zoom, pan and fit again; no label covers a node`, async () => {
        const p = await page(b, { size, theme });
        for (const where of [`?view=definition&definition=fulfilment`, `?id=${encodeURIComponent(ids.running)}`]) {
          await p.goto(`${url}${where}`);
          const root = where.includes("definition=") ? "#def-graph" : "#exec-graph";
          const svgSel = `${root} svg.statechart`;
          await p.waitForSelector(`${svgSel} g.state`);
          const frame = await p.$eval(svgSel, (svg) => {
            const r = svg.getBoundingClientRect();
            const w = svg.closest(".graph-wrap").getBoundingClientRect();
            return { svg: r.right, wrap: w.right, view: innerWidth, box: svg.getAttribute("viewBox") };
          });
          assert.ok(frame.svg <= frame.wrap + 1 && frame.wrap <= frame.view, `fits: ${JSON.stringify(frame)}`);
          const viewer = p.locator(`${root} .graph-viewer`);
          await viewer.locator(".zoom-in").click();
          await viewer.locator(".zoom-in").click();
          const zoomed = await p.$eval(svgSel, (svg) => ({ zoom: Number(svg.dataset.zoom), box: svg.getAttribute("viewBox").split(" ").map(Number) }));
          assert.ok(zoomed.zoom > 1.9, `zoomed in: ${zoomed.zoom}`);
          const full = frame.box.split(" ").map(Number);
          assert.ok(zoomed.box[2] < full[2] * 0.6, "the view shows less of the picture");
          // Drag to pan: the view moves the other way.
          const r = await p.$eval(svgSel, (svg) => { const b = svg.getBoundingClientRect(); return { x: b.x + b.width / 2, y: b.y + Math.min(b.height, 200) / 2 }; });
          await p.mouse.move(r.x, r.y);
          await p.mouse.down();
          await p.mouse.move(r.x - 60, r.y - 20, { steps: 6 });
          await p.mouse.up();
          const panned = await p.$eval(svgSel, (svg) => svg.getAttribute("viewBox").split(" ").map(Number));
          assert.ok(panned[0] > zoomed.box[0], `panned right: ${panned[0]} > ${zoomed.box[0]}`);
          await viewer.locator(".zoom-fit").click();
          assert.equal(await p.$eval(svgSel, (svg) => svg.dataset.zoom), "1.000", "fit shows the whole picture again");
          assert.equal(await p.$eval(svgSel, (svg) => svg.getAttribute("viewBox")), full.map((n) => n.toFixed(1)).join(" "));
          // Readable labels in this theme.
          const { bad } = await lowContrast(p, `${svgSel} text`);
          assert.deepEqual(bad, [], "graph text below 4.5:1");
          // No transition's label box over a state's box.
          const covered = await p.$eval(svgSel, (svg) => {
            const out = [];
            const boxes = (sel) => [...svg.querySelectorAll(sel)].map((el) => ({ el, r: el.getBoundingClientRect() }));
            const nodes = boxes("g.state > rect");
            for (const l of boxes("g.edge-label > rect")) {
              for (const n of nodes) {
                const [a, c] = [l.r, n.r];
                if (a.left < c.right - 0.5 && c.left < a.right - 0.5 && a.top < c.bottom - 0.5 && c.top < a.bottom - 0.5) {
                  out.push(`${l.el.parentNode.dataset.from} -> ${l.el.parentNode.dataset.to} covers ${n.el.parentNode.dataset.path}`);
                }
              }
            }
            return out;
          });
          assert.deepEqual(covered, []);
        }
        // The state the issue names is drawn and free.
        await p.goto(`${url}?view=definition&definition=fulfilment`);
        await p.waitForSelector('#def-graph g.state[data-path="fulfilment.packing.pick.done"]');
        await p.screenshot({ path: join(artifacts, `ui-graph-${size}-${theme}.png`) });
        assertCalm(p);
        await p.context().close();
      }));
    }
  }
  await Promise.all(pages);

  for (const [size, theme] of Object.keys(SIZES).flatMap((z) => THEMES.map((th) => [z, th]))) {
    await t.test(`${size}, ${theme}: the history as timeline, waterfall and JSON; filtered by kind; downloaded; copied`, async () => {
      const p = await page(b, { size, theme, permissions: ["clipboard-read", "clipboard-write"] });
      const id = ids.running;
      const path = `api/executions/${encodeURIComponent(id)}`;
      const trace = (await apiGet(url, `${path}/trace`)).body.items;
      const bundle = (await apiGet(url, `${path}/bundle`)).body;
      await p.goto(`${url}?id=${encodeURIComponent(id)}`);
      await p.waitForSelector("#history #timeline li");
      const { bad } = await lowContrast(p, ".seg button, .kind-chip, #history .step-head *, #history .chip-label");
      assert.deepEqual(bad, [], "the history's controls and steps are readable");
      // On a phone the detail is the page: the list is not shown beside it.
      if (size === "phone") assert.equal(await p.isVisible(".list-pane"), false, "the detail pane is a page of its own");
      assert.equal(await p.$$eval("#timeline > li:not([hidden])", (l) => l.length), trace.length);
      const kinds = [...new Set(trace.map((s) => s.event_kind ?? "(no event)"))];
      const kind = kinds[kinds.length - 1];
      const want = trace.filter((s) => (s.event_kind ?? "(no event)") === kind).map((s) => String(s.index));
      await p.click(`.kind-chip[data-kind="${kind}"]`);
      assert.deepEqual(await p.$$eval("#timeline > li:not([hidden])", (l) => l.map((x) => x.dataset.index)), want, "only that kind");
      assert.match(await p.textContent('details[data-key="timeline"] > summary .count'), new RegExp(`^${want.length} of ${trace.length} steps`));
      assert.ok((await p.evaluate(() => location.search)).includes(`kind=${encodeURIComponent(kind)}`), "the filter is in the URL");
      await p.screenshot({ path: join(artifacts, `ui-history-timeline-${size}-${theme}.png`) });

      await p.click('#history .seg button[data-mode="waterfall"]');
      await p.waitForSelector("#waterfall");
      const rows = await p.$$eval("#waterfall .wf-row.step", (rs) => rs.map((r) => {
        const bar = r.querySelector(".wf-bar").getBoundingClientRect();
        const track = r.querySelector(".wf-track").getBoundingClientRect();
        return { index: r.dataset.index, start: Number(r.dataset.start), left: bar.left - track.left, right: bar.right - track.left, track: track.width };
      }));
      assert.deepEqual(rows.map((r) => r.index), want, "the waterfall obeys the kind filter");
      for (let i = 1; i < rows.length; i++) {
        assert.ok(rows[i].start >= rows[i - 1].start, "steps in time order");
        assert.ok(rows[i].left >= rows[i - 1].left - 0.5, "a later step starts further right");
      }
      for (const r of rows) assert.ok(r.left >= -0.5 && r.right <= r.track + 3.5, "each bar inside its track");
      assert.equal(await p.$$eval("#waterfall .wf-row.timer", (l) => l.length), ids.timers, "each armed timer on the axis");
      await p.click('.kind-chip[data-kind=""]');
      assert.equal(await p.$$eval("#waterfall .wf-row.step", (l) => l.length), trace.filter((s) => s.timestamp).length, "all kinds again");
      await p.screenshot({ path: join(artifacts, `ui-history-waterfall-${size}-${theme}.png`) });

      await p.click('#history .seg button[data-mode="json"]');
      await p.waitForSelector("#bundle-json");
      assert.deepEqual(JSON.parse(await p.textContent("#bundle-json")), bundle, "the bundle as the API gives it");
      assert.equal(bundle.root_id, id);
      const [download] = await Promise.all([p.waitForEvent("download"), p.click("#bundle-download")]);
      const saved = join(tempDir(t), "bundle.json");
      await download.saveAs(saved);
      assert.match(download.suggestedFilename(), /^execstore-.*\.json$/);
      assert.deepEqual(JSON.parse(readFileSync(saved, "utf8")), bundle, "the download is the bundle");
      await p.screenshot({ path: join(artifacts, `ui-history-json-${size}-${theme}.png`) });
      // The mode is in the URL: a reload shows the same.
      assert.ok((await p.evaluate(() => location.search)).includes("history=json"));
      await p.reload();
      await p.waitForSelector("#bundle-json");

      // Copy buttons: the id, and a value of the context.
      await p.click("#detail-id + .copy");
      assert.equal(await p.evaluate(() => navigator.clipboard.readText()), id);
      const leaf = p.locator("#context .jl").filter({ has: p.locator(".v.string") }).first();
      await leaf.hover();
      const value = JSON.parse(await leaf.locator(".v").textContent());
      await leaf.locator(".copy").click();
      assert.equal(await p.evaluate(() => navigator.clipboard.readText()), value);
      assertCalm(p);
      await p.context().close();
    });
  }

  await t.test("the dark-mode toggle overrides the OS setting and is kept", async () => {
    // Each theme variable is written once in style.css (its light and dark values side by
    // side), not once per way of choosing dark.
    const css = readFileSync(join(repo, "crates/execstore-cli/web/style.css"), "utf8");
    const declared = [...css.matchAll(/(--[\w-]+)\s*:/g)].map((m) => m[1]);
    assert.ok(declared.includes("--panel"));
    assert.deepEqual([...new Set(declared.filter((v, i) => declared.indexOf(v) !== i))], [], "a variable written twice");
    /** Every theme variable of the page, resolved as a colour in the theme in effect. */
    const palette = (q) => q.evaluate((names) => {
      const probe = document.body.appendChild(document.createElement("span"));
      const out = {};
      for (const name of names) {
        probe.style.color = `var(${name})`;
        out[name] = getComputedStyle(probe).color;
      }
      probe.remove();
      return out;
    }, [...new Set(declared)].filter((n) => n !== "--mono"));
    const p = await page(b, { theme: "light" });
    await p.goto(url);
    await p.waitForSelector("#theme");
    const bg = () => p.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const light = await bg();
    const lightPalette = await palette(p);
    assert.equal(await p.getAttribute("#theme", "aria-pressed"), "false");
    await p.click("#theme");
    assert.equal(await p.getAttribute("html", "data-theme"), "dark");
    const dark = await bg();
    assert.notEqual(dark, light);
    const darkPalette = await palette(p);
    assert.notDeepEqual(darkPalette, lightPalette);
    await p.reload();
    await p.waitForSelector("#theme");
    assert.equal(await p.getAttribute("html", "data-theme"), "dark", "kept for the next visit");
    assert.equal(await bg(), dark);
    assert.equal(await p.getAttribute("#theme", "aria-pressed"), "true");
    await p.context().close();
    // An OS in dark mode: dark until the toggle picks light.
    const q = await page(b, { theme: "dark" });
    await q.goto(url);
    await q.waitForSelector("#theme");
    assert.equal(await q.evaluate(() => getComputedStyle(document.body).backgroundColor), dark);
    assert.deepEqual(await palette(q), darkPalette, "the OS's dark is the toggle's dark, every variable");
    await q.click("#theme");
    assert.equal(await q.getAttribute("html", "data-theme"), "light");
    assert.equal(await q.evaluate(() => getComputedStyle(document.body).backgroundColor), light);
    assert.deepEqual(await palette(q), lightPalette, "the toggle's light over an OS in dark, every variable");
    assertCalm(q);
    await q.context().close();
  });

  for (const size of Object.keys(SIZES)) {
    await t.test(`${size}: list rows are links reached with Tab, that open in a new tab`, async () => {
      const p = await page(b, { size });
      await p.goto(url);
      await p.waitForSelector(".executions-grid tbody tr");
      await p.focus("#q");
      let focused = null;
      for (let i = 0; i < 40 && !focused; i++) {
        await p.keyboard.press("Tab");
        focused = await p.evaluate(() => (document.activeElement.matches(".executions-grid a.row-link") ? document.activeElement.getAttribute("href") : null));
      }
      assert.ok(focused, "Tab reaches a row's link");
      const first = await p.$eval(".executions-grid tbody tr", (tr) => tr.dataset.id);
      assert.ok(focused.includes(`id=${encodeURIComponent(first)}`) || focused.includes(`id=${first}`), focused);
      // Enter on the focused link opens the detail in place.
      await p.keyboard.press("Enter");
      await p.waitForFunction((id) => document.querySelector("#detail-id")?.textContent === id, first);
      // A modified click opens it in a new tab, on the same address.
      await p.goto(url);
      await p.waitForSelector(".executions-grid a.row-link");
      // (A phone has no modifier keys: its "open in new tab" is the link's menu, which opens
      // the same href in a new page.)
      const [other] = size === "phone"
        ? [await p.context().newPage()]
        : await Promise.all([
          p.context().waitForEvent("page"),
          p.click(".executions-grid a.row-link", { modifiers: ["Control"] }),
        ]);
      if (size === "phone") await other.goto(await p.$eval(".executions-grid a.row-link", (a) => a.href));
      await other.waitForLoadState();
      assert.ok(other.url().includes(`id=${encodeURIComponent(first)}`) || other.url().includes(`id=${first}`));
      await other.waitForFunction((id) => document.querySelector("#detail-id")?.textContent === id, first);
      assertCalm(p);
      await p.context().close();
    });
  }

  await t.test("workspace URLs never carry last=undefined", async () => {
    const p = await page(b);
    await p.goto(`${url}?view=workspaces&tenant=acme&ws=prod&tab=runs`);
    await p.waitForSelector("#main h1");
    const seen = [];
    p.on("framenavigated", () => seen.push(p.url()));
    const record = async () => seen.push(await p.evaluate(() => location.search));
    const select = await p.$("select");
    if (select) {
      await select.selectOption({ index: 1 });
      await record();
    }
    for (const key of ["3", "4", "5", "2", "1"]) {
      await p.keyboard.press(key);
      await p.waitForTimeout(150);
      await record();
    }
    await p.keyboard.press("Escape");
    await record();
    assert.ok(seen.length >= 6);
    assert.deepEqual(seen.filter((s) => s.includes("undefined")), [], "no address says undefined");
    assertCalm(p);
    await p.context().close();
  });

  for (const theme of THEMES) {
    await t.test(`${theme}: the Live dot turns red when the server is gone`, async (tt) => {
      const own = await serve(tt, ["monitor", "--db", db]);
      const p = await page(b, { theme });
      await p.goto(own);
      await p.waitForSelector(".executions-grid tbody tr");
      await p.waitForFunction(() => document.querySelector("#fresh").textContent === "up to date");
      const green = await p.$eval("#pulse", (d) => getComputedStyle(d).backgroundColor);
      assert.equal(await p.$("body.offline"), null);
      // Stop the server: the next poll fails.
      await stopServer(own);
      await p.waitForSelector("body.offline", { timeout: 10_000 });
      const red = await p.$eval("#pulse", (d) => getComputedStyle(d).backgroundColor);
      const bad = await p.evaluate(() => {
        const probe = document.createElement("span");
        probe.style.color = "var(--bad)";
        document.body.append(probe);
        const c = getComputedStyle(probe).color;
        probe.remove();
        return c;
      });
      assert.notEqual(red, green);
      assert.equal(red, bad, "the dot takes the theme's red");
      assert.equal(await p.textContent("#fresh"), "server gone");
      await p.screenshot({ path: join(artifacts, `ui-offline-${theme}.png`) });
      await p.context().close();
    });
  }
});

test("a purged execution's open pane says so, purged here or by another process, without a 404", async (t) => {
  const dir = tempDir(t);
  const db = demo(dir, { executions: 120, seed: 5 });
  const url = await serve(t, ["monitor", "--db", db, "--token", "s3cret"]);
  const b = await browser(t);
  const { body } = await apiGet(url, "api/executions?status=DONE&roots_only=true&limit=50");
  const [byOther, byButton] = body.items.map((e) => e.id);
  assert.ok(byOther && byButton, "two finished roots");
  for (const size of Object.keys(SIZES)) {
    const p = await page(b, { size });
    const id = size === "desktop" ? byOther : byButton;
    await p.goto(`${url}?id=${encodeURIComponent(id)}#token=s3cret`);
    await p.waitForFunction((id) => document.querySelector("#detail-id")?.textContent === id, id);
    await p.waitForSelector("#detail-actions");
    if (size === "desktop") {
      // Another process purges it.
      run(["--db", db, "purge", id]);
    } else {
      await p.click('#detail-actions button:has-text("Purge")');
      // every write says why (docs/operators.md): Yes is enabled once a reason is written
      await p.fill("#detail-actions .confirm .reason-input", "test: purged from its pane");
      await p.click('#detail-actions .confirm [data-confirm="yes"]');
    }
    await p.waitForSelector("#gone", { timeout: 10_000 });
    assert.match(await p.textContent("#gone"), /This execution was purged/);
    assert.equal(await p.$("#detail-actions"), null, "no Purge button on what is gone");
    assert.equal(await p.$(".detail .pill"), null, "no status of what is gone");
    await p.evaluate(() => document.activeElement && document.activeElement.blur());
    await p.keyboard.press("r"); // a refresh reads it again: still said, still no 404
    await p.waitForTimeout(2500);
    assert.match(await p.textContent("#gone"), /This execution was purged/);
    await p.screenshot({ path: join(artifacts, `ui-purged-${size}.png`) });
    assertCalm(p);
    // A link to it later: "no such execution", still no 404.
    await p.goto(`${url}?id=${encodeURIComponent(id)}`);
    await p.waitForSelector("#gone");
    assert.match(await p.textContent("#gone"), /No such execution/);
    assertCalm(p);
    await p.context().close();
  }
});
