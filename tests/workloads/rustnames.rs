// SPDX-License-Identifier: Apache-2.0
// rustnames [SECONDS[cpu]]: a Rust function for the demangler, rustnames::net::poll_hot, built
// once with the legacy mangling and once with v0 (tests/tests.mk). SECONDS of wall time, or
// with "cpu" (3cpu) of CPU time capped at ten times that on the clock (as workload.h's
// until_start()).
use std::time::{Duration, Instant};

#[repr(C)]
struct Timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

/// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID, Linux), without the libc crate.
fn thread_cpu() -> Duration {
    let mut ts = Timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { clock_gettime(3, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

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
    let arg = std::env::args().nth(1).unwrap_or_default();
    let cpu = arg.ends_with("cpu");
    let seconds: f64 = arg.trim_end_matches("cpu").parse().unwrap_or(3.0);
    let run = Duration::from_secs_f64(seconds);
    let end = Instant::now() + if cpu { run * 10 } else { run };
    let cpu_end = thread_cpu() + run;
    let mut next_check = Instant::now();
    let mut x = 1u64;
    let mut sink = 0u64;
    while Instant::now() < end {
        // The CPU clock is a system call: read once a millisecond.
        if cpu && Instant::now() >= next_check {
            next_check = Instant::now() + Duration::from_millis(1);
            if thread_cpu() >= cpu_end {
                break;
            }
        }
        x = net::poll_hot(x);
        // Keeps the loop's result alive (std::hint::black_box needs Rust 1.66).
        unsafe { std::ptr::write_volatile(&mut sink, x) };
    }
}
