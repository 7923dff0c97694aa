//! A small builder for the test frames: Ethernet (optionally 802.1Q), IPv4 or IPv6,
//! TCP (with options and any flags) or UDP, and VXLAN encapsulation. Checksums are
//! computed here by a plain reference sum, independent of the engine's `checksum`.

pub const ETH_LEN: usize = 14;
pub const VXLAN_PORT: u16 = 4789;

pub mod tcp_flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const URG: u8 = 0x20;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// How the transport checksum field is filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Csum {
    /// The full, correct checksum (what a wire frame carries).
    Full,
    /// Only the pseudo-header sum, not complemented: what a sender hands over with
    /// VIRTIO_NET_HDR_F_NEEDS_CSUM (the kernel's CHECKSUM_PARTIAL convention).
    Partial,
    /// A full checksum with one bit flipped.
    Corrupt,
    /// Zero: "no checksum" (UDP over IPv4 only).
    Zero,
}

#[derive(Debug, Clone)]
pub struct Eth {
    pub dst: [u8; 6],
    pub src: [u8; 6],
    pub vlan: Option<u16>,
}

#[derive(Debug, Clone)]
pub enum Ip {
    V4 {
        src: [u8; 4],
        dst: [u8; 4],
        id: u16,
        ttl: u8,
        tos: u8,
        df: bool,
    },
    /// `dest_opts`: insert one 8-byte Destination Options extension header (PadN only);
    /// `ext`: then one more extension header.
    V6 {
        src: [u8; 16],
        dst: [u8; 16],
        hop_limit: u8,
        tclass: u8,
        flow_label: u32,
        dest_opts: bool,
        ext: V6Ext,
    },
}

/// An IPv6 extension header after the optional Destination Options header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum V6Ext {
    None,
    /// A Routing header of `routing_type` listing `addresses`; while `segments_left` is
    /// non-zero the final destination is one of them (`final_destination`).
    Routing {
        routing_type: u8,
        segments_left: u8,
        addresses: Vec<[u8; 16]>,
    },
    /// An Authentication Header with a 12-byte ICV (24 bytes in all).
    Ah,
}

impl V6Ext {
    fn len(&self) -> usize {
        match self {
            V6Ext::None => 0,
            V6Ext::Routing { addresses, .. } => 8 + 16 * addresses.len(),
            V6Ext::Ah => 24,
        }
    }
    fn protocol(&self) -> Option<u8> {
        match self {
            V6Ext::None => None,
            V6Ext::Routing { .. } => Some(IPV6_ROUTING),
            V6Ext::Ah => Some(IPV6_AH),
        }
    }
    fn bytes(&self, next: u8) -> Vec<u8> {
        match self {
            V6Ext::None => vec![],
            V6Ext::Routing {
                routing_type,
                segments_left,
                addresses,
            } => {
                let units = (addresses.len() * 2) as u8;
                let mut h = vec![next, units, *routing_type, *segments_left, 0, 0, 0, 0];
                addresses.iter().for_each(|a| h.extend_from_slice(a));
                h
            }
            // Payload length 4 (= (24 / 4) - 2), SPI 0x100, sequence 1, an ICV of 0xa5.
            V6Ext::Ah => {
                let mut h = vec![next, 4, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1];
                h.extend_from_slice(&[0xa5; 12]);
                h
            }
        }
    }
}

/// The destination the transport pseudo-header uses (RFC 8200 §8.1): with segments
/// left in a Routing header, the final one — the last address of type 0, the home
/// address of type 2, Segment List[0] of type 4 (SRH).
pub fn final_destination(ip: &Ip) -> Vec<u8> {
    match ip {
        Ip::V4 { dst, .. } => dst.to_vec(),
        Ip::V6 { dst, ext, .. } => match ext {
            V6Ext::Routing {
                routing_type,
                segments_left,
                addresses,
            } if *segments_left != 0 => match routing_type {
                0 => addresses.last().expect("type 0 lists addresses").to_vec(),
                _ => addresses[0].to_vec(),
            },
            _ => dst.to_vec(),
        },
    }
}

/// IPv6 next-header values of Destination Options, Routing, AH and Hop-by-Hop.
const IPV6_DEST_OPTS: u8 = 60;
const IPV6_ROUTING: u8 = 43;
const IPV6_AH: u8 = 51;
const IPV6_HOP_BY_HOP: u8 = 0;

#[derive(Debug, Clone)]
pub struct Tcp {
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    /// Option bytes, a whole number of 32-bit words (pad with NOPs).
    pub options: Vec<u8>,
}

#[derive(Debug, Clone)]
pub enum L4 {
    Tcp(Tcp),
    Udp { sport: u16, dport: u16 },
}

/// One frame to build.
#[derive(Debug, Clone)]
pub struct Packet {
    pub eth: Eth,
    pub ip: Ip,
    pub l4: L4,
    pub payload: Vec<u8>,
}

impl Packet {
    pub fn l2_len(&self) -> usize {
        ETH_LEN + if self.eth.vlan.is_some() { 4 } else { 0 }
    }
    pub fn ip_header_len(&self) -> usize {
        match self.ip {
            Ip::V4 { .. } => 20,
            Ip::V6 { dest_opts, ref ext, .. } => 40 + if dest_opts { 8 } else { 0 } + ext.len(),
        }
    }
    pub fn l4_offset(&self) -> usize {
        self.l2_len() + self.ip_header_len()
    }
    pub fn l4_header_len(&self) -> usize {
        match &self.l4 {
            L4::Tcp(t) => 20 + t.options.len(),
            L4::Udp { .. } => 8,
        }
    }
    /// Offset of the transport checksum field inside the transport header.
    pub fn csum_offset(&self) -> usize {
        match self.l4 {
            L4::Tcp(_) => 16,
            L4::Udp { .. } => 6,
        }
    }
    pub fn headers_len(&self) -> usize {
        self.l4_offset() + self.l4_header_len()
    }

    pub fn build(&self, csum: Csum) -> Vec<u8> {
        let ethertype = match self.ip {
            Ip::V4 { .. } => 0x0800,
            Ip::V6 { .. } => 0x86dd,
        };
        let mut f = eth_header(&self.eth, ethertype);
        f.extend_from_slice(&ip_packet(&self.ip, &self.l4, &self.payload, csum));
        f
    }
}

pub fn eth_header(eth: &Eth, ethertype: u16) -> Vec<u8> {
    let mut f = Vec::with_capacity(ETH_LEN + 4);
    f.extend_from_slice(&eth.dst);
    f.extend_from_slice(&eth.src);
    if let Some(tci) = eth.vlan {
        f.extend_from_slice(&0x8100u16.to_be_bytes());
        f.extend_from_slice(&tci.to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f
}

/// IP header + transport header + payload, with lengths and checksums filled in.
pub fn ip_packet(ip: &Ip, l4: &L4, payload: &[u8], csum: Csum) -> Vec<u8> {
    let mut seg = transport(l4, payload.len());
    seg.extend_from_slice(payload);
    let (proto, check_at) = match l4 {
        L4::Tcp(_) => (6u8, 16),
        L4::Udp { .. } => (17u8, 6),
    };
    let pseudo = pseudo_sum(ip, proto, seg.len());
    let value = match csum {
        Csum::Zero => 0,
        Csum::Partial => fold(pseudo),
        Csum::Full | Csum::Corrupt => {
            let mut c = !fold(pseudo + sum(&seg));
            if proto == 17 && c == 0 {
                c = 0xffff; // UDP transmits a computed zero as all ones
            }
            if csum == Csum::Corrupt {
                c ^= 0x0100;
            }
            c
        }
    };
    seg[check_at..check_at + 2].copy_from_slice(&value.to_be_bytes());
    let mut out = ip_header(ip, proto, seg.len());
    out.extend_from_slice(&seg);
    out
}

fn transport(l4: &L4, payload_len: usize) -> Vec<u8> {
    match l4 {
        L4::Tcp(t) => {
            assert!(
                t.options.len() % 4 == 0,
                "TCP options must be whole 32-bit words"
            );
            let hlen = 20 + t.options.len();
            let mut h = Vec::with_capacity(hlen);
            h.extend_from_slice(&t.sport.to_be_bytes());
            h.extend_from_slice(&t.dport.to_be_bytes());
            h.extend_from_slice(&t.seq.to_be_bytes());
            h.extend_from_slice(&t.ack.to_be_bytes());
            h.push(((hlen / 4) as u8) << 4);
            h.push(t.flags);
            h.extend_from_slice(&t.window.to_be_bytes());
            h.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent pointer
            h.extend_from_slice(&t.options);
            h
        }
        L4::Udp { sport, dport } => {
            let mut h = Vec::with_capacity(8);
            h.extend_from_slice(&sport.to_be_bytes());
            h.extend_from_slice(&dport.to_be_bytes());
            h.extend_from_slice(&((8 + payload_len) as u16).to_be_bytes());
            h.extend_from_slice(&[0, 0]);
            h
        }
    }
}

fn ip_header(ip: &Ip, proto: u8, l4_len: usize) -> Vec<u8> {
    match *ip {
        Ip::V4 {
            src,
            dst,
            id,
            ttl,
            tos,
            df,
        } => {
            let mut h = vec![0x45, tos];
            h.extend_from_slice(&((20 + l4_len) as u16).to_be_bytes());
            h.extend_from_slice(&id.to_be_bytes());
            h.extend_from_slice(&(if df { 0x4000u16 } else { 0 }).to_be_bytes());
            h.extend_from_slice(&[ttl, proto, 0, 0]);
            h.extend_from_slice(&src);
            h.extend_from_slice(&dst);
            let c = !fold(sum(&h));
            h[10..12].copy_from_slice(&c.to_be_bytes());
            h
        }
        Ip::V6 {
            src,
            dst,
            hop_limit,
            tclass,
            flow_label,
            dest_opts,
            ref ext,
        } => {
            let word = (6u32 << 28) | (u32::from(tclass) << 20) | (flow_label & 0xf_ffff);
            let ext_len = if dest_opts { 8 } else { 0 } + ext.len();
            let after_dest_opts = ext.protocol().unwrap_or(proto);
            let first = if dest_opts { IPV6_DEST_OPTS } else { after_dest_opts };
            let mut h = word.to_be_bytes().to_vec();
            h.extend_from_slice(&((ext_len + l4_len) as u16).to_be_bytes());
            h.extend_from_slice(&[first, hop_limit]);
            h.extend_from_slice(&src);
            h.extend_from_slice(&dst);
            if dest_opts {
                // Next header, length 0 (8 bytes), PadN option covering the other 6.
                h.extend_from_slice(&[after_dest_opts, 0, 1, 4, 0, 0, 0, 0]);
            }
            h.extend_from_slice(&ext.bytes(proto));
            h
        }
    }
}

/// Outer Ethernet + IP + UDP (destination port 4789) + VXLAN header around `inner`.
pub fn vxlan_frame(eth: &Eth, ip: &Ip, sport: u16, vni: u32, inner: &[u8], udp: Csum) -> Vec<u8> {
    let mut vx = vec![0x08, 0, 0, 0];
    vx.extend_from_slice(&(vni << 8).to_be_bytes());
    vx.extend_from_slice(inner);
    let l4 = L4::Udp {
        sport,
        dport: VXLAN_PORT,
    };
    let ethertype = match ip {
        Ip::V4 { .. } => 0x0800,
        Ip::V6 { .. } => 0x86dd,
    };
    let mut f = eth_header(eth, ethertype);
    f.extend_from_slice(&ip_packet(ip, &l4, &vx, udp));
    f
}

/// Deterministic payload bytes; `seed` makes flows distinguishable.
pub fn payload(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

/// TCP timestamp option (NOP, NOP, kind 8) — 12 bytes.
pub fn ts_option(tsval: u32, tsecr: u32) -> Vec<u8> {
    let mut o = vec![1, 1, 8, 10];
    o.extend_from_slice(&tsval.to_be_bytes());
    o.extend_from_slice(&tsecr.to_be_bytes());
    o
}

/// One's-complement sum of 16-bit big-endian words (odd tail padded with zero).
pub fn sum(data: &[u8]) -> u32 {
    let mut s: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        s += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        s += u32::from(*last) << 8;
    }
    s
}

pub fn fold(mut s: u32) -> u16 {
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

pub fn pseudo_sum(ip: &Ip, proto: u8, l4_len: usize) -> u32 {
    match ip {
        Ip::V4 { src, dst, .. } => sum(src) + sum(dst) + u32::from(proto) + l4_len as u32,
        Ip::V6 { src, .. } => {
            sum(src)
                + sum(&final_destination(ip))
                + u32::from(proto)
                + (l4_len as u32 >> 16)
                + (l4_len as u32 & 0xffff)
        }
    }
}

/// Walks the extension headers (Hop-by-Hop, Destination Options, Routing, AH) of the
/// IPv6 header at the start of `ip`: the transport protocol, the extension bytes and the
/// final destination (a Routing header with segments left of type 0, 2 or 4 names it).
fn walk_v6_extensions(ip: &[u8]) -> (u8, usize, Vec<u8>) {
    let (mut next, mut at, mut destination) = (ip[6], 40, ip[24..40].to_vec());
    loop {
        let len = match next {
            IPV6_HOP_BY_HOP | IPV6_DEST_OPTS | IPV6_ROUTING => (usize::from(ip[at + 1]) + 1) * 8,
            IPV6_AH => (usize::from(ip[at + 1]) + 2) * 4,
            _ => return (next, at - 40, destination),
        };
        if next == IPV6_ROUTING && ip[at + 3] != 0 {
            let addresses = usize::from(ip[at + 1]) / 2;
            let index = if ip[at + 2] == 0 { addresses - 1 } else { 0 };
            destination = ip[at + 8 + 16 * index..at + 24 + 16 * index].to_vec();
        }
        next = ip[at];
        at += len;
    }
}

/// Whether the transport checksum of a frame verifies (IPv4 without options, IPv6 with
/// Hop-by-Hop, Destination Options, Routing or AH headers; `l2_len` is the IP header's offset): used to check the kernel's and the engine's outputs independently.
pub fn l4_checksum_ok(frame: &[u8], l2_len: usize) -> bool {
    let ip = &frame[l2_len..];
    let (proto, src_dst, l4) = match ip[0] >> 4 {
        4 => {
            let ihl = usize::from(ip[0] & 0xf) * 4;
            let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
            (ip[9], ip[12..20].to_vec(), &ip[ihl..total])
        }
        _ => {
            let plen = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
            let (proto, ext, destination) = walk_v6_extensions(ip);
            let mut addresses = ip[8..24].to_vec();
            addresses.extend_from_slice(&destination);
            (proto, addresses, &ip[40 + ext..40 + plen])
        }
    };
    let len = l4.len() as u32;
    let s = sum(&src_dst) + u32::from(proto) + (len >> 16) + (len & 0xffff) + sum(l4);
    fold(s) == 0xffff
}

/// Whether IPv4 fragments (in order, IP header at `ip_offset`) reassemble into a UDP
/// datagram whose checksum verifies and whose length field covers exactly the data.
pub fn reassembled_udp_ok(fragments: &[Vec<u8>], ip_offset: usize) -> bool {
    let mut datagram = Vec::new();
    for f in fragments {
        let ip = &f[ip_offset..];
        let ihl = usize::from(ip[0] & 0xf) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let offset = usize::from(u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff) * 8;
        if offset != datagram.len() {
            return false;
        }
        datagram.extend_from_slice(&ip[ihl..total]);
    }
    let Some(first) = fragments.first() else {
        return false;
    };
    let ip = &first[ip_offset..];
    let udp_len = usize::from(u16::from_be_bytes([datagram[4], datagram[5]]));
    let len = datagram.len() as u32;
    let s = sum(&ip[12..20]) + 17 + len + sum(&datagram);
    udp_len == datagram.len() && fold(s) == 0xffff
}

/// Finishes a partial transport checksum (the field holds the pseudo-header sum): sums
/// from `start` to the end of the IP packet and stores the complement at `start + offset`,
/// as a NIC does for CHECKSUM_PARTIAL / NEEDS_CSUM. A UDP result of 0 is sent as 0xffff.
pub fn finish_partial(frame: &mut [u8], start: usize, offset: usize) {
    let end = frame.len();
    let mut c = !fold(sum(&frame[start..end]));
    if offset == 6 && c == 0 {
        c = 0xffff;
    }
    frame[start + offset..start + offset + 2].copy_from_slice(&c.to_be_bytes());
}
