//! Portable one's-complement summing: 32-bit little-endian words into a 64-bit
//! accumulator. Independent of the host byte order (the words are read as little
//! endian explicitly) and used for short buffers and as the SIMD kernels' tail.

/// Sums `data` as little-endian 16-bit words (a final odd byte is the low byte of a
/// zero-padded word), returning a value congruent modulo 0xffff to that sum.
pub fn sum_le(data: &[u8]) -> u64 {
    // Four independent accumulators keep the adds from serialising on one register.
    let mut acc = [0u64; 4];
    let mut blocks = data.chunks_exact(16);
    for block in &mut blocks {
        for (lane, word) in acc.iter_mut().zip(block.chunks_exact(4)) {
            *lane += u64::from(u32::from_le_bytes([word[0], word[1], word[2], word[3]]));
        }
    }
    let mut total: u64 = acc.iter().sum();
    let mut words = blocks.remainder().chunks_exact(2);
    for word in &mut words {
        total += u64::from(u16::from_le_bytes([word[0], word[1]]));
    }
    if let [last] = words.remainder() {
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
