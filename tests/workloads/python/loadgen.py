# SPDX-License-Identifier: Apache-2.0
"""loadgen.py PORT SECONDS THREADS: HTTP load on flask_app.py for SECONDS of wall time from
THREADS threads, each sending one request after another: 50 % /api/primes/<n> (n from
4000 to 8000), 35 % /api/cached/<n> (n among 20 values), 15 % /api/sleep/20. Prints one
JSON line: requests done by endpoint, errors, requests per second.
"""
import http.client
import json
import random
import sys
import threading
import time


def worker(port, end, seed, counts, lock):
    rng = random.Random(seed)
    mine = {"primes": 0, "cached": 0, "sleep": 0, "errors": 0}
    while time.monotonic() < end:
        r = rng.random()
        if r < 0.5:
            kind, url = "primes", "/api/primes/%d" % rng.randrange(4000, 8000)
        elif r < 0.85:
            kind, url = "cached", "/api/cached/%d" % (1000 * rng.randrange(1, 21))
        else:
            kind, url = "sleep", "/api/sleep/20"
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", url)
            resp = conn.getresponse()
            resp.read()
            conn.close()
            mine[kind if resp.status == 200 else "errors"] += 1
        except (OSError, http.client.HTTPException):
            mine["errors"] += 1
    with lock:
        for k, v in mine.items():
            counts[k] = counts.get(k, 0) + v


def main():
    port, seconds, threads = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    counts, lock = {}, threading.Lock()
    t0 = time.monotonic()
    end = t0 + seconds
    ts = [threading.Thread(target=worker, args=(port, end, i, counts, lock))
          for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    took = time.monotonic() - t0
    done = sum(v for k, v in counts.items() if k != "errors")
    counts["seconds"] = took
    counts["rps"] = done / took
    print(json.dumps(counts), flush=True)


main()
