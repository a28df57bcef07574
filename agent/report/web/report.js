// SPDX-License-Identifier: Apache-2.0
//
// The page of `ignis report` and `ignis diff` (agent/report/html.h describes the data
// document). Everything is drawn from #ignis-data: the header, the timeline (report), the
// flame graph (d3-flame-graph 5.0.0, the current release: its UMD build takes d3 from the
// global `d3`, which d3.min.js defines) and the top table, or in a diff the differential
// flame graph and the table of changes.
//
// Every name comes from profiled processes and may be hostile: data reaches the page through
// textContent and SVG attributes only, never as markup.
//
// For tests: window.ignisReport = { data, selectRange(startMs, endMs), tree(), rows(),
// timelineX(ms), ready }.
(function () {
	'use strict';

	const NS_PER_MS = 1e6;
	const BASE_NAME = 'all';

	const data = JSON.parse(document.getElementById('ignis-data').textContent);
	const frames = data.frames || [];
	const stacks = data.stacks || [];
	const buckets = data.buckets || [];
	const isDiff = data.kind === 'diff';

	let currentTree = null;
	let currentRows = [];
	let chart = null;
	let sortState = null;
	let selection = null; // [first bucket, last bucket] or null for all

	// ---- Values and their display ---------------------------------------------------------

	// Nanoseconds a value stands for, or null when the unit is samples of unknown period.
	function valueNs(v) {
		if (data.unit === 'nanoseconds')
			return v;
		return data.period_ns > 0 ? v * data.period_ns : null;
	}

	function fmtDuration(ns) {
		if (ns === 0)
			return '0';
		const abs = Math.abs(ns);
		const sign = ns < 0 ? '-' : '';
		if (abs >= 3600e9)
			return sign + (abs / 3600e9).toFixed(2) + ' h';
		if (abs >= 60e9)
			return sign + (abs / 60e9).toFixed(1) + ' min';
		if (abs >= 1e9)
			return sign + (abs / 1e9).toFixed(abs >= 10e9 ? 1 : 2) + ' s';
		if (abs >= 1e6)
			return sign + (abs / 1e6).toFixed(abs >= 10e6 ? 1 : 2) + ' ms';
		if (abs >= 1e3)
			return sign + (abs / 1e3).toFixed(1) + ' µs';
		return sign + Math.round(abs) + ' ns';
	}

	function fmtCount(v) {
		return Math.round(v).toLocaleString('en-US');
	}

	// A value as time when known, else as a count of samples.
	function fmtValue(v) {
		const ns = valueNs(v);
		if (ns === null)
			return fmtCount(v) + (Math.abs(v) === 1 ? ' sample' : ' samples');
		return fmtDuration(ns);
	}

	// The long form for tooltips: the time and, for samples, their number.
	function fmtValueLong(v) {
		const ns = valueNs(v);
		if (data.unit === 'samples')
			return (ns === null ? '' : fmtDuration(ns) + ', ') + fmtCount(v) +
			       (Math.abs(v) === 1 ? ' sample' : ' samples');
		return fmtDuration(ns);
	}

	function pct(part, whole) {
		return whole > 0 ? (100 * part) / whole : 0;
	}

	function fmtPct(p) {
		if (p === 0)
			return '0%';
		if (Math.abs(p) < 0.01)
			return (p < 0 ? '-' : '') + '<0.01%';
		return p.toFixed(Math.abs(p) >= 10 ? 1 : 2) + '%';
	}

	function fmtSignedPct(p) {
		return (p > 0 ? '+' : '') + fmtPct(p);
	}

	function fmtTime(ms) {
		return new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
	}

	function frameName(id) {
		const f = frames[id];
		return f && f[0] ? String(f[0]) : '[unknown]';
	}

	function frameWhere(id) {
		const f = frames[id];
		if (!f || !f[2])
			return '';
		return f[3] > 0 ? f[2] + ':' + f[3] : String(f[2]);
	}

	function frameBinary(id) {
		const f = frames[id];
		return f && f[1] ? String(f[1]) : '';
	}

	// ---- Aggregation ----------------------------------------------------------------------

	// [stack id, value, ...] pairs summed into a Map stack id -> value.
	function addPairs(map, pairs) {
		for (let i = 0; i + 1 < pairs.length; i += 2)
			map.set(pairs[i], (map.get(pairs[i]) || 0) + pairs[i + 1]);
	}

	function bucketValues(first, last) {
		const map = new Map();
		for (let i = first; i <= last; i++)
			addPairs(map, buckets[i][3] || []);
		return map;
	}

	function newNode(name, frame) {
		return { name: name, frame: frame, value: 0, self: 0, base: 0, baseSelf: 0,
			 kids: new Map(), children: [] };
	}

	// Adds each stack's value along its path (root first) to the tree: into `value`/`self`,
	// or into `base`/`baseSelf` for a diff's BASE.
	function addStacks(root, values, isBase) {
		values.forEach(function (v, id) {
			const stack = stacks[id];
			if (!stack || !v)
				return;
			let node = root;
			if (isBase)
				node.base += v;
			else
				node.value += v;
			for (let i = 0; i < stack.length; i++) {
				const fid = stack[i];
				let kid = node.kids.get(fid);
				if (!kid) {
					kid = newNode(frameName(fid), fid);
					node.kids.set(fid, kid);
				}
				node = kid;
				if (isBase)
					node.base += v;
				else
					node.value += v;
			}
			if (isBase)
				node.baseSelf += v;
			else
				node.self += v;
		});
	}

	// Map children to arrays (heaviest first); in a diff, drop what NEW no longer has (the
	// table of changes lists it) and set each node's delta against BASE scaled to NEW.
	function finish(node, scale) {
		const kids = [];
		node.kids.forEach(function (kid) {
			if (kid.value > 0)
				kids.push(finish(kid, scale));
		});
		kids.sort(function (a, b) {
			return b.value - a.value;
		});
		delete node.kids;
		node.children = kids;
		if (isDiff)
			node.delta = node.value - node.base * scale;
		return node;
	}

	function diffScale() {
		const b = data.base && data.base.total, n = data.new && data.new.total;
		return b > 0 ? n / b : 0;
	}

	function buildTree(values, baseValues) {
		const root = newNode(BASE_NAME, -1);
		addStacks(root, values, false);
		if (baseValues)
			addStacks(root, baseValues, true);
		return finish(root, diffScale());
	}

	// Functions (name and binary) with their self and total values: total counts a stack once
	// however often (recursion) the function appears in it.
	function functionStats(values, into, selfKey, totalKey) {
		values.forEach(function (v, id) {
			const stack = stacks[id];
			if (!stack || !stack.length || !v)
				return;
			const seen = new Set();
			for (let i = 0; i < stack.length; i++) {
				const fid = stack[i];
				const key = frameName(fid) + '\u0000' + frameBinary(fid);
				let row = into.get(key);
				if (!row) {
					row = { name: frameName(fid), binary: frameBinary(fid),
						where: frameWhere(fid), self: 0, total: 0, baseSelf: 0,
						baseTotal: 0 };
					into.set(key, row);
				}
				if (!row.where)
					row.where = frameWhere(fid);
				if (!seen.has(key)) {
					seen.add(key);
					row[totalKey] += v;
				}
				if (i === stack.length - 1)
					row[selfKey] += v;
			}
		});
		return into;
	}

	// ---- Header -----------------------------------------------------------------------------

	function typeLabel() {
		return data.type === 'offcpu' ? 'Off-CPU time' : 'CPU time';
	}

	function summaryItem(parent, label, value) {
		const item = document.createElement('span');
		item.className = 'item';
		const l = document.createElement('span');
		l.className = 'label';
		l.textContent = label;
		const v = document.createElement('span');
		v.className = 'value';
		v.textContent = value;
		item.append(l, v);
		parent.append(item);
		return v;
	}

	function drawHeader() {
		const title = data.title || (isDiff ? 'ignis diff' : 'ignis report');
		document.getElementById('title').textContent = title;
		document.title = title;
		const s = document.getElementById('summary');
		s.textContent = '';
		summaryItem(s, 'Profile', typeLabel());
		const hosts = data.hosts || [];
		if (hosts.length)
			summaryItem(s, hosts.length === 1 ? 'Host' : 'Hosts',
				    hosts.length <= 3 ? hosts.join(', ') : hosts.length + ' hosts');
		const sum = data.summary || {};
		if (isDiff) {
			summaryItem(s, 'Base', (data.base.label || 'base') + ' (' +
				    fmtValue(data.base.total) + ')');
			summaryItem(s, 'New', (data.new.label || 'new') + ' (' +
				    fmtValue(data.new.total) + ')');
		} else {
			if (sum.start_ms && sum.end_ms) {
				summaryItem(s, 'From', fmtTime(sum.start_ms));
				summaryItem(s, 'To', fmtTime(sum.end_ms) + ' (' +
					    fmtDuration((sum.end_ms - sum.start_ms) * NS_PER_MS) + ')');
			}
			if (sum.windows)
				summaryItem(s, 'Windows', fmtCount(sum.windows));
			if (sum.samples)
				summaryItem(s, 'Samples', fmtCount(sum.samples));
			let total = 0;
			for (let i = 0; i < buckets.length; i++)
				for (let j = 1; j < (buckets[i][3] || []).length; j += 2)
					total += buckets[i][3][j];
			summaryItem(s, 'Total', fmtValue(total));
		}
	}

	// ---- Tooltip (d3-flame-graph's show/hide protocol), text only ----------------------------

	function makeTooltip() {
		const el = document.createElement('div');
		el.className = 'tip';
		el.hidden = true;
		document.body.append(el);

		function line(label, value, cls) {
			const row = document.createElement('div');
			row.className = 'tip-row' + (cls ? ' ' + cls : '');
			if (label) {
				const l = document.createElement('span');
				l.className = 'tip-label';
				l.textContent = label;
				row.append(l);
			}
			const v = document.createElement('span');
			v.textContent = value;
			row.append(v);
			el.append(row);
		}

		function tip() {}
		tip.show = function (event, d) {
			const n = d.data;
			const rootValue = currentTree ? currentTree.value : 0;
			el.textContent = '';
			line('', n.name, 'tip-name');
			if (n.frame >= 0) {
				const where = frameWhere(n.frame), bin = frameBinary(n.frame);
				if (where)
					line('at', where);
				if (bin)
					line('in', bin);
			}
			line('total', fmtValueLong(n.value) + ' (' + fmtPct(pct(n.value, rootValue)) + ')');
			line('self', fmtValueLong(n.self) + ' (' + fmtPct(pct(n.self, rootValue)) + ')');
			if (isDiff && n.frame >= 0) {
				const scale = diffScale();
				line('base', fmtValueLong(n.base) + ' (' +
				     fmtPct(pct(n.base, data.base.total)) + ')');
				line('change', fmtSignedPct(pct(n.delta, data.new.total)) + ' of new (' +
				     (n.delta >= 0 ? '+' : '') + fmtValue(n.delta) + ' vs base x' +
				     scale.toFixed(2) + ')', n.delta > 0 ? 'more' : n.delta < 0 ? 'less' : '');
			}
			el.hidden = false;
			const w = el.offsetWidth, h = el.offsetHeight;
			let x = event.pageX + 14, y = event.pageY + 14;
			if (x + w > window.scrollX + window.innerWidth - 8)
				x = event.pageX - w - 14;
			if (y + h > window.scrollY + window.innerHeight - 8)
				y = event.pageY - h - 14;
			el.style.left = Math.max(4, x) + 'px';
			el.style.top = Math.max(4, y) + 'px';
			return tip;
		};
		tip.hide = function () {
			el.hidden = true;
			return tip;
		};
		return tip;
	}

	// ---- Flame graph --------------------------------------------------------------------------

	const HIGHLIGHT = '#e600e6';

	// Red for more time in NEW, blue for less, by the change relative to the frame's own
	// value (a frame new in NEW is fully red); grey when unchanged.
	function diffColor(d) {
		if (d.highlight)
			return HIGHLIGHT;
		const n = d.data;
		const delta = n.delta || 0;
		const t = n.value > 0 ? Math.min(1, Math.abs(delta) / n.value) : 0;
		if (t < 0.005)
			return 'rgb(224,224,224)';
		const k = Math.sqrt(t);
		const to = delta > 0 ? [214, 39, 40] : [31, 97, 205];
		const c = [0, 1, 2].map(function (i) {
			return Math.round(232 + (to[i] - 232) * k);
		});
		return 'rgb(' + c.join(',') + ')';
	}

	const tooltip = makeTooltip();

	let searchText = '';

	function drawFlame(tree) {
		const el = document.getElementById('flamegraph');
		const details = document.getElementById('details');
		const hint = tree.value > 0 ? 'Hover a frame for its details; click to zoom.'
					    : 'No samples in this range.';
		el.textContent = '';
		searchText = '';
		const width = Math.max(320, el.clientWidth || 960);
		chart = flamegraph.default()
			.width(width)
			.cellHeight(20)
			.minFrameSize(1)
			.transitionDuration(300)
			.sort(false)
			.selfValue(false)
			.tooltip(tooltip)
			.resetHeightOnZoom(true) // the height of what is wide enough to draw
			.setDetailsElement(details)
			.setDetailsHandler(function (text) {
				details.textContent = text || searchText || hint;
			})
			.setLabelHandler(function (d) {
				return d.data.name + ': ' + fmtValueLong(d.data.value) + ', ' +
				       fmtPct(pct(d.data.value, tree.value));
			})
			.setSearchMatch(function (d, term) {
				const name = d.data.name;
				return !!term && typeof name === 'string' &&
				       name.toLowerCase().indexOf(term.toLowerCase()) >= 0;
			})
			.setSearchHandler(function (results, sum, totalValue) {
				searchText = results.length
					? results.length + ' matching frames: ' + fmtValue(sum) + ', ' +
					  fmtPct(pct(sum, totalValue)) + ' of the total'
					: 'No frame matches.';
				details.textContent = searchText;
			});
		if (data.type === 'offcpu')
			chart.setColorHue('blue'); // off-CPU graphs are blue by convention
		if (isDiff)
			chart.setColorMapper(diffColor);
		else
			chart.setColorMapper(function (d, original) {
				return d.highlight ? HIGHLIGHT : original;
			});
		d3.select(el).datum(tree).call(chart);
		details.textContent = hint;
		const term = document.getElementById('search').value.trim();
		if (term)
			chart.search(term);
	}

	// ---- Table --------------------------------------------------------------------------------

	// Columns: key into a row, title, kind ("num" sorts descending first), format.
	function columns() {
		if (!isDiff) {
			const total = currentTree ? currentTree.value : 0;
			return [
				{ key: 'self', title: 'Self', num: true, fmt: fmtValue },
				{ key: 'selfPct', title: 'Self %', num: true, fmt: fmtPct,
				  get: function (r) { return pct(r.self, total); } },
				{ key: 'total', title: 'Total', num: true, fmt: fmtValue },
				{ key: 'totalPct', title: 'Total %', num: true, fmt: fmtPct,
				  get: function (r) { return pct(r.total, total); } },
				{ key: 'name', title: 'Function', cls: 'name' },
				{ key: 'binary', title: 'Binary', cls: 'binary' },
			];
		}
		return [
			{ key: 'selfDelta', title: 'Self change', num: true, fmt: fmtSignedPct,
			  signed: true },
			{ key: 'baseSelfPct', title: 'Self base', num: true, fmt: fmtPct },
			{ key: 'newSelfPct', title: 'Self new', num: true, fmt: fmtPct },
			{ key: 'totalDelta', title: 'Total change', num: true, fmt: fmtSignedPct,
			  signed: true },
			{ key: 'baseTotalPct', title: 'Total base', num: true, fmt: fmtPct },
			{ key: 'newTotalPct', title: 'Total new', num: true, fmt: fmtPct },
			{ key: 'name', title: 'Function', cls: 'name' },
			{ key: 'binary', title: 'Binary', cls: 'binary' },
		];
	}

	function cellValue(col, row) {
		return col.get ? col.get(row) : row[col.key];
	}

	const MAX_ROWS = 500;

	function drawTable() {
		const cols = columns();
		const head = document.getElementById('top-head');
		const body = document.getElementById('top-body');
		if (!sortState)
			sortState = isDiff ? { key: 'selfDelta', desc: true, abs: true }
					   : { key: 'self', desc: true };
		const col = cols.find(function (c) { return c.key === sortState.key; }) || cols[0];
		const rows = currentRows.slice();
		rows.sort(function (a, b) {
			let x = cellValue(col, a), y = cellValue(col, b);
			if (sortState.abs) {
				x = Math.abs(x);
				y = Math.abs(y);
			}
			let c;
			if (col.num)
				c = x - y;
			else
				c = String(x).localeCompare(String(y));
			if (c !== 0)
				return sortState.desc ? -c : c;
			return a.name.localeCompare(b.name) || a.binary.localeCompare(b.binary);
		});

		head.textContent = '';
		cols.forEach(function (c) {
			const th = document.createElement('th');
			th.textContent = c.title;
			th.dataset.key = c.key;
			th.className = (c.num ? 'num' : '') + (c.key === sortState.key ? ' sorted' : '');
			th.setAttribute('aria-sort', c.key === sortState.key
				? (sortState.desc ? 'descending' : 'ascending') : 'none');
			th.title = 'Sort by ' + c.title.toLowerCase();
			th.addEventListener('click', function () {
				if (sortState.key === c.key)
					sortState = { key: c.key, desc: !sortState.desc };
				else
					sortState = { key: c.key, desc: !!c.num };
				drawTable();
			});
			head.append(th);
		});

		body.textContent = '';
		const frag = document.createDocumentFragment();
		rows.slice(0, MAX_ROWS).forEach(function (r) {
			const tr = document.createElement('tr');
			cols.forEach(function (c) {
				const td = document.createElement('td');
				const v = cellValue(c, r);
				td.textContent = c.fmt ? c.fmt(v) : v;
				if (c.num)
					td.className = 'num';
				if (c.cls)
					td.className = c.cls;
				if (c.signed)
					td.className += v > 0 ? ' more' : v < 0 ? ' less' : '';
				if (c.key === 'name' && r.where)
					td.title = r.where;
				if (c.key === 'binary')
					td.title = r.binary;
				tr.append(td);
			});
			tr.addEventListener('click', function () {
				const search = document.getElementById('search');
				search.value = r.name;
				search.dispatchEvent(new Event('input'));
			});
			frag.append(tr);
		});
		body.append(frag);
		document.getElementById('table-note').textContent = rows.length > MAX_ROWS
			? 'the first ' + MAX_ROWS + ' of ' + fmtCount(rows.length) + ' functions'
			: fmtCount(rows.length) + ' functions; click a row to find it in the graph';
	}

	// ---- Report: selection, timeline ---------------------------------------------------------

	function rangeText() {
		if (!buckets.length)
			return '';
		const first = selection ? selection[0] : 0;
		const last = selection ? selection[1] : buckets.length - 1;
		const start = buckets[first][0], end = buckets[last][0] + buckets[last][1];
		return (selection ? 'Showing ' : 'Showing all: ') + fmtTime(start) + ' to ' +
		       fmtTime(end) + ' (' + (last - first + 1) + ' of ' + buckets.length +
		       ' intervals)';
	}

	function render() {
		if (isDiff) {
			const values = new Map(), base = new Map();
			addPairs(values, data.new.stacks || []);
			addPairs(base, data.base.stacks || []);
			currentTree = buildTree(values, base);
			const stats = new Map();
			functionStats(values, stats, 'self', 'total');
			functionStats(base, stats, 'baseSelf', 'baseTotal');
			const nt = data.new.total, bt = data.base.total;
			currentRows = Array.from(stats.values()).map(function (r) {
				r.newSelfPct = pct(r.self, nt);
				r.baseSelfPct = pct(r.baseSelf, bt);
				r.newTotalPct = pct(r.total, nt);
				r.baseTotalPct = pct(r.baseTotal, bt);
				r.selfDelta = r.newSelfPct - r.baseSelfPct;
				r.totalDelta = r.newTotalPct - r.baseTotalPct;
				return r;
			});
		} else {
			const first = selection ? selection[0] : 0;
			const last = selection ? selection[1] : buckets.length - 1;
			const values = bucketValues(first, last);
			currentTree = buildTree(values, null);
			currentRows = Array.from(functionStats(values, new Map(), 'self', 'total').values());
			document.getElementById('range').textContent = rangeText();
			document.getElementById('reset-range').disabled = !selection;
		}
		drawFlame(currentTree);
		drawTable();
	}

	let brush = null, brushG = null, timeX = null, brushing = false;

	// Selects the buckets in [startMs, endMs) (see below); no arguments (or null): all of them.
	// Returns how many buckets are selected.
	function selectRange(startMs, endMs) {
		if (startMs === undefined || startMs === null || endMs === undefined || endMs === null) {
			selection = null;
		} else {
			// The buckets the range covers at least half of; else any it touches (a
			// range inside one bucket), so a drag need not hit the bars' edges exactly.
			let first = -1, last = -1;
			for (const half of [true, false]) {
				for (let i = 0; i < buckets.length; i++) {
					const b = buckets[i];
					const overlap = Math.min(endMs, b[0] + b[1]) - Math.max(startMs, b[0]);
					if (overlap > 0 && (!half || 2 * overlap >= b[1])) {
						if (first < 0)
							first = i;
						last = i;
					}
				}
				if (first >= 0)
					break;
			}
			selection = first < 0 ? null : [first, last];
			if (first < 0)
				document.getElementById('range').textContent = 'No data in that range';
		}
		if (brushG && !brushing) {
			brushing = true;
			if (selection) {
				const b0 = buckets[selection[0]], b1 = buckets[selection[1]];
				brushG.call(brush.move, [timeX(b0[0]), timeX(b1[0] + b1[1])]);
			} else {
				brushG.call(brush.move, null);
			}
			brushing = false;
		}
		render();
		return selection ? selection[1] - selection[0] + 1 : buckets.length;
	}

	function drawTimeline() {
		const section = document.getElementById('timeline-section');
		if (isDiff || !buckets.length)
			return;
		section.hidden = false;
		const el = document.getElementById('timeline');
		el.textContent = '';
		const width = Math.max(320, el.clientWidth || 960), height = 110;
		const m = { top: 10, right: 24, bottom: 22, left: 72 };
		const totals = buckets.map(function (b) {
			let t = 0;
			for (let j = 1; j < (b[3] || []).length; j += 2)
				t += b[3][j];
			return t;
		});
		const start = buckets[0][0];
		const last = buckets[buckets.length - 1];
		const end = last[0] + last[1];
		timeX = d3.scaleUtc().domain([start, end]).range([m.left, width - m.right]);
		// Per second of the bucket, so buckets of different lengths compare.
		const rates = totals.map(function (t, i) {
			return t / Math.max(1, buckets[i][1] / 1000);
		});
		const y = d3.scaleLinear().domain([0, d3.max(rates) || 1]).nice()
			.range([height - m.bottom, m.top]);
		const svg = d3.select(el).append('svg').attr('width', width).attr('height', height)
			.attr('class', 'timeline');
		svg.append('g').attr('class', 'axis')
			.attr('transform', 'translate(0,' + (height - m.bottom) + ')')
			.call(d3.axisBottom(timeX).ticks(Math.max(2, Math.floor(width / 120)))
				.tickSizeOuter(0));
		// Time per second of wall time: CPUs busy (cpu) or threads waiting (offcpu).
		const perSecond = valueNs(1) !== null;
		const yAxis = d3.axisLeft(y).ticks(3).tickFormat(function (v) {
			return perSecond ? d3.format('~r')(+(valueNs(v) / 1e9).toPrecision(3))
					 : d3.format('~s')(v);
		});
		svg.append('text').attr('class', 'axis-title').attr('x', 4).attr('y', m.top + 4)
			.text(!perSecond ? 'samples/s' : data.type === 'offcpu' ? 'threads' : 'CPUs');
		svg.append('g').attr('class', 'axis')
			.attr('transform', 'translate(' + m.left + ',0)').call(yAxis);
		svg.append('g').attr('class', 'bars').selectAll('rect').data(buckets).join('rect')
			.attr('x', function (b) { return timeX(b[0]) + 0.5; })
			.attr('width', function (b) {
				return Math.max(1, timeX(b[0] + b[1]) - timeX(b[0]) - 1);
			})
			.attr('y', function (b, i) { return y(rates[i]); })
			.attr('height', function (b, i) { return y(0) - y(rates[i]); })
			.append('title').text(function (b, i) {
				return fmtTime(b[0]) + ': ' + fmtValueLong(totals[i]) + ' in ' +
				       fmtDuration(b[1] * NS_PER_MS);
			});
		brush = d3.brushX().extent([[m.left, m.top], [width - m.right, height - m.bottom]])
			.on('end', function (event) {
				if (brushing || !event.sourceEvent)
					return;
				if (!event.selection) {
					selectRange(null, null);
					return;
				}
				const t0 = timeX.invert(event.selection[0]).getTime();
				const t1 = timeX.invert(event.selection[1]).getTime();
				selectRange(t0, t1);
			});
		brushG = svg.append('g').attr('class', 'brush').call(brush);
	}

	// ---- Wiring -------------------------------------------------------------------------------

	function wire() {
		document.getElementById('search').addEventListener('input', function (e) {
			const term = e.target.value.trim();
			if (!chart)
				return;
			if (term) {
				chart.search(term);
			} else {
				searchText = '';
				chart.clear();
			}
		});
		document.getElementById('reset-zoom').addEventListener('click', function () {
			if (chart)
				chart.resetZoom();
		});
		document.getElementById('reset-range').addEventListener('click', function () {
			selectRange(null, null);
		});
		let resizeTimer = null;
		let lastWidth = document.getElementById('flamegraph').clientWidth;
		window.addEventListener('resize', function () {
			clearTimeout(resizeTimer);
			resizeTimer = setTimeout(function () {
				const w = document.getElementById('flamegraph').clientWidth;
				if (w === lastWidth)
					return;
				lastWidth = w;
				const keep = selection;
				drawTimeline();
				selection = keep;
				selectRange(keep ? buckets[keep[0]][0] : null,
					    keep ? buckets[keep[1]][0] + buckets[keep[1]][1] : null);
			}, 200);
		});
	}

	function setup() {
		if (data.version !== 1)
			throw new Error('unsupported data version ' + data.version);
		drawHeader();
		if (isDiff) {
			document.getElementById('flame-title').textContent = 'Differential flame graph';
			document.getElementById('legend').hidden = false;
			document.getElementById('legend-new').textContent = data.new.label || 'new';
			document.getElementById('table-title').textContent = 'Changes';
		}
		drawTimeline();
		wire();
		render();
	}

	window.ignisReport = {
		data: data,
		selectRange: selectRange,
		tree: function () { return currentTree; },
		rows: function () { return currentRows; },
		// The timeline's x for a time, in px from the left of its SVG (null: no timeline).
		timelineX: function (ms) { return timeX ? timeX(ms) : null; },
	};
	try {
		setup();
		window.ignisReport.ready = true;
	} catch (e) {
		const err = document.getElementById('error');
		err.hidden = false;
		err.textContent = 'This page could not be drawn: ' + e.message;
		window.ignisReport.error = String(e && e.stack || e);
	}
})();
