//! The outer headers of a VXLAN / Geneve / GRE super-packet: per segment the outer IP
//! lengths, ID and checksum, the outer UDP length and checksum, the GRE checksum.
//!
//! The checksums that cover the inner packet (outer UDP, GRE) never re-read the payload:
//! they need only the sum of the bytes from `Tail::start` to the end of the segment,
//! which each segmenter already knows (for TCP and USO it is the complement of the
//! inner pseudo-header sum, because the finished inner checksum makes the inner
//! transport packet sum to exactly that — Linux calls this local checksum offload).

use crate::checksum;
use crate::wire::layout::{TunnelKind, TunnelLayer};

use super::be;
use super::ip::IpFields;

/// UDP field offsets from the start of the UDP header.
pub(super) mod udp {
    pub const LENGTH: usize = 4;
    pub const CHECKSUM: usize = 6;
    pub const HEADER_LEN: usize = 8;
}

/// GRE (RFC 2784/2890) flag bits of the first byte and the checksum's place.
pub(super) mod gre {
    pub const FLAG_CHECKSUM: u8 = 0x80;
    pub const FLAG_SEQUENCE: u8 = 0x10;
    pub const CHECKSUM: usize = 4;
    /// Flags, protocol, and the checksum + reserved word when C is set.
    pub const LEN_WITH_CHECKSUM: usize = 8;
}

/// The sum of a segment's bytes from `start` (an offset into the segment) to its end,
/// as they will be once every checksum is finished.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tail {
    pub start: usize,
    pub sum: u32,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Encap {
    /// VXLAN / Geneve: the outer UDP header at `offset`; `checksum_seed` is the outer
    /// pseudo-header sum without the length, present when the checksum is computed.
    Udp {
        offset: usize,
        checksum_seed: Option<u32>,
    },
    /// GRE at `offset`; `checksum` when the C flag is set.
    Gre { offset: usize, checksum: bool },
}

/// Everything outside the inner packet that changes per segment.
#[derive(Debug, Clone, Copy)]
pub(super) struct TunnelFields {
    pub outer_ip: IpFields,
    pub encap: Encap,
}

impl TunnelFields {
    /// `outer_pseudo` gives the outer pseudo-header sum for UDP without length, asked
    /// only for a UDP tunnel whose checksum is computed (off by default for VXLAN); the
    /// caller has checked every offset of `tunnel` against the frame.
    pub fn new(
        frame: &[u8],
        tunnel: &TunnelLayer,
        outer_udp_checksum: bool,
        outer_pseudo: impl FnOnce() -> u32,
    ) -> Self {
        let encap = match tunnel.kind {
            TunnelKind::Vxlan | TunnelKind::Geneve => Encap::Udp {
                offset: tunnel.outer.l4_offset,
                checksum_seed: outer_udp_checksum.then(outer_pseudo),
            },
            TunnelKind::Gre => Encap::Gre {
                offset: tunnel.offset,
                checksum: frame[tunnel.offset] & gre::FLAG_CHECKSUM != 0,
            },
        };
        TunnelFields {
            outer_ip: IpFields::new(frame, &tunnel.outer),
            encap,
        }
    }

    /// Whether `patch` needs a meaningful `Tail` (otherwise any sum will do).
    pub fn needs_tail_sum(&self) -> bool {
        match self.encap {
            Encap::Udp { checksum_seed, .. } => checksum_seed.is_some(),
            Encap::Gre { checksum, .. } => checksum,
        }
    }

    /// Patches the outer headers of segment `index`, whose inner headers are final.
    #[inline(always)]
    pub fn patch(&self, header: &mut [u8], wire_len: usize, index: usize, tail: Tail) {
        match self.encap {
            Encap::Udp {
                offset,
                checksum_seed,
            } => {
                let length = (wire_len - offset) as u16;
                be::put16(header, offset + udp::LENGTH, length);
                be::put16(header, offset + udp::CHECKSUM, 0);
                if let Some(seed) = checksum_seed {
                    let seed = seed + u32::from(length);
                    let check = covering_checksum(header, offset, tail, seed);
                    // Zero means "no checksum" in UDP; its one's-complement twin is sent.
                    let check = if check == 0 { 0xffff } else { check };
                    be::put16(header, offset + udp::CHECKSUM, check);
                }
            }
            Encap::Gre { offset, checksum } => {
                if checksum {
                    be::put16(header, offset + gre::CHECKSUM, 0);
                    let check = covering_checksum(header, offset, tail, 0);
                    be::put16(header, offset + gre::CHECKSUM, check);
                }
            }
        }
        // Linux increments the outer IPv4 ID per segment whatever the inner does.
        self.outer_ip.patch(header, wire_len, index as u16, None);
    }
}

/// Checksum of the header bytes from `from` up to the tail plus the tail itself.
#[inline]
fn covering_checksum(header: &[u8], from: usize, tail: Tail, seed: u32) -> u16 {
    let head = checksum::sum(&header[from..tail.start], seed);
    checksum::finish(checksum::combine(head, tail.sum, tail.start - from))
}
