//! Frames held in several buffers (ABI 1.2): what `ofl_gro_push_chain` and
//! `ofl_gso_segment_chain` take, and what `ofl_gso_segment_pieces` gives back.
//!
//! A DPDK application passes an mbuf chain as one `ofl_iovec` per segment
//! (`rte_pktmbuf_mtod(m, uint8_t *)`, `m->data_len`); the frame is their concatenation.
//! Results are those of the contiguous call on the concatenated bytes; offsets in them
//! (`ofl_gro_part.payload_offset`, `ofl_gso_seg.payload_offset`) count from the start
//! of the concatenated frame. Only header bytes are copied (the engine's
//! `chain.rs` says when a whole frame is).

use core::mem::MaybeUninit;

use crate::ofl_status;

/// One piece of a frame held in several buffers (a chain segment): `len` bytes at
/// `base`. `base` may be NULL when `len` is 0. Added in ABI 1.2.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ofl_iovec {
    pub base: *const u8,
    pub len: usize,
}

/// Part of a GSO segment's payload in the input chain: `len` bytes of
/// `iov[iov_index]` from `offset` (`ofl_gso_segment_pieces`). Added in ABI 1.2.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ofl_chain_piece {
    pub iov_index: u32,
    pub offset: u32,
    pub len: u32,
}

/// The most iovecs one chained frame may have (`OFL_ERR_TOO_MANY_IOVECS` above). A
/// 64 KiB super-packet in 512-byte segments fits. Added in ABI 1.2.
pub const OFL_CHAIN_MAX_IOV: usize = 128;

/// Room for the slices of one chain, on the caller's stack (no allocation), left
/// uninitialised: only the `n_iov` entries used are written, not 2 KiB per call.
pub(crate) type Slots<'a> = [MaybeUninit<&'a [u8]>; OFL_CHAIN_MAX_IOV];

pub(crate) const fn slots<'a>() -> Slots<'a> {
    [const { MaybeUninit::uninit() }; OFL_CHAIN_MAX_IOV]
}

/// The pieces of a C chain as Rust slices, written into `slots`. Refuses `n_iov` 0 or
/// above `OFL_CHAIN_MAX_IOV`, a NULL `iov`, and a NULL `base` with a non-zero `len`.
///
/// # Safety
/// `iov` NULL or readable for `n_iov` entries, each `base` readable for its `len`.
pub(crate) unsafe fn pieces<'a>(
    iov: *const ofl_iovec,
    n_iov: usize,
    slots: &'a mut Slots<'a>,
) -> Result<&'a [&'a [u8]], ofl_status> {
    if n_iov == 0 {
        return Err(ofl_status::OFL_ERR_INVALID_ARGUMENT);
    }
    if n_iov > OFL_CHAIN_MAX_IOV {
        return Err(ofl_status::OFL_ERR_TOO_MANY_IOVECS);
    }
    if iov.is_null() {
        return Err(ofl_status::OFL_ERR_NULL);
    }
    // SAFETY: non-NULL, `n_iov` entries by contract.
    let iov = unsafe { core::slice::from_raw_parts(iov, n_iov) };
    let mut total = 0usize;
    for (slot, v) in slots.iter_mut().zip(iov) {
        // SAFETY: `len` readable bytes at `base` by contract; NULL checked inside.
        slot.write(unsafe { crate::bytes(v.base, v.len) }?);
        total = total.checked_add(v.len).ok_or(ofl_status::OFL_ERR_INVALID_ARGUMENT)?;
    }
    if total > isize::MAX as usize {
        return Err(ofl_status::OFL_ERR_INVALID_ARGUMENT);
    }
    let written = &slots[..n_iov];
    // SAFETY: the loop wrote each of the first `n_iov` slots (`iov` has `n_iov` entries,
    // at most `OFL_CHAIN_MAX_IOV`), and `MaybeUninit<T>` has `T`'s layout.
    Ok(unsafe { &*(core::ptr::from_ref(written) as *const [&'a [u8]]) })
}

/// Where each iovec of the last GSO input starts in the concatenated frame, to cut a
/// segment's payload range back into pieces. A contiguous input is one piece.
#[derive(Debug, Clone)]
pub(crate) struct PieceBounds {
    /// `starts[i]..starts[i + 1]` is iovec `i`; `n + 1` entries used.
    starts: [usize; OFL_CHAIN_MAX_IOV + 1],
    n: usize,
}

impl PieceBounds {
    pub(crate) fn new() -> Self {
        PieceBounds {
            starts: [0; OFL_CHAIN_MAX_IOV + 1],
            n: 0,
        }
    }

    pub(crate) fn set_whole(&mut self, len: usize) {
        self.starts[1] = len;
        self.n = 1;
    }

    pub(crate) fn set_chain(&mut self, pieces: &[&[u8]]) {
        let mut at = 0;
        for (i, piece) in pieces.iter().enumerate() {
            self.starts[i] = at;
            at += piece.len();
        }
        self.starts[pieces.len()] = at;
        self.n = pieces.len();
    }

    /// The non-empty pieces of the frame's bytes `range`, in order, each passed to `f`.
    pub(crate) fn cut(&self, range: core::ops::Range<usize>, mut f: impl FnMut(ofl_chain_piece)) {
        for i in 0..self.n {
            let (start, end) = (self.starts[i], self.starts[i + 1]);
            let (from, to) = (range.start.max(start), range.end.min(end));
            if from < to {
                // Offsets lie inside the outermost IP packet (under 64 KiB + headers).
                f(ofl_chain_piece {
                    iov_index: i as u32,
                    offset: (from - start) as u32,
                    len: (to - from) as u32,
                });
            }
        }
    }
}
