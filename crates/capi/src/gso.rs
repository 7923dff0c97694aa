//! GSO: one super-packet and its virtio-net header in, segments out.
//!
//! An `ofl_gso` handle owns the reusable output of the engine (it grows to the largest
//! super-packet seen, then never allocates again). Three ways to take the segments:
//!
//! - `ofl_gso_segment` + `ofl_gso_segment_get`: zero-copy. Each segment is fresh
//!   header bytes (owned by the handle, valid until its next call) plus a range of the
//!   caller's frame for the payload: what a DPDK application attaches as a header mbuf
//!   chained to an indirect mbuf of the input, or what `writev` takes.
//! - `ofl_gso_segment_into`: copies each segment into one of the caller's buffers.
//! - `ofl_gso_segment_contig`: copies all segments back to back into one buffer and
//!   writes their start offsets.
//!
//! A super-packet held in several buffers (an mbuf chain) goes to
//! `ofl_gso_segment_chain` (ABI 1.2): the same segments as for the concatenated bytes,
//! zero-copy as above; `ofl_gso_segment_pieces` cuts a segment's payload range back
//! into pieces of the input chain (what a DPDK application attaches indirect mbufs to).
//!
//! `ofl_gso_segment_get_bulk` (ABI 1.3, [`crate::gso_bulk`]) reads every segment of the
//! last call at once, headers written straight into the caller's buffers (the header
//! mbufs of a DPDK application).

use engine::chain::{ChainFrame, ChainScratch};
use engine::gso::{self, GsoOutput, GsoParams, HeaderTargets, L4Checksum};
use engine::wire::{parse_frame_with, ParseOptions};

use crate::allocator::{read_sized, routed, Hook};
use crate::chain::{self, ofl_chain_piece, ofl_iovec, PieceBounds};
use crate::{
    bytes, bytes_mut, gso_status, guard, input, ofl_allocator, ofl_parse_opts, ofl_status,
    ofl_vnet_hdr, out, parse_status, virtio_status,
};

/// Compute each segment's full L4 checksum even when the header says NEEDS_CSUM
/// (otherwise NEEDS_CSUM leaves it partial, for a NIC or virtio peer to finish).
pub const OFL_GSO_FULL_CSUM: u32 = 1;
/// Keep every segment's inner IPv4 ID equal to the super-packet's (needs DF).
pub const OFL_GSO_FIXED_IP_ID: u32 = 2;
/// VXLAN/Geneve: compute the outer UDP checksum of each segment.
pub const OFL_GSO_OUTER_UDP_CSUM: u32 = 4;
/// VXLAN/Geneve: leave the outer UDP checksum zero. (Without either of the two
/// flags: none over outer IPv4, computed over outer IPv6, as Linux's VXLAN does.)
pub const OFL_GSO_NO_OUTER_UDP_CSUM: u32 = 8;
const KNOWN_FLAGS: u32 = 15;

/// The most segments one call produces.
pub const OFL_GSO_MAX_SEGMENTS: usize = 511;
const _: () = assert!(OFL_GSO_MAX_SEGMENTS == gso::MAX_SEGMENTS);

/// Opaque GSO handle (`ofl_gso_new` / `ofl_gso_free`). Not thread-safe: use one per
/// thread.
pub struct ofl_gso {
    parse: ParseOptions,
    pub(crate) out: GsoOutput,
    /// Segments of the last call that succeeded up to segmentation (0 after a failure).
    pub(crate) valid: usize,
    /// Where the output's memory comes from (`ofl_gso_new_ex`); None: the system.
    hook: Option<Hook>,
    /// Header bytes of chained input (`ofl_gso_segment_chain`), allocated by the first.
    scratch: ChainScratch,
    /// Where the last input's iovecs (one for a contiguous frame) start in the frame.
    bounds: PieceBounds,
}

impl ofl_gso {
    fn segments(&self) -> impl Iterator<Item = engine::gso::SegmentRef<'_>> + '_ {
        self.out.iter().take(self.valid)
    }
}

/// One produced segment, zero-copy: `header_len` bytes at `header` (owned by the
/// handle), then `payload_len` bytes of the input frame from `payload_offset`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ofl_gso_seg {
    pub header: *const u8,
    pub header_len: usize,
    pub payload_offset: usize,
    pub payload_len: usize,
    /// 1 when the L4 checksum was left partial: sum from `csum_start` to the end of
    /// the segment and store the complement at `csum_start + csum_offset`.
    pub csum_partial: u8,
    pub csum_start: u16,
    pub csum_offset: u16,
}

/// A caller buffer: `cap` bytes at `data`; `len` is set to the bytes written.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ofl_buf {
    pub data: *mut u8,
    pub cap: usize,
    pub len: usize,
}

/// Creates a GSO handle into `*gso`. `opts` may be NULL (default tunnel ports).
/// Returns `OFL_OK`, `OFL_ERR_NULL` or `OFL_ERR_INVALID_ARGUMENT`.
///
/// # Safety
/// `opts` NULL or valid; `gso` points to an `ofl_gso *`.
#[no_mangle]
pub unsafe extern "C" fn ofl_gso_new(opts: *const ofl_parse_opts, gso: *mut *mut ofl_gso) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let gso = unsafe { out(gso) }?;
        let parse = if opts.is_null() {
            ParseOptions::DEFAULT
        } else {
            unsafe { input(opts) }?.to_engine()?
        };
        *gso = create(parse, None)?;
        Ok(0)
    })
}

/// Parameters of `ofl_gso_new_ex` (ABI 1.2). Set `size` to `sizeof(ofl_gso_params)`
/// and zero what you do not use: zero `parse` is the default tunnel ports, a zero
/// `allocator` the system allocator.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ofl_gso_params {
    /// The caller's `sizeof(ofl_gso_params)`; at least `OFL_GSO_PARAMS_SIZE_1_2`.
    pub size: u32,
    pub parse: ofl_parse_opts,
    /// Where the handle's memory comes from: the handle itself and the segment output,
    /// which grows to the largest super-packet seen.
    pub allocator: ofl_allocator,
}

/// The smallest `ofl_gso_params.size` accepted: the struct as ABI 1.2 defines it.
pub const OFL_GSO_PARAMS_SIZE_1_2: usize = 48;
const _: () = assert!(OFL_GSO_PARAMS_SIZE_1_2 == core::mem::size_of::<ofl_gso_params>());

/// `ofl_gso_new` with a caller-sized parameter struct and an optional allocator hook
/// (ABI 1.2). Returns `OFL_OK`, `OFL_ERR_NULL`, `OFL_ERR_INVALID_ARGUMENT` (`size`
/// below `OFL_GSO_PARAMS_SIZE_1_2`, non-zero bytes past what this library knows, one
/// of `alloc`/`free` NULL, bad parse options) or `OFL_ERR_NO_MEMORY` (the allocator
/// returned NULL; nothing is kept, `*gso` is left unchanged).
///
/// # Safety
/// `params` readable for its `size` bytes; `gso` points to an `ofl_gso *`; the
/// allocator's functions callable with its `user` until the handle is freed.
#[no_mangle]
pub unsafe extern "C" fn ofl_gso_new_ex(params: *const ofl_gso_params, gso: *mut *mut ofl_gso) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let gso = unsafe { out(gso) }?;
        let params = unsafe { read_sized(params, OFL_GSO_PARAMS_SIZE_1_2) }?;
        let parse = params.parse.to_engine()?;
        let hook = params.allocator.to_hook()?;
        *gso = create(parse, hook)?;
        Ok(0)
    })
}

/// A new handle, allocated through `hook` when there is one.
fn create(parse: ParseOptions, hook: Option<Hook>) -> Result<*mut ofl_gso, ofl_status> {
    routed(
        hook,
        || {
            Ok(Box::into_raw(Box::new(ofl_gso {
                parse,
                out: GsoOutput::new(),
                valid: 0,
                hook,
                scratch: ChainScratch::new(),
                bounds: PieceBounds::new(),
            })))
        },
        |built| {
            if let Ok(handle) = built {
                // SAFETY: just made by Box::into_raw, never handed out.
                drop(unsafe { Box::from_raw(handle) });
            }
        },
    )
}

/// Frees a handle from `ofl_gso_new`; NULL is ignored.
///
/// # Safety
/// `gso` is NULL or a live handle, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn ofl_gso_free(gso: *mut ofl_gso) {
    if !gso.is_null() {
        // SAFETY: a pointer from Box::into_raw in ofl_gso_new, freed once.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            drop(unsafe { Box::from_raw(gso) })
        }));
    }
}

/// A super-packet as the caller gave it.
pub(crate) enum Input<'a> {
    Whole(&'a [u8]),
    Chain(&'a [&'a [u8]]),
}

pub(crate) fn run(
    gso: &mut ofl_gso,
    input: Input<'_>,
    vnet: &ofl_vnet_hdr,
    flags: u32,
    targets: Option<HeaderTargets<'_>>,
) -> Result<usize, ofl_status> {
    let outer = flags & (OFL_GSO_OUTER_UDP_CSUM | OFL_GSO_NO_OUTER_UDP_CSUM);
    if flags & !KNOWN_FLAGS != 0 || outer == OFL_GSO_OUTER_UDP_CSUM | OFL_GSO_NO_OUTER_UDP_CSUM {
        return Err(ofl_status::OFL_ERR_INVALID_ARGUMENT);
    }
    gso.valid = 0;
    // The output's growth and the chain scratch's first allocation go to the handle's
    // allocator hook, if it has one.
    let result = routed(gso.hook, || segment_input(gso, input, vnet, flags, outer, targets), |_| ());
    if result == Err(ofl_status::OFL_ERR_NO_MEMORY) {
        // The output (or scratch) grew partly from the system after the hook refused:
        // give that back now (each block goes where its tag says); the next call grows
        // it again.
        gso.out = GsoOutput::new();
        gso.scratch = ChainScratch::new();
    }
    gso.valid = result?;
    Ok(gso.valid)
}

/// Parses, validates and segments one input into the handle's output; returns the
/// segment count.
fn segment_input(
    gso: &mut ofl_gso,
    input: Input<'_>,
    vnet: &ofl_vnet_hdr,
    flags: u32,
    outer: u32,
    targets: Option<HeaderTargets<'_>>,
) -> Result<usize, ofl_status> {
    let ofl_gso { parse, out, scratch, bounds, .. } = gso;
    let frame = match input {
        Input::Whole(frame) => {
            bounds.set_whole(frame.len());
            ChainFrame::whole(frame)
        }
        Input::Chain(pieces) => {
            bounds.set_chain(pieces);
            scratch.view(pieces, parse)
        }
    };
    // The view holds every header byte (`engine::chain`): parsing and validation read
    // nothing else; payload sums come from the pieces.
    let view = frame.view();
    let layout = parse_frame_with(view, parse).map_err(|e| parse_status(&e))?;
    let hdr = vnet.to_engine()?;
    hdr.validate_parsed(view, &layout)
        .map_err(|e| virtio_status(&e))?;
    let mut params = GsoParams::from_virtio(&hdr, &layout).map_err(|e| gso_status(&e))?;
    if flags & OFL_GSO_FULL_CSUM != 0 {
        params.checksum = L4Checksum::Full;
    }
    params.fixed_ip_id = flags & OFL_GSO_FIXED_IP_ID != 0;
    if outer != 0 {
        params.outer_udp_checksum = outer == OFL_GSO_OUTER_UDP_CSUM;
    }
    match targets {
        Some(targets) => gso::segment_chain_into(&frame, &layout, &params, out, targets),
        None => gso::segment_chain(&frame, &layout, &params, out),
    }
    .map_err(|e| gso_status(&e))?;
    Ok(out.len())
}

/// Segments `frame` (`len` bytes, starting at the Ethernet header, without the virtio
/// header) as `*vnet` asks, after validating the header against the frame. Returns
/// the number of segments (then read them with `ofl_gso_segment_get`), or a negative
/// `OFL_ERR_PARSE_*` / `OFL_ERR_VNET_*` / `OFL_ERR_GSO_*` / general code. `flags`:
/// `OFL_GSO_*` bits. The frame must stay unchanged while its segments are used.
///
/// # Safety
/// `gso` a live handle; `frame` readable for `len` bytes; `vnet` valid.
#[no_mangle]
pub unsafe extern "C" fn ofl_gso_segment(
    gso: *mut ofl_gso,
    frame: *const u8,
    len: usize,
    vnet: *const ofl_vnet_hdr,
    flags: u32,
) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let gso = unsafe { out(gso) }?;
        let frame = unsafe { bytes(frame, len) }?;
        let vnet = unsafe { input(vnet) }?;
        run(gso, Input::Whole(frame), vnet, flags, None).map(|n| n as i32)
    })
}

/// `ofl_gso_segment` for a super-packet held in several buffers (e.g. an mbuf chain):
/// the frame is the concatenation of `iov[0..n_iov]`, Ethernet header first; an iovec
/// may be empty (`base` NULL allowed then) and headers may span iovecs. The segments,
/// their headers and checksums, and every refusal are those `ofl_gso_segment` gives
/// for the concatenated bytes; `ofl_gso_seg.payload_offset` counts from the start of
/// the concatenated frame, and `ofl_gso_segment_pieces` cuts a segment's payload into
/// pieces of the chain. Only header bytes are copied (into scratch allocated by the
/// handle's first chained call); software checksums are summed across iovec
/// boundaries of any length. Returns the number of segments or a negative code as
/// `ofl_gso_segment`, or `OFL_ERR_INVALID_ARGUMENT` for `n_iov` 0,
/// `OFL_ERR_TOO_MANY_IOVECS` above `OFL_CHAIN_MAX_IOV`, `OFL_ERR_NULL` for a NULL `iov`
/// or a NULL `base` with a non-zero `len`. The chain must stay unchanged while its
/// segments are used. Added in ABI 1.2.
///
/// # Safety
/// `gso` a live handle; `iov` readable for `n_iov` entries, each `base` readable for
/// its `len`; `vnet` valid.
#[no_mangle]
pub unsafe extern "C" fn ofl_gso_segment_chain(
    gso: *mut ofl_gso,
    iov: *const ofl_iovec,
    n_iov: usize,
    vnet: *const ofl_vnet_hdr,
    flags: u32,
) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let gso = unsafe { out(gso) }?;
        let mut slots = chain::slots();
        let pieces = unsafe { chain::pieces(iov, n_iov, &mut slots) }?;
        let vnet = unsafe { input(vnet) }?;
        run(gso, Input::Chain(pieces), vnet, flags, None).map(|n| n as i32)
    })
}

/// The payload of segment `index` of the last `ofl_gso_segment*` call as pieces of
/// that call's input: `iov[iov_index]` bytes `offset .. offset + len`, in order, empty
/// iovecs skipped (after `ofl_gso_segment` the frame is iovec 0). Writes up to
/// `n_pieces` entries to `pieces` and returns how many the payload has; with
/// `n_pieces` 0 (`pieces` may be NULL) only returns the count. Returns
/// `OFL_ERR_INVALID_ARGUMENT` when `index` is not below the count,
/// `OFL_ERR_BUFFER_TOO_SMALL` (nothing written) when `n_pieces` is non-zero and below
/// the payload's pieces. Added in ABI 1.2.
///
/// # Safety
/// `gso` a live handle; `pieces` NULL or writable for `n_pieces` entries.
#[no_mangle]
pub unsafe extern "C" fn ofl_gso_segment_pieces(
    gso: *const ofl_gso,
    index: usize,
    pieces: *mut ofl_chain_piece,
    n_pieces: usize,
) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let gso = unsafe { input(gso) }?;
        let payload = gso
            .out
            .segment(index)
            .filter(|_| index < gso.valid)
            .ok_or(ofl_status::OFL_ERR_INVALID_ARGUMENT)?
            .payload;
        let mut count = 0usize;
        gso.bounds.cut(payload.clone(), |_| count += 1);
        if n_pieces == 0 {
            return Ok(count as i32);
        }
        if pieces.is_null() {
            return Err(ofl_status::OFL_ERR_NULL);
        }
        if n_pieces < count {
            return Err(ofl_status::OFL_ERR_BUFFER_TOO_SMALL);
        }
        // SAFETY: non-NULL, `n_pieces` writable entries by contract.
        let pieces = unsafe { core::slice::from_raw_parts_mut(pieces, n_pieces) };
        let mut at = 0;
        gso.bounds.cut(payload, |piece| {
            pieces[at] = piece;
            at += 1;
        });
        Ok(count as i32)
    })
}

/// Segment `index` of the last `ofl_gso_segment*` call into `*seg`. Returns `OFL_OK`,
/// or `OFL_ERR_INVALID_ARGUMENT` when `index` is not below the count or the last call
/// was an `ofl_gso_segment_bulk` that wrote the headers into the caller's buffers (the
/// handle holds none then; that call's `segs` describe the segments).
///
/// # Safety
/// `gso` a live handle; `seg` points to an `ofl_gso_seg`.
#[no_mangle]
pub unsafe extern "C" fn ofl_gso_segment_get(
    gso: *const ofl_gso,
    index: usize,
    seg: *mut ofl_gso_seg,
) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let gso = unsafe { input(gso) }?;
        let seg = unsafe { out(seg) }?;
        let s = gso
            .out
            .segment(index)
            .filter(|_| index < gso.valid && !gso.out.headers_in_targets())
            .ok_or(ofl_status::OFL_ERR_INVALID_ARGUMENT)?;
        let partial = s.partial_checksum;
        *seg = ofl_gso_seg {
            header: s.header.as_ptr(),
            header_len: s.header.len(),
            payload_offset: s.payload.start,
            payload_len: s.payload.len(),
            csum_partial: u8::from(partial.is_some()),
            csum_start: partial.map_or(0, |p| p.start),
            csum_offset: partial.map_or(0, |p| p.offset),
        };
        Ok(0)
    })
}

/// Segments of the last call (0 after a failed call).
///
/// # Safety
/// `gso` NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn ofl_gso_count(gso: *const ofl_gso) -> i32 {
    // SAFETY: caller contract, NULL checked inside.
    guard(|| Ok(unsafe { input(gso) }?.valid as i32))
}

/// Bytes all segments of the last call take on the wire, into `*bytes`: the size
/// `ofl_gso_segment_contig` needs.
///
/// # Safety
/// `gso` a live handle; `bytes` points to a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn ofl_gso_total_len(gso: *const ofl_gso, bytes: *mut usize) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let gso = unsafe { input(gso) }?;
        // After `ofl_gso_segment_bulk` the headers are the caller's, all one length.
        let elsewhere = if gso.out.headers_in_targets() { gso.out.longest_header() } else { 0 };
        *unsafe { out(bytes) }? = gso.segments().map(|s| s.len() + elsewhere).sum();
        Ok(0)
    })
}

/// `ofl_gso_segment`, then copies segment i (headers and payload) into `bufs[i]` and
/// sets `bufs[i].len`. Returns the count, or `OFL_ERR_BUFFER_TOO_SMALL` (nothing
/// copied) when `n_bufs` is below it or a buffer is short, or `OFL_ERR_NULL`
/// (nothing copied) for a NULL `data`; `ofl_gso_count` and `ofl_gso_segment_get`
/// still describe the segments then.
///
/// # Safety
/// As `ofl_gso_segment`; `bufs` readable/writable for `n_bufs` entries, each `data`
/// writable for `cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn ofl_gso_segment_into(
    gso: *mut ofl_gso,
    frame: *const u8,
    len: usize,
    vnet: *const ofl_vnet_hdr,
    flags: u32,
    bufs: *mut ofl_buf,
    n_bufs: usize,
) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let gso = unsafe { out(gso) }?;
        let frame = unsafe { bytes(frame, len) }?;
        let vnet = unsafe { input(vnet) }?;
        if n_bufs > 0 && bufs.is_null() {
            return Err(ofl_status::OFL_ERR_NULL);
        }
        let n = run(gso, Input::Whole(frame), vnet, flags, None)?;
        if n > n_bufs {
            return Err(ofl_status::OFL_ERR_BUFFER_TOO_SMALL);
        }
        // SAFETY: non-NULL (n_bufs >= n >= 1) and `n_bufs` entries by contract.
        let bufs = unsafe { core::slice::from_raw_parts_mut(bufs, n) };
        if bufs.iter().any(|b| b.data.is_null() && b.cap > 0) {
            return Err(ofl_status::OFL_ERR_NULL);
        }
        if gso
            .segments()
            .zip(bufs.iter())
            .any(|(s, b)| b.cap < s.len())
        {
            return Err(ofl_status::OFL_ERR_BUFFER_TOO_SMALL);
        }
        for (s, b) in gso.segments().zip(bufs.iter_mut()) {
            // SAFETY: `cap` writable bytes by contract.
            let dst = unsafe { bytes_mut(b.data, b.cap) }?;
            let (h, p) = dst.split_at_mut(s.header.len());
            h.copy_from_slice(s.header);
            p[..s.payload.len()].copy_from_slice(s.payload_slice(frame));
            b.len = s.len();
        }
        Ok(n as i32)
    })
}

/// `ofl_gso_segment`, then copies every segment back to back into `buf` (`cap`
/// bytes): segment i is `buf[offsets[i] .. offsets[i + 1]]`, so `offsets` needs
/// count + 1 entries (`n_offsets`). Returns the count, or `OFL_ERR_BUFFER_TOO_SMALL`
/// (nothing copied; `ofl_gso_total_len` gives the bytes needed).
///
/// # Safety
/// As `ofl_gso_segment`; `buf` writable for `cap` bytes; `offsets` for `n_offsets`.
#[no_mangle]
pub unsafe extern "C" fn ofl_gso_segment_contig(
    gso: *mut ofl_gso,
    frame: *const u8,
    len: usize,
    vnet: *const ofl_vnet_hdr,
    flags: u32,
    buf: *mut u8,
    cap: usize,
    offsets: *mut usize,
    n_offsets: usize,
) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let gso = unsafe { out(gso) }?;
        let frame = unsafe { bytes(frame, len) }?;
        let vnet = unsafe { input(vnet) }?;
        if (cap > 0 && buf.is_null()) || (n_offsets > 0 && offsets.is_null()) {
            return Err(ofl_status::OFL_ERR_NULL);
        }
        let n = run(gso, Input::Whole(frame), vnet, flags, None)?;
        let total: usize = gso.segments().map(|s| s.len()).sum();
        if n + 1 > n_offsets || total > cap {
            return Err(ofl_status::OFL_ERR_BUFFER_TOO_SMALL);
        }
        // SAFETY: non-NULL (checked) and of the promised sizes.
        let buf = unsafe { bytes_mut(buf, cap) }?;
        let offsets = unsafe { core::slice::from_raw_parts_mut(offsets, n_offsets) };
        let mut at = 0;
        for (i, s) in gso.segments().enumerate() {
            offsets[i] = at;
            buf[at..at + s.header.len()].copy_from_slice(s.header);
            at += s.header.len();
            buf[at..at + s.payload.len()].copy_from_slice(s.payload_slice(frame));
            at += s.payload.len();
        }
        offsets[n] = at;
        Ok(n as i32)
    })
}
