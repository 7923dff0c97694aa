//! AVX2 and AVX-512 summing kernels. Both return a little-endian word sum congruent
//! modulo 0xffff to the portable kernel's (and zero only for all-zero data, so folding
//! gives bit-identical results); the dispatcher checks CPU support before calling them.
//!
//! Congruence is all that is needed: a carry out of a 32-bit lane is worth 2^32, which
//! is 1 modulo 0xffff, so carries are counted and added back as ones.

use core::arch::x86_64::*;

/// Sums 32-bit lanes into 64-bit accumulators: each 256-bit load is split into its
/// low and high 32-bit halves (a blend and a shift), which cannot overflow a 64-bit
/// lane. Four loads per iteration keep four independent dependency chains.
///
/// # Safety
/// The CPU must support AVX2.
pub unsafe fn sum_avx2(data: &[u8]) -> u64 {
    // SAFETY: the caller guarantees AVX2, the only requirement of `sum_avx2_impl`.
    unsafe { sum_avx2_impl(data) }
}

#[target_feature(enable = "avx2")]
fn sum_avx2_impl(data: &[u8]) -> u64 {
    let zero = _mm256_setzero_si256();
    let mut acc = [zero; 4];
    let mut blocks = data.chunks_exact(128);
    for block in &mut blocks {
        for (i, acc) in acc.iter_mut().enumerate() {
            // SAFETY: `block` is 128 bytes, so bytes 32*i..32*i+32 (i < 4) are inside
            // it; `loadu` has no alignment requirement.
            let v = unsafe { _mm256_loadu_si256(block.as_ptr().add(32 * i).cast()) };
            *acc = add_halves_avx2(*acc, v);
        }
    }
    let mut vectors = blocks.remainder().chunks_exact(32);
    for v in &mut vectors {
        // SAFETY: `v` is exactly 32 bytes; `loadu` has no alignment requirement.
        let v = unsafe { _mm256_loadu_si256(v.as_ptr().cast()) };
        acc[1] = add_halves_avx2(acc[1], v);
    }
    let tail = vectors.remainder();
    let words = tail.len() / 4;
    if words > 0 {
        let lane_index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(words as i32), lane_index);
        // SAFETY: the mask enables exactly the first `words` 32-bit lanes, which lie
        // inside `tail` (words * 4 <= tail.len()); disabled lanes are not accessed.
        let v = unsafe { _mm256_maskload_epi32(tail.as_ptr().cast(), mask) };
        acc[2] = add_halves_avx2(acc[2], v);
    }
    let mut last = 0u64;
    for (i, &byte) in tail[words * 4..].iter().enumerate() {
        last += u64::from(byte) << (8 * (i % 2));
    }
    let all = _mm256_add_epi64(
        _mm256_add_epi64(acc[0], acc[1]),
        _mm256_add_epi64(acc[2], acc[3]),
    );
    let pair = _mm_add_epi64(
        _mm256_castsi256_si128(all),
        _mm256_extracti128_si256::<1>(all),
    );
    let lanes = (_mm_cvtsi128_si64(pair) as u64).wrapping_add(_mm_extract_epi64::<1>(pair) as u64);
    lanes + last
}

/// `acc` (four u64 lanes) plus the low and the high 32-bit half of each lane of `v`.
#[inline]
#[target_feature(enable = "avx2")]
fn add_halves_avx2(acc: __m256i, v: __m256i) -> __m256i {
    let low = _mm256_blend_epi32::<0b1010_1010>(v, _mm256_setzero_si256());
    let high = _mm256_srli_epi64::<32>(v);
    _mm256_add_epi64(acc, _mm256_add_epi64(low, high))
}

/// Adds 32-bit lanes with wrap-around and counts the wraps (an unsigned compare into a
/// mask, then a masked increment): three operations per 64 bytes. The last partial
/// vector is read with a masked load, so no scalar tail is needed.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW.
pub unsafe fn sum_avx512(data: &[u8]) -> u64 {
    // SAFETY: the caller guarantees AVX-512F/BW, the only requirement of
    // `sum_avx512_impl`.
    unsafe { sum_avx512_impl(data) }
}

/// A 16 × u32 running sum and the number of times each lane wrapped.
#[derive(Clone, Copy)]
struct Lanes {
    sum: __m512i,
    carries: __m512i,
}

#[inline]
#[target_feature(enable = "avx512f")]
fn add_lanes(lanes: Lanes, v: __m512i) -> Lanes {
    let sum = _mm512_add_epi32(lanes.sum, v);
    let wrapped = _mm512_cmplt_epu32_mask(sum, v);
    let carries =
        _mm512_mask_add_epi32(lanes.carries, wrapped, lanes.carries, _mm512_set1_epi32(1));
    Lanes { sum, carries }
}

#[inline]
#[target_feature(enable = "avx512f")]
fn merge_lanes(a: Lanes, b: Lanes) -> Lanes {
    let carries = _mm512_add_epi32(a.carries, b.carries);
    add_lanes(
        Lanes {
            sum: a.sum,
            carries,
        },
        b.sum,
    )
}

#[target_feature(enable = "avx512f,avx512bw")]
fn sum_avx512_impl(data: &[u8]) -> u64 {
    let zero = _mm512_setzero_si512();
    let mut lanes = [Lanes {
        sum: zero,
        carries: zero,
    }; 4];
    let mut blocks = data.chunks_exact(256);
    for block in &mut blocks {
        for (i, lanes) in lanes.iter_mut().enumerate() {
            // SAFETY: `block` is 256 bytes, so bytes 64*i..64*i+64 (i < 4) are inside
            // it; `loadu` has no alignment requirement.
            let v = unsafe { _mm512_loadu_si512(block.as_ptr().add(64 * i).cast()) };
            *lanes = add_lanes(*lanes, v);
        }
    }
    let mut vectors = blocks.remainder().chunks_exact(64);
    for (i, v) in (&mut vectors).enumerate() {
        // SAFETY: `v` is exactly 64 bytes; `loadu` has no alignment requirement.
        let v = unsafe { _mm512_loadu_si512(v.as_ptr().cast()) };
        lanes[i] = add_lanes(lanes[i], v);
    }
    let tail = vectors.remainder();
    if !tail.is_empty() {
        let mask: __mmask64 = (1u64 << tail.len()) - 1;
        // SAFETY: the mask selects exactly `tail.len()` (< 64) bytes starting at
        // `tail.as_ptr()`, all inside `tail`; masked-off bytes are not accessed and read
        // as zero, which is the padding an odd last byte needs.
        let v = unsafe { _mm512_maskz_loadu_epi8(mask, tail.as_ptr().cast()) };
        lanes[3] = add_lanes(lanes[3], v);
    }
    let merged = merge_lanes(
        merge_lanes(lanes[0], lanes[1]),
        merge_lanes(lanes[2], lanes[3]),
    );
    // Widen the u32 sums and carry counts to u64 lanes and add them all up.
    let low_mask = _mm512_set1_epi64(0xffff_ffff);
    let widened = _mm512_add_epi64(
        _mm512_add_epi64(
            _mm512_and_si512(merged.sum, low_mask),
            _mm512_srli_epi64::<32>(merged.sum),
        ),
        _mm512_add_epi64(
            _mm512_and_si512(merged.carries, low_mask),
            _mm512_srli_epi64::<32>(merged.carries),
        ),
    );
    _mm512_reduce_add_epi64(widened) as u64
}
