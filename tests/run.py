#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Run every ignis test and end with one line: "N passed, N failed".

Stages: the format check, the cmocka unit tests (plain and under ASan/UBSan, read as TAP),
and the integration tests (tests/integration/test_*.py, real BPF, root). A test that cannot
run here (no root, no BTF) fails with the reason: CI runs as root with BPF, so a skip there
would hide a broken feature.
"""
import argparse
import fnmatch
import glob
import importlib.util
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = []

    def record(self, name, ok, detail="", seconds=None):
        took = f" ({seconds:.1f} s)" if seconds is not None else ""
        if ok:
            self.passed += 1
            print(f"PASS {name}{took}", flush=True)
        else:
            self.failed.append(name)
            print(f"FAIL {name}{took}", flush=True)
            for line in detail.rstrip().splitlines()[-160:]:
                print(f"     {line}", flush=True)


def format_check(results):
    sources = []
    for pattern in ("agent/*.[ch]", "agent/*/*.[ch]", "symbolizer/*.[ch]", "bpf/*.[ch]"):
        sources += sorted(glob.glob(os.path.join(ROOT, pattern)))
    proc = subprocess.run(["clang-format", "--dry-run", "--Werror"] + sources, cwd=ROOT,
                          capture_output=True, text=True)
    results.record("format: clang-format (kernel style)", proc.returncode == 0,
                   proc.stderr[-4000:])


def docs_check(results, build):
    """The README's configuration reference is the agent's option table, verbatim."""
    ignis = os.path.join(build, "ignis")
    proc = subprocess.run([ignis, "--print-reference"], capture_output=True, text=True)
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    m = re.search(r"<!-- config:start -->\n(.*?)\n<!-- config:end -->", readme, re.S)
    ok = proc.returncode == 0 and m is not None and m.group(1).strip() == proc.stdout.strip()
    results.record("docs: README configuration reference matches the option table", ok,
                   "replace the block between the config markers in README.md with "
                   "`build/ignis --print-reference`:\n" + proc.stdout)


TAP_LINE = re.compile(r"^(not ok|ok) \d+ - (\S+)")


def unit_tests(results, build):
    for flavour, pattern in (("unit", f"{build}/tests/unit/test_*"),
                             ("unit-san", f"{build}/san/tests/unit/test_*")):
        binaries = sorted(b for b in glob.glob(pattern) if not b.endswith(".d"))
        if not binaries:
            results.record(f"{flavour}: built", False, f"no binaries match {pattern}")
        for binary in binaries:
            env = dict(os.environ, CMOCKA_MESSAGE_OUTPUT="TAP",
                       ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
                       UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
            start = time.monotonic()
            proc = subprocess.run([binary], capture_output=True, text=True, env=env,
                                  timeout=300)
            took = time.monotonic() - start
            module = os.path.basename(binary)[len("test_"):]
            seen = 0
            output = proc.stdout + proc.stderr
            for line in proc.stdout.splitlines():
                m = TAP_LINE.match(line)
                if m:
                    seen += 1
                    ok = m.group(1) == "ok"
                    results.record(f"{flavour}: {module}: {m.group(2)}", ok,
                                   "" if ok else output)
            # A crash, a sanitizer report or a leak after the last test fails the binary.
            if proc.returncode != 0 and all(not TAP_LINE.match(l) or l.startswith("ok")
                                            for l in proc.stdout.splitlines()):
                results.record(f"{flavour}: {module}: exit status", False,
                               f"exit {proc.returncode}\n{output}", took)
            if not seen:
                results.record(f"{flavour}: {module}: ran", False, output, took)


FUZZ_TARGETS = ("procmaps", "perfmap", "elf", "debuglink", "unwind", "gopclntab")


def fuzz_regression(results, build):
    """Replay each fuzz target's committed corpus once (tests/fuzz/corpus/TARGET): inputs
    that once crashed or found new paths must still run clean under ASan/UBSan."""
    for target in FUZZ_TARGETS:
        binary = os.path.join(build, "tests", "fuzz", f"fuzz_{target}")
        corpus = os.path.join(HERE, "fuzz", "corpus", target)
        name = f"fuzz: {target}: corpus replays clean"
        files = glob.glob(os.path.join(corpus, "*"))
        if not os.path.exists(binary) or not files:
            results.record(name, False, f"missing {binary} or an empty corpus {corpus}")
            continue
        start = time.monotonic()
        proc = subprocess.run([binary, "-runs=0", corpus], capture_output=True, text=True,
                              timeout=600)
        ok = proc.returncode == 0 and "INITED" in proc.stderr
        results.record(f"{name} ({len(files)} inputs)", ok,
                       "" if ok else proc.stderr[-4000:], time.monotonic() - start)


def integration_tests(results, build, only):
    problems = []
    if os.geteuid() != 0:
        problems.append("not running as root (run `sudo make test`)")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        problems.append("the kernel has no BTF (/sys/kernel/btf/vmlinux)")
    sys.path.insert(0, os.path.join(HERE, "integration"))
    import harness
    harness.configure(ROOT, os.path.abspath(build))
    for path in sorted(glob.glob(os.path.join(HERE, "integration", "test_*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for attr in sorted(dir(module), key=lambda a: getattr(getattr(module, a), "order", 0)):
            fn = getattr(module, attr)
            if not attr.startswith("test_") or not callable(fn):
                continue
            full = f"integration: {name[len('test_'):]}: {attr[len('test_'):]}"
            if only and not fnmatch.fnmatch(full, f"*{only}*"):
                continue
            if problems:
                results.record(full, False, "cannot run: " + "; ".join(problems))
                continue
            start = time.monotonic()
            try:
                fn()
                results.record(full, True, seconds=time.monotonic() - start)
            except Exception:
                results.record(full, False, traceback.format_exc() + harness.agent_logs(),
                               time.monotonic() - start)
            finally:
                harness.cleanup()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--only", help="run only the integration tests matching this")
    parser.add_argument("--unit-only", action="store_true")
    args = parser.parse_args()
    results = Results()
    started = time.monotonic()
    if not args.only:
        format_check(results)
        docs_check(results, args.build)
        unit_tests(results, args.build)
        fuzz_regression(results, args.build)
    if not args.unit_only:
        integration_tests(results, args.build, args.only)
    print(f"\ntests took {time.monotonic() - started:.0f} s")
    if results.failed:
        print("failed:\n  " + "\n  ".join(results.failed))
    print(f"{results.passed} passed, {len(results.failed)} failed")
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main())
