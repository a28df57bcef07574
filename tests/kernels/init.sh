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
wait $p1 $p2 $p3
# Then Python alone (Debian's static python3.11, its frames from the Python walker).
/usr/bin/python3.11 -S -I /w/pyhot.py 8 &
p4=$!
say "pid python $p4"
wait $p4
sleep 1
kill -INT $agent
wait $agent
say "agent-exit $?"
finish
