# SPDX-License-Identifier: Apache-2.0
"""many_stacks.py SECONDS FUNCTIONS: FUNCTIONS distinct pure-Python functions f0, f1, ...
(one code object each), each run for 1 ms of this thread's CPU time in turn, for SECONDS of
it: <module> -> main -> fN. A sample every 2 ms or more lands in another function than the
one before, so nearly every sample has a stack of its own. The clock reads are system
calls: some samples come in the kernel.
"""
import sys
import time


def make(i):
    namespace = {"time": time}
    exec(f"def f{i}(end):\n"
         f"    x = {i}\n"
         f"    while time.thread_time() < end:\n"
         f"        x = (x * 31 + 7) % 1000003\n"
         f"    return x\n", namespace)
    return namespace[f"f{i}"]


def main():
    seconds, count = float(sys.argv[1]), int(sys.argv[2])
    functions = [make(i) for i in range(count)]
    end = time.thread_time() + seconds
    i = 0
    while time.thread_time() < end:
        functions[i](time.thread_time() + 0.001)
        i = (i + 1) % count


main()
