//! The super-packets the GSO differential test hands to both the kernel (through a TAP
//! with a virtio-net header) and the engine. Each case names what it exercises.

use crate::kernel::frames::{self, tcp_flags as f, Csum, Eth, Ip, Packet, Tcp, V6Ext, L4};
use crate::kernel::vnet::{self, VnetHdr};

pub const SRC_MAC: [u8; 6] = [0x02, 0x0f, 0x1a, 0xb0, 0x00, 0x01];
pub const DST_MAC: [u8; 6] = [0x02, 0x0f, 0x1a, 0xb0, 0x00, 0x02];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tcp,
    Udp,
    /// UFO: IPv4 fragments of one UDP datagram (virtio GSO_UDP).
    UdpFragment,
}

pub struct GsoCase {
    pub name: String,
    /// The super-packet as a virtio sender hands it over: transport checksum field
    /// holding the pseudo-header sum (NEEDS_CSUM).
    pub frame: Vec<u8>,
    pub vnet: VnetHdr,
    /// Offset of the innermost IP header, to verify the kernel's output independently.
    pub inner_ip: usize,
    pub kind: Kind,
    pub segment_size: u16,
    /// VIRTIO_NET_HDR_GSO_ECN: the sender negotiated ECN, CWR may be set.
    pub ecn: bool,
    /// Tunnelled: whether the outer UDP checksum is to be filled in per segment.
    pub outer_udp_checksum: Option<bool>,
}

fn eth() -> Eth {
    Eth {
        dst: DST_MAC,
        src: SRC_MAC,
        vlan: None,
    }
}

pub fn v4(id: u16, df: bool) -> Ip {
    Ip::V4 {
        src: [10, 1, 0, 1],
        dst: [10, 1, 0, 2],
        id,
        ttl: 64,
        tos: 0,
        df,
    }
}

pub fn v6(tclass: u8, flow_label: u32) -> Ip {
    let mut src = [0u8; 16];
    src[0] = 0xfd;
    src[15] = 1;
    let mut dst = src;
    dst[15] = 2;
    Ip::V6 {
        src,
        dst,
        hop_limit: 64,
        tclass,
        flow_label,
        dest_opts: false,
        ext: V6Ext::None,
    }
}

fn with_dest_opts(mut ip: Ip) -> Ip {
    if let Ip::V6 { dest_opts, .. } = &mut ip {
        *dest_opts = true;
    }
    ip
}

fn with_ext(mut ip: Ip, with: V6Ext) -> Ip {
    if let Ip::V6 { ext, .. } = &mut ip {
        *ext = with;
    }
    ip
}

/// A Routing header of `routing_type` whose final destination is `fd00::3`, with the
/// IPv6 header's destination (`fd00::2`) as the segment being visited.
fn routing(routing_type: u8, segments_left: u8) -> V6Ext {
    let mut last = [0u8; 16];
    last[0] = 0xfd;
    last[15] = 3;
    let mut current = last;
    current[15] = 2;
    let addresses = match routing_type {
        // Type 0 lists the addresses still to visit in order, the final one last.
        0 => vec![current, last],
        // Type 2 carries the home address only.
        2 => vec![last],
        // SRH (type 4) and RPL (type 3, uncompressed): Segment List[0] is the last one.
        _ => vec![last, current],
    };
    V6Ext::Routing {
        routing_type,
        segments_left,
        addresses,
    }
}

fn gso_type(kind: Kind, ip: &Ip) -> u8 {
    match (kind, ip) {
        (Kind::Tcp, Ip::V4 { .. }) => vnet::GSO_TCPV4,
        (Kind::Tcp, Ip::V6 { .. }) => vnet::GSO_TCPV6,
        (Kind::Udp, _) => vnet::GSO_UDP_L4,
        (Kind::UdpFragment, _) => vnet::GSO_UDP,
    }
}

/// One super-packet to build. Defaults: an ACK-only TCP segment without options.
#[derive(Clone)]
struct Spec {
    name: &'static str,
    packet: Packet,
    mss: u16,
    ecn: bool,
    /// UFO instead of USO for a UDP spec.
    fragment: bool,
}

impl Spec {
    fn tcp(name: &'static str, ip: Ip) -> Spec {
        let tcp = Tcp {
            sport: 40000,
            dport: 5201,
            seq: 0x1000_0000,
            ack: 0x2000_0000,
            flags: f::ACK,
            window: 502,
            options: vec![],
        };
        let packet = Packet {
            eth: eth(),
            ip,
            l4: L4::Tcp(tcp),
            payload: vec![],
        };
        Spec {
            name,
            packet,
            mss: 1000,
            ecn: false,
            fragment: false,
        }
    }

    fn udp(name: &'static str, ip: Ip) -> Spec {
        let l4 = L4::Udp {
            sport: 40001,
            dport: 5202,
        };
        let packet = Packet {
            eth: eth(),
            ip,
            l4,
            payload: vec![],
        };
        Spec {
            name,
            packet,
            mss: 1000,
            ecn: false,
            fragment: false,
        }
    }

    /// A UDP spec segmented by IPv4 fragmentation (UFO) rather than into datagrams.
    fn ufo(name: &'static str, ip: Ip) -> Spec {
        Spec {
            fragment: true,
            ..Spec::udp(name, ip)
        }
    }

    /// `len` payload bytes cut into segments of `mss`.
    fn size(mut self, len: usize, mss: u16) -> Spec {
        self.packet.payload = frames::payload(len, 3);
        self.mss = mss;
        self
    }

    fn tcp_mut(&mut self) -> &mut Tcp {
        match &mut self.packet.l4 {
            L4::Tcp(t) => t,
            L4::Udp { .. } => unreachable!("TCP spec"),
        }
    }

    fn flags(mut self, flags: u8) -> Spec {
        self.tcp_mut().flags |= flags;
        self
    }

    fn timestamps(mut self) -> Spec {
        self.tcp_mut().options = frames::ts_option(0x0102_0304, 0x0a0b_0c0d);
        self
    }

    /// The sender set VIRTIO_NET_HDR_GSO_ECN.
    fn ecn(self) -> Spec {
        Spec { ecn: true, ..self }
    }

    fn vlan(mut self, tci: u16) -> Spec {
        self.packet.eth.vlan = Some(tci);
        self
    }

    /// The super-packet with the virtio header a sender would write for it.
    fn plain(self) -> GsoCase {
        let p = &self.packet;
        let kind = match p.l4 {
            L4::Tcp(_) => Kind::Tcp,
            L4::Udp { .. } if self.fragment => Kind::UdpFragment,
            L4::Udp { .. } => Kind::Udp,
        };
        let vnet = VnetHdr {
            flags: vnet::F_NEEDS_CSUM,
            gso_type: gso_type(kind, &p.ip) | if self.ecn { vnet::GSO_ECN } else { 0 },
            hdr_len: p.headers_len() as u16,
            gso_size: self.mss,
            csum_start: p.l4_offset() as u16,
            csum_offset: p.csum_offset() as u16,
            tunnel: None,
        };
        GsoCase {
            name: self.name.to_owned(),
            frame: p.build(Csum::Partial),
            vnet,
            inner_ip: p.l2_len(),
            kind,
            segment_size: self.mss,
            ecn: self.ecn,
            outer_udp_checksum: None,
        }
    }

    /// The super-packet inside VXLAN (VNI 42) under `outer`, described to the kernel
    /// with the UDP-tunnel virtio header (`outer_th_offset`, `inner_nh_offset`).
    fn vxlan(self, outer: Ip, outer_csum: bool) -> GsoCase {
        let mut inner = self.packet;
        inner.eth = Eth {
            dst: [2, 0x0f, 0x1a, 0xc0, 0, 2],
            src: [2, 0x0f, 0x1a, 0xc0, 0, 1],
            vlan: None,
        };
        let kind = if matches!(inner.l4, L4::Tcp(_)) {
            Kind::Tcp
        } else {
            Kind::Udp
        };
        let udp_csum = if outer_csum {
            Csum::Partial
        } else {
            Csum::Zero
        };
        let frame = frames::vxlan_frame(
            &eth(),
            &outer,
            49152,
            42,
            &inner.build(Csum::Partial),
            udp_csum,
        );
        let (outer_l3, tunnel_bit) = match outer {
            Ip::V4 { .. } => (20, vnet::GSO_UDP_TUNNEL_IPV4),
            Ip::V6 { .. } => (40, vnet::GSO_UDP_TUNNEL_IPV6),
        };
        let outer_th = frames::ETH_LEN + outer_l3;
        let inner_start = outer_th + 8 + 8; // UDP + VXLAN
        let inner_nh = inner_start + inner.l2_len();
        let vnet = VnetHdr {
            flags: vnet::F_NEEDS_CSUM
                | if outer_csum {
                    vnet::F_UDP_TUNNEL_CSUM
                } else {
                    0
                },
            gso_type: gso_type(kind, &inner.ip) | tunnel_bit,
            hdr_len: (inner_start + inner.headers_len()) as u16,
            gso_size: self.mss,
            csum_start: (inner_start + inner.l4_offset()) as u16,
            csum_offset: inner.csum_offset() as u16,
            tunnel: Some((outer_th as u16, inner_nh as u16)),
        };
        GsoCase {
            name: self.name.to_owned(),
            frame,
            vnet,
            inner_ip: inner_nh,
            kind,
            segment_size: self.mss,
            ecn: false,
            outer_udp_checksum: Some(outer_csum),
        }
    }
}

pub fn tcp_cases() -> Vec<GsoCase> {
    let tos_ttl = Ip::V4 {
        src: [10, 1, 0, 1],
        dst: [10, 1, 0, 2],
        id: 77,
        ttl: 1,
        tos: 0xba,
        df: true,
    };
    let specs = vec![
        Spec::tcp("tcp4 mss 1448, short last segment", v4(1000, true)).size(20_000, 1448),
        Spec::tcp("tcp4 mss 536 with timestamps", v4(7, true))
            .timestamps()
            .size(5_000, 536),
        Spec::tcp("tcp4 odd mss 1001", v4(7, true)).size(6_007, 1001),
        Spec::tcp("tcp4 exact multiple of mss", v4(7, true))
            .timestamps()
            .size(4_000, 1000),
        Spec::tcp("tcp4 PSH|FIN only on last segment", v4(9, true))
            .flags(f::PSH | f::FIN)
            .size(4_500, 1000),
        Spec::tcp("tcp4 CWR|ECE with GSO_ECN: CWR only on first", v4(9, true))
            .flags(f::CWR | f::ECE)
            .ecn()
            .size(4_500, 1000),
        Spec::tcp("tcp4 ECE without CWR", v4(9, true))
            .flags(f::ECE)
            .ecn()
            .size(3_000, 1000),
        Spec::tcp("tcp4 no DF, IP ID wraps at 0xffff", v4(0xfffe, false)).size(5_000, 1000),
        Spec::tcp("tcp4 DF, IP ID 0 increments", v4(0, true)).size(3_000, 1000),
        Spec::tcp("tcp4 payload fits one segment", v4(5, true))
            .flags(f::PSH)
            .size(800, 1000),
        Spec::tcp("tcp4 jumbo mss 8948, 60000 bytes", v4(5, true))
            .timestamps()
            .size(60_000, 8948),
        Spec::tcp("tcp4 64 KiB less headers, mss 1448", v4(5, true)).size(65_495, 1448),
        Spec::tcp("tcp4 TOS/ECT(0) and TTL 1 copied", tos_ttl).size(3_000, 1000),
        Spec::tcp("tcp4 in 802.1Q VLAN 100 (PCP 1)", v4(3, true))
            .vlan(0x2064)
            .size(5_000, 1400),
        Spec::tcp("tcp6 mss 1428 with timestamps", v6(0, 0))
            .timestamps()
            .size(20_000, 1428),
        Spec::tcp("tcp6 flow label and traffic class, PSH", v6(0x28, 0xabcde))
            .flags(f::PSH)
            .size(7_000, 1440),
        Spec::tcp("tcp6 CWR with GSO_ECN", v6(0, 0))
            .flags(f::CWR)
            .ecn()
            .size(3_000, 1000),
        Spec::tcp("tcp6 jumbo mss 8928", v6(0, 1)).size(40_000, 8928),
        Spec::tcp("tcp6 odd mss 999, FIN", v6(0, 1))
            .flags(f::FIN)
            .timestamps()
            .size(5_000, 999),
        Spec::tcp("tcp6 in 802.1Q VLAN 7", v6(0, 3))
            .vlan(7)
            .size(5_000, 1400),
        Spec::tcp(
            "tcp6 with a Destination Options header",
            with_dest_opts(v6(0, 2)),
        )
        .size(6_000, 1400),
        Spec::tcp(
            "tcp6 Segment Routing header, 1 segment left: pseudo-header to Segment List[0]",
            with_ext(v6(0, 4), routing(4, 1)),
        )
        .size(5_000, 1400),
        Spec::tcp(
            "tcp6 Segment Routing header, no segment left: the IPv6 destination is final",
            with_ext(v6(0, 4), routing(4, 0)),
        )
        .size(5_000, 1400),
        Spec::tcp(
            "tcp6 type 2 Routing header (Mobile IPv6): pseudo-header to the home address",
            with_ext(with_dest_opts(v6(0, 5)), routing(2, 1)),
        )
        .size(4_000, 1000),
    ];
    specs.into_iter().map(Spec::plain).collect()
}

/// Super-packets the engine refuses with a typed reason, and whether the kernel drops
/// them too (`true`) or segments them (`false`).
pub fn refused_v6_cases() -> Vec<(GsoCase, offlab_engine::gso::GsoError, bool)> {
    use offlab_engine::gso::GsoError;
    vec![
        (
            Spec::tcp("tcp6 with an Authentication Header", with_ext(v6(0, 6), V6Ext::Ah))
                .size(5_000, 1400)
                .plain(),
            GsoError::AuthenticationHeader,
            true,
        ),
        (
            Spec::tcp(
                "tcp6 RPL Routing header (type 3) with a segment left",
                with_ext(v6(0, 7), routing(3, 1)),
            )
            .size(5_000, 1400)
            .plain(),
            GsoError::RoutingHeaderUnsupported(3),
            false,
        ),
    ]
}

pub fn udp_cases() -> Vec<GsoCase> {
    let specs = vec![
        Spec::udp("udp4 USO 1400, short last datagram", v4(300, true)).size(10_000, 1400),
        Spec::udp("udp4 USO exact multiple 1472", v4(300, false)).size(1472 * 4, 1472),
        Spec::udp("udp4 USO odd size 999", v4(0xffff, true)).size(4_000, 999),
        Spec::udp("udp6 USO 1232", v6(0, 0x12345)).size(10_000, 1232),
        Spec::udp("udp6 USO jumbo 8900", v6(0, 0)).size(30_000, 8900),
        Spec::udp(
            "udp6 USO with a Destination Options header",
            with_dest_opts(v6(0, 0)),
        )
        .size(5_000, 1200),
        Spec::ufo("udp4 UFO, 1480-byte fragments", v4(4242, false)).size(5_000, 1480),
        Spec::ufo("udp4 UFO, fragment size not a multiple of 8", v4(17, false)).size(4_000, 1001),
    ];
    specs.into_iter().map(Spec::plain).collect()
}

pub fn vxlan_cases() -> Vec<GsoCase> {
    vec![
        Spec::tcp("vxlan4 tcp4, outer UDP checksum zero", v4(9, true))
            .size(8_000, 1400)
            .vxlan(v4(500, true), false),
        Spec::tcp("vxlan4 tcp4, outer UDP checksum", v4(9, true))
            .flags(f::PSH)
            .timestamps()
            .size(8_000, 1388)
            .vxlan(v4(500, true), true),
        Spec::tcp("vxlan4 tcp6 inner, outer no DF", v6(0, 7))
            .size(6_000, 1300)
            .vxlan(v4(0xfffe, false), false),
        Spec::tcp("vxlan6 tcp4, outer UDP checksum", v4(1, true))
            .flags(f::FIN)
            .timestamps()
            .size(7_000, 1350)
            .vxlan(v6(0, 0x55), true),
        Spec::udp("vxlan4 udp4 inner (USO in tunnel)", v4(9, true))
            .size(5_000, 1350)
            .vxlan(v4(500, true), true),
    ]
}
