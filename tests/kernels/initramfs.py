#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""initramfs.py OUT INIT AGENT WORKLOAD...: the root the test kernels boot (an uncompressed
newc cpio, which every kernel of the matrix unpacks without a decompressor): busybox from
Debian's busybox-static as /bin/busybox, INIT as /init, the agent as /ignis/ignis, the
workloads under /w/, and every shared library these need (from ldd) at its own path."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

BUSYBOX = "/bin/busybox"


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
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    out, init, agent, workloads = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
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
            libs.update(libraries(w))
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
