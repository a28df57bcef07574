# SPDX-License-Identifier: Apache-2.0
"""Go binaries (issue 20): names from .gopclntab when .symtab and DWARF are gone
(-ldflags='-s -w'), and unwinding from the pcsp tables so that a frameless leaf keeps its
caller. The workload (tests/workloads/goleaf) burns in main.spin, a leaf without a frame,
called by main.hot, called by main.main and by main.burn on two more goroutines."""
import os
import re
import subprocess

import harness
from harness import check, workload
from test_pipeline import profiles_of, run_with_agent
from test_unwind import DWARF, ignis_stacks

# The stacks a sample of the leaf may have, leaf first: the main goroutine's and the
# burning goroutines' (`go burn(...)` with arguments runs burn from a closure the compiler
# makes, main.main.func1). Both end at runtime.goexit, Go's outermost frame (TOPFRAME).
MAIN_STACK = ["main.spin", "main.hot", "main.main", "runtime.main", "runtime.goexit"]
BURN_STACK = ["main.spin", "main.hot", "main.burn", "main.main.func1", "runtime.goexit"]


def check_frameless(binary):
    """main.spin really has no frame: `go tool objdump` shows no SUBQ of SP and no PUSHQ BP
    (the compiler's prologue), so a frame-pointer walk from it skips its caller."""
    p = subprocess.run(["go", "tool", "objdump", "-s", r"^main\.spin$", binary],
                       capture_output=True, text=True)
    check(p.returncode == 0 and "TEXT main.spin" in p.stdout, f"go tool objdump: {p.stderr}")
    check(not re.search(r"SUBQ \$0x[0-9a-f]+, SP|PUSHQ BP|MOVQ BP, ", p.stdout),
          f"main.spin has a frame:\n{p.stdout}")


def leaf_stacks(agent, pid):
    """The user stacks (frames, count) of pid whose leaf is main.spin, and all of pid's."""
    stacks = ignis_stacks(agent, pid, user_only=True)
    return [(f, c) for f, c in stacks if f and f[0] == "main.spin"], stacks


def judge(name, leaf, min_share=0.95):
    """The share of leaf samples whose whole stack is one of the two expected (so main.hot is
    the leaf's caller and the goroutine's frames run out to runtime.goexit). The margin comes
    from the counts: at least 300 samples of the leaf (the workload burns 5 s of CPU time,
    ~500 samples at 100 Hz however loaded the machine is, ~97 % of them in the leaf), of
    which the only expected misses are the first few, walked by frame pointers before the
    process's table is in BPF: 5 % of 300 is 15 samples, several times what those cost."""
    total = sum(c for _, c in leaf)
    check(total >= 300, f"{name}: only {total} samples in main.spin")
    good = sum(c for f, c in leaf if f in (MAIN_STACK, BURN_STACK))
    with_caller = sum(c for f, c in leaf if len(f) > 1 and f[1] == "main.hot")
    other = {}
    for f, c in leaf:
        if f not in (MAIN_STACK, BURN_STACK):
            other[" <- ".join(f)] = other.get(" <- ".join(f), 0) + c
    worst = "".join(f"\n  {c} x {k}" for k, c in sorted(other.items(), key=lambda kv: -kv[1])[:6])
    check(with_caller >= min_share * total,
          f"{name}: main.hot is the caller on {with_caller} of {total} samples:{worst}")
    check(good >= min_share * total,
          f"{name}: {good} of {total} leaf samples with the whole goroutine stack:{worst}")
    burn = sum(c for f, c in leaf if f == BURN_STACK)
    check(burn >= 0.3 * total, f"{name}: the goroutines' stacks on {burn} of {total}")
    return with_caller / total


def run_goleaf(binary, agent_args=DWARF):
    """goleaf burning 5 s of CPU time on 3 goroutines. It starts once the agent has had 3 s
    to build the tables of what already runs (1.2 s of build time on the test machine, the
    largest table 0.4 s): what is judged is Go's tables in use, not how long a table takes
    to arrive behind a host's backlog (the leaf's samples before then are walked by frame
    pointers)."""
    agent, _, pid = run_with_agent([binary, "5", "2"], seconds_before=3.0,
                                   agent_args=agent_args)
    return agent, pid


def test_go_stripped_named_and_unwound():
    """The -s -w build (no .symtab, no DWARF): every frame named from .gopclntab (main.spin,
    main.hot, main.burn..., never `[goleaf-sw]`), and the leaf's caller main.hot on >= 95 %
    of the leaf's samples, the stacks whole to runtime.goexit."""
    binary = workload("goleaf-sw")
    check_frameless(workload("goleaf"))  # the same code, linked without symbols
    out = subprocess.run(["readelf", "-S", binary], capture_output=True, text=True).stdout
    check(".gopclntab" in out and ".symtab" not in out and ".debug_info" not in out,
          f"goleaf-sw is not a -s -w build:\n{out}")
    agent, pid = run_goleaf(binary)
    leaf, stacks = leaf_stacks(agent, pid)
    total = sum(c for _, c in stacks)
    unnamed = sum(c for f, c in stacks if any(x == "[goleaf-sw]" for x in f))
    check(unnamed <= 0.005 * total,
          f"{unnamed} of {total} samples hold an unnamed frame of goleaf-sw")
    share = judge("goleaf-sw", leaf)
    # File and line from the pclntab too: main.hot's frame over the leaf is at its call.
    source = os.path.join(harness.ROOT, "tests", "workloads", "goleaf", "main.go")
    with open(source) as f:
        call_line = 1 + next(i for i, l in enumerate(f) if "x = spin(20000, x)" in l)
    at_call = hot = 0
    for p in profiles_of(agent):
        for s in p.samples(pid=pid):
            for lid in s["locations"]:
                lines = p.locations[lid]["lines"]
                if lines and lines[-1]["function"] == "main.hot":
                    hot += s["count"]
                    if lines[-1]["file"] == source and lines[-1]["line"] == call_line:
                        at_call += s["count"]
                    break
    check(hot > 0 and at_call >= 0.9 * hot,
          f"main.hot at {source}:{call_line} on {at_call} of {hot} samples")
    print(f"goleaf-sw: main.hot the caller on {share:.1%} of the leaf's samples, at "
          f"main.go:{call_line} on {at_call} of {hot}, {unnamed} of {total} samples with an "
          "unnamed frame")


def test_go_unstripped_leaf_keeps_caller():
    """The unstripped build: the same (names from .symtab and DWARF); and, as a contrast,
    the frame-pointer walk (--unwind fp) loses main.hot under the frameless leaf, which is
    what the pcsp rows fix."""
    binary = workload("goleaf")
    check_frameless(binary)
    agent, pid = run_goleaf(binary)
    leaf, _ = leaf_stacks(agent, pid)
    share = judge("goleaf", leaf)
    agent, pid = run_goleaf(binary, agent_args=["--unwind", "fp"])
    leaf, _ = leaf_stacks(agent, pid)
    total = sum(c for _, c in leaf)
    fp = sum(c for f, c in leaf if len(f) > 1 and f[1] == "main.hot")
    check(total >= 300 and fp <= 0.05 * total,
          f"--unwind fp: main.hot under the leaf on {fp} of {total}: the contrast is gone")
    print(f"goleaf: main.hot the caller on {share:.1%} of the leaf's samples with tables, "
          f"{fp} of {total} by frame pointers")


def test_go_cgo_leaf_keeps_caller():
    """A cgo build (-s -w, linked by gcc: .eh_frame for its C code, none for its Go code): the
    Go code's rows come from pcsp beside the C code's from .eh_frame, so the frameless leaf
    keeps its caller there too, the stacks whole to runtime.goexit."""
    binary = workload("goleaf-cgo-sw")
    out = subprocess.run(["readelf", "-S", binary], capture_output=True, text=True).stdout
    check(".eh_frame" in out and ".gopclntab" in out and ".symtab" not in out,
          f"goleaf-cgo-sw is not a -s -w cgo build:\n{out}")
    agent, pid = run_goleaf(binary)
    leaf, _ = leaf_stacks(agent, pid)
    share = judge("goleaf-cgo-sw", leaf)
    print(f"goleaf-cgo-sw: main.hot the caller on {share:.1%} of the leaf's samples")
