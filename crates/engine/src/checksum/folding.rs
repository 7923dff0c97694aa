//! Folding a wide one's-complement sum to 16 bits: the last step of every sum, used by
//! the kernels below `checksum` and by its arithmetic on partial sums alike, so it sits
//! in a leaf they both import.

/// Folds a wide one's-complement sum to 16 bits (end-around carry). Adding the sum to
/// itself rotated by 16 leaves in the upper half the sum of both halves with the
/// end-around carry already added (the carry out of the lower half lands there).
#[inline]
pub const fn fold(sum: u32) -> u16 {
    (sum.wrapping_add(sum.rotate_left(16)) >> 16) as u16
}

/// Folds a 64-bit sum to 16 bits, branch-free: `fold`'s rotation, once at 64 bits and
/// once at 32, six dependent operations where masking and shifting took twelve, on the
/// latency path at the end of every checksum.
#[inline]
pub(crate) const fn fold64(sum: u64) -> u16 {
    fold((sum.wrapping_add(sum.rotate_left(32)) >> 32) as u32)
}
