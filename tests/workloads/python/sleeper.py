# SPDX-License-Identifier: Apache-2.0
"""sleeper.py SECONDS: the workshop's slow endpoint without the web server: a loop that
computes a little in compute() and sleeps 20 ms in slow_io(), <module> -> main -> slow_io,
for SECONDS of wall time.

Prints one JSON line at the end: the time spent in slow_io() as the script measured it
around time.sleep() (time.monotonic()), the number of sleeps, and the interpreter's version.
"""
import json
import sys
import time


def compute(n):
    x = 0
    for i in range(n):
        x = (x * 31 + i) % 1000003
    return x


def slow_io(seconds):
    t0 = time.monotonic()
    time.sleep(seconds)  # SLEEP_CALL
    return time.monotonic() - t0


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    end = time.monotonic() + seconds
    slept, sleeps = 0.0, 0
    while time.monotonic() < end:
        compute(20000)
        slept += slow_io(0.02)
        sleeps += 1
    print(json.dumps({"slept": slept, "sleeps": sleeps,
                      "version": "%d.%d" % sys.version_info[:2]}), flush=True)


main()
