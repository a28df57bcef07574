# SPDX-License-Identifier: Apache-2.0
"""Shipping to Grafana Pyroscope (issue 4): the real agent with real BPF against a test
receiver that implements the server's contract (pyroscope_receiver.py): one series per
target per window with the right labels and the local profile's totals, in order through
outages, retries with backoff, refusals, a server that never answers, a restart with a
spool, TLS, authentication and the tenant header, and no secret in any log."""
import base64
import os
import re
import shutil
import signal
import time
import urllib.request

from harness import (Agent, check, go_pprof, path, pprof_json, spawn, tmpdir, wait_exit,
                     workload)
from pyroscope_receiver import Receiver, make_ca_and_cert

PASSWORD = "s3cr3t-Pa55word-for-tests"


def services(*names):
    """Copies of the burn workload under other names: one service each (exe basename)."""
    d = tmpdir("ignis-svc-")
    paths = {}
    for n in names:
        paths[n] = os.path.join(d, n)
        shutil.copy(workload("burn"), paths[n])
    return paths


def run_services(paths, seconds, threads=1):
    return {n: spawn([p, str(seconds), str(threads)]) for n, p in paths.items()}


def finish(procs):
    for name, p in procs.items():
        _, err = wait_exit(p, 60)
        check(p.returncode == 0, f"{name} failed: {err}")


def local_totals(agent, pids):
    """{time_nanos: {pid: samples}} from the agent's local profiles, without the samples a
    process had between fork() and execve(): those ran this test's own program (named as
    this process is), so the server rightly counts them under another target."""
    with open("/proc/self/comm") as f:
        before_exec = f.read().strip()
    out = {}
    for f in agent.profiles():
        prof = pprof_json(f)
        per = out.setdefault(prof.data["time_nanos"], {})
        for pid in pids:
            n = prof.total(pid=pid) - prof.total(pid=pid, comm=before_exec)
            if n:
                per[pid] = per.get(pid, 0) + n
    return out


def received(receiver, service):
    """{time_nanos: samples} of what the receiver accepted for one service."""
    out = {}
    for a in receiver.accepted_by_service().get(service, []):
        t = a["profile"]["time_nanos"]
        out[t] = out.get(t, 0) + sum(s["values"][0] for s in a["profile"]["samples"])
    return out


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        return r.read().decode()


def metric(text, name):
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_agent(agent, sig=signal.SIGINT, within=5.0):
    start = time.monotonic()
    agent.stop(sig)
    took = time.monotonic() - start
    check(agent.returncode == 0, f"agent exit {agent.returncode}:\n{agent.stderr()[-3000:]}")
    check(took <= within, f"agent took {took:.1f} s to stop (limit {within} s)")
    return agent


def test_three_services_one_series_each():
    """Three services → per window one push per service, with __name__, service_name,
    hostname and the static label; no pid/tid; totals equal to the local profile's."""
    with Receiver() as rx:
        paths = services("billing", "search", "checkout")
        agent = Agent("--server-url", rx.url, "--label", "env=ci",
                      "--node-name", "node-ci-1").wait_ready()
        procs = run_services(paths, 5)
        pids = {n: p.pid for n, p in procs.items()}
        finish(procs)
        time.sleep(0.5)
        stop_agent(agent)
        rx.wait_for(lambda: set(paths) <= set(rx.accepted_by_service()), 10)

        check(not rx.rejected and not rx.protocol_errors,
              f"rejected {rx.rejected[:3]} protocol errors {rx.protocol_errors[:3]}")
        local = local_totals(agent, pids.values())
        for name, pid in pids.items():
            got = rx.accepted_by_service()[name]
            times = [a["profile"]["time_nanos"] for a in got]
            check(len(times) == len(set(times)), f"{name}: two series in one window: {times}")
            for a in got:
                check(a["endpoint"] == "push", "not the push API")
                check(a["headers"].get("content-type") == "application/proto",
                      f"content type {a['headers'].get('content-type')}")
                check(a["headers"].get("connect-protocol-version") == "1",
                      "no Connect-Protocol-Version: 1")
                check(a["labels"] == {"__name__": "process_cpu", "service_name": name,
                                      "hostname": "node-ci-1", "env": "ci"},
                      f"labels {a['labels']}")
                for s in a["profile"]["samples"]:
                    check(not s["labels"], f"sample labels sent: {s['labels']}")
            want = {t: per[pid] for t, per in local.items() if pid in per}
            check(received(rx, name) == want,
                  f"{name}: received {received(rx, name)} != local {want}")
            # The comparison above is exact; this only makes sure there was something to
            # compare. Three 5 s spinners on two CPUs get ~330 samples each on a quiet
            # machine, far fewer when other work shares the CPUs: ask for 20.
            check(sum(want.values()) > 20, f"{name}: only {sum(want.values())} samples")
        # The independent parser reads what the server stored, with the hot function named.
        out = go_pprof(["-top", "-symbolize=none",
                        rx.write_accepted(tmpdir())[0]])
        check("cpu" in out and "Showing nodes" in out, f"go tool pprof -top:\n{out}")
        text = "".join(go_pprof(["-top", "-symbolize=none", f]) for f in
                       rx.write_accepted(tmpdir()) if "billing" in f)
        check("burn_spin" in text, f"burn_spin missing from billing's profiles:\n{text}")


def test_outage_then_recovery_in_order():
    """The server is down for several windows, then up: every window arrives, each service's
    in window order, none missing."""
    rx = Receiver().start()
    url = rx.url
    rx.stop()  # connection refused from here on
    paths = services("steady")
    agent = Agent("--server-url", url, "--metrics-address", f"127.0.0.1:{(port := free_port())}",
                  interval=1).wait_ready()
    procs = run_services(paths, 9)
    time.sleep(5)
    text = metrics(port)
    check(metric(text, 'ignis_upload_errors_total{code="network"}') >= 1,
          "no network error counted during the outage")
    check(metric(text, "ignis_upload_queue_profiles") >= 3, "nothing queued in the outage")
    rx.start()
    finish(procs)
    time.sleep(0.5)
    stop_agent(agent)
    local = local_totals(agent, [procs["steady"].pid])
    want = {t: per[procs["steady"].pid] for t, per in local.items() if per}
    try:
        rx.wait_for(lambda: received(rx, "steady") == want, 15)
        got = rx.accepted_by_service()["steady"]
        times = [a["profile"]["time_nanos"] for a in got]
        check(times == sorted(times), f"out of order: {times}")
        check(received(rx, "steady") == want,
              f"received {received(rx, 'steady')} != local {want}")
        check(len(want) >= 8, f"only {len(want)} windows of steady")
    finally:
        rx.stop()


def test_errors_backoff_and_refusals():
    """500, 500, then 429 with Retry-After: 2, then 200: the pauses are honoured and every
    window arrives; a service refused with 400 is not retried, counted, logged once, and the
    other service is delivered."""
    with Receiver() as rx:
        rx.program(script=[500, 500, (429, {"Retry-After": "2"})],
                   reject_services={"refused": 400})
        paths = services("accepted", "refused")
        port = free_port()
        agent = Agent("--server-url", rx.url, "--upload-concurrency", "1",
                      "--metrics-address", f"127.0.0.1:{port}").wait_ready()
        procs = run_services(paths, 5)
        pids = {n: p.pid for n, p in procs.items()}
        finish(procs)
        time.sleep(3)
        text = metrics(port)
        stop_agent(agent)
        local = local_totals(agent, pids.values())
        want = {t: per[pids["accepted"]] for t, per in local.items() if pids["accepted"] in per}
        rx.wait_for(lambda: received(rx, "accepted") == want, 10)
        check(received(rx, "accepted") == want,
              f"received {received(rx, 'accepted')} != local {want}")

        reqs = [r for r in rx.requests if r["path"].startswith("/push")]
        check([r["status"] for r in reqs[:3]] == [500, 500, 429],
              f"statuses {[r['status'] for r in reqs[:4]]}")
        gap1 = reqs[1]["time"] - reqs[0]["time"]
        gap2 = reqs[2]["time"] - reqs[1]["time"]
        gap3 = reqs[3]["time"] - reqs[2]["time"]
        check(gap1 >= 0.2, f"no backoff after the first 500: {gap1:.3f} s")
        check(gap2 >= 0.45, f"backoff did not grow after the second 500: {gap2:.3f} s")
        check(gap3 >= 1.9, f"Retry-After: 2 not honoured: next request after {gap3:.3f} s")

        refused_windows = {t for t, per in local.items() if pids["refused"] in per}
        refusals = [r for r in reqs if r["service_name"] == "refused" and r["status"] == 400]
        check(len(refusals) == len(refused_windows),
              f"{len(refusals)} refusals for {len(refused_windows)} windows: a 400 was retried")
        check(metric(text, 'ignis_profiles_dropped_total{reason="rejected"}') >= 1,
              "refusals not counted as dropped")
        check(metric(text, 'ignis_upload_errors_total{code="400"}') >= 1, "400 not counted")
        check(metric(text, 'ignis_upload_errors_total{code="5xx"}') == 2, "5xx not counted")
        check(metric(text, 'ignis_upload_errors_total{code="429"}') == 1, "429 not counted")
        log = agent.stderr()
        check(log.count("refused, HTTP 400") == 1,
              f"the refusal is logged {log.count('refused, HTTP 400')} times, not once")
        check("rejected by test" in log, "the server's message is not in the log")


def test_server_that_never_answers():
    """A server that accepts connections and never answers: requests time out, windows keep
    coming on time, the queue stays within its budget (the oldest go, counted), and the
    agent still stops within 5 s."""
    with Receiver() as rx:
        rx.program(script=["hang"] * 1000)
        paths = services("busy")
        port = free_port()
        budget = 64 * 1024
        agent = Agent("--server-url", rx.url, "--upload-timeout", "2s",
                      "--queue-max-bytes", str(budget), "--frequency", "1000",
                      "--metrics-address", f"127.0.0.1:{port}", interval=1).wait_ready()
        started = time.monotonic()
        procs = run_services(paths, 14, threads=2)
        peak = 0
        for _ in range(14):
            time.sleep(1)
            text = metrics(port)
            peak = max(peak, metric(text, "ignis_upload_queue_bytes"))
        finish(procs)
        stop_agent(agent)
        check(peak <= budget, f"queue took {peak} bytes, budget {budget}")
        check(metric(text, 'ignis_upload_errors_total{code="network"}') >= 2,
              "no timeouts counted")
        check(metric(text, 'ignis_profiles_dropped_total{reason="queue_full"}') >= 1,
              "the queue never filled: the test did not test the bound")
        check(metric(text, "ignis_profiles_sent_total") == 0, "something was sent")
        elapsed = time.monotonic() - started
        wins = agent.windows()
        # Windows of 1 s, none later than 1.5 s (below): at least elapsed / 1.5 of them.
        check(len(wins) >= int(elapsed / 1.5),
              f"only {len(wins)} windows in {elapsed:.1f} s: sampling stalled")
        late = [w for w in wins[1:-1] if w["duration_ms"] > 1500]
        check(not late, f"windows ran late while the server hung: {late}")
        check("Timeout" in agent.stderr() or "timed out" in agent.stderr(),
              "no timeout in the log")


def test_sigterm_with_spool_then_restart():
    """SIGTERM during an outage with --spool-dir: the agent exits 0 within 5 s, the windows
    wait in the spool, and the next run sends them all."""
    rx = Receiver().start()
    url = rx.url
    rx.stop()
    spool = tmpdir("ignis-spool-")
    paths = services("spooled")
    agent = Agent("--server-url", url, "--spool-dir", spool, interval=1).wait_ready()
    procs = run_services(paths, 4)
    finish(procs)
    time.sleep(0.3)
    stop_agent(agent, signal.SIGTERM)
    files = [f for f in os.listdir(spool) if f.endswith(".spool")]
    check(files, "nothing in the spool after SIGTERM during an outage")
    pid = procs["spooled"].pid
    want = {t: per[pid] for t, per in local_totals(agent, [pid]).items() if pid in per}

    rx.start()
    try:
        again = Agent("--server-url", url, "--spool-dir", spool, interval=1).wait_ready()
        rx.wait_for(lambda: received(rx, "spooled") == want, 15)
        stop_agent(again)
        check(received(rx, "spooled") == want,
              f"after restart received {received(rx, 'spooled')} != first run {want}")
        check("from an earlier run will be sent" in again.stderr(), "no spool message")
        check(not [f for f in os.listdir(spool) if f.endswith(".spool")],
              "spool files left after delivery")
    finally:
        rx.stop()


def test_tls_auth_tenant_and_no_secrets():
    """HTTPS with a self-signed CA: refused by default, accepted with --tls-ca-file; basic
    auth (password from a file, then from the environment), the tenant and an extra header
    arrive; the password is in no log, no argv and no --print-config."""
    d = tmpdir()
    ca, cert, key = make_ca_and_cert(d)
    pwfile = os.path.join(d, "password")
    with open(pwfile, "w") as f:
        f.write(PASSWORD + "\n")
    os.chmod(pwfile, 0o600)
    with Receiver(tls=(cert, key)) as rx:
        rx.program(require_basic=("123456", PASSWORD), require_tenant="team-a")
        auth = ["--basic-auth-user", "123456", "--tenant-id", "team-a",
                "--header", "X-Team: payments"]

        # 1. Without the CA: the certificate is not trusted, nothing is sent.
        paths = services("tls-svc")
        agent = Agent("--server-url", rx.url, "--basic-auth-password-file", pwfile,
                      *auth).wait_ready()
        procs = run_services(paths, 3)
        finish(procs)
        stop_agent(agent)
        check(not rx.accepted, "accepted over an untrusted certificate")
        check(rx.tls_failures >= 1 or not rx.requests, "the TLS handshake did not fail")
        check(re.search(r"certificate|SSL|TLS", agent.stderr()),
              "the log does not say the certificate was refused")
        logs = [agent.stderr()]

        # 2. With the CA, password from a file.
        agent = Agent("--server-url", rx.url, "--tls-ca-file", ca,
                      "--basic-auth-password-file", pwfile, *auth).wait_ready()
        procs = run_services(paths, 3)
        finish(procs)
        stop_agent(agent)
        rx.wait_for(lambda: "tls-svc" in rx.accepted_by_service(), 10)
        got = rx.accepted_by_service()["tls-svc"]
        check(got, "nothing accepted with --tls-ca-file")
        h = got[0]["headers"]
        check(h.get("authorization") == "Basic " + base64.b64encode(
            f"123456:{PASSWORD}".encode()).decode(), "basic auth header wrong")
        check(h.get("x-scope-orgid") == "team-a", f"tenant header {h.get('x-scope-orgid')}")
        check(h.get("x-team") == "payments", f"extra header {h.get('x-team')}")
        check(all(r["status"] != 401 for r in rx.requests), "a request was unauthenticated")
        logs.append(agent.stderr())
        argv = " ".join(agent.argv)

        # 3. Password from the environment; --print-config redacts it.
        n = len(rx.accepted)
        env = dict(os.environ, IGNIS_BASIC_AUTH_PASSWORD=PASSWORD)
        printed = spawn([path("ignis"), "--print-config", "--server-url", rx.url,
                         "--basic-auth-user", "123456"], env=env)
        out, _ = wait_exit(printed, 10)
        check("basic_auth_password: \"<redacted>\"" in out, f"--print-config:\n{out}")
        check(PASSWORD not in out, "--print-config shows the password")
        p = spawn([path("ignis"), "--server-url", rx.url, "--tls-ca-file", ca, *auth,
                   "--output-dir", tmpdir(), "--interval", "1", "--duration", "3",
                   "--log-level", "debug"], env=env)
        out, err = wait_exit(p, 30)
        check(p.returncode == 0, f"agent with the environment password: {err[-2000:]}")
        rx.wait_for(lambda: len(rx.accepted) > n, 10)
        check(len(rx.accepted) > n, "nothing accepted with IGNIS_BASIC_AUTH_PASSWORD")
        logs.append(out + err)

        for text in logs + [argv]:
            check(PASSWORD not in text, "the password appears in a log or argv")


def test_ingest_api_and_insecure_warning():
    """--pyroscope-api ingest: POST /ingest?name=SERVICE{labels}&format=pprof with the raw
    pprof; --tls-insecure-skip-verify works and warns loudly."""
    d = tmpdir()
    ca, cert, key = make_ca_and_cert(d)
    with Receiver(tls=(cert, key)) as rx:
        paths = services("legacy-app")
        agent = Agent("--server-url", rx.url, "--pyroscope-api", "ingest",
                      "--tls-insecure-skip-verify", "--label", "team=core").wait_ready()
        procs = run_services(paths, 3)
        finish(procs)
        stop_agent(agent)
        rx.wait_for(lambda: "legacy-app" in rx.accepted_by_service(), 10)
        got = rx.accepted_by_service().get("legacy-app")
        check(got, f"nothing accepted: {rx.rejected[:3]} {rx.protocol_errors[:3]}")
        for a in got:
            check(a["endpoint"] == "ingest", "not /ingest")
            check(a["query"].get("spyName") == "ebpfspy", f"query {a['query']}")
            check(a["labels"].get("team") == "core" and a["labels"].get("hostname"),
                  f"labels {a['labels']}")
        check("TLS VERIFICATION IS OFF" in agent.stderr(), "no loud warning for insecure TLS")


def test_size_limits_split_and_fold():
    """A per-profile limit of 4 samples (a test aid; Pyroscope's is 16000): hot2's profile is
    cut to the limit, its coldest stacks folded into [other stacks], totals kept, counted."""
    with Receiver() as rx:
        port = free_port()
        agent = Agent("--server-url", rx.url, "--upload-max-profile-samples", "4",
                      "--metrics-address", f"127.0.0.1:{port}").wait_ready()
        proc = spawn([workload("hot2"), "3"])
        wait_exit(proc, 60)
        time.sleep(0.5)
        text = metrics(port)
        stop_agent(agent)
        local = local_totals(agent, [proc.pid])
        want = {t: per[proc.pid] for t, per in local.items() if per}
        rx.wait_for(lambda: received(rx, "hot2") == want, 10)
        check(received(rx, "hot2") == want, f"received {received(rx, 'hot2')} != {want}")
        other = 0
        for a in rx.accepted:
            prof = a["profile"]
            check(len(prof["samples"]) <= 4, f"{len(prof['samples'])} samples > limit 4")
            names = {f["id"]: f["name"] for f in prof["functions"]}
            for s in prof["samples"]:
                loc = prof["locations"][s["location_ids"][0] - 1]
                if loc["lines"] and names.get(loc["lines"][0][0]) == "[other stacks]":
                    other += s["values"][0]
        check(other > 0, "no [other stacks] sample")
        check(metric(text, "ignis_samples_folded_total") > 0, "folded samples not counted")


def test_sanitized_agent_ships_clean():
    """The ASan/UBSan build through failures, a dropped connection, a spool and SIGTERM:
    no sanitizer report, exit 0."""
    with Receiver() as rx:
        rx.program(script=[500, "close", (429, {"Retry-After": "1"}), 200, "hang"])
        paths = services("san-svc")
        agent = Agent("--server-url", rx.url, "--spool-dir", tmpdir("ignis-spool-"),
                      "--upload-timeout", "2s", binary=path("san", "ignis"),
                      interval=1).wait_ready(timeout=60)
        procs = run_services(paths, 5)
        finish(procs)
        stop_agent(agent, signal.SIGTERM, within=10)
        log = agent.stderr()
        check("runtime error" not in log and "AddressSanitizer" not in log and
              "LeakSanitizer" not in log, f"sanitizer report:\n{log[-4000:]}")
        check(rx.accepted_by_service().get("san-svc"), "nothing delivered")
