#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make soak: the shipping cases of test_ship.py at full length, in one long run.

The real agent (10 s windows, a spool, a local copy of every window) profiles three services
and a churn of short-lived processes while the test receiver misbehaves on a timeline:

    up ─ down (refused) ─ up but never answering (the 30 s timeout fires) ─ 500s, then 429
    with Retry-After ─ up ─ down, SIGTERM, restart during the outage ─ up

At the end, every window of every service must have arrived, in order, with the local
profile's sample totals (at least once: a duplicate is allowed only for a request the
receiver stored but did not answer, i.e. in the never-answering phase), nothing may have been
dropped, and the agent's memory must not have grown beyond its budgets (upload queue and
symbol cache).

    python3 tests/integration/soak.py [--minutes 30] [--build build]
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402
from harness import Agent, check, spawn, tmpdir, workload  # noqa: E402
from pyroscope_receiver import Receiver  # noqa: E402
from test_ship import free_port, local_totals, metric, metrics, received  # noqa: E402

SERVICES = ("checkout", "search", "ledger")
SYMBOL_CACHE_MIB = 64  # --symbol-cache-size default


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def say(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--build", default=os.path.join(HERE, "..", "..", "build"))
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("soak: needs root (BPF)")
    harness.configure(os.path.abspath(os.path.join(HERE, "..", "..")),
                      os.path.abspath(args.build))
    total = args.minutes * 60
    t0 = time.monotonic()

    def at(fraction):
        """Sleep until this fraction of the run."""
        delay = t0 + fraction * total - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    bindir = tmpdir("ignis-soak-bin-")
    procs = {}
    for name in SERVICES:
        exe = os.path.join(bindir, name)
        shutil.copy(workload("burn"), exe)
        procs[name] = spawn([exe, str(int(total + 120)), "1"])
    churn = spawn(["sh", "-c", "while :; do /bin/true; sleep 0.05; done"])
    pids = {n: p.pid for n, p in procs.items()}

    rx = Receiver().start()
    spool = tmpdir("ignis-soak-spool-")
    out = tmpdir("ignis-soak-out-")
    port = free_port()
    queue_budget = 16 << 20

    def start_agent():
        return Agent("--server-url", rx.url, "--spool-dir", spool, "--metrics-address",
                     f"127.0.0.1:{port}", interval=10, out=out).wait_ready()

    agents = [start_agent()]
    rss = []
    dropped = {}

    def sample_rss():
        a = agents[-1]
        if a.proc.poll() is None:
            rss.append((time.monotonic() - t0, rss_kib(a.proc.pid)))

    def watch(until):
        while time.monotonic() < t0 + until * total:
            sample_rss()
            time.sleep(min(10, max(0.1, t0 + until * total - time.monotonic())))

    def count_drops():
        text = metrics(port)
        for reason in ("queue_full", "too_old", "rejected", "shutdown", "spool_error"):
            v = metric(text, f'ignis_profiles_dropped_total{{reason="{reason}"}}') or 0
            dropped[reason] = dropped.get(reason, 0) + v
        return text

    say(f"soak for {args.minutes:g} min: up")
    watch(0.15)
    say("server down (connection refused)")
    rx.stop()
    watch(0.40)
    say("server up, never answering")
    rx.program(script=["hang"] * 100000)
    rx.start()
    watch(0.50)
    say("server answering 500, 500, 500, then 429 with Retry-After: 5")
    rx.program(script=[500, 500, 500, (429, {"Retry-After": "5"})])
    watch(0.60)
    say("server down again; SIGTERM the agent during the outage")
    rx.stop()
    watch(0.65)
    text = count_drops()
    spooled_before = metric(text, "ignis_upload_queue_profiles")
    agents[-1].stop(signal.SIGTERM, timeout=30)
    check(agents[-1].returncode == 0, f"agent exit {agents[-1].returncode}")
    check(os.listdir(spool), "nothing in the spool after SIGTERM in an outage")
    say(f"agent stopped with {spooled_before:.0f} profiles queued, "
        f"{len([f for f in os.listdir(spool) if f.endswith('.spool')])} files spooled")
    time.sleep(5)
    agents.append(start_agent())
    watch(0.80)
    say("server up")
    rx.start()
    watch(1.0)

    say("stopping the workloads; waiting for the last windows to be delivered")
    for p in procs.values():
        p.send_signal(signal.SIGKILL)
        p.wait()
    churn.kill()
    churn.wait()
    time.sleep(12)
    text = count_drops()
    agents[-1].stop(signal.SIGTERM, timeout=30)
    rx.stop()

    failures = []

    def expect(cond, message):
        if not cond:
            failures.append(message)

    a0 = agents[0]
    local = local_totals(a0, list(pids.values()))
    hung = [r for r in rx.requests if r.get("script") == "hang"]
    for name, pid in pids.items():
        want = {t: per[pid] for t, per in local.items() if per.get(pid)}
        got = received(rx, name)
        times = [x["profile"]["time_nanos"] for x in rx.accepted_by_service().get(name, [])]
        dups = len(times) - len(set(times))
        missing = sorted(set(want) - set(got))
        wrong = {t: (got[t], want[t]) for t in want if t in got and got[t] != want[t]
                 and got[t] % want[t]}
        expect(not missing, f"{name}: {len(missing)} of {len(want)} windows never arrived")
        expect(not wrong, f"{name}: sample totals differ from the local profile: {wrong}")
        expect(all(a <= b for a, b in zip(times, times[1:])) or dups,
               f"{name}: windows out of order")
        expect(dups <= len(hung), f"{name}: {dups} duplicates but only {len(hung)} "
               "requests were left unanswered")
        say(f"{name}: {len(want)} windows profiled, {len(set(times))} delivered, "
            f"{dups} duplicates")
    expect(not any(dropped.values()), f"profiles dropped: {dropped}")

    # The agent may hold its upload queue and its symbol cache (DWARF of whatever the host
    # runs) at their budgets; beyond those and some slack, memory would be leaking.
    steady = [kib for t, kib in rss if t > 0.05 * total]
    cache_mib = (metric(text, "ignis_symbol_cache_bytes") or 0) / 1048576
    if steady:
        growth = (max(steady) - min(steady)) / 1024
        allowed = (queue_budget >> 20) + SYMBOL_CACHE_MIB + 16
        say(f"agent RSS {min(steady) / 1024:.1f}–{max(steady) / 1024:.1f} MiB "
            f"(growth {growth:.1f} MiB; budgets: queue {queue_budget >> 20} MiB, symbol cache "
            f"{SYMBOL_CACHE_MIB} MiB, {cache_mib:.1f} MiB used at the end)")
        expect(growth <= allowed,
               f"agent RSS grew by {growth:.1f} MiB, more than its budgets allow ({allowed})")
    errors = {c: metric(text, f'ignis_upload_errors_total{{code="{c}"}}')
              for c in ("network", "5xx", "429")}
    say(f"second agent's upload errors: {errors}; receiver: {len(rx.requests)} requests, "
        f"{len(hung)} left unanswered")
    expect(len(hung) >= 1, "the never-answering phase saw no request")

    for f in failures:
        say("FAIL " + f)
    passed = 0 if failures else 1
    print(f"{passed} passed, {1 - passed} failed", flush=True)
    harness.cleanup()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
