# SPDX-License-Identifier: Apache-2.0
"""An OpenTelemetry Collector's OTLP/HTTP profiles endpoint for the integration tests:
POST /v1development/profiles, decoded with Debian's python3-protobuf from the pinned schema
(agent/proto/otlp_profiles.proto, opentelemetry-proto v1.11.0), compiled at start with
python3-grpc-tools' protoc into a temporary folder. It must run under Debian's
/usr/bin/python3, so the tests start it as a process (server_doubles.OtlpReceiver).

What it checks, as the OTLP specification and profiles.proto require of a request: the path,
Content-Type application/x-protobuf (415 otherwise, as the Collector answers), an optional
Content-Encoding: gzip, a message that parses, every dictionary table starting with its zero
value ("" for strings), every index (string, mapping, location, function, stack, attribute,
link) inside its table, one value per sample in a profile with a sample type, a 16-byte
profile id that is not all zero. A request failing a check is answered 400 with a
google.rpc.Status, as the Collector does.

--script 400,503,...: answer the first requests with these statuses (400 says "unsupported
profiles version", as a Collector built for another release would), then 200.

Each accepted request becomes OUT/N.json: the resource attributes, the scope, and per profile
its sample type, time, duration, period and samples, each resolved through the dictionary to
its frames (function names leaf first, inline frames expanded; a location without lines
reads "[basename of its mapping]" as go tool pprof shows it), value and attributes.
OUT/calls.jsonl has one line per request (time, status, service.name, the windows in it).
"""
import argparse
import gzip
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATH = "/v1development/profiles"


def compile_proto():
    out = tempfile.mkdtemp(prefix="ignis-proto-")
    proto_dir = os.path.join(ROOT, "agent", "proto")
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{proto_dir}",
                    f"--python_out={out}", os.path.join(proto_dir, "otlp_profiles.proto")],
                   check=True)
    sys.path.insert(0, out)
    import otlp_profiles_pb2
    return otlp_profiles_pb2


class Invalid(ValueError):
    pass


def any_value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def resolve(pb, req):
    """The request as plain data, every reference checked."""
    d = req.dictionary
    st = list(d.string_table)
    if not st or st[0] != "":
        raise Invalid("string_table[0] is not \"\"")
    for name in ("mapping_table", "location_table", "function_table", "link_table",
                 "attribute_table", "stack_table"):
        table = getattr(d, name)
        if not table:
            raise Invalid(f"{name} is empty: element 0 must be the zero value")
        if table[0].ByteSize():
            raise Invalid(f"{name}[0] is not the zero value")

    def s(i, what):
        if not 0 <= i < len(st):
            raise Invalid(f"{what}: string index {i} out of range")
        return st[i]

    def idx(i, table, what):
        if not 0 <= i < len(getattr(d, table)):
            raise Invalid(f"{what}: index {i} out of {table}")
        return getattr(d, table)[i]

    for i, f in enumerate(d.function_table):
        s(f.name_strindex, "function"), s(f.filename_strindex, "function")
        s(f.system_name_strindex, "function")
    build_ids = {}
    for m in d.mapping_table:
        s(m.filename_strindex, "mapping")
        attrs = build_ids.setdefault(st[m.filename_strindex], {})
        for ai in m.attribute_indices:
            if ai == 0:
                raise Invalid("a mapping names attribute 0")
            a = idx(ai, "attribute_table", "mapping")
            attrs[st[a.key_strindex]] = any_value(a.value)
    for a in d.attribute_table[1:]:
        s(a.key_strindex, "attribute key")

    def frames(stack_index):
        out = []
        stack = idx(stack_index, "stack_table", "sample")
        if stack_index == 0 or not stack.location_indices:
            raise Invalid("a sample without a stack")
        for li in stack.location_indices:
            if li == 0:
                raise Invalid("a stack names location 0")
            loc = idx(li, "location_table", "stack")
            m = idx(loc.mapping_index, "mapping_table", "location")
            if loc.lines:
                for line in loc.lines:
                    if line.function_index == 0:
                        raise Invalid("a line names function 0")
                    f = idx(line.function_index, "function_table", "line")
                    out.append(st[f.name_strindex])
            elif loc.mapping_index:
                out.append("[" + os.path.basename(st[m.filename_strindex]) + "]")
            else:
                out.append("[unknown]")
        return out

    result = []
    for rp in req.resource_profiles:
        res = {kv.key: any_value(kv.value) for kv in rp.resource.attributes}
        for sp in rp.scope_profiles:
            profiles = []
            for p in sp.profiles:
                if not p.HasField("sample_type"):
                    raise Invalid("a profile without a sample type")
                if len(p.profile_id) != 16 or not any(p.profile_id):
                    raise Invalid("profile_id is not 16 bytes, not all zero")
                samples = []
                for smp in p.samples:
                    if len(smp.values) != 1:
                        raise Invalid(f"{len(smp.values)} values in a sample of one type")
                    idx(smp.link_index, "link_table", "sample")
                    attrs = {}
                    for ai in smp.attribute_indices:
                        if ai == 0:
                            raise Invalid("a sample names attribute 0")
                        a = idx(ai, "attribute_table", "sample")
                        attrs[st[a.key_strindex]] = any_value(a.value)
                    samples.append({"frames": frames(smp.stack_index),
                                    "value": smp.values[0], "attributes": attrs})
                profiles.append({
                    "type": s(p.sample_type.type_strindex, "sample type"),
                    "unit": s(p.sample_type.unit_strindex, "sample type"),
                    "period_type": [st[p.period_type.type_strindex],
                                    st[p.period_type.unit_strindex]]
                    if p.HasField("period_type") else None,
                    "period": p.period, "time_nanos": p.time_unix_nano,
                    "duration_nanos": p.duration_nano, "samples": samples})
            result.append({"resource": res, "scope": [sp.scope.name, sp.scope.version],
                           "profiles": profiles, "mapping_attributes": build_ids})
    if not result:
        raise Invalid("no resource profiles")
    return result


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--script", default="")
    args = ap.parse_args()
    pb = compile_proto()
    script = [int(s) for s in args.script.split(",") if s]
    lock = threading.Lock()
    state = {"n": 0}
    calls = open(os.path.join(args.out, "calls.jsonl"), "a", buffering=1)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def answer(self, status, message=None, body=b""):
            if message is not None:
                body = pb.Status(code=3, message=message).SerializeToString()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            entry = {"time": time.time(), "path": self.path,
                     "content_type": self.headers.get("Content-Type"),
                     "content_encoding": self.headers.get("Content-Encoding"),
                     "service": None, "windows": []}
            with lock:
                try:
                    req = None
                    if self.headers.get("Content-Encoding") == "gzip":
                        body = gzip.decompress(body)
                    req = pb.ExportProfilesServiceRequest()
                    req.ParseFromString(body)
                    for rp in req.resource_profiles:
                        for kv in rp.resource.attributes:
                            if kv.key == "service.name":
                                entry["service"] = kv.value.string_value
                        entry["names"] = [kv.key for kv in rp.resource.attributes]
                        st = req.dictionary.string_table
                        entry["windows"] = sorted(
                            {(p.time_unix_nano, st[p.sample_type.type_strindex]
                              if p.sample_type.type_strindex < len(st) else "?")
                             for sp in rp.scope_profiles for p in sp.profiles})
                except Exception:
                    pass
                if self.path != PATH:
                    entry["status"] = 404
                    self.answer(404, f"no such path {self.path}")
                elif self.headers.get("Content-Type") != "application/x-protobuf":
                    entry["status"] = 415
                    self.answer(415, "unsupported content type")
                elif script:
                    entry["status"] = script.pop(0)
                    self.answer(entry["status"], "unsupported profiles version"
                                if entry["status"] == 400 else "scripted failure")
                else:
                    try:
                        if req is None:
                            raise Invalid("the body does not parse")
                        data = resolve(pb, req)
                    except Exception as e:
                        entry["status"] = 400
                        entry["message"] = str(e)
                        self.answer(400, f"invalid request: {e}")
                    else:
                        state["n"] += 1
                        with open(os.path.join(args.out, f"{state['n']}.json"), "w") as f:
                            json.dump(data, f)
                        entry["status"] = 200
                        self.answer(200, body=pb.ExportProfilesServiceResponse()
                                    .SerializeToString())
                calls.write(json.dumps(entry) + "\n")

    srv = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    print(f"ready {srv.server_address[1]}", flush=True)
    try:
        sys.stdin.read()
    finally:
        srv.shutdown()


if __name__ == "__main__":
    main()
