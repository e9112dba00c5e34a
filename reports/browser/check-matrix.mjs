// Checks the conformance matrix page in headless Chromium, as a user sees
// it. Run by reports/tests/matrix_browser.rs, which writes the page, the
// files it links to and a config naming what to expect:
//
//   node reports/browser/check-matrix.mjs CONFIG.json
//
// Every check prints `ok` or `FAIL` with what it checked; the exit code is
// 1 if any failed, 2 if the page could not be checked at all, 3 on the
// script's own time limit. Screenshots go to the config's `out` folder.

import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const config = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const expect = config.expect;

// The caller kills the process group too; this limit makes the script's
// own failure readable.
const watchdog = setTimeout(() => {
  console.error(`check-matrix: gave up after ${config.timeout_ms} ms`);
  process.exit(3);
}, config.timeout_ms);

// playwright-core lives in the project-local install, not beside the script.
const require = createRequire(path.join(config.modules, "package.json"));
const { chromium } = require("playwright-core");

const failures = [];
function check(ok, what, detail) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${!ok && detail !== undefined ? `: ${detail}` : ""}`);
  if (!ok) failures.push(what);
}
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

let context;
try {
  context = await chromium.launchPersistentContext(config.profile, {
    executablePath: config.chromium,
    headless: true,
    // Without the background-networking flags Chromium waits on the
    // network, which this machine does not have.
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    viewport: { width: 1400, height: 900 },
    timeout: 30_000,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(10_000);
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  const url = pathToFileURL(config.page).href;
  await page.goto(url);
  const shot = (name, options = {}) =>
    page.screenshot({ path: path.join(config.out, name), ...options });

  // What the page shows now.
  // Resolves once the page has handled the next hash change. A link that
  // only changes the hash is followed in the page's hashchange listener,
  // a task after the click returns; a listener added after the page's
  // runs after it (reading right after the click raced it on a busy
  // machine). Call it before the click.
  const hashHandled = () => page.evaluate(() => new Promise((resolve, reject) => {
    window.addEventListener("hashchange", () => resolve(), { once: true });
    setTimeout(() => reject(new Error("no hashchange within 10 s of the click")), 10000);
  }));
  const visibleRows = () =>
    page.$$eval("#matrix tbody tr.row", (trs) =>
      trs.filter((tr) => tr.checkVisibility()).map((tr) => tr.dataset.name));
  const visibleGroups = () =>
    page.$$eval("#matrix tbody tr.grp", (trs) =>
      trs.filter((tr) => tr.checkVisibility()).map((tr) => tr.dataset.group));
  const headers = () =>
    page.$$eval("#matrix thead th.cl", (ths) => {
      const width = document.documentElement.clientWidth;
      return ths.map((th) => {
        const r = th.getBoundingClientRect();
        const name = th.firstChild ? th.firstChild.textContent : "";
        return { name, visible: th.checkVisibility(), inside: r.left >= 0 && r.right <= width };
      });
    });
  const fits = () =>
    page.evaluate(() => {
      const doc = document.documentElement;
      const table = document.getElementById("matrix").getBoundingClientRect();
      // Cells whose content runs past their edge (a cut-off column would).
      const overflowing = [...document.querySelectorAll("#matrix td, #matrix th")]
        .filter((c) => c.checkVisibility() && c.scrollWidth > c.clientWidth + 1)
        .map((c) => c.textContent.slice(0, 40));
      return {
        tableRight: table.right,
        viewport: doc.clientWidth,
        pageScrolls: doc.scrollWidth > doc.clientWidth,
        overflowing,
      };
    });
  const allRows = await visibleRows();

  // 1. Five clients fit a 1400 px window.
  const f = await fits();
  check(f.tableRight <= f.viewport, "the table's right edge is inside the viewport",
    `${f.tableRight} > ${f.viewport}`);
  check(!f.pageScrolls, "the page does not scroll sideways");
  check(f.overflowing.length === 0, "no cell's content runs past its edge", JSON.stringify(f.overflowing));
  const h = await headers();
  check(same(h.map((x) => x.name), expect.clients), "a header per client, in order", JSON.stringify(h));
  check(h.every((x) => x.visible && x.inside), "every client header is visible and inside the window",
    JSON.stringify(h));
  check(allRows.length === expect.rows, `all ${expect.rows} rows show at first`, allRows.length);
  check(pageErrors.length === 0, "the script ran without errors", pageErrors.join("; "));
  await shot("matrix-top.png");
  await shot("matrix-full.png", { fullPage: true });

  // 2. Hiding "pass" hides exactly the rows where every cell passed; the
  // URL keeps the view, and loading that URL gives it back.
  await page.uncheck("#filters input[name=s][value=pass]");
  const withoutPass = await visibleRows();
  const hidden = allRows.filter((n) => !withoutPass.includes(n));
  check(same([...hidden].sort(), [...expect.all_pass].sort()),
    `unchecking pass hides exactly the ${expect.all_pass.length} all-pass rows`, JSON.stringify(hidden));
  check(withoutPass.length === expect.rows - expect.all_pass.length,
    "the others stay", withoutPass.length);
  const runsShown = (status) =>
    page.$$eval(`details.run[data-s="${status}"]`, (ds) => ds.filter((d) => d.checkVisibility()).length);
  check((await runsShown("pass")) === 0, "and the passing runs below");
  check((await runsShown("fail")) === 1, "but not the failing one");
  const hash = await page.evaluate(() => location.hash);
  check(hash === "#hide=pass", "the view is in the URL hash", hash);
  const shownText = await page.textContent("#shown");
  check(shownText.includes(`${withoutPass.length} of ${expect.rows}`), "the page says how many rows show", shownText);
  await page.goto("about:blank");
  await page.goto(`${url}#hide=pass`);
  const reloaded = await visibleRows();
  check(same(reloaded, withoutPass), "a link with the hash reproduces the view", reloaded.length);
  check(!(await page.isChecked("#filters input[name=s][value=pass]")), "and its checkbox");
  // A dimmed cell's badge still leads to its run.
  const handled = hashHandled();
  await page.click(`#matrix a.badge[href="#${expect.pass_run}"]`);
  await handled;
  const opened = await page.$eval(`details#${expect.pass_run}`, (d) => d.open && d.checkVisibility());
  check(opened, "a hidden pass run opens when its badge is clicked");
  await page.click("#filters button[name=reset]");
  check((await visibleRows()).length === expect.rows, "show all brings every row back");

  // 3. Hiding a client hides its column, and only it.
  const gone = expect.hide_client;
  await page.uncheck(`#filters input[name=c][data-name="${gone}"]`);
  const h2 = await headers();
  check(h2.filter((x) => !x.visible).map((x) => x.name).join() === gone,
    `unchecking ${gone} hides its header only`, JSON.stringify(h2));
  const column = expect.clients.indexOf(gone);
  const cellsShown = await page.$$eval(`#matrix td.c${column}`, (tds) =>
    tds.filter((td) => td.checkVisibility()).length);
  check(cellsShown === 0, `no ${gone} cell shows`, cellsShown);
  const otherCells = await page.$$eval("#matrix td.cell", (tds) =>
    tds.filter((td) => td.checkVisibility()).length);
  check(otherCells === expect.rows * (expect.clients.length - 1), "the other columns' cells all show", otherCells);
  const runsOfGone = await page.$$eval(`details.run[data-c="${column}"]`, (ds) =>
    ds.filter((d) => d.checkVisibility()).length);
  check(runsOfGone === 0, `${gone}'s runs are hidden too`, runsOfGone);
  const f2 = await fits();
  check(f2.tableRight <= f2.viewport && !f2.pageScrolls, "four columns still fit");
  await page.check(`#filters input[name=c][data-name="${gone}"]`);

  // 4. Choosing a spec shows only its group.
  const spec = expect.spec_choice;
  await page.selectOption("#filters select[name=spec]", spec);
  const specRows = await visibleRows();
  check(same(specRows, expect.groups[spec].rows), `choosing ${spec} shows exactly its group's rows`,
    JSON.stringify(specRows));
  check(same(await visibleGroups(), [spec]), `and only the ${spec} header`);
  // ... and, with pass hidden too, what is left to look at in that group.
  await page.uncheck("#filters input[name=s][value=pass]");
  await shot("matrix-filtered.png", { fullPage: true });
  await page.click("#filters button[name=reset]");

  // 5. The name filter.
  await page.fill("#filters input[name=q]", expect.search.q);
  const found = await visibleRows();
  check(same(found, expect.search.rows), `searching "${expect.search.q}" shows the matching rows`,
    JSON.stringify(found));
  await page.click("#filters button[name=reset]");

  // 6. Group headers link their gRFC (or Envoy's delta docs).
  const links = await page.$$eval("#matrix tr.grp", (trs) =>
    Object.fromEntries(trs.map((tr) => {
      const a = tr.querySelector("a.spec");
      return [tr.dataset.group, a ? a.href : null];
    })));
  for (const [group, want] of Object.entries(expect.groups)) {
    check(links[group] === want.url, `the ${group} header links ${want.url}`, links[group]);
  }
  check(same(Object.keys(links), Object.keys(expect.groups)), "the groups, in order",
    JSON.stringify(Object.keys(links)));

  // 7. A row's YAML link is the scenario file; a cell's txt link its timeline.
  // One row's source was absolute, the other's relative to the harness's
  // working directory: both are copied into the report directory and linked
  // there (an uploaded report folder keeps them).
  for (const want of expect.yaml) {
    const link = await page.$eval(`#matrix tr.row[data-name="${want.scenario}"] a.yaml`,
      (a) => ({ href: a.getAttribute("href"), url: a.href }));
    check(link.href === want.href, `${want.scenario}'s YAML link is inside the report`, link.href);
    const file = fileURLToPath(link.url);
    check(file === want.file, "and resolves to the scenario file", file);
    check(fs.existsSync(file) && fs.readFileSync(file, "utf8") === want.content,
      "which is that scenario's");
  }
  const txt = await page.$$eval("#matrix a.txt", (as) => as.map((a) => a.href));
  const missing = txt.filter((href) => !fs.existsSync(fileURLToPath(href)));
  check(txt.length === expect.timeline_links && missing.length === 0,
    `all ${expect.timeline_links} txt links resolve to timeline files`, JSON.stringify(missing));

  // 8. A repeated reason is listed once, with its count.
  const notes = await page.$$eval("ol.notes li", (lis) =>
    lis.map((li) => ({
      id: li.id,
      text: li.querySelector(".text").textContent,
      count: li.dataset.count,
      shown: li.querySelector(".count").textContent,
      visible: li.checkVisibility(),
    })));
  const note = notes.filter((n) => n.text === expect.note.text);
  check(note.length === 1, "the repeated reason is listed once", JSON.stringify(notes));
  if (note.length === 1) {
    check(note[0].count === String(expect.note.count) && note[0].shown === `× ${expect.note.count}`,
      `with its count, ${expect.note.count}`, JSON.stringify(note[0]));
    check(note[0].visible, "and it shows");
    const refs = await page.$$eval(`#matrix sup.fn a[href="#${note[0].id}"]`, (as) =>
      as.map((a) => a.title));
    check(refs.length === expect.note.count && refs.every((t) => t === expect.note.text),
      "the cells point at it, with the whole reason as their title", refs.length);
  }
  const inlineRepeats = await page.$$eval("#matrix .why", (ws, text) =>
    ws.filter((w) => w.textContent === text).length, expect.note.text);
  check(inlineRepeats === 0, "the repeated reason is not written out in the table", inlineRepeats);

  // 8b. n/a grouped by missing capability; both lists follow the filters.
  const item = async (text) => (await page.$$eval("ol.notes li", (lis, text) =>
    lis.filter((li) => li.querySelector(".text").textContent === text).map((li) => ({
      shown: li.querySelector(".count").textContent,
      alone: li.querySelector(".alone")?.textContent ?? null,
      by: li.querySelector(".by").textContent,
      visible: li.checkVisibility(),
    })), text))[0] ?? null;
  const lackText = `lacks ${expect.lack.what}`;
  let lack = await item(lackText);
  check(lack !== null && lack.visible && lack.shown === `× ${expect.lack.count}` &&
    lack.alone === `${expect.lack.alone} alone`,
    "n/a are listed by missing capability, with the cells it alone would open", JSON.stringify(lack));
  await page.uncheck(`#filters input[name=c][data-name="${expect.hide_client}"]`);
  const narrowed = await item(expect.note.text);
  check(narrowed !== null && narrowed.shown ===
    `× ${expect.note.count_shown} of ${expect.note.count}` && !narrowed.by.includes(expect.hide_client),
    `with ${expect.hide_client} hidden, the shared reason counts only the cells shown`,
    JSON.stringify(narrowed));
  lack = await item(lackText);
  check(lack !== null && lack.shown === `× ${expect.lack.count_shown} of ${expect.lack.count}`,
    "and so does the missing capability", JSON.stringify(lack));
  await page.click("#filters button[name=reset]");
  await page.uncheck("#filters input[name=s][value=na]");
  lack = await item(lackText);
  const heading = await page.$eval("#lacks", (h) => h.checkVisibility());
  check(lack !== null && !lack.visible && !heading,
    "hiding n/a hides the list of missing capabilities, heading and all", JSON.stringify({ lack, heading }));
  await page.click("#filters button[name=reset]");
  lack = await item(lackText);
  check(lack !== null && lack.visible && lack.shown === `× ${expect.lack.count}`,
    "and resetting the filters brings it back whole", JSON.stringify(lack));

  // 10. The table at a glance: each count links the view of exactly its
  // cells (that verdict, that client, that spec group).
  await page.click("#filters button[name=reset]");
  const counts = await page.$$eval("#glance a[data-status]", (as) => as.map((a) => ({
    status: a.dataset.status, client: a.dataset.client, spec: a.dataset.spec,
    n: Number(a.textContent) })));
  check(counts.length > 0, "the table at a glance has counts", counts.length);
  const target = counts.find((x) => x.status === "fail") ?? counts[0];
  if (target) {
    const applied = hashHandled();
    await page.click(`#glance a[data-status="${target.status}"][data-client="${target.client}"]` +
      `[data-spec="${target.spec}"]`);
    await applied;
    const what = `${target.n} ${target.status} of ${target.client} in ${target.spec}`;
    check((await visibleRows()).length === target.n, `the count ${what} shows exactly that many rows`,
      (await visibleRows()).length);
    const column = expect.clients.indexOf(target.client);
    const shown = await page.$$eval(`#matrix tr.row td.c${column}`, (tds) =>
      tds.filter((td) => td.checkVisibility()).map((td) => td.dataset.s));
    check(shown.length === target.n && shown.every((s) => s === target.status),
      "each with that verdict in that client's column", JSON.stringify(shown));
    check(same(await visibleGroups(), [target.spec]), "in that spec's group only");
    const others = await page.$$eval("#matrix thead th.cl", (ths) =>
      ths.filter((th) => th.checkVisibility()).length);
    check(others === 1, "with the other clients' columns hidden", others);
    await page.click("#filters button[name=reset]");
  }

  // 9. A failing run's picture: the window band and the marked event.
  const run = `details#${expect.failing_mark.id}`;
  await page.$eval(run, (d) => { d.open = true; });
  const svg = await page.$eval(`${run} svg`, (svg) => {
    const box = (sel) => {
      const el = svg.querySelector(sel);
      if (!el) return null;
      const r = el.getBoundingClientRect();
      return { top: r.top, bottom: r.bottom, left: r.left, right: r.right, height: r.height,
        fill: getComputedStyle(el).fill, stroke: getComputedStyle(el).stroke };
    };
    return {
      band: box(".mk-failing .mk-band"),
      row: box(".mk-failing .mk-row"),
      ring: box(".mk-failing .mk-ring"),
      note: svg.querySelector(".mk-note text")?.textContent ?? null,
      edges: [...svg.querySelectorAll(".mk-edge text")].map((t) => t.textContent),
    };
  });
  check(svg.band !== null && svg.band.height > 10, "the failing run's SVG has the window band",
    JSON.stringify(svg.band));
  check(svg.ring !== null && svg.row !== null, "and the marked event is ringed and outlined");
  if (svg.band && svg.ring) {
    const middle = (svg.ring.top + svg.ring.bottom) / 2;
    check(svg.band.top < middle && middle < svg.band.bottom, "the marked event is inside the window");
    check(svg.ring.stroke === "rgb(220, 38, 38)", "drawn in red", svg.ring.stroke);
  }
  check(svg.note === `expected: ${expect.failing_mark.expected}`, "the note says what was expected",
    svg.note);
  check(same(svg.edges, ["window opens", "window closes"]), "the window's bounds are labelled");
  await page.locator(run).screenshot({ path: path.join(config.out, "matrix-failing-run.png") });

  // 10. A run that is not failing frames its picture from a file of its
  //     own, loaded once the run is opened: the page stays light.
  const passRun = `details#${expect.pass_run}`;
  const frame = await page.$eval(passRun, (d) => {
    const f = d.querySelector("iframe");
    return { open: d.open, inline: d.querySelectorAll("svg").length,
      src: f?.getAttribute("src") ?? null, loading: f?.loading ?? null };
  });
  check(frame.inline === 0 && frame.loading === "lazy" && /\.svg$/.test(frame.src ?? ""),
    "a passing run's picture is a lazy frame on its own file", JSON.stringify(frame));
  await page.$eval(passRun, (d) => { d.open = true; });
  const picture = page.frameLocator(`${passRun} iframe`).locator("svg.xtl");
  await picture.waitFor({ timeout: 10000 });
  const lanes = await picture.locator(".lane").count();
  check(lanes > 0, "and shows it, with its lanes, once the run is opened", lanes);

  // 11. A run's anchor shows the run, even one the filters hid: a link
  //     from a cell, a log or a chat message lands on it, open, on screen.
  await page.click("#filters button[name=reset]");
  await page.uncheck("#filters input[name=s][value=pass]");
  const hiddenBefore = await page.$eval(passRun, (d) => !d.checkVisibility());
  await page.$eval(passRun, (d) => { d.open = false; });
  // Read once the page has handled the hash change (its listener runs
  // before ours), not after a 5 s wait whose end was taken as "not
  // opened": a busy machine made that a race.
  const landedHandled = hashHandled();
  await page.evaluate((id) => { location.hash = `#${id}`; }, expect.pass_run);
  await landedHandled;
  const landed = await page.$eval(passRun, (d) => {
    const r = d.getBoundingClientRect();
    return { open: d.open, visible: d.checkVisibility(), onScreen: r.top >= 0 && r.top < innerHeight };
  });
  check(hiddenBefore && landed.open && landed.visible && landed.onScreen,
    "a run's anchor opens and shows it, though the filters had hidden it",
    JSON.stringify({ hiddenBefore, ...landed }));
  await page.click("#filters button[name=reset]");

  check(pageErrors.length === 0, "no script errors along the way", pageErrors.join("; "));
} catch (e) {
  console.error(`check-matrix: ${e && e.stack ? e.stack : e}`);
  failures.push("the checks could not finish");
  process.exitCode = 2;
} finally {
  // Closing waits for Chromium to exit: nothing is left behind.
  if (context) await context.close().catch((e) => console.error(`closing: ${e}`));
  clearTimeout(watchdog);
}
if (failures.length > 0) {
  console.log(`${failures.length} check(s) failed`);
  if (!process.exitCode) process.exitCode = 1;
} else {
  console.log("all checks passed");
}
