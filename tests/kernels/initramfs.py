#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""initramfs.py OUT INIT AGENT [--python PYTHON] WORKLOAD...: the root the test kernels boot
(an uncompressed newc cpio, which every kernel of the matrix unpacks without a decompressor):
busybox from Debian's busybox-static as /bin/busybox, INIT as /init, the agent as
/ignis/ignis, the workloads under /w/, and every shared library these need (from ldd) at its
own path. With --python, that interpreter at its own path with the few modules of its
standard library it needs to start with -S -I (the landmark os.py and the UTF-8 codec)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

BUSYBOX = "/bin/busybox"
PY_START = ("os.py", "encodings/__init__.py", "encodings/aliases.py", "encodings/utf_8.py")


def libraries(binary):
    """The shared libraries of binary as ldd resolves them, the dynamic loader included."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    libs = []
    for line in out.splitlines():
        m = re.search(r"=>\s+(/\S+)", line) or re.match(r"\s*(/\S+)\s+\(", line)
        if m:
            libs.append(m.group(1))
    return libs


def copy(src, root, dest):
    target = os.path.join(root, dest.lstrip("/"))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copy2(os.path.realpath(src), target)


def main():
    args = sys.argv[1:]
    python = None
    if "--python" in args:
        i = args.index("--python")
        python = args[i + 1]
        del args[i:i + 2]
    if len(args) < 3:
        sys.exit(__doc__)
    out, init, agent, workloads = args[0], args[1], args[2], args[3:]
    if not os.path.exists(BUSYBOX) or "static" not in subprocess.run(
            ["file", "-L", BUSYBOX], capture_output=True, text=True).stdout:
        sys.exit(f"{BUSYBOX} is not Debian's static busybox: run make deps (busybox-static)")
    with tempfile.TemporaryDirectory(prefix="ignis-initramfs-") as root:
        for d in ("bin", "proc", "sys", "dev", "tmp"):
            os.makedirs(os.path.join(root, d))
        copy(BUSYBOX, root, "/bin/busybox")
        copy(init, root, "/init")
        os.chmod(os.path.join(root, "init"), 0o755)
        copy(agent, root, "/ignis/ignis")
        libs = set(libraries(agent))
        for w in workloads:
            copy(w, root, "/w/" + os.path.basename(w))
            if not w.endswith(".py"):
                libs.update(libraries(w))
        if python:
            copy(python, root, python)
            libs.update(libraries(python))
            version = os.path.basename(os.path.realpath(python))  # python3.11
            stdlib = os.path.join("/usr/lib", version)
            for f in PY_START:
                copy(os.path.join(stdlib, f), root, os.path.join(stdlib, f))
            os.makedirs(os.path.join(root, stdlib.lstrip("/"), "lib-dynload"))
        for lib in sorted(libs):
            copy(lib, root, lib)
        files = subprocess.run(["find", "."], cwd=root, capture_output=True, text=True,
                               check=True).stdout
        with open(out + ".tmp", "wb") as f:
            subprocess.run(["cpio", "--quiet", "-o", "-H", "newc", "-R", "0:0"], cwd=root,
                           input=files.encode(), stdout=f, check=True)
        os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
