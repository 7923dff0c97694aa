//! The outer part of VXLAN and Geneve frames (kernel `udp_gro_receive` with a tunnel
//! socket, `vxlan_gro_receive`, `geneve_gro_receive`).
//!
//! A tunnelled flow's identity includes the outer addresses and ports, the whole
//! VXLAN/Geneve header (VNI, flags, options) and the inner Ethernet header (see
//! `flow.rs`); here are the rules that refuse a frame on its own, and the outer IP
//! facts the run rules compare (TTL, TOS, DF, ID as for the inner header).

use super::ip::{self, l4_checksum_ok, IpFacts};
use super::reason::Reason;
use crate::chain::Sums;
use crate::wire::layout::{L4Proto, TunnelKind, TunnelLayer};
use crate::wire::{GeneveHeader, UdpPacket};

/// The outer headers of a tunnelled frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OuterFacts {
    pub ip: IpFacts,
    /// The outer UDP checksum field (0 = none).
    pub udp_checksum: u16,
}

const UDP_PROTOCOL: u8 = 17;

/// Reads the outer headers, refusing what the kernel does not coalesce: GRE (no virtio
/// GSO type can carry it), Geneve OAM frames, outer IPv4 options or fragments, and an
/// outer UDP checksum that does not verify (unless `validated`).
pub(crate) fn read(
    frame: &[u8],
    payload: impl Sums,
    tunnel: &TunnelLayer,
    validated: bool,
) -> Result<OuterFacts, Reason> {
    match tunnel.kind {
        TunnelKind::Gre => return Err(Reason::TunnelUnsupported),
        TunnelKind::Geneve => {
            let header = frame
                .get(tunnel.offset..tunnel.offset + tunnel.header_len)
                .ok_or(Reason::HeaderTooLong)?;
            if GeneveHeader::new_unchecked(header).is_oam() {
                return Err(Reason::TunnelUnsupported);
            }
        }
        TunnelKind::Vxlan => {}
    }
    if tunnel.outer.l4 != L4Proto::Udp {
        return Err(Reason::TunnelUnsupported);
    }
    let ip = ip::read(frame, &tunnel.outer)?;
    let l4 = tunnel.outer.l4_offset;
    let udp = frame
        .get(l4..l4 + tunnel.outer.l4_header_len)
        .ok_or(Reason::HeaderTooLong)?;
    let udp_checksum = UdpPacket::new_unchecked(udp).checksum();
    if !validated && udp_checksum != 0 && !l4_checksum_ok(frame, payload, &tunnel.outer, UDP_PROTOCOL) {
        return Err(Reason::BadL4Checksum);
    }
    Ok(OuterFacts { ip, udp_checksum })
}
