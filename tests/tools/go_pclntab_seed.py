#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""go_pclntab_seed.py GO-BINARY OUT: a small pclntab for tests/fuzz/fuzz_gopclntab.c, cut out
of a real Go binary's .gopclntab (Go 1.18+ layout): the main package's functions, goexit and
systemstack, and the first few, with their names, pc-value tables and records, and the
binary's whole cutab and filetab, laid out again as the linker lays out a table."""
import struct
import subprocess
import sys

binary, out = sys.argv[1], sys.argv[2]
sections = subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True).stdout
line = next(l for l in sections.splitlines() if " .gopclntab " in l)
fields = line.split("]", 1)[1].split()
off, size = int(fields[3], 16), int(fields[4], 16)
with open(binary, "rb") as f:
    f.seek(off)
    tab = f.read(size)

magic = struct.unpack_from("<I", tab)[0]
nfunc, nfiles, text, o_name, o_cu, o_file, o_pc, o_ln = struct.unpack_from("<8Q", tab, 8)
func_size = 40 if magic == 0xfffffff0 else 44


def name_at(o):
    return tab[o_name + o:tab.index(b"\0", o_name + o)]


def pc_table(o):
    """The bytes of the pc-value table at pctab offset o, its terminator included: (value
    delta, pc delta) varint pairs up to a zero value delta after the first pair."""
    p, first = o_pc + o, True
    while True:
        value = shift = 0
        while True:
            b = tab[p]
            p += 1
            value |= (b & 0x7f) << shift
            shift += 7
            if not b & 0x80:
                break
        if value == 0 and not first:
            return tab[o_pc + o:p]
        while tab[p] & 0x80:
            p += 1
        p += 1
        first = False


funcs = []
for i in range(nfunc):
    entry, foff = struct.unpack_from("<II", tab, o_ln + 8 * i)
    nameoff = struct.unpack_from("<i", tab, o_ln + foff + 4)[0]
    funcs.append((i, entry, foff, name_at(nameoff)))
keep = [f for f in funcs if f[0] < 8 or f[3].startswith(b"main.") or
        f[3] in (b"runtime.goexit", b"runtime.systemstack")]
end = struct.unpack_from("<I", tab, o_ln + 8 * nfunc)[0]

names, pctab, records = b"", b"\0", []
for i, entry, foff, name in keep:
    rec = bytearray(tab[o_ln + foff:o_ln + foff + func_size])
    npcdata = struct.unpack_from("<I", rec, 28)[0]
    nfuncdata = rec[func_size - 1]
    rec += tab[o_ln + foff + func_size:o_ln + foff + func_size + 4 * (npcdata + nfuncdata)]
    struct.pack_into("<i", rec, 4, len(names))
    names += name + b"\0"
    for at in [16, 20, 24] + [func_size + 4 * k for k in range(npcdata)]:
        o = struct.unpack_from("<I", rec, at)[0]
        if o:
            struct.pack_into("<I", rec, at, len(pctab))
            pctab += pc_table(o)
    records.append((entry, bytes(rec)))

cutab, filetab = tab[o_cu:o_file], tab[o_file:o_pc]
n = len(keep)
o_name2 = 72
o_cu2 = o_name2 + len(names)
o_file2 = o_cu2 + len(cutab)
o_pc2 = o_file2 + len(filetab)
o_ln2 = o_pc2 + len(pctab)
functab, body = b"", b""
rec_base = 8 * (n + 1)
for entry, rec in records:
    functab += struct.pack("<II", entry, rec_base + len(body))
    body += rec + b"\0" * (-len(rec) % 4)
functab += struct.pack("<II", end, 0)
header = tab[:8] + struct.pack("<8Q", n, nfiles, text, o_name2, o_cu2, o_file2, o_pc2, o_ln2)
with open(out, "wb") as f:
    f.write(header + names + cutab + filetab + pctab + functab + body)
