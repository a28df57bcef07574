// SPDX-License-Identifier: Apache-2.0

// goleaf [SECONDS] [GOROUTINES]: a Go program whose hot function is a frameless leaf, for
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

//go:noinline
func burn(id int, end time.Time, out *uint64, wg *sync.WaitGroup) {
	defer wg.Done()
	x := uint64(id)
	for time.Now().Before(end) {
		x = hot(20, x)
	}
	*out = x
}

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
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	outs := make([]uint64, goroutines)
	var wg sync.WaitGroup
	for i := 0; i < goroutines; i++ {
		wg.Add(1)
		go burn(i+1, end, &outs[i], &wg)
	}
	x := uint64(7)
	for time.Now().Before(end) {
		x = hot(20, x)
	}
	wg.Wait()
	for _, o := range outs {
		x ^= o
	}
	if x == 42 {
		os.Exit(1)
	}
}
