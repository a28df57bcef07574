#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""BPF cost per sample of ignis variants, all running at once over one spin3 workload (the
same ticks, the same noise), repeated with the start order rotated; medians and ratios to
bpftrace's count-only floor. A developer's tool behind docs/performance.md's breakdown:

    python3 tests/bench/bpf_variants.py [--reps N] [--seconds S] [--variant NAME=ARGS ...]

Each variant is `NAME=space-separated ignis arguments` (the first may be @PATH, another
build of ignis); `bt-count` and `bt-stacks` are the
bpftrace references. Prints one line per variant: median us, min-max, ratio to the floor.
Also prints each ignis program's xlated/jited bytes and verified instructions (one agent)."""
import argparse
import statistics
import subprocess
import json
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import bench  # noqa: E402

# A fixed pause, not bench's wait for a quiet log: with several agents on a busy host the
# log seldom goes quiet, and every variant pays the same start-up work within a repetition.
bench.Ignis.settle = lambda self, quiet=3.0, limit=30.0: __import__("time").sleep(3)

DEFAULT = ["full=", "fp=--unwind fp", "fp-user=--unwind fp --no-kernel",
           "skip=--bench-skip-walk", "bt-stacks", "bt-count"]


def start(spec):
    name, _, args = spec.partition("=")
    if name == "bt-count":
        return bench.Bpftrace(100, "profile:hz:{hz} {{ @c = count(); }}")
    if name == "bt-stacks":
        return bench.Bpftrace(100)
    argv = args.split()
    if argv and argv[0].startswith("@"):  # another build of ignis: @PATH
        saved, bench.IGNIS = bench.IGNIS, argv[0][1:]
        try:
            return bench.Ignis(100, *argv[1:])
        finally:
            bench.IGNIS = saved
    return bench.Ignis(100, *argv)


def prog_sizes(pid):
    owned = bench.fdinfo(pid)["prog_id"]
    out = []
    for p in bench.bpf_progs():
        if p["id"] in owned:
            v = json.loads(subprocess.run(["bpftool", "-j", "prog", "show", "id", str(p["id"])],
                                          capture_output=True, text=True).stdout or "{}")
            out.append((p["name"], p.get("bytes_xlated"), p.get("bytes_jited"),
                        v.get("verified_insns")))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=6)
    ap.add_argument("--variant", action="append")
    a = ap.parse_args()
    variants = a.variant or DEFAULT
    rounds = bench.calibrate(a.seconds)
    res = {v: [] for v in variants}
    try:
        with bench.bpf_stats():
            for rep in range(a.reps):
                order = variants[rep % len(variants):] + variants[:rep % len(variants)]
                profs = {v: start(v) for v in order}
                if rep == 0:
                    for v, p in profs.items():
                        if not v.startswith("bt-"):
                            print(f"programs of {v}:")
                            for s in prog_sizes(p.pid):
                                print("   %-28s xlated %6s jited %6s verified_insns %s" % s)
                            break
                w = bench.Workload(rounds)
                progs = bench.bpf_progs()
                for v, p in profs.items():
                    name = None if v.startswith("bt-") else "ignis_sample"
                    res[v].append(bench.per_run_ns(progs, p.pid, name))
                for p in profs.values():
                    p.proc.kill()  # nothing of their output is needed
                    p.proc.wait()
                w.end()
                print(f"rep {rep}: " + ", ".join(
                    f"{v.split('=')[0]} {res[v][-1] / 1000 if res[v][-1] else 0:.2f}"
                    for v in variants), file=sys.stderr, flush=True)
    finally:
        bench.reap()
    floor = res.get("bt-count")
    for v in variants:
        xs = [x / 1000 for x in res[v] if x]
        if not xs:
            print(f"{v:12s} no runs")
            continue
        ratio = ""
        if floor:
            r = [x / f for x, f in zip(res[v], floor) if x and f]
            ratio = f" x{statistics.median(r):.2f} of the floor" if r else ""
        print(f"{v:12s} {statistics.median(xs):6.2f} us ({min(xs):.2f}-{max(xs):.2f}){ratio}")


if __name__ == "__main__":
    main()
