# SPDX-License-Identifier: Apache-2.0
"""interleave.py SECONDS [gate]: Python -> C -> Python for SECONDS of CPU time.

sort_caller() calls the builtin sorted() with a Python key function, py_key(), that burns
CPU: nearly every sample is in py_key, called from the interpreter's C sort (builtin_sorted
-> list.sort -> list_sort_impl -> the key call), called from sort_caller. Prints one JSON
line at the end, as hot.py does. gate: as hot.py's, half a CPU until a line comes on stdin
(counted as start-up), then the work.
"""
import json
import select
import sys
import time


def py_key(x):
    h = x  # KEY_FIRST
    for i in range(300):
        h = (h * 1103515245 + 12345) & 0xffffffff
    return h  # KEY_LAST


def sort_caller(data):
    return sorted(data, key=py_key)  # CALL_SORTED


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    data = list(range(500))
    startup_cpu = STARTUP_CPU
    if len(sys.argv) > 2 and sys.argv[2] == "gate":
        while not select.select([sys.stdin], [], [], 0.005)[0]:
            end = time.thread_time() + 0.005
            while time.thread_time() < end:
                pass
        sys.stdin.readline()
        startup_cpu = time.process_time()
    t0 = time.process_time()
    end = time.thread_time() + seconds
    rounds = 0
    while time.thread_time() < end:
        sort_caller(data)
        rounds += 1
    t1 = time.process_time()
    print(json.dumps({"startup_cpu": startup_cpu, "work_cpu": t1 - t0, "total_cpu": t1,
                      "rounds": rounds}), flush=True)


STARTUP_CPU = time.process_time()
main()
