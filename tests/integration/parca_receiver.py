# SPDX-License-Identifier: Apache-2.0
"""A Parca profile store for the integration tests: a real gRPC server (Debian's
python3-grpcio) serving parca.profilestore.v1alpha1.ProfileStoreService/WriteRaw from the
schema in agent/proto/parca.proto, compiled at start by python3-grpc-tools into a temporary
folder. It must run under Debian's /usr/bin/python3 (the modules are Debian's), so the tests
start it as a process (ParcaReceiver below) and read what it stored from a folder.

What it checks, as Parca does when it ingests (NormalizeWriteRawRequest and
ValidatePprofProfile in pkg/normalizer of github.com/parca-dev/parca): every series has
labels, each name a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*) and given once, a
__name__, and samples whose raw_profile is a pprof (gzip'd or not) that parses
(agent/proto/profile.proto, compiled the same way) with "" first in its string table, ids
sequential from 1 and every reference inside its table. A call
that fails a check is answered INVALID_ARGUMENT, as Parca answers it.

Scripted failures: --script CODE,CODE,... answers the first calls (of services not
rejected) with these statuses (by name: UNAVAILABLE, RESOURCE_EXHAUSTED, ...), then OK; --reject-service NAME answers every
call of that service_name INVALID_ARGUMENT; --token T demands "authorization: Bearer T".

For each call it writes OUT/calls.jsonl (one line: time, status, service, labels, metadata
names) and, for an accepted sample, OUT/N.pb.gz (the raw profile) and OUT/N.json (labels,
the pprof's time_nanos and the sum of its first sample type).
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

import grpc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LABEL_NAME_FIRST = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
LABEL_NAME_REST = LABEL_NAME_FIRST | set("0123456789")


def compile_protos(names):
    """Compile agent/proto/NAME.proto with grpc-tools' protoc into a temporary folder and
    import the generated modules."""
    out = tempfile.mkdtemp(prefix="ignis-proto-")
    proto_dir = os.path.join(ROOT, "agent", "proto")
    argv = [sys.executable, "-m", "grpc_tools.protoc", f"-I{proto_dir}", f"--python_out={out}",
            f"--grpc_python_out={out}"] + [os.path.join(proto_dir, n + ".proto") for n in names]
    subprocess.run(argv, check=True)
    sys.path.insert(0, out)
    return out


def valid_label_name(name):
    return bool(name) and name[0] in LABEL_NAME_FIRST and all(c in LABEL_NAME_REST for c in name)


class Store:
    def __init__(self, out, script, reject, token):
        import parca_pb2
        import profile_pb2
        self.pb, self.profile_pb2 = parca_pb2, profile_pb2
        self.out, self.script, self.reject, self.token = out, list(script), set(reject), token
        self.lock = threading.Lock()
        self.n = 0
        self.window = None
        self.calls = open(os.path.join(out, "calls.jsonl"), "a", buffering=1)

    def log(self, **kw):
        kw["time"] = time.time()
        kw["window"] = self.window
        self.calls.write(json.dumps(kw) + "\n")

    def parse_pprof(self, raw):
        data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        p = self.profile_pb2.Profile()
        p.ParseFromString(data)
        if not p.sample_type or not p.sample:
            raise ValueError("a profile without sample types or samples")
        # Parca's ValidatePprofProfile (pkg/normalizer/validate.go): "" first, ids
        # sequential from 1, every reference inside its table.
        n = len(p.string_table)
        if n and p.string_table[0] != "":
            raise ValueError("the string table does not start with \"\"")
        for table in (p.mapping, p.function, p.location):
            if any(x.id != i + 1 for i, x in enumerate(table)):
                raise ValueError("ids are not sequential")
        for m in p.mapping:
            if m.filename >= n or m.build_id >= n:
                raise ValueError(f"mapping {m.id}: a string index out of range")
        for f in p.function:
            if max(f.name, f.system_name, f.filename) >= n:
                raise ValueError(f"function {f.id}: a string index out of range")
        for loc in p.location:
            if loc.mapping_id > len(p.mapping) or any(
                    ln.function_id > len(p.function) for ln in loc.line):
                raise ValueError(f"location {loc.id}: a reference out of range")
        for s in p.sample:
            if len(s.value) != len(p.sample_type):
                raise ValueError("a sample whose values do not match the sample types")
            if any(not 0 < i <= len(p.location) for i in s.location_id):
                raise ValueError("a sample names a location out of range")
        return p

    def WriteRaw(self, request, context):
        md = {k: v for k, v in context.invocation_metadata()}
        labels = {}
        service = "?"
        if request.series:
            labels = {l.name: l.value for l in request.series[0].labels.labels}
            service = labels.get("service_name", "?")
        window = None
        try:  # the window, for the log only: a broken profile is refused below
            window = self.parse_pprof(request.series[0].samples[0].raw_profile).time_nanos
        except Exception:
            pass
        with self.lock:
            self.window = window
            if self.token is not None and md.get("authorization") != f"Bearer {self.token}":
                self.log(status="UNAUTHENTICATED", service=service, labels=labels)
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "no valid bearer token")
            # A rejected service is refused whatever comes first; the script answers the
            # first calls of the others (which service's upload comes first is a race).
            if service in self.reject:
                self.log(status="INVALID_ARGUMENT", service=service, labels=labels)
                context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                              f"rejected by test: service {service}")
            if self.script:
                code = self.script.pop(0)
                self.log(status=code, service=service, labels=labels)
                context.abort(getattr(grpc.StatusCode, code), f"scripted {code}")
            problem = None
            stored = []
            if not request.series:
                problem = "no series"
            for series in request.series:
                names = [l.name for l in series.labels.labels]
                bad = [n for n in names if not valid_label_name(n)]
                if bad:
                    problem = f"invalid label name {bad[0]!r}"
                elif len(set(names)) != len(names):
                    problem = "a label name given twice"
                elif "__name__" not in names:
                    problem = "no __name__ label"
                elif not series.samples:
                    problem = "a series without samples"
                for sample in series.samples:
                    try:
                        p = self.parse_pprof(sample.raw_profile)
                    except Exception as e:  # any parse failure is the client's
                        problem = f"raw_profile is not a pprof: {e}"
                        break
                    stored.append((dict((l.name, l.value) for l in series.labels.labels),
                                   sample.raw_profile, p))
            if problem:
                self.log(status="INVALID_ARGUMENT", service=service, labels=labels,
                         message=problem)
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
            for lab, raw, p in stored:
                self.n += 1
                base = os.path.join(self.out, str(self.n))
                with open(base + ".pb.gz", "wb") as f:
                    f.write(raw)
                with open(base + ".json", "w") as f:
                    json.dump({"labels": lab, "time_nanos": p.time_nanos,
                               "total": sum(s.value[0] for s in p.sample),
                               "sample_types": [p.string_table[t.type] for t in p.sample_type],
                               "label_order": [l.name for l in
                                               request.series[0].labels.labels]}, f)
            self.log(status="OK", service=service, labels=labels,
                     metadata=sorted(md), content_type=md.get("content-type"))
        return self.pb.WriteRawResponse()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--script", default="")
    ap.add_argument("--reject-service", action="append", default=[])
    ap.add_argument("--token")
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    compile_protos(["parca", "profile"])
    import parca_pb2_grpc
    store = Store(args.out, [s for s in args.script.split(",") if s], args.reject_service,
                  args.token)

    class Servicer(parca_pb2_grpc.ProfileStoreServiceServicer):
        def WriteRaw(self, request, context):
            return store.WriteRaw(request, context)

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8),
                         options=[("grpc.max_receive_message_length", 64 << 20)])
    parca_pb2_grpc.add_ProfileStoreServiceServicer_to_server(Servicer(), server)
    if args.tls:
        with open(args.tls[0], "rb") as c, open(args.tls[1], "rb") as k:
            creds = grpc.ssl_server_credentials([(k.read(), c.read())])
        port = server.add_secure_port(f"127.0.0.1:{args.port}", creds)
    else:
        port = server.add_insecure_port(f"127.0.0.1:{args.port}")
    server.start()
    print(f"ready {port}", flush=True)
    try:
        sys.stdin.read()  # until the test closes our stdin
    finally:
        server.stop(0)


if __name__ == "__main__":
    main()
