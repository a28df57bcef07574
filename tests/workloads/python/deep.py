# SPDX-License-Identifier: Apache-2.0
"""deep.py SECONDS DEPTH [vary]: a hot pure-Python function DEPTH recursive calls below the
module, <module> -> main -> down x DEPTH -> hot, for SECONDS of this thread's CPU time: a
stack deeper than one part of the stacks map (32 frames, bpf/profiler.h), which must arrive
whole. With vary, hot runs 2 ms at a time at each depth from DEPTH / 2 to DEPTH in turn:
many distinct deep stacks.

Prints one JSON line at the end: the process's CPU time before main() ran, as hot.py does.
"""
import json
import sys
import time


def hot(seconds):
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        for i in range(20000):
            x = (x * 31 + i) % 1000003
    return x


def down(n, seconds):
    if n <= 1:
        return hot(seconds)
    return down(n - 1, seconds) + 1


def main():
    seconds = float(sys.argv[1])
    depth = int(sys.argv[2])
    sys.setrecursionlimit(depth + 100)
    if len(sys.argv) > 3 and sys.argv[3] == "vary":
        end = time.thread_time() + seconds
        d = depth // 2
        while time.thread_time() < end:
            down(d, 0.002)
            d = d + 1 if d < depth else depth // 2
    else:
        down(depth, seconds)
    print(json.dumps({"startup_cpu": STARTUP_CPU}))


STARTUP_CPU = time.process_time()
main()
