// SPDX-License-Identifier: Apache-2.0

// gomethods [SECONDS[cpu]]: Go names for the symbolizer: the hot loop is a method with a
// pointer receiver, main.(*Mixer).Churn, called from main.run. SECONDS of wall time, or with
// "cpu" (3cpu) of the process's CPU time capped at ten times that on the clock (as
// workload.h's until_start()).
package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTime is the process's CPU time (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type Mixer struct{ state uint64 }

//go:noinline
func (m *Mixer) Churn(rounds int) uint64 {
	x := m.state
	for i := 0; i < rounds; i++ {
		x = (x^(x>>11))*0x9e3779b97f4a7c15 + uint64(i)
	}
	m.state = x
	return x
}

//go:noinline
func run(seconds float64, cpu bool) uint64 {
	m := &Mixer{state: 1}
	run := time.Duration(seconds * float64(time.Second))
	end := time.Now().Add(run)
	cpuEnd := cpuTime() + run
	if cpu {
		end = time.Now().Add(10 * run)
	}
	var sink uint64
	for n := 1; time.Now().Before(end); n++ {
		sink += m.Churn(100000)
		// Churn takes ~0.1 ms: the CPU clock (a system call) every 10th round.
		if cpu && n%10 == 0 && cpuTime() >= cpuEnd {
			break
		}
	}
	return sink
}

func main() {
	seconds, cpu := 3.0, false
	if len(os.Args) > 1 {
		cpu = strings.HasSuffix(os.Args[1], "cpu")
		arg := strings.TrimSuffix(os.Args[1], "cpu")
		if v, err := strconv.ParseFloat(arg, 64); err == nil {
			seconds = v
		}
	}
	if run(seconds, cpu) == 42 {
		os.Exit(1)
	}
}
