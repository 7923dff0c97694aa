//! The UDP-tunnel GSO part of the virtio-net header (virtio 1.4
//! `VIRTIO_NET_F_{HOST,GUEST}_UDP_TUNNEL_GSO[_CSUM]`; Linux 6.17+
//! `struct virtio_net_hdr_v1_hash_tunnel`, which TAP uses with `TUN_F_UDP_TUNNEL_GSO`).
//!
//! The 24-byte header is the v1 header, the hash fields (value and report, unused
//! here) and two offsets: the outer UDP header (`outer_th_offset`) and the inner IP
//! header (`inner_nh_offset`). `gso_type` names the inner segmentation and ORs in the
//! outer IP version; a flag asks for the outer UDP checksum per segment.
//!
//! Rules (Linux `virtio_net_hdr_tnl_to_skb` is the floor): one outer IP version, never
//! both; the inner GSO type is TCPv4, TCPv6 or USO (not none, not UFO); NEEDS_CSUM;
//! the outer-checksum flag only with tunnel GSO. Beyond the kernel's minimum-distance
//! checks on the offsets, both must name exactly what the parsed frame has there: a
//! VXLAN or Geneve tunnel over the named IP version, its UDP header and its inner IP
//! header.

use super::error::VirtioError;
use super::fields::GsoType;
use crate::wire::{IpVersion, Layout, TunnelKind};

/// Length of the tunnel form of the header.
pub const HEADER_LEN_TUNNEL: usize = 24;

/// `VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4` / `_IPV6`: ORed into `gso_type`.
pub(crate) const GSO_UDP_TUNNEL_IPV4: u8 = 0x20;
pub(crate) const GSO_UDP_TUNNEL_IPV6: u8 = 0x40;
/// `VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM`: fill in the outer UDP checksum per segment.
pub(crate) const F_UDP_TUNNEL_CSUM: u8 = 0x08;
/// Where `outer_th_offset` and `inner_nh_offset` sit in the 24-byte header.
const OUTER_TH: usize = 20;
const INNER_NH: usize = 22;
const UDP_CHECKSUM_OFFSET: usize = 6;

/// What the tunnel fields of a header say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TunnelGso {
    /// The outer IP header is IPv6 (`_IPV6`), else IPv4.
    pub outer_ipv6: bool,
    /// The outer UDP checksum is to be computed per segment (`F_UDP_TUNNEL_CSUM`).
    pub outer_checksum: bool,
    /// Offset of the outer UDP header.
    pub outer_th: u16,
    /// Offset of the inner IP header.
    pub inner_nh: u16,
}

impl TunnelGso {
    /// The fields describing a VXLAN or Geneve frame with `layout`; `bytes` (the frame,
    /// or at least its headers) must reach the outer UDP checksum. The outer checksum is
    /// asked for when the frame carries one (a GRO'd header holds its pseudo-header
    /// seed there). `None` for frames without a UDP tunnel.
    pub fn describe(layout: &Layout, bytes: &[u8]) -> Option<TunnelGso> {
        let tunnel = layout.tunnel?;
        if !matches!(tunnel.kind, TunnelKind::Vxlan | TunnelKind::Geneve) {
            return None;
        }
        let checksum = tunnel.outer.l4_offset + UDP_CHECKSUM_OFFSET;
        Some(TunnelGso {
            outer_ipv6: tunnel.outer.version == IpVersion::V6,
            outer_checksum: bytes.get(checksum..checksum + 2)? != [0, 0],
            outer_th: u16::try_from(tunnel.outer.l4_offset).ok()?,
            inner_nh: u16::try_from(layout.ip.offset).ok()?,
        })
    }

    /// Checks the fields against the header's GSO type and the parsed frame.
    pub(crate) fn check(&self, gso_type: GsoType, layout: Option<&Layout>) -> Result<(), VirtioError> {
        if !matches!(
            gso_type,
            GsoType::TcpV4 | GsoType::TcpV6 | GsoType::UdpL4
        ) {
            return Err(VirtioError::TunnelWithoutGso);
        }
        let layout = layout.ok_or(VirtioError::TunnelNotInFrame)?;
        let tunnel = layout.tunnel.ok_or(VirtioError::TunnelNotInFrame)?;
        if !matches!(tunnel.kind, TunnelKind::Vxlan | TunnelKind::Geneve) {
            return Err(VirtioError::TunnelNotInFrame);
        }
        if (tunnel.outer.version == IpVersion::V6) != self.outer_ipv6 {
            return Err(VirtioError::TunnelIpVersionMismatch);
        }
        if usize::from(self.outer_th) != tunnel.outer.l4_offset {
            return Err(VirtioError::TunnelOuterOffsetMismatch);
        }
        if usize::from(self.inner_nh) != layout.ip.offset {
            return Err(VirtioError::TunnelInnerOffsetMismatch);
        }
        Ok(())
    }
}

/// Splits the tunnel bits off the `flags` and `gso_type` bytes of a 24-byte header
/// `b`: returns both bytes without them and the tunnel fields, if any.
pub(crate) fn decode(b: &[u8; HEADER_LEN_TUNNEL]) -> Result<(u8, u8, Option<TunnelGso>), VirtioError> {
    let (flags, gso_type) = (b[0], b[1]);
    let outer_checksum = flags & F_UDP_TUNNEL_CSUM != 0;
    let outer_ipv6 = match gso_type & (GSO_UDP_TUNNEL_IPV4 | GSO_UDP_TUNNEL_IPV6) {
        0 if outer_checksum => return Err(VirtioError::TunnelChecksumWithoutTunnel),
        0 => return Ok((flags, gso_type, None)),
        GSO_UDP_TUNNEL_IPV4 => false,
        GSO_UDP_TUNNEL_IPV6 => true,
        _ => return Err(VirtioError::TunnelBothIpVersions),
    };
    let le16 = |at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let tunnel = TunnelGso {
        outer_ipv6,
        outer_checksum,
        outer_th: le16(OUTER_TH),
        inner_nh: le16(INNER_NH),
    };
    let bits = GSO_UDP_TUNNEL_IPV4 | GSO_UDP_TUNNEL_IPV6;
    Ok((flags & !F_UDP_TUNNEL_CSUM, gso_type & !bits, Some(tunnel)))
}

/// The bits `tunnel` sets in the flags byte and in the GSO-type byte of the tunnel form.
pub(crate) fn type_bits(tunnel: &TunnelGso) -> (u8, u8) {
    let flags = if tunnel.outer_checksum { F_UDP_TUNNEL_CSUM } else { 0 };
    let gso_type = if tunnel.outer_ipv6 {
        GSO_UDP_TUNNEL_IPV6
    } else {
        GSO_UDP_TUNNEL_IPV4
    };
    (flags, gso_type)
}

/// Writes `tunnel` into a 24-byte header whose first 12 bytes hold the v1 encoding.
pub(crate) fn encode(tunnel: &TunnelGso, b: &mut [u8; HEADER_LEN_TUNNEL]) {
    let (flags, gso_type) = type_bits(tunnel);
    b[0] |= flags;
    b[1] |= gso_type;
    b[OUTER_TH..OUTER_TH + 2].copy_from_slice(&tunnel.outer_th.to_le_bytes());
    b[INNER_NH..INNER_NH + 2].copy_from_slice(&tunnel.inner_nh.to_le_bytes());
}
