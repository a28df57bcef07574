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
    check(metric(text, 'ignis_stacks_lost_total{reason="stacks_map_full"}') == 0, "stacks lost")
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


def close_in(pid, fd):
    """close(fd) inside process pid, by ptrace: stop its main thread, point it at a syscall
    instruction of its libc with the registers of close(fd), single-step, put its registers
    back. (gdb's `call` does the same, but writes the extended register state back, which
    fails on CPUs with AMX tile state: "Couldn't write extended state status".)"""
    PTRACE_GETREGS, PTRACE_SETREGS, PTRACE_SINGLESTEP = 12, 13, 9
    PTRACE_ATTACH, PTRACE_DETACH = 16, 17
    RAX, RDI, ORIG_RAX, RIP = 10, 14, 15, 16	# struct user_regs_struct, x86_64
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    syscall_insn = None
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb") as mem:
        for line in maps:
            fields = line.split()
            if "x" in fields[1] and len(fields) > 5 and "libc.so" in fields[5]:
                start, end = (int(x, 16) for x in fields[0].split("-"))
                mem.seek(start)
                at = mem.read(end - start).find(b"\x0f\x05")
                if at >= 0:
                    syscall_insn = start + at
                    break
    check(syscall_insn, f"no syscall instruction in {pid}'s libc")

    def call(request, data=None):
        if libc.ptrace(request, pid, None, data) < 0:
            raise OSError(ctypes.get_errno(), f"ptrace({request}, {pid})")

    saved, regs = (ctypes.c_ulonglong * 27)(), (ctypes.c_ulonglong * 27)()
    call(PTRACE_ATTACH)
    try:
        os.waitpid(pid, 0x40000000)
        call(PTRACE_GETREGS, ctypes.addressof(saved))
        ctypes.memmove(regs, saved, ctypes.sizeof(saved))
        regs[RIP], regs[RAX], regs[RDI] = syscall_insn, 3, fd	# SYS_close
        regs[ORIG_RAX] = (1 << 64) - 1	# not in a system call: nothing to restart
        call(PTRACE_SETREGS, ctypes.addressof(regs))
        call(PTRACE_SINGLESTEP)
        os.waitpid(pid, 0x40000000)
        call(PTRACE_GETREGS, ctypes.addressof(regs))
        result = ctypes.c_longlong(regs[RAX]).value
        call(PTRACE_SETREGS, ctypes.addressof(saved))
    finally:
        call(PTRACE_DETACH)
    check(result == 0, f"close({fd}) in {pid} returned {result}")


def test_healthz_turns_503_when_a_bpf_link_goes():
    """Close one CPU's BPF link descriptor inside the agent (ptrace): it notices, 503."""
    port = free_port()
    agent = Agent("--metrics-address", f"127.0.0.1:{port}", interval=1).wait_ready()
    url = f"http://127.0.0.1:{port}/healthz"
    wait_for(lambda: get(url)[0] == 200, 10, "healthy")
    pid = agent.proc.pid
    links = []
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                if "link_type:\tperf" in f.read():
                    links.append(int(fd))
        except FileNotFoundError:
            pass  # a descriptor the agent closed meanwhile (a file it read)
    check(len(links) == os.cpu_count(), f"perf links {links}")
    close_in(pid, links[0])
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


# ---- Kubernetes ------------------------------------------------------------------------------

import http.server
import json
import ssl
import threading
import uuid

KUBE_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "kubernetes")


def cgroup2_root():
    with open("/proc/self/mounts") as f:
        for line in f:
            dev, mnt, fstype = line.split()[:3]
            if fstype == "cgroup2":
                return mnt
    raise AssertionError("no cgroup2 hierarchy mounted")


class FakeApiServer(http.server.ThreadingHTTPServer):
    """Replays recorded API responses: 503 for the first `down` requests, then the pod
    list, then a watch that sends its events after `delay` s and stays open."""
    daemon_threads = True

    def __init__(self, replace, token, down=2, delay=2.0):
        super().__init__(("127.0.0.1", 0), FakeApiHandler)
        self.replace, self.token, self.down, self.delay = replace, token, down, delay
        self.requests = []
        self.stop = threading.Event()

    def fixture(self, name):
        with open(os.path.join(KUBE_DATA, name)) as f:
            text = f.read()
        for k, v in self.replace.items():
            text = text.replace(k, v)
        return text


class FakeApiHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        srv = self.server
        srv.requests.append((self.path, self.headers.get("Authorization")))
        if self.headers.get("Authorization") != f"Bearer {srv.token}":
            return self.reply(401, '{"kind":"Status","code":401}')
        if not self.path.startswith("/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1"):
            return self.reply(404, '{"kind":"Status","code":404}')
        if srv.down > 0:
            srv.down -= 1
            return self.reply(503, '{"kind":"Status","code":503}')
        if "watch=1" not in self.path:
            return self.reply(200, srv.fixture("pods.json"))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if srv.stop.wait(srv.delay):
            return
        for line in srv.fixture("watch.json").splitlines():
            self.chunk(line + "\n")
        srv.stop.wait(60)
        self.chunk("")

    def chunk(self, text):
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def reply(self, code, body):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def make_tls(dirname):
    """A CA and a server certificate for 127.0.0.1, made with openssl."""
    ca_key, ca = os.path.join(dirname, "ca.key"), os.path.join(dirname, "ca.pem")
    key, csr, crt = (os.path.join(dirname, n) for n in ("srv.key", "srv.csr", "srv.pem"))
    ext = os.path.join(dirname, "ext.cnf")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    for argv in (["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
                  "-days", "1", "-subj", "/CN=ignis test CA"],
                 ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj",
                  "/CN=127.0.0.1"],
                 ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                  "-out", crt, "-days", "1", "-extfile", ext]):
        subprocess.run(["openssl"] + argv, check=True, capture_output=True)
    return ca, crt, key


class PodCgroup:
    """A cgroup shaped like a kubelet's (systemd driver) for one container."""

    def __init__(self, qos, pod_uid, runtime_prefix, container_id):
        base = os.path.join(cgroup2_root(), "kubepods.slice", f"kubepods-{qos}.slice")
        self.dirs = [os.path.join(cgroup2_root(), "kubepods.slice"), base,
                     os.path.join(base, f"kubepods-{qos}-pod{pod_uid.replace('-', '_')}.slice")]
        self.dirs.append(os.path.join(self.dirs[-1], f"{runtime_prefix}{container_id}.scope"))
        for d in self.dirs:
            os.makedirs(d, exist_ok=True)

    def run(self, argv):
        """Start argv inside the cgroup (it moves itself in before exec)."""
        procs = os.path.join(self.dirs[-1], "cgroup.procs")
        return spawn(["sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh"] + argv)

    def remove(self):
        for d in reversed(self.dirs):
            try:
                os.rmdir(d)
            except OSError:
                pass


def test_kubernetes_names_pods_and_containers():
    """Against a local HTTPS API server replaying recorded responses: down at first (503),
    then a list naming pod A, then a watch adding pod B mid-run. Processes in kubelet-shaped
    cgroups get namespace/pod/container labels; no window is ever delayed."""
    tls = tmpdir()
    ca, crt, key = make_tls(tls)
    token = os.path.join(tls, "token")
    with open(token, "w") as f:
        f.write("s3cr3t-token\n")
    uid_a, uid_b = str(uuid.uuid4()), str(uuid.uuid4())
    id_a, id_b = uuid.uuid4().hex * 2, uuid.uuid4().hex * 2
    srv = FakeApiServer({"@UID_A@": uid_a, "@UID_B@": uid_b, "@ID_A@": id_a, "@ID_B@": id_b},
                        "s3cr3t-token")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(crt, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    cg_a = PodCgroup("besteffort", uid_a, "cri-containerd-", id_a)
    cg_b = PodCgroup("burstable", uid_b, "crio-", id_b)
    try:
        agent = Agent("--kubernetes", "--kubernetes-api-url",
                      f"https://127.0.0.1:{srv.server_address[1]}", "--kubernetes-token-file",
                      token, "--kubernetes-ca-file", ca, "--node-name", "node-1",
                      "--kubernetes-pod-label", "app.kubernetes.io/name", interval=2).wait_ready()
        a = cg_a.run([workload("burn"), "9"])
        b = cg_b.run([workload("burn"), "9"])
        wait_exit(a, 30)
        wait_exit(b, 30)
        time.sleep(0.5)
        srv.stop.set()
        agent.stop()
        profiles = profiles_of_agent(agent)
    finally:
        srv.stop.set()
        srv.shutdown()
        cg_a.remove()
        cg_b.remove()
    want = {a.pid: {"namespace": "shop", "pod": "storefront-7d9f8b6c4-x2k9q", "container": "web",
                    "app_kubernetes_io_name": "storefront", "container_id": id_a[:12]},
            b.pid: {"namespace": "batch", "pod": "worker-0", "container": "worker",
                    "app_kubernetes_io_name": "worker", "container_id": id_b[:12]}}
    for pid, labels in want.items():
        named = [s for p in profiles for s in p.samples(pid=pid)
                 if all(s["labels"].get(k) == v for k, v in labels.items())]
        check(named, f"no sample of {pid} labeled {labels}; got "
                     f"{[s['labels'] for p in profiles for s in p.samples(pid=pid)][:2]}")
        # Every sample of the workload (not of the shell that moved itself into the cgroup
        # before its exec) has the container id, named or not yet.
        check(all(s["labels"].get("container_id") == labels["container_id"]
                  for p in profiles for s in p.samples(pid=pid, comm="burn")), "container_id")
    # The API was down for the first requests: the agent came back to it.
    check(sum(1 for p, _ in srv.requests if "watch=1" not in p) >= 3, srv.requests)
    check(all(auth == "Bearer s3cr3t-token" for _, auth in srv.requests), "token not sent")
    check("s3cr3t" not in agent.stderr(), "the token reached the log")
    for w in agent.windows()[:-1]:
        check(1800 <= w["duration_ms"] <= 2600, f"a window was delayed: {w}")


def profiles_of_agent(agent):
    from harness import pprof_json
    return [pprof_json(p) for p in agent.profiles()]
