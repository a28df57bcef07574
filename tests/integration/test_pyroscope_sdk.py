# SPDX-License-Identifier: Apache-2.0
"""Label names as the real Pyroscope server takes them (issue 19, part 4).

The test receiver (pyroscope_receiver.py) must take what the server takes: Grafana's own
Node.js SDK, @pyroscope/nodejs 0.6.4 from npm (tests/pyroscope-nodejs/, installed by
`make deps`), profiles a Node.js program and pushes to it; every profile is accepted, parses
with `go tool pprof`, and is stored under the labels the server would store, with label
sanitization off (Pyroscope 2.x, names as sent: otel.scope.name) and on (1.x: otel_scope_name),
and a name the server refuses is refused. The agent takes OTel-style names for --label, sends
them as Pyroscope stores them (service.version as service_version) on both APIs, and stops at
start on a name the server refuses, saying what to use instead."""
import json
import os
import subprocess
import time

import harness
from harness import Agent, check, go_pprof, path, spawn, tmpdir, wait_exit, workload
from pyroscope_receiver import LABEL_NAME, Receiver, _self_test, label_rules_self_test

# The SDK sends a wall and a heap profile at every flush (1 s, flushIntervalMs in push.cjs)
# and at stop: 4 s of work give 3 or more of each, stop alone one of each.
SDK_SECONDS = 4
SDK_ENGINE = (20, 20, 2)        # @pyroscope/nodejs 0.6.4: "engines": {"node": ">=20.20.2"}
SCOPE = "com.grafana.pyroscope/nodejs"


def sdk_dir(*parts):
    return os.path.join(harness.ROOT, "tests", "pyroscope-nodejs", *parts)


def check_node():
    """Node.js and the SDK are there, as make deps installs them; the SDK's engine range."""
    check(os.path.isdir(sdk_dir("node_modules", "@pyroscope", "nodejs")),
          "tests/pyroscope-nodejs/node_modules missing: make deps installs the SDK")
    p = subprocess.run(["node", "--version"], capture_output=True, text=True)
    check(p.returncode == 0, f"node --version: {p.stderr}")
    version = tuple(int(x) for x in p.stdout.strip().lstrip("v").split("."))
    check(version >= SDK_ENGINE,
          f"node {p.stdout.strip()}: @pyroscope/nodejs 0.6.4 needs >= 20.20.2 (Debian 12's "
          f"nodejs is 18; install NodeSource's nodejs 20)")
    with open(sdk_dir("node_modules", "@pyroscope", "nodejs", "package.json")) as f:
        check(json.load(f)["version"] == "0.6.4", "the SDK is not the pinned 0.6.4")


def run_sdk(url, app, tags=None):
    return spawn(["node", sdk_dir("push.cjs"), url, app, str(SDK_SECONDS),
                  json.dumps(tags or {})], cwd=sdk_dir(),
                 env=dict(os.environ, DEBUG="pyroscope"))


def finish_sdk(proc, name):
    out, err = wait_exit(proc, 120)
    check(proc.returncode == 0, f"{name}: node exit {proc.returncode}:\n{err[-2000:]}")
    summary = json.loads(out.strip().splitlines()[-1])
    check(summary["rounds"] > 0, f"{name}: {summary}")
    return err


def test_receiver_label_rules_and_self_test():
    """The receiver's label rules against the server's (cases from pkg/validation), and its
    whole self-test (both APIs, scripted failures, TLS)."""
    n = label_rules_self_test()
    check(n >= 20, f"only {n} label cases")
    _self_test()


def test_nodejs_sdk_profiles_accepted():
    """@pyroscope/nodejs 0.6.4 pushes wall (with CPU time) and heap profiles over /ingest:
    all accepted, parsed, stored under the server's labels; with a refused name, refused."""
    check_node()
    with Receiver() as utf8, Receiver(sanitize_label_names=True) as legacy, \
            Receiver() as refusing:
        tags = {"deployment.environment": "ci"}
        procs = {"utf8": run_sdk(utf8.url, "sdk-utf8", tags),
                 "legacy": run_sdk(legacy.url, "sdk-legacy", tags),
                 "refused": run_sdk(refusing.url, "sdk-refused", {"team-name": "core"})}
        logs = {name: finish_sdk(p, name) for name, p in procs.items()}

        # Sanitization off (2.x): names stored as sent; on (1.x): dots become '_'.
        for rx, app, dot in ((utf8, "sdk-utf8", "."), (legacy, "sdk-legacy", "_")):
            check(not rx.rejected and not rx.protocol_errors,
                  f"{app}: refused {[(r['status'], r['message'][:300]) for r in rx.rejected][:3]}"
                  f"\n{logs[app[4:]][-1500:]}")
            kinds = {}
            for a in rx.accepted:
                kinds.setdefault(a["labels"]["__name__"], []).append(a)
            check(len(kinds.get("wall", [])) >= 2 and kinds.get("memory"),
                  f"{app}: accepted {[(k, len(v)) for k, v in kinds.items()]}")
            want = {"service_name": app, "pyroscope_spy": "nodespy", "__delta__": "false",
                    f"otel{dot}scope{dot}name": SCOPE,
                    f"otel{dot}scope{dot}version": "0.6.4",
                    f"process{dot}runtime{dot}name": "nodejs",
                    f"deployment{dot}environment": "ci"}
            for a in rx.accepted:
                got = {k: a["labels"].get(k) for k in want}
                check(got == want, f"{app}: stored labels {a['labels']}, want {want}")
                check(a["query"]["spyName"] == "nodespy" and a["endpoint"] == "ingest",
                      f"{app}: {a['endpoint']} {a['query']}")
                if dot == "_":
                    check(all(LABEL_NAME.fullmatch(n) for n in a["labels"]),
                          f"{app}: a name left unsanitized: {a['labels']}")
            # The wall label the program set is a sample label, merged into the series.
            route = f"http{dot}route"
            for a in kinds["wall"]:
                prof = a["profile"]
                check([t for t, _ in prof["sample_type"]] == ["samples", "wall", "cpu"],
                      f"{app}: wall sample types {prof['sample_type']}")
                routed = [(labels, idx) for labels, idx in a["series"]
                          if labels.get(route) == "/burn"]
                check(routed and all(labels["service_name"] == app for labels, _ in routed),
                      f"{app}: no series with {route}=/burn: {[s[0] for s in a['series']]}")
            # Parsed by an independent reader; in the CPU time of each wall profile the
            # program's burn function is the hottest (it is nearly all the program does).
            files = rx.write_accepted(tmpdir())
            for f, a in zip(files, rx.accepted):
                kind = a["labels"]["__name__"]
                index = "cpu" if kind == "wall" else "inuse_space"
                out = go_pprof(["-top", "-nodecount=5", f"-sample_index={index}",
                                "-symbolize=none", f])
                nodes = out.split("flat%   sum%        cum   cum%\n", 1)[-1].splitlines()
                check("Showing nodes" in out and nodes,
                      f"{app}: go tool pprof -top {f}:\n{out}")
                if kind == "wall":
                    check("ignisSdkBurn" in nodes[0],
                          f"{app}: ignisSdkBurn not the hottest:\n{out}")

        # A name the server's /ingest parser refuses (labelset: [a-zA-Z0-9_.] only).
        check(not refusing.accepted,
              f"team-name accepted: {[a['labels'] for a in refusing.accepted][:1]}")
        check(len(refusing.rejected) >= 2 and all(
            r["status"] == 400 and "invalid label name: team-name: character is not allowed: "
            "'-'" in r["message"] for r in refusing.rejected),
            f"refusals {[(r['status'], r['message']) for r in refusing.rejected][:3]}")
        check("Server rejected data ingest: HTTP 400" in logs["refused"],
              f"the SDK did not see the 400:\n{logs['refused'][-1500:]}")


def test_agent_sends_otel_label_names_as_stored():
    """--label service.version=1.2 (and from the file) reaches a server that keeps names as
    sent as service_version: on the push API and /ingest, every name the agent sends is
    [a-zA-Z_][a-zA-Z0-9_]*; a name the server refuses stops the agent with the fix."""
    config = os.path.join(tmpdir(), "ignis.yaml")
    with open(config, "w") as f:
        f.write("label: [service.version=1.2, deployment.environment=ci]\n")
    for api in ("push", "ingest"):
        with Receiver() as rx:
            agent = Agent("--server-url", rx.url, "--pyroscope-api", api,
                          "--node-name", "node-otel", "--config", config).wait_ready()
            burner = spawn([workload("burn"), "3", "1"])
            wait_exit(burner, 60)
            time.sleep(0.5)
            agent.stop()
            check(agent.returncode == 0, f"{api}: agent exit {agent.returncode}")
            rx.wait_for(lambda: "burn" in rx.accepted_by_service(), 10)
            check(not rx.rejected, f"{api}: refused {rx.rejected[:3]}")
            got = rx.accepted_by_service().get("burn")
            check(got, f"{api}: nothing from burn; accepted {list(rx.accepted_by_service())}")
            for a in rx.accepted:
                check(a["labels"].get("service_version") == "1.2"
                      and a["labels"].get("deployment_environment") == "ci"
                      and a["labels"].get("hostname") == "node-otel",
                      f"{api}: labels {a['labels']}")
                sent = [n for n, _ in a["sent_labels"]]
                check(all(LABEL_NAME.fullmatch(n) for n in sent),
                      f"{api}: sent names {sent}")
                check(not any("." in n for n in a["labels"]), f"{api}: {a['labels']}")

    for arg, fix in (("team-name=core", "e.g. 'team_name'"),
                     ("service.name=x", "use --service-name-rule")):
        p = subprocess.run([path("ignis"), "--server-url", "http://127.0.0.1:9", "--label", arg,
                            "--duration", "1"], capture_output=True, text=True, timeout=30)
        check(p.returncode == 2, f"--label {arg}: exit {p.returncode}: {p.stderr}")
        first = p.stderr.splitlines()[0] if p.stderr else ""
        check(first.startswith(f"ignis: --label {arg}: ") and fix in first, p.stderr)
