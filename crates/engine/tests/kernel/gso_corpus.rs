//! The super-packets the GSO differential test hands to both the kernel (through a TAP
//! with a virtio-net header) and the engine. Each case names what it exercises.

use crate::kernel::frames::{self, tcp_flags as f, Csum, Eth, Ip, Packet, Tcp, L4};
use crate::kernel::vnet::{self, VnetHdr};

pub const SRC_MAC: [u8; 6] = [0x02, 0x0f, 0x1a, 0xb0, 0x00, 0x01];
pub const DST_MAC: [u8; 6] = [0x02, 0x0f, 0x1a, 0xb0, 0x00, 0x02];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tcp,
    Udp,
}

pub struct GsoCase {
    /// Offset of the innermost IP header (where the transport checksum's pseudo-header
    /// comes from): lets the test verify the kernel's output independently.
    pub inner_ip: usize,
    pub name: String,
    /// The super-packet as a virtio sender hands it over: transport checksum field
    /// holding the pseudo-header sum (NEEDS_CSUM).
    pub frame: Vec<u8>,
    pub vnet: VnetHdr,
    pub kind: Kind,
    pub segment_size: u16,
    /// VIRTIO_NET_HDR_GSO_ECN: the sender negotiated ECN, CWR may be set.
    pub ecn: bool,
    /// Tunnelled: whether the outer UDP checksum is to be filled in per segment.
    pub outer_udp_checksum: Option<bool>,
}

fn eth() -> Eth {
    Eth { dst: DST_MAC, src: SRC_MAC, vlan: None }
}

pub fn v4(id: u16, df: bool) -> Ip {
    Ip::V4 { src: [10, 1, 0, 1], dst: [10, 1, 0, 2], id, ttl: 64, tos: 0, df }
}

pub fn v6(tclass: u8, flow_label: u32) -> Ip {
    let mut src = [0u8; 16];
    src[0] = 0xfd;
    src[15] = 1;
    let mut dst = src;
    dst[15] = 2;
    Ip::V6 { src, dst, hop_limit: 64, tclass, flow_label, dest_opts: false }
}

pub fn with_dest_opts(mut ip: Ip) -> Ip {
    if let Ip::V6 { dest_opts, .. } = &mut ip {
        *dest_opts = true;
    }
    ip
}

fn tcp(flags: u8, options: Vec<u8>) -> L4 {
    L4::Tcp(Tcp { sport: 40000, dport: 5201, seq: 0x1000_0000, ack: 0x2000_0000, flags, window: 502, options })
}

fn udp() -> L4 {
    L4::Udp { sport: 40001, dport: 5202 }
}

/// A plain (untunnelled) super-packet with the virtio header a sender would write.
fn plain(name: &str, ip: Ip, l4: L4, len: usize, mss: u16, ecn: bool) -> GsoCase {
    plain_on(eth(), name, ip, l4, len, mss, ecn)
}

fn plain_on(eth: Eth, name: &str, ip: Ip, l4: L4, len: usize, mss: u16, ecn: bool) -> GsoCase {
    let kind = if matches!(l4, L4::Tcp(_)) { Kind::Tcp } else { Kind::Udp };
    let packet = Packet { eth, ip, l4, payload: frames::payload(len, 3) };
    let gso_type = match (kind, &packet.ip) {
        (Kind::Tcp, Ip::V4 { .. }) => vnet::GSO_TCPV4,
        (Kind::Tcp, Ip::V6 { .. }) => vnet::GSO_TCPV6,
        (Kind::Udp, _) => vnet::GSO_UDP_L4,
    };
    let vnet = VnetHdr {
        flags: vnet::F_NEEDS_CSUM,
        gso_type: gso_type | if ecn { vnet::GSO_ECN } else { 0 },
        hdr_len: packet.headers_len() as u16,
        gso_size: mss,
        csum_start: packet.l4_offset() as u16,
        csum_offset: packet.csum_offset() as u16,
        tunnel: None,
    };
    GsoCase {
        inner_ip: packet.l2_len(),
        name: name.to_owned(),
        frame: packet.build(Csum::Partial),
        vnet,
        kind,
        segment_size: mss,
        ecn,
        outer_udp_checksum: None,
    }
}

pub fn tcp_cases() -> Vec<GsoCase> {
    let ack = f::ACK;
    let ts = frames::ts_option(0x0102_0304, 0x0a0b_0c0d);
    vec![
        plain("tcp4 mss 1448, short last segment", v4(1000, true), tcp(ack, vec![]), 20_000, 1448, false),
        plain("tcp4 mss 536 with timestamps", v4(7, true), tcp(ack, ts.clone()), 5_000, 536, false),
        plain("tcp4 odd mss 1001", v4(7, true), tcp(ack, vec![]), 6_007, 1001, false),
        plain("tcp4 exact multiple of mss", v4(7, true), tcp(ack, ts.clone()), 4_000, 1000, false),
        plain("tcp4 PSH|FIN only on last segment", v4(9, true), tcp(ack | f::PSH | f::FIN, vec![]), 4_500, 1000, false),
        plain("tcp4 CWR|ECE with GSO_ECN: CWR only on first", v4(9, true), tcp(ack | f::CWR | f::ECE, vec![]), 4_500, 1000, true),
        plain("tcp4 ECE without CWR", v4(9, true), tcp(ack | f::ECE, vec![]), 3_000, 1000, true),
        plain("tcp4 no DF, IP ID wraps at 0xffff", v4(0xfffe, false), tcp(ack, vec![]), 5_000, 1000, false),
        plain("tcp4 DF, IP ID 0 increments", v4(0, true), tcp(ack, vec![]), 3_000, 1000, false),
        plain("tcp4 payload fits one segment", v4(5, true), tcp(ack | f::PSH, vec![]), 800, 1000, false),
        plain("tcp4 jumbo mss 8948, 60000 bytes", v4(5, true), tcp(ack, ts.clone()), 60_000, 8948, false),
        plain("tcp4 64 KiB less headers, mss 1448", v4(5, true), tcp(ack, vec![]), 65_495, 1448, false),
        plain(
            "tcp4 TOS/ECT(0) and TTL 1 copied",
            Ip::V4 { src: [10, 1, 0, 1], dst: [10, 1, 0, 2], id: 77, ttl: 1, tos: 0xb8 | 2, df: true },
            tcp(ack, vec![]),
            3_000,
            1000,
            false,
        ),
        plain("tcp6 mss 1428 with timestamps", v6(0, 0), tcp(ack, ts.clone()), 20_000, 1428, false),
        plain("tcp6 flow label and traffic class, PSH", v6(0x28, 0xabcde), tcp(ack | f::PSH, vec![]), 7_000, 1440, false),
        plain("tcp6 CWR with GSO_ECN", v6(0, 0), tcp(ack | f::CWR, vec![]), 3_000, 1000, true),
        plain("tcp6 jumbo mss 8928", v6(0, 1), tcp(ack, vec![]), 40_000, 8928, false),
        plain("tcp6 odd mss 999, FIN", v6(0, 1), tcp(ack | f::FIN, ts), 5_000, 999, false),
        plain_on(
            Eth { vlan: Some(0x2064), ..eth() },
            "tcp4 in 802.1Q VLAN 100 (PCP 1)",
            v4(3, true),
            tcp(ack, vec![]),
            5_000,
            1400,
            false,
        ),
        plain_on(Eth { vlan: Some(7), ..eth() }, "tcp6 in 802.1Q VLAN 7", v6(0, 3), tcp(ack, vec![]), 5_000, 1400, false),
        plain("tcp6 with a Destination Options header", with_dest_opts(v6(0, 2)), tcp(ack, vec![]), 6_000, 1400, false),
    ]
}

pub fn udp_cases() -> Vec<GsoCase> {
    vec![
        plain("udp4 USO 1400, short last datagram", v4(300, true), udp(), 10_000, 1400, false),
        plain("udp4 USO exact multiple 1472", v4(300, false), udp(), 1472 * 4, 1472, false),
        plain("udp4 USO odd size 999", v4(0xffff, true), udp(), 4_000, 999, false),
        plain("udp6 USO 1232", v6(0, 0x12345), udp(), 10_000, 1232, false),
        plain("udp6 USO jumbo 8900", v6(0, 0), udp(), 30_000, 8900, false),
        plain("udp6 USO with a Destination Options header", with_dest_opts(v6(0, 0)), udp(), 5_000, 1200, false),
    ]
}

/// VXLAN over IPv4 or IPv6 around a TCP or UDP super-packet, described to the kernel with
/// the UDP-tunnel virtio header (`outer_th_offset`, `inner_nh_offset`).
fn vxlan(name: &str, outer: Ip, inner_ip: Ip, inner_l4: L4, len: usize, mss: u16, outer_csum: bool) -> GsoCase {
    let kind = if matches!(inner_l4, L4::Tcp(_)) { Kind::Tcp } else { Kind::Udp };
    let inner = Packet {
        eth: Eth { dst: [0x02, 0x0f, 0x1a, 0xc0, 0, 2], src: [0x02, 0x0f, 0x1a, 0xc0, 0, 1], vlan: None },
        ip: inner_ip,
        l4: inner_l4,
        payload: frames::payload(len, 5),
    };
    let inner_frame = inner.build(Csum::Partial);
    let udp_csum = if outer_csum { Csum::Partial } else { Csum::Zero };
    let frame = frames::vxlan_frame(&eth(), &outer, 49152, 42, &inner_frame, udp_csum);
    let outer_l3 = match outer {
        Ip::V4 { .. } => 20,
        Ip::V6 { .. } => 40,
    };
    let outer_th = frames::ETH_LEN + outer_l3;
    let inner_start = outer_th + 8 + 8; // UDP + VXLAN
    let inner_nh = inner_start + inner.l2_len();
    let inner_gso = match (kind, &inner.ip) {
        (Kind::Tcp, Ip::V4 { .. }) => vnet::GSO_TCPV4,
        (Kind::Tcp, Ip::V6 { .. }) => vnet::GSO_TCPV6,
        (Kind::Udp, _) => vnet::GSO_UDP_L4,
    };
    let tunnel_bit = match outer {
        Ip::V4 { .. } => vnet::GSO_UDP_TUNNEL_IPV4,
        Ip::V6 { .. } => vnet::GSO_UDP_TUNNEL_IPV6,
    };
    let vnet = VnetHdr {
        flags: vnet::F_NEEDS_CSUM | if outer_csum { vnet::F_UDP_TUNNEL_CSUM } else { 0 },
        gso_type: inner_gso | tunnel_bit,
        hdr_len: (inner_start + inner.headers_len()) as u16,
        gso_size: mss,
        csum_start: (inner_start + inner.l4_offset()) as u16,
        csum_offset: inner.csum_offset() as u16,
        tunnel: Some((outer_th as u16, inner_nh as u16)),
    };
    GsoCase {
        inner_ip: inner_nh,
        name: name.to_owned(),
        frame,
        vnet,
        kind,
        segment_size: mss,
        ecn: false,
        outer_udp_checksum: Some(outer_csum),
    }
}

pub fn vxlan_cases() -> Vec<GsoCase> {
    let ts = frames::ts_option(11, 22);
    vec![
        vxlan("vxlan4 tcp4, outer UDP checksum zero", v4(500, true), v4(9, true), tcp(f::ACK, vec![]), 8_000, 1400, false),
        vxlan("vxlan4 tcp4, outer UDP checksum", v4(500, true), v4(9, true), tcp(f::ACK | f::PSH, ts.clone()), 8_000, 1388, true),
        vxlan("vxlan4 tcp6 inner, outer no DF", v4(0xfffe, false), v6(0, 7), tcp(f::ACK, vec![]), 6_000, 1300, false),
        vxlan("vxlan6 tcp4, outer UDP checksum", v6(0, 0x55), v4(1, true), tcp(f::ACK | f::FIN, ts), 7_000, 1350, true),
        vxlan("vxlan4 udp4 inner (USO in tunnel)", v4(500, true), v4(9, true), udp(), 5_000, 1350, true),
    ]
}
