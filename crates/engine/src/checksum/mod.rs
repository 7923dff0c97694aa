//! The Internet checksum (RFC 1071) from small parts.
//!
//! A *partial sum* is a `u32` holding a one's-complement sum of big-endian 16-bit
//! words, folded to at most 16 bits. Partial sums of adjacent pieces are added with
//! [`combine`] (which handles a piece starting at an odd offset), pseudo-headers give
//! their own partial sums, and [`finish`] turns a partial sum into the value written
//! into a header. [`update16`]/[`update32`] patch a stored checksum when one field
//! changes (RFC 1624, eqn. 3).
//!
//! [`sum`] picks the fastest kernel the CPU has at first use (AVX-512BW, AVX-VNNI,
//! AVX2, SSE2, or the portable one) and remembers the choice; the environment variable
//! `OFFLAB_CSUM_KERNEL` ([`KERNEL_ENV`]) may name a slower one instead.

#[cfg(target_arch = "x86_64")]
mod avx_vnni;
mod dispatch;
mod folding;
mod portable;
#[cfg(target_arch = "x86_64")]
mod x86;

use std::net::{Ipv4Addr, Ipv6Addr};

pub use dispatch::{kernel, sum_with, Kernel, KERNEL_ENV};
pub use folding::fold;
pub(crate) use folding::fold64;
pub use portable::reference;

/// Partial sum of `data` (big-endian words, an odd last byte padded with zero) added
/// to the partial sum `initial`.
#[inline]
pub fn sum(data: &[u8], initial: u32) -> u32 {
    dispatch::sum_supported(kernel(), data, initial)
}

/// The partial sum of each `piece`-byte chunk of `data` (`data.chunks(piece)`, the last
/// chunk may be shorter), written to `sums` in order, each equal to `sum(chunk, 0)`;
/// stops when either runs out. Faster than one `sum` per chunk for many chunks (GSO
/// with software checksums: one chunk per segment).
#[inline]
pub fn sum_pieces(data: &[u8], piece: usize, sums: &mut [u32]) {
    dispatch::sum_pieces_supported(kernel(), data, piece, sums)
}

/// The checksum field value for `data` alone: `finish(sum(data, 0))`.
#[inline]
pub fn of(data: &[u8]) -> u16 {
    finish(sum(data, 0))
}

/// The value to store in a checksum field: the complement of the folded sum.
#[inline]
pub const fn finish(sum: u32) -> u16 {
    !fold(sum)
}

/// Adds the partial sum `b` of a piece that starts `offset_of_b` bytes after the start
/// of the piece summed in `a`. Pieces at odd offsets have their bytes in the other
/// halves of the 16-bit words, hence the swap.
#[inline]
pub const fn combine(a: u32, b: u32, offset_of_b: usize) -> u32 {
    let b = if offset_of_b % 2 == 1 {
        fold(b).swap_bytes()
    } else {
        fold(b)
    };
    fold64(a as u64 + b as u64) as u32
}

/// Partial sum of the IPv4 pseudo-header (RFC 793/768): addresses, protocol and the
/// transport length (header + payload).
#[inline]
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, l4_len: u16) -> u32 {
    let words = |a: [u8; 4]| {
        u64::from(u16::from_be_bytes([a[0], a[1]])) + u64::from(u16::from_be_bytes([a[2], a[3]]))
    };
    let total = words(src.octets()) + words(dst.octets()) + u64::from(protocol) + u64::from(l4_len);
    u32::from(fold64(total))
}

/// Partial sum of the IPv6 pseudo-header (RFC 8200 §8.1). `l4_len` is the upper-layer
/// packet length (32 bits, so jumbograms fit).
#[inline]
pub fn pseudo_header_v6(src: &Ipv6Addr, dst: &Ipv6Addr, protocol: u8, l4_len: u32) -> u32 {
    let words = |a: &Ipv6Addr| a.segments().iter().map(|&w| u64::from(w)).sum::<u64>();
    let total = words(src)
        + words(dst)
        + u64::from(l4_len >> 16)
        + u64::from(l4_len & 0xffff)
        + u64::from(protocol);
    u32::from(fold64(total))
}

/// New checksum field value after one 16-bit word covered by it changed from `old` to
/// `new` (RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')).
#[inline]
pub const fn update16(check: u16, old: u16, new: u16) -> u16 {
    let total = (!check) as u32 + (!old) as u32 + new as u32;
    !fold(total)
}

/// [`update16`] for an aligned 32-bit field (an IPv4 address, a TCP sequence number).
#[inline]
pub const fn update32(check: u16, old: u32, new: u32) -> u16 {
    let total = (!check) as u64
        + (!(old >> 16) & 0xffff) as u64
        + (!old & 0xffff) as u64
        + (new >> 16) as u64
        + (new & 0xffff) as u64;
    !fold64(total)
}

#[cfg(test)]
mod tests;
