//! The measuring loop (same shape as the DPDK side's `measure`), the counting global
//! allocator, and the JSON line each workload prints.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::Instant;

/// Counts every allocation (and reallocation) and the live heap bytes, so the bench
/// can show the engine's steady state allocates nothing and how big its tables are.
pub struct CountingAlloc;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        LIVE_BYTES.fetch_add(layout.size() as i64, Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        LIVE_BYTES.fetch_add(layout.size() as i64, Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as i64, Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        LIVE_BYTES.fetch_add(new_size as i64 - layout.size() as i64, Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

pub fn allocations() -> u64 {
    ALLOCATIONS.load(Relaxed)
}

pub fn live_bytes() -> i64 {
    LIVE_BYTES.load(Relaxed)
}

/// The timed part of one workload.
pub struct Measured {
    pub rounds: u64,
    pub elapsed: f64,
    /// Rounds per second at the fast decile of samples (what is reported; see `measure`).
    pub best_rate: f64,
    /// Heap allocations during the timed part (after warm-up).
    pub allocations: u64,
}

/// Room for the per-batch samples, allocated before the timed part starts.
const MAX_SAMPLES: usize = 1 << 17;

/// `--rounds N`: run exactly N rounds per workload, untimed in effect (for
/// `valgrind --tool=callgrind`, whose instruction counts are repeatable here).
static FIXED_ROUNDS: OnceLock<u64> = OnceLock::new();

pub fn set_fixed_rounds(rounds: u64) {
    let _ = FIXED_ROUNDS.set(rounds);
}

/// Whether `--rounds` is in force (then side measurements are skipped).
pub fn fixed_rounds_active() -> bool {
    FIXED_ROUNDS.get().is_some()
}

fn fixed_rounds(mut round: impl FnMut(), rounds: u64) -> Measured {
    let start = Instant::now();
    let allocs_before = allocations();
    for _ in 0..rounds {
        round();
    }
    let elapsed = start.elapsed().as_secs_f64().max(1e-9);
    let allocations = allocations() - allocs_before;
    Measured { rounds, elapsed, best_rate: rounds as f64 / elapsed, allocations }
}

/// Time of one sample: long enough that the clock's cost does not matter, short enough
/// that most samples fit between two preemptions of this shared core.
const SAMPLE_SECONDS: f64 = 50e-6;

/// Runs `round` for 20% of `seconds` untimed (warm-up: caches, predictors, any buffer
/// growth; also sizes a batch of rounds that takes about `SAMPLE_SECONDS`), then for
/// `seconds`, timing every batch as one sample. The figure is the rate at the fast
/// decile (10th percentile of time per round): this VM's core 0 is shared, and
/// preemption lands in whole samples, which a low percentile leaves out. The DPDK side
/// measures the same way.
pub fn measure(seconds: f64, mut round: impl FnMut()) -> Measured {
    if let Some(&rounds) = FIXED_ROUNDS.get() {
        return fixed_rounds(round, rounds);
    }
    let warm = Instant::now();
    let mut warm_rounds = 0u64;
    while warm.elapsed().as_secs_f64() < seconds * 0.2 {
        round();
        warm_rounds += 1;
    }
    let per_round = warm.elapsed().as_secs_f64() / warm_rounds.max(1) as f64;
    let batch = (SAMPLE_SECONDS / per_round) as u64 + 1;
    let mut samples: Vec<f64> = Vec::with_capacity(MAX_SAMPLES);
    let allocs_before = allocations();
    let start = Instant::now();
    let mut last = start;
    let mut rounds = 0u64;
    loop {
        for _ in 0..batch {
            round();
        }
        let now = Instant::now();
        samples.push((now - last).as_secs_f64() / batch as f64);
        rounds += batch;
        last = now;
        if (now - start).as_secs_f64() >= seconds || samples.len() == MAX_SAMPLES {
            break;
        }
    }
    let allocations = allocations() - allocs_before;
    samples.sort_unstable_by(f64::total_cmp);
    let elapsed = (last - start).as_secs_f64();
    Measured { rounds, elapsed, best_rate: 1.0 / samples[samples.len() / 10], allocations }
}

/// One result line, the same fields the DPDK side prints.
pub struct Row<'a> {
    pub workload: &'a str,
    pub unit: &'a str,
    /// Operations (packets, segments, bits) per round, already scaled to the unit.
    pub ops_per_round: f64,
    pub depth: Option<f64>,
    pub digest: u64,
    pub reprime_ns_per_pkt: Option<f64>,
}

impl Row<'_> {
    pub fn print(&self, m: &Measured) {
        let opt = |v: Option<f64>, digits: usize| match v {
            Some(v) => format!("{v:.digits$}"),
            None => "null".to_string(),
        };
        let reprime = match self.reprime_ns_per_pkt {
            Some(ns) => format!("\"reprime_ns_per_pkt\":{ns:.2},"),
            None => String::new(),
        };
        println!(
            "{{\"side\":\"engine\",\"workload\":\"{}\",\"unit\":\"{}\",\"value\":{:.4},\"mean\":{:.4},\
             \"depth\":{},{}\"rounds\":{},\"elapsed_s\":{:.4},\"digest\":\"{:016x}\",\"heap_allocs\":{}}}",
            self.workload,
            self.unit,
            m.best_rate * self.ops_per_round,
            m.rounds as f64 / m.elapsed * self.ops_per_round,
            opt(self.depth, 3),
            reprime,
            m.rounds,
            m.elapsed,
            self.digest,
            m.allocations
        );
    }
}
