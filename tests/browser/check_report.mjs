// SPDX-License-Identifier: Apache-2.0
//
// node tests/browser/check_report.mjs PAGE.html EXPECT.json SCREENSHOT.png
//
// Opens a page of `ignis report --format html` / `ignis diff --format html` from file:// in
// Debian's chromium (headless, driven by playwright-core; no browser download) with every
// request that is not file:// aborted, and checks what EXPECT.json asks for:
//
//   {
//     "kind": "report" | "diff",
//     "frames": [name, ...],        drawn as frames of the flame graph (SVG <g name=...>)
//     "hover": {"name": name,       hovering that frame shows a tooltip holding each of "text"
//               "text": [s, ...]},  (e.g. its file:line, "self", "total")
//     "zoom": name,                 clicking that frame zooms to it: its rect becomes full width
//     "search": term,               the search highlights the frames whose name contains it
//                                   (case-insensitive), and no other
//     "range": {                    report: brushing the timeline from start_ms to end_ms
//       "start_ms": N, "end_ms": N, (mouse drag) redraws the graph for that range: the frames
//       "absent": [name, ...],      "absent" disappear, "present" stay, the root's value
//       "present": [name, ...]      changes; "Whole profile" brings them back
//     },
//     "more": [name, ...],          diff: frames coloured red (more time in NEW)
//     "less": [name, ...],          diff: frames coloured blue (less)
//     "table_min_rows": N,          the top table has at least N rows and sorts on header clicks
//     "text": [s, ...]              the page's visible text holds each (e.g. "Off-CPU time")
//   }
//
// Every key but "kind" is optional. It always checks: no request left file://, no script
// error, the page drew (window.ignisReport.ready). It writes a full-page screenshot to
// SCREENSHOT.png, prints one JSON document {"ok", "checks": [{name, ok, detail}], "requests",
// "errors"} and exits 0 when every check passed, 1 when one failed, 2 when it could not run.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
	      '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const HIGHLIGHT = 'rgb(230, 0, 230)';

const [pagePath, expectPath, shotPath] = process.argv.slice(2);
if (!pagePath || !expectPath || !shotPath) {
	console.error('usage: node check_report.mjs PAGE.html EXPECT.json SCREENSHOT.png');
	process.exit(2);
}
const expect = JSON.parse(fs.readFileSync(expectPath, 'utf8'));
const checks = [];
const requests = [];
const errors = [];

function record(name, ok, detail) {
	detail = detail === undefined || detail === null ? '' : String(detail);
	if (detail.length > 400)
		detail = detail.slice(0, 400) + '...';
	checks.push({ name, ok: !!ok, detail });
	return ok;
}

// The frames drawn: [{name, width, fill, x}] of every <g> of the flame graph, by attribute
// (a name is hostile data: never put in a selector).
async function drawnFrames(page) {
	return page.evaluate(() => Array.from(document.querySelectorAll('#flamegraph svg g'))
		.map((g) => {
			const rect = g.querySelector('rect');
			return { name: g.getAttribute('name'),
				 width: rect ? parseFloat(rect.getAttribute('width')) || 0 : 0,
				 fill: rect ? getComputedStyle(rect).fill : '',
				 hidden: g.getAttribute('class') === 'frame fade' };
		}));
}

// Frames with that name and a visible width.
async function framesNamed(page, name) {
	return (await drawnFrames(page)).filter((f) => f.name === name && f.width > 0.5);
}

// d3 transitions end within a second; poll until fn is true or the time is up.
async function until(fn, ms = 4000) {
	const deadline = Date.now() + ms;
	for (;;) {
		const v = await fn();
		if (v || Date.now() > deadline)
			return v;
		await new Promise((r) => setTimeout(r, 100));
	}
}

function rgb(fill) {
	const m = /rgb\((\d+), ?(\d+), ?(\d+)\)/.exec(fill || '');
	return m ? [+m[1], +m[2], +m[3]] : null;
}

async function run(page) {
	await page.goto(pathToFileURL(path.resolve(pagePath)).href);
	const ready = await until(() => page.evaluate(() => !!(window.ignisReport &&
		(window.ignisReport.ready || window.ignisReport.error))), 10000);
	const state = await page.evaluate(() => window.ignisReport
		? { ready: !!window.ignisReport.ready, error: window.ignisReport.error || '' }
		: { ready: false, error: 'no window.ignisReport' });
	if (!record('page draws', ready && state.ready, state.error))
		return;
	await page.waitForTimeout(1200); // the flame graph's entering transition
	const svgWidth = await page.evaluate(() =>
		parseFloat(document.querySelector('#flamegraph svg').getAttribute('width')));
	record('kind', await page.evaluate(() => window.ignisReport.data.kind) === expect.kind,
	       expect.kind);

	const text = await page.evaluate(() => document.body.innerText);
	for (const t of expect.text || [])
		record(`text: ${t}`, text.includes(t));

	// Frames drawn, after the entering transition.
	for (const name of expect.frames || []) {
		const ok = await until(async () => (await framesNamed(page, name)).length > 0);
		record(`frame drawn: ${name}`, ok, ok ? '' : JSON.stringify(
			(await drawnFrames(page)).map((f) => f.name)));
	}

	// Diff colours, of each name's widest frame: its main path (a real run also has the
	// name in a few small stacks, e.g. cut short by [truncated], whose change is noise).
	for (const [key, want] of [['more', 'red'], ['less', 'blue']]) {
		for (const name of expect[key] || []) {
			const f = (await framesNamed(page, name)).sort((a, b) => b.width - a.width)[0];
			const c = f && rgb(f.fill);
			const ok = c && (want === 'red' ? c[0] > c[2] + 40 : c[2] > c[0] + 40);
			record(`diff: ${name} coloured ${want}`, ok, f ? f.fill : 'not drawn');
		}
	}

	// Hover: the tooltip says what the frame is.
	if (expect.hover) {
		const index = await page.evaluate((name) => Array.from(
			document.querySelectorAll('#flamegraph svg g')).findIndex(
			(g) => g.getAttribute('name') === name), expect.hover.name);
		if (record(`hover: ${expect.hover.name} drawn`, index >= 0)) {
			await page.locator('#flamegraph svg g').nth(index).locator('rect')
				.hover({ force: true });
			const tip = await until(() => page.evaluate(() => {
				const t = document.querySelector('.tip');
				return t && !t.hidden ? t.textContent : '';
			}));
			const missing = (expect.hover.text || []).filter((x) => !(tip || '').includes(x));
			record(`hover: the tooltip of ${expect.hover.name}`, tip && !missing.length,
			       `missing ${JSON.stringify(missing)} in ${JSON.stringify(tip)}`);
			await page.mouse.move(0, 0);
		}
	}

	// Zoom: click the frame; its rect grows to the graph's width. Then reset.
	if (expect.zoom) {
		const index = await page.evaluate((name) => Array.from(
			document.querySelectorAll('#flamegraph svg g')).findIndex(
			(g) => g.getAttribute('name') === name), expect.zoom);
		if (record(`zoom: ${expect.zoom} drawn`, index >= 0)) {
			const before = (await framesNamed(page, expect.zoom))[0].width;
			await page.locator('#flamegraph svg g').nth(index).locator('rect')
				.click({ force: true });
			const ok = await until(async () => {
				const f = (await framesNamed(page, expect.zoom))[0];
				return f && Math.abs(f.width - svgWidth) < 1;
			});
			const after = ((await framesNamed(page, expect.zoom))[0] || {}).width;
			record(`zoom: ${expect.zoom} becomes full width`, ok && before < svgWidth - 1,
			       `width ${before} -> ${after} of ${svgWidth}`);
			await page.click('#reset-zoom');
			const back = await until(async () => {
				const f = (await framesNamed(page, expect.zoom))[0];
				return f && Math.abs(f.width - before) < 1;
			});
			record('zoom: reset restores the width', back);
		}
	}

	// Search highlights exactly the frames whose name contains the term.
	if (expect.search) {
		await page.fill('#search', expect.search);
		const term = expect.search.toLowerCase();
		const ok = await until(async () => {
			const fr = (await drawnFrames(page)).filter((f) => f.width > 0.5 && f.name);
			const hits = fr.filter((f) => f.name.toLowerCase().includes(term));
			return hits.length > 0 &&
			       hits.every((f) => f.fill === HIGHLIGHT) &&
			       fr.filter((f) => !f.name.toLowerCase().includes(term))
				       .every((f) => f.fill !== HIGHLIGHT);
		});
		record(`search: "${expect.search}" highlights its frames only`, ok,
		       await page.textContent('#details'));
		await page.fill('#search', '');
		const cleared = await until(async () => (await drawnFrames(page))
			.every((f) => f.fill !== HIGHLIGHT));
		record('search: clearing it removes the highlight', cleared);
	}

	// Range selection by dragging on the timeline.
	if (expect.range) {
		const r = expect.range;
		const rootBefore = await page.evaluate(() => window.ignisReport.tree().value);
		const box = await page.locator('#timeline svg').boundingBox();
		const xs = await page.evaluate(([a, b]) => [window.ignisReport.timelineX(a),
			window.ignisReport.timelineX(b)], [r.start_ms, r.end_ms]);
		const y = box.y + box.height / 2 - 10;
		await page.mouse.move(box.x + xs[0], y);
		await page.mouse.down();
		await page.mouse.move(box.x + (xs[0] + xs[1]) / 2, y, { steps: 4 });
		await page.mouse.move(box.x + xs[1], y, { steps: 4 });
		await page.mouse.up();
		const changed = await until(() => page.evaluate((v) =>
			window.ignisReport.tree().value !== v, rootBefore));
		const rootAfter = await page.evaluate(() => window.ignisReport.tree().value);
		record('range: brushing the timeline changes the values', changed,
		       `root ${rootBefore} -> ${rootAfter}`);
		for (const name of r.absent || []) {
			const gone = await until(async () => (await framesNamed(page, name)).length === 0);
			record(`range: ${name} disappears`, gone);
		}
		for (const name of r.present || []) {
			const kept = await until(async () => (await framesNamed(page, name)).length > 0);
			record(`range: ${name} stays`, kept);
		}
		const tableHas = async (name) => page.evaluate((n) => Array.from(
			document.querySelectorAll('#top-body td.name')).some((td) => td.textContent === n),
		name);
		for (const name of r.absent || [])
			record(`range: ${name} leaves the table`, !(await tableHas(name)));
		await page.click('#reset-range');
		const back = await until(() => page.evaluate((v) =>
			window.ignisReport.tree().value === v, rootBefore));
		record('range: "Whole profile" restores the values', back);
		for (const name of r.absent || []) {
			const again = await until(async () => (await framesNamed(page, name)).length > 0);
			record(`range: ${name} is back`, again);
		}
	}

	// The table: rows, and sorting on header clicks.
	const names = () => page.evaluate(() => Array.from(
		document.querySelectorAll('#top-body td.name')).map((td) => td.textContent));
	const rowCount = (await names()).length;
	record('table: rows', rowCount >= (expect.table_min_rows || 1), `${rowCount} rows`);
	const th = (key) => page.locator(`#top-head th[data-key="${key}"]`);
	// The order the page should show (its first rows), from all of its rows.
	const expected = (key, desc) => page.evaluate(([k, d]) => window.ignisReport.rows().slice()
		.sort((a, b) => {
			const x = a[k], y = b[k];
			const c = typeof x === 'number' ? x - y : String(x).localeCompare(String(y));
			if (c !== 0)
				return d ? -c : c;
			return a.name.localeCompare(b.name) || a.binary.localeCompare(b.binary);
		}).map((r) => r.name), [key, desc]);
	const sortedAs = async (key, desc) => {
		const shown = await names();
		const want = (await expected(key, desc)).slice(0, shown.length);
		const i = shown.findIndex((n, j) => n !== want[j]);
		return [shown.length > 0 && i < 0,
			i < 0 ? '' : `row ${i}: ${shown[i]}, expected ${want[i]}`];
	};
	await th('name').click();
	record('table: Function header sorts ascending', ...await sortedAs('name', false));
	await th('name').click();
	record('table: a second click sorts descending', ...await sortedAs('name', true));
	const numKey = expect.kind === 'diff' ? 'totalDelta' : 'total';
	await th(numKey).click();
	record(`table: ${numKey} header sorts by it, largest first`, ...await sortedAs(numKey, true));
	const ariaOk = await th(numKey).getAttribute('aria-sort');
	record('table: the sorted header says so', ariaOk === 'descending', ariaOk);
	// Back to the default order for the screenshot.
	await th(expect.kind === 'diff' ? 'selfDelta' : 'self').click();
}

async function main() {
	const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'ignis-chromium-'));
	let context = null;
	try {
		context = await chromium.launchPersistentContext(profile, {
			executablePath: CHROMIUM,
			headless: true,
			args: ARGS,
			viewport: { width: 1280, height: 900 },
			offline: true,
			serviceWorkers: 'block',
		});
		await context.route('**/*', (route) => {
			const url = route.request().url();
			if (url.startsWith('file:'))
				return route.continue();
			requests.push(url);
			return route.abort();
		});
		context.on('request', (req) => {
			const url = req.url();
			if (!url.startsWith('file:') && !url.startsWith('data:') && !requests.includes(url))
				requests.push(url);
		});
		const page = context.pages()[0] || await context.newPage();
		page.on('pageerror', (e) => errors.push(String(e && e.stack || e)));
		page.on('console', (m) => {
			if (m.type() === 'error')
				errors.push(m.text());
		});
		await run(page);
		await page.mouse.move(0, 0);
		await page.waitForTimeout(800);
		fs.mkdirSync(path.dirname(path.resolve(shotPath)), { recursive: true });
		await page.screenshot({ path: shotPath, fullPage: true });
		// Names are data: an <img onerror=...> among them must stay text.
		const injected = await page.evaluate(() => !!window.__ignis_pwned ||
			document.querySelectorAll('main img, main script, .tip img').length > 0);
		record('names stay text (no markup from the data)', !injected);
		record('no request left file://', requests.length === 0, requests.join(' '));
		record('no script error', errors.length === 0, errors.join('\n'));
	} finally {
		if (context)
			await context.close();
		fs.rmSync(profile, { recursive: true, force: true });
	}
	const ok = checks.length > 0 && checks.every((c) => c.ok);
	console.log(JSON.stringify({ ok, checks, requests, errors }, null, 1));
	if (!ok) {
		for (const c of checks.filter((x) => !x.ok))
			console.error(`FAILED: ${c.name}${c.detail ? ': ' + c.detail : ''}`);
	}
	process.exit(ok ? 0 : 1);
}

main().catch((e) => {
	console.log(JSON.stringify({ ok: false, checks, requests, errors: errors.concat(String(e)) }));
	console.error(`check_report: ${e && e.stack || e}`);
	process.exit(2);
});
