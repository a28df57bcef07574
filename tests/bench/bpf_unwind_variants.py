#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""BPF cost per sample of the table unwinder, builds of ignis side by side: unwind_deep
(DEPTH frames, no frame pointers, every CPU busy) profiled by each variant at once with
--pid, ignis_sample's run_time_ns / run_cnt over SECONDS after every variant published the
workload's tables, repeated with the start order rotated. A developer's tool behind
docs/performance.md's breakdown:

    python3 tests/bench/bpf_unwind_variants.py --depth 30 --variant NAME=ARGS ...

ARGS as in bpf_variants.py (@PATH first for another build); --pid is added."""
import argparse
import statistics
import subprocess
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
import bench  # noqa: E402
from bpf_variants import start  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--depth", type=int, default=30)
    ap.add_argument("--build", default="nofp")
    ap.add_argument("--variant", action="append", required=True)
    a = ap.parse_args()
    res = {v: [] for v in a.variant}
    try:
        with bench.bpf_stats():
            for rep in range(a.reps):
                w = bench.spawn(bench.unwind_deep(a.build, a.depth)(0), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
                order = a.variant[rep % len(a.variant):] + a.variant[:rep % len(a.variant)]
                profs = {v: start(f"{v} --pid {w.pid}") for v in order}
                if a.build == "nofp":
                    for p in profs.values():
                        bench.wait_published(p.pid, [w.pid], 60)
                time.sleep(1)
                r0 = {v: bench.prog_runs(p.pid) for v, p in profs.items()}
                time.sleep(a.seconds)
                r1 = {v: bench.prog_runs(p.pid) for v, p in profs.items()}
                for v in profs:
                    runs = r1[v]["ignis_sample"][0] - r0[v]["ignis_sample"][0]
                    ns = r1[v]["ignis_sample"][1] - r0[v]["ignis_sample"][1]
                    res[v].append(ns / runs if runs else None)
                for p in profs.values():
                    p.proc.kill()
                    p.proc.wait()
                w.kill()
                w.wait()
                print(f"rep {rep}: " + ", ".join(
                    f"{v.split('=')[0]} {res[v][-1] / 1000 if res[v][-1] else 0:.2f}"
                    for v in a.variant), file=sys.stderr, flush=True)
    finally:
        bench.reap()
    for v in a.variant:
        xs = [x / 1000 for x in res[v] if x]
        if xs:
            print(f"{v:40s} {statistics.median(xs):6.2f} us ({min(xs):.2f}-{max(xs):.2f})")


if __name__ == "__main__":
    main()
