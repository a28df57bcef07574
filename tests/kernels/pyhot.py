# SPDX-License-Identifier: Apache-2.0
"""pyhot.py SECONDS: a hot pure-Python function two calls below the module, <module> -> main
-> work -> hot, for SECONDS of wall time. For the kernel matrix's initramfs, which holds only
the few modules Python needs to start (tests/kernels/initramfs.py): no imports but time."""
import time


def hot(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) % 1000003
    return x


def work(seconds):
    end = time.monotonic() + seconds
    total = 0
    while time.monotonic() < end:
        total += hot(200000)
    return total


def main():
    import sys
    work(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)


main()
