#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""go_pcs.py GONM: the pcs at which tests/unit/test_gopclntab.c compares the pclntab parser
with `go tool addr2line`, one 0x-hex pc a line, from a `go tool nm -size -sort address`
listing: every sized text symbol's first, middle and last byte, and every 4th byte of the
main package's functions (where the inlined calls are)."""
import sys

with open(sys.argv[1]) as f:
    for line in f:
        fields = line.split()
        if len(fields) < 4 or fields[2] not in ("T", "t"):
            continue
        addr, size, name = int(fields[0], 16), int(fields[1]), fields[3]
        if size <= 0:
            continue
        pcs = [addr, addr + size // 2, addr + size - 1]
        if name.startswith("main."):
            pcs += range(addr + 1, addr + size, 4)
        for pc in pcs:
            print(hex(pc))
