# SPDX-License-Identifier: Apache-2.0
"""The BPF maps' memory (issue 17): at defaults it stays within its bound whatever the host
does, since every map is allocated whole at load (the kernel's memlock of each map, which
ignis_bpf_map_bytes sums), and stacks deeper than one part of the stacks map (32 frames,
bpf/profiler.h) still arrive whole.

The bound is 24 MiB on 2 CPUs and grows by at most 5.5 MiB per further possible CPU
(docs/architecture.md, "BPF map memory": 5.0 MiB a CPU on average, the stacks, counts and
sample log of both generations and procs; a hash map's buckets are a power of two, so one
more CPU may add from 4.6 to 6.1 MiB; by the kernel's accounting 3 to 128 CPUs stay under
this bound, 3 CPUs closest, by 0.4 MiB).
"""
import os
import re
import time

from harness import Agent, check, pprof_json, spawn, wait_exit
from test_operate import free_port, get, metric
from test_python import pyenv_python, script

MIB = 1 << 20
DEBIAN = "/usr/bin/python3.11"


def possible_cpus():
    """CPUs the kernel may bring online (/sys/devices/system/cpu/possible), as libbpf sizes
    per-CPU maps by."""
    n = 0
    with open("/sys/devices/system/cpu/possible") as f:
        for part in f.read().strip().split(","):
            a, _, b = part.partition("-")
            n += int(b or a) - int(a) + 1
    return n


def map_memlock(pid):
    """The memlock of every BPF map the process holds, summed (what bpftool reports)."""
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = f.read()
        except OSError:
            continue
        if "map_type:" not in info:
            continue
        for line in info.splitlines():
            if line.startswith("memlock:"):
                total += int(line.split()[1])
    return total


PY_NAMES = {"hot", "down", "main", "<module>"}


def whole(frames, depth):
    """Whether a sample's user frames hold hot's whole chain: hot, depth x down, main,
    <module> (with the interpreter's native frames between them before 3.11). What lies
    below <module> is not judged: before the agent publishes the process's tables (late on
    a loaded host) libc's frames are walked with frame pointers and may end in
    [truncated] after __libc_start_call_main, which is the unwinder's matter, not the
    storage's. A stack cut by the storage loses <module> and more."""
    py = [f for f in frames if f in PY_NAMES]
    return py == ["hot"] + ["down"] * depth + ["main", "<module>"]


def test_map_memory_at_defaults_is_bounded_and_deep_stacks_arrive_whole():
    """The agent at its default options (10 s windows, as the maps are sized from): map
    memory within the bound at start and unchanged under load; two Python processes whose
    hot function runs under 165 (Debian's 3.11, recursion 150) and about 200 frames
    (pyenv's 3.10, recursion 50: every Python call is 3-4 native frames there), five and
    seven parts of the stacks map, judged whole: no stack cut, none missing."""
    port = free_port()
    agent = Agent("--metrics-address", f"127.0.0.1:{port}", interval=10).wait_ready()
    bound = 24 * MIB + max(0, possible_cpus() - 2) * 5.5 * MIB
    _, text = get(f"http://127.0.0.1:{port}/metrics")
    at_start = metric(text, "ignis_bpf_map_bytes")
    memlock = map_memlock(agent.proc.pid)
    check(at_start == memlock, f"ignis_bpf_map_bytes {at_start} != memlock sum {memlock}")
    check(at_start <= bound, f"BPF maps {at_start / MIB:.2f} MiB > {bound / MIB:.0f} MiB "
          f"on {possible_cpus()} possible CPUs")

    runs = [(spawn([DEBIAN, script("deep.py"), "3", "150"]), 150),
            (spawn([pyenv_python("3.10.13")[1], script("deep.py"), "3", "50"]), 50)]
    for proc, _ in runs:
        wait_exit(proc, 90)
    _, text = get(f"http://127.0.0.1:{port}/metrics")
    under_load = metric(text, "ignis_bpf_map_bytes")
    agent.stop()
    check(under_load == at_start, f"map memory moved under load: {at_start} -> {under_load}")

    windows = agent.windows()
    for key in ("stacks_cut", "stacks_full", "dropped"):
        check(sum(w.get(key, 0) for w in windows) == 0, f"{key} in {windows}")
    profiles = [pprof_json(p) for p in agent.profiles()]
    for proc, depth in runs:
        total = good = longest = 0
        for prof in profiles:
            for s in prof.samples(pid=proc.pid):
                frames = prof.user_frames(s)
                if "hot" not in frames:
                    continue
                total += s["count"]
                longest = max(longest, len(frames))
                if whole(frames, depth):
                    good += s["count"]
        # 3 s of CPU in hot at 100 Hz: 300 samples, fewer on a loaded host's clock.
        check(total >= 150, f"only {total} samples in hot of depth {depth}")
        check(longest > 64, f"the deepest stack of depth {depth} has {longest} frames")
        check(good >= 0.95 * total,
              f"{good} of {total} samples of depth {depth} have hot's whole chain")


def test_full_tails_map_cuts_deep_stacks_and_loses_none():
    """--max-stacks 1024 (the least: 1024 first parts and 1024 further parts a generation)
    and a Python process whose hot function runs 2 ms at a time at each depth from 100 to
    200 (Debian's 3.11: 115 to 215 frames, 3 to 6 further parts each): its distinct deep
    stacks fill the tails map (its samples only: --pid). Then a stack is kept cut to its
    first 32 frames, ending in
    [truncated], and counted (stacks_cut); no sample loses its stack (stacks_full 0, the
    window's accounting exact), and the stacks that were stored whole are whole."""
    proc = spawn([DEBIAN, script("deep.py"), "6", "200", "vary"])
    # Only its samples (--pid): the first parts' map then holds every stack of the window,
    # whatever else the host runs.
    agent = Agent("--max-stacks", "1024", "--pid", proc.pid, interval=10).wait_ready()
    wait_exit(proc, 90)
    agent.stop()
    windows = agent.windows()
    cut = sum(w.get("stacks_cut", 0) for w in windows)
    check(cut > 0, f"no stack cut: the tails map never filled? {windows}")
    for key in ("stacks_full", "unaccounted", "dropped"):
        check(all(w.get(key, 0) == 0 for w in windows), f"{key} in {windows}")
    total = whole_ones = cut_ones = 0
    bad = []
    for prof in (pprof_json(p) for p in agent.profiles()):
        for s in prof.samples(pid=proc.pid):
            frames = prof.user_frames(s)
            if "hot" not in frames:
                continue
            total += s["count"]
            py = [f for f in frames if f in PY_NAMES]
            if py[-2:] == ["main", "<module>"] and py[:1] == ["hot"] and \
                    len(py) - 3 >= 100 and set(py[1:-2]) == {"down"}:
                whole_ones += s["count"]
            elif len(frames) == 33 and frames[-1] == "[truncated]":
                cut_ones += s["count"]
            else:
                bad.append(frames[:8] + ["..."] + frames[-3:])
    # 6 s of CPU, at least 4 of them after the agent started: 400 samples at 100 Hz, fewer
    # on a loaded host's clock.
    check(total >= 200, f"only {total} samples in hot")
    check(not bad, f"{len(bad)} stacks neither whole nor cut at 32 frames: {bad[:3]}")
    check(cut_ones > 0 and whole_ones > 0,
          f"{whole_ones} whole and {cut_ones} cut of {total} samples in hot")


def test_full_stacks_map_keeps_samples_without_their_stack():
    """--max-stacks 1024 (the least) and a Python process sampled at 1000 Hz that moves to
    another of 10000 functions every 1 ms: up to 5000 distinct stacks a 5 s window, so the
    stacks map fills whenever the process has more than a fifth of a CPU. A stack with no
    room is counted (stacks_full) and its sample kept, without that stack: the window's
    accounting stays exact (no sample dropped, none unaccounted); a sample whose user stack
    was not stored ends in [truncated], under its kernel frames when it was in a system call
    (the loop's clock reads), never kernel frames alone; a sample whose stack was stored
    keeps its frames (fN <- main <- <module>)."""
    proc = spawn([DEBIAN, script("many_stacks.py"), "15", "10000"])
    agent = Agent("--max-stacks", "1024", "--frequency", "1000", "--pid", proc.pid,
                  interval=5).wait_ready()
    wait_exit(proc, 120)
    agent.stop()
    windows = agent.windows()
    full = sum(w.get("stacks_full", 0) for w in windows)
    check(full > 0, f"no stack lost: the stacks map never filled? {windows}")
    for key in ("unaccounted", "dropped"):
        check(all(w.get(key, 0) == 0 for w in windows), f"{key} in {windows}")
    named = lost = lost_in_kernel = kernel_only = 0
    for prof in (pprof_json(p) for p in agent.profiles()):
        for s in prof.samples(pid=proc.pid):
            frames = prof.user_frames(s)
            in_kernel = len(prof.frames(s)) > len(frames)
            py = [f for f in frames if f in ("main", "<module>") or re.fullmatch(r"f\d+", f)]
            if frames == ["[truncated]"]:
                lost += s["count"]
                lost_in_kernel += s["count"] if in_kernel else 0
            elif not frames:
                kernel_only += s["count"]
            elif py[:1] and py[0][0] == "f" and py[1:3] == ["main", "<module>"]:
                named += s["count"]
    print(f"{full} stacks lost; samples: {lost} without their user stack ({lost_in_kernel} "
          f"in the kernel), {kernel_only} with kernel frames only, {named} whole")
    check(0 < lost <= full, f"{lost} samples without their user stack, {full} stacks lost")
    # A process exiting may leave a sample or two with no user frames to walk.
    check(kernel_only <= 2, f"{kernel_only} samples with kernel frames only: a user stack "
          f"not stored must show as [truncated] ({lost_in_kernel} did)")
    check(named > 0, f"no sample with fN <- main <- <module>, {lost} without a stack")
