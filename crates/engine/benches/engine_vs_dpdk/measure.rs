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
        self.print_with(m, "");
    }

    /// `print` with `extra` (`"key":value,` pairs, each ending in a comma) after the
    /// standard fields' `depth`.
    pub fn print_with(&self, m: &Measured, extra: &str) {
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
             \"depth\":{},{}{}\"rounds\":{},\"elapsed_s\":{:.4},\"digest\":\"{:016x}\",\"heap_allocs\":{}}}",
            self.workload,
            self.unit,
            m.best_rate * self.ops_per_round,
            m.rounds as f64 / m.elapsed * self.ops_per_round,
            opt(self.depth, 3),
            reprime,
            extra,
            m.rounds,
            m.elapsed,
            self.digest,
            m.allocations
        );
    }
}

/// The core's own read bandwidth over `data`, at the vector width of `kernel`: the
/// same loads as the summing kernel (unaligned, four independent accumulators, the
/// same bytes per iteration), each OR-ed into an accumulator instead of summed, one
/// cheap operation per load. Returns the reduced value so the loads cannot be dropped.
/// Whatever a checksum kernel does beyond this loop is its arithmetic; at 1500 B the
/// buffer is in L1, at 64 KiB in L2.
pub fn read_reduce(kernel: offlab_engine::checksum::Kernel, data: &[u8]) -> u64 {
    use offlab_engine::checksum::Kernel;
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: each branch runs only when the CPU has the features it enables.
        match kernel {
            Kernel::Avx512 | Kernel::Avx512Vnni if kernel.is_supported() => {
                return unsafe { x86::read_avx512(data) }
            }
            Kernel::Avx2 | Kernel::AvxVnni if kernel.is_supported() => {
                return unsafe { x86::read_avx2(data) }
            }
            Kernel::Sse2 if kernel.is_supported() => return unsafe { x86::read_sse2(data) },
            _ => {}
        }
    }
    let mut acc = [0u64; 2];
    for block in data.chunks_exact(16) {
        acc[0] |= u64::from_le_bytes(block[..8].try_into().unwrap());
        acc[1] |= u64::from_le_bytes(block[8..].try_into().unwrap());
    }
    acc[0] | acc[1]
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    macro_rules! read_loop {
        ($name:ident, $feature:literal, $vec:ty, $width:expr, $load:ident, $or:ident, $zero:ident) => {
            #[target_feature(enable = $feature)]
            pub unsafe fn $name(data: &[u8]) -> u64 {
                let mut acc = [$zero(); 4];
                for block in data.chunks_exact(8 * $width) {
                    let p = block.as_ptr();
                    for (k, acc) in acc.iter_mut().enumerate() {
                        // SAFETY: both loads lie inside `block`.
                        let (a, b): ($vec, $vec) = unsafe {
                            ($load(p.add($width * k).cast()), $load(p.add($width * (k + 4)).cast()))
                        };
                        *acc = $or(*acc, $or(a, b));
                    }
                }
                // The rest as the kernels read it: whole vectors, then the last vector
                // overlapping the one before.
                let rest = data.chunks_exact(8 * $width).remainder();
                for v in rest.chunks_exact($width) {
                    // SAFETY: `v` is one vector wide.
                    acc[0] = $or(acc[0], unsafe { $load(v.as_ptr().cast()) });
                }
                if rest.len() % $width != 0 && data.len() >= $width {
                    // SAFETY: the last `$width` bytes of `data`.
                    acc[1] = $or(acc[1], unsafe { $load(data.as_ptr().add(data.len() - $width).cast()) });
                }
                let all = $or($or(acc[0], acc[1]), $or(acc[2], acc[3]));
                let mut lanes = [0u64; $width / 8];
                // SAFETY: `lanes` is exactly one vector wide.
                unsafe { core::ptr::write_unaligned(lanes.as_mut_ptr().cast::<$vec>(), all) };
                lanes.iter().fold(0, |x, y| x | y)
            }
        };
    }

    read_loop!(read_sse2, "sse2", __m128i, 16, _mm_loadu_si128, _mm_or_si128, _mm_setzero_si128);
    read_loop!(read_avx2, "avx2", __m256i, 32, _mm256_loadu_si256, _mm256_or_si256, _mm256_setzero_si256);
    read_loop!(read_avx512, "avx512f", __m512i, 64, _mm512_loadu_si512, _mm512_or_si512, _mm512_setzero_si512);
}
