# SPDX-License-Identifier: Apache-2.0
"""Shipping OpenTelemetry profiles (issue 19, experimental): the real agent with real BPF
against an OTLP/HTTP receiver that decodes with Debian's python3-protobuf from the pinned
schema (agent/proto/otlp_profiles.proto, opentelemetry-proto v1.11.0; otlp_receiver.py).
Every sample's stack, resolved through the dictionary, names the same functions with the same
counts as the agent's local pprof of the same window; the target's labels arrive as resource
attributes (container.id from a kubelet-shaped cgroup); a 400 (a Collector built for another
release) drops the profile, counted, and is never retried."""
import collections
import re
import signal
import subprocess
import time
import uuid

from harness import Agent, check, path, pprof_json, tmpdir, wait_exit, workload
from server_doubles import OtlpReceiver
from test_operate import PodCgroup
from test_ship import finish, free_port, metric, metrics, run_services, services, stop_agent


def gnu_build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    check(m, f"{path} has no GNU build id:\n{out}")
    return m.group(1)


def local_stacks(agent, pid):
    """{time_nanos: Counter(frames tuple -> samples)} of one process in the local profiles,
    without the samples it had before execve() (this test's own program under its name)."""
    with open("/proc/self/comm") as f:
        before_exec = f.read().strip()
    out = {}
    for f in agent.profiles():
        prof = pprof_json(f)
        c = collections.Counter()
        for s in prof.samples(pid=pid):
            if s["labels"].get("comm") in (before_exec, "sh") or not s["count"]:
                continue
            c[tuple(prof.frames(s))] += s["count"]
        if c:
            out[prof.data["time_nanos"]] = c
    return out


def received_stacks(rx, service, sample_type="samples"):
    """{time_nanos: Counter(frames tuple -> value)} of one service's profiles of one type."""
    out = {}
    for req in rx.stored():
        for rp in req:
            if rp["resource"].get("service.name") != service:
                continue
            for p in rp["profiles"]:
                if p["type"] != sample_type:
                    continue
                c = out.setdefault(p["time_nanos"], collections.Counter())
                for s in p["samples"]:
                    c[tuple(s["frames"])] += s["value"]
    return out


def resources(rx, service):
    return [rp for req in rx.stored() for rp in req
            if rp["resource"].get("service.name") == service]


def test_stacks_match_local_pprof():
    """Two services and one in a kubelet-shaped cgroup: per window one request per target;
    its samples/count profile resolves, stack by stack, to the local pprof's frames and
    counts; the cpu/nanoseconds profile is the count times the period; resource attributes
    service.name, host.name, the static labels (a dotted name kept) and container.id; the comm sample label as
    process.executable.name."""
    container_id = uuid.uuid4().hex * 2
    cg = PodCgroup("besteffort", str(uuid.uuid4()), "cri-containerd-", container_id)
    try:
        with OtlpReceiver() as rx:
            paths = services("otlp-alpha", "otlp-beta")
            agent = Agent("--server-url", rx.url, "--server-protocol", "otlp",
                          "--label", "env=ci", "--label", "service.version=1.2",
                          "--node-name", "node-ci-1",
                          "--sample-labels", "comm").wait_ready()
            procs = run_services(paths, 5)
            boxed = cg.run([workload("burn"), "5"])
            pids = {n: p.pid for n, p in procs.items()}
            finish(procs)
            wait_exit(boxed, 60)
            time.sleep(0.5)
            stop_agent(agent)
            rx.wait_for(lambda: all(resources(rx, n) for n in ("otlp-alpha", "otlp-beta",
                                                                container_id[:12])), 10)
            calls = rx.calls()
            check(calls and all(c["status"] == 200 for c in calls),
                  f"refused: {[c for c in calls if c['status'] != 200][:3]}")
            check(all(c["content_type"] == "application/x-protobuf" and
                      c["content_encoding"] == "gzip" for c in calls),
                  f"headers {calls[0]}")
            for name, pid in list(pids.items()) + [(container_id[:12], boxed.pid)]:
                local = local_stacks(agent, pid)
                got = received_stacks(rx, name)
                # 5 s at 100 Hz is 500 samples, but three spinners share two CPUs with the
                # machine's other work (and the cgroup's its own CPU weight): the comparison
                # is exact, this only makes sure there was something to compare.
                check(sum(sum(c.values()) for c in local.values()) > 20,
                      f"{name}: only {sum(sum(c.values()) for c in local.values())} samples")
                check(got == local, f"{name}: stacks differ from the local pprof:\n"
                      f"received {dict((t, c.most_common(3)) for t, c in got.items())}\n"
                      f"local {dict((t, c.most_common(3)) for t, c in local.items())}")
                check(any("burn_spin" in f for c in got.values() for f in c),
                      f"{name}: burn_spin in no stack")
                cpu = received_stacks(rx, name, "cpu")
                period = None
                for rp in resources(rx, name):
                    for p in rp["profiles"]:
                        check(p["period_type"] == ["cpu", "nanoseconds"],
                              f"period type {p['period_type']}")
                        period = p["period"]
                        if p["type"] == "samples":
                            check(p["unit"] == "count", f"unit {p['unit']}")
                check({t: {k: v * period for k, v in c.items()} for t, c in got.items()} ==
                      {t: dict(c) for t, c in cpu.items()},
                      f"{name}: cpu/nanoseconds is not count x period {period}")
                for rp in resources(rx, name):
                    # An OTel-style name stays as given (Pyroscope's service_version).
                    want = {"service.name": name, "host.name": "node-ci-1", "env": "ci",
                            "service.version": "1.2"}
                    if name == container_id[:12]:
                        want["container.id"] = container_id
                    check(rp["resource"] == want, f"resource {rp['resource']}")
                    check(rp["scope"][0] == "ignis", f"scope {rp['scope']}")
                    for p in rp["profiles"]:
                        for s in p["samples"]:
                            check(s["attributes"].get("process.executable.name") in
                                  (name, "burn"), f"attributes {s['attributes']}")
                # The executable's mapping carries its GNU build id (one mapping per build
                # id in a window: the copies and the boxed burn share one, named after
                # whichever process came first).
                ids = {a.get("process.executable.build_id.gnu") for rp in resources(rx, name)
                       for a in rp["mapping_attributes"].values()}
                check(gnu_build_id(workload("burn")) in ids,
                      f"{name}: the executable's build id is in no mapping: {ids}")
                times = [p["time_nanos"] for rp in resources(rx, name) for p in rp["profiles"]
                         if p["type"] == "samples"]
                check(len(times) == len(set(times)), f"{name}: a window sent twice {times}")
    finally:
        cg.remove()


def test_wrong_version_dropped_not_retried():
    """A Collector that answers 503 once, then 400 "unsupported profiles version" to every
    request: the 503 is retried; each 400 drops its profile, counted in /metrics and logged,
    and no profile is sent twice after a 400."""
    with OtlpReceiver(script=[503] + [400] * 1000) as rx:
        paths = services("otlp-legacy")
        port = free_port()
        agent = Agent("--server-url", rx.url, "--server-protocol", "otlp",
                      "--upload-concurrency", "1",
                      "--metrics-address", f"127.0.0.1:{port}").wait_ready()
        procs = run_services(paths, 4)
        finish(procs)
        time.sleep(4.5)
        # The agent keeps sending this host's other processes, and /metrics shows the
        # counters as of the last window's end: read it once two more windows are written
        # after a first look at the receiver (the first of them published the counters at
        # its start, perhaps before that look; waited for, not slept: a busy host delays a
        # window's end), and before a second look.
        before = len([c for c in rx.calls() if c["status"] == 400])
        agent.wait_windows(len(agent.windows()) + 2)
        text = metrics(port)
        calls = rx.calls()
        stop_agent(agent)
        check(calls and calls[0]["status"] == 503, f"first call {calls[:1]}")
        refused = [c for c in calls if c["status"] == 400]
        check(len(refused) >= 3, f"only {len(refused)} requests")
        keys = [(c["service"], tuple(map(tuple, c["windows"]))) for c in refused]
        check(len(keys) == len(set(keys)), f"a profile was sent again after a 400: {keys}")
        check(calls[1]["windows"] == calls[0]["windows"] and
              calls[1]["service"] == calls[0]["service"], "the 503 was not retried")
        check(metric(text, "ignis_upload_retries_total") == 1, "the 503 retry not counted")
        check(metric(text, 'ignis_upload_errors_total{code="5xx"}') == 1, "503 not counted")
        n400 = metric(text, 'ignis_upload_errors_total{code="400"}')
        check(before <= n400 <= len(refused),
              f"400s counted {n400}, answered {before} to {len(refused)}")
        dropped = metric(text, 'ignis_profiles_dropped_total{reason="rejected"}')
        check(dropped == n400, f"{n400} 400s but {dropped} dropped")
        check(metric(text, "ignis_profiles_sent_total") == 0, "something counted as sent")
        log = agent.stderr()
        check("refused, HTTP 400: unsupported profiles version" in log,
              "the refusal is not logged with the server's words:\n" + log[-2000:])
        check("experimental" in log, "no warning that OTLP profiles are experimental")


def test_sanitized_agent_through_failures():
    """The ASan/UBSan build encoding OTLP (with sample labels and off-CPU time) through 503,
    400, then 200s, a spool and SIGTERM: no sanitizer report, exit 0, profiles delivered."""
    with OtlpReceiver(script=[503, 400]) as rx:
        paths = services("san-otlp")
        agent = Agent("--server-url", rx.url, "--server-protocol", "otlp",
                      "--spool-dir", tmpdir("ignis-spool-"), "--sample-labels", "comm",
                      "--sample-labels", "thread_name", "--off-cpu",
                      binary=path("san", "ignis"), interval=1).wait_ready(timeout=60)
        procs = run_services(paths, 4)
        finish(procs)
        rx.wait_for(lambda: resources(rx, "san-otlp"), 15)
        stop_agent(agent, signal.SIGTERM, within=10)
        log = agent.stderr()
        check("runtime error" not in log and "AddressSanitizer" not in log and
              "LeakSanitizer" not in log, f"sanitizer report:\n{log[-4000:]}")
        check(resources(rx, "san-otlp"), "nothing delivered")
        types = {p["type"] for req in rx.stored() for rp in req for p in rp["profiles"]}
        check({"samples", "cpu"} <= types, f"sample types {types}")
