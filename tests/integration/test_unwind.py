# SPDX-License-Identifier: Apache-2.0
"""Unwinding code without frame pointers from .eh_frame tables in BPF (issue 8), against
`perf record --call-graph dwarf` as the reference, and against the frame-pointer walk
(--unwind fp) to show what the tables add."""
import json
import os
import re
import subprocess
import sys
import time

from harness import (Agent, check, go_traces, path, pprof_json, spawn, tmpdir, wait_exit,
                     workload)
from test_operate import free_port, get, metric
from test_pipeline import profiles_of, run_with_agent

DEEP_CHAIN = ["deep_hot", "level_d", "level_c", "level_b", "level_a", "main"]
ROOTS = {"_start", "start_thread", "clone3", "__clone3", "clone"}
# Table unwinding required: a kernel (or a change) the verifier refuses fails the test rather
# than falling back to frame pointers as --unwind auto does.
DWARF = ["--unwind", "dwarf"]


def chain_from_leaf(frames, chain):
    """Whether frames (leaf first) start with a suffix of chain that begins at the leaf and
    runs to chain's end: every level from the sampled function out to the last, in order."""
    if not frames or frames[0] not in chain:
        return False
    k = chain.index(frames[0])
    return frames[:len(chain) - k] == chain[k:]


def share_with_chain(stacks, chain):
    """Of (frames, count) pairs: the share whose stack holds the chain from its leaf out,
    and ends at a root (a complete stack, not [truncated]); the total; and the other stacks
    as text, commonest first, for a failure message."""
    total = good = 0
    other = {}
    for frames, count in stacks:
        total += count
        if chain_from_leaf(frames, chain) and frames[-1] in ROOTS:
            good += count
        else:
            key = " <- ".join(frames)
            other[key] = other.get(key, 0) + count
    worst = sorted(other.items(), key=lambda kv: -kv[1])[:6]
    return (good / total if total else 0.0), total, "".join(f"\n  {c} x {k}" for k, c in worst)


def ignis_stacks(agent, pid, user_only=False):
    """pid's stacks as (frames leaf first, count). user_only: without the kernel frames on
    top (an interrupt or a system call over the user stack, which is what is judged)."""
    return [(p.user_frames(s) if user_only else p.frames(s), s["count"])
            for p in profiles_of(agent) for s in p.samples(pid=pid)]


def perf_stacks(argv):
    """Run argv under `perf record --call-graph dwarf` (8 KiB of stack copied per sample);
    its stacks as (frames leaf first, 1)."""
    folder = tmpdir("perf-")
    data = os.path.join(folder, "perf.data")
    rec = subprocess.run(["perf", "record", "-q", "-F", "100", "--call-graph", "dwarf", "-o",
                          data, "--"] + argv, capture_output=True, text=True, timeout=120)
    check(rec.returncode == 0, f"perf record: {rec.stderr[-2000:]}")
    out = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"], capture_output=True,
                         text=True, timeout=120).stdout
    stacks = []
    for block in out.split("\n\n"):
        frames = []
        for line in block.splitlines():
            m = re.match(r"^\s*[0-9a-f]+ (\S+?)(\+0x[0-9a-f]+)?( \(.*\))?$", line)
            if m:
                frames.append(m.group(1))
        if frames:
            stacks.append((frames, 1))
    return stacks


def test_deep_chain_without_frame_pointers_matches_perf_dwarf():
    """main -> level_a -> level_b -> level_c -> level_d -> deep_hot, -O2
    -fomit-frame-pointer, none inlined: every level in order and a complete stack on >= 95 %
    of the samples, as perf --call-graph dwarf sees them; the frame-pointer walk does not
    (which is what makes this test fail if the tables broke)."""
    argv = [workload("deep"), "4cpu"]  # CPU time: as many samples on a busy host
    ref, ref_total, ref_other = share_with_chain(perf_stacks(argv), DEEP_CHAIN)
    check(ref_total > 150 and ref >= 0.95,
          f"the reference itself: perf --call-graph dwarf has the chain on {ref:.1%} of "
          f"{ref_total} samples; others:{ref_other}")

    agent, _, pid = run_with_agent(argv, agent_args=DWARF)
    got, total, other = share_with_chain(ignis_stacks(agent, pid, user_only=True), DEEP_CHAIN)
    check(total > 300, f"only {total} samples of deep")
    check(got >= 0.95, f"ignis has the whole chain on {got:.1%} of {total} samples "
          f"(perf: {ref:.1%}); others:{other}")

    # go tool pprof reads the same stacks.
    traces = [t for p in agent.profiles() for _, _, t in go_traces(p, "-tagfocus", f"pid={pid}")]
    check(any(t[:len(DEEP_CHAIN)] == DEEP_CHAIN for t in traces),
          f"go tool pprof: {traces[:3]}")

    # lld packs segments: the executable one begins mid-page after the read-only one, and
    # its mapping's file offset lies in the read-only segment (the load bias must come from
    # the segment the mapping maps, or every row is read 4 KiB off).
    lld_agent, _, lld_pid = run_with_agent([workload("deep-lld"), "3cpu"], agent_args=DWARF)
    lld, lld_total, lld_other = share_with_chain(ignis_stacks(lld_agent, lld_pid, True),
                                                 DEEP_CHAIN)
    check(lld >= 0.95, f"linked by lld: the whole chain on {lld:.1%} of {lld_total} "
          f"samples; others:{lld_other}")

    fp_agent, _, fp_pid = run_with_agent(argv, agent_args=["--unwind", "fp"])
    fp, fp_total, _ = share_with_chain(ignis_stacks(fp_agent, fp_pid, True), DEEP_CHAIN)
    check(fp < 0.5, f"frame pointers alone found the chain on {fp:.1%} of {fp_total} samples: "
          "the workload does not test the tables")


def test_samples_in_the_kernel_unwind_from_the_saved_user_registers():
    """deep's hot function in system calls: most samples hit the kernel, where the user
    stack starts from the registers the task entered the kernel with (bpf_task_pt_regs);
    under them the whole chain, as for samples in user mode."""
    agent, _, pid = run_with_agent([workload("deep"), "3cpu", "sys"], agent_args=DWARF)
    kernel = good = 0
    for p in profiles_of(agent):
        for s in p.samples(pid=pid):
            leaf = p.locations[s["locations"][0]]
            mapping = p.mappings.get(leaf["mapping"])
            if not mapping or mapping["file"] != "[kernel.kallsyms]":
                continue
            kernel += s["count"]
            frames = p.frames(s)
            if "deep_hot" in frames and frames[-1] in ROOTS and \
                    frames[frames.index("deep_hot"):][:len(DEEP_CHAIN)] == DEEP_CHAIN:
                good += s["count"]
    check(kernel > 100, f"only {kernel} samples in the kernel")
    check(good >= 0.9 * kernel,
          f"{good} of {kernel} kernel samples have deep's whole chain under them")


LZMA_CHAIN = ["compress_block", "run_compress", "main"]


def liblzma_counts(p, pids):
    """Samples of pids in profile p whose user leaf (under any interrupt) is in liblzma: (how
    many, how many have the program's whole chain rootward of the library's frames, ending
    at a root)."""
    in_lib = good = 0
    for s in (s for pid in pids for s in p.samples(pid=pid)):
        leaf = p.user_leaf(s)
        mapping = p.mappings.get(leaf["mapping"]) if leaf else None
        if not mapping or "liblzma" not in os.path.basename(mapping["file"]):
            continue
        in_lib += s["count"]
        frames = p.frames(s)
        if LZMA_CHAIN[0] in frames:
            i = frames.index(LZMA_CHAIN[0])
            if frames[i:i + len(LZMA_CHAIN)] == LZMA_CHAIN and frames[-1] in ROOTS:
                good += s["count"]
    return in_lib, good


def liblzma_samples(agent, pids):
    """liblzma_counts() over every profile the agent wrote."""
    counts = [liblzma_counts(p, pids) for p in profiles_of(agent)]
    return sum(n for n, _ in counts), sum(g for _, g in counts)


def test_library_without_frame_pointers_has_the_program_as_caller():
    """A hot loop inside Debian's liblzma (built without frame pointers), called from the
    program: the program's frames are the callers (rootward) of the library's frames."""
    agent, _, pid = run_with_agent([workload("lzmaloop"), "4cpu"], agent_args=DWARF)
    in_lib, good = liblzma_samples(agent, [pid])
    check(in_lib > 200, f"only {in_lib} samples in liblzma:\n{agent.stderr()[-1500:]}")
    # Whole from the dlopen() on: the process's exec_vm is not the published one, so the
    # library is looked up by its file (its table entered by the first run's capture). 97 %:
    # this build measures 100 % (3 of 3 runs), the publication's latency alone 95-98 %.
    check(good >= 0.97 * in_lib,
          f"{good} of {in_lib} liblzma samples have compress_block <- run_compress <- main")

    fp_agent, _, fp_pid = run_with_agent([workload("lzmaloop"), "3cpu"],
                                         agent_args=["--unwind", "fp"])
    fp_good = fp_lib = 0
    for p in profiles_of(fp_agent):
        for s in p.samples(pid=fp_pid):
            frames = p.frames(s)
            fp_lib += s["count"]
            fp_good += s["count"] if "run_compress" in frames else 0
    check(fp_good < 0.5 * fp_lib,
          f"frame pointers alone found run_compress on {fp_good} of {fp_lib} samples")


def test_library_mapped_after_the_first_sample_is_unwound_within_samples():
    """lzmadl is announced while it runs its own code (as most processes are: their first
    sample lands in the dynamic loader), then maps liblzma with dlopen() and spends its time
    there. Until the process is published again with it, a pc in no published mapping of a
    process whose executable memory changed is looked up by its file: in 0.4 s runs, the
    library's samples have the program as caller as they do in a process that linked it."""
    agent = Agent(*DWARF, interval=2).wait_ready()
    time.sleep(1.0)
    pids = []
    for _ in range(6):
        proc = spawn([workload("lzmadl"), "0.4cpu"])
        _, err = wait_exit(proc, 60)
        check(proc.returncode == 0, f"lzmadl failed: {err}")
        pids.append(proc.pid)
    time.sleep(0.5)
    agent.stop()
    in_lib, good = liblzma_samples(agent, pids)
    print(f"{good} of {in_lib} liblzma samples whole to main")
    check(in_lib > 120, f"only {in_lib} samples in liblzma:\n{agent.stderr()[-1500:]}")
    # Whole from the dlopen() on: the process's exec_vm is not the published one, so the
    # library is looked up by its file (its table entered by the first run's capture). 97 %:
    # this build measures 100 % (3 of 3 runs), the publication's latency alone 95-98 %.
    check(good >= 0.97 * in_lib,
          f"{good} of {in_lib} liblzma samples of 0.4 s runs that dlopen() it have "
          f"compress_block <- run_compress <- main")


FILE_LOOKUPS = ("unwind_file_table", "unwind_file_none", "unwind_file_build_id",
                "unwind_file_busy")


def test_library_mapped_after_publication_is_unwound_then_published():
    """A process the agent published maps a library (a plugin loaded late): the agent
    publishes it again with the library, and from then on the library's pcs come from the
    published mappings, with no lookup by file. Whole stacks throughout (the few samples
    between the dlopen() and the new publication are looked up by their file, which
    library_mapped_after_the_first_sample_is_unwound_within_samples judges)."""
    agent = Agent(*DWARF, interval=1).wait_ready()
    time.sleep(1.0)
    # 3 s in its own code first: published well before the dlopen() (~10 ms, `make bench`).
    t0 = time.monotonic()
    proc = spawn([workload("lzmadl"), "6cpu", "3"])
    # Polled until the entry changes after the dlopen(), not longer: every bpftool is a new
    # process of the host, whose samples the late windows' lookups by file would count.
    before = after = None
    while proc.poll() is None and time.monotonic() - t0 < 30:
        entry = unwind_procs_entries(agent.proc.pid).get(proc.pid)
        t = time.monotonic() - t0
        if entry and t < 2.5:
            before = entry
        elif entry and t > 4.0 and before and entry[0] != before[0]:
            after = entry
            break
        time.sleep(0.1)
    _, err = wait_exit(proc, 120)
    check(proc.returncode == 0, f"lzmadl failed: {err}")
    time.sleep(1.5)
    agent.stop()
    # (version, mappings) of its unwind_procs entry.
    check(before, "lzmadl was not published in its 2.5 s before the dlopen()")
    check(after and after[0] != before[0] and after[1] > before[1],
          f"lzmadl published with {before} before the dlopen(), with {after} after it")
    # Per window with liblzma samples of the process: how many, how many whole to main,
    # and the window's lookups by file (host-wide: the host's new processes add a few).
    rows = []
    for w in agent.windows():
        if "file" not in w:
            continue
        in_lib, good = liblzma_counts(pprof_json(w["file"]), [proc.pid])
        if in_lib:
            rows.append((in_lib, good, sum(w.get(k, 0) for k in FILE_LOOKUPS)))
    print(f"by window (liblzma samples, whole, lookups by file): {rows}")
    # 6 s of one thread's CPU at 100 Hz: ~600 samples. The agent publishes the process
    # again within a fraction of a window of the dlopen() (the first window after it had 1
    # lookup by file beside 95 samples); from the 4th window on, a lookup by file per
    # sample would mean a publication that did not take.
    late = rows[3:]
    n_late = sum(n for n, _, _ in late)
    lookups = sum(k for _, _, k in late)
    check(n_late >= 200, f"only {n_late} liblzma samples from the 4th window on: {rows}")
    check(lookups <= 0.1 * n_late,
          f"{lookups} lookups by file beside {n_late} late liblzma samples of a published "
          f"process: {rows}")
    total = sum(n for n, _, _ in rows)
    whole = sum(g for _, g, _ in rows)
    check(whole >= 0.97 * total, f"{whole} of {total} liblzma samples whole: {rows}")


def no_garbage(agent, pid, known_dsos):
    """Every frame of pid's samples is named or in one of its libraries; the stacks end at a
    root or in [truncated], except a few first samples that frame pointers walked before
    the tables were there and whose end cannot be told (an unnamed frame: root_unknown).
    Returns the stacks."""
    stacks = ignis_stacks(agent, pid)
    total = sum(c for _, c in stacks)
    check(total > 100, f"only {total} samples")
    open_ended = []
    for frames, count in stacks:
        if any(f in frames for f in ("bprm_execve", "do_execveat_common.isra.0",
                                     "do_execveat_common", "__x64_sys_execve")):
            continue  # sampled inside execve(): the user registers are the old image's
        if "do_exit" in frames and frames[-1].startswith(("entry_", "asm_")):
            continue  # sampled exiting, its memory released: no user stack is left to walk
        check("[unknown]" not in frames, f"[unknown] frame in {frames}")
        for f in frames:
            if f.startswith("["):
                check(f == "[truncated]" or any(d in f for d in known_dsos),
                      f"frame {f} in {frames}")
        # The dynamic loader's own entry (_dl_start_user) is unnamed in Debian's ld.so.
        if not (frames[-1] in ROOTS or frames[-1] == "[truncated]" or
                frames[-1].startswith("[ld-linux")):
            check(frames[-1].startswith("["), f"a stack ends in {frames[-1]}: {frames}")
            open_ended += [frames] * count
    check(len(open_ended) <= 0.03 * total,
          f"{len(open_ended)} of {total} stacks end in an unnamed frame: {open_ended[:3]}")
    return stacks


def test_cxx_exceptions_and_signal_handlers_unwind_cleanly():
    """C++ exceptions thrown and caught (the CPU in libgcc_s's unwinder and libstdc++) and a
    SIGPROF handler that burns CPU: the programs run normally, no frame is garbage, and the
    stacks go through the throw and through the signal frame into the interrupted code."""
    agent, out, pid = run_with_agent([workload("throws"), "3"], agent_args=DWARF)
    stacks = no_garbage(agent, pid, ("libgcc_s", "libstdc++", "libc.so", "throws", "vdso"))
    total = sum(c for _, c in stacks)
    with_main = sum(c for f, c in stacks if "main" in f and f[-1] in ROOTS)
    check(with_main >= 0.9 * total, f"{with_main} of {total} samples of throws reach main")
    through_throw = sum(c for f, c in stacks
                        if "__cxa_throw" in f and "thrower(unsigned long)" in f and
                        f.index("__cxa_throw") < f.index("thrower(unsigned long)"))
    check(through_throw > 0.2 * total,
          f"only {through_throw} of {total} samples unwind from __cxa_throw into thrower")

    agent, out, pid = run_with_agent([workload("sigprof"), "3"], agent_args=DWARF)
    check(int(out.split()[0]) > 50, f"the handler ran {out.strip()}")
    no_garbage(agent, pid, ("libc.so", "sigprof", "vdso"))
    # The handler's samples by their user leaf: an interrupt on top is not the subject here.
    handler = [(f, c) for f, c in ignis_stacks(agent, pid, user_only=True)
               if f and f[0] == "handler_work"]
    n = sum(c for _, c in handler)
    check(n > 50, f"only {n} samples in the signal handler")
    through = sum(c for f, c in handler
                  if f[:2] == ["handler_work", "on_tick"] and "main" in f and f[-1] in ROOTS)
    check(through >= 0.9 * n,
          f"{through} of {n} handler samples unwind through the signal frame to main: "
          f"{[f for f, _ in handler[:3]]}")


def unwind_procs_entries(agent_pid):
    """The agent's BPF map unwind_procs, read with bpftool: {tgid: (version, nr_maps)}
    (struct ignis_unwind_proc, bpf/profiler.h)."""
    for fd in os.listdir(f"/proc/{agent_pid}/fdinfo"):
        try:
            with open(f"/proc/{agent_pid}/fdinfo/{fd}") as f:
                info = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except OSError:
            continue  # closed meanwhile
        info = {k.strip(): v.strip() for k, v in info.items()}
        if info.get("map_type") == "1" and info.get("key_size") == "4" and \
                info.get("value_size") == "32":
            out = subprocess.run(["bpftool", "-j", "map", "dump", "id", info["map_id"]],
                                 capture_output=True, text=True, check=True).stdout
            entries = {}
            for e in json.loads(out):
                key = bytes(int(b, 16) for b in e["key"])
                value = bytes(int(b, 16) for b in e["value"])
                entries[int.from_bytes(key, "little")] = (
                    int.from_bytes(value[4:8], "little"), int.from_bytes(value[12:16], "little"))
            return entries
    raise AssertionError("the agent has no unwind_procs map")


def unwind_procs_tgids(agent_pid):
    """The tgids the agent has published in unwind_procs."""
    return set(unwind_procs_entries(agent_pid))


def rss_kib(pid):
    """The agent's anonymous resident memory (its heap: what a leak grows)."""
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"RssAnon:\s+(\d+)", f.read()).group(1))


def rss_floor_kib(pid, seconds=2.5):
    """The lowest RssAnon over `seconds` (two or more 1 s windows): the agent opens the DWARF
    a window needs while it symbolizes and closes it after, so its memory rises and falls
    with each window; what a leak grows is the floor between windows."""
    end = time.monotonic() + seconds
    low = rss_kib(pid)
    while time.monotonic() < end:
        time.sleep(0.05)
        low = min(low, rss_kib(pid))
    return low


def test_exec_churn_no_wrong_stacks_tables_freed_memory_flat():
    """Processes exec'ing and exiting constantly (a shell starting 0.2 s `deep` runs) while
    profiled: every stack of them is the real chain or stops early in [truncated], never a
    wrong caller; processes leave the unwinder when they exit, the tables stay one per
    binary, and memory stays flat."""
    port = free_port()
    # The row map of the default before issue 17 (16 MiB): the agent profiles the whole host,
    # and other work on a shared machine (a clang build: 1.95 million rows) can otherwise
    # make deep's table, unused between two runs, give way and be built again: eviction
    # under pressure, which test_cold_table_of_a_running_process_makes_room_for_a_hot_one
    # judges, not this test's caching.
    agent = Agent("--metrics-address", f"127.0.0.1:{port}", "--unwind-table-size", "16MiB",
                  *DWARF, interval=1).wait_ready()
    script = (f"end=$(($(date +%s) + 16)); while [ $(date +%s) -lt $end ]; do "
              f"{workload('deep')} 0.2 >/dev/null & echo $!; wait; /bin/true; done")
    churn = spawn(["sh", "-c", script])
    time.sleep(1)
    published_early = set()
    for _ in range(10):  # catch a run while it is alive
        published_early |= unwind_procs_tgids(agent.proc.pid)
        time.sleep(0.1)
    # Past the start-up: the host's own tables and symbols are loaded, this test's own
    # python and bpftool as well; from here on the same work repeats, and memory must not
    # grow with it.
    time.sleep(5)
    get(f"http://127.0.0.1:{port}/metrics")
    rss_early = rss_floor_kib(agent.proc.pid)
    _, early = get(f"http://127.0.0.1:{port}/metrics")
    pids = {int(p) for p in wait_exit(churn, 60)[0].split()}
    runs = len(pids)
    rss_late = rss_floor_kib(agent.proc.pid)
    published_late = unwind_procs_tgids(agent.proc.pid)
    _, late = get(f"http://127.0.0.1:{port}/metrics")
    agent.stop()
    check(agent.returncode == 0, f"agent exit {agent.returncode}")

    unwound = metric(late, "ignis_unwind_samples_total")
    check(unwound and unwound > 200, f"only {unwound} samples unwound with tables")
    check(runs > 30, f"only {runs} runs of deep")
    left = pids & published_late
    check(not left, f"{len(left)} of {runs} exited runs are still in unwind_procs")
    check(published_early & pids, "no run of deep was ever published")
    # One table per binary (build ID), not per process.
    built = re.findall(r"unwinder: table of (\S+) ", agent.stderr())
    check(built.count(workload("deep")) == 1,
          f"deep's table was built {built.count(workload('deep'))} times over {runs} runs")
    # The agent profiles the whole host: symbol tables of whatever else ran meanwhile are
    # allowed for (they have a budget of their own); the churn itself must add nothing.
    cache_growth = (metric(late, "ignis_symbol_cache_bytes") -
                    metric(early, "ignis_symbol_cache_bytes")) / 1024
    check(rss_late - rss_early < 8 * 1024 + max(cache_growth, 0),
          f"agent RSS grew {(rss_late - rss_early) / 1024:.1f} MiB during the churn "
          f"(symbol cache: {cache_growth / 1024:+.1f} MiB)")

    # Each function's one true caller: a stack may stop early ([truncated]), never go wrong.
    callers = dict(zip(DEEP_CHAIN, DEEP_CHAIN[1:] + ["__libc_start_call_main"]))
    callers.update({"__libc_start_call_main": "__libc_start_main_impl",
                    "__libc_start_main_impl": "_start"})
    total = good = own = in_program = 0
    for p in profiles_of(agent):
        for s in p.data["samples"]:
            if s["labels"].get("comm") != "deep":
                continue
            frames = p.frames(s)
            total += s["count"]
            user = p.user_frames(s)
            # The chain is judged where deep's own code ran: not in the dynamic loader,
            # libc's start-up or exit, whose share of a 0.2 s process grows when the host
            # is busy (5 % in a clean-clone run with a build beside it).
            if user and user[0] in DEEP_CHAIN:
                in_program += s["count"]
            for a, b in zip(frames, frames[1:]):
                check(a not in callers or b in (callers[a], "[truncated]"),
                      f"a wrong stack of deep: {b} called {a} in {frames}")
            # The chain is judged under any kernel frames on top (exec, page faults and exit
            # take a share of a 0.2 s process's samples that varies from run to run).
            if chain_from_leaf(p.user_frames(s), DEEP_CHAIN):
                own += s["count"]
                good += s["count"] if frames[-1] in ROOTS else 0
    # A process's first sample comes before its tables are published (it is what announces
    # the process): its executable's own frames are unwound with the table an earlier run
    # left (unwind_exes), the libraries' with frame pointers, which end in [truncated].
    check(total > 200, f"only {total} samples of the short-lived deep runs")
    check(in_program >= 0.8 * total, f"only {in_program} of {total} samples in deep's code")
    check(own >= 0.97 * in_program,
          f"{own} of {in_program} samples in deep's code have deep_hot ... main "
          f"({total} samples of deep)")
    check(metric(late, "ignis_unwind_executable_only_total") > 0 and
          metric(late, "ignis_unwind_executables") > 0, "no sample unwound by executable")
    check(good >= 0.85 * total, f"{good} of {total} samples of deep have the whole chain")


LLVM_CHAIN = ["parse_module", "run_parse", "main"]
NO_ROOM_LINE = re.compile(r"unwinder: the unwind table of (libLLVM-14\.so\.1) \((\d+) rows, "
                          r"\d+ MiB\) is larger than the row map .*raise --unwind-table-size "
                          r"to (\d+) MiB or more")


def test_table_too_large_for_the_row_map_logged_once_and_stacks_marked():
    """Issue 20 part 4: libLLVM-14's table (about 950 000 rows, 7.2 MiB) with a 4 MiB row
    map. The agent says so once, naming the library and what to raise, however many
    processes map it; a sample in libLLVM keeps its leaf, and its stack is either whole (to
    a root) or ends in [truncated]: never in a bare unmarked frame of the library, where the
    frame-pointer walk through code built without frame pointers lost its way."""
    agent = Agent("--unwind-table-size", "4MiB", *DWARF, interval=2).wait_ready()
    time.sleep(0.5)
    pids = []
    for seconds in ("3", "2"):  # two processes: the second must not log again
        proc = spawn([workload("llvmload"), seconds])
        _, err = wait_exit(proc, 60)
        check(proc.returncode == 0, f"llvmload failed: {err}")
        pids.append(proc.pid)
    time.sleep(2.5)  # one more window
    agent.stop()
    check(agent.returncode == 0, f"agent exit {agent.returncode}:\n{agent.stderr()[-2000:]}")
    log = agent.stderr()
    lines = [m for m in map(NO_ROOM_LINE.search, log.splitlines()) if m]
    check(len(lines) == 1, f"{len(lines)} no-room lines for libLLVM (want 1):\n"
          + "\n".join(l for l in log.splitlines() if "unwind table of" in l)[-2000:])
    rows, want = int(lines[0].group(2)), int(lines[0].group(3))
    check(rows * 8 > 4 << 20 and want << 20 >= rows * 8,
          f"{rows} rows, raise to {want} MiB: the line's figures do not add up")

    in_lib = marked = whole = 0
    bare = {}
    for p in profiles_of(agent):
        for s in (s for pid in pids for s in p.samples(pid=pid)):
            frames = p.user_frames(s)
            files = [os.path.basename(p.mappings.get(p.locations[l]["mapping"], {})
                                      .get("file", "")) for l in s["locations"]]
            if not any(f.startswith("libLLVM-14") for f in files):
                continue
            in_lib += s["count"]
            if frames[-1] == "[truncated]":
                marked += s["count"]
            elif frames[-1] in ROOTS:
                whole += s["count"]
            else:
                key = " <- ".join(frames)
                bare[key] = bare.get(key, 0) + s["count"]
    # 5 s of one busy thread at 100 Hz: ~500 samples, most in the library (fewer on a busy
    # host); 60 samples without one bare frame is no accident.
    check(in_lib >= 60, f"only {in_lib} samples in libLLVM-14:\n{log[-1500:]}")
    worst = sorted(bare.items(), key=lambda kv: -kv[1])[:6]
    check(not bare, f"{sum(bare.values())} of {in_lib} libLLVM samples end in an unmarked "
          f"frame:" + "".join(f"\n  {c} x {k}" for k, c in worst))
    check(marked > 0, f"no libLLVM sample ends in [truncated] ({whole} whole)")


def llvm_stacks(profiles, pids):
    """Samples of pids with a frame in libLLVM-14, in decoded profiles: (how many, whole to
    a root, ending in [truncated], the others by stack)."""
    in_lib = whole = marked = 0
    bare = {}
    for p in profiles:
        for s in (s for pid in pids for s in p.samples(pid=pid)):
            files = [os.path.basename(p.mappings.get(p.locations[l]["mapping"], {})
                                      .get("file", "")) for l in s["locations"]]
            if not any(f.startswith("libLLVM-14") for f in files):
                continue
            frames = p.user_frames(s)
            in_lib += s["count"]
            if frames[-1] == "[truncated]":
                marked += s["count"]
            elif frames[-1] in ROOTS:
                whole += s["count"]
            else:
                key = " <- ".join(frames)
                bare[key] = bare.get(key, 0) + s["count"]
    return in_lib, whole, marked, bare


# A Python process that maps two dozen extension modules (two dozen small tables) and spins.
PYTHON_WITH_MODULES = (
    "import array, binascii, bisect, bz2, ctypes, datetime, fcntl, hashlib, json, lzma, math, "
    "random, select, socket, ssl, struct, subprocess, time, typing, uuid, zlib\n"
    "end = time.time() + 2\n"
    "while time.time() < end:\n"
    "    pass\n")


def test_cold_table_of_a_running_process_makes_room_for_a_hot_one():
    """Eviction by use: a 14 MiB row map (1.8 million rows), and a process that holds a
    table of 950 000 rows (a copy of libLLVM-14 without its build ID, so a table of its own)
    and libz3's (386 000), then sleeps. Then llvmload runs in libLLVM-14 (950 000 rows),
    which fits only without the copy's. The copy's table is cold (no frame in a stack for two
    windows) and makes room although its process runs: libLLVM's table is loaded, never
    reported as not fitting, and its samples come out whole; none ends in a bare frame."""
    folder = tmpdir("ignis-llvmcopy-")
    copy = os.path.join(folder, "libLLVMcopy.so")
    subprocess.run(["objcopy", "--remove-section=.note.gnu.build-id",
                    "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1", copy], check=True)
    agent = Agent("--unwind-table-size", "14MiB", *DWARF, interval=1).wait_ready()
    holder = spawn([workload("llvmload"), "hold", "30", copy])
    try:
        # Seen (0.3 s of CPU), its tables built, then cold for 2+ windows (UNWIND_COLD_WINDOWS).
        # The host's other tables are cold by then too: a small one that needs room (a
        # Python process of the host) must evict small ones, not the copy whose room
        # libLLVM's table waits for, and must not split that room when both wait for the
        # same grace period (a clean-clone CI got libLLVM's table only in the 8th window).
        time.sleep(5.0)
        # Beside llvmload, a Python process with two dozen extension modules: its small
        # tables need room at the same time as libLLVM's (the race of that CI run).
        python = spawn([sys.executable, "-c", PYTHON_WITH_MODULES])
        proc = spawn([workload("llvmload"), "8"])
        _, err = wait_exit(proc, 60)
        check(proc.returncode == 0, f"llvmload failed: {err}")
        wait_exit(python, 30)
        time.sleep(1.5)
    finally:
        holder.kill()
        holder.wait()
    agent.stop()
    log = agent.stderr()
    check(agent.returncode == 0, f"agent exit {agent.returncode}:\n{log[-2000:]}")
    check("evicting the table of libLLVMcopy.so" in log,
          "the copy's cold table was not evicted:\n"
          + "\n".join(l for l in log.splitlines() if "unwind table of" in l
                      or "evicting" in l or "libLLVM" in l)[-3000:])
    check(not re.search(r"unwind table of libLLVM-14\S* .* row map", log),
          "libLLVM's table was reported as not fitting:\n"
          + "\n".join(l for l in log.splitlines() if "unwind table of" in l
                      or "no room for" in l or "evicting the table of libLLVM" in l))
    profiles = profiles_of(agent)
    in_lib, whole, marked, bare = llvm_stacks(profiles, [proc.pid])
    # 8 s of one busy thread at 100 Hz: ~800 samples (fewer on a busy host). Until the
    # table is loaded (built in 0.5-2 s, then a grace period), samples end in [truncated].
    check(in_lib >= 150, f"only {in_lib} samples in libLLVM-14:\n{log[-1500:]}")
    worst = sorted(bare.items(), key=lambda kv: -kv[1])[:6]
    check(not bare, f"{sum(bare.values())} of {in_lib} libLLVM samples end in an unmarked "
          f"frame:" + "".join(f"\n  {c} x {k}" for k, c in worst))
    # The table is built in 0.3 s (a few on a busy host), its room comes free after one
    # grace period, and once loaded it stays (llvmload keeps it hot): from llvmload's 4th
    # window on the samples are whole, but for the odd one. Before the fix the table came
    # in the 6th to 8th window, or never, in 5 of 6 runs.
    per_window = [(n, w) for n, w, _, _ in (llvm_stacks([p], [proc.pid]) for p in profiles)
                  if n]
    late = per_window[3:]
    n_late, w_late = sum(n for n, _ in late), sum(w for _, w in late)
    check(n_late >= 200 and w_late >= 0.9 * n_late,
          f"{w_late} of {n_late} libLLVM samples from the 4th window on whole "
          f"({whole} of {in_lib} in all, {marked} [truncated]): by window {per_window}")
