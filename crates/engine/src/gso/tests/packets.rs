//! Real packet bytes for the GSO tests, built by hand (independently of `wire`), and
//! independent checks of the segments produced.

use crate::checksum::reference;
use crate::wire::layout::{IpLayer, L4Proto};

pub const ETH_LEN: usize = 14;
pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_PSH: u8 = 0x08;
pub const TCP_ACK: u8 = 0x10;
pub const TCP_CWR: u8 = 0x80;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4 {
    /// TCP with these flags and this many option bytes (a multiple of 4).
    Tcp {
        flags: u8,
        options: usize,
    },
    Udp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encap {
    None,
    Vxlan,
    /// Geneve with this many option bytes (a multiple of 4).
    Geneve {
        options: usize,
    },
    /// GRE carrying Ethernet (gretap), optionally with checksum and key.
    Gre {
        checksum: bool,
        key: bool,
    },
    /// GRE carrying the IP packet directly (no inner Ethernet header).
    GreIp {
        checksum: bool,
    },
}

/// What to build.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub v6: bool,
    pub l4: L4,
    pub payload_len: usize,
    pub dont_fragment: bool,
    pub ip_id: u16,
    pub seq: u32,
    pub encap: Encap,
    pub outer_v6: bool,
    pub outer_id: u16,
    /// Bytes of IPv6 Destination Options header on the inner packet (a multiple of 8).
    pub v6_ext: usize,
}

impl Spec {
    pub fn tcp4(payload_len: usize) -> Self {
        Spec {
            v6: false,
            l4: L4::Tcp {
                flags: TCP_ACK | TCP_PSH,
                options: 12,
            },
            payload_len,
            dont_fragment: true,
            ip_id: 0x1234,
            seq: 0xfffff000,
            encap: Encap::None,
            outer_v6: false,
            outer_id: 0x4321,
            v6_ext: 0,
        }
    }
    pub fn tcp6(payload_len: usize) -> Self {
        Spec {
            v6: true,
            ..Self::tcp4(payload_len)
        }
    }
    pub fn udp4(payload_len: usize) -> Self {
        Spec {
            l4: L4::Udp,
            dont_fragment: false,
            ..Self::tcp4(payload_len)
        }
    }
    pub fn flags(self, flags: u8) -> Self {
        let options = match self.l4 {
            L4::Tcp { options, .. } => options,
            L4::Udp => 0,
        };
        Spec {
            l4: L4::Tcp { flags, options },
            ..self
        }
    }
    pub fn encap(self, encap: Encap, outer_v6: bool) -> Self {
        Spec {
            encap,
            outer_v6,
            ..self
        }
    }
}

/// Deterministic payload bytes (odd values included, so byte order matters).
pub fn payload(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(131) ^ (i >> 7)) as u8)
        .collect()
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

fn ethernet(ethertype: u16) -> Vec<u8> {
    let mut e = vec![0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01];
    e.extend_from_slice(&ethertype.to_be_bytes());
    e
}

/// IP header (+ the given transport bytes, whose checksum at `l4_check` is filled in).
struct IpSpec {
    v6: bool,
    proto: u8,
    id: u16,
    df: bool,
    /// IPv6 Destination Options bytes (0: none).
    ext: usize,
    addr_base: u8,
}

fn ip_packet(ip: IpSpec, mut l4: Vec<u8>, l4_check: Option<usize>) -> Vec<u8> {
    let IpSpec {
        v6,
        proto,
        id,
        df,
        ext,
        addr_base,
    } = ip;
    let mut h = if v6 {
        let first = if ext > 0 { 60 } else { proto };
        let mut h = vec![0x60, 0, 0, 0, 0, 0, first, 64];
        put16(&mut h, 4, (ext + l4.len()) as u16);
        h.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, addr_base, 1]);
        h.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, addr_base, 2]);
        h
    } else {
        let mut h = vec![
            0x45, 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0, 10, addr_base, 0, 1, 10, addr_base, 0, 2,
        ];
        put16(&mut h, 2, (20 + l4.len()) as u16);
        put16(&mut h, 4, id);
        put16(&mut h, 6, if df { 0x4000 } else { 0 });
        let c = !reference(&h);
        put16(&mut h, 10, c);
        h
    };
    if let Some(at) = l4_check {
        let c = !fold(pseudo_sum(&h, proto, l4.len()) + u32::from(reference(&l4)));
        let c = if c == 0 && proto == 17 { 0xffff } else { c };
        put16(&mut l4, at, c);
    }
    if v6 && ext > 0 {
        h.extend_from_slice(&destination_options(proto, ext));
    }
    h.extend_from_slice(&l4);
    h
}

/// An IPv6 Destination Options header of `len` bytes filled with skippable options.
fn destination_options(next: u8, len: usize) -> Vec<u8> {
    let mut d = vec![next, (len / 8 - 1) as u8];
    while d.len() < len {
        let room = len - d.len();
        if room == 1 {
            d.push(0); // Pad1
        } else {
            let n = (room - 2).min(200);
            d.extend_from_slice(&[0x1e, n as u8]); // unknown type, "skip" action
            d.resize(d.len() + n, 0x5a);
        }
    }
    d
}

fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// One's-complement sum of the pseudo-header for an IP header `ip` (v4 or v6).
pub fn pseudo_sum(ip: &[u8], proto: u8, l4_len: usize) -> u32 {
    let mut p = Vec::new();
    if ip[0] >> 4 == 4 {
        p.extend_from_slice(&ip[12..20]);
        p.extend_from_slice(&[0, proto]);
        p.extend_from_slice(&(l4_len as u16).to_be_bytes());
    } else {
        p.extend_from_slice(&ip[8..40]);
        p.extend_from_slice(&(l4_len as u32).to_be_bytes());
        p.extend_from_slice(&[0, 0, 0, proto]);
    }
    u32::from(reference(&p))
}

/// Transport header + payload for `spec`, checksum field zero.
fn transport(spec: &Spec) -> (Vec<u8>, u8, usize) {
    let data = payload(spec.payload_len);
    match spec.l4 {
        L4::Tcp { flags, options } => {
            let hlen = 20 + options;
            let mut t = vec![0u8; hlen];
            put16(&mut t, 0, 40000);
            put16(&mut t, 2, 5201);
            t[4..8].copy_from_slice(&spec.seq.to_be_bytes());
            t[8..12].copy_from_slice(&0x0102_0304u32.to_be_bytes());
            t[12] = ((hlen / 4) as u8) << 4;
            t[13] = flags;
            put16(&mut t, 14, 502);
            for (i, b) in t[20..].iter_mut().enumerate() {
                *b = if i < 2 { 1 } else { 0x30 + i as u8 }; // NOPs then filler
            }
            t.extend_from_slice(&data);
            (t, 6, 16)
        }
        L4::Udp => {
            let mut t = vec![0u8; 8];
            put16(&mut t, 0, 40000);
            put16(&mut t, 2, 5201);
            put16(&mut t, 4, (8 + data.len()) as u16);
            t.extend_from_slice(&data);
            (t, 17, 6)
        }
    }
}

/// The frame described by `spec`, every checksum valid.
pub fn build(spec: &Spec) -> Vec<u8> {
    let (l4, proto, check_at) = transport(spec);
    let inner = IpSpec {
        v6: spec.v6,
        proto,
        id: spec.ip_id,
        df: spec.dont_fragment,
        ext: spec.v6_ext,
        addr_base: 0,
    };
    let inner_ip = ip_packet(inner, l4, Some(check_at));
    let inner_ethertype = if spec.v6 { 0x86dd } else { 0x0800 };
    let mut inner_frame = ethernet(inner_ethertype);
    inner_frame.extend_from_slice(&inner_ip);
    let outer_ethertype = if spec.outer_v6 { 0x86dd } else { 0x0800 };
    let (outer_l4, outer_proto, outer_check) = match spec.encap {
        Encap::None => {
            let mut f = ethernet(inner_ethertype);
            f.extend_from_slice(&inner_ip);
            return f;
        }
        Encap::Vxlan => {
            let mut u = udp_header(4789);
            u.extend_from_slice(&[0x08, 0, 0, 0, 0, 0, 42, 0]);
            u.extend_from_slice(&inner_frame);
            (u, 17, Some(6))
        }
        Encap::Geneve { options } => {
            let mut u = udp_header(6081);
            u.extend_from_slice(&[(options / 4) as u8, 0, 0x65, 0x58, 0, 0, 42, 0]);
            for i in 0..options / 4 {
                // class 0x0102, type i, length 0 (4-byte option headers only).
                u.extend_from_slice(&[0x01, 0x02, i as u8, 0]);
            }
            u.extend_from_slice(&inner_frame);
            (u, 17, Some(6))
        }
        Encap::Gre { checksum, key } => (gre(checksum, key, 0x6558, &inner_frame), 47, None),
        Encap::GreIp { checksum } => (gre(checksum, false, inner_ethertype, &inner_ip), 47, None),
    };
    let mut outer_l4 = outer_l4;
    if outer_proto == 17 {
        let len = outer_l4.len() as u16;
        put16(&mut outer_l4, 4, len);
    }
    let outer = IpSpec {
        v6: spec.outer_v6,
        proto: outer_proto,
        id: spec.outer_id,
        df: true,
        ext: 0,
        addr_base: 1,
    };
    let outer_ip = ip_packet(outer, outer_l4, outer_check);
    let mut f = ethernet(outer_ethertype);
    f.extend_from_slice(&outer_ip);
    f
}

fn gre(checksum: bool, key: bool, protocol: u16, inner: &[u8]) -> Vec<u8> {
    let flags = if checksum { 0x80 } else { 0 } | if key { 0x20 } else { 0 };
    let mut g = vec![flags, 0];
    g.extend_from_slice(&protocol.to_be_bytes());
    if checksum {
        g.extend_from_slice(&[0, 0, 0, 0]);
    }
    if key {
        g.extend_from_slice(&[0, 0, 0, 7]);
    }
    g.extend_from_slice(inner);
    if checksum {
        let c = !reference(&g);
        put16(&mut g, 4, c);
    }
    g
}

fn udp_header(dst_port: u16) -> Vec<u8> {
    let mut u = vec![0u8; 8];
    put16(&mut u, 0, 50000);
    put16(&mut u, 2, dst_port);
    u
}

/// Independent checks of one IP layer of `pkt` (offsets from the parser, values
/// checked here), assuming the packet runs to the end of `pkt`: IPv4 header checksum
/// and total length, IPv6 payload length, UDP length, and (when `l4_full`) the
/// transport checksum. A zero UDP checksum means none.
pub fn check_ip_packet(pkt: &[u8], ip: &IpLayer, l4_full: bool) {
    let at = ip.offset;
    let l4 = ip.l4_offset;
    let proto = match ip.l4 {
        L4Proto::Tcp => 6,
        L4Proto::Udp => 17,
        L4Proto::Other(p) => p,
    };
    if pkt[at] >> 4 == 4 {
        assert_eq!(reference(&pkt[at..l4]), 0xffff, "ipv4 header checksum");
        let total = usize::from(u16::from_be_bytes([pkt[at + 2], pkt[at + 3]]));
        assert_eq!(total, pkt.len() - at, "ipv4 total length");
    } else {
        let plen = usize::from(u16::from_be_bytes([pkt[at + 4], pkt[at + 5]]));
        assert_eq!(plen, pkt.len() - at - 40, "ipv6 payload length");
    }
    let l4_len = pkt.len() - l4;
    if proto == 17 {
        let ulen = usize::from(u16::from_be_bytes([pkt[l4 + 4], pkt[l4 + 5]]));
        assert_eq!(ulen, l4_len, "udp length");
    }
    let has_checksum = proto == 6 || (proto == 17 && (pkt[l4 + 6] | pkt[l4 + 7]) != 0);
    if (proto == 6 || proto == 17) && l4_full && has_checksum {
        let sum = pseudo_sum(&pkt[at..], proto, l4_len) + u32::from(reference(&pkt[l4..]));
        assert_eq!(fold(sum), 0xffff, "transport checksum (proto {proto})");
    }
}

/// `frame` (plain, IPv4 or IPv6) with an 802.1Q tag (VID 100) after the MAC addresses.
pub fn with_vlan_tag(frame: &[u8]) -> Vec<u8> {
    let mut f = frame[..12].to_vec();
    f.extend_from_slice(&[0x81, 0x00, 0x00, 100]);
    f.extend_from_slice(&frame[12..]);
    f
}

/// A plain IPv4 `frame` with 4 bytes of IPv4 options (NOP, NOP, NOP, End) added; the
/// transport checksum does not cover them and stays valid.
pub fn with_ipv4_options(frame: &[u8]) -> Vec<u8> {
    let ip = ETH_LEN;
    let mut f = frame[..ip + 20].to_vec();
    f.extend_from_slice(&[1, 1, 1, 0]);
    f.extend_from_slice(&frame[ip + 20..]);
    f[ip] = 0x46;
    let total = (f.len() - ip) as u16;
    put16(&mut f, ip + 2, total);
    put16(&mut f, ip + 10, 0);
    let c = !reference(&f[ip..ip + 24]);
    put16(&mut f, ip + 10, c);
    f
}
