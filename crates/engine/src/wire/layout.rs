//! Where each header of a frame starts and ends: the result of parsing a frame.
//!
//! This is the contract between `wire::parse` (which fills it in after checking every
//! length) and `gso`, `gro`, `virtio` and the forwarder (which rely on it). Offsets are
//! from the first byte of the frame (the Ethernet destination address). Once a `Layout`
//! exists, every range in it lies inside the frame it was parsed from.

use core::ops::Range;

/// IP version of one IP layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpVersion {
    V4,
    V6,
}

/// Transport protocol above an IP layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum L4Proto {
    Tcp,
    Udp,
    /// Any other IP protocol number (left unparsed).
    Other(u8),
}

/// Encapsulation between an outer and an inner frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TunnelKind {
    /// VXLAN over UDP (RFC 7348); inner frame is Ethernet.
    Vxlan,
    /// Geneve over UDP (RFC 8926); inner frame is Ethernet (protocol type 0x6558).
    Geneve,
    /// GRE (RFC 2784/2890) carrying Ethernet (0x6558, "gretap") or IP directly.
    Gre,
}

/// One IP header (with IPv6 extension headers) and the transport header above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpLayer {
    pub version: IpVersion,
    /// Offset of the IP header.
    pub offset: usize,
    /// IPv4: IHL × 4. IPv6: 40 + every extension header walked.
    pub header_len: usize,
    /// End of the IP packet as its length field says (offset + total length); bytes
    /// after it in the frame are Ethernet padding and are not part of the packet.
    pub end: usize,
    /// Offset of the IPv6 Fragment extension header, or for IPv4 whether MF/offset are
    /// set, is reported here so callers can refuse fragments uniformly.
    pub is_fragment: bool,
    pub l4: L4Proto,
    /// Offset of the transport header (= offset + header_len).
    pub l4_offset: usize,
    /// TCP: data offset × 4. UDP: 8. Other: 0.
    pub l4_header_len: usize,
}

impl IpLayer {
    /// The transport payload.
    pub fn payload(&self) -> Range<usize> {
        (self.l4_offset + self.l4_header_len)..self.end
    }
    /// The IP packet (header through payload).
    pub fn packet(&self) -> Range<usize> {
        self.offset..self.end
    }
}

/// The outer part of a tunnelled frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunnelLayer {
    pub kind: TunnelKind,
    /// Outer IP + UDP (VXLAN/Geneve) or outer IP with `l4 == Other(47)` (GRE).
    pub outer: IpLayer,
    /// Offset of the VXLAN / Geneve / GRE header.
    pub offset: usize,
    /// Length of that header (Geneve: 8 + options; GRE: 4 + optional fields).
    pub header_len: usize,
    /// Offset of the inner Ethernet header; `None` when GRE carries IP directly.
    pub inner_l2_offset: Option<usize>,
}

/// Everything `wire::parse::parse_frame` learned about a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Ethernet header plus any 802.1Q/802.1ad tags of the outermost frame.
    pub l2_len: usize,
    /// Outermost VLAN TCI (with PCP/DEI bits), if tagged.
    pub vlan_tci: Option<u16>,
    /// Present when the frame is VXLAN/Geneve/GRE encapsulated.
    pub tunnel: Option<TunnelLayer>,
    /// Length of the inner Ethernet header plus tags when tunnelled (0 otherwise).
    pub inner_l2_len: usize,
    /// The innermost IP layer and its transport (the only one when not tunnelled).
    pub ip: IpLayer,
}

impl Layout {
    /// Bytes from the start of the frame up to the first byte of transport payload:
    /// what every GSO segment repeats and what GRO compares.
    pub fn headers_len(&self) -> usize {
        self.ip.l4_offset + self.ip.l4_header_len
    }
    /// The transport payload of the innermost packet.
    pub fn payload(&self) -> Range<usize> {
        self.ip.payload()
    }
    /// The frame's end as the outermost IP length says (padding excluded).
    pub fn frame_end(&self) -> usize {
        match &self.tunnel {
            Some(t) => t.outer.end,
            None => self.ip.end,
        }
    }
    /// The outermost IP layer: the tunnel's outer one, or the only one.
    pub fn outer_ip(&self) -> &IpLayer {
        match &self.tunnel {
            Some(t) => &t.outer,
            None => &self.ip,
        }
    }
    /// Every IP layer, outermost first (one or two).
    pub fn ip_layers(&self) -> impl Iterator<Item = &IpLayer> {
        self.tunnel.as_ref().map(|t| &t.outer).into_iter().chain(core::iter::once(&self.ip))
    }
}
