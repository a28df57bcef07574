# SPDX-License-Identifier: Apache-2.0
"""py_many.py FUNCTIONS SECONDS: a Python process with FUNCTIONS distinct functions (made
with exec() at start, kept alive) that it runs in turn, about 0.2 ms each, then sleeps a
second, for SECONDS: the agent's memory per Python process is measured over many of these.
"""
import sys
import time

TEMPLATE = '''def f_{i}(end):
    x = {i}
    while thread_time() < end:
        for k in range(50):
            x = (x * 31 + k) & 0xffff
    return x
'''


def main():
    functions, seconds = int(sys.argv[1]), float(sys.argv[2])
    ns = {"thread_time": time.thread_time}
    exec(compile("".join(TEMPLATE.format(i=i) for i in range(functions)), "<py_many>", "exec"),
         ns)
    fns = [ns["f_%d" % i] for i in range(functions)]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for fn in fns:
            fn(time.thread_time() + 0.0002)
        time.sleep(1.0)


main()
