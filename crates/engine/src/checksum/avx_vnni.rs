//! The AVX2 kernel's vector design with AVX-VNNI's `vpdpwssd` on 256-bit vectors: the
//! multiply-add and the accumulation in one instruction, so two vector operations per
//! 32 bytes (the bias `xor` and `vpdpwssd`) instead of three. For CPUs with AVX-VNNI
//! and no AVX-512 (Intel's Alder Lake and later client cores, the E-core Xeons); where
//! AVX-512 exists its kernels run instead, at twice the width.
//!
//! Vectors only, no add-with-carry share: on Intel the integer adders share ports with
//! the vector units, and with two operations per vector the vector side is no longer
//! what bounds the loop. Eight accumulators, one per vector of a 256-byte iteration,
//! because `vpdpwssd` adds into its accumulator with a latency of several cycles: two in
//! a row on one accumulator would make the chain, not the ports, the bound.

use core::arch::x86_64::*;

use super::portable;
use super::x86::{
    join_split, masked_tail_avx2, narrow_avx2, split_aligned, sum_avx2_short_slice, unbias, widen_avx2, RUN,
    SHORT_AVX2_LEN,
};

/// Below this many bytes the AVX2 kernel's four accumulators sum faster: the eight
/// here cost more to add up than their shorter chains save (Intel Xeon, family 6
/// model 167, ns per sum: 256 B 7.8 against 7.3, 512 B 9.0 against 9.2).
const VECTORS_ONLY_FROM: usize = 512;

/// Up to this many bytes (2048 vectors) the lanes of all accumulators add up within an
/// `i32`: each vector adds at most 65536 in magnitude to each of its eight lanes, so the
/// total stays within 2048 * 8 * 65536 = 2^30.
const NARROW_MAX_LEN: usize = 1 << 16;

/// `acc` plus the biased neighbouring-word pairs of `v` (see `x86::pairs_avx2`).
#[inline]
#[target_feature(enable = "avx2,avxvnni")]
fn step(acc: __m256i, v: __m256i) -> __m256i {
    _mm256_dpwssd_avx_epi32(acc, _mm256_xor_si256(v, _mm256_set1_epi16(i16::MIN)), _mm256_set1_epi16(1))
}

/// The eight accumulators added lane by lane.
#[inline]
#[target_feature(enable = "avx2")]
fn lanes(acc: &[__m256i; 8]) -> __m256i {
    let add = |a, b| _mm256_add_epi32(a, b);
    add(
        add(add(acc[0], acc[1]), add(acc[2], acc[3])),
        add(add(acc[4], acc[5]), add(acc[6], acc[7])),
    )
}

/// # Safety
/// The CPU must support AVX2 and AVX-VNNI.
pub unsafe fn sum_avx_vnni(data: &[u8]) -> u64 {
    // SAFETY: the caller guarantees AVX2 and AVX-VNNI, the only requirements.
    unsafe { sum_impl(data) }
}

/// Short buffers are not split at a 32-byte boundary (as in the AVX2 kernel: the split
/// costs more than the loads that cross a cache line); longer ones are, so that every
/// load of the blocks is aligned.
#[target_feature(enable = "avx2,avxvnni")]
fn sum_impl(data: &[u8]) -> u64 {
    if data.len() < 32 {
        return portable::sum_le(data);
    }
    if data.len() < VECTORS_ONLY_FROM {
        return sum_avx2_short_slice(data);
    }
    let (head, data) = if data.len() < SHORT_AVX2_LEN {
        (&[][..], data)
    } else {
        split_aligned(data, 32)
    };
    let even = data.len() & !1;
    let last_byte = if even < data.len() { u64::from(data[even]) } else { 0 };
    // SAFETY: `32 <= even <= data.len()`: the split takes fewer than 32 bytes, and only
    // from a buffer of at least `SHORT_AVX2_LEN`.
    join_split(head, unsafe { sum_even(data.as_ptr(), even) } + last_byte)
}

/// The little-endian word sum of the `even` bytes at `p`: 256-byte blocks, each vector
/// into its own accumulator, widened once per `RUN` bytes; then 128, 64 and 32 bytes as
/// they fit and the last partial vector (`masked_tail_avx2`).
///
/// # Safety
/// `p..p + even` must be readable; `even` is even and at least 32.
#[inline]
#[target_feature(enable = "avx2,avxvnni")]
unsafe fn sum_even(p: *const u8, even: usize) -> u64 {
    // SAFETY (every `load`): each call below reads 32 bytes ending at or before `even`.
    let load = |at: usize| unsafe { _mm256_loadu_si256(p.add(at).cast()) };
    let zero = _mm256_setzero_si256();
    let mut acc = [zero; 8];
    let mut signed = 0i64;
    let mut at = 0;
    let mut run_left = RUN / 256;
    while even - at >= 256 {
        for (k, acc) in acc.iter_mut().enumerate() {
            *acc = step(*acc, load(at + 32 * k));
        }
        at += 256;
        run_left -= 1;
        if run_left == 0 {
            signed += widen_avx2(lanes(&acc));
            acc = [zero; 8];
            run_left = RUN / 256;
        }
    }
    if even - at >= 128 {
        (0..4).for_each(|k| acc[k] = step(acc[k], load(at + 32 * k)));
        at += 128;
    }
    if even - at >= 64 {
        acc[4] = step(acc[4], load(at));
        acc[5] = step(acc[5], load(at + 32));
        at += 64;
    }
    if even - at >= 32 {
        acc[6] = step(acc[6], load(at));
        at += 32;
    }
    if at < even {
        // SAFETY: `32 <= even`, and fewer than 32 bytes are left after `at`.
        acc[7] = step(acc[7], unsafe { masked_tail_avx2(p, at, even) });
    }
    let lanes = lanes(&acc);
    signed += if even <= NARROW_MAX_LEN { narrow_avx2(lanes) } else { widen_avx2(lanes) };
    unbias(signed, even.div_ceil(32), 16, 0)
}
