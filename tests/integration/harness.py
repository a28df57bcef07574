# SPDX-License-Identifier: Apache-2.0
"""Helpers for the integration tests: run the real agent (real BPF) and real workloads, read
its profiles with our own decoder (pprof_dump, which also checks the format's invariants)
and with `go tool pprof` as the independent parser."""
import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

ROOT = None
BUILD = None
_procs = []
_tmpdirs = []
_agents = []


def configure(root, build):
    global ROOT, BUILD
    ROOT, BUILD = root, build


def path(*parts):
    return os.path.join(BUILD, *parts)


def workload(name):
    return path("tests", "workloads", name)


def tmpdir(prefix="ignis-test-"):
    d = tempfile.mkdtemp(prefix=prefix)
    _tmpdirs.append(d)
    return d


def spawn(argv, **kw):
    """Start a process that cleanup() kills if the test forgets it."""
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("text", True)
    p = subprocess.Popen(argv, **kw)
    _procs.append(p)
    return p


def cleanup():
    while _procs:
        p = _procs.pop()
        if p.poll() is None:
            p.kill()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
    _agents.clear()
    while _tmpdirs:
        shutil.rmtree(_tmpdirs.pop(), ignore_errors=True)


def agent_logs(lines=60):
    """The end of the log of each agent the running test started, without libbpf's loading
    chatter: printed under a failure, so that a clean-clone CI's failure says what the agent
    saw (its logs are removed with the test's folders)."""
    out = []
    for agent in _agents:
        try:
            text = agent.stderr()
        except OSError:
            continue
        kept = [line[:240] for line in text.splitlines() if not line.startswith("libbpf: ")]
        out.append(f"--- agent {' '.join(agent.argv[1:])}: last {min(lines, len(kept))} of "
                   f"{len(kept)} lines\n" + "\n".join(kept[-lines:]))
    return "\n".join(out)


atexit.register(cleanup)


class TestFailure(AssertionError):
    pass


def check(cond, message):
    if not cond:
        raise TestFailure(message)


def child_of(proc, timeout=5):
    """The pid of proc's first child (unshare --fork runs the command as its child)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
                kids = f.read().split()
            if kids:
                return int(kids[0])
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError(f"no child of {proc.args}")


WINDOW_LINE = re.compile(r"window seq=(\d+) (.*)")


class Agent:
    """build/ignis in its own output folder, at debug level so that the per-window counters
    (the `window seq=N key=value ...` lines) can be read."""

    def __init__(self, *args, binary=None, interval=2, out=None):
        self.out = out or tmpdir("ignis-out-")
        self.log_path = os.path.join(tmpdir("ignis-log-"), "agent.log")
        self.argv = [binary or path("ignis"), "--output-dir", self.out, "--interval",
                     str(interval), "--log-level", "debug"] + [str(a) for a in args]
        self.log = open(self.log_path, "w")
        self.proc = spawn(self.argv, stdout=subprocess.PIPE, stderr=self.log)
        self.returncode = None
        _agents.append(self)

    def wait_ready(self, timeout=30):
        """Wait until BPF is attached (the agent says it is profiling)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "profiling " in self.stderr():
                return self
            if self.proc.poll() is not None:
                raise TestFailure(f"agent exited {self.proc.returncode}:\n{self.stderr()}")
            time.sleep(0.05)
        raise TestFailure("agent not ready:\n" + self.stderr())

    def stop(self, sig=signal.SIGINT, timeout=15):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.returncode = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise TestFailure(f"agent did not stop within {timeout} s")
        self.stdout = self.proc.stdout.read()
        self.log.close()
        return self

    def wait(self, timeout):
        try:
            self.returncode = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TestFailure(f"agent did not end within {timeout} s:\n{self.stderr()}")
        self.stdout = self.proc.stdout.read()
        self.log.close()
        return self

    def stderr(self):
        with open(self.log_path) as f:
            return f.read()

    def windows(self):
        """The per-window counters, as dicts of ints (file: the profile's path)."""
        result = []
        for line in self.stderr().splitlines():
            m = WINDOW_LINE.search(line)
            if not m:
                continue
            w = {"seq": int(m.group(1))}
            for kv in m.group(2).split():
                k, _, v = kv.partition("=")
                w[k] = v if k == "file" else int(v)
            result.append(w)
        return result

    def wait_windows(self, count, timeout=30):
        """Wait until `count` windows have been written (their `window seq=` lines, logged
        once the profile is out): a condition, where a fixed sleep of so many intervals is
        exceeded when a busy host delays a window's end."""
        deadline = time.monotonic() + timeout
        while len(self.windows()) < count:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise TestFailure(f"{len(self.windows())} windows written, waited for "
                                  f"{count}:\n{self.stderr()[-2000:]}")
            time.sleep(0.05)
        return self

    def profiles(self):
        return sorted(os.path.join(self.out, f) for f in os.listdir(self.out)
                      if f.endswith(".pb.gz"))


def pprof_json(profile_path):
    """Decode with our own protobuf-c decoder; it fails on any broken invariant."""
    p = subprocess.run([path("tests", "pprof_dump"), profile_path], capture_output=True,
                       text=True)
    check(p.returncode == 0, f"pprof_dump {profile_path}: {p.stderr}")
    return Profile(json.loads(p.stdout))


class Profile:
    def __init__(self, data):
        self.data = data
        self.locations = {l["id"]: l for l in data["locations"]}
        self.mappings = {m["id"]: m for m in data["mappings"]}

    def frames(self, sample):
        """Function names of a sample, leaf first, inline frames expanded; an unnamed frame
        reads as "[basename-of-mapping]" as `go tool pprof` shows it."""
        out = []
        for lid in sample["locations"]:
            loc = self.locations[lid]
            if loc["lines"]:
                out += [l["function"] for l in loc["lines"]]
            else:
                m = self.mappings.get(loc["mapping"])
                out.append("[" + os.path.basename(m["file"]) + "]" if m else "[unknown]")
        return out

    def user_locations(self, sample):
        """The sample's location ids without the kernel ones on top (leaf first)."""
        locs = sample["locations"]
        while locs and self.mappings.get(self.locations[locs[0]]["mapping"], {}).get(
                "file") == "[kernel.kallsyms]":
            locs = locs[1:]
        return locs

    def user_frames(self, sample):
        """frames() without the kernel frames on top: the user stack an interrupt, a softirq
        or a system call sat on, which is what a test of user code judges."""
        return self.frames(dict(sample, locations=self.user_locations(sample)))

    def user_leaf(self, sample):
        """The location of the user leaf (under any kernel frames), or None."""
        locs = self.user_locations(sample)
        return self.locations[locs[0]] if locs else None

    def samples(self, **labels):
        return [s for s in self.data["samples"]
                if all(s["labels"].get(k) == v for k, v in labels.items())]

    def total(self, **labels):
        return sum(s["count"] for s in self.samples(**labels))


def sample_margin(expected, share, floor=0.05, sigmas=4):
    """How far a count of timer samples may lie from `expected` (CPU time x Hz) by chance.
    Each tick of a CPU's sampling clock finds a thread of the workload running there or
    not: with `share` the fraction of the wall time its threads ran (CPU time / (wall time x
    threads)), a binomial count of variance expected x (1 - share). Measured beside a
    spinner and an exec loop (burn 4 2 under the agent, 22 runs, share 0.24-0.53, up to
    +13 % and -12 % off) the spread was 1.7 times that standard deviation (threads move
    between CPUs whose clocks tick at different phases, and the scheduler's slices tie
    neighbouring ticks): the variance taken is 3 times the binomial one, capped at
    Poisson's (expected). Alone on the CPUs (share ~1) that is nothing and `floor` (a
    fraction of expected) holds; on a host whose other work takes half the CPUs, 4
    standard deviations of ~400 samples are 20 %."""
    share = min(max(share, 0.0), 1.0)
    variance = expected * min(1.0, 3 * (1 - share))
    return max(floor * expected, sigmas * variance ** 0.5)


def merged_samples(profiles, **labels):
    """(Profile, sample) pairs across several windows' profiles."""
    return [(p, s) for p in profiles for s in p.samples(**labels)]


def go_pprof(args, env=None):
    e = dict(os.environ, HOME=os.environ.get("HOME", "/root"),
             PPROF_TMPDIR=tmpdir("pprof-tmp-"))
    if env:
        e.update(env)
    p = subprocess.run(["go", "tool", "pprof"] + args, capture_output=True, text=True,
                       env=e, timeout=120)
    check(p.returncode == 0, f"go tool pprof {' '.join(args)} failed:\n{p.stderr}")
    return p.stdout


def go_traces(profile_path, *extra, env=None):
    """`go tool pprof -traces`: list of (labels dict, samples, frames leaf first)."""
    text = go_pprof(["-traces", "-symbolize=none", *extra, profile_path], env=env)
    traces = []
    for block in text.split("-----------+-------------------------------------------------------")[1:]:
        labels, frames, value = {}, [], None
        for line in block.splitlines():
            if not line.strip():
                continue
            m = re.match(r"^\s*(\w+):\s+(.*)$", line)
            if m and value is None and not re.match(r"^\s*[\d.]+(ms|s|us|ns)\s", line):
                labels[m.group(1)] = m.group(2).strip()
                continue
            m = re.match(r"^\s*([\d.]+)(ms|s|us|ns)\s+(.*)$", line)
            if m and value is None:
                scale = {"ns": 1e-6, "us": 1e-3, "ms": 1, "s": 1000}[m.group(2)]
                value = float(m.group(1)) * scale
                frames.append(m.group(3).strip())
            else:
                frames.append(line.strip())
        if value is not None:
            traces.append((labels, value, frames))
    return traces


def is_subsequence(needle, haystack):
    it = iter(haystack)
    return all(any(x == y for y in it) for x in needle)


def wait_exit(proc, timeout):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise TestFailure(f"{proc.args} did not end within {timeout} s")
    return out, err
