# SPDX-License-Identifier: Apache-2.0
"""hot.py SECONDS [cpu|wall|gate]: a hot pure-Python function two calls below the module,
<module> -> main -> work -> hot, for SECONDS of this thread's CPU time (cpu, the default:
the same number of samples however busy the host is) or of wall time (wall). gate: CPU
time, once a line comes on stdin: until then main() waits on half a CPU (busy 5 ms, idle
5 ms: its samples announce the process to the agent), and that wait counts as start-up.
gate-unbound: as gate, after making a thread state of the main interpreter that no thread is
bound to (_PyThreadState_Prealloc(): what threading does before the new thread runs; its
thread_id is 0 on 3.12+) and printing "ready": the agent's first look at the process finds it.

Prints one JSON line at the end: the process's CPU time before main() ran (the
interpreter's start-up and the module's imports, whose samples cannot show hot), the CPU time
spent in work(), and the whole process's CPU time when done, in seconds. The lines the test
reads are marked: HOT_FIRST / HOT_LAST bound hot's body, CALL_* are the call sites.
"""
import json
import select
import sys
import time


def hot(n):
    x = 0  # HOT_FIRST
    for i in range(n):
        x = (x * 31 + i) % 1000003
    return x  # HOT_LAST


# hot(200000) runs for 10-30 ms between two reads of the clock: a thread's CPU clock is a
# system call, and the samples at its return (preemption happens there under load) belong to
# work(), not hot().
def work(seconds, clock):
    end = clock() + seconds
    total = 0
    while clock() < end:
        total += hot(200000)  # CALL_HOT
    return total


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    clock = time.monotonic if len(sys.argv) > 2 and sys.argv[2] == "wall" else time.thread_time
    startup_cpu = STARTUP_CPU
    if len(sys.argv) > 2 and sys.argv[2] == "gate-unbound":
        import ctypes
        api = ctypes.pythonapi
        api.PyInterpreterState_Main.restype = ctypes.c_void_p
        api._PyThreadState_Prealloc.restype = ctypes.c_void_p
        api._PyThreadState_Prealloc.argtypes = [ctypes.c_void_p]
        if not api._PyThreadState_Prealloc(api.PyInterpreterState_Main()):
            sys.exit("_PyThreadState_Prealloc failed")
        print("ready", flush=True)
    if len(sys.argv) > 2 and sys.argv[2].startswith("gate"):
        while not select.select([sys.stdin], [], [], 0.005)[0]:
            end = time.thread_time() + 0.005
            while time.thread_time() < end:
                pass
        sys.stdin.readline()
        startup_cpu = time.process_time()
    t0 = time.process_time()
    work(seconds, clock)  # CALL_WORK
    t1 = time.process_time()
    print(json.dumps({"startup_cpu": startup_cpu, "work_cpu": t1 - t0, "total_cpu": t1,
                      "version": "%d.%d" % sys.version_info[:2]}), flush=True)


STARTUP_CPU = time.process_time()  # what ran before main(): start-up and imports
main()  # CALL_MAIN
