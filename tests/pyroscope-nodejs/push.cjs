// SPDX-License-Identifier: Apache-2.0
//
// Grafana's Pyroscope Node.js SDK (@pyroscope/nodejs, pinned by package-lock.json) profiling
// this process and pushing to a server, as an application would use it: init, start, work,
// stop (which sends the last profiles). Used by tests/integration/test_pyroscope_sdk.py
// against the test receiver.
//
//   node push.cjs SERVER_URL APP_NAME SECONDS [TAGS_JSON]
//
// The work is ignisSdkBurn (CPU, with a little allocation for the heap profiler) run under
// the wall label {"http.route": "/burn"} (a sample label; the SDK adds the series labels
// otel.scope.name, otel.scope.version, process.runtime.name and process.runtime.version).
// It yields to the event loop every few milliseconds so that the SDK's flush timer runs.
// Prints one JSON line: {"rounds": N, "node": VERSION} on success.
'use strict';

const Pyroscope = require('@pyroscope/nodejs');

const [url, appName, secondsArg, tagsArg] = process.argv.slice(2);
if (!url || !appName || !secondsArg) {
	console.error('usage: node push.cjs SERVER_URL APP_NAME SECONDS [TAGS_JSON]');
	process.exit(2);
}
const seconds = Number(secondsArg);
const tags = tagsArg ? JSON.parse(tagsArg) : {};

let sink = 0;
const kept = [];

// Named so that the test can find it in the profiles.
function ignisSdkBurn(ms) {
	const end = Date.now() + ms;
	let x = 0;
	while (Date.now() < end) {
		for (let i = 0; i < 10000; i++)
			x = (x * 1103515245 + 12345 + i) % 2147483648;
		kept.push(new Array(64).fill(x));
		if (kept.length > 4096)
			kept.splice(0, 2048);
	}
	sink += x;
}

async function main() {
	Pyroscope.init({
		serverAddress: url,
		appName,
		flushIntervalMs: 1000,
		tags,
		wall: { collectCpuTime: true, samplingIntervalMicros: 1000 },
		heap: { samplingIntervalBytes: 64 * 1024 },
	});
	Pyroscope.start();
	const end = Date.now() + seconds * 1000;
	let rounds = 0;
	while (Date.now() < end) {
		Pyroscope.wrapWithLabels({ 'http.route': '/burn' }, () => ignisSdkBurn(20));
		rounds++;
		await new Promise((resolve) => setImmediate(resolve));
	}
	await Pyroscope.stop();
	console.log(JSON.stringify({ rounds, node: process.versions.node, sink: sink % 10 }));
}

main().catch((e) => {
	console.error(e && e.stack ? e.stack : String(e));
	process.exit(1);
});
