# SPDX-License-Identifier: Apache-2.0
"""Operating the agent (issue 6): configuration from file and environment, the Prometheus
endpoint read by promtool, and /healthz turning 503 when BPF or the drain stops."""
import ctypes
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request

from harness import Agent, check, path, spawn, tmpdir, wait_exit, workload


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def metric(text, name):
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def test_settings_from_file_and_environment():
    """A YAML file and the environment configure a real run; flags win over both."""
    out = tmpdir()
    config = os.path.join(tmpdir(), "ignis.yaml")
    with open(config, "w") as f:
        f.write(f"output_dir: {out}\ninterval: 9\nfrequency: 50\n")
    env = dict(os.environ, IGNIS_CONFIG=config, IGNIS_INTERVAL="1", IGNIS_DURATION="3")
    p = subprocess.run([path("ignis"), "--frequency", "200", "--print-config"], env=env,
                       capture_output=True, text=True)
    check(p.returncode == 0, p.stderr)
    check(f'output_dir: "{out}"  # {config}:1: output_dir' in p.stdout, p.stdout)
    check('interval: "1"  # environment IGNIS_INTERVAL' in p.stdout, p.stdout)
    check('frequency: "200"  # --frequency' in p.stdout, p.stdout)
    p = subprocess.run([path("ignis"), "--frequency", "200", "--log-level", "debug"], env=env,
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, p.stderr[-2000:])
    check("at 200 Hz; a profile every 1 s into " + out in p.stderr, p.stderr[-2000:])
    check(len([f for f in os.listdir(out) if f.endswith(".pb.gz")]) >= 2, os.listdir(out))
    # A bad value in the file stops the agent with the file and line.
    with open(config, "a") as f:
        f.write("top: lots\n")
    p = subprocess.run([path("ignis")], env=env, capture_output=True, text=True)
    check(p.returncode == 2, f"exit {p.returncode}")
    check(p.stderr.splitlines()[0] ==
          f"ignis: {config}:4: top: lots: must be a number of functions from 0 to 1000",
          p.stderr)


def test_metrics_endpoint_parses_with_promtool():
    port = free_port()
    agent = Agent("--metrics-address", f"127.0.0.1:{port}", interval=1).wait_ready()
    burner = spawn([workload("burn"), "3"])
    wait_exit(burner, 30)
    time.sleep(1.5)
    status, text = get(f"http://127.0.0.1:{port}/metrics")
    health = get(f"http://127.0.0.1:{port}/healthz")
    agent.stop()
    check(status == 200, f"/metrics {status}")
    check(health == (200, "ok\n"), f"/healthz {health}")
    lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                          text=True)
    check(lint.returncode == 0, f"promtool: {lint.stdout}{lint.stderr}")
    check(metric(text, "ignis_samples_total") > 250, "too few samples")
    check(metric(text, "ignis_samples_profiled_total") > 250, "too few profiled samples")
    check(metric(text, "ignis_windows_total") >= 3, "windows")
    check(metric(text, "ignis_drain_duration_seconds_count") >= 3, "drain histogram")
    check(metric(text, "ignis_cpus_sampled") == os.cpu_count(), "cpus")
    check(metric(text, 'ignis_samples_dropped_total{reason="stacks_map_full"}') == 0, "drops")
    check(0 < metric(text, "process_resident_memory_bytes") < 200e6, "rss")
    check(metric(text, "ignis_processes_tracked") >= 1, "processes")
    check(metric(text, 'ignis_symbolizations_total{result="hit"}') > 0, "symbolization")


def ptrace(request, tid):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    if libc.ptrace(ctypes.c_long(request), ctypes.c_long(tid), None, None) < 0:
        raise OSError(ctypes.get_errno(), f"ptrace({request}, {tid})")


def test_healthz_turns_503_when_drains_stall():
    """Stop only the main thread (ptrace): the HTTP thread answers 503, then 200 again."""
    port = free_port()
    agent = Agent("--metrics-address", f"127.0.0.1:{port}", interval=1).wait_ready()
    url = f"http://127.0.0.1:{port}/healthz"
    wait_for(lambda: get(url)[0] == 200, 10, "healthy")
    PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH = 0x4206, 0x4207, 17
    tid = agent.proc.pid
    ptrace(PTRACE_SEIZE, tid)
    try:
        ptrace(PTRACE_INTERRUPT, tid)
        status, body = wait_for(lambda: (lambda r: r if r[0] == 503 else None)(get(url)), 30,
                                "503 while the drain is stopped")
        check("no window drained for" in body, body)
    finally:
        os.waitpid(tid, 0x40000000)	# __WALL: reap the ptrace stop
        ptrace(PTRACE_DETACH, tid)
    wait_for(lambda: get(url)[0] == 200, 15, "healthy again")
    agent.stop()
    check(agent.returncode == 0, f"exit {agent.returncode}")


def test_healthz_turns_503_when_a_bpf_link_goes():
    """Close one CPU's BPF link descriptor inside the agent (gdb): it notices, 503."""
    port = free_port()
    agent = Agent("--metrics-address", f"127.0.0.1:{port}", interval=1).wait_ready()
    url = f"http://127.0.0.1:{port}/healthz"
    wait_for(lambda: get(url)[0] == 200, 10, "healthy")
    pid = agent.proc.pid
    links = []
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        with open(f"/proc/{pid}/fdinfo/{fd}") as f:
            if "link_type:\tperf" in f.read():
                links.append(int(fd))
    check(len(links) == os.cpu_count(), f"perf links {links}")
    g = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex",
                        f"call (int)close({links[0]})"], capture_output=True, text=True,
                       timeout=60)
    check(g.returncode == 0, g.stdout[-2000:] + g.stderr[-2000:])
    status, body = wait_for(lambda: (lambda r: r if r[0] == 503 else None)(get(url)), 10,
                            "503 after the link went")
    check("BPF link of 1 CPU(s) is gone" in body, body)
    agent.stop()
    check("the sampler's BPF link is gone" in agent.stderr(), "no log line for the lost link")


def test_metrics_address_taken_is_an_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        p = subprocess.run([path("ignis"), "--metrics-address", f"127.0.0.1:{port}",
                            "--output-dir", tmpdir(), "--duration", "1"],
                           capture_output=True, text=True, timeout=60)
    check(p.returncode == 1, f"exit {p.returncode}")
    check(f"--metrics-address 127.0.0.1:{port}: cannot listen there" in p.stderr, p.stderr)
