//! Walking a frame: Ethernet (up to two VLAN tags), IPv4 or IPv6 (extension headers
//! walked with a bound), TCP or UDP, and one level of VXLAN, Geneve or GRE tunnel.
//!
//! Every length is checked before it is used; the result is a [`Layout`] whose ranges
//! all lie inside the frame, or a [`ParseError`] saying why not. No allocation.

use super::error::{truncated, Layer, ParseError};
use super::ethernet::{EtherType, EthernetFrame, VlanTag, ETHERNET_HEADER_LEN, VLAN_TAG_LEN};
use super::geneve::{GeneveHeader, GENEVE_PORT};
use super::gre::GreHeader;
use super::ip::IpProtocol;
use super::ipv4::{Ipv4Packet, FRAGMENT_BITS, IPV4_MIN_HEADER_LEN};
use super::ipv6::{Ipv6Packet, IPV6_HEADER_LEN};
use super::ipv6ext::{is_extension_header, Ipv6ExtHeader, Ipv6FragmentHeader};
use super::layout::{IpLayer, IpVersion, L4Proto, Layout, TunnelKind, TunnelLayer};
use super::tcp::{TcpPacket, TCP_MIN_HEADER_LEN};
use super::udp::{UdpPacket, UDP_HEADER_LEN};
use super::vxlan::{VxlanHeader, VXLAN_HEADER_LEN, VXLAN_PORT};

/// At most this many 802.1Q/802.1ad tags per Ethernet header.
pub const MAX_VLAN_TAGS: usize = 2;
/// At most this many IPv6 extension headers are walked before giving up.
pub const MAX_EXTENSION_HEADERS: usize = 8;
/// Capacity of each port list in [`ParseOptions`].
pub const MAX_TUNNEL_PORTS: usize = 8;

/// A small fixed-capacity set of UDP ports (no allocation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortList {
    ports: [u16; MAX_TUNNEL_PORTS],
    len: usize,
}

impl PortList {
    pub const fn empty() -> Self {
        PortList {
            ports: [0; MAX_TUNNEL_PORTS],
            len: 0,
        }
    }

    const fn one(port: u16) -> Self {
        let mut ports = [0; MAX_TUNNEL_PORTS];
        ports[0] = port;
        PortList { ports, len: 1 }
    }

    /// Adds a port; returns false (and changes nothing) when the list is full.
    pub fn add(&mut self, port: u16) -> bool {
        if self.contains(port) {
            return true;
        }
        match self.ports.get_mut(self.len) {
            Some(slot) => {
                *slot = port;
                self.len += 1;
                true
            }
            None => false,
        }
    }

    pub fn contains(&self, port: u16) -> bool {
        self.as_slice().contains(&port)
    }

    pub fn as_slice(&self) -> &[u16] {
        &self.ports[..self.len.min(MAX_TUNNEL_PORTS)]
    }
}

/// Which UDP destination ports mean VXLAN or Geneve, and whether to look into tunnels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseOptions {
    pub vxlan_ports: PortList,
    pub geneve_ports: PortList,
    /// When false, VXLAN/Geneve/GRE frames are reported as plain UDP / protocol 47.
    pub tunnels: bool,
}

impl ParseOptions {
    /// VXLAN on 4789, Geneve on 6081, tunnels decoded.
    pub const DEFAULT: ParseOptions = ParseOptions {
        vxlan_ports: PortList::one(VXLAN_PORT),
        geneve_ports: PortList::one(GENEVE_PORT),
        tunnels: true,
    };

    /// The defaults plus another VXLAN port (e.g. Linux's historical 8472).
    pub fn with_vxlan_port(mut self, port: u16) -> Option<Self> {
        self.vxlan_ports.add(port).then_some(self)
    }

    pub fn with_geneve_port(mut self, port: u16) -> Option<Self> {
        self.geneve_ports.add(port).then_some(self)
    }

    pub fn without_tunnels(mut self) -> Self {
        self.tunnels = false;
        self
    }
}

impl Default for ParseOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Parses a frame with the default options (VXLAN 4789, Geneve 6081, GRE).
#[inline]
pub fn parse_frame(frame: &[u8]) -> Result<Layout, ParseError> {
    parse_frame_with(frame, &ParseOptions::DEFAULT)
}

/// Parses a frame, looking for tunnels as `options` says. Inlined, so that the common
/// frame's layout is written where the caller keeps it; the walk stays a call.
#[inline]
pub fn parse_frame_with(frame: &[u8], options: &ParseOptions) -> Result<Layout, ParseError> {
    match parse_plain_tcp4(frame) {
        Some(layout) => Ok(layout),
        None => walk(frame, options),
    }
}

/// The general walk, layer by layer: every shape, every error named.
#[inline(never)]
fn walk(frame: &[u8], options: &ParseOptions) -> Result<Layout, ParseError> {
    let l2 = parse_l2(frame, 0)?;
    let outer = parse_ip(frame, l2.len, l2.ethertype)?;
    let tunnel = if options.tunnels {
        find_tunnel(frame, &outer, options)?
    } else {
        None
    };
    let Some(tunnel) = tunnel else {
        return Ok(Layout {
            l2_len: l2.len,
            vlan_tci: l2.tci,
            tunnel: None,
            inner_l2_len: 0,
            ip: outer,
        });
    };
    // The inner packet ends where the outer one does: Ethernet padding is not in it.
    let inner_frame = frame.get(..outer.end).ok_or(truncated(Layer::Ethernet))?;
    let inner_start = tunnel.offset + tunnel.header_len;
    let (inner_l2_offset, inner_l2_len, inner_ethertype) = match tunnel.payload {
        EtherType::TransparentEthernet => {
            let inner_l2 = parse_l2(inner_frame, inner_start)?;
            (Some(inner_start), inner_l2.len, inner_l2.ethertype)
        }
        EtherType::Ipv4 | EtherType::Ipv6 => (None, 0, tunnel.payload),
        other => return Err(ParseError::UnsupportedTunnelPayload(other.into())),
    };
    let inner = parse_ip(inner_frame, inner_start + inner_l2_len, inner_ethertype)?;
    Ok(Layout {
        l2_len: l2.len,
        vlan_tci: l2.tci,
        tunnel: Some(TunnelLayer {
            kind: tunnel.kind,
            outer,
            offset: tunnel.offset,
            header_len: tunnel.header_len,
            inner_l2_offset,
        }),
        inner_l2_len,
        ip: inner,
    })
}

/// The commonest frame, untagged Ethernet + IPv4 without options + TCP, not a fragment,
/// read at fixed offsets with exactly the checks the general walk makes on it (IP
/// version and header length, total length inside the frame, TCP data offset ≥ 5 and
/// inside the IP packet; TCP is never a tunnel). `None` for any other frame and for every
/// malformed one, which the general walk then names. The walk cost a W5 GRO frame ~200
/// instructions through its layers and the `Layout` moved between them.
#[inline(always)]
fn parse_plain_tcp4(frame: &[u8]) -> Option<Layout> {
    const IP: usize = ETHERNET_HEADER_LEN;
    const L4: usize = IP + IPV4_MIN_HEADER_LEN;
    // Version 4, IHL 5; protocol 6; neither MF nor a fragment offset.
    const VER_IHL: u8 = 0x45;
    const TCP: u8 = 6;
    const ETHERTYPE_IPV4: u16 = 0x0800;
    let h: &[u8; L4 + TCP_MIN_HEADER_LEN] = frame.get(..L4 + TCP_MIN_HEADER_LEN)?.try_into().ok()?;
    let ethertype = u16::from_be_bytes([h[12], h[13]]);
    let flags_frag = u16::from_be_bytes([h[IP + 6], h[IP + 7]]);
    if ethertype != ETHERTYPE_IPV4 || h[IP] != VER_IHL || h[IP + 9] != TCP || flags_frag & FRAGMENT_BITS != 0 {
        return None;
    }
    let end = IP + usize::from(u16::from_be_bytes([h[IP + 2], h[IP + 3]]));
    let tcp_header_len = usize::from(h[L4 + 12] >> 4) * 4;
    if end > frame.len() || tcp_header_len < TCP_MIN_HEADER_LEN || end < L4 + tcp_header_len {
        return None;
    }
    Some(Layout {
        l2_len: ETHERNET_HEADER_LEN,
        vlan_tci: None,
        tunnel: None,
        inner_l2_len: 0,
        ip: IpLayer {
            version: IpVersion::V4,
            offset: IP,
            header_len: IPV4_MIN_HEADER_LEN,
            end,
            is_fragment: false,
            l4: L4Proto::Tcp,
            l4_offset: L4,
            l4_header_len: tcp_header_len,
        },
    })
}

/// An Ethernet header with its tags, relative to where it starts.
struct L2 {
    len: usize,
    tci: Option<u16>,
    ethertype: EtherType,
}

#[inline(always)]
fn parse_l2(frame: &[u8], start: usize) -> Result<L2, ParseError> {
    let eth = EthernetFrame::new_checked(frame.get(start..).unwrap_or(&[]))?;
    let mut l2 = L2 {
        len: ETHERNET_HEADER_LEN,
        tci: None,
        ethertype: eth.ethertype(),
    };
    let mut tags = 0;
    while l2.ethertype.is_vlan() {
        if tags == MAX_VLAN_TAGS {
            return Err(ParseError::TooManyVlanTags);
        }
        let tag = VlanTag::new_checked(frame.get(start + l2.len..).unwrap_or(&[]))?;
        l2.tci.get_or_insert(tag.tci());
        l2.ethertype = tag.ethertype();
        l2.len += VLAN_TAG_LEN;
        tags += 1;
    }
    Ok(l2)
}

/// What the IP layer says about the transport header it carries.
struct L3 {
    version: IpVersion,
    header_len: usize,
    end: usize,
    protocol: u8,
    is_fragment: bool,
    /// False for a fragment other than the first: it carries no transport header.
    has_l4_header: bool,
}

#[inline(always)]
fn parse_ip(frame: &[u8], offset: usize, ethertype: EtherType) -> Result<IpLayer, ParseError> {
    let packet = frame.get(offset..).unwrap_or(&[]);
    let l3 = match ethertype {
        EtherType::Ipv4 => parse_ipv4(packet, offset)?,
        EtherType::Ipv6 => parse_ipv6(packet, offset)?,
        other => return Err(ParseError::UnsupportedEtherType(other.into())),
    };
    parse_l4(frame, offset, &l3)
}

#[inline(always)]
fn parse_ipv4(packet: &[u8], offset: usize) -> Result<L3, ParseError> {
    let ip = Ipv4Packet::new_checked(packet)?;
    Ok(L3 {
        version: IpVersion::V4,
        header_len: ip.header_len(),
        end: offset + usize::from(ip.total_len()),
        protocol: ip.protocol().into(),
        is_fragment: ip.is_fragment(),
        has_l4_header: ip.frag_offset() == 0,
    })
}

#[inline]
fn parse_ipv6(packet: &[u8], offset: usize) -> Result<L3, ParseError> {
    let ip = Ipv6Packet::new_checked(packet)?;
    let total_len = ip.total_len();
    let mut l3 = L3 {
        version: IpVersion::V6,
        header_len: IPV6_HEADER_LEN,
        end: offset + total_len,
        protocol: ip.next_header().into(),
        is_fragment: false,
        has_l4_header: true,
    };
    // `total_len <= packet.len()` was checked, so every slice below stays inside it.
    let packet = &packet[..total_len];
    for walked in 0..=MAX_EXTENSION_HEADERS {
        let kind = IpProtocol::from(l3.protocol);
        if !is_extension_header(kind) {
            return Ok(l3);
        }
        if walked == MAX_EXTENSION_HEADERS {
            return Err(ParseError::TooManyExtensionHeaders);
        }
        if kind == IpProtocol::HopByHop && walked > 0 {
            return Err(ParseError::MisplacedHopByHop);
        }
        let rest = packet.get(l3.header_len..).unwrap_or(&[]);
        let ext = Ipv6ExtHeader::new_checked(rest, kind)?;
        if kind == IpProtocol::Ipv6Frag {
            let frag = Ipv6FragmentHeader::new_checked(rest)?;
            l3.is_fragment = true;
            l3.has_l4_header = frag.frag_offset() == 0;
        }
        l3.protocol = ext.next_header().into();
        l3.header_len += ext.header_len();
    }
    Err(ParseError::TooManyExtensionHeaders)
}

#[inline(always)]
fn parse_l4(frame: &[u8], offset: usize, l3: &L3) -> Result<IpLayer, ParseError> {
    let l4_offset = offset + l3.header_len;
    let ip_layer = match l3.version {
        IpVersion::V4 => Layer::Ipv4,
        IpVersion::V6 => Layer::Ipv6,
    };
    // Both IP parsers checked offset + header_len <= end <= frame length.
    let segment = frame.get(l4_offset..l3.end).ok_or(truncated(ip_layer))?;
    let (l4, l4_header_len) = match IpProtocol::from(l3.protocol) {
        _ if !l3.has_l4_header => (L4Proto::Other(l3.protocol), 0),
        IpProtocol::Tcp => (L4Proto::Tcp, TcpPacket::new_checked(segment)?.header_len()),
        IpProtocol::Udp => (L4Proto::Udp, check_udp(segment, l3.is_fragment)?),
        _ => (L4Proto::Other(l3.protocol), 0),
    };
    Ok(IpLayer {
        version: l3.version,
        offset,
        header_len: l3.header_len,
        end: l3.end,
        is_fragment: l3.is_fragment,
        l4,
        l4_offset,
        l4_header_len,
    })
}

/// The UDP length must equal the IP payload length, except in a first fragment, where
/// it covers data in later fragments.
#[inline]
fn check_udp(segment: &[u8], is_fragment: bool) -> Result<usize, ParseError> {
    if is_fragment {
        if segment.len() < UDP_HEADER_LEN {
            return Err(truncated(Layer::Udp));
        }
        return Ok(UDP_HEADER_LEN);
    }
    let udp = UdpPacket::new_checked(segment).map_err(|err| match err {
        ParseError::Truncated { .. } if segment.len() >= UDP_HEADER_LEN => {
            ParseError::LengthMismatch { layer: Layer::Udp }
        }
        other => other,
    })?;
    if usize::from(udp.len()) != segment.len() {
        return Err(ParseError::LengthMismatch { layer: Layer::Udp });
    }
    Ok(UDP_HEADER_LEN)
}

/// Where a tunnel header starts and what it carries.
struct TunnelStart {
    kind: TunnelKind,
    offset: usize,
    header_len: usize,
    payload: EtherType,
}

#[inline]
fn find_tunnel(
    frame: &[u8],
    outer: &IpLayer,
    options: &ParseOptions,
) -> Result<Option<TunnelStart>, ParseError> {
    if outer.is_fragment {
        return Ok(None);
    }
    let offset = outer.l4_offset + outer.l4_header_len;
    let area = frame.get(offset..outer.end).unwrap_or(&[]);
    let start = |kind, header_len, payload| {
        Ok(Some(TunnelStart {
            kind,
            offset,
            header_len,
            payload,
        }))
    };
    match outer.l4 {
        L4Proto::Udp => {
            let udp = UdpPacket::new_checked(frame.get(outer.l4_offset..outer.end).unwrap_or(&[]))?;
            let port = udp.dst_port();
            if options.vxlan_ports.contains(port) {
                VxlanHeader::new_checked(area)?;
                start(
                    TunnelKind::Vxlan,
                    VXLAN_HEADER_LEN,
                    EtherType::TransparentEthernet,
                )
            } else if options.geneve_ports.contains(port) {
                let geneve = GeneveHeader::new_checked(area)?;
                start(TunnelKind::Geneve, geneve.header_len(), geneve.protocol())
            } else {
                Ok(None)
            }
        }
        L4Proto::Other(protocol) if IpProtocol::from(protocol) == IpProtocol::Gre => {
            let gre = GreHeader::new_checked(area)?;
            start(TunnelKind::Gre, gre.header_len(), gre.protocol())
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
