//! Flow identity: which bytes of a frame say which flow it belongs to, a hash over
//! them, and an exact comparison against a held header.
//!
//! A flow is identified like the kernel's `gro_list_prepare` + `*_gro_receive` chain
//! does: the whole L2 header (MACs, VLAN tags, EtherType), IP protocol and addresses,
//! the IPv6 flow label and extension headers, the transport ports, and for tunnels the
//! same for the outer headers plus the whole VXLAN/Geneve header (VNI, flags, Geneve
//! options) and the inner Ethernet header. Two frames are the same flow when their
//! [`Shape`]s are equal and those bytes are equal. Everything else that must match
//! (TTL, window, ...) is a merge rule, not identity: a difference ends a run.

use crate::wire::layout::{IpLayer, IpVersion, L4Proto, Layout, TunnelKind};

/// Byte ranges (relative to an IP header) that identify a flow.
mod field {
    use core::ops::Range;
    pub const IPV4_PROTOCOL: Range<usize> = 9..10;
    pub const IPV4_ADDRS: Range<usize> = 12..20;
    pub const IPV6_FLOW_LABEL: Range<usize> = 1..4;
    pub const IPV6_NEXT_HEADER: Range<usize> = 6..7;
    pub const IPV6_ADDRS: Range<usize> = 8..40;
    /// Source and destination port of TCP and UDP.
    pub const L4_PORTS: Range<usize> = 0..4;
    /// The flow label is the low 20 bits of the first word; the traffic class above it
    /// is a merge rule, not identity.
    pub const FLOW_LABEL_MASK: [u8; 3] = [0x0f, 0xff, 0xff];
}

/// Transport of the innermost layer (only these are coalesced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    Tcp,
    Udp,
}

/// The layout facts that must be equal for two frames to be compared byte by byte:
/// every header starts at the same offset. Lengths that may differ per packet (IP
/// total length, TCP data offset) are not part of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    pub l2_len: u16,
    pub tunnel: Option<TunnelShape>,
    pub ip_offset: u16,
    pub ip_header_len: u16,
    pub ip_v6: bool,
    pub transport: Transport,
}

/// Offsets of a tunnel's outer headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TunnelShape {
    pub kind: TunnelKind,
    pub outer_header_len: u16,
    pub outer_v6: bool,
    /// Offset of the VXLAN/Geneve header.
    pub offset: u16,
    pub header_len: u16,
}

impl Shape {
    /// The shape of a parsed frame whose innermost transport is TCP or UDP.
    /// Offsets fit in u16 because every coalesced header fits the header slot.
    pub fn of(layout: &Layout, transport: Transport) -> Shape {
        let narrow = |v: usize| u16::try_from(v).unwrap_or(u16::MAX);
        Shape {
            l2_len: narrow(layout.l2_len),
            tunnel: layout.tunnel.map(|t| TunnelShape {
                kind: t.kind,
                outer_header_len: narrow(t.outer.header_len),
                outer_v6: t.outer.version == IpVersion::V6,
                offset: narrow(t.offset),
                header_len: narrow(t.header_len),
            }),
            ip_offset: narrow(layout.ip.offset),
            ip_header_len: narrow(layout.ip.header_len),
            ip_v6: layout.ip.version == IpVersion::V6,
            transport,
        }
    }

    fn inner_l4_offset(&self) -> usize {
        usize::from(self.ip_offset) + usize::from(self.ip_header_len)
    }

    fn outer_ip_offset(&self) -> usize {
        usize::from(self.l2_len)
    }
}

/// The innermost transport of a layout, if GRO handles it.
pub(crate) fn transport_of(ip: &IpLayer) -> Option<Transport> {
    match ip.l4 {
        L4Proto::Tcp => Some(Transport::Tcp),
        L4Proto::Udp => Some(Transport::Udp),
        L4Proto::Other(_) => None,
    }
}

/// Whether `a` and `b` (a frame and a held header, both at least as long as the
/// shape's headers) carry the same flow identity. The caller has checked that their
/// shapes are equal.
pub(crate) fn same_flow(shape: &Shape, a: &[u8], b: &[u8]) -> bool {
    if !same_range(a, b, 0..usize::from(shape.l2_len)) {
        return false;
    }
    if let Some(t) = &shape.tunnel {
        let outer = shape.outer_ip_offset();
        let outer_l4 = outer + usize::from(t.outer_header_len);
        let tunnel = usize::from(t.offset)..usize::from(t.offset) + usize::from(t.header_len);
        // Outer IP and UDP ports, whether the outer UDP checksum is present, then the
        // tunnel header (VNI, flags, options) and the inner Ethernet header, which
        // together run up to the inner IP header.
        if !same_ip_identity(t.outer_v6, outer, outer_l4, a, b)
            || !same_outer_checksum_presence(outer_l4, a, b)
            || !same_range(a, b, tunnel.start..usize::from(shape.ip_offset))
        {
            return false;
        }
    }
    same_ip_identity(
        shape.ip_v6,
        usize::from(shape.ip_offset),
        shape.inner_l4_offset(),
        a,
        b,
    )
}

/// Whether the outer UDP headers at `udp` both carry a checksum or both carry none: the
/// kernel keeps the two kinds of datagram apart (`udp_gro_receive`: `!uh->check ^
/// !uh2->check` means another flow).
pub(crate) fn same_outer_checksum_presence(udp: usize, a: &[u8], b: &[u8]) -> bool {
    let present = |h: &[u8]| h.get(udp + 6..udp + 8).map(|c| c != [0, 0]);
    matches!((present(a), present(b)), (Some(x), Some(y)) if x == y)
}

/// IP protocol, addresses and ports (and for IPv6 the flow label and the extension
/// headers, which the kernel compares whole). Addresses, whatever lies between them and
/// the transport header, and the ports form one contiguous range: one compare.
fn same_ip_identity(v6: bool, ip: usize, l4: usize, a: &[u8], b: &[u8]) -> bool {
    let ports_end = l4 + field::L4_PORTS.end;
    if !v6 {
        return same_range(a, b, ip + field::IPV4_ADDRS.start..ports_end)
            && same_range(a, b, shift(field::IPV4_PROTOCOL, ip));
    }
    let label = shift(field::IPV6_FLOW_LABEL, ip);
    let (Some(la), Some(lb)) = (a.get(label.clone()), b.get(label)) else {
        return false;
    };
    let label_equal = la
        .iter()
        .zip(lb)
        .zip(field::FLOW_LABEL_MASK)
        .all(|((x, y), m)| (x ^ y) & m == 0);
    label_equal
        && same_range(a, b, ip + field::IPV6_ADDRS.start..ports_end)
        && same_range(a, b, shift(field::IPV6_NEXT_HEADER, ip))
}

fn same_range(a: &[u8], b: &[u8], r: core::ops::Range<usize>) -> bool {
    match (a.get(r.clone()), b.get(r)) {
        (Some(x), Some(y)) => same_bytes(x, y),
        _ => false,
    }
}

/// Slice equality without a `memcmp` call for the short fields compared per packet
/// (1 to 16 bytes: two possibly overlapping word loads per side).
#[inline]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().unwrap_or([0; 8]));
    let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap_or([0; 4]));
    match a.len() {
        0 => true,
        1..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        4..=7 => {
            let last = a.len() - 4;
            half(a, 0) == half(b, 0) && half(a, last) == half(b, last)
        }
        8..=16 => {
            let last = a.len() - 8;
            word(a, 0) == word(b, 0) && word(a, last) == word(b, last)
        }
        // IPv6 addresses through ports (36 bytes) and the like: words, the last one
        // overlapping, all differences or-ed together.
        17..=64 => {
            let last = a.len() - 8;
            let mut differ = word(a, last) ^ word(b, last);
            let mut at = 0;
            while at < last {
                differ |= word(a, at) ^ word(b, at);
                at += 8;
            }
            differ == 0
        }
        _ => a == b,
    }
}

fn shift(r: core::ops::Range<usize>, by: usize) -> core::ops::Range<usize> {
    r.start + by..r.end + by
}

/// A hash of the fields that vary most between flows (addresses, ports, the tunnel
/// header), mixed with the shape's transport. Collisions are resolved by
/// [`same_flow`], so this only has to spread flows, not identify them.
#[inline]
pub(crate) fn flow_hash(shape: &Shape, frame: &[u8]) -> u64 {
    flow_hash_at(
        shape.transport,
        shape.ip_v6,
        usize::from(shape.ip_offset),
        shape.inner_l4_offset(),
        shape.tunnel.map(|t| usize::from(t.offset)),
        frame,
    )
}

/// `flow_hash` from the offsets of the innermost IP header (`ip`, IPv6 if `v6`), its
/// transport header (`l4`) and the tunnel header, if any: callers that know them as
/// constants get the branches and bounds checks folded away.
#[inline(always)]
pub(crate) fn flow_hash_at(
    transport: Transport,
    v6: bool,
    ip: usize,
    l4: usize,
    tunnel: Option<usize>,
    frame: &[u8],
) -> u64 {
    let mut h = Hasher::new(transport as u64 + 2 * u64::from(v6));
    let addrs = if v6 {
        shift(field::IPV6_ADDRS, ip)
    } else {
        shift(field::IPV4_ADDRS, ip)
    };
    h.write(frame.get(addrs).unwrap_or(&[]));
    h.write(frame.get(shift(field::L4_PORTS, l4)).unwrap_or(&[]));
    if let Some(start) = tunnel {
        // The first 8 bytes hold the VNI for both VXLAN and Geneve.
        h.write(frame.get(start..start + 8).unwrap_or(&[]));
    }
    h.finish()
}

/// `flow_hash` for an untagged IPv4 TCP frame, bare or in a tunnel whose first 8 header
/// bytes are `tunnel`, from its address and port bytes: the same value, without the
/// shape's branches and slicing.
#[inline(always)]
pub(crate) fn plain_tcp4_hash(addrs: [u8; 8], ports: [u8; 4], tunnel: Option<[u8; 8]>) -> u64 {
    let mut h = Hasher::new(Transport::Tcp as u64);
    h.add(u64::from_le_bytes(addrs));
    let [a, b, c, d] = ports;
    h.add(u64::from_le_bytes([a, b, c, d, 0, 0, 0, 0]) ^ (4 << 59));
    if let Some(tunnel) = tunnel {
        h.add(u64::from_le_bytes(tunnel));
    }
    h.finish()
}

/// A small multiply-rotate hash over 8-byte words, with a final avalanche so the low
/// bits used by the index are well mixed. Each word is multiplied on its own and only a
/// rotate and an xor chain the words together, so the multiplies of an IPv6 or tunnel
/// flow's words run in parallel instead of one after another.
struct Hasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher {
    fn new(seed: u64) -> Self {
        Hasher(seed.wrapping_mul(SEED))
    }

    #[inline(always)]
    fn add(&mut self, word: u64) {
        self.0 = self.0.rotate_left(23) ^ word.wrapping_mul(SEED);
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
        }
    }

    fn finish(self) -> u64 {
        let mut x = self.0;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x
    }
}

#[cfg(test)]
mod tests {
    use super::same_bytes;

    #[test]
    fn same_bytes_agrees_with_slice_equality() {
        let a: Vec<u8> = (0..80).collect();
        for len in 0..80 {
            for flip in 0..len {
                let mut b = a[..len].to_vec();
                assert!(same_bytes(&a[..len], &b));
                b[flip] ^= 1;
                assert!(!same_bytes(&a[..len], &b), "len {len} flip {flip}");
            }
        }
        assert!(!same_bytes(&a[..3], &a[..4]));
    }
}
