//! SSE2, AVX2 and AVX-512 summing kernels. Each returns a little-endian word sum
//! congruent modulo 0xffff to the portable kernel's (and zero only for all-zero data,
//! so folding gives bit-identical results); the dispatcher checks CPU support before
//! calling them.
//!
//! The SSE2 and AVX2 kernels are one design at two widths. Each 16-bit word has its
//! top bit flipped (`w ^ 0x8000` = `w - 32768` read as signed), then `pmaddwd` with
//! ones adds neighbouring words into signed 32-bit lanes: three operations (xor,
//! multiply-add, add) per vector, all on the vector ALUs, where widening the words
//! with shifts and masks takes four. The bias is a known constant per vector, added
//! back at the end. Several accumulators take two vectors each per iteration (four for
//! SSE2's 128 B, three for AVX2's 256 B), so the add chains never wait on each other
//! and the loads overlap; the 32-bit lanes are widened to 64 bits only once per call
//! (and once per 256 KiB, before any lane could overflow). The last partial vector is
//! loaded overlapping the one before it and masked, so no scalar loop runs on the tail.
//!
//! The AVX2 kernel sums the last 64 bytes of each 256-byte iteration on the integer
//! side instead, in add-with-carry chains, while the vector units do the rest: on
//! AMD Zen 1 the three vector operations per 32 bytes bound the vector part near 16
//! bytes a cycle, whatever the operations (a multiply-free variant of shifts and adds
//! is no faster, and mixing the two is slower), and the integer adders were idle.
//! Measured there: +12 % at 64 KiB, +7 % at 1500 B
//! (benches/results/engine-2026-11-24-2300-amd-epyc-zen1.md). The 64 bytes
//! are two independent chains of four words: one chain of eight, a cycle per `adc`,
//! capped the whole loop at 32 bytes a cycle on cores whose vector units run 256-bit
//! operations at full width (AMD Zen 5: two chains +23 % at 64 KiB, +4 % at 1500 B;
//! four chains of two, or 96 bytes in three chains, measured slower).
//!
//! The AVX-512 kernels are the same design at 64 bytes a vector (see `sum_avx512`).

use core::arch::x86_64::*;
use core::sync::atomic::{AtomicU8, Ordering::Relaxed};

use super::portable;

/// Bytes summed in 32-bit lanes before they are widened. AVX2: 1024 iterations, each
/// adding at most two biased pairs (|x| <= 65536 each) to a lane of each of three
/// accumulators: each stays within 2^27, their sum within 2^29. SSE2 (2048 iterations
/// of 128 B): within 2^28 and 2^30.
pub(super) const RUN: usize = 1 << 18;

/// 64 bytes, 0xff at `from..to` and zero elsewhere: a table of vector masks.
const fn mask_table(from: usize, to: usize) -> [u8; 64] {
    let mut mask = [0u8; 64];
    let mut i = from;
    while i < to {
        mask[i] = 0xff;
        i += 1;
    }
    mask
}

/// 32 zero bytes then 32 0xff bytes: the 32 (or 16) bytes at offset `n` keep the last
/// `n` bytes of a vector.
static TAIL_MASK: [u8; 64] = mask_table(32, 64);

/// Adds back the bias of `vectors` vectors of `words` words each to the signed sum,
/// plus the odd last byte: the exact little-endian word sum.
#[inline]
pub(super) fn unbias(signed: i64, vectors: usize, words: usize, last_byte: u64) -> u64 {
    (signed + (vectors * words * 32768) as i64) as u64 + last_byte
}

/// # Safety
/// The CPU must support AVX2.
pub unsafe fn sum_avx2(data: &[u8]) -> u64 {
    // SAFETY: the caller guarantees AVX2, the only requirement of `sum_avx2_impl`.
    unsafe { sum_avx2_impl(data) }
}

/// Neighbouring biased words of `v` added into eight signed 32-bit lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn pairs_avx2(v: __m256i) -> __m256i {
    _mm256_madd_epi16(
        _mm256_xor_si256(v, _mm256_set1_epi16(i16::MIN)),
        _mm256_set1_epi16(1),
    )
}

/// Bytes of each 256-byte iteration of `blocks_avx2` summed by the scalar adder
/// instead of the vector units (see there).
const SCALAR_BYTES: usize = 64;
// `add_with_carry_64` adds exactly 64 bytes; the six vectors take the other 192.
const _: () = assert!(SCALAR_BYTES == 64 && 6 * 32 + SCALAR_BYTES == 256);

/// What `blocks_avx2` summed: biased 32-bit lanes of six vectors per iteration, and
/// the scalar words' sum (congruent modulo 0xffff, zero only for zeros).
struct Blocks {
    lanes: __m256i,
    scalar: u64,
}

/// Sum of `iterations` × 256 bytes from `p`: per iteration six vectors into 32-bit
/// lanes and the last 64 bytes as 64-bit words in two add-with-carry chains, which the
/// integer units run beside the vector ones (module docs). A larger scalar share (96
/// or 128 bytes) measured slower on Zen 1 and Zen 5.
///
/// # Safety
/// `p..p + 256 * iterations` must be readable; `iterations <= RUN / 256`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn blocks_avx2(p: *const u8, iterations: usize) -> Blocks {
    let mut acc = [_mm256_setzero_si256(); 3];
    let (mut words, mut carries) = ([0u64; 2], 0u64);
    for i in 0..iterations {
        // SAFETY: every load lies inside iteration `i`'s 256 bytes, which the caller
        // guarantees are readable; `loadu` has no alignment requirement.
        let (at, v) = unsafe {
            let at = p.add(256 * i);
            (at, move |k: usize| _mm256_loadu_si256(at.add(32 * k).cast()))
        };
        // Vectors k and k + 3 into accumulator k; the last 64 bytes go to the integer side.
        acc[0] = _mm256_add_epi32(acc[0], _mm256_add_epi32(pairs_avx2(v(0)), pairs_avx2(v(3))));
        acc[1] = _mm256_add_epi32(acc[1], _mm256_add_epi32(pairs_avx2(v(1)), pairs_avx2(v(4))));
        acc[2] = _mm256_add_epi32(acc[2], _mm256_add_epi32(pairs_avx2(v(2)), pairs_avx2(v(5))));
        // SAFETY: the last 64 bytes of iteration `i`'s 256, as above.
        (words, carries) = unsafe { add_with_carry_64(words, carries, at.add(256 - SCALAR_BYTES)) };
    }
    Blocks {
        lanes: _mm256_add_epi32(_mm256_add_epi32(acc[0], acc[1]), acc[2]),
        // Each half of a 64-bit word is congruent to it modulo 0xffff (2^32 is 1).
        scalar: words.iter().map(|w| (w & 0xffff_ffff) + (w >> 32)).sum::<u64>() + carries,
    }
}

/// The 64 bytes at `p` added to `words` as eight little-endian 64-bit words, the first
/// four to `words[0]` and the rest to `words[1]` in two add-with-carry chains (one
/// instruction a word, which plain Rust does not get from the compiler: it materialises
/// each carry), each chain's last carry counted in `carries`. Each chain starts with a
/// plain `add`, which reads no carry flag, so the two run side by side.
///
/// # Safety
/// `p..p + 64` must be readable.
#[inline(always)]
unsafe fn add_with_carry_64(words: [u64; 2], carries: u64, p: *const u8) -> ([u64; 2], u64) {
    let ([mut a, mut b], mut carries) = (words, carries);
    // SAFETY: reads the 64 bytes at `p`, which the caller guarantees are readable;
    // x86-64 is little endian; only the flags and the three outputs are written.
    unsafe {
        core::arch::asm!(
            "add {a}, qword ptr [{p}]",
            "adc {a}, qword ptr [{p} + 8]",
            "adc {a}, qword ptr [{p} + 16]",
            "adc {a}, qword ptr [{p} + 24]",
            "adc {c}, 0",
            "add {b}, qword ptr [{p} + 32]",
            "adc {b}, qword ptr [{p} + 40]",
            "adc {b}, qword ptr [{p} + 48]",
            "adc {b}, qword ptr [{p} + 56]",
            "adc {c}, 0",
            a = inout(reg) a,
            b = inout(reg) b,
            c = inout(reg) carries,
            p = in(reg) p,
            options(pure, readonly, nostack),
        );
    }
    ([a, b], carries)
}

/// `blocks_avx2` with vectors alone: `iterations` × 256 bytes from `p` as eight vectors
/// each, into four accumulators (for short buffers: `SHORT_AVX2_LEN`).
///
/// # Safety
/// `p..p + 256 * iterations` must be readable; `iterations <= RUN / 256`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn vector_blocks_avx2(p: *const u8, iterations: usize) -> [__m256i; 4] {
    let mut acc = [_mm256_setzero_si256(); 4];
    for i in 0..iterations {
        // SAFETY: every load lies inside iteration `i`'s 256 bytes, which the caller
        // guarantees are readable.
        let v = |k: usize| pairs_avx2(unsafe { _mm256_loadu_si256(p.add(256 * i + 32 * k).cast()) });
        acc[0] = _mm256_add_epi32(acc[0], _mm256_add_epi32(v(0), v(4)));
        acc[1] = _mm256_add_epi32(acc[1], _mm256_add_epi32(v(1), v(5)));
        acc[2] = _mm256_add_epi32(acc[2], _mm256_add_epi32(v(2), v(6)));
        acc[3] = _mm256_add_epi32(acc[3], _mm256_add_epi32(v(3), v(7)));
    }
    acc
}

/// The four accumulators' lanes added.
#[inline]
#[target_feature(enable = "avx2")]
fn lanes_of(acc: [__m256i; 4]) -> __m256i {
    _mm256_add_epi32(_mm256_add_epi32(acc[0], acc[1]), _mm256_add_epi32(acc[2], acc[3]))
}

/// The bias `unbias` would add for the bytes of `iterations` blocks that were summed as
/// scalar words, to be taken off again.
#[inline]
fn scalar_bias(iterations: usize) -> i64 {
    (iterations * (SCALAR_BYTES / 32) * 16 * 32768) as i64
}

/// The eight signed 32-bit lanes of `acc` added as 64-bit integers.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn widen_avx2(acc: __m256i) -> i64 {
    let wide = _mm256_add_epi64(
        _mm256_cvtepi32_epi64(_mm256_castsi256_si128(acc)),
        _mm256_cvtepi32_epi64(_mm256_extracti128_si256::<1>(acc)),
    );
    let pair = _mm_add_epi64(
        _mm256_castsi256_si128(wide),
        _mm256_extracti128_si256::<1>(wide),
    );
    _mm_cvtsi128_si64(pair).wrapping_add(_mm_extract_epi64::<1>(pair))
}

/// Buffers at least this long get their misaligned head summed apart so that every
/// vector load is aligned (an unaligned one that crosses a cache line costs two);
/// the AVX2 kernel splits only what it sums in blocks (`sum_avx2_short_slice`).
const ALIGN_MIN_LEN: usize = 256;

/// `data` split at its first `align`-byte boundary, `(head, rest)`, so that every
/// vector load of `rest` is aligned; the head is empty when `data` is aligned or too
/// short for the split to pay.
#[inline(always)]
pub(super) fn split_aligned(data: &[u8], align: usize) -> (&[u8], &[u8]) {
    if data.len() < ALIGN_MIN_LEN {
        return (&[], data);
    }
    data.split_at(data.as_ptr().align_offset(align).min(data.len()))
}

/// The sum of `head` followed by bytes whose sum is `rest_sum`: the head summed with the
/// portable kernel and the rest's sum byte-swapped when the head is odd (RFC 1071
/// section 2(B)). The caller sums the rest itself, in line (a summing closure passed
/// in and called on either branch was not inlined: one more call per sum).
#[inline(always)]
pub(super) fn join_split(head: &[u8], rest_sum: u64) -> u64 {
    if head.is_empty() {
        return rest_sum;
    }
    let rest_sum = if head.len() % 2 == 1 {
        u64::from(super::folding::fold64(rest_sum).swap_bytes())
    } else {
        rest_sum
    };
    portable::sum_le(head) + rest_sum
}

/// The AVX2 kernel. Short buffers, where the CPU does not halve 256-bit operations,
/// take `sum_avx2_short` here, with no call left on that path, so no register is saved
/// and restored around it; everything else goes on in `sum_avx2_general`.
#[inline]
#[target_feature(enable = "avx2")]
fn sum_avx2_impl(data: &[u8]) -> u64 {
    if (32..SHORT_AVX2_LEN).contains(&data.len()) && halves_256_bit_ops_known() == Some(false) {
        return sum_avx2_short_slice(data);
    }
    sum_avx2_general(data)
}

/// `sum_avx2_short` of a slice of at least 32 bytes, the odd last byte added as the low
/// byte of its word. Short buffers are not split at a 32-byte boundary: the split's
/// portable head, its branches and the call it needs cost more than the loads that
/// cross a cache line. AMD Zen 5, AVX2 kernel, ns per sum, split against not: 1500 B
/// aligned 10.0 / 9.5, from offset 14 10.6 / 9.8–10.1, from offset 1 11.4 / 10.3;
/// 600 B from offset 14 6.7 / 5.4.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn sum_avx2_short_slice(data: &[u8]) -> u64 {
    let even = data.len() & !1;
    let last_byte = if even < data.len() { u64::from(data[even]) } else { 0 };
    // SAFETY: `32 <= even <= data.len()` (callers pass at least 32 bytes).
    unsafe { sum_avx2_short(data.as_ptr(), even) + last_byte }
}

/// The AVX2 kernel's other cases: fewer than 32 bytes (portable), a short buffer on the
/// first call (which asks the CPU) or where the CPU halves 256-bit operations, and long
/// buffers, split at their first 32-byte boundary and summed in 256-byte blocks.
#[inline(never)]
#[target_feature(enable = "avx2")]
fn sum_avx2_general(data: &[u8]) -> u64 {
    if data.len() < 32 {
        return portable::sum_le(data);
    }
    if data.len() < SHORT_AVX2_LEN && !halves_256_bit_ops() {
        return sum_avx2_short_slice(data);
    }
    let (head, data) = split_aligned(data, 32);
    let even = data.len() & !1;
    let last_byte = if even < data.len() { u64::from(data[even]) } else { 0 };
    // SAFETY: `data` still has at least 32 bytes: it had 32, and the split takes fewer
    // than 32, and only from a buffer of 256.
    join_split(head, unsafe { sum_avx2_long(data.as_ptr(), even) } + last_byte)
}

/// The little-endian word sum of the `even` bytes at `p` in 256-byte blocks with the
/// integer share (`blocks_avx2`), then `rest_avx2`.
///
/// # Safety
/// `p..p + even` must be readable; `even` is even and at least 32.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn sum_avx2_long(p: *const u8, even: usize) -> u64 {
    let mut signed = 0i64;
    let mut scalar = 0u64;
    let mut at = 0;
    while even - at > RUN {
        // SAFETY: `at + RUN <= even <= data.len()`.
        let blocks = unsafe { blocks_avx2(p.add(at), RUN / 256) };
        signed += widen_avx2(blocks.lanes) - scalar_bias(RUN / 256);
        scalar += blocks.scalar;
        at += RUN;
    }
    let iterations = (even - at) / 256;
    // SAFETY: `at + 256 * iterations <= even`; `iterations <= RUN / 256`.
    let blocks = unsafe { blocks_avx2(p.add(at), iterations) };
    signed -= scalar_bias(iterations);
    scalar += blocks.scalar;
    at += 256 * iterations;
    let zero = _mm256_setzero_si256();
    // SAFETY: `32 <= even`, readable; fewer than 256 bytes are left after `at`.
    let acc = unsafe { rest_avx2(p, at, even, [blocks.lanes, zero, zero, zero]) };
    signed += widen_avx2(lanes_of(acc));
    unbias(signed, even.div_ceil(32), 16, 0) + scalar
}

/// `acc` plus the pairs of the bytes from `at` to `even` (fewer than 256): 128, 64 and
/// 32 bytes as they fit, into different accumulators, then the last 32 bytes loaded
/// (overlapping what was summed before them) and masked to those not summed yet. No
/// loop, no scalar tail.
///
/// # Safety
/// `p..p + even` must be readable; `32 <= even`, `even - at < 256`.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn rest_avx2(p: *const u8, mut at: usize, even: usize, mut acc: [__m256i; 4]) -> [__m256i; 4] {
    // SAFETY (every `v`): each call below reads 32 bytes ending at or before `even`.
    let v = |at: usize| pairs_avx2(unsafe { _mm256_loadu_si256(p.add(at).cast()) });
    if even - at >= 128 {
        acc[0] = _mm256_add_epi32(acc[0], v(at));
        acc[1] = _mm256_add_epi32(acc[1], v(at + 32));
        acc[2] = _mm256_add_epi32(acc[2], v(at + 64));
        acc[3] = _mm256_add_epi32(acc[3], v(at + 96));
        at += 128;
    }
    if even - at >= 64 {
        acc[0] = _mm256_add_epi32(acc[0], v(at));
        acc[1] = _mm256_add_epi32(acc[1], v(at + 32));
        at += 64;
    }
    if even - at >= 32 {
        acc[2] = _mm256_add_epi32(acc[2], v(at));
        at += 32;
    }
    if at < even {
        // SAFETY: the caller's (`32 <= even`, `even - at < 32` here).
        let tail = unsafe { masked_tail_avx2(p, at, even) };
        acc[3] = _mm256_add_epi32(acc[3], pairs_avx2(tail));
    }
    acc
}

/// The bytes from `at` to `even` (fewer than 32) as a vector: the last 32 bytes,
/// loaded overlapping what was summed before them, with the bytes before `at` masked
/// to zero. `even - 32` is even, so the lanes hold whole words.
///
/// # Safety
/// `p..p + even` must be readable; `32 <= even` and `even - at < 32`.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn masked_tail_avx2(p: *const u8, at: usize, even: usize) -> __m256i {
    // SAFETY: `even >= 32`, so the last 32 bytes are readable; `even - at < 32`, so the
    // mask's 32 bytes from there are inside `TAIL_MASK`.
    unsafe {
        let last = _mm256_loadu_si256(p.add(even - 32).cast());
        let mask = _mm256_loadu_si256(TAIL_MASK.as_ptr().add(even - at).cast());
        _mm256_and_si256(last, mask)
    }
}

/// Below this many bytes the AVX2 kernel sums with vectors alone (`sum_avx2_short`),
/// except where the vector units bound it (`halves_256_bit_ops`). On AMD Zen 5, timed
/// side by side: 9.3 ns against 10.7 at 1500 B, 12.1 against 12.5 at 2048 B, but
/// 16.6 against 16.4 at 3000 B and 44 against 38 at 8 KiB, where `blocks_avx2`'s
/// integer share pays for its set-up.
pub(super) const SHORT_AVX2_LEN: usize = 2048;

/// Whether this CPU runs each 256-bit operation as two 128-bit halves: AMD family 17h
/// below model 30h (Zen, Zen+) and Hygon family 18h, built on them. There three vector
/// operations per 32 bytes bound the AVX2 kernel, so short buffers keep a quarter of
/// their bytes on the integer side too (module docs); elsewhere the vectors alone cost
/// less per call. Asked once, then cached.
fn halves_256_bit_ops() -> bool {
    halves_256_bit_ops_known().unwrap_or_else(|| {
        let halves = cpu_halves_256_bit_ops();
        HALVES.store(if halves { YES } else { NO }, Relaxed);
        halves
    })
}

/// `halves_256_bit_ops` once it has been asked (no call to ask it).
#[inline(always)]
fn halves_256_bit_ops_known() -> Option<bool> {
    match HALVES.load(Relaxed) {
        NO => Some(false),
        YES => Some(true),
        _ => None,
    }
}

/// `halves_256_bit_ops`'s cached answer: unknown, no or yes.
static HALVES: AtomicU8 = AtomicU8::new(UNKNOWN);
const UNKNOWN: u8 = 0;
const NO: u8 = 1;
const YES: u8 = 2;

#[cold]
fn cpu_halves_256_bit_ops() -> bool {
    // Vendor string (leaf 0: EBX, EDX, ECX) and family/model signature (leaf 1: EAX).
    // SAFETY: leaves 0 and 1 exist on every x86_64 CPU. `__cpuid` is an `unsafe fn` in
    // the MSRV's std (1.89) and safe in newer ones; the block keeps both building.
    #[allow(unused_unsafe)]
    let (vendor, signature) = unsafe { (__cpuid(0), __cpuid(1).eax) };
    let vendor = [vendor.ebx, vendor.edx, vendor.ecx];
    let base_family = (signature >> 8) & 0xf;
    let family = if base_family == 0xf { base_family + ((signature >> 20) & 0xff) } else { base_family };
    let model = ((signature >> 4) & 0xf) | ((signature >> 12) & 0xf0);
    let word = |text: &[u8; 4]| u32::from_le_bytes(*text);
    let amd = vendor == [word(b"Auth"), word(b"enti"), word(b"cAMD")];
    let hygon = vendor == [word(b"Hygo"), word(b"nGen"), word(b"uine")];
    (amd && family == 0x17 && model < 0x30) || (hygon && family == 0x18)
}

/// The little-endian word sum of the `even` bytes at `p` (`even` is even), as
/// `sum_avx2_body` with `vector_blocks_avx2` for `blocks_avx2`, then 128, 64 and 32
/// bytes as needed and the masked tail, no loop after the blocks.
///
/// # Safety
/// `p..p + even` must be readable; `32 <= even < SHORT_AVX2_LEN`.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn sum_avx2_short(p: *const u8, even: usize) -> u64 {
    let iterations = even / 256;
    // SAFETY: `256 * iterations <= even`, readable; `even < SHORT_AVX2_LEN <= RUN`; fewer
    // than 256 bytes are left after the blocks.
    let acc = unsafe { rest_avx2(p, 256 * iterations, even, vector_blocks_avx2(p, iterations)) };
    unbias(narrow_avx2(lanes_of(acc)), even.div_ceil(32), 16, 0)
}

/// The eight signed 32-bit lanes of `acc` added as 32-bit integers, where the caller
/// knows their total fits: below `SHORT_AVX2_LEN` bytes each of at most 64 vectors adds
/// at most 65536 in magnitude to a lane, so the eight lanes' total stays within 2^25.
/// Three operations fewer than `widen_avx2`: 2–3 % at 256 B–1 KiB on an Intel Xeon.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn narrow_avx2(acc: __m256i) -> i64 {
    let four = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256::<1>(acc));
    let two = _mm_add_epi32(four, _mm_shuffle_epi32::<0b01_00_11_10>(four));
    let one = _mm_add_epi32(two, _mm_shuffle_epi32::<0b10_11_00_01>(two));
    i64::from(_mm_cvtsi128_si32(one))
}

/// # Safety
/// The CPU must support SSE2 (every x86-64 CPU does).
pub unsafe fn sum_sse2(data: &[u8]) -> u64 {
    // SAFETY: the caller guarantees SSE2, the only requirement of `sum_sse2_impl`.
    unsafe { sum_sse2_impl(data) }
}

#[inline]
#[target_feature(enable = "sse2")]
fn pairs_sse2(v: __m128i) -> __m128i {
    _mm_madd_epi16(
        _mm_xor_si128(v, _mm_set1_epi16(i16::MIN)),
        _mm_set1_epi16(1),
    )
}

/// # Safety
/// `p..p + 128 * iterations` must be readable; `iterations <= RUN / 128`.
#[inline]
#[target_feature(enable = "sse2")]
unsafe fn blocks_sse2(p: *const u8, iterations: usize) -> __m128i {
    let mut acc = [_mm_setzero_si128(); 4];
    for i in 0..iterations {
        for (k, acc) in acc.iter_mut().enumerate() {
            // SAFETY: both loads lie inside iteration `i`'s 128 bytes.
            let (a, b) = unsafe {
                let at = p.add(128 * i + 16 * k);
                (
                    _mm_loadu_si128(at.cast()),
                    _mm_loadu_si128(at.add(64).cast()),
                )
            };
            *acc = _mm_add_epi32(*acc, _mm_add_epi32(pairs_sse2(a), pairs_sse2(b)));
        }
    }
    _mm_add_epi32(_mm_add_epi32(acc[0], acc[1]), _mm_add_epi32(acc[2], acc[3]))
}

#[inline]
#[target_feature(enable = "sse2")]
fn widen_sse2(acc: __m128i) -> i64 {
    // Sign-extend the four lanes (SSE2 has no pmovsxdq): interleave with their signs.
    let sign = _mm_srai_epi32::<31>(acc);
    let wide = _mm_add_epi64(_mm_unpacklo_epi32(acc, sign), _mm_unpackhi_epi32(acc, sign));
    _mm_cvtsi128_si64(wide).wrapping_add(_mm_cvtsi128_si64(_mm_unpackhi_epi64(wide, wide)))
}

#[target_feature(enable = "sse2")]
fn sum_sse2_impl(data: &[u8]) -> u64 {
    let (head, rest) = split_aligned(data, 16);
    join_split(head, sum_sse2_body(rest))
}

#[inline]
#[target_feature(enable = "sse2")]
fn sum_sse2_body(data: &[u8]) -> u64 {
    if data.len() < 16 {
        return portable::sum_le(data);
    }
    let even = data.len() & !1;
    let last_byte = if even < data.len() { u64::from(data[even]) } else { 0 };
    let p = data.as_ptr();
    let mut signed = 0i64;
    let mut at = 0;
    while even - at > RUN {
        // SAFETY: `at + RUN <= even <= data.len()`.
        signed += widen_sse2(unsafe { blocks_sse2(p.add(at), RUN / 128) });
        at += RUN;
    }
    let iterations = (even - at) / 128;
    // SAFETY: `at + 128 * iterations <= even`; `iterations <= RUN / 128`.
    let mut acc = unsafe { blocks_sse2(p.add(at), iterations) };
    at += 128 * iterations;
    while even - at >= 16 {
        // SAFETY: `at + 16 <= even`.
        let v = unsafe { _mm_loadu_si128(p.add(at).cast()) };
        acc = _mm_add_epi32(acc, pairs_sse2(v));
        at += 16;
    }
    let rest = even - at;
    if rest > 0 {
        // SAFETY: as in the AVX2 kernel, at half the width (`even >= 16`, `rest < 16`).
        let (v, mask) = unsafe {
            (
                _mm_loadu_si128(p.add(even - 16).cast()),
                _mm_loadu_si128(TAIL_MASK.as_ptr().add(16 + rest).cast()),
            )
        };
        acc = _mm_add_epi32(acc, pairs_sse2(_mm_and_si128(v, mask)));
    }
    signed += widen_sse2(acc);
    unbias(signed, even.div_ceil(16), 8, last_byte)
}

/// AVX-512: the same biased pairs at 64 bytes a vector, with eight accumulators
/// (512 B per iteration): with AVX-512 VNNI one `vpdpwssd` multiplies, adds the pairs
/// and accumulates (two operations per vector with the xor, and a 5-cycle chain per
/// accumulator, hence eight of them); without it `vpmaddwd` + `vpaddd`. The last
/// partial vector is a masked byte load (masked-off bytes read as zero, which is also
/// the padding of an odd last byte), so no scalar tail runs.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW.
pub unsafe fn sum_avx512(data: &[u8]) -> u64 {
    // SAFETY: the caller guarantees AVX-512F/BW, the only requirement.
    unsafe { sum_avx512_madd(data) }
}

/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and AVX-512 VNNI.
pub unsafe fn sum_avx512_vnni(data: &[u8]) -> u64 {
    // SAFETY: the caller guarantees AVX-512F/BW/VNNI, the only requirement.
    unsafe { sum_avx512_dpwssd(data) }
}

use super::portable::{pieces, SIMD_MIN_LEN};

/// `dispatch::sum_pieces_supported` for the AVX2 kernel (same size thresholds as
/// `dispatch::sum_le`). A chunk whose surrounding 32-byte blocks lie inside `data` (all
/// but, at most, the first and the last) is summed by `window_avx2`; the others as a
/// slice of their own.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub unsafe fn pieces_avx2(data: &[u8], piece: usize, sums: &mut [u32]) {
    let count = data.len().div_ceil(piece).min(sums.len());
    for (k, slot) in sums[..count].iter_mut().enumerate() {
        let start = k * piece;
        let end = (start + piece).min(data.len());
        let le = if end - start < SIMD_MIN_LEN {
            portable::sum_le(&data[start..end])
        } else {
            match window_avx2(data, start, end) {
                Some(le) => le,
                None => sum_avx2_impl(&data[start..end]),
            }
        };
        *slot = u32::from(super::folding::fold64(le).swap_bytes());
    }
}

/// 32 0xff bytes then 32 zero bytes: the 32 bytes at offset `32 - n` keep the first `n`
/// bytes of a vector.
static HEAD_MASK: [u8; 64] = mask_table(0, 32);

/// The sum of `data[start..end]` (at least `SIMD_MIN_LEN` bytes), congruent to (and zero
/// exactly when) the sum of that slice alone, read as whole 32-byte-aligned blocks of
/// `data`: the first block masked to the bytes from `start`, the last to the bytes
/// before `end`, their neighbours' bytes masked off. A chunk cut out of a longer buffer
/// thus needs no misaligned head summed apart, no loop over the last few vectors and no
/// overlapping tail load: per 1448-byte GSO chunk 322 instructions instead of 356
/// (callgrind; 188 sum the same bytes inside one long buffer) and 46 ns instead of 52
/// on AMD Zen 1. `None` when those blocks are not all inside `data` or the window is
/// longer than one run.
///
/// Words pair up by address here. When `start` is at an odd address that pairs every
/// byte with the other neighbour, so the sum is the slice's own with its bytes swapped
/// (RFC 1071 section 2(B)), swapped back at the end.
#[inline]
#[target_feature(enable = "avx2")]
fn window_avx2(data: &[u8], start: usize, end: usize) -> Option<u64> {
    let origin = data.as_ptr() as usize;
    let first = (origin + start) & !31;
    let last = (origin + end).checked_add(31)? & !31;
    if first < origin || last > origin + data.len() || end - start > RUN - 64 {
        return None;
    }
    let head = origin + start - first;
    let keep = 32 - (last - (origin + end));
    // At least 4: the window holds `SIMD_MIN_LEN` bytes or more.
    let blocks = (last - first) / 32;
    let middle = blocks - 2;
    // SAFETY: `first..last` lies inside `data` (checked above), so every 32-byte load
    // below, of a block from `first` up to `last`, reads `data`'s bytes; the mask loads
    // read 32 bytes at offsets `32 - head` (head < 32) and `32 - keep` (1 <= keep <= 32)
    // of the 64-byte tables. `middle / 8 <= RUN / 256` as `blocks_avx2` needs.
    unsafe {
        let base = data.as_ptr().add(first - origin);
        let block = |k: usize| _mm256_load_si256(base.add(32 * k).cast());
        let from_start = _mm256_loadu_si256(TAIL_MASK.as_ptr().add(32 - head).cast());
        let before_end = _mm256_loadu_si256(HEAD_MASK.as_ptr().add(32 - keep).cast());
        // As in `sum_avx2_body`: short windows with vectors alone where that is faster.
        let vectors_only = end - start < SHORT_AVX2_LEN && !halves_256_bit_ops();
        let bulk = if vectors_only {
            Blocks { lanes: lanes_of(vector_blocks_avx2(base.add(32), middle / 8)), scalar: 0 }
        } else {
            blocks_avx2(base.add(32), middle / 8)
        };
        let mut acc = _mm256_add_epi32(
            _mm256_add_epi32(
                pairs_avx2(_mm256_and_si256(block(0), from_start)),
                pairs_avx2(_mm256_and_si256(block(blocks - 1), before_end)),
            ),
            bulk.lanes,
        );
        // The 0..=7 blocks left between, as 4, 2 and 1: three branches, no loop.
        let mut at = 1 + middle / 8 * 8;
        let rest = middle % 8;
        if rest & 4 != 0 {
            let four = _mm256_add_epi32(
                _mm256_add_epi32(pairs_avx2(block(at)), pairs_avx2(block(at + 1))),
                _mm256_add_epi32(pairs_avx2(block(at + 2)), pairs_avx2(block(at + 3))),
            );
            acc = _mm256_add_epi32(acc, four);
            at += 4;
        }
        if rest & 2 != 0 {
            let two = _mm256_add_epi32(pairs_avx2(block(at)), pairs_avx2(block(at + 1)));
            acc = _mm256_add_epi32(acc, two);
            at += 2;
        }
        if rest & 1 != 0 {
            acc = _mm256_add_epi32(acc, pairs_avx2(block(at)));
        }
        let integer_share = if vectors_only { 0 } else { scalar_bias(middle / 8) };
        let signed = widen_avx2(acc) - integer_share;
        let le = unbias(signed, blocks, 16, 0) + bulk.scalar;
        Some(if (origin + start) % 2 == 1 {
            u64::from(super::folding::fold64(le).swap_bytes())
        } else {
            le
        })
    }
}

macro_rules! avx512_pieces {
    ($name:ident, $features:literal, $kernel:ident) => {
        /// `dispatch::sum_pieces_supported` for an AVX-512 kernel (same size thresholds
        /// as `dispatch::sum_le`).
        ///
        /// # Safety
        /// The CPU must support the features enabled here.
        #[target_feature(enable = $features)]
        pub unsafe fn $name(data: &[u8], piece: usize, sums: &mut [u32]) {
            pieces(data, piece, sums, |chunk| {
                if chunk.len() >= SIMD_MIN_LEN {
                    $kernel(chunk)
                } else {
                    portable::sum_le(chunk)
                }
            })
        }
    };
}

avx512_pieces!(pieces_avx512, "avx512f,avx512bw", sum_avx512_madd);
avx512_pieces!(pieces_avx512_vnni, "avx512f,avx512bw,avx512vnni", sum_avx512_dpwssd);

/// Iterations of 512 B before the 32-bit lanes are widened: each adds at most 65536
/// in magnitude to a lane of each of eight accumulators, whose sum stays within 2^29.
const RUN_ITERATIONS_512: usize = 1024;

/// Bytes `0..n` of a 64-byte vector (`n <= 64`).
#[inline]
fn low_bytes(n: usize) -> __mmask64 {
    if n >= 64 {
        !0
    } else {
        (1u64 << n) - 1
    }
}

macro_rules! avx512_kernel {
    ($name:ident, $features:literal, $step:ident) => {
        #[inline]
        #[target_feature(enable = $features)]
        fn $name(data: &[u8]) -> u64 {
            // Every load is 64-byte aligned (an unaligned one splits across two cache
            // lines, costing two loads): the vectors start at `base`, the data's address
            // rounded down, and the first and last are masked loads that read only the
            // data's bytes. Starting `head` bytes early pairs the bytes into words the
            // other way round when `head` is odd: that sum is the wanted one with its
            // bytes swapped (RFC 1071 section 2(B)), swapped back at the end.
            let head = data.as_ptr() as usize & 63;
            // `base` may lie before `data`'s allocation, so addresses from it are formed
            // with wrapping arithmetic; every load from them reads only `data`'s bytes.
            let base = data.as_ptr().wrapping_sub(head);
            let total = head + data.len();
            let zero = _mm512_setzero_si512();
            let mut acc = [zero; 8];
            let mut signed = 0i64;
            let mut at = 0;
            if head != 0 {
                let end = total.min(64);
                // SAFETY: the mask selects the bytes `head..end` from `base`, which are
                // `data[..end - head]`; masked-off bytes are not accessed.
                let v = unsafe {
                    _mm512_maskz_loadu_epi8(low_bytes(end) & !low_bytes(head), base.cast())
                };
                acc[7] = $step(acc[7], v);
                at = end;
            }
            let mut run_left = RUN_ITERATIONS_512;
            while total - at >= 512 {
                for (k, acc) in acc.iter_mut().enumerate() {
                    // SAFETY: `head <= at` and `at + 512 <= total`, so the 64 bytes are
                    // inside `data`.
                    let v = unsafe { _mm512_loadu_si512(base.wrapping_add(at + 64 * k).cast()) };
                    *acc = $step(*acc, v);
                }
                at += 512;
                run_left -= 1;
                if run_left == 0 {
                    signed += widen_avx512(&acc);
                    acc = [zero; 8];
                    run_left = RUN_ITERATIONS_512;
                }
            }
            // Up to 7 whole vectors and a partial one, each into an accumulator of its
            // own so none waits on another.
            let mut load = |k: usize, at: usize| {
                // SAFETY: callers below keep `head <= at` and `at + 64 <= total`.
                let v = unsafe { _mm512_loadu_si512(base.wrapping_add(at).cast()) };
                acc[k] = $step(acc[k], v);
            };
            if total - at >= 256 {
                (0..4).for_each(|k| load(k, at + 64 * k));
                at += 256;
            }
            if total - at >= 128 {
                load(4, at);
                load(5, at + 64);
                at += 128;
            }
            if total - at >= 64 {
                load(6, at);
                at += 64;
            }
            let rest = total - at;
            if rest > 0 {
                // SAFETY: the mask selects exactly the `rest` (< 64) bytes from `at`, the
                // end of `data`; masked-off bytes are not accessed.
                let v = unsafe { _mm512_maskz_loadu_epi8(low_bytes(rest), base.wrapping_add(at).cast()) };
                acc[7] = $step(acc[7], v);
            }
            signed += if total <= SHORT_512 { narrow_avx512(&acc) } else { widen_avx512(&acc) };
            let le = unbias(signed, total.div_ceil(64), 32, 0);
            if head % 2 == 1 {
                u64::from(super::folding::fold64(le).swap_bytes())
            } else {
                le
            }
        }
    };
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
fn step_madd(acc: __m512i, v: __m512i) -> __m512i {
    let pairs = _mm512_madd_epi16(
        _mm512_xor_si512(v, _mm512_set1_epi16(i16::MIN)),
        _mm512_set1_epi16(1),
    );
    _mm512_add_epi32(acc, pairs)
}

#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn step_dpwssd(acc: __m512i, v: __m512i) -> __m512i {
    _mm512_dpwssd_epi32(
        acc,
        _mm512_xor_si512(v, _mm512_set1_epi16(i16::MIN)),
        _mm512_set1_epi16(1),
    )
}

avx512_kernel!(sum_avx512_madd, "avx512f,avx512bw", step_madd);
avx512_kernel!(sum_avx512_dpwssd, "avx512f,avx512bw,avx512vnni", step_dpwssd);

/// Up to this many bytes (2048 vectors, none widened before the end) the lanes of the
/// eight accumulators add up within an `i32`: each vector adds at most 65536 in
/// magnitude to each of its 16 lanes, so the total stays within 2048 * 16 * 65536 =
/// 2^31 (reached only by all-zero data, whose -2^31 is `i32::MIN`).
const SHORT_512: usize = 2048 * 64;

/// The eight accumulators added lane by lane (each lane within an `i32`: see
/// `RUN_ITERATIONS_512`).
#[inline]
#[target_feature(enable = "avx512f")]
fn lanes_avx512(acc: &[__m512i; 8]) -> __m512i {
    _mm512_add_epi32(
        _mm512_add_epi32(
            _mm512_add_epi32(acc[0], acc[1]),
            _mm512_add_epi32(acc[2], acc[3]),
        ),
        _mm512_add_epi32(
            _mm512_add_epi32(acc[4], acc[5]),
            _mm512_add_epi32(acc[6], acc[7]),
        ),
    )
}

/// `widen_avx512` for at most `SHORT_512` bytes, added as 32-bit integers: the 64-bit
/// widening steps come off the end of every short call (4–7 % at 256 B–4 KiB on Zen 5).
#[inline]
#[target_feature(enable = "avx512f")]
fn narrow_avx512(acc: &[__m512i; 8]) -> i64 {
    i64::from(_mm512_reduce_add_epi32(lanes_avx512(acc)))
}

/// The eight accumulators' signed 32-bit lanes added as 64-bit integers.
#[inline]
#[target_feature(enable = "avx512f")]
fn widen_avx512(acc: &[__m512i; 8]) -> i64 {
    let sum = lanes_avx512(acc);
    let wide = _mm512_add_epi64(
        _mm512_cvtepi32_epi64(_mm512_castsi512_si256(sum)),
        _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64::<1>(sum)),
    );
    _mm512_reduce_add_epi64(wide)
}
