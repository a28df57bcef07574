// SPDX-License-Identifier: Apache-2.0

// goleaf [CPU-SECONDS] [GOROUTINES]: a Go program whose hot function is a frameless leaf, for
// names from .gopclntab and unwinding from its pcsp tables. main.spin does arithmetic in a
// loop and calls nothing, so the compiler gives it no frame (no SUBQ SP, no PUSHQ BP: a
// frame-pointer walk from it skips its caller). It is called by main.hot, which also runs
// main.mix inlined; main.hot is called by main.main and by main.burn on extra goroutines
// that burn on other threads. Built twice by the tests: as is, and with -ldflags='-s -w'.
package main

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

//go:noinline
func spin(n int, x uint64) uint64 {
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		x ^= x >> 29
	}
	return x
}

// mix is small enough to be inlined into main.hot: an inlined frame of the inline tree.
func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

//go:noinline
func hot(rounds int, x uint64) uint64 {
	for r := 0; r < rounds; r++ {
		x = spin(20000, x)
		x = mix(x + uint64(r))
	}
	return x
}

// cpuSeconds: the CPU time the process used so far, user and system, every thread.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

//go:noinline
func burn(id int, done *int32, out *uint64, wg *sync.WaitGroup) {
	defer wg.Done()
	x := uint64(id)
	for atomic.LoadInt32(done) == 0 {
		x = hot(20, x)
	}
	*out = x
}

// goleaf [CPU-SECONDS] [GOROUTINES]: burn that much CPU time in all (a loaded machine gives
// the same number of samples, only later), at most a minute.
func main() {
	seconds, goroutines := 3.0, 2
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = v
		}
	}
	if len(os.Args) > 2 {
		if v, err := strconv.Atoi(os.Args[2]); err == nil {
			goroutines = v
		}
	}
	if runtime.GOMAXPROCS(0) < goroutines+1 {
		runtime.GOMAXPROCS(goroutines + 1)
	}
	deadline := time.Now().Add(time.Minute)
	outs := make([]uint64, goroutines)
	var done int32
	var wg sync.WaitGroup
	for i := 0; i < goroutines; i++ {
		wg.Add(1)
		go burn(i+1, &done, &outs[i], &wg)
	}
	x := uint64(7)
	for cpuSeconds() < seconds && time.Now().Before(deadline) {
		x = hot(20, x)
	}
	atomic.StoreInt32(&done, 1)
	wg.Wait()
	for _, o := range outs {
		x ^= o
	}
	if x == 42 {
		os.Exit(1)
	}
}
