// SPDX-License-Identifier: Apache-2.0

//go:build goleafcgo

// With -tags goleafcgo, goleaf is a cgo program: linked by gcc, with the C runtime's
// .eh_frame beside Go's .gopclntab (the unwind rows must combine both).
package main

// static int c_answer(void) { return 42; }
import "C"

func init() {
	if C.c_answer() != 42 {
		panic("cgo")
	}
}
