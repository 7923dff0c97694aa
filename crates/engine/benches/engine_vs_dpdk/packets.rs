//! The benchmark's packets, byte for byte as `benches/workloads.md` specifies and as
//! `benches/peer/packets.c` builds them for DPDK. Built here by hand (not with the
//! engine's own emitters) so the engine is measured on bytes it did not produce.

pub const IPV4_LEN: usize = 20;
pub const TCP_LEN: usize = 20;
pub const UDP_LEN: usize = 8;
pub const VXLAN_LEN: usize = 8;
pub const GRO_PAYLOAD: usize = 1448;
pub const GSO_MSS: usize = 1448;
pub const GSO_SEGMENTS: usize = 45;

pub const TCP_ACK: u8 = 0x10;
pub const TCP_PSH: u8 = 0x08;

const MAC_DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const MAC_SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const IP4_SRC: [u8; 4] = [10, 0, 0, 1];
const IP4_DST: [u8; 4] = [10, 0, 0, 2];
const OUTER4_SRC: [u8; 4] = [192, 168, 0, 1];
const OUTER4_DST: [u8; 4] = [192, 168, 0, 2];
const IP6_SRC: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const IP6_DST: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const VXLAN_PORT: u16 = 4789;
const VXLAN_VNI: u32 = 42;
const GENEVE_PORT: u16 = 6081;
/// Geneve protocol type: an Ethernet frame inside.
const TRANSPARENT_ETHERNET: u16 = 0x6558;

/// Which network layer carries the transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Net {
    V4,
    V6,
    /// TCP/IPv4 inside VXLAN over IPv4.
    Vxlan4,
    /// TCP/IPv6 inside Geneve (no options) over IPv6, with an outer UDP checksum.
    Geneve6,
}

/// Which transport, with its header fields.
#[derive(Clone, Copy, Debug)]
pub enum Transport {
    Tcp { flags: u8 },
    Udp,
}

/// How the transport checksum field is filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Csum {
    /// Complete checksum (GRO input).
    Full,
    /// Pseudo-header sum only (GSO input, CHECKSUM_PARTIAL / NEEDS_CSUM form).
    Partial,
}

/// One packet to build: flow `flow`, `k`-th packet of that flow.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub net: Net,
    pub transport: Transport,
    pub csum: Csum,
    pub flow: u32,
    pub k: u32,
    pub payload_len: usize,
}

/// Folded (not complemented) one's complement sum of big-endian words, from `initial`.
pub fn ref_fold(data: &[u8], initial: u32) -> u16 {
    let mut sum = u64::from(initial);
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// FNV-1a 64, the digest both sides print so the runner can prove identical input.
pub fn fnv1a(mut h: u64, data: &[u8]) -> u64 {
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}
pub const FNV_OFFSET: u64 = 0xcbf29ce484222325;

/// Builds the frame `spec` describes.
pub fn build(spec: &Spec) -> Vec<u8> {
    let mut f = Vec::with_capacity(spec.payload_len + 128);
    match spec.net {
        Net::V4 | Net::V6 => push_inner(&mut f, spec),
        Net::Vxlan4 => {
            let mut inner = Vec::new();
            push_inner(&mut inner, &Spec { net: Net::V4, ..*spec });
            push_ethernet(&mut f, 0x0800);
            let udp_len = UDP_LEN + VXLAN_LEN + inner.len();
            push_ipv4(&mut f, OUTER4_SRC, OUTER4_DST, PROTO_UDP, udp_len, spec.k);
            f.extend_from_slice(&(49152 + spec.flow as u16).to_be_bytes());
            f.extend_from_slice(&VXLAN_PORT.to_be_bytes());
            f.extend_from_slice(&(udp_len as u16).to_be_bytes());
            f.extend_from_slice(&[0, 0]); // outer UDP checksum 0 ("none")
            f.extend_from_slice(&[0x08, 0, 0, 0]);
            f.extend_from_slice(&(VXLAN_VNI << 8).to_be_bytes());
            f.extend_from_slice(&inner);
        }
        Net::Geneve6 => {
            let mut inner = Vec::new();
            push_inner(&mut inner, &Spec { net: Net::V6, ..*spec });
            push_ethernet(&mut f, 0x86dd);
            let udp_len = UDP_LEN + VXLAN_LEN + inner.len();
            push_ipv6(&mut f, PROTO_UDP, udp_len);
            let udp_start = f.len();
            f.extend_from_slice(&(49152 + spec.flow as u16).to_be_bytes());
            f.extend_from_slice(&GENEVE_PORT.to_be_bytes());
            f.extend_from_slice(&(udp_len as u16).to_be_bytes());
            f.extend_from_slice(&[0, 0]);
            f.extend_from_slice(&[0, 0]);
            f.extend_from_slice(&TRANSPARENT_ETHERNET.to_be_bytes());
            f.extend_from_slice(&(VXLAN_VNI << 8).to_be_bytes());
            f.extend_from_slice(&inner);
            let mut pseudo = Vec::with_capacity(40);
            pseudo.extend_from_slice(&IP6_SRC);
            pseudo.extend_from_slice(&IP6_DST);
            pseudo.extend_from_slice(&(udp_len as u32).to_be_bytes());
            pseudo.extend_from_slice(&[0, 0, 0, PROTO_UDP]);
            let sum = !ref_fold(&f[udp_start..], u32::from(ref_fold(&pseudo, 0)));
            f[udp_start + 6..udp_start + 8].copy_from_slice(&sum.to_be_bytes());
        }
    }
    f
}

/// Ethernet + IP + transport + payload of a non-tunnelled packet.
fn push_inner(f: &mut Vec<u8>, spec: &Spec) {
    let (proto, l4_hdr) = match spec.transport {
        Transport::Tcp { .. } => (PROTO_TCP, TCP_LEN),
        Transport::Udp => (PROTO_UDP, UDP_LEN),
    };
    let l4_len = l4_hdr + spec.payload_len;
    let pseudo = match spec.net {
        Net::V6 => {
            push_ethernet(f, 0x86dd);
            push_ipv6(f, proto, l4_len);
            let mut p = Vec::with_capacity(40);
            p.extend_from_slice(&IP6_SRC);
            p.extend_from_slice(&IP6_DST);
            p.extend_from_slice(&(l4_len as u32).to_be_bytes());
            p.extend_from_slice(&[0, 0, 0, proto]);
            ref_fold(&p, 0)
        }
        _ => {
            push_ethernet(f, 0x0800);
            push_ipv4(f, IP4_SRC, IP4_DST, proto, l4_len, spec.k);
            let mut p = Vec::with_capacity(12);
            p.extend_from_slice(&IP4_SRC);
            p.extend_from_slice(&IP4_DST);
            p.extend_from_slice(&[0, proto]);
            p.extend_from_slice(&(l4_len as u16).to_be_bytes());
            ref_fold(&p, 0)
        }
    };
    let l4_start = f.len();
    match spec.transport {
        Transport::Tcp { flags } => {
            f.extend_from_slice(&(10000 + spec.flow as u16).to_be_bytes());
            f.extend_from_slice(&5201u16.to_be_bytes());
            f.extend_from_slice(&(1_000_000 + spec.k * GRO_PAYLOAD as u32).to_be_bytes());
            f.extend_from_slice(&1u32.to_be_bytes());
            f.extend_from_slice(&[5 << 4, flags, 0xff, 0xff, 0, 0, 0, 0]);
        }
        Transport::Udp => {
            f.extend_from_slice(&(10000 + spec.flow as u16).to_be_bytes());
            f.extend_from_slice(&5201u16.to_be_bytes());
            f.extend_from_slice(&(l4_len as u16).to_be_bytes());
            f.extend_from_slice(&[0, 0]);
        }
    }
    f.extend((0..spec.payload_len).map(|i| (i as u32 + spec.k + spec.flow) as u8));
    let csum_at = l4_start + if l4_hdr == TCP_LEN { 16 } else { 6 };
    let value = match spec.csum {
        Csum::Full => !ref_fold(&f[l4_start..], u32::from(pseudo)),
        Csum::Partial => pseudo,
    };
    f[csum_at..csum_at + 2].copy_from_slice(&value.to_be_bytes());
}

fn push_ethernet(f: &mut Vec<u8>, ethertype: u16) {
    f.extend_from_slice(&MAC_DST);
    f.extend_from_slice(&MAC_SRC);
    f.extend_from_slice(&ethertype.to_be_bytes());
}

fn push_ipv4(f: &mut Vec<u8>, src: [u8; 4], dst: [u8; 4], proto: u8, l4_len: usize, id: u32) {
    let start = f.len();
    let total = (IPV4_LEN + l4_len) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&(id as u16).to_be_bytes());
    f.extend_from_slice(&[0x40, 0, 64, proto, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    let csum = !ref_fold(&f[start..], 0);
    f[start + 10..start + 12].copy_from_slice(&csum.to_be_bytes());
}

fn push_ipv6(f: &mut Vec<u8>, proto: u8, l4_len: usize) {
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(l4_len as u16).to_be_bytes());
    f.extend_from_slice(&[proto, 64]);
    f.extend_from_slice(&IP6_SRC);
    f.extend_from_slice(&IP6_DST);
}

/// The W1/W4 GRO round: packet `n` of 1024 belongs to flow `n % flows`, `k = n / flows`.
pub fn gro_round(net: Net, transport: Transport, flows: u32, round: usize) -> Vec<Vec<u8>> {
    (0..round as u32)
        .map(|n| {
            build(&Spec {
                net,
                transport,
                csum: Csum::Full,
                flow: n % flows,
                k: n / flows,
                payload_len: GRO_PAYLOAD,
            })
        })
        .collect()
}

/// The W2/W4 GSO super-packet: 45 × 1448 B of payload, ACK|PSH (TCP), partial checksum.
pub fn gso_frame(net: Net, transport: Transport) -> Vec<u8> {
    build(&Spec { net, transport, csum: Csum::Partial, flow: 0, k: 0, payload_len: GSO_MSS * GSO_SEGMENTS })
}

/// The W3 buffer: byte i = (i * 7 + 3) & 0xff.
pub fn csum_buffer(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + 3) as u8).collect()
}

/// Digest of a list of frames, as the DPDK side computes it.
pub fn digest<'a>(frames: impl IntoIterator<Item = &'a Vec<u8>>) -> u64 {
    frames.into_iter().fold(FNV_OFFSET, |h, f| fnv1a(h, f))
}
