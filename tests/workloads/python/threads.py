# SPDX-License-Identifier: Apache-2.0
"""threads.py SECONDS: three threads for SECONDS of wall time.

thread_a_work and thread_b_work are pure Python, each on its own thread (they take turns
holding the GIL); hash_work hashes a 64 MiB buffer over and over (hashlib releases the GIL
while it hashes: that thread runs in C beside whichever holds the GIL, and another thread's
Python stack is the GIL holder's). The main thread waits.

Prints one JSON line once the threads run: {"a": tid, "b": tid, "hash": tid} (native thread
ids, as the profile's tid label), and one at the end with each thread's CPU time and the
hashes done.
"""
import hashlib
import json
import sys
import threading
import time

BUF = b"\x5a" * (64 << 20)
stop = threading.Event()
tids = {}
cpu = {}


def spin(n):
    x = 0
    for i in range(n):
        x = (x * 7 + i) & 0xffff
    return x


def thread_a_work():
    while not stop.is_set():
        spin(5000)


def thread_b_work():
    while not stop.is_set():
        spin(5000)


def hash_work():
    n = 0
    while not stop.is_set():
        hashlib.sha256(BUF).digest()  # CALL_HASH
        n += 1
    return n


def run(name, fn):
    tids[name] = threading.get_native_id()
    t0 = time.thread_time()
    result = fn()
    cpu[name] = time.thread_time() - t0
    if name == "hash":
        cpu["hashes"] = result


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    threads = [threading.Thread(target=run, args=(name, fn), name=name)
               for name, fn in (("a", thread_a_work), ("b", thread_b_work),
                                ("hash", hash_work))]
    for t in threads:
        t.start()
    while len(tids) < 3:
        time.sleep(0.001)
    print(json.dumps(tids), flush=True)
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    print(json.dumps(cpu), flush=True)


main()
