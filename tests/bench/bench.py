#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make bench: ignis's cost, loss and accuracy, side by side with perf and bpftrace.

This machine is shared and noisy, so every figure is a ratio measured in one run or a
median over repetitions, printed with its min-max and the command that produced it. The
table goes to stdout, everything to build/bench/results.json, and a summary into the
README's Performance section (between its bench markers).
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
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

class Workload:
    """spin3: NCPU threads of fixed work split 60/30/10; stays alive (stdin open) after
    printing its times, so that profilers that symbolize at exit still find it."""

    def __init__(self, rounds):
        self.proc = spawn([os.path.join(BENCH, "spin3"), str(rounds), str(NCPU)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"wall_ns=(\d+) cpu_ns=(\d+) shares=([\d.]+),([\d.]+),([\d.]+)", line)
        if not m:
            raise RuntimeError(f"spin3: {line!r}")
        self.wall = int(m.group(1)) / 1e9
        self.cpu = int(m.group(2)) / 1e9
        self.shares = dict(zip(SHARES, (float(m.group(i)) for i in (3, 4, 5))))
        self.pid = self.proc.pid

    def end(self):
        self.proc.stdin.close()
        self.proc.wait()


def calibrate(seconds):
    w = Workload(20000)
    w.end()
    return max(1000, int(20000 * seconds / w.wall))


# ---- The profilers -------------------------------------------------------------------------

class Ignis:
    name = "ignis"

    def __init__(self, hz, *extra, interval=60):
        self.out = tempfile.mkdtemp(dir=TMP)
        self.log = os.path.join(self.out, "agent.log")
        self.proc = spawn([IGNIS, "--frequency", str(hz), "--interval", str(interval),
                           "--output-dir", self.out, "--log-level", "debug", *extra],
                          stderr=open(self.log, "w"))
        deadline = time.monotonic() + 30
        while "profiling " not in self.text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("ignis did not start:\n" + self.text())
            time.sleep(0.05)
        self.pid = self.proc.pid

    def text(self):
        with open(self.log) as f:
            return f.read()

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=60)

    def windows(self):
        out = []
        for m in re.finditer(r"window seq=\d+ (.*)", self.text()):
            out.append({k: int(v) for k, v in
                        (kv.split("=", 1) for kv in m.group(1).split()) if k != "file"})
        return out

    def stacks(self, pid):
        """{tuple of frames (leaf first): samples} of a process, from our own decoder."""
        result = {}
        for f in sorted(os.listdir(self.out)):
            if not f.endswith(".pb.gz"):
                continue
            p = subprocess.run([os.path.join(BUILD, "tests", "pprof_dump"),
                                os.path.join(self.out, f)], capture_output=True, text=True)
            data = json.loads(p.stdout)
            locs = {l["id"]: l for l in data["locations"]}
            for s in data["samples"]:
                if s["labels"].get("pid") != pid:
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

    def __init__(self, hz):
        self.data = os.path.join(tempfile.mkdtemp(dir=TMP), "perf.data")
        self.proc = spawn(["perf", "record", "-F", str(hz), "-a", "-g", "-o", self.data])
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

def overhead(res, quick):
    pairs = 2 if quick else 5
    seconds = 1.0 if quick else 5.0
    rounds = calibrate(seconds)
    log(f"overhead: spin3 {rounds} rounds x {NCPU} threads (~{seconds} s), {pairs} pairs")
    accuracy = {}
    for hz in (100, 1000):
        for tool in (Ignis, Perf, Bpftrace):
            wall, cpu, runs = [], [], []
            for i in range(pairs):
                order = ("base", "tool") if i % 2 == 0 else ("tool", "base")
                t = {}
                for which in order:
                    prof = tool(hz) if which == "tool" else None
                    w = Workload(rounds)
                    if prof:
                        prof.stop()
                        runs.append({"stacks": prof.stacks(w.pid), "cpu": w.cpu,
                                     "shares": w.shares,
                                     "windows": prof.windows() if tool is Ignis else None})
                    w.end()
                    t[which] = w
                wall.append(100.0 * (t["tool"].wall / t["base"].wall - 1))
                cpu.append(100.0 * (t["tool"].cpu / t["base"].cpu - 1))
            cmd = {"ignis": f"ignis --frequency {hz}",
                   "perf": f"perf record -F {hz} -a -g",
                   "bpftrace": "bpftrace -e '" + Bpftrace.PROGRAM.format(hz=hz) + "'"}[tool.name]
            if hz == 100:
                target = "< 3 % (the machine's noise)"
            else:
                target = "<= perf's" if tool is Ignis else None
            res.add(f"slowdown_wall_{tool.name}_{hz}", f"slowdown, wall time, {tool.name} "
                    f"at {hz} Hz", "%", wall, f"spin3 alone vs under `{cmd}`, {pairs} "
                    "interleaved pairs", target=target)
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


def bpf_cost(res, quick):
    reps = 1 if quick else 5
    seconds = 5 if quick else 15
    rounds = calibrate(seconds)
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        saved = f.read().strip()
    full, skip, bt, floor = [], [], [], []
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        for rep in range(reps):
            # Start order changes between repetitions: a program's place among the
            # handlers of one tick can change its cost (cold caches for the first).
            starts = [lambda: Ignis(100), lambda: Ignis(100, "--bench-skip-walk"),
                      lambda: Bpftrace(100),
                      lambda: Bpftrace(100, "profile:hz:{hz} {{ @c = count(); }}")]
            shift = rep % len(starts)
            order = list(range(len(starts)))[shift:] + list(range(len(starts)))[:shift]
            started = {i: starts[i]() for i in order}
            a, b, c, d = (started[i] for i in range(len(starts)))
            w = Workload(rounds)
            progs = bpf_progs()
            full.append(per_run_ns(progs, a.pid, "ignis_sample"))
            skip.append(per_run_ns(progs, b.pid, "ignis_sample"))
            bt.append(per_run_ns(progs, c.pid))
            floor.append(per_run_ns(progs, d.pid))
            for prof in (a, b, c, d):
                prof.stop()
            w.end()
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(saved)
    us = lambda v: [x / 1000 for x in v if x]
    cmd = ("kernel.bpf_stats_enabled=1, run_time_ns / run_cnt, spin3 on all CPUs, all four "
           "programs at once, start order rotated between repetitions")
    res.add("bpf_ns_ignis", "BPF cost per sample, ignis", "us", us(full), cmd,
            target="<= bpftrace in the same run")
    res.add("bpf_ns_bpftrace", "BPF cost per sample, bpftrace kstack+ustack", "us", us(bt), cmd)
    res.add("bpf_ns_ignis_nowalk", "BPF cost per sample, ignis without stack walks", "us",
            us(skip), cmd + "; ignis --bench-skip-walk", target="<= 1 us")
    res.add("bpf_ns_floor", "BPF cost per sample, bpftrace `@c = count()` (this VM's floor)",
            "us", us(floor), cmd)
    res.add("bpf_ratio_ignis_bpftrace", "BPF cost ratio ignis / bpftrace", "ratio",
            [a / b for a, b in zip(full, bt) if a and b], "same runs", target="<= 1")
    res.add("bpf_ns_ignis_walk", "BPF cost per sample, ignis stack walks (full - no walk)",
            "us", [(a - b) / 1000 for a, b in zip(full, skip) if a and b], "same runs")
    log(f"bpf: ignis {statistics.median(us(full)):.2f} us, bpftrace "
        f"{statistics.median(us(bt)):.2f} us, no-walk {statistics.median(us(skip)):.2f} us, "
        f"floor {statistics.median(us(floor)):.2f} us")


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
        res.add(f"agent_rss_{host}", f"agent RSS at the end, {host} host", "MiB",
                [rss / 1024], cmd + "; symbol-cache budget 64 MiB",
                target="<= 30 MiB excluding BPF maps")
        res.add(f"agent_rss_peak_{host}", f"agent peak RSS, {host} host", "MiB",
                [hwm / 1024], cmd + " (VmHWM)")
        res.add(f"agent_maps_{host}", f"kernel memory of the BPF maps, {host} host", "MiB",
                [memlock / 1048576], "memlock of ignis's maps (/proc/PID/fdinfo, as bpftool "
                "map show reports it)")
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
    limit_mib = 4 if quick else 16
    port = 9000 + os.getpid() % 1000
    rx = Receiver().start()
    rx.program(script=["hang"] * 100000)
    bindir = tempfile.mkdtemp(dir=TMP)
    loads = []
    for i in range(64):
        exe = os.path.join(bindir, f"manyprocs_{i:02d}")
        shutil.copy(os.path.join(BENCH, "manyprocs"), exe)
        loads.append(spawn([exe, "3", "900", "0"]))
    time.sleep(3)
    a = Ignis(100, "--server-url", rx.url, "--queue-max-bytes", f"{limit_mib}MiB",
              "--upload-timeout", "5s", "--metrics-address", f"127.0.0.1:{port}", interval=1)
    time.sleep(5)
    base = proc_status(a.pid, "VmRSS")
    deadline = time.monotonic() + (240 if quick else 900)
    full_at = None
    while time.monotonic() < deadline:
        time.sleep(2)
        text = metrics_text(port)
        if metric_value(text, 'ignis_profiles_dropped_total{reason="queue_full"}'):
            full_at = time.monotonic()
            break
    queue = metric_value(text, "ignis_upload_queue_bytes")
    rss_full = proc_status(a.pid, "VmRSS")
    time.sleep(30)
    rss_later = proc_status(a.pid, "VmRSS")
    text = metrics_text(port)
    queue_after = metric_value(text, "ignis_upload_queue_bytes")
    dropped = metric_value(text, 'ignis_profiles_dropped_total{reason="queue_full"}')
    a.stop()
    rx.stop()
    for load in loads:
        load.kill()
        load.wait()
    subprocess.run(["pkill", "-f", "manyprocs"], capture_output=True)
    shutil.rmtree(bindir, ignore_errors=True)
    cmd = (f"ignis --interval 1 --queue-max-bytes {limit_mib}MiB, server never answers, "
           "64 services of 3 processes")
    if full_at is None:
        log("upload: the queue did not reach its limit in time")
        return
    res.add("upload_queue_bytes_full", f"queue bytes at the limit ({limit_mib} MiB)", "MiB",
            [queue / 1048576, queue_after / 1048576], cmd + "; ignis_upload_queue_bytes")
    res.add("upload_rss_growth_fill", f"agent RSS growth while the queue fills ({limit_mib} MiB)",
            "MiB", [(rss_full - base) / 1024],
            cmd + "; VmRSS at the first queue_full drop minus VmRSS 5 s after start")
    res.add("upload_rss_growth_full", "agent RSS growth in 30 s with the queue full", "MiB",
            [(rss_later - rss_full) / 1024],
            cmd + f"; VmRSS 30 s after the first queue_full drop minus VmRSS at it "
            f"({dropped:.0f} profiles dropped by then)", target="<= 1 MiB (bounded)")
    log(f"upload: queue at limit {queue / 1048576:.1f} MiB, RSS +{(rss_full - base) / 1024:.1f}"
        f" MiB while filling, +{(rss_later - rss_full) / 1024:.1f} MiB in 30 s at the limit")


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


# ---- 7: the README section --------------------------------------------------------------------

def fmt(fig):
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
    at_most("bpf_ns_ignis_nowalk", 1)
    at_most("agent_cpu_pct_busy", 0.5)
    for h in ("idle", "busy"):
        at_most(f"agent_rss_{h}", 30)
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
    return out


def table_rows(res, keys):
    rows = []
    met = verdicts(res)
    for k in keys:
        f = res.data["figures"].get(k)
        if f:
            verdict = {True: "met", False: "**missed**"}.get(met.get(k), "")
            rows.append(f"| {f['title']} | {fmt(f)} {f['unit']} | {f.get('target', '')} | "
                        f"{verdict} |")
    return rows


def report(res, quick):
    figs = res.data["figures"]
    lines = []
    for k, f in figs.items():
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
         ["bpf_ns_ignis", "bpf_ns_bpftrace", "bpf_ratio_ignis_bpftrace", "bpf_ns_ignis_nowalk",
          "bpf_ns_ignis_walk", "bpf_ns_floor"]),
        ("Agent cost",
         [f"agent_{x}_{h}" for h in ("idle", "busy")
          for x in ("cpu_pct", "rss", "rss_peak", "maps", "window_ms")]),
        ("Window scale (drain + symbolize + encode, warm)",
         [k for k in figs if k.startswith("window_ms_") or k == "window_growth"]),
        ("Shipping to a server (Pyroscope push API, test receiver)",
         [k for k in figs if k.startswith("upload_")]),
        ("Symbolization (DWARF with inline frames) against eu-addr2line and addr2line",
         [k for k in figs if k.startswith("sym_")]),
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
                        help="comma-separated sections: overhead,bpf,agent,window,upload,symbols")
    parser.add_argument("--no-readme", action="store_true")
    parser.add_argument("--readme-only", action="store_true",
                        help="rewrite the README section from build/bench/results.json")
    args = parser.parse_args()
    if args.readme_only:
        res = Results(False)
        with open(os.path.join(BUILD, "bench", "results.json")) as f:
            res.data = json.load(f)
        update_readme(report(res, res.data.get("quick", False)))
        return
    every = {"overhead", "bpf", "agent", "window", "upload", "symbols"}
    only = set(args.only.split(",")) if args.only else every
    if os.geteuid() != 0:
        sys.exit("make bench needs root (BPF, perf, bpftrace)")
    res = Results(args.quick)
    started = time.monotonic()
    try:
        if "overhead" in only:
            accuracy_and_loss(res, overhead(res, args.quick))
        if "bpf" in only:
            bpf_cost(res, args.quick)
        if "agent" in only:
            agent_cost(res, args.quick)
        if "window" in only:
            window_scale(res, args.quick)
        if "upload" in only:
            upload(res, args.quick)
        if "symbols" in only:
            symbolization(res, args.quick)
    finally:
        reap()
        shutil.rmtree(TMP, ignore_errors=True)
    res.data["seconds"] = round(time.monotonic() - started)
    path = os.path.join(BUILD, "bench", "results.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    full = only == every
    if not full and os.path.exists(path):
        # A partial run refreshes its sections of the last results.
        with open(path) as f:
            last = json.load(f)
        if last.get("quick") == args.quick:
            last["figures"].update(res.data["figures"])
            res.data["figures"] = last["figures"]
            for key in ("accounting",):
                res.data.setdefault(key, last.get(key))
    res.data["targets"] = verdicts(res)
    with open(path, "w") as f:
        json.dump(res.data, f, indent=1)
    section = report(res, args.quick)
    with open(os.path.join(BUILD, "bench", "performance.md"), "w") as f:
        f.write(section + "\n")
    if not args.no_readme and not args.quick:
        update_readme(section)
    print(f"\nbench took {res.data['seconds']} s; results in build/bench/results.json")


if __name__ == "__main__":
    main()
