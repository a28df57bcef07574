# SPDX-License-Identifier: Apache-2.0
"""Fleet realities (issue 20): an agent that cannot see the host's processes says so. Outside
the host's PID namespace it exits 1 with what to fix; without CAP_SYS_PTRACE it warns, and
the processes it cannot read keep their frames' addresses and are counted; without CAP_BPF
or CAP_PERFMON the error names the one missing. The real binary, real BPF."""
import os
import subprocess
import time

from harness import check, path, pprof_json, spawn, tmpdir, wait_exit, workload

NOBODY = 61000  # a user that owns nothing


def run(argv, timeout=60):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def test_pid_namespace_of_its_own_is_refused():
    """In a PID namespace of its own (with its own /proc, as a pod without hostPID, or with
    the host's /proc), the agent exits 1 at once with one line that says what to fix, and
    writes nothing."""
    for how in (["--mount-proc"], []):
        out = tmpdir()
        p = run(["unshare", "--pid", "--fork", *how, path("ignis"), "--output-dir", out,
                 "--duration", "3", "--interval", "1"])
        lines = p.stderr.splitlines()
        check(p.returncode == 1, f"unshare --pid {how}: exit {p.returncode}: {p.stderr}")
        check(len(lines) == 1 and lines[0].startswith("ignis: error: "),
              f"unshare --pid {how}: want one error line: {lines}")
        want = "PID namespace of its own" if how else "another PID namespace"
        for part in (want, "hostPID: true", "the host's /proc", "run it on the host"):
            check(part in lines[0], f"unshare --pid {how}: {part!r} not said: {lines[0]}")
        check(not os.listdir(out), f"files written: {os.listdir(out)}")
    # The same binary in the host's namespace starts (the check is no false alarm).
    p = run([path("ignis"), "--output-dir", tmpdir(), "--duration", "1", "--interval", "1"])
    check(p.returncode == 0 and "PID namespace" not in p.stderr,
          f"on the host: exit {p.returncode}: {p.stderr}")


def test_bpf_refused_names_the_missing_capability():
    """Without CAP_BPF or CAP_PERFMON (as a user of its own, the other one granted) the one
    error line names the missing capability, and only it."""
    for have, missing in (("bpf", "CAP_PERFMON"), ("perfmon", "CAP_BPF")):
        caps = f"-all,+{have}"
        p = run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                 f"--inh-caps={caps}", f"--ambient-caps={caps}", f"--bounding-set={caps}",
                 "--", path("ignis"), "--output-dir", tmpdir(), "--duration", "1"])
        lines = p.stderr.splitlines()
        check(p.returncode == 1, f"with only {have}: exit {p.returncode}: {p.stderr}")
        check(len(lines) == 1 and lines[0].startswith(
            f"ignis: error: cannot load BPF: permission denied: {missing} missing;"),
            f"with only {have}: {lines}")


def test_without_ptrace_frames_keep_addresses_and_are_counted():
    """The agent as root without CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH (capsh --drop) cannot
    read the maps of a root process with every capability. It warns at start, naming both;
    the process keeps its name and each of its frames its address ([unknown], several per
    stack, not one lost frame), and its samples are counted as denied, not as exited."""
    out = tmpdir("ignis-out-")
    w = spawn([workload("burn"), "6"])
    time.sleep(0.3)
    agent = spawn(["capsh", "--drop=cap_sys_ptrace,cap_dac_read_search", "--", "-c",
                   f"exec {path('ignis')} --output-dir {out} --interval 2 --duration 5 "
                   "--log-level debug"])
    _, err = wait_exit(agent, 60)
    wait_exit(w, 30)
    check(agent.returncode == 0, f"agent exit {agent.returncode}:\n{err[-3000:]}")
    warns = [line for line in err.splitlines() if "warn" in line]
    check(any("no CAP_SYS_PTRACE" in line and "[unknown]" in line and "reason=\"denied\""
              in line for line in warns), f"no warning about CAP_SYS_PTRACE: {warns}")
    check(any("no CAP_DAC_READ_SEARCH" in line for line in warns),
          f"no warning about CAP_DAC_READ_SEARCH: {warns}")
    check(f"pid {w.pid} (burn): cannot read /proc/{w.pid}/maps" in err,
          "no warning for the unreadable process")
    denied = exited = 0
    for line in err.splitlines():
        if "window seq=" in line:
            fields = dict(kv.split("=", 1) for kv in line.split("window ", 1)[1].split()
                          if "=" in kv)
            denied += int(fields.get("denied", 0))
            exited += int(fields.get("no_image", 0))
    samples = frames = 0
    addresses = set()
    for f in sorted(os.listdir(out)):
        prof = pprof_json(os.path.join(out, f))
        for s in prof.samples(pid=w.pid):
            check(s["labels"].get("comm") == "burn", f"process name lost: {s['labels']}")
            user = prof.user_frames(s)
            check(user and all(x == "[unknown]" for x in user), f"user frames: {user}")
            n = len(prof.frames(s)) - len(user)
            locs = [prof.locations[i] for i in s["locations"][n:]]
            check(all(l["address"] and l["mapping"] == 0 for l in locs),
                  f"an [unknown] frame without its address: {locs}")
            samples += s["count"]
            frames = max(frames, len(locs))
            addresses.update(l["address"] for l in locs)
    check(samples >= 200, f"only {samples} samples of the unreadable process")
    check(frames >= 3, f"at most {frames} frames in a stack of burn: frames lost")
    check(len(addresses) >= 3, f"addresses {sorted(addresses)}")
    check(denied >= samples, f"{samples} samples of burn, {denied} counted denied")
    check(exited < samples, f"denied samples counted as exited ({exited})")
