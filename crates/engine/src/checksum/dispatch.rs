//! Choosing a summing kernel once, at first use.

use std::sync::atomic::{AtomicU8, Ordering};

use super::folding::fold64;
use super::portable::{self, pieces, SIMD_MIN_LEN};

/// The summing implementations. All give bit-identical partial sums.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// 64-bit words with add-with-carry (any CPU).
    Portable,
    /// 128-bit vectors (every x86-64 CPU).
    Sse2,
    Avx2,
    /// AVX2 with AVX-VNNI (`vpdpwssd` on 256-bit vectors), for CPUs without AVX-512.
    AvxVnni,
    /// AVX-512F/BW (`vpmaddwd`).
    Avx512,
    /// AVX-512F/BW with VNNI (`vpdpwssd`).
    Avx512Vnni,
}

impl Kernel {
    /// Every kernel this CPU can run, slowest first.
    pub fn available() -> impl Iterator<Item = Kernel> {
        [
            Kernel::Portable,
            Kernel::Sse2,
            Kernel::Avx2,
            Kernel::AvxVnni,
            Kernel::Avx512,
            Kernel::Avx512Vnni,
        ]
            .into_iter()
            .filter(|k| k.is_supported())
    }

    pub fn is_supported(self) -> bool {
        match self {
            Kernel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Sse2 => std::is_x86_feature_detected!("sse2"),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => std::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            Kernel::AvxVnni => Kernel::Avx2.is_supported() && std::is_x86_feature_detected!("avxvnni"),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => {
                std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512bw")
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Vnni => {
                Kernel::Avx512.is_supported() && std::is_x86_feature_detected!("avx512vnni")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kernel::Portable => "portable",
            Kernel::Sse2 => "sse2",
            Kernel::Avx2 => "avx2",
            Kernel::AvxVnni => "avxvnni",
            Kernel::Avx512 => "avx512",
            Kernel::Avx512Vnni => "avx512vnni",
        }
    }
}

const UNKNOWN: u8 = 0;
static CHOSEN: AtomicU8 = AtomicU8::new(UNKNOWN);

/// The fastest kernel this CPU supports (detected once, then cached).
#[inline]
pub fn kernel() -> Kernel {
    match CHOSEN.load(Ordering::Relaxed) {
        1 => Kernel::Portable,
        2 => Kernel::Sse2,
        3 => Kernel::Avx2,
        4 => Kernel::Avx512,
        5 => Kernel::Avx512Vnni,
        6 => Kernel::AvxVnni,
        _ => detect(),
    }
}

/// Names a kernel to use instead of the fastest (`portable`, `sse2`, `avx2`, `avxvnni`,
/// `avx512`, `avx512vnni`), for benchmarks and tests of the slower kernels; ignored when
/// this CPU lacks it.
pub const KERNEL_ENV: &str = "OFFLAB_CSUM_KERNEL";

#[cold]
fn detect() -> Kernel {
    let forced = std::env::var(KERNEL_ENV).ok().and_then(|name| {
        Kernel::available().find(|k| k.name().eq_ignore_ascii_case(name.trim()))
    });
    let best = forced.unwrap_or_else(|| Kernel::available().last().unwrap_or(Kernel::Portable));
    let code = match best {
        Kernel::Portable => 1,
        Kernel::Sse2 => 2,
        Kernel::Avx2 => 3,
        Kernel::Avx512 => 4,
        Kernel::Avx512Vnni => 5,
        Kernel::AvxVnni => 6,
    };
    CHOSEN.store(code, Ordering::Relaxed);
    best
}

/// Kernels accumulate into 64-bit lanes; a gigabyte per call keeps every lane far from
/// overflowing whatever the slice length.
pub(super) const MAX_CHUNK: usize = 1 << 30;

/// [`super::sum`] with an explicit kernel (for tests and benchmarks). A kernel the CPU
/// lacks falls back to the portable one.
pub fn sum_with(kernel: Kernel, data: &[u8], initial: u32) -> u32 {
    let kernel = if kernel.is_supported() {
        kernel
    } else {
        Kernel::Portable
    };
    sum_supported(kernel, data, initial)
}

/// Sum with a kernel already known to run on this CPU (callers must guarantee it).
#[inline]
pub(super) fn sum_supported(kernel: Kernel, data: &[u8], initial: u32) -> u32 {
    let data_sum = if data.len() <= MAX_CHUNK {
        fold64(sum_le(kernel, data))
    } else {
        fold64(
            data.chunks(MAX_CHUNK)
                .map(|chunk| u64::from(fold64(sum_le(kernel, chunk))))
                .sum(),
        )
    };
    // The kernels add little-endian words; swapping the folded result gives the
    // big-endian sum (RFC 1071 section 2(B)). `initial` is already big-endian.
    u32::from(fold64(
        u64::from(data_sum.swap_bytes()) + u64::from(initial),
    ))
}

/// The partial sum of each `piece`-byte chunk of `data` (the last may be shorter) into
/// `sums`, as `sum(chunk, 0)` would give it; stops at the shorter of the two. One loop
/// per kernel: no dispatch, call or register spills per chunk, and each chunk's final
/// reduction overlaps the next chunk's loads.
pub(super) fn sum_pieces_supported(kernel: Kernel, data: &[u8], piece: usize, sums: &mut [u32]) {
    if piece == 0 {
        return;
    }
    if piece > MAX_CHUNK {
        for (chunk, slot) in data.chunks(piece).zip(sums.iter_mut()) {
            *slot = sum_supported(kernel, chunk, 0);
        }
        return;
    }
    match kernel {
        // SAFETY: `sum_pieces_supported` is only reached with a kernel this CPU supports
        // (see `sum_le`).
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512Vnni => unsafe { super::x86::pieces_avx512_vnni(data, piece, sums) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => unsafe { super::x86::pieces_avx512(data, piece, sums) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { super::x86::pieces_avx2(data, piece, sums) },
        _ => pieces(data, piece, sums, |chunk| sum_le(kernel, chunk)),
    }
}

#[inline]
fn sum_le(kernel: Kernel, data: &[u8]) -> u64 {
    match kernel {
        _ if data.len() < SIMD_MIN_LEN => portable::sum_le(data),
        // SAFETY: `sum_le` is only reached through `sum_supported`, whose callers pass a
        // kernel this CPU supports (`kernel()` detects it, `sum_with` checks it).
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => unsafe { super::x86::sum_avx512(data) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512Vnni => unsafe { super::x86::sum_avx512_vnni(data) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { super::x86::sum_avx2(data) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::AvxVnni => unsafe { super::avx_vnni::sum_avx_vnni(data) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::Sse2 => unsafe { super::x86::sum_sse2(data) },
        _ => portable::sum_le(data),
    }
}

/// Runs one kernel on the whole slice, bypassing the size thresholds (tests only).
#[cfg(test)]
pub(super) fn sum_le_exact(kernel: Kernel, data: &[u8]) -> u64 {
    match kernel {
        // SAFETY: tests only pass kernels from `Kernel::available()`.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => unsafe { super::x86::sum_avx512(data) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512Vnni => unsafe { super::x86::sum_avx512_vnni(data) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { super::x86::sum_avx2(data) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::AvxVnni => unsafe { super::avx_vnni::sum_avx_vnni(data) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Kernel::Sse2 => unsafe { super::x86::sum_sse2(data) },
        _ => portable::sum_le(data),
    }
}
