#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make bench: ignis's cost, loss and accuracy, side by side with perf and bpftrace.

This machine is shared and noisy, so every figure is a ratio measured in one run or a
median over repetitions, printed with its min-max and the command that produced it. The
table goes to stdout, everything to build/bench/results.json, and a summary into the
README's Performance section (between its bench markers).
"""
import argparse
import contextlib
import ctypes
import datetime
import glob
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.path.join(ROOT, "build")
IGNIS = os.path.join(BUILD, "ignis")
BENCH = os.path.join(BUILD, "tests", "bench")
# The designed split; each run's reference is what spin3 measured of itself (TSC).
SHARES = {"work_sixty": 60.0, "work_thirty": 30.0, "work_ten": 10.0}
NCPU = os.cpu_count() or 1
TMP = tempfile.mkdtemp(prefix="ignis-bench-")
_procs = []


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def spawn(argv, **kw):
    kw.setdefault("stdout", subprocess.DEVNULL)
    kw.setdefault("stderr", subprocess.DEVNULL)
    p = subprocess.Popen(argv, **kw)
    _procs.append(p)
    return p


def reap():
    for p in _procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    _procs.clear()


def stats(values):
    values = [v for v in values if v is not None]
    if not values:
        return {"n": 0}
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values), "values": values}


class Results:
    def __init__(self, quick):
        self.data = {"quick": quick, "machine": machine(), "figures": {}}

    def add(self, key, title, unit, values, command, target=None, note=None):
        fig = {"title": title, "unit": unit, "command": command, **stats(values)}
        if target:
            fig["target"] = target
        if note:
            fig["note"] = note
        self.data["figures"][key] = fig
        return fig


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) // 1024
    virt = subprocess.run(["systemd-detect-virt", "--vm"], capture_output=True,
                          text=True).stdout.strip()
    return {"cpu": model, "cpus": NCPU, "memory_mib": mem, "kernel": platform.release(),
            "virtualization": virt or "unknown",
            "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")}


# ---- The workload --------------------------------------------------------------------------

def spin3(rounds):
    return [os.path.join(BENCH, "spin3"), str(rounds), str(NCPU)]


class Workload:
    """spin3 (or another program of fixed work, cmd(rounds) -> argv, printing "wall_ns=N
    cpu_ns=N"): NCPU threads of fixed work split 60/30/10; stays alive (stdin open) after
    printing its times, so that profilers that symbolize at exit still find it. With ready,
    the program prints "ready" first and starts its measured work when ready(self) returns
    (unwind_deep's "wait")."""

    def __init__(self, rounds, cmd=spin3, ready=None):
        self.proc = spawn(cmd(rounds), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        line = self.proc.stdout.readline()
        if ready:
            if line.strip() != "ready":
                raise RuntimeError(f"{cmd(rounds)[0]}: {line!r}")
            ready(self)
            self.proc.stdin.write("go\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        m = re.search(r"wall_ns=(\d+) cpu_ns=(\d+)", line)
        if not m:
            raise RuntimeError(f"{cmd(rounds)[0]}: {line!r}")
        self.wall = int(m.group(1)) / 1e9
        self.cpu = int(m.group(2)) / 1e9
        m = re.search(r"shares=([\d.]+),([\d.]+),([\d.]+)", line)
        self.shares = dict(zip(SHARES, (float(m.group(i)) for i in (1, 2, 3)))) if m else None

    def end(self):
        self.proc.stdin.close()
        self.proc.wait()


def calibrate(seconds, cmd=spin3, trial=20000):
    w = Workload(trial, cmd)
    w.end()
    return max(trial // 20, int(trial * seconds / w.wall))


# ---- The profilers -------------------------------------------------------------------------

class Ignis:
    name = "ignis"

    def __init__(self, hz, *extra, interval=60, log_level="debug"):
        """hz, interval or log_level None: the agent's default."""
        self.out = tempfile.mkdtemp(dir=TMP)
        self.log = os.path.join(self.out, "agent.log")
        opts = [("--frequency", hz), ("--interval", interval), ("--log-level", log_level)]
        # Below debug level the table builds are not logged: the settling is read from
        # /metrics instead (its own address when the caller gave none).
        self.metrics_port = None
        if log_level != "debug":
            if "--metrics-address" in extra:
                self.metrics_port = int(extra[extra.index("--metrics-address") + 1]
                                        .rsplit(":", 1)[1])
            else:
                self.metrics_port = free_port()
                extra = (*extra, "--metrics-address", f"127.0.0.1:{self.metrics_port}")
        self.proc = spawn([IGNIS, *(x for o, v in opts if v is not None for x in (o, str(v))),
                           "--output-dir", self.out, *extra], stderr=open(self.log, "w"))
        # 120 s: with every CPU busy (the upload section's 192 spinning processes, on a host
        # shared with compilers) loading the programs took more than 30 s.
        deadline = time.monotonic() + 120
        while "profiling " not in self.text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("ignis did not start:\n" + self.text())
            time.sleep(0.05)
        self.pid = self.proc.pid
        self.settle()

    # What the agent logs every window (cycle.c) and for each process it meets (procfs.c,
    # pid N: ...): steady-state work on a host with process churn (this shared machine
    # compiles), not start-up work. Tables are built once per binary: their lines stop.
    STEADY = re.compile(rb"^ignis: \w+: (window |\d+ processes will be announced|pid \d+)")

    def settle(self, quiet=3.0, limit=30.0):
        """Wait until the agent's start-up work is done: the unwind tables of the processes
        running on the host (built once per binary, on a thread of the agent's; up to a
        second each on a host whose CPUs are all busy) stop coming, so that what follows
        measures the steady state. The lines every window or every new process logs do not
        count: with --interval 1 or 2, or under process churn, the log never stops growing,
        and the wait would last its limit (30 s) at every start."""
        deadline = time.monotonic() + limit
        since = time.monotonic()
        if self.metrics_port:
            self.settle_by_metrics(quiet, deadline)
            return
        # Only the new bytes are read: reading and searching the whole log would make this
        # process the busiest on the host, and the agent would profile (and symbolize) it.
        with open(self.log, "rb") as f:
            f.seek(0, os.SEEK_END)
            partial = b""
            while time.monotonic() < deadline:
                chunk = f.read()
                if chunk:
                    lines = (partial + chunk).split(b"\n")
                    partial = lines.pop()
                    if any(l and not self.STEADY.match(l) for l in lines):
                        since = time.monotonic()
                elif time.monotonic() - since >= quiet:
                    return
                time.sleep(0.25)

    SETTLING = ("ignis_unwind_tables_built_total", "ignis_unwind_table_errors_total",
                "ignis_unwind_tables_rebuilt_total")

    def settle_by_metrics(self, quiet, deadline):
        """settle() for an agent below debug level: until the tables built (and failed, and
        rebuilt) have not moved for quiet s."""
        last, since = None, time.monotonic()
        while time.monotonic() < deadline:
            try:
                text = metrics_text(self.metrics_port)
            except OSError:
                text = ""
            now = tuple(metric_value(text, name) for name in self.SETTLING)
            if now != last or None in now:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return
            time.sleep(0.25)

    def text(self):
        with open(self.log) as f:
            return f.read()

    def stop(self, timeout=600):
        """SIGINT: the agent writes its last window first, symbolizing every process that
        window saw (over a minute at 1000 Hz on this shared host, whose compilers and tests
        are big binaries: 60 s was too short)."""
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=timeout)

    def kill(self):
        """Stop without the last window: for a figure that reads no profile of this agent.
        SIGINT would symbolize every process the window saw (tens of seconds on a host
        running compilers); the kernel detaches the programs and frees the maps with the
        last file descriptor either way (the agent pins nothing)."""
        self.proc.kill()
        self.proc.wait(timeout=60)

    def windows(self):
        out = []
        for m in re.finditer(r"window seq=\d+ (.*)", self.text()):
            out.append({k: int(v) for k, v in
                        (kv.split("=", 1) for kv in m.group(1).split()) if k != "file"})
        return out

    def stacks(self, pid, since_ns=None, comm=None):
        """{tuple of frames (leaf first): samples} of a process (with comm, of every process
        of that name instead), from our own decoder; with since_ns, from the windows that
        started then or later (CLOCK_REALTIME ns)."""
        result = {}
        for f in sorted(os.listdir(self.out)):
            if not f.endswith(".pb.gz"):
                continue
            p = subprocess.run([os.path.join(BUILD, "tests", "pprof_dump"),
                                os.path.join(self.out, f)], capture_output=True, text=True)
            data = json.loads(p.stdout)
            if since_ns and data["time_nanos"] < since_ns:
                continue
            locs = {l["id"]: l for l in data["locations"]}
            for s in data["samples"]:
                if (s["labels"].get("comm") != comm if comm else
                        s["labels"].get("pid") != pid):
                    continue
                frames = []
                for lid in s["locations"]:
                    lines = locs[lid]["lines"]
                    frames += [l["function"] for l in lines] if lines else ["?"]
                key = tuple(frames)
                result[key] = result.get(key, 0) + s["count"]
        return result


class Perf:
    name = "perf"

    def __init__(self, hz, *call_graph):
        self.data = os.path.join(tempfile.mkdtemp(dir=TMP), "perf.data")
        self.proc = spawn(["perf", "record", "-F", str(hz), "-a", *(call_graph or ("-g",)),
                           "-o", self.data])
        self.pid = self.proc.pid
        deadline = time.monotonic() + 10
        while not (os.path.exists(self.data) and os.path.getsize(self.data) > 0):
            if time.monotonic() > deadline:
                raise RuntimeError("perf record did not start")
            time.sleep(0.05)
        time.sleep(0.3)

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=120)

    def stacks(self, pid):
        out = subprocess.run(["perf", "script", "-i", self.data, "--pid", str(pid), "-F",
                              "pid,ip,sym"], capture_output=True, text=True).stdout
        result = {}
        for block in out.split("\n\n"):
            lines = [l.strip() for l in block.strip().splitlines()]
            if len(lines) < 2:
                continue
            frames = tuple(l.split(None, 1)[1] if " " in l else "?" for l in lines[1:])
            result[frames] = result.get(frames, 0) + 1
        return result


class Bpftrace:
    name = "bpftrace"
    PROGRAM = "profile:hz:{hz} {{ @[kstack, ustack, pid, comm] = count(); }}"

    def __init__(self, hz, program=None):
        self.out = os.path.join(tempfile.mkdtemp(dir=TMP), "bpftrace.txt")
        self.program = (program or self.PROGRAM).format(hz=hz)
        self.proc = spawn(["bpftrace", "-e", self.program], stdout=open(self.out, "w"),
                          stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while "Attaching" not in open(self.out).read():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("bpftrace did not start:\n" + open(self.out).read())
            time.sleep(0.05)
        time.sleep(0.3)
        self.pid = self.proc.pid

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=120)

    def kill(self):
        """Stop without printing the map: bpftrace symbolizes every stack of it at exit
        (many seconds on a busy host), for a figure that reads none."""
        self.proc.kill()
        self.proc.wait(timeout=60)

    def stacks(self, pid):
        """@[kstack, ustack, pid, comm]: N entries: the user frames, leaf first."""
        text = open(self.out).read()
        result = {}
        for m in re.finditer(r"@\[(.*?), (\d+), [^\]]*\]: (\d+)", text, re.S):
            if int(m.group(2)) != pid:
                continue
            parts = m.group(1).split(",")
            ustack = parts[-1] if len(parts) > 1 else ""
            frames = tuple(l.strip().split("+")[0] for l in ustack.strip().splitlines()
                           if l.strip())
            result[frames] = result.get(frames, 0) + int(m.group(3))
        return result


def shares(stacks):
    total = sum(stacks.values())
    leaf = {}
    for frames, n in stacks.items():
        if frames:
            leaf[frames[0]] = leaf.get(frames[0], 0) + n
    return total, leaf


def complete(stacks):
    """Samples of a work function whose stack shows do_round and worker under it."""
    n = 0
    for frames, count in stacks.items():
        if frames and frames[0] in SHARES and list(frames[1:3]) == ["do_round", "worker"]:
            n += count
    return n


# ---- 1 and 5: overhead, accuracy ---------------------------------------------------------

def paired_runs(pairs, start, workload, observe):
    """pairs (alone, profiled) of workload runs, in an order alternating between pairs:
    start() starts the profiler, workload(profiler or None) runs the workload to the end of
    its work, observe(profiler, workload) reads and stops the profiler before the workload
    exits. Returns [(alone, profiled)] workloads."""
    out = []
    for i in range(pairs):
        order = ("base", "tool") if i % 2 == 0 else ("tool", "base")
        t = {}
        for which in order:
            prof = start() if which == "tool" else None
            w = workload(prof)
            if prof:
                observe(prof, w)
            w.end()
            t[which] = w
        out.append((t["base"], t["tool"]))
    return out


def slowdowns(runs):
    """% slowdown of wall time and of the workload's CPU time, per (alone, profiled) pair."""
    return ([100.0 * (tool.wall / base.wall - 1) for base, tool in runs],
            [100.0 * (tool.cpu / base.cpu - 1) for base, tool in runs])


def overhead(res, quick):
    # QUICK: one pair of 2 s (as many samples as two pairs of 1 s, half the profiler starts
    # and stops, which are most of the time).
    pairs = 1 if quick else 5
    seconds = 2.0 if quick else 5.0
    rounds = calibrate(seconds)
    log(f"overhead: spin3 {rounds} rounds x {NCPU} threads (~{seconds} s), {pairs} pairs")
    accuracy = {}
    for hz in (100, 1000):
        for tool in (Ignis, Perf, Bpftrace):
            runs = []

            def observe(prof, w):
                prof.stop()
                runs.append({"stacks": prof.stacks(w.pid), "cpu": w.cpu, "shares": w.shares,
                             "windows": prof.windows() if tool is Ignis else None})

            wall, cpu = slowdowns(paired_runs(pairs, lambda: tool(hz),
                                              lambda prof: Workload(rounds), observe))
            cmd = {"ignis": f"ignis --frequency {hz}",
                   "perf": f"perf record -F {hz} -a -g",
                   "bpftrace": "bpftrace -e '" + Bpftrace.PROGRAM.format(hz=hz) + "'"}[tool.name]
            if hz == 100:
                target = "< 3 % (the machine's noise)"
            else:
                target = "<= perf's" if tool is Ignis else None
            res.add(f"slowdown_wall_{tool.name}_{hz}", f"slowdown, wall time, {tool.name} "
                    f"at {hz} Hz", "%", wall, f"spin3 alone vs under `{cmd}`, {pairs} "
                    f"interleaved pair(s) of ~{seconds:g} s", target=target)
            res.add(f"slowdown_cpu_{tool.name}_{hz}", f"slowdown, workload CPU time, "
                    f"{tool.name} at {hz} Hz", "%", cpu, f"as above, getrusage of spin3",
                    target="<= perf's" if hz == 1000 and tool is Ignis else None)
            accuracy[(tool.name, hz)] = runs
            log(f"  {tool.name} {hz} Hz: wall {statistics.median(wall):+.1f} %, "
                f"cpu {statistics.median(cpu):+.1f} %")
    return accuracy


def accuracy_and_loss(res, accuracy):
    """Shares are over all of the workload's samples, so a frame a profiler cannot name
    counts against it; the reference is the workload's own measurement of the run."""
    for (tool, hz), runs in accuracy.items():
        errors, pooled, ref, ratio, whole = [], {}, {}, [], []
        pooled_total = 0
        for r in runs:
            total, leaf = shares(r["stacks"])
            if not total:
                errors.append(None)
                continue
            errors.append(max(abs(100.0 * leaf.get(f, 0) / total - r["shares"][f])
                              for f in SHARES))
            for f in SHARES:
                pooled[f] = pooled.get(f, 0) + leaf.get(f, 0)
                ref[f] = ref.get(f, 0) + r["shares"][f] * total
            pooled_total += total
            ratio.append(total / (r["cpu"] * hz))
            whole.append(100.0 * complete(r["stacks"]) / total)
        pooled_err = max(abs(100.0 * (pooled.get(f, 0) - ref[f] / 100.0) / pooled_total)
                         for f in SHARES) if pooled_total else None
        res.add(f"share_error_{tool}_{hz}", f"attribution error per run, {tool} at {hz} Hz",
                "points", errors, "max over work_sixty/thirty/ten of |share of the workload's "
                "samples - share of its time (TSC)|",
                target="<= 2 points per run")
        res.add(f"share_error_pooled_{tool}_{hz}", f"attribution error pooled, {tool} at "
                f"{hz} Hz", "points", [pooled_err], f"all runs' samples ({pooled_total})",
                target="within sampling noise (~0.7 points at ~5000 samples)")
        res.add(f"samples_vs_cpu_{tool}_{hz}", f"samples / (CPU s x Hz), {tool} at {hz} Hz",
                "ratio", ratio, "the workload's samples over its getrusage CPU time x Hz")
        res.add(f"complete_stacks_{tool}_{hz}", f"samples with a complete stack, {tool} at "
                f"{hz} Hz", "%", whole, "work_* <- do_round <- worker present")
        if tool != "ignis":
            continue
        samples = dropped = unaccounted = 0
        for r in runs:
            for w in r["windows"]:
                samples += w["samples"]
                dropped += w["dropped"]
                unaccounted += abs(w["unaccounted"])
        res.add(f"loss_ignis_{hz}", f"samples lost, ignis at {hz} Hz", "%",
                [100.0 * dropped / samples if samples else None],
                f"dropped by reason / all samples over {len(runs)} runs ({samples} samples, "
                f"{unaccounted} unaccounted for)", target="<= 0.1 %, every loss counted")
        res.data.setdefault("accounting", {})[str(hz)] = {
            "samples": samples, "dropped": dropped, "unaccounted": unaccounted}


# ---- 2: kernel-side cost per sample -----------------------------------------------------

def bpf_progs():
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    return json.loads(out.stdout or "[]")


def fdinfo(pid):
    """The BPF objects a process holds, from /proc/PID/fdinfo (Debian's bpftool lists no
    owners): {"prog_id": set, "map_id": {id: memlock bytes}}."""
    progs, maps = set(), {}
    base = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(base):
        try:
            with open(os.path.join(base, fd)) as f:
                info = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
        except OSError:
            continue
        if "prog_id" in info:
            progs.add(int(info["prog_id"]))
        if "map_id" in info:
            maps[int(info["map_id"])] = int(info.get("memlock", "0"))
    return {"prog_id": progs, "map_id": maps}


def per_run_ns(progs, pid, name=None):
    owned = fdinfo(pid)["prog_id"]
    for p in progs:
        if p["id"] in owned and p.get("type") == "perf_event" and (not name or p["name"] == name):
            if p.get("run_cnt"):
                return p["run_time_ns"] / p["run_cnt"]
    return None


def enable_stats_fd():
    """A descriptor that keeps BPF run-time statistics on while it is open (the bpf()
    command BPF_ENABLE_STATS, Linux 5.8), or None. Unlike the sysctl, it is counted: a
    benchmark that ends elsewhere on the host and writes kernel.bpf_stats_enabled back to 0
    does not stop this one's statistics (programs loaded after that had run_cnt 0)."""
    nr = {"x86_64": 321, "aarch64": 280}.get(os.uname().machine)
    if nr is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(8)  # union bpf_attr's enable_stats: __u32 type
    fd = libc.syscall(nr, 32, attr, 4)  # BPF_ENABLE_STATS, type BPF_STATS_RUN_TIME (0)
    return fd if fd >= 0 else None


@contextlib.contextmanager
def bpf_stats():
    """BPF run-time statistics on for the block (run_cnt and run_time_ns of every program):
    a BPF_ENABLE_STATS descriptor, which leaves the sysctl to whoever else set it; without
    the command, kernel.bpf_stats_enabled=1, then the value it had."""
    fd = enable_stats_fd()
    if fd is not None:
        try:
            yield
        finally:
            os.close(fd)
        return
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        saved = f.read().strip()
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        yield
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(saved)


def bpf_cost(res, quick):
    reps = 1 if quick else 5
    seconds = 5 if quick else 15
    rounds = calibrate(seconds)
    full, fp, skip, bt, floor = [], [], [], [], []
    with bpf_stats():
        for rep in range(reps):
            # Start order changes between repetitions: a program's place among the
            # handlers of one tick can change its cost (cold caches for the first).
            starts = [lambda: Ignis(100), lambda: Ignis(100, "--unwind", "fp"),
                      lambda: Ignis(100, "--bench-skip-walk"),
                      lambda: Bpftrace(100),
                      lambda: Bpftrace(100, "profile:hz:{hz} {{ @c = count(); }}")]
            shift = rep % len(starts)
            order = list(range(len(starts)))[shift:] + list(range(len(starts)))[:shift]
            started = {i: starts[i]() for i in order}
            a, e, b, c, d = (started[i] for i in range(len(starts)))
            w = Workload(rounds)
            progs = bpf_progs()
            full.append(per_run_ns(progs, a.pid, "ignis_sample"))
            fp.append(per_run_ns(progs, e.pid, "ignis_sample"))
            skip.append(per_run_ns(progs, b.pid, "ignis_sample"))
            bt.append(per_run_ns(progs, c.pid))
            floor.append(per_run_ns(progs, d.pid))
            for prof in (a, e, b, c, d):
                prof.kill()	# their profiles are not read
            w.end()
    us = lambda v: [x / 1000 for x in v if x]
    cmd = ("kernel.bpf_stats_enabled=1, run_time_ns / run_cnt, spin3 (frame pointers) on all "
           f"CPUs, all five programs at once, {reps} repetition(s) of ~{seconds} s, start "
           "order rotated between repetitions")
    # bpftrace walks frame pointers: the like-for-like figure is ignis --unwind fp. At the
    # default (--unwind auto) spin3 is unwound with its tables, which cost more per frame.
    res.add("bpf_ns_ignis_fp", "BPF cost per sample, ignis --unwind fp (frame pointers)", "us",
            us(fp), cmd + "; ignis --unwind fp", target="<= bpftrace in the same run")
    res.add("bpf_ns_ignis", "BPF cost per sample, ignis at defaults (unwind tables)", "us",
            us(full), cmd + "; ignis --unwind auto")
    res.add("bpf_ns_bpftrace", "BPF cost per sample, bpftrace kstack+ustack", "us", us(bt), cmd)
    res.add("bpf_ratio_ignis_bpftrace", "BPF cost ratio ignis --unwind fp / bpftrace", "ratio",
            [a / b for a, b in zip(fp, bt) if a and b], "same runs", target="<= 1")
    res.add("bpf_ns_ignis_nowalk", "BPF cost per sample, ignis without stack walks", "us",
            us(skip), cmd + "; ignis --bench-skip-walk")
    res.add("bpf_ns_floor", "BPF cost per sample, bpftrace `@c = count()` (this VM's floor)",
            "us", us(floor), cmd)
    res.add("bpf_ratio_nowalk_floor", "BPF cost ratio ignis without walks / floor", "ratio",
            [a / b for a, b in zip(skip, floor) if a and b], "same runs", target="<= 2")
    res.add("bpf_ns_ignis_walk", "BPF cost per sample, ignis stack walks (fp - no walk)",
            "us", [(a - b) / 1000 for a, b in zip(fp, skip) if a and b], "same runs")
    log(f"bpf: ignis {statistics.median(us(full)):.2f} us, fp {statistics.median(us(fp)):.2f} "
        f"us, bpftrace {statistics.median(us(bt)):.2f} us, no-walk "
        f"{statistics.median(us(skip)):.2f} us, floor {statistics.median(us(floor)):.2f} us")


# ---- 3: agent cost ---------------------------------------------------------------------------

def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def map_memlock(pid):
    return sum(fdinfo(pid)["map_id"].values())


def rss_readings(pid, seconds, step=0.1):
    """VmRSS (KiB) every `step` s for `seconds`. The agent hands its heap back after every
    window (malloc_trim), so its RSS rises and falls within a window: one reading lands
    anywhere on that sawtooth, the median of a few windows' readings does not."""
    out = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        v = proc_status(pid, "VmRSS")
        if v:
            out.append(v)
        time.sleep(step)
    return out


def agent_cost(res, quick):
    seconds = 8 if quick else 60
    warmup = 3 if quick else 5
    for host in ("idle", "busy"):
        load = None
        if host == "busy":
            load = spawn([os.path.join(BENCH, "manyprocs"), "200", str(seconds + 15), "50"])
            time.sleep(3)
        a = Ignis(100, interval=10)
        time.sleep(warmup)	# past start-up: the first captures of every process
        cpu0, t0 = proc_cpu_s(a.pid), time.monotonic()
        time.sleep(seconds)
        cpu1, t1 = proc_cpu_s(a.pid), time.monotonic()
        rss, hwm, memlock = proc_status(a.pid, "VmRSS"), proc_status(a.pid, "VmHWM"), \
            map_memlock(a.pid)
        maps_rss = bpf_map_rss_kib(a.pid)
        a.stop()
        handled = [int(x) for x in re.findall(r"handled in (\d+) ms", a.text())]
        windows = a.windows()
        if load:
            load.kill()
            load.wait()
            subprocess.run(["pkill", "-f", "manyprocs"], capture_output=True)
        cmd = ("ignis --frequency 100 --interval 10" +
               (" with manyprocs: 200 processes of distinct stacks + 50 exec/exit per s"
                if host == "busy" else " on an idle host") + f", {seconds} s")
        cpu_min = (cpu1 - cpu0) / (t1 - t0) * 60
        res.add(f"agent_cpu_{host}", f"agent CPU, {host} host", "s per min", [cpu_min], cmd)
        res.add(f"agent_cpu_pct_{host}", f"agent CPU, {host} host", "% of one core",
                [cpu_min / 60 * 100], cmd, target="<= 0.5 % (busy host)")
        res.add(f"agent_rss_{host}", f"agent RSS at the end, excluding BPF maps, {host} host",
                "MiB", [(rss - maps_rss) / 1024], cmd + "; VmRSS less the resident pages of the "
                "mmap'ed BPF maps (smaps: anon_inode:bpf-map)",
                target="<= 20 MiB" if host == "idle" else "<= 30 MiB")
        res.add(f"agent_rss_peak_{host}", f"agent peak RSS, {host} host", "MiB",
                [hwm / 1024], cmd + " (VmHWM)")
        res.add(f"agent_maps_{host}", f"kernel memory of the BPF maps, {host} host", "MiB",
                [memlock / 1048576], "memlock of ignis's maps (/proc/PID/fdinfo, as bpftool "
                "map show reports it)", target="<= 24 MiB (2 CPUs)")
        res.add(f"agent_window_ms_{host}", f"window handling time, {host} host", "ms",
                handled, "drain + symbolize + encode + write, per window (debug log)")
        if host == "busy":
            res.add("busy_processes_per_window", "processes profiled per window, busy host",
                    "processes", [w["processes"] for w in windows], cmd)
            res.add("busy_no_image", "samples without captured mappings per window, busy "
                    "host", "samples", [w["no_image"] for w in windows],
                    cmd + " (processes gone before their capture, e.g. /bin/true)")
        log(f"agent {host}: {cpu_min:.3f} CPU s/min, RSS {rss / 1024:.1f} MiB (peak "
            f"{hwm / 1024:.1f}), maps {memlock / 1048576:.1f} MiB")


# ---- exec storm (issue 20) ----------------------------------------------------------------

STORM_BURNER = os.path.join(BUILD, "tests", "workloads", "stormburn")


def execstorm(res, quick):
    """Issue 20's exec storm: a 5 ms burner built without frame pointers and a /bin/true,
    one pair every 18.7 ms (1,500 of each in 28 s; 300 with QUICK), under the agent. The
    agent's CPU over the storm, as a share of one core, and what became of the burner's
    samples: whole and named to _start, or with an [unknown] frame."""
    runs = 300 if quick else 1500
    period = 0.0187
    # At the packaged log level: debug lines per process would be part of the cost.
    a = Ignis(100, "--log-level", "info", interval=10)
    time.sleep(1)
    cpu0, t0 = proc_cpu_s(a.pid), time.monotonic()
    due = t0
    for _ in range(runs):
        subprocess.run([STORM_BURNER, "5"], stdout=subprocess.DEVNULL)
        subprocess.run(["/bin/true"])
        due += period
        if due > time.monotonic():
            time.sleep(due - time.monotonic())
    cpu1, t1 = proc_cpu_s(a.pid), time.monotonic()
    time.sleep(0.5)
    a.stop()
    stacks = a.stacks(None, comm="stormburn")
    total = sum(n for f, n in stacks.items())
    whole = sum(n for f, n in stacks.items()
                if f and f[-1] == "_start" and not any(x.startswith("[") for x in f))
    unknown = sum(n for f, n in stacks.items() if "[unknown]" in f)
    cmd = (f"ignis --frequency 100 --interval 10 over {runs} runs of stormburn 5 (5 ms, "
           f"no frame pointers) and /bin/true, a pair every 18.7 ms ({t1 - t0:.1f} s)")
    res.add("storm_agent_cpu_pct", "exec storm: agent CPU", "% of one core",
            [(cpu1 - cpu0) / (t1 - t0) * 100], cmd, target="<= 2 %")
    res.add("storm_whole_pct", "exec storm: burner's samples whole and named to _start", "%",
            [100 * whole / total if total else None], cmd + f"; {total} samples",
            target=">= 95 %")
    res.add("storm_unknown_pct", "exec storm: burner's samples with an [unknown] frame", "%",
            [100 * unknown / total if total else None], cmd, target="0 %")
    log(f"exec storm: agent {(cpu1 - cpu0) / (t1 - t0) * 100:.2f} % of a core, "
        f"{whole}/{total} whole, {unknown} with [unknown]")


# ---- 4: window scale --------------------------------------------------------------------------

def window_scale(res, quick):
    reps = 1 if quick else 3
    stacks_sweep = (1000, 10000) if quick else (1000, 10000, 100000)
    procs_sweep = (10, 100) if quick else (10, 100, 1000)
    configs = [(s, 100) for s in stacks_sweep] + [(10000, p) for p in procs_sweep if p != 100]
    table = {}
    for stacks, procs in configs:
        runs = []
        for _ in range(reps):
            out = subprocess.run([os.path.join(BENCH, "window_bench"), str(stacks), str(procs)],
                                 capture_output=True, text=True, timeout=600)
            if out.returncode:
                raise RuntimeError(f"window_bench {stacks} {procs}: {out.stderr}")
            runs.append(json.loads(out.stdout))
        key = f"{stacks}x{procs}"
        warm = [r["warm"]["total_ms"] for r in runs]
        cold = [r["cold"]["total_ms"] for r in runs]
        res.add(f"window_ms_{key}", f"window of {stacks} stacks, {procs} processes (warm)",
                "ms", warm, f"window_bench {stacks} {procs}: drain + symbolize + encode",
                target="<= 100 ms at 10k stacks" if stacks == 10000 else None)
        res.add(f"window_cold_ms_{key}", f"same, cold symbol cache", "ms", cold,
                f"window_bench {stacks} {procs}")
        res.add(f"window_bytes_{key}", f"pprof bytes, {stacks} stacks, {procs} processes",
                "bytes", [r["warm"]["bytes"] for r in runs], f"window_bench {stacks} {procs}")
        for part in ("drain_ms", "build_ms", "encode_ms"):
            res.add(f"window_{part}_{key}", f"  {part[:-3]}", "ms",
                    [r["warm"][part] for r in runs], f"window_bench {stacks} {procs}")
        table[(stacks, procs)] = statistics.median(warm)
        log(f"window {stacks} stacks x {procs} processes: {statistics.median(warm):.1f} ms")
    small, large = min(stacks_sweep), max(stacks_sweep)
    growth = (table[(large, 100)] / large) / (table[(small, 100)] / small)
    res.add("window_growth", f"cost per stack at {large} / at {small} stacks", "ratio",
            [growth], "from the warm medians above", target="~1 (linear)")


# ---- 5: shipping to a server ------------------------------------------------------------------

def metrics_text(port):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def metric_value(text, name):
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def upload(res, quick):
    """Bytes sent per window per target (70/30 workload, busy host) and the agent's memory
    with its queue at the limit (server accepting connections but never answering)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    from pyroscope_receiver import Receiver
    interval = 2 if quick else 10
    windows = 2 if quick else 4
    for case in ("hot2", "busy"):
        rx = Receiver().start()
        load = None
        if case == "busy":
            load = spawn([os.path.join(BENCH, "manyprocs"), "200",
                          str(interval * (windows + 2) + 10), "50"])
            time.sleep(3)
        a = Ignis(100, "--server-url", rx.url, interval=interval)
        if case == "hot2":
            load = spawn([os.path.join(BUILD, "tests", "workloads", "hot2"),
                          str(interval * (windows + 1))])
        time.sleep(interval * (windows + 0.5))
        a.stop()
        rx.stop()
        if load.poll() is None:
            load.kill()
            load.wait()
        subprocess.run(["pkill", "-f", "manyprocs"], capture_output=True)
        # Whole windows only: group what arrived by window start.
        per_window = {}
        for x in rx.accepted:
            per_window.setdefault(x["profile"]["time_nanos"], []).append(x)
        full = sorted(per_window)[1:-1] or sorted(per_window)
        sizes = [len(x["raw"]) for t in full for x in per_window[t]
                 if case == "busy" or x["service_name"] == "hot2"]
        totals = [sum(len(x["raw"]) for x in per_window[t]) for t in full]
        targets = [len({x["service_name"] for x in per_window[t]}) for t in full]
        cmd = (f"ignis --frequency 100 --interval {interval} --server-url (test receiver)" +
               (" with hot2 (70/30 on 2 threads)" if case == "hot2" else
                " with manyprocs 200 processes + 50 exec/s"))
        what = "hot2's target" if case == "hot2" else "each target"
        res.add(f"upload_bytes_target_{case}", f"bytes sent per window, {what}, "
                f"{'70/30 workload' if case == 'hot2' else 'busy host'}", "bytes", sizes,
                cmd + "; gzip'd pprof as pushed")
        res.add(f"upload_bytes_window_{case}", f"bytes sent per window, all targets, "
                f"{'70/30 workload' if case == 'hot2' else 'busy host'}", "bytes", totals, cmd)
        res.add(f"upload_targets_{case}", f"targets per window, "
                f"{'70/30 workload' if case == 'hot2' else 'busy host'}", "targets", targets,
                cmd)
        log(f"upload {case}: {statistics.median(sizes) if sizes else 0:.0f} B per target, "
            f"{statistics.median(totals) if totals else 0:.0f} B per window, "
            f"{statistics.median(targets) if targets else 0} targets")

    # The queue at its limit, with a server that never answers. At the busy host's rate the
    # queue would take hours to fill (profiles expire after one), so fill it fast: 64 copies
    # of manyprocs under different names are 64 services, 64 profiles per 1 s window.
    # QUICK: a 1 MiB queue, and one spinning process per service (64 rather than 192 on
    # the CPUs: the services' share of the samples, so their profiles per window, are the
    # same; the agent starts and the queue fills sooner).
    limit_mib = 1 if quick else 16
    per_service = 1 if quick else 3
    # How long the full queue is watched (the figure's command says how much arrived
    # meanwhile: more than the target's 1 MiB, or the figure would not tell a bound).
    hold = 20 if quick else 30
    port = 9000 + os.getpid() % 1000
    rx = Receiver().start()
    rx.program(script=["hang"] * 100000)
    bindir = tempfile.mkdtemp(dir=TMP)
    loads = []
    for i in range(64):
        exe = os.path.join(bindir, f"manyprocs_{i:02d}")
        shutil.copy(os.path.join(BENCH, "manyprocs"), exe)
        loads.append(spawn([exe, str(per_service), "900", "0"]))
    time.sleep(3)
    started = time.monotonic()
    a = Ignis(100, "--server-url", rx.url, "--queue-max-bytes", f"{limit_mib}MiB",
              "--upload-timeout", "5s", "--metrics-address", f"127.0.0.1:{port}", interval=1)
    time.sleep(2)
    base = statistics.median(rss_readings(a.pid, 3))
    deadline = time.monotonic() + (240 if quick else 900)
    full_at = None
    while time.monotonic() < deadline:
        time.sleep(1)
        text = metrics_text(port)
        if metric_value(text, 'ignis_profiles_dropped_total{reason="queue_full"}'):
            full_at = time.monotonic()
            break
    queue = metric_value(text, "ignis_upload_queue_bytes")
    at_full = rss_readings(a.pid, 3)
    time.sleep(hold - 6)
    later = rss_readings(a.pid, 3)
    rss_full, rss_later = statistics.median(at_full), statistics.median(later)
    spread = max(max(at_full) - min(at_full), max(later) - min(later)) / 1024
    text = metrics_text(port)
    queue_after = metric_value(text, "ignis_upload_queue_bytes")
    dropped = metric_value(text, 'ignis_profiles_dropped_total{reason="queue_full"}')
    a.kill()	# its profiles are not read
    rx.stop()
    for load in loads:
        load.kill()
        load.wait()
    subprocess.run(["pkill", "-f", "manyprocs"], capture_output=True)
    shutil.rmtree(bindir, ignore_errors=True)
    cmd = (f"ignis --interval 1 --queue-max-bytes {limit_mib}MiB, server never answers, "
           f"64 services of {per_service} process(es)")
    if full_at is None:
        log("upload: the queue did not reach its limit in time")
        return
    res.add("upload_queue_bytes_full", f"queue bytes at the limit ({limit_mib} MiB)", "MiB",
            [queue / 1048576, queue_after / 1048576], cmd + "; ignis_upload_queue_bytes")
    res.add("upload_rss_growth_fill", f"agent RSS growth while the queue fills ({limit_mib} MiB)",
            "MiB", [(rss_full - base) / 1024],
            cmd + "; VmRSS at the first queue_full drop minus VmRSS 2 s after start, each "
            "the median of 30 readings over 3 s (1 s windows)")
    res.add("upload_rss_growth_full", f"agent RSS growth in {hold} s with the queue full", "MiB",
            [(rss_later - rss_full) / 1024],
            cmd + f"; VmRSS over the last 3 s of the {hold} s after the first queue_full drop "
            f"minus VmRSS over the first 3 s, each the median of 30 readings 0.1 s apart "
            f"(readings moved up to {spread:.1f} MiB within 3 s; "
            f"{dropped:.0f} profiles dropped by then; profiles arrived at "
            f"{queue / 1048576 / (full_at - started):.2f} MiB/s while it filled, "
            f"{queue / 1048576 / (full_at - started) * hold:.1f} MiB in {hold} s)",
            target="<= 1 MiB (bounded)")
    log(f"upload: queue at limit {queue / 1048576:.1f} MiB, RSS +{(rss_full - base) / 1024:.1f}"
        f" MiB while filling, +{(rss_later - rss_full) / 1024:.1f} MiB in {hold} s at the limit"
        f" (readings moved up to {spread:.1f} MiB within 3 s)")


# ---- 6: symbolization against eu-addr2line and addr2line -------------------------------------

def big_dwarf_binary(folder, functions):
    """A generated C program of `functions` functions, each with two inlined helpers, built
    -O2 -g: a large binary with DWARF and inline scopes."""
    src = os.path.join(folder, "big.c")
    with open(src, "w") as f:
        f.write("#define INLINE static inline __attribute__((always_inline))\n"
                "volatile unsigned long sink;\n")
        for i in range(functions):
            f.write(f"INLINE unsigned long mix{i}(unsigned long x) "
                    f"{{ for (int k = 0; k < {3 + i % 5}; k++) x = x * {2 * i + 3}UL + k; "
                    f"return x; }}\n"
                    f"INLINE unsigned long step{i}(unsigned long x) "
                    f"{{ return mix{i}(x ^ {i}UL) + (x >> {1 + i % 7}); }}\n"
                    f"__attribute__((noinline)) unsigned long fn{i}(unsigned long x) "
                    f"{{ sink += step{i}(x); return step{i}(x + sink); }}\n")
        f.write("int main(int argc, char **argv) { (void)argv; unsigned long x = argc;\n")
        for i in range(functions):
            f.write(f"  x += fn{i}(x);\n")
        f.write("  return (int)(x & 1); }\n")
    binary = os.path.join(folder, "big")
    subprocess.run(["gcc", "-O2", "-g", "-o", binary, src], check=True)
    return binary


def symbolization(res, quick):
    """The same addresses resolved by ignis's symbolizer (cold: tables and DWARF indexes
    built on the way; warm: again), eu-addr2line -f -i and addr2line -f -i."""
    import random
    folder = tempfile.mkdtemp(dir=TMP)
    functions = 1000 if quick else 4000
    count = 20000 if quick else 100000
    binary = big_dwarf_binary(folder, functions)
    size_mib = os.path.getsize(binary) / 1048576
    ranges = []
    for line in subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True,
                               text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in ("T", "t") and int(parts[1], 16) > 1:
            ranges.append((int(parts[0], 16), int(parts[1], 16)))
    rng = random.Random(1)
    addrs = [hex(start + rng.randrange(size)) for start, size in
             (rng.choice(ranges) for _ in range(count))]
    path = os.path.join(folder, "addresses")
    with open(path, "w") as f:
        f.write("\n".join(addrs) + "\n")
    # eu-addr2line -i takes milliseconds per address here (it walks the CU's scopes for
    # each): it gets the first of them only, and its time per address is compared.
    eu_count = min(count, 1000 if quick else 2000)
    eu_path = os.path.join(folder, "addresses-eu")
    with open(eu_path, "w") as f:
        f.write("\n".join(addrs[:eu_count]) + "\n")
    reps = 1 if quick else 3
    ignis_cold, ignis_warm, eu, bu = [], [], [], []
    for _ in range(reps):
        out = subprocess.run([os.path.join(BENCH, "sym_bench"), binary, path],
                             capture_output=True, text=True, check=True).stdout
        r = json.loads(out)
        ignis_cold.append(r["cold_ns"] / 1000)
        ignis_warm.append(r["warm_ns"] / 1000)
        for tool, sink, p, n in (("eu-addr2line", eu, eu_path, eu_count),
                                 ("addr2line", bu, path, count)):
            with open(p) as f:
                t0 = time.monotonic()
                subprocess.run([tool, "-f", "-i", "-e", binary], stdin=f,
                               stdout=subprocess.DEVNULL, check=True)
                sink.append((time.monotonic() - t0) * 1e6 / n)
    what = f"{count} addresses in a {size_mib:.1f} MiB -O2 -g binary ({functions} functions)"
    res.add("sym_us_ignis_cold", f"ignis, cold, per address ({what})", "us", ignis_cold,
            "build/tests/bench/sym_bench BINARY ADDRESSES")
    res.add("sym_us_ignis_warm", "ignis, warm (resolved before), per address", "us", ignis_warm,
            "build/tests/bench/sym_bench BINARY ADDRESSES (second pass)")
    res.add("sym_us_eu_addr2line", f"eu-addr2line -f -i, per address (first {eu_count})",
            "us", eu, "eu-addr2line -f -i -e BINARY < ADDRESSES")
    res.add("sym_us_addr2line", "addr2line -f -i (binutils), per address", "us", bu,
            "addr2line -f -i -e BINARY < ADDRESSES")
    res.add("sym_ratio_warm", "eu-addr2line / ignis warm", "ratio",
            [e / w for e, w in zip(eu, ignis_warm)], "", target=">= 10")
    res.add("sym_ratio_cold", "ignis cold / eu-addr2line", "ratio",
            [c / e for c, e in zip(ignis_cold, eu)], "", target="<= 2")
    res.add("sym_ratio_cold_binutils", "ignis cold / addr2line", "ratio",
            [c / b for c, b in zip(ignis_cold, bu)], "")
    res.add("sym_named", "addresses named by ignis / with inline frames", "%",
            [100 * r["named"] / count], f"{r['named']} named, {r['with_inline']} with inline "
            f"frames, {r['with_line']} with a line")
    log(f"symbolization: ignis cold {statistics.median(ignis_cold):.2f} us, warm "
        f"{statistics.median(ignis_warm):.3f} us; eu-addr2line {statistics.median(eu):.2f} us; "
        f"addr2line {statistics.median(bu):.2f} us per address")


# ---- 7: the table unwinder (issue 8) ---------------------------------------------------------

UNWIND_DEPTHS = (10, 30)
# unwind_deep's own functions: a sample is whole when it holds all DEPTH frames of them.
UNWIND_FRAMES = {"spin", "descend", "worker"}
ROW_BYTES = 8	# struct ignis_unwind_row (bpf/profiler.h)
ROW_MAP_DEFAULT = 8 << 20	# --unwind-table-size's default
UNWIND_DUMP = os.path.join(BUILD, "tests", "unwind_dump")
UNWIND_MANY = os.path.join(BENCH, "unwind_many")


def unwind_deep(build, depth, wait=False):
    """argv of unwind_deep (rounds -> argv) on NCPU threads, built without ("nofp") or with
    ("fp") frame pointers."""
    path = os.path.join(BENCH, f"unwind_deep_{build}")
    return lambda rounds: [path, str(depth), str(rounds), str(NCPU)] + (["wait"] if wait else [])


def agent_maps(pid):
    """{name: bpftool's record} of the BPF maps a process holds."""
    owned = fdinfo(pid)["map_id"]
    out = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True, text=True)
    return {m.get("name"): m for m in json.loads(out.stdout or "[]") if m["id"] in owned}


def unwind_published(pid):
    """The tgids an agent's table unwinder has published (the keys of its unwind_procs)."""
    m = agent_maps(pid).get("unwind_procs")
    if not m:
        return set()
    out = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(m["id"])],
                         capture_output=True, text=True).stdout
    return {int.from_bytes(bytes(int(b, 16) for b in e["key"]), "little")
            for e in json.loads(out or "[]")}


def wait_published(agent_pid, pids, timeout):
    """Seconds until the agent has published every pid's tables, or None at the timeout."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if set(pids) <= unwind_published(agent_pid):
            return time.monotonic() - t0
        time.sleep(0.05)
    return None


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def proc_cpu_ns(pid):
    """CPU time of a process's live threads, ns (schedstat: finer than /proc/PID/stat's
    clock ticks, which round a quiet profiler's few milliseconds to 0)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, IndexError, ValueError):
            pass
    return total


def bpf_map_rss_kib(pid):
    """Resident KiB of the BPF maps a process has mmap'ed (anon_inode:bpf-map in smaps):
    kernel memory that VmRSS counts (as RssFile) on top of the maps' memlock."""
    total, in_map = 0, False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                in_map = line.rstrip().endswith("anon_inode:bpf-map")
            elif in_map and line.startswith("Rss:"):
                total += int(line.split()[1])
    return total


def after_window(agent, port):
    """(metrics text, prog_runs) read just after the agent published a window: the metrics'
    sample counters then cover what BPF counted up to that window's flip, give or take the
    window's handling time, the same at both ends of an interval."""
    seen = metric_value(metrics_text(port), "ignis_windows_total")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = metrics_text(port)
        if metric_value(text, "ignis_windows_total") != seen:
            return text, prog_runs(agent.pid)
        time.sleep(0.01)
    raise RuntimeError("ignis published no window in 30 s")


def prog_runs(pid):
    """{program name: (run_cnt, run_time_ns)} of the BPF programs a process holds."""
    owned = fdinfo(pid)["prog_id"]
    return {p["name"]: (p.get("run_cnt", 0), p.get("run_time_ns", 0)) for p in bpf_progs()
            if p["id"] in owned}


def sample_cost(before, after):
    """(ns per sample of ignis_sample, its runs, ignis_unwind's own runs) between two
    prog_runs() readings. bpf_tail_call() jumps within the invocation of the program that
    perf_event ran, and the kernel's stats are taken around that invocation only: the
    unwinder's time is in ignis_sample's run_time_ns and ignis_unwind counts no runs. Were
    it ever to count some, its time is added to ignis_sample's."""
    d = lambda name, i: after.get(name, (0, 0))[i] - before.get(name, (0, 0))[i]
    runs = d("ignis_sample", 0)
    if not runs:
        return None, 0, d("ignis_unwind", 0)
    return (d("ignis_sample", 1) + d("ignis_unwind", 1)) / runs, runs, d("ignis_unwind", 0)


def depth_check(stacks, depth):
    """Samples with all `depth` of unwind_deep's frames (%), median frames per sample, and
    samples ending in [truncated] (%)."""
    total = sum(stacks.values())
    if not total:
        return None, None, None
    whole = sum(n for fr, n in stacks.items() if sum(f in UNWIND_FRAMES for f in fr) >= depth)
    cut = sum(n for fr, n in stacks.items() if fr and fr[-1] == "[truncated]")
    lengths = [len(fr) for fr, n in stacks.items() for _ in range(n)]
    return 100.0 * whole / total, statistics.median(lengths), 100.0 * cut / total


def stop_cpu_s(prof, timeout=120):
    """Stop a profiler (SIGINT) and return the CPU time of its whole life, every thread
    (wait4)."""
    prof.proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(prof.proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            prof.proc.kill()
            pid, status, ru = os.wait4(prof.proc.pid, 0)
            break
        time.sleep(0.05)
    prof.proc.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_utime + ru.ru_stime


def unwind_bpf_cost(res, quick):
    """ns per sample of the sampler program, the same deep recursion unwound with the tables
    (built without frame pointers) and with frame pointers (built with them), one agent and
    one workload at a time, the order alternating; and whether the stacks were whole.

    The agent profiles the workload only (--pid): other processes' samples stop at the pid
    filter. Their cost, measured meanwhile by a second agent that filters every sample out,
    is taken from the total before it is divided by the workload's samples, so that other
    processes on this shared machine neither dilute nor inflate the figure. Without that
    subtraction the figure is an upper bound, kept in results.json ("upper_ns")."""
    reps = 1 if quick else 3
    seconds = 2 if quick else 8
    # QUICK: the depth of the target (30 frames) only.
    depths = UNWIND_DEPTHS[-1:] if quick else UNWIND_DEPTHS
    cost = {m: {d: [] for d in UNWIND_DEPTHS} for m in ("dwarf", "fp")}
    whole = {m: {d: [] for d in UNWIND_DEPTHS} for m in ("dwarf", "fp")}
    share = {d: [] for d in UNWIND_DEPTHS}
    details, tail_runs = [], 0
    with bpf_stats():
        # Filters out every sample: the one process it profiles sleeps.
        sleeper = spawn(["sleep", "3600"])
        floor = Ignis(100, "--unwind", "fp", "--pid", str(sleeper.pid), interval=60)
        for depth in depths:
            for rep in range(reps):
                modes = [("dwarf", "nofp"), ("fp", "fp")]
                if rep % 2:
                    modes.reverse()
                for mode, build in modes:
                    w = spawn(unwind_deep(build, depth)(0), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
                    port = free_port()
                    t0 = time.monotonic()
                    a = Ignis(100, "--unwind", mode, "--pid", str(w.pid), "--metrics-address",
                              f"127.0.0.1:{port}", interval=1)
                    publish = None
                    if mode == "dwarf":
                        if wait_published(a.pid, [w.pid], 60) is None:
                            log(f"unwind: pid {w.pid} not published in 60 s")
                        else:
                            publish = time.monotonic() - t0
                    since = time.time_ns()
                    after_window(a, port)	# the first window symbolizes the workload
                    m0, r0 = after_window(a, port)
                    f0 = prog_runs(floor.pid)
                    time.sleep(seconds)
                    m1, r1 = after_window(a, port)
                    f1 = prog_runs(floor.pid)
                    a.stop()
                    w.stdin.close()
                    w.stdout.read()
                    w.wait()
                    d = lambda name: metric_value(m1, name) - metric_value(m0, name)
                    all_samples = d("ignis_samples_total")
                    mine = (all_samples - d("ignis_samples_idle_total") -
                            d("ignis_samples_filtered_total"))
                    ns, runs, own = sample_cost(r0, r1)
                    tail_runs += own
                    filtered_ns = sample_cost(f0, f1)[0] or 0
                    upper = ns * runs / mine if ns and mine else None
                    ns = (ns * runs - (runs - mine) * filtered_ns) / mine if upper else None
                    stacks = a.stacks(w.pid, since)
                    pct, frames, cut = depth_check(stacks, depth)
                    cost[mode][depth].append(ns)
                    whole[mode][depth].append(pct)
                    if mode == "dwarf" and all_samples:
                        share[depth].append(100.0 * mine / all_samples)
                    details.append({"depth": depth, "unwind": mode, "ns": ns, "upper_ns": upper,
                                    "filtered_ns": filtered_ns, "runs": runs,
                                    "samples": all_samples, "workload_samples": mine,
                                    "whole_pct": pct, "median_frames": frames,
                                    "truncated_pct": cut, "ignis_unwind_runs": own,
                                    "published_after_start_s": publish})
                    log(f"  unwind {mode} {depth} frames: {ns / 1000 if ns else 0:.2f} us per "
                        f"sample (<= {upper / 1000 if upper else 0:.2f}; {mine:.0f} of "
                        f"{all_samples:.0f} samples, {runs} runs, filtered ones "
                        f"{filtered_ns / 1000:.2f} us), "
                        f"{pct if pct is not None else 0:.1f} % whole, median {frames} frames, "
                        f"{cut if cut is not None else 0:.1f} % truncated")
        floor.kill()	# its profiles are not read
        sleeper.kill()
        sleeper.wait()
    res.data.setdefault("unwind", {})["bpf_runs"] = details
    cmd = ("kernel.bpf_stats_enabled=1: ignis_sample's run_time_ns over the workload's "
           f"samples, {seconds} s from the second window after its tables were published, "
           f"{reps} repetition(s); "
           f"unwind_deep DEPTH 0 {NCPU} (every CPU busy) under `ignis --pid` (other processes' "
           "samples stop at the filter, their time subtracted at the cost per filtered sample "
           "that a second agent filtering everything measured meanwhile), one agent and one "
           "workload at a time")
    tail = (f"ignis_unwind counted {tail_runs} runs of its own (tail calls run inside "
            "ignis_sample's invocation and are timed with it)")
    us = lambda v: [x / 1000 for x in v if x]
    for depth in depths:
        res.add(f"unwind_bpf_us_tables_{depth}", f"BPF cost per sample, {depth}-frame stacks, "
                "unwind tables (--unwind dwarf, no frame pointers)", "us",
                us(cost["dwarf"][depth]), cmd, note=tail,
                target="<= 10 us (issue 8)" if depth == 30 else None)
        res.add(f"unwind_bpf_us_fp_{depth}", f"BPF cost per sample, {depth}-frame stacks, "
                "frame pointers (--unwind fp)", "us", us(cost["fp"][depth]), cmd)
        res.add(f"unwind_bpf_ratio_{depth}", f"BPF cost ratio tables / frame pointers, "
                f"{depth} frames", "ratio", [a / b for a, b in
                                             zip(cost["dwarf"][depth], cost["fp"][depth])
                                             if a and b], "same repetitions")
        res.add(f"unwind_whole_tables_{depth}", f"workload samples with all {depth} frames, "
                "unwind tables", "%", whole["dwarf"][depth],
                "spin <- descend x (DEPTH - 2) <- worker in the agent's pprof, windows after "
                "the tables were published", target=">= 99 %")
        res.add(f"unwind_whole_fp_{depth}", f"workload samples with all {depth} frames, "
                "frame pointers", "%", whole["fp"][depth], "as above")
        res.add(f"unwind_share_{depth}", f"workload's share of the samples timed, "
                f"{depth} frames, tables", "%", share[depth],
                "(samples - idle - filtered) / samples, ignis's metrics over the same windows")


def big_cxx_binary():
    """A large C++ ELF from a package `make deps` installs (libllvm14 comes with clang)."""
    for path in ("/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1", "/usr/bin/gdb"):
        if os.path.exists(path):
            return path
    cc1plus = sorted(glob.glob("/usr/lib/gcc/x86_64-linux-gnu/*/cc1plus"), key=os.path.getsize)
    return cc1plus[-1] if cc1plus else None


def unwind_tables(res, quick):
    """Table build time and size for libc, liblzma and a large C++ library (unwind_dump:
    the symbolizer's table builder alone, a fresh process each run, the files in the page
    cache after the first)."""
    reps = 1 if quick else 5
    objects = [("libc", "/lib/x86_64-linux-gnu/libc.so.6"),
               ("liblzma", "/lib/x86_64-linux-gnu/liblzma.so.5"), ("cxx", big_cxx_binary())]
    objects = [(k, p) for k, p in objects if p and os.path.exists(p)]
    runs = {k: [] for k, _ in objects}
    for _ in range(reps):
        out = subprocess.run([UNWIND_DUMP] + [p for _, p in objects], capture_output=True,
                             text=True).stdout
        for (key, path), line in zip(objects, out.splitlines()):
            fields = dict(kv.split("=", 1) for kv in line.split(": ", 1)[1].split() if "=" in kv)
            if "rows" not in fields:
                log(f"unwind: {line}")
                continue
            runs[key].append(fields)
    capacity = ROW_MAP_DEFAULT // ROW_BYTES
    for key, path in objects:
        if not runs[key]:
            continue
        f = runs[key][0]
        rows, cfi = int(f["rows"]), int(f["cfi_bytes"])
        name = os.path.basename(path)
        cmd = (f"build/tests/unwind_dump {path}: {f['fdes']} FDEs, {f['unsupported']} rows "
               f"the unwinder does not follow, from {f['source']}")
        res.add(f"unwind_rows_{key}", f"unwind table of {name}: rows", "rows", [rows], cmd)
        res.add(f"unwind_map_kib_{key}", f"  bytes in the BPF map (rows x {ROW_BYTES})", "KiB",
                [rows * ROW_BYTES / 1024], cmd)
        res.add(f"unwind_cfi_kib_{key}", f"  .eh_frame it came from", "KiB", [cfi / 1024], cmd)
        res.add(f"unwind_build_ms_{key}", f"  build time", "ms",
                [float(r["build_ms"]) for r in runs[key]], cmd + f", {reps} runs")
        res.add(f"unwind_capacity_{key}", f"  share of the default row map "
                f"({ROW_MAP_DEFAULT >> 20} MiB, {capacity} rows)", "%",
                [100.0 * rows / capacity], cmd)
        ms = statistics.median(float(r["build_ms"]) for r in runs[key])
        log(f"unwind table {name}: {rows} rows, {rows * ROW_BYTES / 1024:.0f} KiB from "
            f"{cfi / 1024:.0f} KiB of CFI in {ms:.1f} ms")


def pids_seen(agent, seen, read):
    """Add to seen the pids with samples in the agent's profiles not read before."""
    for f in sorted(os.listdir(agent.out)):
        if not f.endswith(".pb.gz") or f in read:
            continue
        read.add(f)
        p = subprocess.run([os.path.join(BUILD, "tests", "pprof_dump"),
                            os.path.join(agent.out, f)], capture_output=True, text=True)
        seen.update(s["labels"].get("pid") for s in json.loads(p.stdout)["samples"])


def unwind_memory(res, quick):
    """The agent's memory with the tables of many distinct binaries: UNWIND_MANY_N programs
    (each its own build ID, no frame pointers) burn 30 ms each, then sleep, under an agent
    with the table unwinder and one without, side by side."""
    interval = 1 if quick else 5
    programs = sorted(os.listdir(UNWIND_MANY), key=lambda n: int(n.rsplit("_", 1)[1]))
    if quick:
        programs = programs[:50]	# a quarter: the figures' titles say how many
    port = free_port()
    dwarf = Ignis(100, "--unwind", "dwarf", "--metrics-address", f"127.0.0.1:{port}",
                  interval=interval)
    port_fp = free_port()
    fp = Ignis(100, "--unwind", "fp", "--metrics-address", f"127.0.0.1:{port_fp}",
               interval=interval)
    time.sleep(interval + 1)	# past both agents' start-up and first window
    base = {a: proc_status(a.pid, "VmRSS") for a in (dwarf, fp)}
    before = metrics_text(port)
    procs = [spawn([os.path.join(UNWIND_MANY, n), "30", "900"]) for n in programs]
    pids = {p.pid for p in procs}
    t0 = time.monotonic()
    deadline = t0 + (60 if quick else 120)
    seen, read, pokes, poked = set(), set(), 0, t0
    while True:
        time.sleep(0.5)
        pids_seen(fp, seen, read)
        missing = (pids - unwind_published(dwarf.pid)) | (pids - seen)
        if not missing or time.monotonic() > deadline:
            break
        if time.monotonic() - poked > interval + 3:	# not sampled: burn again
            for p in procs:
                if p.pid in missing:
                    p.send_signal(signal.SIGUSR1)
                    pokes += 1
            poked = time.monotonic()
    onboard = time.monotonic() - t0
    time.sleep(interval + 1)	# a window with them all, symbolized by both agents
    published = len(pids & unwind_published(dwarf.pid))
    pids_seen(fp, seen, read)
    rss = {a: proc_status(a.pid, "VmRSS") for a in (dwarf, fp)}
    hwm = {a: proc_status(a.pid, "VmHWM") for a in (dwarf, fp)}
    parts = {a: {k: proc_status(a.pid, k) for k in ("RssAnon", "RssFile", "RssShmem")}
             for a in (dwarf, fp)}
    mapped = {a: bpf_map_rss_kib(a.pid) for a in (dwarf, fp)}
    after, after_fp = metrics_text(port), metrics_text(port_fp)
    maps = agent_maps(dwarf.pid)
    memlock = {a: map_memlock(a.pid) for a in (dwarf, fp)}
    for p in procs:
        p.kill()
        p.wait()
    dwarf.kill()	# its profiles are not read
    fp.kill()
    m = lambda text, name: metric_value(text, name) or 0
    n = len(programs)
    cmd = (f"{n} programs (unwind_many_N, -DVARIANT=N, -fomit-frame-pointer) burning 30 ms "
           f"then sleeping, under `ignis --unwind dwarf` and `ignis --unwind fp` at once "
           f"(--interval {interval}), read a window after all were taken on "
           f"({onboard:.1f} s, {pokes} bursts asked again)")
    mib = lambda kib: kib / 1024
    res.data.setdefault("unwind", {})["programs"] = n
    res.add("unwind_many_published", f"of {n} distinct programs, published with tables",
            "programs", [published], cmd + f"; {len(pids & seen)} seen by the fp agent",
            target=f"= {n}")
    split = lambda a: (f"VmRSS = RssAnon {mib(parts[a]['RssAnon']):.1f} + RssFile "
                       f"{mib(parts[a]['RssFile']):.1f} + RssShmem {mib(parts[a]['RssShmem']):.1f}"
                       f" MiB, of which BPF maps mmap'ed {mib(mapped[a]):.1f} MiB; VmHWM "
                       f"{mib(hwm[a]):.1f} MiB")
    res.add("unwind_many_rss_dwarf", f"agent RSS with {n} more binaries, --unwind dwarf",
            "MiB", [mib(rss[dwarf])], cmd + f" ({split(dwarf)})")
    res.add("unwind_many_rss_fp", f"agent RSS with {n} more binaries, --unwind fp", "MiB",
            [mib(rss[fp])], cmd + f" ({split(fp)})")
    res.add("unwind_many_rss_delta", "  RSS, dwarf - fp", "MiB", [mib(rss[dwarf] - rss[fp])],
            cmd)
    res.add("unwind_many_own_dwarf", "  RSS without the mmap'ed BPF maps, dwarf", "MiB",
            [mib(rss[dwarf] - mapped[dwarf])], cmd + "; VmRSS minus the Rss of its "
            "anon_inode:bpf-map mappings (smaps): the unwinder maps the row map read-only, "
            "kernel memory counted with the maps below")
    res.add("unwind_many_own_fp", "  RSS without the mmap'ed BPF maps, fp", "MiB",
            [mib(rss[fp] - mapped[fp])], cmd + "; as above")
    res.add("unwind_many_own_delta", "  RSS without the mmap'ed BPF maps, dwarf - fp", "MiB",
            [mib(rss[dwarf] - mapped[dwarf] - rss[fp] + mapped[fp])], cmd)
    res.add("unwind_many_rss_growth_dwarf", f"  RSS growth while the {n} start, dwarf", "MiB",
            [mib(rss[dwarf] - base[dwarf])], cmd + "; VmRSS minus VmRSS before they started")
    res.add("unwind_many_rss_growth_fp", f"  RSS growth while the {n} start, fp", "MiB",
            [mib(rss[fp] - base[fp])], cmd + "; as above")
    res.add("unwind_many_tables", "unwind tables in BPF (ignis_unwind_tables)", "tables",
            [m(after, "ignis_unwind_tables")], cmd + f"; {m(before, 'ignis_unwind_tables'):.0f} "
            f"before the programs started (this host's other processes)")
    res.add("unwind_many_rows", "  rows (ignis_unwind_table_rows)", "rows",
            [m(after, "ignis_unwind_table_rows")],
            cmd + f"; {m(before, 'ignis_unwind_table_rows'):.0f} before, capacity "
            f"{m(after, 'ignis_unwind_table_rows_capacity'):.0f}, "
            f"{m(after, 'ignis_unwind_tables_evicted_total'):.0f} tables evicted, "
            f"{m(after, 'ignis_unwind_table_errors_total'):.0f} without a table, "
            f"{m(after, 'ignis_unwind_table_build_seconds_total'):.2f} s building")
    res.add("unwind_many_processes", "  processes unwound with tables (ignis_unwind_processes)",
            "processes", [m(after, "ignis_unwind_processes")], cmd)
    res.add("unwind_many_map_mib_dwarf", "BPF map memory, --unwind dwarf (ignis_bpf_map_bytes)",
            "MiB", [m(after, "ignis_bpf_map_bytes") / 1048576],
            cmd + f"; memlock of the maps it holds (fdinfo): {memlock[dwarf] / 1048576:.1f} MiB")
    res.add("unwind_many_map_mib_fp", "BPF map memory, --unwind fp", "MiB",
            [m(after_fp, "ignis_bpf_map_bytes") / 1048576],
            cmd + f"; memlock of the maps it holds (fdinfo): {memlock[fp] / 1048576:.1f} MiB")
    rows = maps.get("unwind_rows", {})
    if rows.get("max_entries"):
        info = (f"unwind_rows: value {rows.get('bytes_value')} bytes, {rows['max_entries']} "
                f"entries, {rows.get('bytes_memlock')} bytes memlock (bpftool map show)")
        res.add("unwind_row_bytes", "bytes per row in the BPF map (value size)", "bytes",
                [rows.get("bytes_value")], info, target="<= 16")
        res.add("unwind_row_bytes_kernel", "kernel bytes per row (memlock / entries)", "bytes",
                [round(rows.get("bytes_memlock", 0) / rows["max_entries"], 2)], info,
                target="<= 16",
                note="an array map stores each value rounded up to 8 bytes")
    log(f"unwind {n} binaries: {published} published, RSS dwarf {mib(rss[dwarf]):.1f} MiB, "
        f"fp {mib(rss[fp]):.1f} MiB; {m(after, 'ignis_unwind_tables'):.0f} tables, "
        f"{m(after, 'ignis_unwind_table_rows'):.0f} rows")


def unwind_overhead(res, quick):
    """The 30-frame workload without frame pointers alone and under ignis --unwind dwarf or
    perf record --call-graph dwarf, interleaved pairs (as the overhead section), measured
    once the profiler has taken the workload on; and each profiler's own CPU meanwhile."""
    pairs = 1 if quick else 3
    seconds = 2 if quick else 6
    rounds = calibrate(seconds, unwind_deep("nofp", 30), trial=2000)
    cmd = unwind_deep("nofp", 30, wait=True)
    # At the agent's default log level, as it runs: at debug its start-up logs every table
    # and symbol file, and the wait for those lines to stop made the first window (which the
    # stop symbolizes) twice as long on a host with churn (docs/performance.md, section 4).
    tools = {"ignis": (lambda: Ignis(100, "--unwind", "dwarf", interval=60, log_level=None),
                       "ignis --frequency 100 --unwind dwarf"),
             "perf": (lambda: Perf(100, "--call-graph", "dwarf"),
                      "perf record -F 100 -a --call-graph dwarf")}
    log(f"unwind overhead: unwind_deep 30 {rounds} x {NCPU} threads (~{seconds} s), "
        f"{pairs} pairs")
    found, waits = {}, []
    with bpf_stats():
        for name, (start, text) in tools.items():
            cpu, total, process_only = [], [], []

            def ready(prof, w):
                """Once the profiler has the workload (ignis: its tables published)."""
                if isinstance(prof, Ignis):
                    waits.append(wait_published(prof.pid, [w.pid], 60))
                else:
                    time.sleep(0.5)
                if prof:
                    prof.cpu0, prof.t0 = proc_cpu_ns(prof.pid), time.monotonic()
                    prof.bpf0 = prog_runs(prof.pid) if isinstance(prof, Ignis) else {}

            def observe(prof, w):
                end, elapsed = proc_cpu_ns(prof.pid), time.monotonic() - prof.t0
                used = (end - prof.cpu0) / 1e9
                process_only.append(100.0 * used / elapsed)
                if isinstance(prof, Ignis):
                    after = prog_runs(prof.pid)
                    used += sum(after[k][1] - prof.bpf0.get(k, (0, 0))[1] for k in after) / 1e9
                cpu.append(100.0 * used / elapsed)
                # wait4's rusage covers every thread of the whole life, schedstat the live
                # ones: the difference is what stopping cost.
                total.append(used + stop_cpu_s(prof) - end / 1e9)

            runs = paired_runs(pairs, start, lambda prof: Workload(
                rounds, cmd, ready=lambda w: ready(prof, w)), observe)
            wall, wcpu = slowdowns(runs)
            found[name] = {"throughput": [base.cpu / tool.cpu for base, tool in runs],
                           "total": total}
            what = (f"unwind_deep 30 (no frame pointers) alone vs under `{text}`, {pairs} "
                    "interleaved pairs, timed from when the profiler had it")
            res.add(f"unwind_ovh_wall_{name}", f"slowdown, wall time, {name} (dwarf call "
                    "graphs)", "%", wall, what)
            res.add(f"unwind_ovh_cpu_{name}", f"slowdown, workload CPU time, {name}", "%",
                    wcpu, what + "; getrusage of the measured rounds")
            how = ("agent process CPU (schedstat) + its BPF programs' run_time_ns (the process "
                   f"alone: {statistics.median(process_only):.2f} %)" if name == "ignis" else
                   "the perf process (schedstat; its in-kernel stack copies are charged to the "
                   "workload, see its slowdown)")
            res.add(f"unwind_ovh_prof_{name}", f"{name}'s own CPU while the workload runs",
                    "% of one core", cpu, f"{what}; {how}")
            res.add(f"unwind_ovh_total_{name}", f"{name}'s CPU for the run, stopping included",
                    "s", total, "as above, plus the CPU its exit took (ignis: the last "
                    "window; perf: finishing perf.data), wait4")
            log(f"  {name}: wall {statistics.median(wall):+.1f} %, cpu "
                f"{statistics.median(wcpu):+.1f} %, own CPU {statistics.median(cpu):.2f} %, "
                f"{statistics.median(total):.3f} s with stopping")
    res.add("unwind_ovh_ratio_cpu", "profiler CPU ratio ignis / perf, stopping included",
            "ratio", [a / b for a, b in zip(found["ignis"]["total"], found["perf"]["total"])
                      if b], "pair by pair", target="<= 1")
    res.add("unwind_ovh_ratio_throughput", "workload throughput ratio under ignis / under perf",
            "ratio", [a / b for a, b in zip(found["ignis"]["throughput"],
                                             found["perf"]["throughput"])],
            "rounds per CPU-second, each relative to its own run alone, pair by pair",
            target=">= 1")
    res.add("unwind_publish_s", "time from a new process's start to its tables in BPF",
            "s", [x for x in waits if x is not None], "unwind_deep started under a running "
            "host-wide `ignis --unwind dwarf`, until its tgid is in unwind_procs (bpftool map "
            f"dump); the tables queued before its own included; {waits.count(None)} not "
            "published within 60 s")


def unwind(res, quick):
    took = []
    for part in (unwind_tables, unwind_bpf_cost, unwind_memory, unwind_overhead):
        t0 = time.monotonic()
        part(res, quick)
        took.append(f"{part.__name__} {time.monotonic() - t0:.0f} s")
    log("unwind: " + ", ".join(took))


# ---- 8: Python frames (issue 14) -------------------------------------------------------------

PYTHON = "/usr/bin/python3.11"	# Debian's: static libpython, stripped, as users run it
PY_DEEP = os.path.join(HERE, "py_deep.py")
PY_MANY = os.path.join(HERE, "py_many.py")
PY_WORKLOADS = os.path.join(ROOT, "tests", "workloads", "python")
PY_FRAMES = {"<module>", "main", "descend", "spin"}	# py_deep.py's own


def python_bpf_cost(res, quick):
    """ns per sample of the sampler program for a Python process with a 30-deep Python
    stack (py_deep.py under Debian's python3.11: the table unwinder reaches the eval loop,
    the Python walker replaces it by the 30 Python frames, the native walk goes on) and for
    the native 30-frame stack of unwind_deep (no frame pointers, tables), both running at
    once, each under its own agent (--pid), in the same run: the ratio is the figure. The
    cost of the samples an agent filters out is subtracted as in the unwind section (a third
    agent that filters every sample measures it meanwhile)."""
    reps = 1 if quick else 3
    seconds = 3 if quick else 8
    depth = 30
    cost = {"python": [], "native": []}
    whole, details = [], []
    native_argv = [os.path.join(BENCH, "unwind_deep_nofp"), str(depth), "0", "1"]
    with bpf_stats():
        sleeper = spawn(["sleep", "3600"])
        floor = Ignis(100, "--pid", str(sleeper.pid), interval=60)
        for rep in range(reps):
            py = spawn([PYTHON, PY_DEEP, str(depth)], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
            nat = spawn(native_argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            sides = [("python", py), ("native", nat)]
            if rep % 2:
                sides.reverse()
            agents, ports = {}, {}
            for side, w in sides:
                ports[side] = free_port()
                agents[side] = Ignis(100, "--pid", str(w.pid), "--metrics-address",
                                     f"127.0.0.1:{ports[side]}", interval=1)
            for side, w in sides:
                if wait_published(agents[side].pid, [w.pid], 60) is None:
                    log(f"python bench: pid {w.pid} ({side}) not published in 60 s")
            deadline = time.monotonic() + 30
            while (metric_value(metrics_text(ports["python"]), "ignis_python_processes") or 0) < 1:
                if time.monotonic() > deadline:
                    log("python bench: py_deep.py not attached in 30 s")
                    break
                time.sleep(0.2)
            since = time.time_ns()
            for side, _ in sides:
                after_window(agents[side], ports[side])	# a window with the workload named
            m0 = {s: after_window(agents[s], ports[s]) for s, _ in sides}
            f0 = prog_runs(floor.pid)
            time.sleep(seconds)
            m1 = {s: after_window(agents[s], ports[s]) for s, _ in sides}
            f1 = prog_runs(floor.pid)
            filtered_ns = sample_cost(f0, f1)[0] or 0
            for side, w in sides:
                d = lambda name: (metric_value(m1[side][0], name) or 0) - \
                    (metric_value(m0[side][0], name) or 0)
                mine = (d("ignis_samples_total") - d("ignis_samples_idle_total") -
                        d("ignis_samples_filtered_total"))
                ns, runs, _ = sample_cost(m0[side][1], m1[side][1])
                own = (ns * runs - (runs - mine) * filtered_ns) / mine if ns and mine else None
                cost[side].append(own)
                entry = {"side": side, "ns": own, "runs": runs, "workload_samples": mine,
                         "filtered_ns": filtered_ns}
                if side == "python":
                    stacks = agents[side].stacks(w.pid, since)
                    total = sum(stacks.values())
                    full = sum(n for fr, n in stacks.items()
                               if sum(f in PY_FRAMES for f in fr) >= depth)
                    whole.append(100.0 * full / total if total else None)
                    entry.update(whole_pct=whole[-1], py_frames=d("ignis_python_frames_total"),
                                 py_samples=d("ignis_python_samples_total"))
                details.append(entry)
            for side, w in sides:
                agents[side].stop()
                w.stdin.close()
                w.stdout.read()
                w.wait()
            log(f"  python bpf: {cost['python'][-1] or 0:.0f} ns per sample with {depth} Python "
                f"frames, {cost['native'][-1] or 0:.0f} ns with {depth} native frames, "
                f"{whole[-1] or 0:.1f} % of the Python samples whole")
        floor.kill()	# its profiles are not read
        sleeper.kill()
        sleeper.wait()
    res.data.setdefault("python", {})["bpf_runs"] = details
    cmd = (f"kernel.bpf_stats_enabled=1: ignis_sample's run_time_ns over each workload's "
           f"samples for {seconds} s, py_deep.py {depth} ({PYTHON}) and unwind_deep_nofp "
           f"{depth} 0 1 running at once, each under its own `ignis --pid` (filtered samples' "
           "cost subtracted, as in the unwind section)")
    us = lambda v: [x / 1000 for x in v if x]
    res.add("py_bpf_us_30", "BPF cost per sample, 30 Python frames (Debian's python3.11)",
            "us", us(cost["python"]), cmd)
    res.add("py_bpf_us_native_30", "BPF cost per sample, 30 native frames (tables), same run",
            "us", us(cost["native"]), cmd)
    res.add("py_bpf_ratio_30", "BPF cost ratio, 30 Python frames / 30 native frames", "ratio",
            [a / b for a, b in zip(cost["python"], cost["native"]) if a and b], "same runs",
            target="<= 1.5 (issue 14)")
    res.add("py_whole_30", "Python samples with all 30 Python frames", "%", whole,
            "<module> <- main <- descend x 27 <- spin in the agent's pprof")


def flask_ready(port, proc, timeout=30):
    import urllib.request
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("flask_app.py exited")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("flask_app.py did not answer in 30 s")


def flask_rps(res, quick):
    """The workshop's Flask app (tests/workloads/python/flask_app.py, Debian's python3 and
    python3-flask) under loadgen.py's 4 client threads: requests per second alone and under
    ignis (defaults: Python frames on), in interleaved pairs; a second of load before each
    measured run warms the app."""
    pairs = 1 if quick else 4
    seconds = 5 if quick else 10
    app_py = os.path.join(PY_WORKLOADS, "flask_app.py")
    loadgen = os.path.join(PY_WORKLOADS, "loadgen.py")
    runs = []
    for i in range(pairs):
        order = ("base", "tool") if i % 2 == 0 else ("tool", "base")
        got = {}
        for which in order:
            prof = Ignis(100, interval=10) if which == "tool" else None
            port = free_port()
            app = spawn([PYTHON, app_py, str(port)])
            flask_ready(port, app)
            subprocess.run([PYTHON, loadgen, str(port), "1", "4"], capture_output=True)
            out = subprocess.run([PYTHON, loadgen, str(port), str(seconds), "4"],
                                 capture_output=True, text=True)
            app.kill()
            app.wait()
            if prof:
                prof.kill()	# its profiles are not read
            got[which] = json.loads(out.stdout.strip().splitlines()[-1])
        runs.append((got["base"], got["tool"]))
        log(f"  flask: {got['base']['rps']:.0f} requests/s alone, {got['tool']['rps']:.0f} "
            "under ignis")
    cmd = (f"loadgen.py PORT {seconds} 4 against flask_app.py ({PYTHON}), alone vs under "
           f"`ignis`, {pairs} interleaved pairs")
    res.add("py_flask_rps_base", "Flask app, requests per second alone", "req/s",
            [b["rps"] for b, _ in runs], cmd)
    res.add("py_flask_rps_ignis", "Flask app, requests per second under ignis", "req/s",
            [t["rps"] for _, t in runs], cmd)
    res.add("py_flask_rps_loss", "Flask app, fewer requests per second under ignis", "%",
            [100.0 * (1 - t["rps"] / b["rps"]) for b, t in runs], cmd + "; pair by pair",
            target="<= 1 % (issue 14)")


def python_memory(res, quick):
    """The agent's memory per Python process: N py_many.py processes (200 functions each,
    Debian's python3.11) start under two agents at once, one with Python frames and one
    with --no-python; each agent's RSS growth from before they started to a window after
    all were attached, the difference over N, and the code-object cache per process."""
    n = 10 if quick else 40
    interval = 2 if quick else 5
    functions = 200
    port, port_off = free_port(), free_port()
    on = Ignis(100, "--metrics-address", f"127.0.0.1:{port}", interval=interval)
    off = Ignis(100, "--no-python", "--metrics-address", f"127.0.0.1:{port_off}",
                interval=interval)
    time.sleep(interval + 1)
    base = {a: proc_status(a.pid, "VmRSS") for a in (on, off)}
    before = metrics_text(port)
    attached0 = metric_value(before, "ignis_python_processes") or 0
    life = 60 if quick else 120
    procs = [spawn([PYTHON, PY_MANY, str(functions), str(life)]) for _ in range(n)]
    t0 = time.monotonic()
    deadline = t0 + life / 2
    attached = 0
    while time.monotonic() < deadline:
        attached = (metric_value(metrics_text(port), "ignis_python_processes") or 0) - attached0
        if attached >= n:
            break
        time.sleep(0.5)
    onboard = time.monotonic() - t0
    time.sleep(3 * interval)	# a few rounds of every process's functions, and windows
    after = metrics_text(port)
    rss = {a: proc_status(a.pid, "VmRSS") for a in (on, off)}
    for p in procs:
        p.kill()
        p.wait()
    on.kill()	# its profiles are not read
    off.kill()
    grow = {a: (rss[a] - base[a]) / 1024 for a in (on, off)}
    read = 'ignis_python_code_reads_total{result="read"}'
    reads = (metric_value(after, read) or 0) - (metric_value(before, read) or 0)
    cache = ((metric_value(after, "ignis_python_code_cache_bytes") or 0) -
             (metric_value(before, "ignis_python_code_cache_bytes") or 0))
    cmd = (f"{n} py_many.py {functions} processes ({PYTHON}) under `ignis` and `ignis "
           f"--no-python` at once (--interval {interval}); {attached:.0f} attached after "
           f"{onboard:.1f} s; RSS read {3 * interval} s later")
    res.add("py_mem_kib_per_process", "agent memory per Python process (RSS growth, Python "
            "on - off, / N)", "KiB", [(grow[on] - grow[off]) * 1024 / n], cmd)
    res.add("py_mem_rss_growth_on", f"  RSS growth with {n} Python processes, Python on",
            "MiB", [grow[on]], cmd)
    res.add("py_mem_rss_growth_off", f"  RSS growth with {n} Python processes, --no-python",
            "MiB", [grow[off]], cmd)
    res.add("py_code_cache_kib_per_process", "code-object cache per Python process "
            "(ignis_python_code_cache_bytes / N)", "KiB", [cache / 1024 / n],
            cmd + f"; {reads:.0f} code objects read in all ({reads / n:.0f} per process)")


def python(res, quick):
    took = []
    for part in (python_bpf_cost, flask_rps, python_memory):
        t0 = time.monotonic()
        part(res, quick)
        took.append(f"{part.__name__} {time.monotonic() - t0:.0f} s")
    log("python: " + ", ".join(took))


# ---- 9: off-CPU time ----------------------------------------------------------------------

OFFCPU = os.path.join(BUILD, "tests", "workloads", "offcpu")


def pipe_ops():
    """`perf bench sched pipe`: two processes passing a message through pipes, each pass a
    context switch; operations per second."""
    loops = 200000
    out = subprocess.run(["perf", "bench", "sched", "pipe", "-l", str(loops)],
                         capture_output=True, text=True)
    m = re.search(r"(\d+) ops/sec", out.stdout)
    if not m:
        raise RuntimeError("perf bench sched pipe: " + out.stdout + out.stderr)
    return float(m.group(1))


def prog_run_ns(pid, name):
    owned = fdinfo(pid)["prog_id"]
    for p in bpf_progs():
        if p["id"] in owned and p["name"] == name and p.get("run_cnt"):
            return p["run_time_ns"] / p["run_cnt"], p["run_cnt"]
    return None, 0


def offcpu_throughput(res, quick):
    """The switch-heavy load under ignis without and with --off-cpu (defaults), and with
    a sample for every wait (--off-cpu-period 0 --off-cpu-max-rate 0), in rotating order;
    the BPF programs' cost per run in the same runs."""
    # QUICK: one rotation, one pipe run per agent (an agent's start, ~20 s on this shared
    # host, is most of the time).
    reps = 1 if quick else 5
    per_config = 1 if quick else 3	# pipe runs per agent, their median taken
    configs = {"cpu": [], "offcpu": ["--off-cpu"],
               "every": ["--off-cpu", "--off-cpu-period", "0", "--off-cpu-max-rate", "0"]}
    ops = {k: [] for k in configs}
    cost = {"switch": [], "sys_exit": [], "switch_every": [], "sys_exit_every": []}
    with bpf_stats():
        for rep in range(reps):
            names = list(configs)
            names = names[rep % 3:] + names[:rep % 3]
            for name in names:
                prof = Ignis(100, *configs[name], interval=10)
                runs = [pipe_ops() for _ in range(per_config)]
                ops[name].append(statistics.median(runs))
                if name != "cpu":
                    suffix = "" if name == "offcpu" else "_every"
                    ns, _ = prog_run_ns(prof.pid, "ignis_switch")
                    cost["switch" + suffix].append(ns)
                    ns, _ = prog_run_ns(prof.pid, "ignis_offcpu")
                    cost["sys_exit" + suffix].append(ns)
                prof.kill()	# its profiles are not read
            log(f"  off-CPU: pipe ops/s {ops['cpu'][-1]:.0f} (ignis), {ops['offcpu'][-1]:.0f} "
                f"(--off-cpu), {ops['every'][-1]:.0f} (every wait)")
    cmd = (f"`perf bench sched pipe -l 200000` (median of {per_config}) under `ignis`, "
           "`ignis --off-cpu` and `ignis --off-cpu --off-cpu-period 0 --off-cpu-max-rate 0`, "
           f"{reps} rotation(s)")
    res.add("offcpu_pipe_ops_cpu", "pipe ping-pong, ops/s under ignis (CPU only)", "ops/s",
            ops["cpu"], cmd)
    res.add("offcpu_pipe_ops_offcpu", "pipe ping-pong, ops/s under ignis --off-cpu", "ops/s",
            ops["offcpu"], cmd)
    res.add("offcpu_pipe_loss", "  throughput lost to --off-cpu (defaults)", "%",
            [100.0 * (1 - o / c) for c, o in zip(ops["cpu"], ops["offcpu"])],
            cmd + "; rotation by rotation", target="<= 1 % to be on by default (issue 15)")
    res.add("offcpu_pipe_loss_every", "  throughput lost recording every wait", "%",
            [100.0 * (1 - o / c) for c, o in zip(ops["cpu"], ops["every"])],
            cmd + "; rotation by rotation")
    res.add("offcpu_bpf_ns_switch", "BPF cost per context switch (sched_switch: switch-out "
            "and switch-in)", "ns", cost["switch"], cmd + "; run_time_ns / run_cnt",
            target="<= 300 ns when no sample is made")
    res.add("offcpu_bpf_ns_sys_exit", "BPF cost per system call exit (the walk's hook)", "ns",
            cost["sys_exit"], cmd + "; run_time_ns / run_cnt, walks included")
    res.add("offcpu_bpf_ns_switch_every", "  per switch, a sample for every wait", "ns",
            cost["switch_every"], cmd)
    res.add("offcpu_bpf_ns_sys_exit_every", "  per system call exit, a sample for every wait",
            "ns", cost["sys_exit_every"], cmd)


def offcpu_memory(res, quick):
    """The agent's memory with 10,000 sleeping threads (1 s sleeps), with --off-cpu: RSS and
    BPF map memory before and a few windows after they started."""
    n = 2000 if quick else 10000
    interval = 2 if quick else 5
    port = free_port()
    prof = Ignis(100, "--off-cpu", "--metrics-address", f"127.0.0.1:{port}",
                 interval=interval)
    time.sleep(interval + 1)
    rss0 = proc_status(prof.pid, "VmRSS")
    maps0 = metric_value(metrics_text(port), "ignis_bpf_map_bytes") or 0
    idle = spawn([OFFCPU, "idle", str(n), str(6 * interval + 10)])
    time.sleep(4 * interval)
    rss = proc_status(prof.pid, "VmRSS")
    text = metrics_text(port)
    maps = metric_value(text, "ignis_bpf_map_bytes") or 0
    samples = metric_value(text, "ignis_offcpu_samples_total") or 0
    idle.kill()
    idle.wait()
    prof.kill()	# its profiles are not read
    cmd = (f"`offcpu idle {n}` (threads sleeping 1 s at a time) under `ignis --off-cpu "
           f"--interval {interval}`; RSS {4 * interval} s after they started, "
           f"{samples:.0f} off-CPU samples by then")
    res.add("offcpu_rss", f"agent RSS with {n} sleeping threads", "MiB", [rss / 1024], cmd)
    res.add("offcpu_rss_growth", f"  its growth from before they started", "MiB",
            [(rss - rss0) / 1024], cmd)
    res.add("offcpu_maps_mib", "BPF map memory (memlock), --off-cpu", "MiB",
            [maps / 2**20], cmd + f"; {maps0 / 2**20:.1f} MiB before the threads")


def offcpu(res, quick):
    took = []
    for part in (offcpu_throughput, offcpu_memory):
        t0 = time.monotonic()
        part(res, quick)
        took.append(f"{part.__name__} {time.monotonic() - t0:.0f} s")
    log("offcpu: " + ", ".join(took))


# ---- 10: local analysis (ignis report / ignis diff over a day of windows) ---------------------

MKWINDOWS = os.path.join(BUILD, "tests", "mkwindows")


def measure(argv, cwd=None, timeout=900):
    """Run one child alone: (wall s, peak RSS MiB of that child, rc, stderr's first lines). Peak RSS
    comes from os.wait4's rusage, which covers this child only (its own children too)."""
    with tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err)
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                status = -1
                break
            time.sleep(0.02)
        wall = time.monotonic() - t0
        p.returncode = 0  # reaped here: keep Popen from waiting again
        err.seek(0)
        text = err.read().decode(errors="replace").strip()
    rc = os.waitstatus_to_exitcode(status) if status != -1 else "timeout"
    # The first lines say what went wrong (a usage text may follow them).
    first = " / ".join([line for line in text.splitlines() if line.strip()][:2])
    return wall, ru.ru_maxrss / 1024, rc, first[:300]


def local_report(res, quick):
    """`ignis report` over a day of windows of a busy host (8,640 files; QUICK: 720) made by
    mkwindows, beside `go tool pprof -top` over the same files; `report --format html` and
    `ignis diff` of the first half against the second. Until the command exists a failure is
    printed as "not available" with its stderr, and the section goes on."""
    # QUICK: two hours of windows (go tool pprof took 54 s over 1,440 files here).
    n = 720 if quick else 8640
    reps = 1 if quick else 3
    folder = os.path.join(TMP, "windows")
    os.makedirs(folder)
    # gzip level 1 rather than the agent's 6: the same profiles, 10 % larger files, made twice
    # as fast (zlib's deflate is most of mkwindows' time); inflating them costs the same.
    gen = [MKWINDOWS, "--dir", folder, "--windows", str(n), "--seed", "1", "--jobs", str(NCPU),
           "--gzip-level", "1"]
    t0 = time.monotonic()
    subprocess.run(gen, check=True, timeout=1800)
    gen_s = time.monotonic() - t0
    files = sorted(os.listdir(folder))
    size = sum(os.path.getsize(os.path.join(folder, f)) for f in files)
    res.add("report_gen_s", f"mkwindows: {n} window files ({NCPU} jobs, gzip -1)", "s", [gen_s],
            " ".join(gen))
    res.add("report_files_mib", f"  their size ({size / len(files) / 1024:.0f} KiB a file)",
            "MiB", [size / 2**20], f"du {folder}")
    log(f"report: {n} files, {size / 2**20:.0f} MiB, made in {gen_s:.1f} s")

    def figure(key, title, argv, cwd=None, target_s=None, target_mib=None, runs=reps):
        walls, rss, failure = [], [], None
        for _ in range(runs):
            wall, mib, rc, tail = measure(argv, cwd=cwd)
            if rc != 0:
                failure = f"exit {rc}: {tail}"
                break
            walls.append(wall)
            rss.append(mib)
        cmd = " ".join(argv if len(argv) < 12 else argv[:8] + [f"... ({len(argv) - 8} more)"])
        note = f"not available: {failure}" if failure else None
        res.add(f"{key}_s", title, "s", walls, cmd, target=target_s, note=note)
        res.add(f"{key}_rss_mib", "  peak RSS", "MiB", rss, cmd, target=target_mib, note=note)
        if failure:
            log(f"report: {title}: not available ({failure})")
            return None
        log(f"report: {title}: {statistics.median(walls):.2f} s, "
            f"{statistics.median(rss):.0f} MiB")
        return statistics.median(walls), statistics.median(rss)

    text = figure("report_text", f"ignis report --format text, {n} files", [
        IGNIS, "report", "--format", "text", folder], target_s="< 5 s", target_mib="< 200 MiB")
    figure("report_html", f"ignis report --format html, {n} files",
           [IGNIS, "report", "--format", "html", "-o", "/dev/null", folder])
    base, new = os.path.join(TMP, "base"), os.path.join(TMP, "new")
    for d, part in ((base, files[: n // 2]), (new, files[n // 2:])):
        os.makedirs(d)
        for f in part:
            os.link(os.path.join(folder, f), os.path.join(d, f))
    figure("report_diff", f"ignis diff, {n // 2} files against {n - n // 2}",
           [IGNIS, "diff", base, new])

    # go tool pprof merges every file named; relative names keep the argument list short.
    # Past ARG_MAX, a share of the files and its time scaled up (said in the figure's note).
    gopprof = shutil.which("go")
    if not gopprof:
        log("report: go tool pprof: not available (no go; Debian's golang-go)")
        return
    room = os.sysconf("SC_ARG_MAX") // 2
    used = files
    while sum(len(f) + 9 for f in used) > room:
        used = used[: len(used) // 2]
    scale = len(files) / len(used)
    go = figure("report_gopprof", f"go tool pprof -top, {len(used)} files" +
                (f" (time x{scale:g})" if scale > 1 else ""),
                [gopprof, "tool", "pprof", "-top", "-nodecount=20", "-symbolize=none"] + used,
                cwd=folder, runs=1)
    if go and scale > 1:
        f = res.data["figures"]["report_gopprof_s"]
        res.add("report_gopprof_s", f["title"], "s", [v * scale for v in f["values"]],
                f["command"], note=f"{len(used)} of {len(files)} files (ARG_MAX), time scaled")
    go_s = res.data["figures"]["report_gopprof_s"].get("median") if go else None
    note = None if go and text else "not available: a run above failed"
    res.add("report_ratio_gopprof", "ignis report time / go tool pprof time", "ratio",
            [text[0] / go_s] if note is None else [], "from the medians above", note=note)
    res.add("report_rss_ratio_gopprof", "ignis report peak RSS / go tool pprof's", "ratio",
            [text[1] / go[1]] if note is None else [], "from the medians above", note=note)


# ---- 10b: memory over a long run with process churn (memsoak; only when asked for) ----------

SOAK_SAMPLE_S = 30
SOAK_WARMUP_S = 600


def memsoak(res, minutes):
    """The agent at its defaults (no option but --output-dir) for `minutes` under process
    churn: manyprocs (200 processes of distinct stacks spinning, 50 exec/exit of /bin/true
    a second), started again every minute so that its 200 pids are new ones, beside a loop
    of short-lived processes (stormburn 5 and /bin/true every 100 ms, a python3.11 every
    2 s: the Python attach too). VmRSS and RssAnon every 30 s; their growth from the end of
    the warm-up (10 minutes, or a third of a shorter run) to the end, the target's figure;
    and the BPF maps' kernel memory (memlock, fdinfo)."""
    total = minutes * 60
    warmup = min(SOAK_WARMUP_S, total / 3)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    a = Ignis(None, interval=None, log_level=None)
    churn = spawn(["bash", "-c", 'while [ $SECONDS -lt "$1" ]; do "$2" 5 >/dev/null; '
                   '/bin/true; i=$((i + 1)); [ $((i % 20)) = 0 ] && "$3" -c "sum(range(10**5))"; '
                   'sleep 0.1; done', "churn", str(total), STORM_BURNER, PYTHON])
    samples, load = [], None
    t0 = time.monotonic()
    due = t0
    try:
        while True:
            now = time.monotonic()
            if load is None or load.poll() is not None:
                left = total - (now - t0)
                if left >= 5:
                    load = spawn([os.path.join(BENCH, "manyprocs"), "200",
                                  str(int(min(60, left))), "50"])
            if now >= due:
                if a.proc.poll() is not None:
                    raise RuntimeError("ignis exited during the soak:\n" + a.text()[-2000:])
                try:  # a reading the loaded host did not answer in time is left out
                    text = metrics_text(a.metrics_port)
                except OSError:
                    text = ""
                samples.append({"t": round(now - t0, 1), "rss_kib": proc_status(a.pid, "VmRSS"),
                                "anon_kib": proc_status(a.pid, "RssAnon"),
                                "maps_bytes": map_memlock(a.pid),
                                "symbol_cache_bytes":
                                    metric_value(text, "ignis_symbol_cache_bytes"),
                                "symbol_tables": metric_value(text, "ignis_symbol_tables")})
                cache = samples[-1]["symbol_cache_bytes"]
                log(f"memsoak {samples[-1]['t']:.0f} s: RSS {samples[-1]['rss_kib'] / 1024:.1f}"
                    f" MiB, RssAnon {samples[-1]['anon_kib'] / 1024:.1f} MiB" +
                    (f", symbol cache {cache / 2**20:.1f} MiB in "
                     f"{samples[-1]['symbol_tables']:.0f} tables" if cache is not None else ""))
                if now - t0 >= total:
                    break
                due += SOAK_SAMPLE_S
            time.sleep(max(0.2, min(1.0, due - time.monotonic())))
    finally:
        for p in (load, churn):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    a.stop()
    lost = re.findall(r"(\d+) process events lost", a.text())
    res.data["memsoak"] = {"minutes": minutes, "warmup_s": warmup, "started": started,
                           "samples": samples,
                           "events_lost": int(lost[-1]) if lost else 0}
    memsoak_figures(res, res.data["memsoak"])


def memsoak_figures(res, soak):
    """The soak's figures from its samples (res.data["memsoak"]; also for a soak's stored
    results: `bench.py --soak-figures`).

    RSS takes two levels under this churn, ~8 MiB apart: the agent between windows, and the
    agent holding a window of 200 new processes (manyprocs starts again every 60 s, and a
    reading every 30 s falls on either). A median of k readings flips between the levels
    (the soak of 2026-12-04 22:27 read -4.3 MiB so), so growth is the lowest of the last k
    readings after the warm-up minus the lowest of its first k (the floor: what stays
    allocated), and, beside it, the same for the highest (what a window's peak takes);
    k = 10 (5 minutes), or a quarter of a shorter run's readings."""
    minutes, warmup, samples = soak["minutes"], soak["warmup_s"], soak["samples"]
    after = [s for s in samples if s["t"] >= warmup]
    k = max(1, min(10, len(after) // 4))
    first, last = after[:k], after[-k:]
    lo = lambda part, key: min(s[key] for s in part)
    hi = lambda part, key: max(s[key] for s in part)
    mib = lambda kib: kib / 1024
    cmd = (f"`ignis --output-dir DIR` (defaults) for {minutes:g} min under churn: manyprocs "
           "200 processes + 50 exec/exit per s, new processes every 60 s, and stormburn 5 + "
           "/bin/true every 100 ms + python3.11 every 2 s; /proc/PID/status every "
           f"{SOAK_SAMPLE_S} s ({len(samples)} samples)")
    grow = (f"; the lowest of the {k} readings from {last[0]['t']:.0f} s on minus the lowest "
            f"of the {k} up to {first[-1]['t']:.0f} s, from the end of the warm-up "
            f"({warmup / 60:g} min)")
    for key, name, title in (("rss_kib", "rss", "agent RSS"), ("anon_kib", "anon",
                                                               "  RssAnon (the heap)")):
        res.add(f"memsoak_{name}_growth", f"{title} growth after the warm-up, {minutes:g} min "
                "soak" if name == "rss" else f"{title} growth after the warm-up", "MiB",
                [mib(lo(last, key) - lo(first, key))],
                cmd + grow + f": {mib(lo(first, key)):.1f} -> {mib(lo(last, key)):.1f} MiB",
                target="<= 1 MiB")
        res.add(f"memsoak_{name}_peak_growth", f"  {title.strip()}: growth of the highest "
                "readings", "MiB", [mib(hi(last, key) - hi(first, key))],
                cmd + f"; as above with the highest: {mib(hi(first, key)):.1f} -> "
                f"{mib(hi(last, key)):.1f} MiB")
    res.add("memsoak_rss", "  agent RSS at the end", "MiB", [mib(samples[-1]["rss_kib"])],
            cmd + f"; {mib(samples[0]['rss_kib']):.1f} MiB at the first sample")
    res.add("memsoak_rss_anon", "  RssAnon at the end", "MiB", [mib(samples[-1]["anon_kib"])],
            cmd + f"; {mib(samples[0]['anon_kib']):.1f} MiB at the first sample")
    read = [s for s in after if s.get("symbol_cache_bytes") is not None]
    if read:
        res.add("memsoak_symbol_cache", "  symbol cache at the end (the heap's names)", "MiB",
                [read[-1]["symbol_cache_bytes"] / 2**20],
                cmd + f"; ignis_symbol_cache_bytes, {read[-1]['symbol_tables']:.0f} tables at "
                f"{read[-1]['t']:.0f} s; highest after the warm-up "
                f"{max(s['symbol_cache_bytes'] for s in read) / 2**20:.1f} MiB")
    res.add("memsoak_maps_mib", "  BPF map memory (memlock, defaults)", "MiB",
            [samples[-1]["maps_bytes"] / 2**20], cmd + "; memlock of the agent's maps (fdinfo)" +
            (f"; {soak['events_lost']} process events lost" if soak.get("events_lost") else ""))
    log(f"memsoak: RssAnon floor {mib(lo(first, 'anon_kib')):.1f} -> "
        f"{mib(lo(last, 'anon_kib')):.1f} MiB, highest {mib(hi(first, 'anon_kib')):.1f} -> "
        f"{mib(hi(last, 'anon_kib')):.1f} MiB from {first[-1]['t']:.0f} to {last[0]['t']:.0f} s")


# ---- 11: the README section --------------------------------------------------------------------

def fmt(fig):
    if fig.get("note", "").startswith("not available"):
        return "not available"
    if fig.get("n", 0) == 0:
        return "n/a"
    med, lo, hi = fig["median"], fig["min"], fig["max"]
    d = 2 if abs(med) < 10 else 1 if abs(med) < 100 else 0
    if fig["n"] == 1:
        return f"{med:.{d}f}"
    return f"{med:.{d}f} ({lo:.{d}f}–{hi:.{d}f})"


def verdicts(res):
    """Targets of the benchmark issue, evaluated on the medians: key -> True/False."""
    f = res.data["figures"]
    med = lambda k: f[k]["median"] if k in f and f[k].get("n") else None
    out = {}

    def rule(key, ok):
        if med(key) is not None and ok is not None:
            out[key] = bool(ok)

    for t in ("ignis", "perf", "bpftrace"):
        rule(f"slowdown_wall_{t}_100", med(f"slowdown_wall_{t}_100") is not None and
             med(f"slowdown_wall_{t}_100") < 3)
    for w in ("wall", "cpu"):
        a, b = med(f"slowdown_{w}_ignis_1000"), med(f"slowdown_{w}_perf_1000")
        rule(f"slowdown_{w}_ignis_1000", a is not None and b is not None and a <= b)
    at_most = lambda key, limit: rule(key, med(key) is not None and med(key) <= limit)
    at_most("bpf_ratio_ignis_bpftrace", 1)
    at_most("bpf_ratio_nowalk_floor", 2)
    at_most("agent_cpu_pct_busy", 0.5)
    at_most("storm_agent_cpu_pct", 2)
    at_least_ = lambda key, limit: rule(key, med(key) is not None and med(key) >= limit)
    at_least_("storm_whole_pct", 95)
    at_most("storm_unknown_pct", 0)
    at_most("agent_rss_idle", 20)
    at_most("agent_rss_busy", 30)
    for h in ("idle", "busy"):
        if res.data["machine"].get("cpus") == 2:	# the target is for 2 CPUs
            at_most(f"agent_maps_{h}", 24)
    for k in f:
        if k.startswith("window_ms_10000x"):
            at_most(k, 100)
    at_most("window_growth", 1.5)
    if "upload_rss_growth_full" in f and f["upload_rss_growth_full"].get("n"):
        rule("upload_rss_growth_full", med("upload_rss_growth_full") <= 1)
    if "sym_ratio_warm" in f:
        rule("sym_ratio_warm", med("sym_ratio_warm") >= 10)
        rule("sym_ratio_cold", med("sym_ratio_cold") <= 2)
    for hz in (100, 1000):
        at_most(f"share_error_ignis_{hz}", 2)
        at_most(f"loss_ignis_{hz}", 0.1)
    at_least = lambda key, limit: rule(key, med(key) is not None and med(key) >= limit)
    at_most("unwind_bpf_us_tables_30", 10)
    for depth in UNWIND_DEPTHS:
        at_least(f"unwind_whole_tables_{depth}", 99)
    at_most("unwind_row_bytes", 16)
    at_most("unwind_row_bytes_kernel", 16)
    programs = res.data.get("unwind", {}).get("programs")
    if programs:
        rule("unwind_many_published", med("unwind_many_published") == programs)
    at_most("unwind_ovh_ratio_cpu", 1)
    at_least("unwind_ovh_ratio_throughput", 1)
    at_most("py_bpf_ratio_30", 1.5)
    at_most("py_flask_rps_loss", 1)
    at_most("offcpu_pipe_loss", 1)
    at_most("offcpu_bpf_ns_switch", 300)
    below = lambda key, limit: rule(key, med(key) is not None and med(key) < limit)
    below("report_text_s", 5)
    below("report_text_rss_mib", 200)
    at_most("memsoak_rss_growth", 1)
    at_most("memsoak_anon_growth", 1)
    return out


def table_rows(res, keys):
    rows = []
    met = verdicts(res)
    for k in keys:
        f = res.data["figures"].get(k)
        if f:
            verdict = {True: "met", False: "**missed**"}.get(met.get(k), "")
            unit = "" if fmt(f) == "not available" else f" {f['unit']}"
            rows.append(f"| {f['title']} | {fmt(f)}{unit} | {f.get('target', '')} | "
                        f"{verdict} |")
    return rows


def soak_title(res):
    """The soak group's title: when the soak ran, and whether in this run or an earlier one
    (the hour-long soak is run on its own, and a full run keeps the last one's figures)."""
    soak = res.data.get("memsoak") or {}
    title = "Memory over a soak with process churn (`make bench SOAK_MINUTES=60`"
    if soak.get("started"):
        title += f", {soak['minutes']:g} min from {soak['started']}"
    if soak.get("carried"):
        title += ", an earlier run than the rest of this table"
    return title + ")"


def report(res, quick):
    figs = res.data["figures"]
    lines = []
    for k, f in figs.items():
        if f.get("note", "").startswith("not available"):
            lines.append(f"{f['title']:<72} {'not available':>22} ({f['note'][15:][:120]})")
            continue
        lines.append(f"{f['title']:<72} {fmt(f):>22} {f['unit']:<13} n={f.get('n', 0)}")
    print("\n".join(lines))
    m = res.data["machine"]
    md = [f"Measured by `make bench{' QUICK=1' if quick else ''}` on {m['date']}: "
          f"{m['cpus']} vCPU {m['cpu']}, {m['memory_mib']} MiB, Linux {m['kernel']} "
          f"({m['virtualization']}). Medians with min–max in parentheses; every command in "
          "`build/bench/results.json`.", ""]
    groups = [
        ("Overhead on spin3 (all CPUs busy, 60/30/10 designed shares), interleaved pairs",
         [f"slowdown_{w}_{t}_{hz}" for hz in (100, 1000) for t in ("ignis", "perf", "bpftrace")
          for w in ("wall", "cpu")]),
        ("BPF cost per sample (same runs, run_time_ns / run_cnt)",
         ["bpf_ns_ignis_fp", "bpf_ns_bpftrace", "bpf_ratio_ignis_bpftrace", "bpf_ns_ignis",
          "bpf_ns_ignis_nowalk", "bpf_ns_floor", "bpf_ratio_nowalk_floor", "bpf_ns_ignis_walk"]),
        ("Agent cost",
         [f"agent_{x}_{h}" for h in ("idle", "busy")
          for x in ("cpu_pct", "rss", "rss_peak", "maps", "window_ms")]),
        ("Exec storm: processes of 5 ms among /bin/true churn (issue 20)",
         ["storm_agent_cpu_pct", "storm_whole_pct", "storm_unknown_pct"]),
        ("Window scale (drain + symbolize + encode, warm)",
         [k for k in figs if k.startswith("window_ms_") or k == "window_growth"]),
        ("Shipping to a server (Pyroscope push API, test receiver)",
         [k for k in figs if k.startswith("upload_")]),
        ("Symbolization (DWARF with inline frames) against eu-addr2line and addr2line",
         [k for k in figs if k.startswith("sym_")]),
        ("Table unwinder: BPF cost per sample, the same recursion without frame pointers "
         "(tables) and with them",
         [f"unwind_{x}_{d}" for d in UNWIND_DEPTHS
          for x in ("bpf_us_tables", "bpf_us_fp", "bpf_ratio", "whole_tables", "whole_fp",
                    "share")]),
        ("Table unwinder: tables (unwind_dump)",
         [f"unwind_{x}_{k}" for k in ("libc", "liblzma", "cxx")
          for x in ("rows", "map_kib", "cfi_kib", "build_ms", "capacity")] +
         ["unwind_row_bytes", "unwind_row_bytes_kernel"]),
        (f"Table unwinder: agent memory with {res.data.get('unwind', {}).get('programs', 200)} "
         "distinct binaries",
         [k for k in figs if k.startswith("unwind_many_")]),
        ("Table unwinder: overhead beside perf record --call-graph dwarf (30 frames, 100 Hz)",
         [k for k in figs if k.startswith("unwind_ovh_")] + ["unwind_publish_s"]),
        ("Python frames: BPF cost, the Flask app's throughput, agent memory per process",
         [k for k in figs if k.startswith("py_")]),
        ("Off-CPU time: a switch-heavy load (perf bench sched pipe), BPF cost, memory",
         [k for k in figs if k.startswith("offcpu_")]),
        ("Local analysis: `ignis report` and `ignis diff` over a day of windows of a busy "
         "host (tests/tools/mkwindows), beside `go tool pprof -top`",
         [k for k in figs if k.startswith("report_")]),
        (soak_title(res), [k for k in figs if k.startswith("memsoak_")]),
        ("Accuracy and loss",
         [f"{x}_{t}_{hz}" for hz in (100, 1000) for t in ("ignis", "perf", "bpftrace")
          for x in ("share_error_pooled", "share_error", "complete_stacks")] +
         ["loss_ignis_100", "loss_ignis_1000"]),
    ]
    for title, keys in groups:
        rows = table_rows(res, keys)
        if rows:
            md += [f"**{title}**", "", "| figure | measured | target | |",
                   "| --- | --- | --- | --- |"]
            md += rows + [""]
    return "\n".join(md)


def update_readme(section):
    path = os.path.join(ROOT, "README.md")
    with open(path) as f:
        text = f.read()
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    if start not in text:
        return False
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(head + start + "\n" + section + "\n" + end + tail)
    return True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only",
                        help="comma-separated sections: "
                        "overhead,bpf,agent,storm,window,upload,symbols,unwind,python,"
                        "offcpu,report; memsoak runs only when named here or with --minutes")
    parser.add_argument("--minutes", type=float,
                        help="add the memsoak section, this long (named alone: 60)")
    parser.add_argument("--no-readme", action="store_true")
    parser.add_argument("--readme-only", action="store_true",
                        help="rewrite the README section from build/bench/results.json")
    parser.add_argument("--soak-figures", action="store_true",
                        help="derive the memsoak figures again from the readings stored in "
                        "build/bench/results.json, then rewrite the README section")
    args = parser.parse_args()
    if args.soak_figures:
        path = os.path.join(BUILD, "bench", "results.json")
        res = Results(False)
        with open(path) as f:
            res.data = json.load(f)
        for key in [k for k in res.data["figures"] if k.startswith("memsoak_")]:
            del res.data["figures"][key]
        memsoak_figures(res, res.data["memsoak"])
        res.data["targets"] = verdicts(res)
        with open(path, "w") as f:
            json.dump(res.data, f, indent=1)
        args.readme_only = True
    if args.readme_only:
        res = Results(False)
        with open(os.path.join(BUILD, "bench", "results.json")) as f:
            res.data = json.load(f)
        update_readme(report(res, res.data.get("quick", False)))
        return
    every = {"overhead", "bpf", "agent", "storm", "window", "upload", "symbols", "unwind",
             "python", "offcpu", "report"}
    only = set(args.only.split(",")) if args.only else set(every)
    if args.minutes:
        only.add("memsoak")
    if os.geteuid() != 0:
        sys.exit("make bench needs root (BPF, perf, bpftrace)")
    res = Results(args.quick)
    started = time.monotonic()
    sections = [
        ("overhead", lambda: accuracy_and_loss(res, overhead(res, args.quick))),
        ("bpf", lambda: bpf_cost(res, args.quick)),
        ("agent", lambda: agent_cost(res, args.quick)),
        ("storm", lambda: execstorm(res, args.quick)),
        ("window", lambda: window_scale(res, args.quick)),
        ("upload", lambda: upload(res, args.quick)),
        ("symbols", lambda: symbolization(res, args.quick)),
        ("unwind", lambda: unwind(res, args.quick)),
        ("python", lambda: python(res, args.quick)),
        ("offcpu", lambda: offcpu(res, args.quick)),
        ("report", lambda: local_report(res, args.quick)),
        # Not in `every`: an hour by default, run when asked for.
        ("memsoak", lambda: memsoak(res, args.minutes or 60)),
    ]
    timings = res.data.setdefault("section_seconds", {})
    try:
        for name, run in sections:
            if name in only:
                t0 = time.monotonic()
                run()
                timings[name] = round(time.monotonic() - t0, 1)
                log(f"section {name}: {timings[name]:.0f} s")
    finally:
        reap()
        shutil.rmtree(TMP, ignore_errors=True)
    res.data["seconds"] = round(time.monotonic() - started)
    path = os.path.join(BUILD, "bench", "results.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    full = every <= only
    merged = False
    res.data["sections"] = sorted(only)
    last = None
    if os.path.exists(path):
        with open(path) as f:
            last = json.load(f)
        if last.get("quick") != args.quick:
            last = None     # the results of the other kind of run are not merged
    if last and full and "memsoak" not in only and last.get("memsoak"):
        # The hour-long soak is run on its own: a full run without it keeps the last one's
        # readings and figures, dated, rather than dropping them from the README.
        res.data["memsoak"] = dict(last["memsoak"], carried=True)
        res.data["figures"].update({k: v for k, v in last["figures"].items()
                                    if k.startswith("memsoak_")})
    if last and not full:
        # A partial run refreshes its sections of the last results; the README is rewritten
        # only when those covered every section (a run of a few sections after another
        # partial one would otherwise drop the figures of all the others from it).
        last["figures"].update(res.data["figures"])
        res.data["figures"] = last["figures"]
        res.data["sections"] = sorted(only | set(last.get("sections", ())))
        merged = every <= set(res.data["sections"])
        for key in ("accounting", "unwind", "python", "memsoak"):
            if last.get(key) is not None:
                res.data.setdefault(key, last[key])
    res.data["targets"] = verdicts(res)
    with open(path, "w") as f:
        json.dump(res.data, f, indent=1)
    section = report(res, args.quick)
    with open(os.path.join(BUILD, "bench", "performance.md"), "w") as f:
        f.write(section + "\n")
    # A partial run with no earlier results of the same kind has only its own sections:
    # rewriting the README's with them would drop every other figure.
    if not args.no_readme and not args.quick and (full or merged):
        update_readme(section)
    elif not args.no_readme and not args.quick:
        print("README not rewritten: a partial run needs an earlier full run's "
              "build/bench/results.json to merge into (build/bench/performance.md has it)")
    print(f"\nbench took {res.data['seconds']} s (" +
          ", ".join(f"{k} {v:.0f} s" for k, v in timings.items()) +
          "); results in build/bench/results.json")


if __name__ == "__main__":
    main()
