//! Generic segmentation offload in software: one super-packet in, segments out.
//!
//! Each segment is *fresh header bytes* plus a *range of the input frame* for its
//! payload, so a caller can `writev` it without the payload ever being copied:
//!
//! ```ignore
//! let layout = wire::parse::parse_frame(&frame)?;
//! let params = GsoParams::from_virtio(&vnet_header, &layout)?;
//! gso::segment(&frame, &layout, &params, &mut out)?;
//! for seg in out.iter() {
//!     writev(fd, &[seg.header, seg.payload_slice(&frame)]);
//! }
//! ```
//!
//! Kinds: TCP over IPv4/IPv6 (`GsoKind::Tcp`), UDP segmentation where every segment is
//! a datagram of its own (`GsoKind::Udp`, Linux's USO / `UDP_L4`), and IPv4
//! fragmentation of one datagram (`GsoKind::UdpFragment`, UFO). Each also inside VXLAN,
//! Geneve or GRE over IPv4/IPv6, where the outer headers are fixed up per segment too.
//!
//! The rules follow the Linux kernel (`tcp_gso_segment`, `inet_gso_segment`,
//! `__udp_gso_segment`, `udp4_ufo_fragment`, `skb_udp_tunnel_segment`,
//! `gre_gso_segment`); `docs/engine.md` lists them and where this module differs.
//!
//! Cost: the headers are copied from the frame once per segment and only the fields
//! that differ are rewritten; every checksum is built from sums computed once per
//! super-packet, so the only per-segment pass over payload bytes is the L4 checksum
//! with `L4Checksum::Full`. Nothing allocates once the `GsoOutput` has grown to the
//! largest super-packet seen.

mod be;
mod error;
mod fast;
mod fragment;
mod ip;
mod limits;
mod output;
mod params;
mod plan;
mod tcp;
mod tcp_fields;
mod tunnel;
mod udp;
mod v6ext;

#[cfg(test)]
mod tests;

pub use error::GsoError;
pub use limits::{MAX_HEADERS_LEN, MAX_SEGMENTS};
pub use output::{GsoOutput, HeaderTargets, PartialChecksum, SegmentRef};
pub use params::{GsoKind, GsoParams, L4Checksum};

use crate::chain::{ChainFrame, Contiguous, Sums};
use crate::wire::layout::Layout;
use plan::Plan;

/// Cuts the super-packet `frame` (parsed into `layout`) into segments as `params`
/// says, replacing the contents of `out`. A payload that fits in one segment gives one
/// segment (with headers and checksums rebuilt as for any other).
///
/// On error `out` is left empty.
pub fn segment(
    frame: &[u8],
    layout: &Layout,
    params: &GsoParams,
    out: &mut GsoOutput,
) -> Result<(), GsoError> {
    segment_from(frame, Contiguous, layout, params, out, None)
}

/// [`segment`] for a frame held in several buffers (`chain::ChainScratch::view`),
/// `layout` parsed from `chain.view()`. The segments are those of the concatenated
/// frame: same headers and checksums, payload ranges in the concatenated frame's
/// offsets (map them to the pieces by the pieces' lengths).
pub fn segment_chain(
    chain: &ChainFrame<'_>,
    layout: &Layout,
    params: &GsoParams,
    out: &mut GsoOutput,
) -> Result<(), GsoError> {
    segment_from(chain.view(), chain.payload(), layout, params, out, None)
}

/// [`segment_chain`] (or [`segment`], with `ChainFrame::whole`) writing the headers
/// straight into the caller's `targets` when every segment's header has one length
/// that fits them and there is a target per segment (TCP, bare or in a UDP tunnel:
/// the fast path); `out.headers_in_targets()` says whether they went there. Otherwise
/// the headers are in `out` as `segment_chain` leaves them, and no target was
/// written. The segments are the same either way.
pub fn segment_chain_into(
    chain: &ChainFrame<'_>,
    layout: &Layout,
    params: &GsoParams,
    out: &mut GsoOutput,
    targets: HeaderTargets<'_>,
) -> Result<(), GsoError> {
    segment_from(chain.view(), chain.payload(), layout, params, out, Some(targets))
}

/// `segment` with the payload sums read from `payload` (the frame itself, or the
/// pieces of a chain whose headers `frame` holds), headers into `targets` where the
/// fast path can.
#[inline(always)]
fn segment_from(
    frame: &[u8],
    payload: impl Sums,
    layout: &Layout,
    params: &GsoParams,
    out: &mut GsoOutput,
    targets: Option<HeaderTargets<'_>>,
) -> Result<(), GsoError> {
    out.clear();
    let plan = Plan::new(frame, layout, params)?;
    let result = match params.kind {
        GsoKind::Tcp => tcp::segment(frame, payload, &plan, params, out, targets),
        GsoKind::Udp => udp::segment(frame, payload, &plan, params, out),
        GsoKind::UdpFragment => fragment::segment(frame, payload, &plan, params, out),
    };
    if result.is_err() {
        out.clear();
    }
    result
}
