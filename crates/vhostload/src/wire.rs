//! The few header writers and the Internet checksum the source and the sink need,
//! written here rather than taken from offlab-engine: the sink is the oracle for the
//! backends' output, so it must not share their code.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ip {
    V4,
    V6,
}

impl Ip {
    pub fn header_len(self) -> usize {
        match self {
            Ip::V4 => 20,
            Ip::V6 => 40,
        }
    }
}

/// One's-complement sum of `data` (big-endian 16-bit words) added to `initial`.
pub fn sum(data: &[u8], initial: u32) -> u32 {
    let mut acc = u64::from(initial);
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(*last) << 8;
    }
    while acc > 0xffff_ffff {
        acc = (acc & 0xffff_ffff) + (acc >> 32);
    }
    acc as u32
}

pub fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The TCP/UDP pseudo-header sum for the IP header at the start of `ip`.
pub fn pseudo_header(ip: &[u8], version: Ip, l4_len: usize) -> u32 {
    let (addresses, proto) = match version {
        Ip::V4 => (&ip[12..20], ip[9]),
        Ip::V6 => (&ip[8..40], ip[6]),
    };
    sum(addresses, u32::from(proto) + l4_len as u32)
}

pub fn ethernet(f: &mut Vec<u8>, ip: Ip) {
    f.extend_from_slice(&[0x52, 0x54, 0, 0, 0, 2, 0x52, 0x54, 0, 0, 0, 1]);
    f.extend_from_slice(match ip {
        Ip::V4 => &[0x08, 0x00],
        Ip::V6 => &[0x86, 0xdd],
    });
}

/// An IPv4 header (DF set, TTL 64) with its checksum.
pub fn ipv4(f: &mut Vec<u8>, proto: u8, l4_len: usize, id: u16, src: [u8; 4], dst: [u8; 4]) {
    let start = f.len();
    let total = (20 + l4_len) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&id.to_be_bytes());
    f.extend_from_slice(&[0x40, 0, 64, proto, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    let check = !fold(sum(&f[start..], 0));
    f[start + 10..start + 12].copy_from_slice(&check.to_be_bytes());
}

pub fn ipv6(f: &mut Vec<u8>, next: u8, l4_len: usize) {
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(l4_len as u16).to_be_bytes());
    f.extend_from_slice(&[next, 64]);
    f.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    f.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
}

pub fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

pub fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
