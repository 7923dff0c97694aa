//! Every segment of a GSO call at once: descriptors into a caller array, headers
//! into the caller's buffers.
//!
//! `ofl_gso_segment_get` costs a call per segment and leaves the header in the handle,
//! so an adopter on DPDK's mbufs copies it again into each header mbuf.
//! `ofl_gso_segment_get_bulk` (ABI 1.3) fills all descriptors of the last call and
//! copies each header into the buffer the caller names for it (the data room of a
//! header mbuf it allocated in bulk). `ofl_gso_segment_bulk` (ABI 1.4) segments and
//! does that in one call, and where the engine's fast path takes the super-packet (TCP,
//! bare or in a UDP tunnel) it writes each header straight into the caller's buffer:
//! no copy in the handle, no walk over it afterwards.

use engine::gso::HeaderTargets;

use crate::chain::{self, ofl_iovec};
use crate::gso::{ofl_gso, ofl_gso_seg, run, Input};
use crate::{guard, input, ofl_status, ofl_vnet_hdr, out};

/// Segments the super-packet `iov[0..n_iov]` (as `ofl_gso_segment_chain`; one iovec
/// for a frame in one buffer) as `*vnet` and `flags` ask, and writes every segment's
/// descriptor into `segs[i]` and its header into `headers[i]` (`header_cap` bytes
/// each; `segs[i].header` is `headers[i]`), as `ofl_gso_segment` followed by
/// `ofl_gso_segment_get_bulk(gso, 0, segs, n_segs, headers, header_cap)` would, in one
/// call. Returns the segment count, or a negative code as `ofl_gso_segment_chain`, or:
/// `OFL_ERR_NULL` for a NULL `segs` or `headers` or a NULL buffer among the first
/// `n_segs`; `OFL_ERR_BUFFER_TOO_SMALL` when `n_segs` is below the count or
/// `header_cap` below the longest header (no buffer written then; `ofl_gso_count` and
/// `ofl_gso_segment_get` describe the segments). After a call that returned a count,
/// the headers are only in the caller's buffers: `ofl_gso_count`,
/// `ofl_gso_total_len` and `ofl_gso_segment_pieces` describe the segments, while
/// `ofl_gso_segment_get` and `ofl_gso_segment_get_bulk` return
/// `OFL_ERR_INVALID_ARGUMENT`. Added in ABI 1.4.
///
/// # Safety
/// `gso` a live handle; `iov` readable for `n_iov` entries, each `base` readable for
/// its `len`; `vnet` valid; `segs` writable for `n_segs` entries; `headers` readable
/// for `n_segs` pointers, each writable for `header_cap` bytes and not overlapping
/// `segs`, another buffer, the input or the handle.
#[no_mangle]
pub unsafe extern "C" fn ofl_gso_segment_bulk(
    gso: *mut ofl_gso,
    iov: *const ofl_iovec,
    n_iov: usize,
    vnet: *const ofl_vnet_hdr,
    flags: u32,
    segs: *mut ofl_gso_seg,
    n_segs: usize,
    headers: *const *mut u8,
    header_cap: usize,
) -> i32 {
    guard(|| {
        // SAFETY (all): caller contract, NULL checked inside or right here.
        let gso = unsafe { out(gso) }?;
        let mut slots = chain::slots();
        let pieces = unsafe { chain::pieces(iov, n_iov, &mut slots) }?;
        let vnet = unsafe { input(vnet) }?;
        if segs.is_null() || headers.is_null() {
            return Err(ofl_status::OFL_ERR_NULL);
        }
        // SAFETY: non-NULL, `n_segs` readable pointers by contract.
        let bufs = unsafe { core::slice::from_raw_parts(headers, n_segs) };
        if bufs.iter().any(|b| b.is_null()) {
            return Err(ofl_status::OFL_ERR_NULL);
        }
        // SAFETY: each buffer `header_cap` writable bytes, apart from all else the
        // call touches (caller contract).
        let targets = unsafe { HeaderTargets::new(bufs, header_cap) };
        let n = run(gso, Input::Chain(pieces), vnet, flags, Some(targets))?;
        if n > n_segs {
            return Err(ofl_status::OFL_ERR_BUFFER_TOO_SMALL);
        }
        // SAFETY: non-NULL, `n_segs >= n` writable entries by contract.
        let segs = unsafe { core::slice::from_raw_parts_mut(segs, n) };
        if gso.out.headers_in_targets() {
            describe_in_targets(gso, segs, &bufs[..n]);
        } else {
            // A shape the fast path does not take: the headers are in the handle.
            check_targets(gso, &bufs[..n], header_cap)?;
            fill(gso, 0, segs, Some(&bufs[..n]));
        }
        Ok(n as i32)
    })
}

/// The descriptors of segments whose headers the engine wrote into `targets`, all
/// one length.
fn describe_in_targets(gso: &ofl_gso, segs: &mut [ofl_gso_seg], targets: &[*mut u8]) {
    let partial = gso.out.partial_checksum();
    let (csum_partial, csum_start, csum_offset) =
        partial.map_or((0, 0, 0), |p| (1, p.start, p.offset));
    let header_len = gso.out.longest_header();
    for ((slot, payload), &header) in segs.iter_mut().zip(gso.out.payloads()).zip(targets) {
        *slot = ofl_gso_seg {
            header: header.cast_const(),
            header_len,
            payload_offset: payload.start,
            payload_len: payload.end - payload.start,
            csum_partial,
            csum_start,
            csum_offset,
        };
    }
}

/// Segments `first ..` of the last `ofl_gso_segment*` call into `segs` (at most
/// `n_segs` of them); returns how many were written (0 when `first` is the count).
/// With `headers` NULL each `segs[i].header` points into the handle, as
/// `ofl_gso_segment_get` gives it; otherwise `headers` holds `n_segs` buffers of
/// `header_cap` bytes each, segment `first + i`'s header is copied into `headers[i]`
/// and `segs[i].header` is `headers[i]`. Returns `OFL_ERR_INVALID_ARGUMENT` when
/// `first` is above the count or the last call was an `ofl_gso_segment_bulk` that
/// left the headers in the caller's buffers, `OFL_ERR_NULL` for a NULL `segs` (with `n_segs` > 0) or
/// a NULL buffer among the ones used, `OFL_ERR_BUFFER_TOO_SMALL` when `header_cap` is
/// below the longest header of the call's segments; nothing is written then. Added in
/// ABI 1.3.
///
/// # Safety
/// `gso` a live handle; `segs` NULL or writable for `n_segs` entries; `headers` NULL or
/// readable for `n_segs` pointers, each used one writable for `header_cap` bytes and
/// not overlapping `segs` or another.
#[no_mangle]
pub unsafe extern "C" fn ofl_gso_segment_get_bulk(
    gso: *const ofl_gso,
    first: usize,
    segs: *mut ofl_gso_seg,
    n_segs: usize,
    headers: *const *mut u8,
    header_cap: usize,
) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let gso = unsafe { input(gso) }?;
        if gso.out.headers_in_targets() {
            return Err(ofl_status::OFL_ERR_INVALID_ARGUMENT);
        }
        let available = gso.valid.checked_sub(first).ok_or(ofl_status::OFL_ERR_INVALID_ARGUMENT)?;
        let n = available.min(n_segs);
        if n == 0 {
            return Ok(0);
        }
        if segs.is_null() {
            return Err(ofl_status::OFL_ERR_NULL);
        }
        // SAFETY: non-NULL, `n_segs >= n` writable entries by contract.
        let segs = unsafe { core::slice::from_raw_parts_mut(segs, n) };
        let targets = if headers.is_null() {
            None
        } else {
            // SAFETY: non-NULL, `n_segs >= n` readable pointers by contract.
            let targets = unsafe { core::slice::from_raw_parts(headers, n) };
            check_targets(gso, targets, header_cap)?;
            Some(targets)
        };
        fill(gso, first, segs, targets);
        Ok(n as i32)
    })
}

/// Every buffer the call will write is non-NULL and holds the longest header of the
/// call: checked before the first byte is written, so a refused call leaves the
/// caller's memory as it was.
fn check_targets(gso: &ofl_gso, targets: &[*mut u8], cap: usize) -> Result<(), ofl_status> {
    if targets.iter().any(|t| t.is_null()) {
        return Err(ofl_status::OFL_ERR_NULL);
    }
    if gso.out.longest_header() > cap {
        return Err(ofl_status::OFL_ERR_BUFFER_TOO_SMALL);
    }
    Ok(())
}

/// Writes the descriptors (and, with `targets`, the headers) of segments `first ..
/// first + segs.len()`, all of which exist.
fn fill(gso: &ofl_gso, first: usize, segs: &mut [ofl_gso_seg], targets: Option<&[*mut u8]>) {
    let partial = gso.out.partial_checksum();
    let (csum_partial, csum_start, csum_offset) =
        partial.map_or((0, 0, 0), |p| (1, p.start, p.offset));
    let describe = |s: &engine::gso::SegmentRef<'_>, header: *const u8| ofl_gso_seg {
        header,
        header_len: s.header.len(),
        payload_offset: s.payload.start,
        payload_len: s.payload.len(),
        csum_partial,
        csum_start,
        csum_offset,
    };
    let made = gso.out.iter().skip(first);
    match targets {
        Some(targets) => {
            for ((slot, s), &dst) in segs.iter_mut().zip(made).zip(targets) {
                // SAFETY: `dst` is non-NULL and holds `header_cap >= header.len()`
                // writable bytes (check_targets), apart from the handle's memory.
                unsafe { copy_header(dst, s.header) };
                *slot = describe(&s, dst.cast_const());
            }
        }
        None => {
            for (slot, s) in segs.iter_mut().zip(made) {
                *slot = describe(&s, s.header.as_ptr());
            }
        }
    }
}

/// Copies a header (14 to a few hundred bytes) with fixed-size moves, the last one
/// overlapping the one before, instead of a `memcpy` call of unknown length.
///
/// # Safety
/// `dst` writable for `src.len()` bytes and not overlapping `src`.
#[inline(always)]
unsafe fn copy_header(dst: *mut u8, src: &[u8]) {
    let len = src.len();
    let s = src.as_ptr();
    // SAFETY (every copy): `at + n <= len` for each, both sides hold `len` bytes.
    let copy = |at: usize, n: usize| unsafe { core::ptr::copy_nonoverlapping(s.add(at), dst.add(at), n) };
    if len > 64 {
        let mut at = 0;
        while at + 32 < len {
            copy(at, 32);
            at += 32;
        }
        copy(len - 32, 32);
    } else if len >= 32 {
        // The common case (Ethernet + IPv4/IPv6 + TCP/UDP): two moves, no loop.
        copy(0, 32);
        copy(len - 32, 32);
    } else if len >= 16 {
        copy(0, 16);
        copy(len - 16, 16);
    } else {
        copy(0, len);
    }
}
