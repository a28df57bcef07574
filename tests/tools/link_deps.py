#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What each test program links, derived from its includes (ddprof's per-test source lists,
made by the build instead of by hand).

A program links the module of every header it includes, and, in turn, the modules those
modules' sources include: a header `D/name.h` or `D/name_internal.h` belongs to `D/name.c`
when that file exists (a header without one is data only, and so is every header of bpf/,
the BPF programs' side); the
symbolizer's public header is the archive libsymbolizer.a, which a test of the symbolizer
links alone (STYLE.md section 1); a generated `name.pb-c.h` is `agent/name.pb-c.o`.

    link_deps.py VAR=PROGRAM.c ...   prints "VAR := OBJECTS" for make, one line each
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SYMBOLIZER = os.path.join(ROOT, "symbolizer")
BPF = os.path.join(ROOT, "bpf")


# The compiler's search path for quoted includes after the including file's folder (-Iagent
# in the Makefile's flags; generated headers under build/ are handled by name).
SEARCH = [os.path.join(ROOT, "agent")]


def includes(path):
    """The files a source or header includes with quotes, resolved like the compiler does:
    beside the including file, then along SEARCH."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return []
    found = []
    for name in INCLUDE.findall(text):
        if name.endswith(".pb-c.h"):
            found.append(("proto", os.path.basename(name)[: -len(".pb-c.h")]))
            continue
        for folder in [os.path.dirname(path)] + SEARCH:
            candidate = os.path.normpath(os.path.join(folder, name))
            if os.path.exists(candidate):
                found.append(("file", candidate))
                break
    return found


def module_of(header):
    """The source that implements a header (`name.c`, or `name.S` for data the assembler
    embeds), or None for a header of data only."""
    base, _ = os.path.splitext(header)
    if base.endswith("_internal"):
        base = base[: -len("_internal")]
    for source in (base + ".c", base + ".S"):
        if os.path.exists(source):
            return source
    return None


def link_list(program):
    objects, seen, todo = [], set(), [os.path.abspath(program)]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for kind, what in includes(path):
            if kind == "proto":
                obj = f"agent/{what}.pb-c.o"
                if obj not in objects:
                    objects.append(obj)
                continue
            if os.path.dirname(what) == BPF:
                continue  # BPF programs' headers: data for userspace, or BPF C
            if os.path.dirname(what) == SYMBOLIZER:
                if "libsymbolizer.a" not in objects:
                    objects.append("libsymbolizer.a")
                continue
            todo.append(what)
            source = module_of(what)
            if source and source != os.path.abspath(program):
                obj = os.path.splitext(os.path.relpath(source, ROOT))[0] + ".o"
                if obj not in objects:
                    objects.append(obj)
                todo.append(source)
    # The archive last, so that every object's references to it resolve.
    objects.sort(key=lambda o: o == "libsymbolizer.a")
    return objects


def main(argv):
    for arg in argv:
        var, _, program = arg.partition("=")
        if not var or not os.path.isfile(program):
            print(f"link_deps.py: {arg}: want VAR=PROGRAM.c of an existing file", file=sys.stderr)
            return 2
        print(f"{var} := {' '.join(link_list(program))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
