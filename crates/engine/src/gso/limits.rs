//! How much one call may produce: segments per super-packet and header bytes per
//! segment. Read by the plan and by every kind's segmenter, so it sits below them.

use super::error::GsoError;

/// The most segments one super-packet may produce (Linux's GSO_MAX_SEGS is 65535, but
/// no 64 KiB packet needs more than this with a sane MSS; it bounds the work per call).
pub const MAX_SEGMENTS: usize = 511;

/// The longest run of headers (everything before the payload) repeated per segment.
/// Generous — two VLAN tags, IPv6 with extension headers twice, Geneve with options,
/// TCP options — and with `MAX_SEGMENTS` it bounds what one call may allocate to 1 MiB.
pub const MAX_HEADERS_LEN: usize = 2048;

/// Segments needed for `len` payload bytes in pieces of `size` (at least one, so a
/// header-only packet still goes out), refusing more than `MAX_SEGMENTS`.
pub(super) fn segment_count(len: usize, size: usize) -> Result<usize, GsoError> {
    if size == 0 {
        return Err(GsoError::SegmentSizeZero);
    }
    let count = len.div_ceil(size).max(1);
    if count > MAX_SEGMENTS {
        return Err(GsoError::TooManySegments(count));
    }
    Ok(count)
}
