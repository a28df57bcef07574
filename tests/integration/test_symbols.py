# SPDX-License-Identifier: Apache-2.0
"""Symbolization of real binaries (issue 5): inline frames and file:line from DWARF, C++ and
Rust names demangled, profiled by the real agent and read by our decoder and by
`go tool pprof`."""
import os
import re

from harness import check, child_of, go_traces, pprof_json, workload
from test_pipeline import profiles_of, run_with_agent

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "workloads")


def marker_line(source, marker):
    with open(os.path.join(SRC, source)) as f:
        for n, line in enumerate(f, 1):
            if marker in line:
                return n
    raise AssertionError(f"no {marker} in {source}")



def leaf_lines(profile, sample):
    """The Line entries of a sample's user leaf location (under any kernel frames: an
    interrupt or softirq over the workload is not what a naming test judges), innermost
    first."""
    leaf = profile.user_leaf(sample)
    return leaf["lines"] if leaf else []


def test_inlined_function_is_its_own_frame():
    """-O2 code with a function forced inline: the function is a frame of its own, leafward of
    its caller, in the same Location; the caller's line is the call site; files are named;
    the mapping says it has inline frames; go tool pprof shows the same order."""
    agent, _, pid = run_with_agent([workload("inlined"), "3cpu"])
    profiles = profiles_of(agent)
    call_line = marker_line("inlined.c", "/* CALL_MIX */")
    total = inlined = 0
    for prof in profiles:
        for s in prof.samples(pid=pid):
            total += s["count"]
            frames = prof.user_frames(s)
            if frames[:2] != ["mix_inlined", "spin_caller"]:
                continue
            lines = leaf_lines(prof, s)
            check(len(lines) >= 2 and lines[0]["function"] == "mix_inlined" and
                  lines[1]["function"] == "spin_caller",
                  f"mix_inlined and spin_caller are not one Location's lines: {lines}")
            check(lines[1]["line"] == call_line,
                  f"spin_caller at line {lines[1]['line']}, the call is at {call_line}")
            check(all(line["file"].endswith("tests/workloads/inlined.c") for line in lines[:2]),
                  f"files: {[line['file'] for line in lines]}")
            check(lines[0]["line"] > 0, "no line for the inlined frame")
            mapping = prof.mappings[prof.user_leaf(s)["mapping"]]
            check(mapping["has_inline_frames"] and mapping["has_line_numbers"] and
                  mapping["has_filenames"], f"mapping flags: {mapping}")
            inlined += s["count"]
    check(total > 100, f"only {total} samples of the workload")
    check(inlined >= 0.8 * total, f"{inlined} of {total} samples in mix_inlined <- spin_caller")

    traces = [t for p in agent.profiles() for _, _, t in go_traces(p, "-tagfocus", f"pid={pid}")]
    # go tool pprof marks a Line that is not a Location's last as "(inline)".
    check(any(t[:2] == ["mix_inlined (inline)", "spin_caller"] for t in traces),
          f"go tool pprof does not show mix_inlined inlined into spin_caller: {traces[:3]}")


def hot_function(argv, expect):
    """Run a workload; check most of its samples are in `expect` (the leaf Location's outermost
    Line: code inlined into it, e.g. Rust's u64::wrapping_mul, comes before it); return the
    system names seen for it."""
    agent, _, pid = run_with_agent(argv)
    total = hits = 0
    system = set()
    for prof in profiles_of(agent):
        for s in prof.samples(pid=pid):
            total += s["count"]
            lines = leaf_lines(prof, s)
            if lines and lines[-1]["function"] == expect:
                hits += s["count"]
                system.add(lines[-1]["system_name"])
    check(total > 100, f"only {total} samples of {argv[0]}")
    check(hits >= 0.8 * total, f"{os.path.basename(argv[0])}: {hits} of {total} samples "
          f"named {expect!r}:\n{agent.stderr()[-1500:]}")
    return agent, system


def test_cxx_template_and_namespace_demangled():
    agent, system = hot_function(
        [workload("templates"), "3cpu"],
        "ignis_test::codec::Mixer<unsigned long>::churn(unsigned long)")
    check(system == {"_ZN10ignis_test5codec5MixerImE5churnEm"},
          f"system_name should keep the mangled name: {system}")
    traces = [t for p in agent.profiles() for _, _, t in go_traces(p)]
    check(any(t and t[0].startswith("ignis_test::codec::Mixer<unsigned long>::churn")
              for t in traces), f"go tool pprof: {traces[:3]}")


def test_rust_names_demangled_legacy_and_v0():
    _, legacy = hot_function([workload("rustnames-legacy"), "3cpu"], "rustnames::net::poll_hot")
    check(all(n.startswith("_ZN9rustnames3net8poll_hot17h") for n in legacy),
          f"legacy system names: {legacy}")
    _, v0 = hot_function([workload("rustnames-v0"), "3cpu"], "rustnames::net::poll_hot")
    check(all(n.startswith("_RNv") for n in v0), f"v0 system names: {v0}")


def _stripped_copy(folder, debuglink=True):
    """The inlined workload stripped, its DWARF in NAME.debug (named by .gnu_debuglink when
    debuglink); returns (binary, debug file, build ID hex)."""
    import re
    import shutil
    import subprocess
    binary = os.path.join(folder, "inlined-s")
    debug = binary + ".debug"
    shutil.copy(workload("inlined"), binary)
    for argv in (["objcopy", "--only-keep-debug", binary, debug],
                 ["strip", "--strip-all", binary]) + (
                 (["objcopy", "--add-gnu-debuglink=" + debug, binary],) if debuglink else ()):
        subprocess.run(argv, check=True, cwd=folder)
    note = subprocess.run(["readelf", "-n", binary], capture_output=True, text=True).stdout
    return binary, debug, re.search(r"Build ID: (\w+)", note).group(1)


def _named_through_debug_file(binary, agent_args=()):
    agent, _, pid = run_with_agent([binary, "3cpu"], agent_args=agent_args)
    return agent, _share_named(agent, pid)


def test_stripped_binary_named_through_debuglink_and_build_id():
    """A stripped binary is named, inline frames included, from its debug file found by
    .gnu_debuglink beside it; and one without a debuglink from DEBUG/.build-id/xx/rest.debug
    under --debug-dir; a debug file of another build under that name is refused."""
    import shutil
    import subprocess
    from harness import tmpdir
    d = tmpdir("ignis-debuglink-")
    binary, _, _ = _stripped_copy(d)
    agent, share = _named_through_debug_file(binary)
    check(share > 0.8, f"debuglink: {share:.0%} named:\n{agent.stderr()[-2000:]}")
    check("debug file " in agent.stderr(), "no debug-file line in the log")

    d2 = tmpdir("ignis-buildid-")
    root = tmpdir("ignis-debugroot-")
    binary, debug, build_id = _stripped_copy(d2, debuglink=False)
    target = os.path.join(root, ".build-id", build_id[:2], build_id[2:] + ".debug")
    os.makedirs(os.path.dirname(target))
    shutil.move(debug, target)
    agent, share = _named_through_debug_file(binary, ("--debug-dir", root))
    check(share > 0.8, f"build-id: {share:.0%} named:\n{agent.stderr()[-2000:]}")

    # Another build's debug file where this build's should be: refused, frames unnamed.
    other = os.path.join(d2, "other")
    subprocess.run(["gcc", "-O2", "-g", "-DOTHER_BUILD=1", "-o", other,
                    os.path.join(SRC, "hot2.c"), "-pthread"], check=True)
    subprocess.run(["objcopy", "--only-keep-debug", other, target], check=True)
    agent, share = _named_through_debug_file(binary, ("--debug-dir", root))
    check(share == 0, f"a debug file of another build was used: {share:.0%} named")
    check("another build" in agent.stderr(), "the refusal is not in the log")


def _jit_run(argv, child_of_unshare=False):
    """Profile the jit workload; returns the share of its samples named
    jit_spin_loop <- run_jit, and the agent."""
    import time
    from harness import Agent, spawn, tmpdir, wait_exit
    where = os.path.join(tmpdir(), "map-path")
    agent = Agent(interval=2).wait_ready()
    proc = spawn(argv + [where])
    # unshare --fork: the workload is unshare's child, pid 1 in its namespace.
    pid = child_of(proc) if child_of_unshare else proc.pid
    _, err = wait_exit(proc, 60)
    check(proc.returncode == 0, f"{argv} failed: {err}")
    time.sleep(0.5)
    agent.stop()
    try:
        with open(where) as f:
            map_path = f.read().strip()
        os.unlink(map_path)
    except OSError:
        map_path = None
    return _share_named(agent, pid, ["jit_spin_loop", "run_jit"]), map_path, agent


def test_jit_code_named_from_perf_map_also_in_a_pid_namespace():
    """JIT code in anonymous memory is named from /tmp/perf-PID.map (the later of two lines
    for one address wins, a malformed line is skipped and counted), its caller from the
    binary; inside a new pid namespace the map is found by the process's own pid (NSpid),
    here 1."""
    share, path, agent = _jit_run([workload("jit"), "3cpu"])
    check(share > 0.8, f"{share:.0%} of the JIT samples named:\n{agent.stderr()[-1500:]}")
    check(re.search(r"window seq=\d+ .*", agent.stderr()), "no window lines")
    check("1 malformed" in agent.stderr(), "the malformed map line was not counted")
    share, path, agent = _jit_run(["unshare", "--pid", "--fork", "--mount-proc",
                                   workload("jit"), "3cpu"], child_of_unshare=True)
    check(path == "/tmp/perf-1.map", f"the workload wrote {path}")
    check(share > 0.8, f"in a pid namespace, {share:.0%} named:\n{agent.stderr()[-1500:]}")


def _debuginfod_server(folder):
    """Debian's debuginfod serving the ELF files of folder on a free loopback port; returns
    (process, url) once it has indexed them."""
    import socket
    import subprocess
    from harness import spawn, tmpdir
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    db = os.path.join(tmpdir(), "debuginfod.sqlite")
    proc = spawn(["debuginfod", "-F", folder, "-p", str(port), "-d", db, "-t", "0", "-g", "0"],
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, f"http://127.0.0.1:{port}"


def _wait_served(url, build_id, timeout=30):
    import time
    import urllib.error
    import urllib.request
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/buildid/{build_id}/debuginfo", timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.3)
    raise AssertionError(f"debuginfod never served {build_id}")


def test_debuginfod_fetches_off_the_drain_path():
    """A stripped binary whose debug file only a debuginfod server (Debian's, on loopback)
    has: the file is fetched by build ID and later windows name its frames; a server that
    accepts connections and never answers delays no window, and the agent still stops
    promptly."""
    import socket
    import threading
    import time
    from harness import Agent, spawn, tmpdir, wait_exit
    served = tmpdir("ignis-debuginfod-srv-")
    binary, debug, build_id = _stripped_copy(tmpdir("ignis-debuginfod-bin-"), debuglink=False)
    os.rename(debug, os.path.join(served, "inlined-s.debug"))
    server, url = _debuginfod_server(served)
    _wait_served(url, build_id)

    cache = tmpdir("ignis-debuginfod-cache-")
    os.environ["DEBUGINFOD_CACHE_PATH"] = cache
    try:
        agent = Agent("--debuginfod-urls", url, interval=1).wait_ready()
        proc = spawn([binary, "6"])
        _, err = wait_exit(proc, 60)
        time.sleep(0.5)
        agent.stop()
    finally:
        os.environ.pop("DEBUGINFOD_CACHE_PATH", None)
    named_windows = 0
    for p in profiles_of(agent):
        total = named = 0
        for s in p.samples(pid=proc.pid):
            total += s["count"]
            named += s["count"] if p.user_frames(s)[:2] == ["mix_inlined", "spin_caller"] else 0
        if total > 50 and named > 0.8 * total:
            named_windows += 1
    check(named_windows >= 2, f"only {named_windows} windows named after the fetch:\n"
          f"{agent.stderr()[-2000:]}")
    check("debuginfod: fetched the debug file of " + build_id in agent.stderr(),
          "no fetch in the log")

    # A server that never answers.
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(16)
    conns = []
    stop = threading.Event()

    def accept():
        hang.settimeout(0.2)
        while not stop.is_set():
            try:
                conns.append(hang.accept()[0])
            except OSError:
                pass
    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        os.environ["DEBUGINFOD_CACHE_PATH"] = tmpdir("ignis-debuginfod-cache2-")
        agent = Agent("--debuginfod-urls", f"http://127.0.0.1:{hang.getsockname()[1]}",
                      "--debuginfod-timeout", "60s", interval=1).wait_ready()
        proc = spawn([binary, "5"])
        wait_exit(proc, 60)
        started = time.monotonic()
        agent.stop()
        took = time.monotonic() - started
    finally:
        os.environ.pop("DEBUGINFOD_CACHE_PATH", None)
        stop.set()
        t.join()
        for c in conns:
            c.close()
        hang.close()
    check(conns, "the agent never asked the hanging server")
    wins = agent.windows()
    check(len(wins) >= 5, f"only {len(wins)} windows while the server hung")
    slow = [w for w in wins if w["duration_ms"] > 1500]
    check(not slow, f"windows delayed by the hanging server: {slow}")
    check(took < 5, f"the agent took {took:.1f} s to stop with a fetch hanging")


def test_go_method_names():
    """A Go binary: its hot method named as Go spells it, main.(*Mixer).Churn, on a stack that
    reaches runtime.main. (Churn is a frameless leaf: its caller main.run comes from the
    unwind rows of Go's pcsp tables, tests/integration/test_go.py.)"""
    agent, _, pid = run_with_agent([workload("gomethods"), "3cpu"])
    total = hot = 0
    for prof in profiles_of(agent):
        for s in prof.samples(pid=pid):
            total += s["count"]
            frames = prof.user_frames(s)
            if frames[:1] == ["main.(*Mixer).Churn"] and "runtime.main" in frames:
                hot += s["count"]
    check(total > 100, f"only {total} samples of the Go workload")
    check(hot > 0.8 * total, f"{hot} of {total} samples in main.(*Mixer).Churn")


def _share_named(agent, pid, leaf=("mix_inlined", "spin_caller")):
    """The share of pid's samples (over 100 required) whose leaf frames are `leaf`."""
    total = named = 0
    for prof in profiles_of(agent):
        for s in prof.samples(pid=pid):
            total += s["count"]
            if prof.user_frames(s)[:len(leaf)] == list(leaf):  # under any interrupt
                named += s["count"]
    check(total > 100, f"only {total} samples:\n{agent.stderr()[-1500:]}")
    return named / total


def _profile_started(argv, after_start=None):
    """Agent, then argv; after_start(proc) runs once the workload runs."""
    import time
    from harness import Agent, spawn, wait_exit
    agent = Agent(interval=2).wait_ready()
    proc = spawn(argv)
    time.sleep(0.5)
    pid = proc.pid
    if after_start:
        after_start(proc)
    _, err = wait_exit(proc, 60)
    check(proc.returncode == 0, f"{argv} failed: {err}")
    time.sleep(0.5)
    agent.stop()
    return agent, pid


def test_deleted_replaced_and_memfd_binaries_are_named():
    """Binaries gone from their path after start are read through /proc/PID/map_files: one
    deleted, one replaced by another file under its name, one that only ever lived in a
    memfd (executed from /proc/self/fd)."""
    import shutil
    from harness import tmpdir
    d = tmpdir("ignis-odd-")
    deleted = os.path.join(d, "deleted")
    shutil.copy(workload("inlined"), deleted)
    agent, pid = _profile_started([deleted, "3cpu"], lambda p: os.unlink(deleted))
    share = _share_named(agent, pid)
    check(share > 0.8, f"deleted binary: {share:.0%} named")

    replaced = os.path.join(d, "replaced")
    shutil.copy(workload("inlined"), replaced)

    def replace(_):
        other = os.path.join(d, "other")
        shutil.copy(workload("burn"), other)
        os.rename(other, replaced)
    agent, pid = _profile_started([replaced, "3cpu"], replace)
    share = _share_named(agent, pid)
    check(share > 0.8, f"replaced binary: {share:.0%} named")

    script = ("import os, sys\n"
              "fd = os.memfd_create('inlined-memfd', 0)\n"
              f"os.write(fd, open({workload('inlined')!r}, 'rb').read())\n"
              "os.execv(f'/proc/self/fd/{fd}', ['inlined-memfd', '3cpu'])\n")
    agent, pid = _profile_started(["python3", "-c", script])
    share = _share_named(agent, pid)
    check(share > 0.8, f"memfd binary: {share:.0%} named")


def test_container_root_binary_and_debug_file_inside_it():
    """A process in its own mount namespace and root (unshare --root, as a container runs):
    a stripped static binary at a path where the host has a different file, its debug file
    only inside that root, under a /usr/lib/debug/.build-id that is an absolute symlink
    (resolved inside the root, not on the host); the process exits before its window is
    drained. Its own names come out, inline frames included."""
    import re
    import shutil
    import subprocess
    import time
    from harness import Agent, spawn, tmpdir, wait_exit
    root = tmpdir("ignis-container-")
    inner = "/opt/ignis-test/app"
    binary = root + inner
    os.makedirs(os.path.dirname(binary))
    subprocess.run(["gcc", "-O2", "-g", "-static", "-fno-omit-frame-pointer",
                    "-mno-omit-leaf-frame-pointer", "-fno-optimize-sibling-calls",
                    "-I", SRC, "-o", binary, os.path.join(SRC, "inlined.c")], check=True)
    note = subprocess.run(["readelf", "-n", binary], capture_output=True, text=True).stdout
    build_id = re.search(r"Build ID: (\w+)", note).group(1)
    store = os.path.join(root, "store", ".build-id")
    debug = os.path.join(store, build_id[:2], build_id[2:] + ".debug")
    os.makedirs(os.path.dirname(debug))
    subprocess.run(["objcopy", "--only-keep-debug", binary, debug], check=True)
    subprocess.run(["strip", "--strip-all", binary], check=True)
    os.makedirs(os.path.join(root, "usr", "lib", "debug"))
    os.symlink("/store/.build-id", os.path.join(root, "usr", "lib", "debug", ".build-id"))
    check(not os.path.exists("/store"), "/store exists on the host: the test needs it not to")
    check(not os.path.exists(os.path.dirname(inner)), f"{inner} exists on the host")
    # The host's file at the same path: another program.
    os.makedirs(os.path.dirname(inner))
    shutil.copy(workload("burn"), inner)
    try:
        agent = Agent(interval=5).wait_ready()
        proc = spawn(["unshare", "--mount", "--pid", "--fork", f"--root={root}", inner, "2cpu"])
        pid = child_of(proc)
        _, err = wait_exit(proc, 60)
        check(proc.returncode == 0, f"the container's process failed: {err}")
        time.sleep(0.5)
        agent.stop()
    finally:
        shutil.rmtree(os.path.dirname(inner))
    share = _share_named(agent, pid)
    check(share > 0.8, f"container binary: {share:.0%} named:\n{agent.stderr()[-1500:]}")
    check("(in its root) /usr/lib/debug/.build-id/" in agent.stderr(),
          "the debug file was not found inside the container's root")


def test_node_perf_basic_prof_names_javascript():
    """Node.js with --perf-basic-prof: samples in its JIT code carry the JavaScript function's
    name from the map V8 writes (JS:*hotLoop and its tiers)."""
    from harness import Agent, spawn, wait_exit
    import time
    script = ("function hotLoop(n){let x=0;for(let i=0;i<n;i++){x=(x*31+i)|0}return x}\n"
              "let end=Date.now()+4000, s=0; while(Date.now()<end){s+=hotLoop(100000)}\n"
              "if (s === 42) console.log(s)\n")
    agent = Agent(interval=2).wait_ready()
    proc = spawn(["node", "--perf-basic-prof", "-e", script])
    _, err = wait_exit(proc, 60)
    check(proc.returncode == 0, f"node failed: {err}")
    time.sleep(0.5)
    agent.stop()
    try:
        os.unlink(f"/tmp/perf-{proc.pid}.map")
    except OSError:
        pass
    total = named = 0
    for prof in profiles_of(agent):
        for s in prof.samples(pid=proc.pid):
            total += s["count"]
            if any("hotLoop" in f for f in prof.user_frames(s)[:3]):
                named += s["count"]
    check(total > 100, f"only {total} samples of node")
    check(named > 0.5 * total, f"{named} of {total} node samples name hotLoop:\n"
          f"{agent.stderr()[-1500:]}")


def _copy_with_build_id(src, dst, tweak):
    """A copy of src whose GNU build ID differs in its last byte (tables are cached by build
    ID: distinct IDs make distinct tables); returns dst."""
    import shutil
    import subprocess
    note = subprocess.run(["readelf", "-n", src], capture_output=True, text=True).stdout
    build_id = bytes.fromhex(re.search(r"Build ID: (\w+)", note).group(1))
    with open(src, "rb") as f:
        data = bytearray(f.read())
    at = data.find(build_id)
    check(at > 0 and data.find(build_id, at + 1) < 0, f"{src}: build ID not found once")
    data[at + len(build_id) - 1] ^= tweak
    with open(dst, "wb") as f:
        f.write(data)
    shutil.copymode(src, dst)
    return dst


def test_symbol_tables_of_exited_binaries_are_dropped_when_idle():
    """A burst of binaries that run once (a build, a test suite) must not hold the agent's
    memory until the symbol cache's budget needs the room: with --symbol-cache-idle 5s, the
    tables of 8 binaries of distinct build IDs, each named while it ran, are dropped once no
    window used them for 5 s (one of them, run again, has its table parsed a second time);
    the table of a binary that keeps running is loaded once and kept."""
    from harness import Agent, spawn, tmpdir, wait_exit
    from test_ship import free_port, metric, metrics
    folder = os.path.realpath(tmpdir("ignis-idle-"))  # the path /proc/PID/maps shows
    keeper = _copy_with_build_id(workload("burn"), os.path.join(folder, "keeper"), 0xff)
    once = [_copy_with_build_id(workload("burn"), os.path.join(folder, f"once{i}"), i)
            for i in range(1, 9)]
    port = free_port()
    agent = Agent("--metrics-address", f"127.0.0.1:{port}", "--symbol-cache-idle", "5s",
                  interval=1).wait_ready()
    # Two threads: a sample in each 1 s window however busy the host (5 windows without
    # one would drop its table for a good reason).
    kept = spawn([keeper, "60", "2"])
    agent.wait_windows(4)
    before = metrics(port)
    # CPU time, not wall time: each gets its samples beside the others and the keeper.
    runs = [spawn([exe, "0.3cpu", "1"]) for exe in once]
    for r in runs:
        wait_exit(r, 30)
    peak = metrics(port)
    log = agent.stderr

    def loads(exe):
        return len(re.findall(rf"^.*{re.escape(exe)}: \d+ symbols", log(), re.M))

    # The burst's tables go after 5 windows that did not use them (counted in windows, not
    # seconds: a window that ends late on a busy host is still one), and once1's going is
    # seen in its being parsed again when it runs again.
    agent.wait_windows(len(agent.windows()) + 5 + 2)
    after = metrics(port)
    expired = metric(after, "ignis_symbol_tables_expired_total") - \
        metric(before, "ignis_symbol_tables_expired_total")
    loaded_once = [loads(exe) for exe in once]
    wait_exit(spawn([once[0], "0.3cpu", "1"]), 30)
    n_windows = len(agent.windows())
    agent.wait_windows(n_windows + 2)  # once1 named again; the keeper goes on being named
    kept.kill()
    agent.stop()

    check(agent.returncode == 0, f"agent exit {agent.returncode}")
    check(loaded_once == [1] * len(once),
          f"tables loaded per binary of the burst: {loaded_once}")
    tables = {name: metric(text, "ignis_symbol_tables")
              for name, text in (("before", before), ("peak", peak), ("after", after))}
    check(expired >= len(once), f"{expired:.0f} tables expired after the burst of "
          f"{len(once)} binaries (tables cached {tables})")
    check(loads(once[0]) == 2, f"once1's table was parsed {loads(once[0])} times: its first "
          "table was not dropped, or it was not named when run again")
    check(loads(keeper) == 1, f"the running binary's table was loaded {loads(keeper)} times")
    named = {}
    for prof in profiles_of(agent):
        for s in prof.data["samples"]:
            exe = s["labels"].get("comm")
            if "burn_spin" in prof.user_frames(s):
                named[exe] = named.get(exe, 0) + s["count"]
    check(all(named.get(os.path.basename(exe), 0) > 0 for exe in once + [keeper]),
          f"samples named burn_spin by binary: {named}")
    last = profiles_of(agent)[-2]  # the last whole window, after the drops
    check(sum(s["count"] for s in last.samples(pid=kept.pid)
              if "burn_spin" in last.user_frames(s)) > 0,
          "the running binary is not named in the last windows")
