# SPDX-License-Identifier: Apache-2.0
"""A test double of a Grafana Pyroscope server, run in-process by the integration tests.

It speaks the two ingestion APIs of /work/shared/design/PROTOCOLS.md: the Connect push API
(`POST /push.v1.PusherService/Push`, section 2) and the legacy `POST /ingest?format=pprof`
(section 1). Every profile is decoded with our own protobuf reader and checked against the
MUST rules of section 7 and the server limits of section 6, more strictly than Pyroscope does,
so that a mistake of the agent shows up as a rejection the tests can see. Failures (statuses,
Retry-After, hanging or dropped connections) can be scripted per request.

Labels are the exception: they follow the server exactly, so that a client that works with
Pyroscope works here (tests/integration/test_pyroscope_sdk.py runs Grafana's own Node.js SDK
against it). Read from grafana/pyroscope at commit 3fe6a457a320 (2026-08-21, after v2.2.1):
`ValidateLabels` and `SanitizeLegacyLabelName` in pkg/validation/validate.go (defaults in
pkg/validation/limits.go), the service_name fallback in `pushSeries`
(pkg/distributor/distributor.go), sample labels merged into the series in
pkg/model/pprofsplit/pprof_split.go, the /ingest `name` syntax in api/model/labelset/ and its
labels in `createLabels` (pkg/og/convert/pprof/profile.go). Two server settings give two
rules for label names, chosen per Receiver by `sanitize_label_names`:

- False (the default, as Pyroscope 2.x: `validation.disable-label-sanitization` is true since
  v2.0.0, PR 5038): any non-empty valid UTF-8 name is stored as sent (`otel.scope.name`).
- True (Pyroscope 1.7 to 1.x, PR 3335, or 2.x with sanitization turned on): names of
  [a-zA-Z0-9_.] not starting with a digit are taken, each '.' stored as '_'
  (`otel_scope_name`); a name that then equals another one is dropped if the values agree
  and refused if not; any other name is refused ("invalid label name").

Run this file to self-test the receiver without the agent."""
import base64
import bisect
import dataclasses
import gzip
import http.client
import http.server
import json
import os
import re
import socket
import ssl
import subprocess
import threading
import time
import urllib.parse
import zlib

MAX_PROFILE_BYTES = 4 << 20        # decompressed pprof (validation.max-profile-size-bytes)
MAX_SAMPLES = 16000
MAX_LABELS_PER_SAMPLE = 100
MAX_LABEL_NAMES = 30
MAX_NAME_BYTES, MAX_VALUE_BYTES = 1024, 2048
MAX_BODY_BYTES = 64 << 20          # beyond this the double answers 413 without reading
WINDOW_PAST_NS, WINDOW_FUTURE_NS = 3600 * 10**9, 600 * 10**9
PUSH_PATH, INGEST_PATH = "/push.v1.PusherService/Push", "/ingest"

CONNECT_CODES = {400: "invalid_argument", 401: "unauthenticated", 403: "permission_denied",
                 404: "not_found", 408: "deadline_exceeded", 409: "aborted",
                 413: "resource_exhausted", 415: "invalid_argument", 422: "invalid_argument",
                 429: "resource_exhausted", 499: "canceled", 500: "internal",
                 501: "unimplemented", 503: "unavailable", 504: "deadline_exceeded"}

LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")     # what ignis sends (PROTOCOLS.md 2.2)
SANITIZABLE_NAME = re.compile(r"[a-zA-Z_.][a-zA-Z0-9_.]*")
SERVICE_NAME_FALLBACK = "unknown_service"
# Sample labels the server keeps out of the series (pprof_split.go; profile_id is renamed).
SAMPLE_LABELS_NOT_SERIES = ("trace_id", "span_id", "profile_id")
APP_NAME = re.compile(r"[A-Za-z0-9_.\-/]+")
APP_KEY = re.compile(r"[A-Za-z0-9_.]+")


class DecodeError(ValueError):
    """The bytes are not a well-formed protobuf message."""


class ValidationError(ValueError):
    """A profile or label set that Pyroscope (or our stricter reading of it) rejects."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


# ---------------------------------------------------------------------------------------------
# Protobuf wire format: reading

def read_varint(data, pos):
    """Decode the varint at data[pos]; returns (value as uint64, next position)."""
    result = shift = 0
    while True:
        if pos >= len(data):
            raise DecodeError("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift >= 70:
            raise DecodeError("varint longer than 10 bytes")


def iter_fields(data):
    """Yield (field number, wire type, value) for each field of one message. Varints and
    fixed-size fields give unsigned ints, length-delimited fields give bytes."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = read_varint(data, pos)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise DecodeError("field number 0")
        if wire == 0:
            value, pos = read_varint(data, pos)
        elif wire == 1 or wire == 5:
            size = 8 if wire == 1 else 4
            if pos + size > end:
                raise DecodeError("truncated fixed-size field")
            value = int.from_bytes(data[pos:pos + size], "little")
            pos += size
        elif wire == 2:
            size, pos = read_varint(data, pos)
            if pos + size > end:
                raise DecodeError(f"field {field}: length {size} runs past the end")
            value = bytes(data[pos:pos + size])
            pos += size
        else:
            raise DecodeError(f"field {field}: unsupported wire type {wire}")
        yield field, wire, value


def scalars(wire, value):
    """The integers of one occurrence of a repeated scalar field, packed or not."""
    if wire in (0, 1, 5):
        return [value]
    out, pos = [], 0
    while pos < len(value):
        v, pos = read_varint(value, pos)
        out.append(v)
    return out


def signed(v):
    """Reinterpret a uint64 as int64."""
    return v - (1 << 64) if v >= 1 << 63 else v


def as_text(raw):
    """Protobuf string → str; invalid UTF-8 survives as surrogates so that validation can
    find it (see utf8_ok)."""
    return raw.decode("utf-8", "surrogateescape")


def utf8_ok(text):
    try:
        text.encode("utf-8", "surrogateescape").decode("utf-8")
        return True
    except UnicodeError:
        return False


@dataclasses.dataclass
class Series:
    """One push.v1.RawProfileSeries: labels [(name, value)], samples [(raw_profile, ID)],
    annotations [(key, value)]."""
    labels: list
    samples: list
    annotations: list


def _pair(data):
    a = b = ""
    for field, wire, value in iter_fields(data):
        if wire == 2 and field == 1:
            a = as_text(value)
        elif wire == 2 and field == 2:
            b = as_text(value)
    return a, b


def decode_push_request(body):
    """push.v1.PushRequest bytes → list[Series]."""
    out = []
    for field, wire, value in iter_fields(body):
        if field != 1 or wire != 2:
            continue
        series = Series([], [], [])
        for f, w, v in iter_fields(value):
            if w != 2:
                continue
            if f == 1:
                series.labels.append(_pair(v))
            elif f == 3:
                series.annotations.append(_pair(v))
            elif f == 2:
                raw, ident = b"", ""
                for sf, sw, sv in iter_fields(v):
                    if sw == 2 and sf == 1:
                        raw = sv
                    elif sw == 2 and sf == 2:
                        ident = as_text(sv)
                series.samples.append((raw, ident))
        out.append(series)
    return out


def gunzip_limited(data, limit=MAX_PROFILE_BYTES):
    """Decompress if data starts with the gzip magic; raise ValidationError past `limit`
    decompressed bytes (+1 so that the caller can report the excess)."""
    if data[:2] != b"\x1f\x8b":
        return data
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(data, limit + 1)
    except zlib.error as e:
        raise ValidationError(f"invalid gzip data: {e}") from None
    if len(out) > limit:
        raise ValidationError(f"uncompressed profile exceeds the size limit "
                              f"(max_profile_size_byte, limit: {limit})")
    if not d.eof:
        raise ValidationError("truncated gzip data")
    return out


def decode_pprof(data):
    """google pprof profile.proto (gzipped or not) → plain dict. Strings are resolved through
    the string table (None when an index is out of range); `string_refs` lists every string
    index met, so that validate_pprof can check them."""
    data = gunzip_limited(data, 1 << 40)
    raw = {k: [] for k in ("sample_type", "sample", "mapping", "location", "function",
                           "string_table", "comment", "frames")}
    top = {"time_nanos": 0, "duration_nanos": 0, "period": 0, "period_type": None,
           "default_sample_type": 0, "doc_url": 0}
    for field, wire, value in iter_fields(data):
        if field == 1 and wire == 2:
            raw["sample_type"].append(_fields(value))
        elif field == 2 and wire == 2:
            raw["sample"].append(value)
        elif field == 3 and wire == 2:
            raw["mapping"].append(_fields(value))
        elif field == 4 and wire == 2:
            raw["location"].append(value)
        elif field == 5 and wire == 2:
            raw["function"].append(_fields(value))
        elif field == 6 and wire == 2:
            raw["string_table"].append(value)
        elif field in (7, 8) and wire == 0:
            raw["frames"].append(value)
        elif field == 9:
            top["time_nanos"] = signed(value)
        elif field == 10:
            top["duration_nanos"] = signed(value)
        elif field == 11 and wire == 2:
            top["period_type"] = _fields(value)
        elif field == 12:
            top["period"] = signed(value)
        elif field == 13:
            raw["comment"] += [signed(v) for v in scalars(wire, value)]
        elif field == 14:
            top["default_sample_type"] = signed(value)
        elif field == 15:
            top["doc_url"] = signed(value)

    table = [as_text(s) for s in raw["string_table"]]
    refs = []

    def s(index):
        refs.append(index)
        return table[index] if 0 <= index < len(table) else None

    def value_type(f):
        return (s(f.get(1, 0)), s(f.get(2, 0)))

    samples = []
    for body in raw["sample"]:
        sample = {"location_ids": [], "values": [], "labels": {}, "label_count": 0}
        for f, w, v in iter_fields(body):
            if f == 1:
                sample["location_ids"] += scalars(w, v)
            elif f == 2:
                sample["values"] += [signed(x) for x in scalars(w, v)]
            elif f == 3 and w == 2:
                lab = _fields(v)
                sample["label_count"] += 1
                key = s(lab.get(1, 0))
                sample["labels"][key] = s(lab[2]) if 2 in lab else signed(lab.get(3, 0))
                if 4 in lab:
                    s(lab[4])
        samples.append(sample)
    locations = []
    for body in raw["location"]:
        loc = {"id": 0, "mapping_id": 0, "address": 0, "lines": [], "is_folded": False}
        for f, w, v in iter_fields(body):
            if f == 1:
                loc["id"] = v
            elif f == 2:
                loc["mapping_id"] = v
            elif f == 3:
                loc["address"] = v
            elif f == 4 and w == 2:
                line = _fields(v)
                loc["lines"].append((line.get(1, 0), signed(line.get(2, 0))))
            elif f == 5:
                loc["is_folded"] = bool(v)
        locations.append(loc)
    mappings = [{"id": m.get(1, 0), "memory_start": m.get(2, 0), "memory_limit": m.get(3, 0),
                 "file_offset": m.get(4, 0), "filename": s(m.get(5, 0)),
                 "build_id": s(m.get(6, 0)), "has_functions": bool(m.get(7, 0)),
                 "has_filenames": bool(m.get(8, 0)), "has_line_numbers": bool(m.get(9, 0)),
                 "has_inline_frames": bool(m.get(10, 0))} for m in raw["mapping"]]
    functions = [{"id": fn.get(1, 0), "name": s(fn.get(2, 0)), "system_name": s(fn.get(3, 0)),
                  "filename": s(fn.get(4, 0)), "start_line": signed(fn.get(5, 0))}
                 for fn in raw["function"]]
    sample_type = [value_type(f) for f in raw["sample_type"]]
    period_type = value_type(top["period_type"]) if top["period_type"] is not None else None
    comments = [s(i) for i in raw["comment"]]
    for i in raw["frames"] + [top["default_sample_type"], top["doc_url"]]:
        s(signed(i))
    return {"sample_type": sample_type, "samples": samples, "mappings": mappings,
            "locations": locations, "functions": functions, "string_table": table,
            "time_nanos": top["time_nanos"], "duration_nanos": top["duration_nanos"],
            "period_type": period_type, "period": top["period"], "comments": comments,
            "string_refs": refs}


def _fields(data):
    """A flat message of scalar fields → {field number: last value}."""
    return {f: v for f, _, v in iter_fields(data)}


# ---------------------------------------------------------------------------------------------
# Validation (PROTOCOLS.md §2.2, §6, §7)

def _dense(items, what):
    for i, item in enumerate(items, 1):
        if item["id"] != i:
            raise ValidationError(f"{what} ids must be dense 1..N in order: "
                                  f"{what} #{i} has id {item['id']}")


def validate_pprof(profile, raw_len, now_ns=None):
    """Raise ValidationError unless the decoded profile obeys §7 rules 3-4 and the §6 limits.
    raw_len is the decompressed size. time_nanos must lie in now-1h .. now+10min."""
    if raw_len > MAX_PROFILE_BYTES:
        raise ValidationError(f"uncompressed profile exceeds the size limit "
                              f"(max_profile_size_byte, actual: {raw_len}, "
                              f"limit: {MAX_PROFILE_BYTES})")
    table = profile["string_table"]
    if not table or table[0] != "":
        raise ValidationError("string_table[0] must be the empty string")
    for i, text in enumerate(table):
        if not utf8_ok(text):
            raise ValidationError(f"string_table[{i}] is not valid UTF-8")
    for index in profile["string_refs"]:
        if not 0 <= index < len(table):
            raise ValidationError(f"string index {index} out of range (table has "
                                  f"{len(table)} strings)")
    _dense(profile["mappings"], "mapping")
    _dense(profile["locations"], "location")
    _dense(profile["functions"], "function")
    for loc in profile["locations"]:
        if loc["mapping_id"] > len(profile["mappings"]):
            raise ValidationError(f"location {loc['id']}: mapping_id {loc['mapping_id']} "
                                  f"out of range")
        if not loc["lines"] and loc["address"] == 0:
            raise ValidationError(f"location {loc['id']} has neither a line nor an address")
        for function_id, _ in loc["lines"]:
            if not 1 <= function_id <= len(profile["functions"]):
                raise ValidationError(f"location {loc['id']}: function_id {function_id} "
                                      f"out of range")
    for type_name, _ in profile["sample_type"]:
        if "-" in type_name:
            raise ValidationError(f"sample type name {type_name!r} contains '-'")
    samples = profile["samples"]
    if len(samples) > MAX_SAMPLES:
        raise ValidationError(f"profile has {len(samples)} samples, "
                              f"more than the limit of {MAX_SAMPLES}")
    n_types, n_locs = len(profile["sample_type"]), len(profile["locations"])
    for i, sample in enumerate(samples):
        if len(sample["values"]) != n_types:
            raise ValidationError(f"sample {i} has {len(sample['values'])} values for "
                                  f"{n_types} sample types")
        if any(v < 0 for v in sample["values"]):
            raise ValidationError(f"sample {i} has a negative value {sample['values']}")
        for loc_id in sample["location_ids"]:
            if not 1 <= loc_id <= n_locs:
                raise ValidationError(f"sample {i}: location id {loc_id} out of range")
        if sample["label_count"] > MAX_LABELS_PER_SAMPLE:
            raise ValidationError(f"sample {i} has {sample['label_count']} labels, more than "
                                  f"{MAX_LABELS_PER_SAMPLE}")
    now = time.time_ns() if now_ns is None else now_ns
    t = profile["time_nanos"]
    if not now - WINDOW_PAST_NS <= t <= now + WINDOW_FUTURE_NS:
        raise ValidationError(f"profile is outside of ingestion window (profile timestamp: "
                              f"{t}, now: {now}, window: -1h .. +10m)")


def labels_string(pairs):
    """The label set as the server's messages print it (LabelPairsString)."""
    return "{" + ", ".join(f'{n}="{v}"' for n, v in sorted(pairs)) + "}"


def sanitize_label_name(name):
    """SanitizeLegacyLabelName: the name as the sanitizing server stores it ('.' → '_'), or
    None when that server refuses it."""
    return name.replace(".", "_") if SANITIZABLE_NAME.fullmatch(name) else None


def with_service_name(pairs):
    """pushSeries: a series without service_name (or with an empty one) gets
    service_name="unknown_service" appended before validation."""
    if dict(pairs).get("service_name", ""):
        return list(pairs)
    return list(pairs) + [("service_name", SERVICE_NAME_FALLBACK)]


def validate_labels(pairs, sanitize=False):
    """ValidateLabels (pkg/validation/validate.go) on a series' (name, value) pairs: returns the
    labels as the server stores them, a dict; raises ValidationError with the server's
    message where it refuses. `sanitize` is the server's label sanitization (see the module's
    docstring)."""
    ls = sorted(pairs, key=lambda p: p[0].encode("utf-8", "surrogateescape"))
    if not ls:
        raise ValidationError("error at least one label pair is required per profile")
    if len(ls) > MAX_LABEL_NAMES:
        raise ValidationError(f"profile series '{labels_string(ls)}' has {len(ls)} label "
                              f"names; limit {MAX_LABEL_NAMES}")
    metric = dict(ls).get("__name__", "")
    if not metric or not utf8_ok(metric):
        raise ValidationError(f"invalid labels '{labels_string(ls)}' with error: invalid "
                              f"metric name")
    if not dict(ls).get("service_name", ""):
        raise ValidationError(f"invalid labels '{labels_string(ls)}' with error: service "
                              f"name is not provided")
    last, idx = None, 0
    while idx < len(ls):
        name, value = ls[idx]
        if len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            raise ValidationError(f"profile with labels '{labels_string(ls)}' has label name "
                                  f"too long: '{name}'")
        if len(value.encode("utf-8", "surrogateescape")) > MAX_VALUE_BYTES:
            raise ValidationError(f"profile with labels '{labels_string(ls)}' has label "
                                  f"value too long: '{value}'")
        if not sanitize:
            if not name or not utf8_ok(name):
                raise ValidationError(f"invalid labels '{labels_string(ls)}' with error: "
                                      f"invalid label name '{name}'")
        else:
            stored = sanitize_label_name(name)
            if stored is None:
                raise ValidationError(f"invalid labels '{labels_string(ls)}' with error: "
                                      f"invalid label name '{name}'")
            if stored != name:
                # handleSanitizedLabel: the renamed label takes its sorted place, and the
                # walk goes on from there or from where the old name was, whichever is
                # first; a label already there with the same value absorbs it, another
                # value is refused.
                rest = ls[:idx] + ls[idx + 1:]
                same = [v for n, v in rest if n == stored]
                if same and same[0] != value:
                    raise ValidationError(
                        f"profile with labels '{labels_string(ls)}' has duplicate label name "
                        f"'{stored}' after label name sanitization from '{name}'")
                if not same:
                    keys = [n.encode("utf-8", "surrogateescape") for n, _ in rest]
                    ins = bisect.bisect_left(keys, stored.encode())
                    rest.insert(ins, (stored, value))
                    idx = min(idx, ins)
                ls = rest
                last = ls[idx - 1][0] if idx else None
                continue
        if not utf8_ok(value):
            raise ValidationError(f"invalid labels '{labels_string(ls)}' with error: invalid "
                                  f"label value '{value}'")
        if name == last:
            raise ValidationError(f"profile with labels '{labels_string(ls)}' has duplicate "
                                  f"label name: '{name}'")
        last = name
        idx += 1
    return dict(ls)


def series_label_sets(pairs, profile, sanitize=False):
    """pprofsplit.VisitSampleSeries: the label sets the server stores a profile under. Without
    sample string labels (trace_id, span_id and profile_id aside) that is the series' own;
    else one per distinct set of them, each merged into the series labels (a series label
    wins over a sample label of the same name) and validated. Returns [(stored labels, sample
    indices)]; raises ValidationError as the first refused set does."""
    groups = {}
    for i, sample in enumerate(profile["samples"]):
        key = tuple(sorted((k, v) for k, v in sample["labels"].items()
                           if isinstance(v, str) and v != "" and k is not None
                           and k not in SAMPLE_LABELS_NOT_SERIES))
        groups.setdefault(key, []).append(i)
    if not profile["samples"]:
        return []
    if len(groups) == 1 and () in groups:
        return [(validate_labels(pairs, sanitize), groups[()])]
    out = []
    for key, samples in groups.items():
        merged, have = list(pairs), {n for n, v in pairs if v != ""}
        for name, value in key:
            if name not in have:
                merged.append((name, value))
                have.add(name)
        out.append((validate_labels(merged, sanitize), samples))
    return out


def parse_app_name(name):
    """The /ingest `name` parameter (§1.2) as labelset.Parse reads it
    (api/model/labelset/labelset.go, validate.go) → (service name, [(key, value)] as
    createLabels keeps them: __* keys dropped but __session_id__); ValidationError (answered
    400) where that parser refuses: a service name outside [A-Za-z0-9_.-/], a label name
    outside [A-Za-z0-9_.], an empty one. Its quirks are the server's: a value not closed by
    ',' or '}' is dropped, a key without '=' is ignored, {__name__=x} renames the service."""
    def refuse(what, text, c):
        raise ValidationError(f"name: invalid {what}: {text}: character is not allowed: {c!r}")

    labels, key, value, state = {}, "", "", "name"
    for c in name + "{":
        if state == "name":
            if c != "{":
                value += c
                continue
            service = value.strip()
            if not service:
                raise ValidationError("name: service name is required")
            for ch in service:
                if not APP_NAME.fullmatch(ch):
                    refuse("service name", service, ch)
            labels["__name__"] = service
            state = "set"
        elif state == "set":
            if c == "}":
                state = "done"
            elif c == "=":
                state, value = "value", ""
            else:
                key += c
        elif state == "value":
            if c not in ",}":
                value += c
                continue
            state, key = "set", key.strip()
            if key != "__name__":
                if not key:
                    raise ValidationError("name: label name is required")
                for ch in key:
                    if not APP_KEY.fullmatch(ch):
                        refuse("label name", key, ch)
            labels[key] = value.strip()
            key = ""
    service = labels.pop("__name__")
    return service, [(k, v) for k, v in labels.items()
                      if not k.startswith("__") or k == "__session_id__"]


def metric_name(sample_type):
    """__name__ derived from the sample types (§1.5; RawProfile.metricName in
    pkg/og/convert/pprof/profile.go, without its per-spy display names)."""
    types = [t or "" for t, _ in sample_type]
    if "wall" in types:
        return "wall"
    for t in types:
        if "cpu" in t:
            return "process_cpu"
        if "alloc_" in t or "inuse_" in t or t in ("space", "objects"):
            return "memory"
        if "mutex_" in t:
            return "mutex"
        if "block_" in t:
            return "block"
        if "goroutines" in t:
            return "goroutines"
    return types[-1] if types else ""


def parse_from(text, now_ns):
    """The /ingest `from` parameter → unix ns (digits: 10 s, 13 ms, 16 µs, 19 ns)."""
    if text and text.isdigit():
        scale = {13: 10**6, 16: 10**3, 19: 1}.get(len(text), 10**9)
        return int(text) * scale
    return now_ns


# ---------------------------------------------------------------------------------------------
# Protobuf wire format: writing (used by the tests only)

def _varint(n):
    n &= 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _int(field, n):
    return _varint(field << 3) + _varint(n) if n else b""


def _bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _packed(field, values):
    return _bytes(field, b"".join(_varint(v) for v in values)) if values else b""


def encode_push_request(labels, raw_profile, series_count=1):
    """A PushRequest with `series_count` copies of one series: labels [(name, value)] and one
    RawSample holding raw_profile."""
    series = b"".join(_bytes(1, _bytes(1, n) + _bytes(2, v)) for n, v in labels)
    series += _bytes(2, _bytes(1, raw_profile))
    return _bytes(1, series) * series_count


def encode_pprof(stacks, time_nanos=None, period=10_000_000, duration_nanos=10**10,
                 sample_type=(("samples", "count"), ("cpu", "nanoseconds")), string0="",
                 compress=True):
    """A small CPU pprof: stacks maps a tuple of function names (leaf first) to a sample count;
    values are [count, count*period] (truncated to len(sample_type)). One Location with one
    Line per function, no mappings. string0 replaces string_table[0] to build bad profiles."""
    strings = {string0: 0}

    def idx(text):
        return strings.setdefault(text, len(strings))

    out = b"".join(_bytes(1, _int(1, idx(t)) + _int(2, idx(u))) for t, u in sample_type)
    funcs = {}
    for stack in stacks:
        for name in stack:
            funcs.setdefault(name, len(funcs) + 1)
    for stack, count in stacks.items():
        values = [count, count * period][:len(sample_type)]
        out += _bytes(2, _packed(1, [funcs[n] for n in stack]) + _packed(2, values))
    for name, fid in funcs.items():
        out += _bytes(4, _int(1, fid) + _bytes(4, _int(1, fid) + _int(2, 1)))
    for name, fid in funcs.items():
        out += _bytes(5, _int(1, fid) + _int(2, idx(name)) + _int(3, idx(name)))
    out += _int(9, time.time_ns() if time_nanos is None else time_nanos)
    out += _int(10, duration_nanos)
    out += _bytes(11, _int(1, idx("cpu")) + _int(2, idx("nanoseconds"))) + _int(12, period)
    out += b"".join(_bytes(6, s) for s in sorted(strings, key=strings.get))
    return gzip.compress(out) if compress else out


# ---------------------------------------------------------------------------------------------
# TLS material

def make_ca_and_cert(dirname):
    """A self-signed CA and a server certificate for localhost (SAN DNS:localhost,
    IP:127.0.0.1) signed by it, made with the openssl CLI. Returns (ca_pem, cert_pem, key_pem)
    paths."""
    ca_key, ca = os.path.join(dirname, "ca.key"), os.path.join(dirname, "ca.pem")
    key, csr, crt = (os.path.join(dirname, n) for n in ("srv.key", "srv.csr", "srv.pem"))
    ext = os.path.join(dirname, "srv-ext.cnf")
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\nsubjectKeyIdentifier=hash\n"
                "authorityKeyIdentifier=keyid\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for argv in (["req", "-x509"] + ec + ["-keyout", ca_key, "-out", ca, "-days", "2",
                  "-subj", "/CN=ignis test Pyroscope CA",
                  "-addext", "basicConstraints=critical,CA:TRUE",
                  "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
                 ["req"] + ec + ["-keyout", key, "-out", csr, "-subj", "/CN=localhost"],
                 ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                  "-out", crt, "-days", "2", "-extfile", ext]):
        subprocess.run(["openssl"] + argv, check=True, capture_output=True)
    return ca, crt, key


# ---------------------------------------------------------------------------------------------
# The HTTP server

class _Reply(Exception):
    """Raised inside the handler to answer with an error."""

    def __init__(self, status, message, headers=None, labels=None, protocol=False):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}
        self.labels, self.protocol = labels, protocol


class _Drop(Exception):
    """Leave without answering (the connection is closed)."""


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, receiver, port):
        self.receiver = receiver
        super().__init__(("127.0.0.1", port), _Handler)

    def finish_request(self, request, client_address):
        """Runs in the connection's thread: do the TLS handshake here so that a slow or
        refusing client neither blocks nor kills the accept loop."""
        rec = self.receiver
        if rec.ssl_context is not None:
            try:
                request.settimeout(10)
                request = rec.ssl_context.wrap_socket(request, server_side=True)
            except (OSError, ssl.SSLError):
                with rec.lock:
                    rec.tls_failures += 1
                return
        with rec.lock:
            rec._connections.add(request)
        try:
            super().finish_request(request, client_address)
        finally:
            with rec.lock:
                rec._connections.discard(request)
            if rec.ssl_context is not None:
                self.shutdown_request(request)

    def handle_error(self, request, client_address):
        pass    # a client that went away mid-request is not the receiver's problem


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.server.receiver._handle(self)

    do_GET = do_PUT = do_DELETE = do_POST

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(body)
                body += self.rfile.read(size)
                self.rfile.readline()
                if len(body) > MAX_BODY_BYTES:
                    raise _Reply(413, "request body too large")
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.close_connection = True
            raise _Reply(413, "request body too large")
        return self.rfile.read(length)

    def answer(self, status, body=b"", headers=None):
        """An empty 200, or a JSON error body."""
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def connect_error(status, message):
    """The JSON error body of a Connect / Pyroscope error response."""
    code = CONNECT_CODES.get(status, "unknown" if status >= 500 else "invalid_argument")
    return json.dumps({"code": code, "message": message}).encode()


class Receiver:
    """A Pyroscope double on 127.0.0.1 and an ephemeral port (kept across stop()/start()).

    Programmable attributes (change them any time, ideally under `lock` or via program()):
    script, reject_services, require_tenant, require_basic, require_bearer,
    sanitize_label_names (False: Pyroscope 2.x's default; True: 1.x's, see the module).
    Records (read them under `lock` or via the helpers): requests, accepted, rejected,
    protocol_errors, tls_failures."""

    def __init__(self, tls=None, sanitize_label_names=False):
        self.lock = threading.RLock()
        self.ssl_context = None
        if tls is not None:
            self.ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.ssl_context.load_cert_chain(*tls)
        self.script = []
        self.reject_services = {}
        self.require_tenant = self.require_basic = self.require_bearer = None
        self.sanitize_label_names = sanitize_label_names
        self.requests, self.accepted, self.rejected, self.protocol_errors = [], [], [], []
        self.tls_failures = 0
        self.port = 0
        self._server = self._thread = None
        self._stopping = threading.Event()
        self._connections = set()

    @property
    def url(self):
        host = "localhost" if self.ssl_context else "127.0.0.1"
        return f"{'https' if self.ssl_context else 'http'}://{host}:{self.port}"

    def start(self):
        """Listen (again on the same port after a stop()) and serve from a daemon thread."""
        self._stopping.clear()
        self._server = _Server(self, self.port)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.1}, daemon=True,
                                        name=f"pyroscope-receiver-{self.port}")
        self._thread.start()
        return self

    def stop(self):
        """Stop listening, release hanging handlers and cut every open connection."""
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        with self.lock:
            conns = list(self._connections)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(5)
        self._server = self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def program(self, **settings):
        """Set programmable attributes atomically, e.g. program(script=[503, 200])."""
        with self.lock:
            for name, value in settings.items():
                if name not in ("script", "reject_services", "require_tenant",
                                "require_basic", "require_bearer", "sanitize_label_names"):
                    raise AttributeError(name)
                setattr(self, name, value)

    # -- request handling ----------------------------------------------------------------------

    def _handle(self, h):
        arrival = time.monotonic()
        url = urllib.parse.urlsplit(h.path)
        headers = {k.lower(): v for k, v in h.headers.items()}
        record = {"time": arrival, "method": h.command, "path": h.path, "status": None,
                  "headers": headers, "service_name": None, "body_len": 0,
                  "connect_v1": headers.get("connect-protocol-version") == "1", "script": None}
        with self.lock:
            self.requests.append(record)
        try:
            body = h.read_body()
            record["body_len"] = len(body)
            known = h.command == "POST" and url.path in (PUSH_PATH, INGEST_PATH)
            if not known:
                raise _Reply(404, f"no handler for {h.command} {url.path}")
            with self.lock:
                entry = self.script.pop(0) if self.script else None
            record["script"] = entry
            extra = self._scripted(h, entry)
            self._check_auth(headers)
            if url.path == PUSH_PATH:
                self._push(body, headers, arrival, record)
            else:
                self._ingest(body, url.query, headers, arrival, record)
            record["status"] = 200
            h.answer(200, headers=extra)
        except _Reply as e:
            record["status"] = e.status
            with self.lock:
                self.rejected.append({"time": arrival, "path": h.path, "status": e.status,
                                      "message": e.message, "labels": e.labels})
                if e.protocol:
                    self.protocol_errors.append(e.message)
            h.answer(e.status, connect_error(e.status, e.message), headers=e.headers)
        except _Drop:
            h.close_connection = True

    def _scripted(self, h, entry):
        """Apply one script entry; returns the headers to add to a normal answer."""
        if entry is None:
            return {}
        if entry == "hang":
            self._stopping.wait()
            raise _Drop()
        if entry == "close":
            raise _Drop()
        status, extra = entry if isinstance(entry, tuple) else (entry, {})
        if 200 <= status < 300:
            return extra
        raise _Reply(status, f"scripted failure {status}", extra)

    def _check_auth(self, headers):
        with self.lock:
            basic, bearer, tenant = self.require_basic, self.require_bearer, self.require_tenant
        auth = headers.get("authorization", "")
        if basic is not None:
            want = "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
            if auth != want:
                raise _Reply(401, "invalid or missing basic credentials",
                             {"WWW-Authenticate": 'Basic realm="pyroscope"'})
        if bearer is not None and auth != f"Bearer {bearer}":
            raise _Reply(401, "invalid or missing bearer token")
        if tenant is not None and headers.get("x-scope-orgid") != tenant:
            raise _Reply(401, "no org id")

    def _push(self, body, headers, arrival, record):
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/proto":
            raise _Reply(415, f"invalid content-type {media!r}, want application/proto",
                         {"Accept-Post": "application/proto"})
        encoding = headers.get("content-encoding", "identity").lower()
        if encoding == "gzip":
            try:
                body = gzip.decompress(body)
            except (OSError, EOFError, zlib.error) as e:
                raise _Reply(400, f"invalid gzip request body: {e}") from None
        elif encoding != "identity":
            raise _Reply(501, f"unknown compression {encoding!r}")
        try:
            series = decode_push_request(body)
        except DecodeError as e:
            raise _Reply(400, f"malformed PushRequest: {e}", protocol=True) from None
        if len(series) != 1:
            raise _Reply(400, f"push carries {len(series)} series, the agent must send exactly "
                         f"one per request", protocol=True)
        s = series[0]
        if not s.samples:
            raise _Reply(400, "series without samples", protocol=True)
        with self.lock:
            sanitize = self.sanitize_label_names
        pairs = with_service_name(s.labels)
        try:
            labels = validate_labels(pairs, sanitize)
        except ValidationError as e:
            raise _Reply(400, e.message, labels=dict(s.labels)) from None
        service = labels.get("service_name", SERVICE_NAME_FALLBACK)
        record["service_name"] = service
        profiles = []
        for raw, _ in s.samples:
            try:
                data = gunzip_limited(raw)
                profile = decode_pprof(data)
                validate_pprof(profile, len(data))
                stored = series_label_sets(pairs, profile, sanitize)
            except (ValidationError, DecodeError) as e:
                raise _Reply(400, str(e), labels=labels) from None
            profiles.append((raw, profile, stored))
        self._reject_service(service, labels)
        for raw, profile, stored in profiles:
            self._accept(labels, service, profile, raw, arrival, "push", headers, {},
                         s.labels, stored)

    def _ingest(self, body, query, headers, arrival, record):
        params = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
        if params.get("format") != "pprof":
            raise _Reply(400, f"format={params.get('format')!r}: the double only accepts "
                         f"format=pprof", protocol=True)
        if "content-encoding" in headers:
            raise _Reply(400, "Content-Encoding is not decoded by /ingest", protocol=True)
        try:
            app, pairs = parse_app_name(params.get("name", ""))
        except ValidationError as e:
            raise _Reply(400, e.message) from None
        if "service_name" not in dict(pairs):
            pairs.insert(0, ("service_name", app))
        labels = dict(pairs)
        record["service_name"] = labels["service_name"]
        with self.lock:
            sanitize = self.sanitize_label_names
        try:
            data = gunzip_limited(body)
            profile = decode_pprof(data)
            # createLabels: __name__ from the sample types, __delta__, pyroscope_spy.
            pairs += [("__name__", metric_name(profile["sample_type"])),
                      ("__delta__", "false"),
                      ("pyroscope_spy", params.get("spyName") or "unknown")]
            sent = list(pairs)
            pairs = with_service_name(pairs)
            labels = validate_labels(pairs, sanitize)
            now = time.time_ns()
            if profile["time_nanos"] < 365 * 86400 * 10**9:      # 0 or in 1970: fixTime
                profile["time_nanos"] = parse_from(params.get("from"), now)
            validate_pprof(profile, len(data), now)
            stored = series_label_sets(pairs, profile, sanitize)
        except (ValidationError, DecodeError) as e:
            raise _Reply(422, str(e), labels=labels) from None
        self._reject_service(labels["service_name"], labels)
        query_info = {k: params.get(k) for k in ("from", "until", "spyName", "sampleRate")}
        self._accept(labels, labels["service_name"], profile, body, arrival, "ingest", headers,
                     query_info, sent, stored)

    def _reject_service(self, service, labels):
        with self.lock:
            status = self.reject_services.get(service)
        if status is not None:
            raise _Reply(status, "rejected by test", labels=labels)

    def _accept(self, labels, service, profile, raw, arrival, endpoint, headers, query,
                sent_labels, series):
        """Record one accepted profile: `labels` the series labels as stored, `sent_labels`
        the (name, value) pairs as the client sent them (for /ingest: as the server derived
        them from the query), `series` [(stored labels, sample indices)] per label set the
        server splits the profile into (series_label_sets)."""
        with self.lock:
            self.accepted.append({"labels": labels, "service_name": service, "profile": profile,
                                  "raw": raw, "time_nanos": profile["time_nanos"],
                                  "time": arrival, "endpoint": endpoint, "headers": headers,
                                  "query": query, "sent_labels": list(sent_labels),
                                  "series": series})

    # -- helpers for the tests -----------------------------------------------------------------

    def wait_for(self, pred, timeout=10.0, interval=0.05):
        """Poll pred() until it is truthy (returned) or timeout s pass (returns the last,
        falsy, value)."""
        deadline = time.monotonic() + timeout
        while True:
            value = pred()
            if value or time.monotonic() >= deadline:
                return value
            time.sleep(interval)

    def accepted_by_service(self):
        out = {}
        with self.lock:
            for a in self.accepted:
                out.setdefault(a["service_name"], []).append(a)
        return out

    def write_accepted(self, dirname):
        """Each accepted profile as dirname/NNN_<service>.pb.gz (gzipped); returns the paths."""
        with self.lock:
            items = list(self.accepted)
        paths = []
        for i, a in enumerate(items):
            service = re.sub(r"[^A-Za-z0-9_.-]", "_", a["service_name"])
            p = os.path.join(dirname, f"{i:03d}_{service}.pb.gz")
            raw = a["raw"] if a["raw"][:2] == b"\x1f\x8b" else gzip.compress(a["raw"])
            with open(p, "wb") as f:
                f.write(raw)
            paths.append(p)
        return paths

    def totals(self, service):
        """Sum of values[0] (samples/count) over the accepted profiles of a service."""
        with self.lock:
            return sum(s["values"][0] for a in self.accepted if a["service_name"] == service
                       for s in a["profile"]["samples"] if s["values"])


# ---------------------------------------------------------------------------------------------
# Self-test

def _post(url, body, headers=None, context=None, timeout=10):
    """POST with urllib (no proxies) → (status, headers, body)."""
    import urllib.error
    import urllib.request
    handlers = [urllib.request.ProxyHandler({})]
    if context is not None:
        handlers.append(urllib.request.HTTPSHandler(context=context))
    opener = urllib.request.build_opener(*handlers)
    req = urllib.request.Request(url, data=body, headers=headers or {}, method="POST")
    try:
        with opener.open(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def _self_test():
    import tempfile
    import urllib.error

    def expect(cond, message):
        if not cond:
            raise AssertionError(message)

    proto = {"Content-Type": "application/proto", "Connect-Protocol-Version": "1"}
    pprof = encode_pprof({("leaf", "main"): 3, ("other", "main"): 2})
    good = [("__name__", "process_cpu"), ("service_name", "svc")]

    label_rules_self_test()
    with Receiver() as r:
        push = r.url + PUSH_PATH
        status, _, body = _post(push, encode_push_request(good, pprof), proto)
        expect(status == 200, f"valid push: {status} {body}")
        expect(len(r.accepted) == 1 and r.accepted[0]["labels"]["service_name"] == "svc",
               "accepted record")
        expect(r.totals("svc") == 5 and r.requests[0]["connect_v1"], "totals / connect flag")
        prof = r.accepted[0]["profile"]
        expect(prof["sample_type"] == [("samples", "count"), ("cpu", "nanoseconds")]
               and prof["functions"][0]["name"] == "leaf", f"decoded profile {prof}")

        bad = encode_pprof({("f",): 1}, string0="x")
        status, _, body = _post(push, encode_push_request(good, bad), proto)
        expect(status == 400 and b"string_table" in body, f"bad string table: {status} {body}")
        status, _, body = _post(push, encode_push_request(good + [("a-b", "1")], pprof), proto)
        expect(status == 200 and r.accepted[-1]["labels"]["a-b"] == "1",
               f"label a-b (2.x keeps UTF-8 names): {status} {body}")
        r.program(sanitize_label_names=True)
        status, _, body = _post(push, encode_push_request(good + [("a-b", "1")], pprof), proto)
        expect(status == 400 and b"invalid_argument" in body
               and b"invalid label name 'a-b'" in body, f"label a-b: {status} {body}")
        status, _, body = _post(push, encode_push_request(good + [("a.b", "1")], pprof), proto)
        expect(status == 200 and r.accepted[-1]["labels"].get("a_b") == "1"
               and ("a.b", "1") in r.accepted[-1]["sent_labels"], f"label a.b: {status} {body}")
        r.program(sanitize_label_names=False)
        del r.accepted[1:]
        old = encode_pprof({("f",): 1}, time_nanos=time.time_ns() - 2 * 3600 * 10**9)
        status, _, body = _post(push, encode_push_request(good, old), proto)
        expect(status == 400 and b"outside of ingestion window" in body, f"old: {status}")
        status, _, _ = _post(push, encode_push_request(good, pprof, series_count=2), proto)
        expect(status == 400 and r.protocol_errors, f"two series: {status}")
        status, _, _ = _post(push, encode_push_request(good, pprof),
                             {"Content-Type": "application/json"})
        expect(status == 415, f"wrong content type: {status}")
        status, _, _ = _post(r.url + "/nope", b"")
        expect(status == 404, f"unknown path: {status}")

        r.program(script=[500, (429, {"Retry-After": "1"}), 200])
        got = [_post(push, encode_push_request(good, pprof), proto)[:2] for _ in range(3)]
        expect([g[0] for g in got] == [500, 429, 200], f"script: {[g[0] for g in got]}")
        expect(got[1][1].get("Retry-After") == "1", "Retry-After header")

        r.program(reject_services={"svc": 400})
        status, _, body = _post(push, encode_push_request(good, pprof), proto)
        expect(status == 400 and b"rejected by test" in body, f"reject_services: {status}")
        r.program(reject_services={}, require_tenant="t1")
        status, _, _ = _post(push, encode_push_request(good, pprof), proto)
        expect(status == 401, f"tenant missing: {status}")
        status, _, _ = _post(push, encode_push_request(good, pprof),
                             dict(proto, **{"X-Scope-OrgID": "t1"}))
        expect(status == 200, f"tenant given: {status}")
        r.program(require_tenant=None, require_basic=("u", "p"))
        status, hdrs, _ = _post(push, encode_push_request(good, pprof), proto)
        expect(status == 401 and "Basic" in hdrs.get("WWW-Authenticate", ""), "basic missing")
        auth = "Basic " + base64.b64encode(b"u:p").decode()
        status, _, _ = _post(push, encode_push_request(good, pprof),
                             dict(proto, Authorization=auth))
        expect(status == 200, f"basic given: {status}")
        r.program(require_basic=None)

        before = len(r.accepted)
        status, _, body = _post(r.url + "/ingest?name=app%7Bk%3Dv%7D&format=pprof&from=1"
                                "&spyName=ebpfspy", pprof, {"Content-Type": "application/octet"})
        expect(status == 200, f"ingest: {status} {body}")
        a = r.accepted[before]
        expect(a["labels"] == {"service_name": "app", "k": "v", "__name__": "process_cpu",
                               "__delta__": "false", "pyroscope_spy": "ebpfspy"}
               and a["endpoint"] == "ingest" and a["query"]["spyName"] == "ebpfspy",
               f"ingest labels {a['labels']}")
        status, _, body = _post(r.url + "/ingest?name=app%7Bk-1%3Dv%7D&format=pprof", pprof)
        expect(status == 400 and b"invalid label name" in body, f"ingest k-1: {status} {body}")
        status, _, _ = _post(r.url + "/ingest?name=app%21&format=pprof", pprof)
        expect(status == 400, f"ingest bad name: {status}")
        status, _, _ = _post(r.url + "/ingest?name=app%7Bk%3Dv&format=pprof", pprof)
        expect(status == 200 and "k" not in r.accepted[-1]["labels"],
               f"ingest unclosed label (the server drops it): {status}")
        status, _, _ = _post(r.url + "/ingest?name=app&format=pprof", bad)
        expect(status == 422, f"ingest bad profile: {status}")

        with tempfile.TemporaryDirectory() as d:
            paths = r.write_accepted(d)
            expect(len(paths) == len(r.accepted) and paths[0].endswith("000_svc.pb.gz"),
                   f"write_accepted {paths}")
        expect(set(r.accepted_by_service()) == {"svc", "app"}, "accepted_by_service")

        r.program(script=["close"])
        try:
            _post(push, encode_push_request(good, pprof), proto)
            expect(False, "close: got an answer")
        except (urllib.error.URLError, ConnectionError, http.client.HTTPException):
            pass

        r.program(script=["hang"])
        outcome = []
        client = threading.Thread(target=lambda: outcome.append(
            _try(lambda: _post(push, encode_push_request(good, pprof), proto, timeout=30))))
        client.start()
        expect(r.wait_for(lambda: r.requests[-1]["script"] == "hang", 5), "hang not reached")
        t0 = time.monotonic()
        r.stop()
        client.join(5)
        expect(time.monotonic() - t0 < 5 and outcome and isinstance(outcome[0], Exception),
               f"hang/stop took {time.monotonic() - t0:.1f} s: {outcome}")

    with tempfile.TemporaryDirectory() as d:
        ca, crt, key = make_ca_and_cert(d)
        with Receiver(tls=(crt, key)) as r:
            expect(r.url.startswith("https://localhost:"), r.url)
            ctx = ssl.create_default_context(cafile=ca)
            status, _, _ = _post(r.url + PUSH_PATH, encode_push_request(good, pprof), proto,
                                 context=ctx)
            expect(status == 200 and len(r.accepted) == 1, f"TLS push: {status}")
            strict = ssl.create_default_context()
            strict.load_verify_locations(cadata=_other_ca(d))
            try:
                _post(r.url + PUSH_PATH, b"", proto, context=strict)
                expect(False, "a client without the CA was accepted")
            except urllib.error.URLError:
                pass
            expect(r.wait_for(lambda: r.tls_failures >= 1, 5), "tls_failures not counted")
            status, _, _ = _post(r.url + PUSH_PATH, encode_push_request(good, pprof), proto,
                                 context=ctx)
            expect(status == 200, f"TLS push after a failed handshake: {status}")
    print("receiver self-test: OK")


def _name_cases():
    """parse_app_name on the server parser's cases: name → (service, pairs) or an error."""
    return [
        ("app", ("app", [])),
        ("app{}", ("app", [])),
        (" ns/app-1.2 {a=1, b.c = x y ,}", ("ns/app-1.2", [("a", "1"), ("b.c", "x y")])),
        ("app{k}", ("app", [])),
        ("app{k=v", ("app", [])),
        ("app{__name__=other,__x__=1,__session_id__=9}", ("other", [("__session_id__", "9")])),
        ("app{9k=1}", ("app", [("9k", "1")])),
        ("app{k-1=v}", "name: invalid label name: k-1: character is not allowed: '-'"),
        ("app{=v}", "name: label name is required"),
        ("app!{}", "name: invalid service name: app!: character is not allowed: '!'"),
        ("{a=1}", "name: service name is required"),
    ]


def label_rules_self_test():
    """The label rules against cases worked out from the server's code (module docstring):
    (pairs, sanitize, stored labels or the start of the refusal's message)."""
    base = [("__name__", "process_cpu"), ("service_name", "svc")]
    cases = [
        (base + [("otel.scope.name", "x")], False, {"otel.scope.name": "x"}),
        (base + [("otel.scope.name", "x")], True, {"otel_scope_name": "x"}),
        (base + [("caf\u00e9", "1")], False, {"caf\u00e9": "1"}),
        (base + [("caf\u00e9", "1")], True, "invalid labels"),
        (base + [("9a", "1")], False, {"9a": "1"}),
        (base + [("9a", "1")], True, "invalid labels"),
        (base + [(".x", "1")], True, {"_x": "1"}),
        (base + [("a.b", "1"), ("a_b", "1")], True, {"a_b": "1"}),
        (base + [("a.b", "1"), ("a_b", "2")], True, "profile with labels"),
        (base + [("a.b", "1"), ("a.b", "2")], True, "profile with labels"),
        (base + [("a.b", "1"), ("a.b", "2")], False, "profile with labels"),
        (base + [("b.c", "1"), ("a.z", "2"), ("a_y", "3")], True,
         {"b_c": "1", "a_z": "2", "a_y": "3"}),
        (base + [("", "1")], False, "invalid labels"),
        (base + [("k", "\udcff")], False, "invalid labels"),
        (base + [("k" * 1025, "1")], False, "profile with labels"),
        (base + [("k", "v" * 2049)], False, "profile with labels"),
        (base + [(f"l{i}", "v") for i in range(29)], False, "profile series"),
        ([("service_name", "svc")], False, "invalid labels"),
        ([("__name__", "a-b:c"), ("service_name", "svc")], False,
         {"__name__": "a-b:c", "service_name": "svc"}),
        (with_service_name([("__name__", "x")]), False,
         {"__name__": "x", "service_name": "unknown_service"}),
        (with_service_name([("__name__", "x"), ("service.name", "s")]), True,
         "profile with labels"),
        (with_service_name([("__name__", "x"), ("service.name", "s")]), False,
         {"__name__": "x", "service.name": "s", "service_name": "unknown_service"}),
    ]
    for pairs, sanitize, want in cases:
        try:
            got = validate_labels(pairs, sanitize)
        except ValidationError as e:
            got = e.message
        if isinstance(want, dict):
            want = dict(base, **want) if "__name__" not in want else want
            ok = got == want
        else:
            ok = isinstance(got, str) and got.startswith(want)
        if not ok:
            raise AssertionError(f"validate_labels({pairs[-3:]}, sanitize={sanitize}): "
                                 f"{str(got)[:200]!r}, want {str(want)[:200]!r}")
    for name, want in _name_cases():
        try:
            got = parse_app_name(name)
        except ValidationError as e:
            got = e.message
        if got != want:
            raise AssertionError(f"parse_app_name({name!r}): {got!r}, want {want!r}")
    # Sample labels join the series (the series wins; trace_id and span_id stay out).
    prof = {"samples": [{"labels": {"thread.name": "a", "service_name": "other",
                                    "span_id": "1"}},
                        {"labels": {}}]}
    got = series_label_sets(base, prof, True)
    want = [(dict(base, thread_name="a"), [0]), (dict(base), [1])]
    if got != want:
        raise AssertionError(f"series_label_sets: {got} != {want}")
    prof["samples"][1]["labels"] = {"bad-name": "x"}
    try:
        series_label_sets(base, prof, True)
        raise AssertionError("a refused sample label name was taken")
    except ValidationError:
        pass
    return len(cases) + len(_name_cases())


def _try(fn):
    try:
        return fn()
    except Exception as e:      # noqa: BLE001 - the self-test inspects it
        return e


def _other_ca(dirname):
    """A CA that did not sign the server certificate, for the failing-handshake check."""
    other = os.path.join(dirname, "other")
    os.mkdir(other)
    with open(make_ca_and_cert(other)[0]) as f:
        return f.read()


if __name__ == "__main__":
    import sys
    try:
        _self_test()
    except Exception as e:      # noqa: BLE001
        import traceback
        traceback.print_exc()
        print(f"receiver self-test: FAILED: {e}", file=sys.stderr)
        sys.exit(1)
