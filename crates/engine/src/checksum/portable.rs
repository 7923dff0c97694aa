//! Portable one's-complement summing: 64-bit little-endian words added with their
//! carries (each carry out of 64 bits is worth 2^64, which is 1 modulo 0xffff).
//! Independent of the host byte order (the words are read as little endian
//! explicitly); the kernel of machines without SIMD, of short buffers, and the
//! reference the SIMD kernels are tested against (with [`reference`]).

/// Sums `data` as little-endian 16-bit words (a final odd byte is the low byte of a
/// zero-padded word), returning a value congruent modulo 0xffff to that sum and zero
/// only when that sum is zero.
#[inline]
pub fn sum_le(data: &[u8]) -> u64 {
    // Two independent add-with-carry chains of 64-bit words: on x86-64 each word is an
    // `add` and an `adc` into the carry count, two words per cycle or so.
    let mut acc = [0u64; 2];
    let mut carries = 0u64;
    let mut blocks = data.chunks_exact(16);
    for block in &mut blocks {
        let (a, b) = block.split_at(8);
        let a = u64::from_le_bytes(a.try_into().unwrap_or([0; 8]));
        let b = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        let (s0, c0) = acc[0].overflowing_add(a);
        let (s1, c1) = acc[1].overflowing_add(b);
        acc = [s0, s1];
        carries += u64::from(c0) + u64::from(c1);
    }
    let (s, c) = acc[0].overflowing_add(acc[1]);
    (s & 0xffff_ffff) + (s >> 32) + u64::from(c) + carries + sum_short(blocks.remainder())
}

/// Sum of at most 15 bytes as little-endian words (exact).
#[inline]
pub(super) fn sum_short(mut rest: &[u8]) -> u64 {
    let mut total = 0u64;
    let le32 = |b: &[u8]| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    if rest.len() >= 8 {
        total += le32(&rest[..4]) + le32(&rest[4..8]);
        rest = &rest[8..];
    }
    if rest.len() >= 4 {
        total += le32(rest);
        rest = &rest[4..];
    }
    if rest.len() >= 2 {
        total += u64::from(u16::from_le_bytes([rest[0], rest[1]]));
        rest = &rest[2..];
    }
    if let [last] = rest {
        total += u64::from(*last);
    }
    total
}

/// The obvious byte-by-byte definition (RFC 1071), big-endian words, folded to 16
/// bits. The fast paths are tested against this.
pub fn reference(data: &[u8]) -> u16 {
    let mut sum: u64 = 0;
    for (i, byte) in data.iter().enumerate() {
        sum += if i % 2 == 0 {
            u64::from(*byte) << 8
        } else {
            u64::from(*byte)
        };
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The loop of `sum_pieces_supported` around one summing function (`le` as the kernels
/// return it); inlined into each kernel's own loop.
#[inline(always)]
pub(super) fn pieces(data: &[u8], piece: usize, sums: &mut [u32], le: impl Fn(&[u8]) -> u64) {
    for (chunk, slot) in data.chunks(piece).zip(sums.iter_mut()) {
        *slot = u32::from(super::folding::fold64(le(chunk)).swap_bytes());
    }
}

/// Below this length the SIMD kernels' fixed cost (setup and the horizontal sum)
/// outweighs their speed, so the portable loop runs instead. From it up the AVX-512
/// kernels run where the CPU has them: with masked first and last vectors they beat
/// the AVX2 kernel at every length measured (128–511 B: 17–35 % on an Intel Xeon,
/// family 6 model 207; `benches/results/engine-2026-11-25-0551-intel-xeon-f6m207.md`).
pub(super) const SIMD_MIN_LEN: usize = 128;
