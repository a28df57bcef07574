# SPDX-License-Identifier: Apache-2.0
"""churn.py SECONDS OUT: code objects born and freed all the time, for SECONDS of wall time.

Each round exec()s freshly generated source defining two functions of the same shape:
gen_<2k>, which it runs for about RUN_MS of its CPU time, and gen_<2k+1>, which it never
runs (a decoy). Then it drops both, so that their code objects are freed at once and the
next round's are likely to be allocated at the same addresses: a profiler that names a code
object by its address when it drains, not when it first met it, or that does not notice the
address was reused, names samples after functions that were not running (a decoy's name,
or a later round's). Each generated function starts on a line of its own (1 + k % 7), so
that identity differs in the line as well.

Writes OUT at the end: JSON {"ran": [names run], "decoys": [names never run], "gen_cpu":
CPU seconds inside the run functions, "total_cpu": the process's CPU seconds}.
"""
import json
import sys
import time

RUN_MS = 4
TEMPLATE = '''def {name}(end):
    x = 0
    while thread_time() < end:
        for i in range(200):
            x = (x * 31 + i) & 0xffff
    return x
'''


def churn_loop(seconds):
    ran, decoys, gen_cpu = [], [], 0.0
    end = time.monotonic() + seconds
    k = 0
    while time.monotonic() < end:
        run, decoy = "gen_%d" % (2 * k), "gen_%d" % (2 * k + 1)
        source = "\n" * (k % 7) + TEMPLATE.format(name=run) + TEMPLATE.format(name=decoy)
        code = compile(source, "<churn %d>" % k, "exec")
        ns = {"thread_time": time.thread_time}
        exec(code, ns)
        fn = ns[run]
        t0 = time.thread_time()
        fn(t0 + RUN_MS / 1000.0)
        gen_cpu += time.thread_time() - t0
        ran.append(run)
        decoys.append(decoy)
        # Nothing refers to the round's code objects any more: freed here, by refcount.
        ns.clear()
        del fn, code
        k += 1
    return ran, decoys, gen_cpu


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    ran, decoys, gen_cpu = churn_loop(seconds)
    with open(sys.argv[2], "w") as f:
        json.dump({"ran": ran, "decoys": decoys, "gen_cpu": gen_cpu,
                   "total_cpu": time.process_time()}, f)


main()
