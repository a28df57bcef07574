# SPDX-License-Identifier: Apache-2.0
"""The HTML page of `ignis report` and `ignis diff` (agent/report/html.h) in a real browser:
Debian's chromium, headless, driven by playwright-core (tests/browser/check_report.mjs), the
page opened from file:// with every other request aborted. The page is made by
tests/tools/html_page (report_html_write() around a data document) from fixtures written
here: a report with a timeline of 6 buckets and a function only in the late ones, and a diff
where one function grows and another shrinks. Screenshots: build/tests/report.png and
build/tests/diff.png."""
import json
import os
import shutil
import subprocess

from harness import check, path, tmpdir

T0 = 1764633600000  # 2025-12-02 00:00 UTC, in ms
BUCKET_MS = 10000
PERIOD_NS = 10000000  # 100 Hz

# name, binary, file, line
FRAMES = [
    ["main", "/usr/bin/app", "src/main.c", 10],
    ["run_server", "/usr/bin/app", "src/server.c", 42],
    ["parse_request", "/usr/bin/app", "src/parse.c", 7],
    ["compute_digest", "/usr/bin/app", "src/digest.c", 88],
    ["late_only_flush", "/usr/bin/app", "src/flush.c", 3],
    ["memcpy", "/lib/x86_64-linux-gnu/libc.so.6", "", 0],
    # A hostile name: must stay text wherever the page shows it.
    ['<img src=x onerror="window.__ignis_pwned=1">', "/tmp/evil", "</script><b>", 1],
    ["[unknown]", "", "", 0],
]
# Root first.
STACKS = [
    [0, 1, 2],        # 0: parse_request
    [0, 1, 3],        # 1: compute_digest
    [0, 1, 3, 5],     # 2: compute_digest -> memcpy
    [0, 4],           # 3: late_only_flush
    [0, 1, 6],        # 4: the hostile frame
    [0, 7],           # 5: an unnamed frame
]


def root(*parts):
    import harness
    return os.path.join(harness.ROOT, *parts)


def report_document():
    """6 buckets of 10 s; late_only_flush only in the last 3; compute_digest grows."""
    buckets = []
    samples = 0
    for i in range(6):
        late = i >= 3
        pairs = [0, 300, 1, 200 + 100 * i, 2, 60, 4, 5, 5, 12]
        if late:
            pairs += [3, 150]
        samples += sum(pairs[1::2])
        buckets.append([T0 + i * BUCKET_MS, BUCKET_MS, 1, pairs])
    return {
        "version": 1, "kind": "report", "title": "ignis report: web-1 </script> & co",
        "type": "cpu", "unit": "samples", "period_ns": PERIOD_NS, "hosts": ["web-1"],
        "summary": {"windows": 6, "samples": samples, "start_ms": T0,
                    "end_ms": T0 + 6 * BUCKET_MS},
        "frames": FRAMES, "stacks": STACKS, "buckets": buckets,
    }


def diff_document():
    """parse_request shrinks, compute_digest grows (normalized by the totals)."""
    base = [0, 3000, 1, 3000, 2, 1000, 4, 100]
    new = [0, 1000, 1, 6000, 2, 1000, 4, 100, 3, 500]
    return {
        "version": 1, "kind": "diff", "title": "ignis diff: v1.4 -> v1.5", "type": "cpu",
        "unit": "samples", "period_ns": PERIOD_NS, "hosts": ["web-1", "web-2"],
        "summary": {"windows": 12, "samples": sum(base[1::2]) + sum(new[1::2]),
                    "start_ms": T0, "end_ms": T0 + 120000},
        "frames": FRAMES, "stacks": STACKS, "buckets": [],
        "base": {"label": "v1.4", "total": sum(base[1::2]), "stacks": base},
        "new": {"label": "v1.5", "total": sum(new[1::2]), "stacks": new},
    }


def browser_check(page, expect, screenshot):
    """Runs tests/browser/check_report.mjs on PAGE with EXPECT (a dict, see the script) and
    fails with its failed checks; returns its result document."""
    check(os.path.exists(os.environ.get("CHROMIUM", "/usr/bin/chromium")),
          "/usr/bin/chromium missing: make deps installs Debian's chromium")
    check(os.path.isdir(root("tests", "browser", "node_modules", "playwright-core")),
          "tests/browser/node_modules missing: make deps installs playwright-core")
    check(shutil.which("node"), "node missing: make deps installs nodejs")
    expect_path = os.path.join(tmpdir(), "expect.json")
    with open(expect_path, "w") as f:
        json.dump(expect, f)
    p = subprocess.run(["node", root("tests", "browser", "check_report.mjs"), page,
                        expect_path, screenshot], capture_output=True, text=True, timeout=180)
    try:
        result = json.loads(p.stdout)
    except ValueError:
        result = None
    check(result is not None and p.returncode in (0, 1),
          f"check_report.mjs did not run (exit {p.returncode}):\n{p.stderr[-3000:]}"
          f"\n{p.stdout[-2000:]}")
    failed = [c for c in result["checks"] if not c["ok"]]
    check(p.returncode == 0 and result["ok"] and not failed,
          "page checks failed:\n" + "\n".join(f"  {c['name']}: {c['detail']}" for c in failed)
          + (f"\nrequests: {result['requests']}" if result["requests"] else "")
          + (f"\nerrors: {result['errors']}" if result["errors"] else ""))
    print(f"{len(result['checks'])} page checks passed; screenshot {screenshot}")
    return result


def make_page(doc, title):
    d = tmpdir()
    data, page = os.path.join(d, "data.json"), os.path.join(d, "page.html")
    with open(data, "w") as f:
        json.dump(doc, f)
    p = subprocess.run([path("tests", "html_page"), data, title, page], capture_output=True,
                       text=True)
    check(p.returncode == 0, f"html_page failed: {p.stderr}")
    with open(page) as f:
        html = f.read()
    check("src=\"http" not in html and "href=\"http" not in html,
          "the page links something on the network")
    return page


def test_report_page():
    """Flame graph, hover, zoom, search, timeline range, sortable table; no network."""
    page = make_page(report_document(), "ignis report: web-1")
    browser_check(page, {
        "kind": "report",
        "frames": ["main", "run_server", "parse_request", "compute_digest", "memcpy",
                   "late_only_flush"],
        "hover": {"name": "compute_digest",
                  "text": ["src/digest.c:88", "/usr/bin/app", "total", "self"]},
        "zoom": "compute_digest",
        "search": "PARSE",
        "range": {"start_ms": T0 + 500, "end_ms": T0 + 2 * BUCKET_MS + 5000,
                  "absent": ["late_only_flush"], "present": ["main", "compute_digest"]},
        "table_min_rows": 6,
        "text": ["CPU time", "web-1", "Timeline", "Flame graph", "Top functions"],
    }, path("tests", "report.png"))


def test_offcpu_page():
    """An off-CPU report: values in nanoseconds, shown as time; a range inside one bucket."""
    doc = report_document()
    doc.update(type="offcpu", unit="nanoseconds", period_ns=0, title="ignis report: off-CPU")
    for b in doc["buckets"]:
        b[3] = [v * 1000000 if i % 2 else v for i, v in enumerate(b[3])]
    page = make_page(doc, "ignis report: off-CPU")
    browser_check(page, {
        "kind": "report",
        "text": ["Off-CPU time", "threads", "Top functions"],
        "frames": ["main", "compute_digest", "late_only_flush"],
        "hover": {"name": "parse_request", "text": ["src/parse.c:7", "1.80 s"]},
        "range": {"start_ms": T0 + 4 * BUCKET_MS + 1000, "end_ms": T0 + 4 * BUCKET_MS + 3000,
                  "present": ["late_only_flush"]},
        "table_min_rows": 6,
    }, path("tests", "offcpu.png"))


def test_diff_page():
    """The differential flame graph: red where NEW spends more, blue where less."""
    page = make_page(diff_document(), "ignis diff: v1.4 -> v1.5")
    browser_check(page, {
        "kind": "diff",
        "frames": ["main", "compute_digest", "parse_request"],
        "more": ["compute_digest", "late_only_flush"],
        "less": ["parse_request"],
        "hover": {"name": "parse_request", "text": ["src/parse.c:7", "base", "change"]},
        "zoom": "compute_digest",
        "search": "digest",
        "table_min_rows": 5,
        "text": ["Differential flame graph", "v1.4", "v1.5", "Changes"],
    }, path("tests", "diff.png"))
