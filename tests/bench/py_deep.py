# SPDX-License-Identifier: Apache-2.0
"""py_deep.py DEPTH: the Python side of the benchmark's BPF cost per sample, beside
unwind_deep (the native side): DEPTH Python frames, <module> -> main -> descend x (DEPTH - 3)
-> spin, where spin runs about a millisecond of pure Python before it returns and the
recursion starts again, so that nearly every sample sees all DEPTH frames. Runs until its
stdin closes, then prints "wall_ns=N cpu_ns=N rounds=N depth=N".
"""
import sys
import threading
import time

stop = threading.Event()


def spin():
    x = 0
    for i in range(20000):
        x = (x * 31 + i) & 0xffffffff
    return x


def descend(level):
    if level <= 1:
        return spin()
    return descend(level - 1) + 1


def main():
    depth = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    if depth < 4:
        sys.exit("py_deep.py: DEPTH must be at least 4")
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    wall0, cpu0, rounds = time.monotonic_ns(), time.process_time_ns(), 0
    while not stop.is_set():
        descend(depth - 3)  # with main, <module> and spin: DEPTH frames
        rounds += 1
    print("wall_ns=%d cpu_ns=%d rounds=%d depth=%d" % (time.monotonic_ns() - wall0,
          time.process_time_ns() - cpu0, rounds, depth), flush=True)


main()
