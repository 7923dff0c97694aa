//! What to do with a super-packet: the kind of segmentation, the segment size and the
//! checksum policy, given explicitly or read from a virtio-net header.

use crate::virtio::{self, GsoType};
use crate::wire::layout::{IpVersion, L4Proto, Layout};

use super::GsoError;

/// Offsets of the checksum field inside a TCP and a UDP header (virtio `csum_offset`).
const TCP_CHECKSUM_OFFSET: u16 = 16;
const UDP_CHECKSUM_OFFSET: u16 = 6;

/// The kind of segmentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GsoKind {
    /// TCP segmentation: each segment a TCP segment of `segment_size` payload bytes.
    Tcp,
    /// UDP segmentation (USO): each segment a full UDP datagram of `segment_size`
    /// payload bytes.
    Udp,
    /// UDP fragmentation (UFO): IPv4 fragments of one datagram, `segment_size` IP
    /// payload bytes each (rounded down to a multiple of 8).
    UdpFragment,
}

/// How the innermost transport checksum of each segment is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum L4Checksum {
    /// Computed completely (header, payload and pseudo-header).
    Full,
    /// Seeded with the pseudo-header sum, not complemented, as Linux's
    /// CHECKSUM_PARTIAL and virtio's NEEDS_CSUM expect; the receiver of the segment
    /// (a NIC, a virtio peer) finishes it from `GsoOutput::partial_checksum`. UFO
    /// always computes the full checksum instead: it spans several fragments.
    Partial,
}

/// Parameters of one `segment` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GsoParams {
    pub kind: GsoKind,
    /// Payload bytes per segment (the MSS for TCP).
    pub segment_size: u16,
    pub checksum: L4Checksum,
    /// Keep the inner IPv4 ID of every segment equal to the super-packet's (Linux's
    /// TCP_FIXEDID, only valid with DF); otherwise segment `i` gets ID + `i`. The outer
    /// IPv4 ID of a tunnel always increments.
    pub fixed_ip_id: bool,
    /// The super-packet carries an ECN congestion-window-reduced mark (virtio's
    /// GSO_ECN). Segmentation is the same either way: like Linux, CWR is kept on the
    /// first segment only.
    pub ecn: bool,
    /// VXLAN/Geneve: compute the outer UDP checksum of every segment (otherwise it is
    /// zero, "no checksum").
    pub outer_udp_checksum: bool,
}

impl GsoParams {
    /// TCP segmentation with full checksums and incrementing IDs: the common case.
    pub fn tcp(segment_size: u16) -> Self {
        GsoParams {
            kind: GsoKind::Tcp,
            segment_size,
            checksum: L4Checksum::Full,
            fixed_ip_id: false,
            ecn: false,
            outer_udp_checksum: false,
        }
    }

    /// Parameters for segmenting the frame `layout` describes as the virtio-net header
    /// `hdr` (untrusted) asks: the GSO type must match the innermost IP version and
    /// transport, ECN only with TCP, a non-zero `gso_size`, and with NEEDS_CSUM the
    /// checksum start/offset must name the innermost transport checksum.
    ///
    /// The checksum is left `Partial` when the header says NEEDS_CSUM (the sender
    /// expected its receiver to finish it) and `Full` otherwise; IDs increment. Virtio
    /// cannot say whether a tunnel's outer UDP checksum is wanted, so this follows
    /// Linux's VXLAN defaults: none over IPv4, computed over IPv6. Change the fields
    /// afterwards to suit the port the segments leave by.
    pub fn from_virtio(hdr: &virtio::Header, layout: &Layout) -> Result<Self, GsoError> {
        let ip = &layout.ip;
        let kind = match hdr.gso_type {
            GsoType::TcpV4 | GsoType::TcpV6 => GsoKind::Tcp,
            GsoType::UdpL4 => GsoKind::Udp,
            GsoType::Udp => GsoKind::UdpFragment,
            GsoType::None => return Err(GsoError::VirtioNoGso),
            GsoType::Other(raw) => return Err(GsoError::VirtioUnsupportedType(raw)),
        };
        let fits = match hdr.gso_type {
            GsoType::TcpV4 => ip.version == IpVersion::V4 && ip.l4 == L4Proto::Tcp,
            GsoType::TcpV6 => ip.version == IpVersion::V6 && ip.l4 == L4Proto::Tcp,
            _ => ip.l4 == L4Proto::Udp && !hdr.gso_ecn,
        };
        if !fits {
            return Err(GsoError::VirtioTypeMismatch);
        }
        if hdr.gso_size == 0 {
            return Err(GsoError::SegmentSizeZero);
        }
        let needs_csum = hdr.flags.contains(virtio::Flags::NEEDS_CSUM);
        let csum_offset = if kind == GsoKind::Tcp {
            TCP_CHECKSUM_OFFSET
        } else {
            UDP_CHECKSUM_OFFSET
        };
        if needs_csum
            && (usize::from(hdr.csum_start) != ip.l4_offset || hdr.csum_offset != csum_offset)
        {
            return Err(GsoError::VirtioChecksumMismatch);
        }
        let outer_v6 = layout
            .tunnel
            .is_some_and(|t| t.outer.version == IpVersion::V6);
        Ok(GsoParams {
            kind,
            segment_size: hdr.gso_size,
            checksum: if needs_csum {
                L4Checksum::Partial
            } else {
                L4Checksum::Full
            },
            fixed_ip_id: false,
            ecn: hdr.gso_ecn,
            outer_udp_checksum: outer_v6,
        })
    }

    /// The same parameters with another kind.
    pub fn with_kind(self, kind: GsoKind) -> Self {
        GsoParams { kind, ..self }
    }
}
