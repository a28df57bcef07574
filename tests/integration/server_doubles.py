# SPDX-License-Identifier: Apache-2.0
"""The Parca and OTLP test servers (parca_receiver.py, otlp_receiver.py) run as processes
under Debian's /usr/bin/python3, whose python3-grpcio, python3-grpc-tools and
python3-protobuf the tests use (the python3 that runs the tests may be another one). Each
writes what it received into a folder; these classes start them and read it back."""
import json
import os
import subprocess
import time

from harness import TestFailure, spawn, tmpdir

HERE = os.path.dirname(os.path.abspath(__file__))
DEBIAN_PYTHON = "/usr/bin/python3"


class _Double:
    script_name = None

    def __init__(self, *args):
        self.out = tmpdir("ignis-rx-")
        self.args = [str(a) for a in args]
        self.proc = None
        self.port = None

    def start(self):
        self.proc = spawn([DEBIAN_PYTHON, os.path.join(HERE, self.script_name), "--out",
                           self.out] + self.args, stdin=subprocess.PIPE)
        line = self.proc.stdout.readline()
        if not line.startswith("ready "):
            self.proc.kill()
            raise TestFailure(f"{self.script_name} did not start: {line}"
                              f"{self.proc.stderr.read()}")
        self.port = int(line.split()[1])
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def calls(self):
        """Every call, accepted or not, in arrival order."""
        path = os.path.join(self.out, "calls.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(l) for l in f if l.strip()]

    def stored(self):
        """The accepted profiles' summaries (N.json), in arrival order, with their file."""
        out = []
        n = 1
        while os.path.exists(os.path.join(self.out, f"{n}.json")):
            with open(os.path.join(self.out, f"{n}.json")) as f:
                d = json.load(f)
            if isinstance(d, dict):
                d["file"] = os.path.join(self.out, f"{n}.pb.gz")
            out.append(d)
            n += 1
        return out

    def wait_for(self, cond, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cond():
                return True
            time.sleep(0.1)
        return cond()


class ParcaReceiver(_Double):
    """A Parca profile store serving real gRPC (see parca_receiver.py).

    ParcaReceiver(script=["UNAVAILABLE"], reject=["svc"], token="T", tls=(cert, key),
                  port=N)"""
    script_name = "parca_receiver.py"

    def __init__(self, script=(), reject=(), token=None, tls=None, port=0):
        args = ["--port", port]
        if script:
            args += ["--script", ",".join(script)]
        for r in reject:
            args += ["--reject-service", r]
        if token:
            args += ["--token", token]
        if tls:
            args += ["--tls", *tls]
        super().__init__(*args)
        self.tls = tls

    @property
    def url(self):
        return f"{'https://localhost' if self.tls else 'http://127.0.0.1'}:{self.port}"


class OtlpReceiver(_Double):
    """An OpenTelemetry Collector's OTLP/HTTP profiles endpoint (see otlp_receiver.py).

    OtlpReceiver(script=[400, 503])"""
    script_name = "otlp_receiver.py"

    def __init__(self, script=()):
        args = []
        if script:
            args += ["--script", ",".join(str(s) for s in script)]
        super().__init__(*args)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"
