# SPDX-License-Identifier: Apache-2.0
"""Shipping to Parca (issue 19): the real agent with real BPF against a real gRPC server
(Debian's python3-grpcio serving ProfileStoreService/WriteRaw from agent/proto/parca.proto,
parca_receiver.py): one series per target per window with the right labels and the local
profile's totals, the pprof inside read by `go tool pprof`, the bearer token, retries of
UNAVAILABLE and RESOURCE_EXHAUSTED with each window stored exactly once, INVALID_ARGUMENT
dropped and counted, and TLS (ALPN h2) with a test CA."""
import os
import signal
import time

from harness import Agent, check, go_pprof, path, tmpdir
from pyroscope_receiver import make_ca_and_cert
from server_doubles import ParcaReceiver
from test_ship import (finish, free_port, local_totals, metric, metrics, run_services,
                       services, stop_agent)

TOKEN = "parca-test-token-0123456789"


def stored_totals(rx, service):
    """{time_nanos: samples} of the CPU series the store accepted for one service (a process
    that waited also has an off-CPU series, __name__ offcpu, in nanoseconds)."""
    out = {}
    for s in rx.stored():
        if (s["labels"].get("service_name") == service and
                s["labels"].get("__name__") == "process_cpu"):
            out[s["time_nanos"]] = out.get(s["time_nanos"], 0) + s["total"]
    return out


def token_file():
    path = os.path.join(tmpdir(), "token")
    with open(path, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(path, 0o600)
    return path


def test_windows_labels_and_pprof():
    """Two services: per window one WriteRaw per service, labels __name__, service_name,
    hostname and the static one (sorted by name, as Prometheus label sets are), the bearer
    token as authorization metadata, totals equal to the local profile's; the stored pprof
    parses with go tool pprof and names the hot function."""
    with ParcaReceiver(token=TOKEN) as rx:
        paths = services("parca-orders", "parca-ledger")
        agent = Agent("--server-url", rx.url, "--server-protocol", "parca",
                      "--bearer-token-file", token_file(), "--label", "env=ci",
                      "--node-name", "node-ci-1").wait_ready()
        procs = run_services(paths, 5)
        pids = {n: p.pid for n, p in procs.items()}
        finish(procs)
        time.sleep(0.5)
        stop_agent(agent)
        local = local_totals(agent, pids.values())
        calls = rx.calls()
        check(calls and all(c["status"] == "OK" for c in calls),
              f"calls refused: {[c for c in calls if c['status'] != 'OK'][:3]}")
        for name, pid in pids.items():
            got = [s for s in rx.stored() if s["labels"].get("service_name") == name and
                   s["labels"]["__name__"] == "process_cpu"]
            times = [s["time_nanos"] for s in got]
            check(len(times) == len(set(times)), f"{name}: two series in one window: {times}")
            for s in got:
                check(s["labels"] == {"__name__": "process_cpu", "service_name": name,
                                      "hostname": "node-ci-1", "env": "ci"},
                      f"labels {s['labels']}")
                check(s["label_order"] == sorted(s["label_order"]),
                      f"labels not sorted: {s['label_order']}")
                check(s["sample_types"][:2] == ["samples", "cpu"], f"{s['sample_types']}")
            want = {t: per[pid] for t, per in local.items() if pid in per}
            check(stored_totals(rx, name) == want,
                  f"{name}: stored {stored_totals(rx, name)} != local {want}")
            # 5 s at 100 Hz is 500 samples; on two CPUs shared with the machine's other work
            # far fewer. The comparison is exact: this only makes sure there was one.
            check(sum(want.values()) > 50, f"{name}: only {sum(want.values())} samples")
        ok = [c for c in calls if c["status"] == "OK"]
        check(all("authorization" in c["metadata"] for c in ok), "no authorization metadata")
        text = "".join(go_pprof(["-top", "-symbolize=none", s["file"]])
                       for s in rx.stored() if s["labels"]["service_name"] == "parca-orders")
        check("burn_spin" in text, f"burn_spin missing from orders' profiles:\n{text}")
        check(TOKEN not in agent.stderr(), "the token is in the log")


def test_unavailable_then_ok_and_invalid_argument():
    """UNAVAILABLE, UNAVAILABLE, RESOURCE_EXHAUSTED, then OK: retried with backoff and every
    window of 'parca-kept' stored exactly once; 'parca-refused' answered INVALID_ARGUMENT: one call per
    window (not retried), dropped and counted in /metrics, logged once."""
    with ParcaReceiver(script=["UNAVAILABLE", "UNAVAILABLE", "RESOURCE_EXHAUSTED"],
                       reject=["parca-refused"]) as rx:
        paths = services("parca-kept", "parca-refused")
        port = free_port()
        agent = Agent("--server-url", rx.url, "--server-protocol", "parca",
                      "--upload-concurrency", "1",
                      "--metrics-address", f"127.0.0.1:{port}").wait_ready()
        procs = run_services(paths, 5)
        pids = {n: p.pid for n, p in procs.items()}
        finish(procs)
        # The services' last window closes within one interval (2 s) of their exit: after
        # two more windows (waited for, not slept: a busy host delays a window's end), the
        # local profiles hold all their samples and the agent keeps running.
        agent.wait_windows(len(agent.windows()) + 2)
        local = local_totals(agent, pids.values())
        want = {t: per[pids["parca-kept"]] for t, per in local.items() if pids["parca-kept"] in per}
        refused_windows = {t for t, per in local.items() if pids["parca-refused"] in per}
        rx.wait_for(lambda: stored_totals(rx, "parca-kept") == want and
                    len([c for c in rx.calls() if c["service"] == "parca-refused"]) >=
                    len(refused_windows), 20)
        # /metrics is published at the start of a window's handling: two more window lines
        # (waited for, not a fixed 1 s: a busy host delays a window's end) and the counters
        # include every call the receiver has seen.
        agent.wait_windows(len(agent.windows()) + 2)
        text = metrics(port)
        stop_agent(agent)

        calls = rx.calls()
        # The script answers the first calls not refused (of parca-kept, or of any other
        # process on the host the agent profiles): the same upload, retried.
        kept_calls = [c for c in calls if c["service"] != "parca-refused"]
        check([c["status"] for c in kept_calls[:3]] ==
              ["UNAVAILABLE", "UNAVAILABLE", "RESOURCE_EXHAUSTED"],
              f"first statuses {[c['status'] for c in kept_calls[:4]]}")
        gaps = [kept_calls[i + 1]["time"] - kept_calls[i]["time"] for i in range(3)]
        check(gaps[0] >= 0.2 and gaps[1] >= 0.45, f"no backoff between retries: {gaps}")
        kept = [(s["labels"]["__name__"], s["time_nanos"]) for s in rx.stored()
                if s["labels"]["service_name"] == "parca-kept"]
        check(len(kept) == len(set(kept)), f"a window of 'kept' stored twice: {kept}")
        check(stored_totals(rx, "parca-kept") == want,
              f"stored {stored_totals(rx, 'parca-kept')} != local {want}")
        check(len(want) >= 3, f"only {len(want)} windows of kept")

        refusals = [c for c in calls if c["service"] == "parca-refused"]
        check(refusals and all(c["status"] == "INVALID_ARGUMENT" for c in refusals),
              f"refused service: {refusals[:3]}")
        series = [(c["labels"]["__name__"], c["window"]) for c in refusals]
        check(len(series) == len(set(series)), f"INVALID_ARGUMENT was retried: {series}")
        cpu = {w for n, w in series if n == "process_cpu"}
        check(cpu == refused_windows,
              f"refused CPU windows {sorted(cpu)} != local {sorted(refused_windows)}")
        check(not any(s["labels"]["service_name"] == "parca-refused" for s in rx.stored()),
              "a refused profile was stored")
        check(metric(text, 'ignis_profiles_dropped_total{reason="rejected"}') ==
              len(refusals), "refusals not counted as dropped")
        check(metric(text, 'ignis_upload_errors_total{code="400"}') == len(refusals),
              "INVALID_ARGUMENT not counted under code 400")
        check(metric(text, 'ignis_upload_errors_total{code="5xx"}') == 2,
              "UNAVAILABLE not counted under 5xx")
        check(metric(text, 'ignis_upload_errors_total{code="429"}') == 1,
              "RESOURCE_EXHAUSTED not counted under 429")
        check(metric(text, "ignis_upload_retries_total") == 3, "retries not counted")
        log = agent.stderr()
        check(log.count("refused, gRPC INVALID_ARGUMENT: rejected by test") == 1,
              "the refusal is not logged once with the server's words:\n" + log[-3000:])
        check("gRPC UNAVAILABLE: scripted UNAVAILABLE" in log, "the retry is not logged")


def test_tls_with_test_ca():
    """gRPC over TLS (HTTP/2 by ALPN) with a CA made for the test: refused without
    --tls-ca-file, delivered with it."""
    d = tmpdir()
    ca, cert, key = make_ca_and_cert(d)
    with ParcaReceiver(tls=(cert, key)) as rx:
        paths = services("tls-parca")
        agent = Agent("--server-url", rx.url, "--server-protocol", "parca").wait_ready()
        procs = run_services(paths, 3)
        finish(procs)
        stop_agent(agent)
        check(not rx.stored(), "stored over an untrusted certificate")
        check("certificate" in agent.stderr() or "SSL" in agent.stderr(),
              "the log does not say the certificate was refused")

        agent = Agent("--server-url", rx.url, "--server-protocol", "parca",
                      "--tls-ca-file", ca).wait_ready()
        procs = run_services(paths, 3)
        pid = procs["tls-parca"].pid
        finish(procs)
        time.sleep(0.5)
        stop_agent(agent)
        local = local_totals(agent, [pid])
        want = {t: per[pid] for t, per in local.items() if pid in per}
        rx.wait_for(lambda: stored_totals(rx, "tls-parca") == want, 10)
        check(want and stored_totals(rx, "tls-parca") == want,
              f"over TLS stored {stored_totals(rx, 'tls-parca')} != local {want}")


def test_sanitized_agent_through_failures():
    """The ASan/UBSan build through UNAVAILABLE, INVALID_ARGUMENT, OK, a spool and SIGTERM:
    no sanitizer report, exit 0, the accepted service delivered."""
    with ParcaReceiver(script=["UNAVAILABLE", "INVALID_ARGUMENT"], reject=["san-refused"]) as rx:
        paths = services("san-parca", "san-refused")
        agent = Agent("--server-url", rx.url, "--server-protocol", "parca",
                      "--spool-dir", tmpdir("ignis-spool-"), "--sample-labels", "comm",
                      binary=path("san", "ignis"), interval=1).wait_ready(timeout=60)
        procs = run_services(paths, 4)
        finish(procs)
        rx.wait_for(lambda: stored_totals(rx, "san-parca"), 15)
        stop_agent(agent, signal.SIGTERM, within=10)
        log = agent.stderr()
        check("runtime error" not in log and "AddressSanitizer" not in log and
              "LeakSanitizer" not in log, f"sanitizer report:\n{log[-4000:]}")
        check(stored_totals(rx, "san-parca"), "nothing delivered")
        check(any(c["status"] == "INVALID_ARGUMENT" for c in rx.calls()), "no refusal")


def test_outage_spool_then_restart():
    """Parca down (connection refused) while a service runs, SIGTERM: the windows wait in
    the spool; the next run, with Parca up on the same port, stores each of them once, with
    the first run's totals."""
    port = free_port()
    spool = tmpdir("ignis-spool-")
    url = f"http://127.0.0.1:{port}"
    paths = services("parca-spooled")
    agent = Agent("--server-url", url, "--server-protocol", "parca", "--spool-dir", spool,
                  interval=1).wait_ready()
    procs = run_services(paths, 4)
    pid = procs["parca-spooled"].pid
    finish(procs)
    time.sleep(1.5)
    stop_agent(agent, signal.SIGTERM)
    check([f for f in os.listdir(spool) if f.endswith(".spool")],
          "nothing in the spool after SIGTERM during an outage")
    check("Connection refused" in agent.stderr() or "connect" in agent.stderr(),
          "the outage is not in the log")
    want = {t: per[pid] for t, per in local_totals(agent, [pid]).items() if pid in per}
    with ParcaReceiver(port=port) as rx:
        again = Agent("--server-url", url, "--server-protocol", "parca", "--spool-dir", spool,
                      interval=1).wait_ready()
        rx.wait_for(lambda: stored_totals(rx, "parca-spooled") == want, 15)
        stop_agent(again)
        check(want and stored_totals(rx, "parca-spooled") == want,
              f"after restart stored {stored_totals(rx, 'parca-spooled')} != first run {want}")
        times = [s["time_nanos"] for s in rx.stored()
                 if s["labels"]["service_name"] == "parca-spooled" and
                 s["labels"]["__name__"] == "process_cpu"]
        check(len(times) == len(set(times)), f"a window stored twice: {times}")
        check("from an earlier run will be sent" in again.stderr(), "no spool message")
