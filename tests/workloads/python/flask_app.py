# SPDX-License-Identifier: Apache-2.0
"""flask_app.py PORT: the workshop's Flask app, threaded (one thread per request), on
127.0.0.1:PORT. Run with Debian's python3 and python3-flask.

  /api/primes/<n>  compute_primes_slow(n): trial division, pure Python (the slow endpoint)
  /api/cached/<n>  an lru_cache'd result (fast after the first call for an n)
  /api/sleep/<ms>  sleeps (no CPU)
  /stats           what the app measured of itself, as JSON: "compute_cpu", the CPU time its
                   request threads spent inside compute_primes_slow (time.thread_time()
                   around each call, summed), "process_cpu" (time.process_time(): every
                   thread's CPU since the process started, start-up and imports included),
                   and the requests served by endpoint
"""
import functools
import sys
import threading
import time

from flask import Flask, jsonify

app = Flask(__name__)
lock = threading.Lock()
measured = {"compute_cpu": 0.0, "primes": 0, "cached": 0, "sleep": 0}


def compute_primes_slow(n):
    primes = []  # PRIMES_FIRST
    for candidate in range(2, n):
        prime = True
        for d in range(2, int(candidate ** 0.5) + 1):
            if candidate % d == 0:
                prime = False
                break
        if prime:
            primes.append(candidate)
    return primes  # PRIMES_LAST


@app.route("/api/primes/<int:n>")
def primes(n):
    t0 = time.thread_time()
    result = compute_primes_slow(n)  # CALL_PRIMES
    took = time.thread_time() - t0
    with lock:
        measured["compute_cpu"] += took
        measured["primes"] += 1
    return jsonify(n=n, count=len(result), largest=result[-1] if result else None)


@functools.lru_cache(maxsize=1024)
def square_sum(n):
    return sum(i * i for i in range(n))


@app.route("/api/cached/<int:n>")
def cached(n):
    value = square_sum(n)
    with lock:
        measured["cached"] += 1
    return jsonify(n=n, value=value)


@app.route("/api/sleep/<int:ms>")
def sleepy(ms):
    time.sleep(ms / 1000.0)
    with lock:
        measured["sleep"] += 1
    return jsonify(slept_ms=ms)


@app.route("/stats")
def stats():
    with lock:
        out = dict(measured)
    out["process_cpu"] = time.process_time()
    return jsonify(out)


if __name__ == "__main__":
    import logging
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # no line per request
    app.run(host="127.0.0.1", port=int(sys.argv[1]), threaded=True)
