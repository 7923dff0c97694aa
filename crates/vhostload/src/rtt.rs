//! The round trip of one cache line between two CPUs: a probe of where the host placed
//! this VM's vCPUs. On the 2-vCPU KVM machine W5 runs on, the round trip between CPU 0
//! and CPU 1 stepped between about 63, 85-100 and 330-345 ns from one second to the
//! next while the guest was idle (the host moves the vCPU threads), and every backend's
//! cost per segment moved with it: the source/sink on one CPU and the backend on the
//! other hand over rings and buffers through that path. A W5 run records the probe
//! before and after it, so a run whose placement changed can be told from one whose
//! code did.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The line both threads write in turn, alone in its 128 bytes: the CPU fetches lines
/// in adjacent pairs, and a neighbour written by either thread would be timed too.
#[repr(align(128))]
struct Line(AtomicU64);

/// Times of `repeat` measurements, each the mean of `rounds` round trips (A writes, B
/// sees it and answers, A sees the answer), with A on `cpus.0` and B on `cpus.1` (None:
/// not pinned). One answering thread serves every measurement, as the first one showed
/// the thread's start in a probe that spawned one per measurement.
pub fn round_trips(
    cpus: Option<(usize, usize)>,
    rounds: u64,
    repeat: u32,
) -> io::Result<Vec<Duration>> {
    let line = Arc::new(Line(AtomicU64::new(0)));
    let total = rounds * u64::from(repeat);
    let answerer = {
        let line = Arc::clone(&line);
        std::thread::spawn(move || -> io::Result<()> {
            // Unpinned, it still answers every round, so the other side never waits
            // for ever; the error is returned after.
            let pinned = cpus.map_or(Ok(()), |(_, b)| pin(b));
            for i in 0..total {
                wait_for(&line.0, 2 * i + 1);
                line.0.store(2 * i + 2, Ordering::Release);
            }
            pinned
        })
    };
    let pinned = cpus.map_or(Ok(()), |(a, _)| pin(a));
    let mut times = Vec::with_capacity(repeat as usize);
    for r in 0..u64::from(repeat) {
        let start = Instant::now();
        for i in r * rounds..(r + 1) * rounds {
            line.0.store(2 * i + 1, Ordering::Release);
            wait_for(&line.0, 2 * i + 2);
        }
        let mean = start.elapsed().as_nanos() / u128::from(rounds.max(1));
        times.push(Duration::from_nanos(mean as u64));
    }
    let answered = answerer
        .join()
        .map_err(|_| io::Error::other("the answering thread panicked"))?;
    pinned.and(answered)?;
    Ok(times)
}

fn wait_for(line: &AtomicU64, value: u64) {
    // No PAUSE (spin_loop) here: on this Zen CPU it delayed each side's sight of the
    // new value so much that the probe read about 1.75x a plain loop's round trip.
    while line.load(Ordering::Acquire) != value {
        // Both threads on one CPU (a test, or a machine with one CPU) take turns only
        // when one gives the CPU up.
        if cfg!(test) {
            std::thread::yield_now();
        }
    }
}

fn pin(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: cpu_set_t is plain old data; CPU_SET and sched_setaffinity get valid pointers.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_is_answered_and_a_time_comes_back() {
        // No pinning: the threads meet wherever the scheduler puts them.
        let times = round_trips(None, 200, 3).unwrap();
        assert_eq!(times.len(), 3);
        assert!(times.iter().all(|t| *t > Duration::ZERO));
    }

    #[test]
    fn a_cpu_that_does_not_exist_is_an_error_not_a_hang() {
        let err = round_trips(Some((libc::CPU_SETSIZE as usize, 0)), 50, 2).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
    }
}
