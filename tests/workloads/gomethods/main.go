// SPDX-License-Identifier: Apache-2.0

// gomethods [SECONDS]: Go names for the symbolizer: the hot loop is a method with a pointer
// receiver, main.(*Mixer).Churn, called from main.run.
package main

import (
	"os"
	"strconv"
	"time"
)

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
func run(seconds float64) uint64 {
	m := &Mixer{state: 1}
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	var sink uint64
	for time.Now().Before(end) {
		sink += m.Churn(100000)
	}
	return sink
}

func main() {
	seconds := 3.0
	if len(os.Args) > 1 {
		if v, err := strconv.ParseFloat(os.Args[1], 64); err == nil {
			seconds = v
		}
	}
	if run(seconds) == 42 {
		os.Exit(1)
	}
}
