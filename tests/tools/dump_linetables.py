#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Dump the line tables of every code object of a Python source file, with the line of each
instruction as the running interpreter sees it, for tests/unit/test_linetable.c.

    dump_linetables.py SOURCE > OUT      (run by each CPython under test; never imports SOURCE)

Output, one line per code object:

    code <major>.<minor> <qualname> <firstlineno> <hex table or -> <units> <line per unit>...

The table is co_lnotab (3.8-3.9) or co_linetable (3.10+); units is the bytecode's length in
2-byte code units; a unit's line is -1 when it has none. The expected lines come from the
interpreter's own decoders: dis.findlinestarts() on 3.8-3.9 (a unit takes the line of the last
start at or before it), co_lines() on 3.10+ (ranges of byte offsets, None for no line).
"""
import dis
import sys
import types


def walk(code, prefix=""):
    name = getattr(code, "co_qualname", None) or (prefix + code.co_name)
    yield name, code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from walk(const, name + ".")


def lines_of(code):
    units = len(code.co_code) // 2
    lines = [-1] * units
    if sys.version_info >= (3, 10):
        for start, end, line in code.co_lines():
            for u in range(start // 2, min(end // 2, units)):
                lines[u] = -1 if line is None else line
        return lines
    starts = list(dis.findlinestarts(code))
    for i, (addr, line) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else 2 * units
        for u in range(addr // 2, min(end // 2, units)):
            lines[u] = line
    return lines


def main():
    path = sys.argv[1]
    with open(path) as f:
        top = compile(f.read(), path, "exec")
    table_attr = "co_lnotab" if sys.version_info < (3, 10) else "co_linetable"
    ver = "%d.%d" % sys.version_info[:2]
    for name, code in walk(top):
        table = getattr(code, table_attr)
        lines = lines_of(code)
        print("code", ver, name.replace(" ", "_"), code.co_firstlineno, table.hex() or "-",
              len(lines), *lines)


if __name__ == "__main__":
    main()
