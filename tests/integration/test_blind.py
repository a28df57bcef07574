# SPDX-License-Identifier: Apache-2.0
"""Fleet realities (issue 20): an agent that cannot see the host's processes says so. Outside
the host's PID namespace it exits 1 with what to fix; without CAP_SYS_PTRACE it warns, and
the processes it cannot read keep their frames' addresses and are counted; without CAP_BPF
or CAP_PERFMON the error names the one missing. The real binary, real BPF."""
import os
import re
import subprocess
import time

from harness import check, path, pprof_json, spawn, tmpdir, workload
from test_operate import free_port

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


def _window_sums(log, keys):
    """Per window, the figures of `keys` from the `window seq=N ...` lines, by profile file."""
    out = {}
    for line in log.splitlines():
        if "window seq=" not in line:
            continue
        fields = dict(kv.split("=", 1) for kv in line.split("window ", 1)[1].split() if "=" in kv)
        out[os.path.basename(fields.get("file", "-"))] = {k: int(fields.get(k, 0)) for k in keys}
    return out


def cpu_ticks(pid):
    """A process's CPU time (user + system) in clock ticks (1/100 s), from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def _blind_run(prefix, out):
    """A root `burn` (every capability) profiled by the agent started through `prefix`.
    Returns (agent's stderr, burn's pid, its /metrics after two windows, the samples burn's
    CPU time makes from the agent's "profiling" line to its exit, at 100 Hz)."""
    import urllib.request
    # A free port, not a fixed one: whatever else the host runs (a benchmark's agent, a
    # previous run's leftover) may hold any given port.
    metrics_address = f"127.0.0.1:{free_port()}"
    # Two threads, running past the agent's end (then killed): the agent profiles a fixed 5 s,
    # whatever share of the CPUs the host's other work leaves burn.
    w = spawn([workload("burn"), "60", "2"])
    time.sleep(0.3)
    # The debug log to a file: a pipe nobody reads while /metrics is polled would fill up.
    log_path = os.path.join(tmpdir("ignis-log-"), "agent.log")
    log = open(log_path, "w")
    agent = spawn(prefix + [path("ignis"), "--output-dir", out, "--interval", "2",
                            "--duration", "5", "--log-level", "debug",
                            "--metrics-address", metrics_address], stdout=subprocess.DEVNULL,
                  stderr=log)
    metrics = "never reached"
    cpu_at_start = None
    while agent.poll() is None:  # until two windows are in, while the agent runs
        time.sleep(0.3)
        if cpu_at_start is None:
            with open(log_path) as f:
                if "profiling " in f.read():
                    cpu_at_start = cpu_ticks(w.pid)
        try:
            with urllib.request.urlopen(f"http://{metrics_address}/metrics", timeout=5) as r:
                metrics = r.read().decode()
        except OSError as e:
            metrics = f"unreachable: {e}"
            continue
        m = re.search(r"^ignis_windows_total (\d+)$", metrics, re.M)
        if m and int(m.group(1)) >= 2:
            break
    try:
        agent.wait(timeout=60)
    except subprocess.TimeoutExpired:
        agent.kill()
    expected = (cpu_ticks(w.pid) - cpu_at_start) if cpu_at_start is not None else None
    w.kill()
    w.wait()
    log.close()
    with open(log_path) as f:
        err = f.read()
    check(agent.returncode == 0, f"agent exit {agent.returncode}:\n{err[-3000:]}")
    return err, w.pid, metrics, expected


def test_without_ptrace_frames_keep_addresses_and_are_counted():
    """The agent without CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH, as root (capsh --drop, and
    CAP_DAC_OVERRIDE, which does the latter's work for reading) and as a user of its own
    with CAP_BPF and CAP_PERFMON only, profiling a root process with every capability. It
    warns at start, naming both; the process is tracked (its name kept, not counted as
    exited: before issue 20 the refused /proc/PID/exe made it look exec'd, every frame
    [unknown] and uncounted); every frame keeps its address (several per stack) in the
    process's own mapping or [unknown]; each distinct frame of a file it could not open is
    counted (file_denied_frames; denied for samples of processes whose maps are refused)."""
    drop = "cap_sys_ptrace,cap_dac_read_search,cap_dac_override"
    caps = "-all,+bpf,+perfmon"
    runs = {"root": ["capsh", f"--drop={drop}", "--"], "user": [
        "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
        f"--inh-caps={caps}", f"--ambient-caps={caps}", f"--bounding-set={caps}", "--"]}
    for who, prefix in runs.items():
        out = tmpdir("ignis-out-")
        os.chmod(out, 0o777)
        if who == "root":  # capsh runs bash: its -c takes the command line
            prefix = prefix + ["-c", 'exec "$0" "$@"']
        err, pid, metrics, expected = _blind_run(prefix, out)
        # /metrics has the counters by reason (from the one table), nonzero where it counted.
        m = re.search(r'^ignis_frames_file_unreadable_total\{reason="denied"\} (\d+)$', metrics,
                      re.M)
        check(m and int(m.group(1)) > 0, f"{who}: /metrics: {metrics[:3000]}")
        for series in ('ignis_samples_without_mappings_total{reason="denied"}',
                       'ignis_samples_without_mappings_total{reason="exited"}',
                       'ignis_frames_file_unreadable_total{reason="error"}',
                       "ignis_processes_unreadable "):
            check(series in metrics, f"{who}: /metrics lacks {series}")
        warns = [line for line in err.splitlines() if "warn" in line]
        check(any("no CAP_SYS_PTRACE" in line and "[unknown]" in line for line in warns),
              f"{who}: no warning about CAP_SYS_PTRACE: {warns}")
        check(any("no CAP_DAC_READ_SEARCH" in line for line in warns),
              f"{who}: no warning about CAP_DAC_READ_SEARCH: {warns}")
        sums = _window_sums(err, ("file_denied_frames", "denied", "no_image"))
        samples = frames = libc_only = 0
        addresses = set()
        for f in sorted(os.listdir(out)):
            prof = pprof_json(os.path.join(out, f))
            burn_locs = set()
            for s in prof.samples(pid=pid):
                check(s["labels"].get("comm") == "burn", f"{who}: name lost: {s['labels']}")
                user = prof.user_frames(s)
                # Its own binary cannot be opened; a library the agent holds open already
                # (its own libc) may be named. A sample in clock_gettime (libc's, or the
                # vDSO's under it) is walked by frame pointer through libc, which keeps none
                # (and whose table the agent cannot apply, blind to the mappings): the walk
                # may end there, in libc (a few in each of two clean-clone CI runs).
                in_libc = user and all(x == "[libc.so.6]" or x.startswith("__vdso_")
                                       for x in user)
                libc_only += s["count"] if in_libc else 0
                check(user and (in_libc or any(x in ("[burn]", "[unknown]") for x in user)) and
                      not {"burn_spin", "burn_loop", "main"} & set(user),
                      f"{who}: user frames {user}")
                locs = [prof.locations[i] for i in s["locations"][len(s["locations"]) -
                                                                  len(user):]]
                # [truncated] (a walk that stopped early) is a placeholder, not a frame.
                locs = [loc for loc in locs if not loc["lines"] or
                        loc["lines"][0]["function"] != "[truncated]"]
                for loc in locs:
                    m = prof.mappings.get(loc["mapping"])
                    check(loc["address"], f"{who}: a frame without its address: {loc}")
                    if m and os.path.basename(m["file"]) == "burn":
                        check(not m["has_functions"] and not loc["lines"],
                              f"{who}: burn's mapping {m}, location {loc}")
                        burn_locs.add(loc["id"])
                samples += s["count"]
                frames = max(frames, len(locs))
                addresses.update(loc["address"] for loc in locs)
            w = sums.get(f)
            check(w is not None, f"{who}: no window line for {f}")
            check(w["file_denied_frames"] >= len(burn_locs),
                  f"{who}: {f}: {len(burn_locs)} frames of burn's unreadable file, "
                  f"{w['file_denied_frames']} counted")
            # Tracked: its frames in its own mapping, or (where the kernel refuses the maps)
            # its samples counted as denied; never passed off as a process that exited.
            n = prof.total(pid=pid)
            check(not n or burn_locs or w["denied"] >= n,
                  f"{who}: {f}: burn not tracked ({n} samples): {w}")
            check(w["no_image"] < n or not n, f"{who}: {f}: burn counted as exited: {w}")
        # 200 samples, or half of what burn's CPU time while the agent profiled makes at
        # 100 Hz where the host's other work left it less (the process is profiled, not
        # dropped: that would leave next to none).
        floor = 200 if expected is None else min(200, expected / 2)
        check(samples >= floor, f"{who}: only {samples} samples of the unreadable process "
              f"(its CPU time while profiled makes {expected})")
        check(libc_only <= 0.1 * samples, f"{who}: {libc_only} of {samples} samples walked "
              "no further than libc")
        check(frames >= 3, f"{who}: at most {frames} frames in a stack of burn: frames lost")
        check(len(addresses) >= 3, f"{who}: addresses {sorted(addresses)}")
        check(sum(w["file_denied_frames"] + w["denied"] for w in sums.values()) > 0,
              f"{who}: nothing counted: {sums}")
