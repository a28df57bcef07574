#!/bin/busybox sh
# SPDX-License-Identifier: Apache-2.0
#
# /init of the test kernels' initramfs (tests/integration/test_kernels.py): mount what the
# agent needs, run it with the table unwinder and off-CPU time over the workloads, then print
# its log and its profiles (base64) on the serial console between markers, and power off.
# The host reads them: the cloud kernels have no 9p, so the console is the one way out.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
dmesg -n 1
hostname ignis-vm
ulimit -l unlimited

say() { echo "@@ignis $*"; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }

# What a process that overstays shows, on the console: each thread's state, wait channel and
# kernel stack, then the kernel's last warnings (a BPF splat, an RCU stall). The host fails
# the test with it: a hang named, not a bare timeout of the whole VM.
dump() {
	say "stuck-begin $1 pid $2 at $(uptime_s) s"
	for t in /proc/$2/task/*; do
		echo "thread ${t##*/} $(cat $t/comm 2>/dev/null):" \
			"$(grep '^State' $t/status 2>/dev/null) wchan $(cat $t/wchan 2>/dev/null)"
		cat $t/stack 2>/dev/null
	done
	dmesg -r | grep "^<[0-4]>" | tail -30 # warnings and worse
	say "stuck-end"
}

# Wait for pid (a child of this shell) at most $3 seconds; past that, dump it and kill it.
# The wait's status is in $bounded_rc.
bounded() {
	( sleep $3; kill -0 $2 2>/dev/null && dump $1 $2 && kill -9 $2 ) &
	watchdog=$!
	wait $2
	bounded_rc=$?
	kill $watchdog 2>/dev/null
	wait $watchdog 2>/dev/null
}
finish() {
	# The log (libbpf's debug lines make it some 250 KB) gzip'd: less to push through
	# the emulated UART.
	say "log-begin"
	gzip -c /tmp/agent.log | base64
	say "log-end"
	for f in /tmp/out/*.pb.gz; do
		[ -e "$f" ] || continue
		say "file-begin ${f##*/}"
		base64 "$f"
		say "file-end"
	done
	say "done"
	sync
	poweroff -f
}

say "kernel $(uname -r) $(uname -v)"
[ -e /sys/kernel/btf/vmlinux ] && say "btf yes" || say "btf no"
mkdir -p /tmp/out
/ignis/ignis --output-dir /tmp/out --interval 2 --log-level debug --unwind dwarf --off-cpu \
	>/dev/null 2>/tmp/agent.log &
agent=$!
# Table builds under TCG are slow: wait for the agent, bounded by the host's timeout.
while ! grep -q 'profiling ' /tmp/agent.log; do
	if ! kill -0 $agent 2>/dev/null; then
		wait $agent
		say "agent-exit $?"
		finish
	fi
	sleep 0.2
done
say "agent-ready"

# Two CPUs: the user-space chain on one, the system-call chain on the other, the off-CPU
# sleeper between them.
/w/deep 8 >/dev/null &
p1=$!
/w/deep 8 sys >/dev/null &
p2=$!
/w/offcpu sleep 1 8 >/dev/null &
p3=$!
say "pid deep $p1"
say "pid deep-sys $p2"
say "pid offcpu $p3"
# Bounded well inside the host's 120 s: each runs 8 s (a passing run takes about 26 s in all).
bounded deep $p1 40
bounded deep-sys $p2 10
bounded offcpu $p3 10
say "workloads-done $(uptime_s)"
# Then Python alone (Debian's static python3.11, its frames from the Python walker).
/usr/bin/python3.11 -S -I /w/pyhot.py 8 &
p4=$!
say "pid python $p4"
bounded python $p4 30
say "python-done $(uptime_s)"
sleep 1
kill -INT $agent
bounded agent $agent 30
say "agent-exit $bounded_rc"
finish
