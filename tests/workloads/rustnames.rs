// SPDX-License-Identifier: Apache-2.0
// rustnames [SECONDS]: a Rust function for the demangler, rustnames::net::poll_hot, built
// once with the legacy mangling and once with v0 (tests/tests.mk).
use std::time::{Duration, Instant};

pub mod net {
    #[inline(never)]
    pub fn poll_hot(mut x: u64) -> u64 {
        for i in 0..4096u64 {
            x = (x ^ (x >> 9)).wrapping_mul(0x2545f4914f6cdd1d).wrapping_add(i);
        }
        x
    }
}

fn main() {
    let seconds: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let mut x = 1u64;
    let mut sink = 0u64;
    while Instant::now() < end {
        x = net::poll_hot(x);
        // Keeps the loop's result alive (std::hint::black_box needs Rust 1.66).
        unsafe { std::ptr::write_volatile(&mut sink, x) };
    }
}
