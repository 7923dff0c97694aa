//! Finalizing a run: the head's header with lengths, IPv4 header checksums and the
//! checksum-partial transport checksum rewritten, plus a description of the offload
//! for the virtio-net header (kernel `tcp4_gro_complete`, `udp_gro_complete`).

use super::coalesce::{Run, RunL4};
use super::flow::{Shape, Transport};
use super::kind::HEADER_CAP;
use crate::checksum;
use crate::virtio::TunnelGso;
use crate::wire::{Ipv4Packet, Ipv6Packet, TcpPacket, UdpPacket};

const IPV6_FIXED_LEN: usize = 40;
const IPV4_PLAIN_LEN: usize = 20;
const UDP_HEADER_LEN: usize = 8;
const TCP_PROTOCOL: u8 = 6;
const UDP_PROTOCOL: u8 = 17;
/// Where the checksum field sits in a TCP / UDP header.
const TCP_CHECKSUM_OFFSET: u16 = 16;
const UDP_CHECKSUM_OFFSET: u16 = 6;

/// What a merged packet needs from its virtio-net header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Offload {
    pub transport: Transport,
    pub inner_v6: bool,
    pub segment_size: u16,
    pub headers_len: u16,
    /// Innermost transport header offset and its checksum field's offset in it.
    pub csum_start: u16,
    pub csum_offset: u16,
    /// Where the tunnel is, for a run of VXLAN/Geneve frames.
    pub tunnel: Option<TunnelGso>,
}

/// Rewrites `header` (the run's head header) for the merged packet of `run`.
/// Lengths fit 16 bits: every run respects the 65535-byte cap.
pub(crate) fn finalize(shape: &Shape, run: &Run, header: &mut [u8]) -> Offload {
    let payload = run.payload_total();
    let l4 = usize::from(shape.ip_offset) + usize::from(shape.ip_header_len);
    let l4_len = usize::from(run.headers_len) - l4 + payload;
    let ip = usize::from(shape.ip_offset)..l4;
    let l4_sum = set_ip_length(
        header,
        ip,
        shape.ip_v6,
        l4_len,
        transport_protocol(shape.transport),
    );
    let csum_offset = match &run.l4 {
        RunL4::Tcp(_) => {
            let mut tcp = TcpPacket::new_unchecked(&mut header[l4..usize::from(run.headers_len)]);
            tcp.set_flags(tcp.flags() | run.end_flags);
            tcp.set_checksum(checksum::fold(l4_sum));
            TCP_CHECKSUM_OFFSET
        }
        RunL4::Udp { .. } => {
            let mut udp = UdpPacket::new_unchecked(&mut header[l4..l4 + UDP_HEADER_LEN]);
            udp.set_len(l4_len as u16);
            udp.set_checksum(checksum::fold(l4_sum));
            UDP_CHECKSUM_OFFSET
        }
    };
    let mut tunnel = None;
    if let (Some(t), Some(outer)) = (&shape.tunnel, &run.outer) {
        let outer_ip =
            usize::from(shape.l2_len)..usize::from(shape.l2_len) + usize::from(t.outer_header_len);
        let outer_l4 = outer_ip.end;
        let outer_l4_len = run.outer_ip_len as usize - usize::from(t.outer_header_len);
        let seed = set_ip_length(header, outer_ip, t.outer_v6, outer_l4_len, UDP_PROTOCOL);
        let mut udp = UdpPacket::new_unchecked(&mut header[outer_l4..outer_l4 + UDP_HEADER_LEN]);
        udp.set_len(outer_l4_len as u16);
        // A present outer checksum becomes the pseudo-header seed (kernel
        // `udp4_gro_complete`); segmentation completes it per segment.
        if outer.udp_checksum != 0 {
            udp.set_checksum(checksum::fold(seed));
        }
        tunnel = Some(TunnelGso {
            outer_ipv6: t.outer_v6,
            outer_checksum: outer.udp_checksum != 0,
            outer_th: outer_l4 as u16,
            inner_nh: shape.ip_offset,
        });
    }
    Offload {
        transport: shape.transport,
        inner_v6: shape.ip_v6,
        segment_size: run.seg_size,
        headers_len: run.headers_len,
        csum_start: l4 as u16,
        csum_offset,
        tunnel,
    }
}

/// `finalize` for a run of TCP/IPv4 frames of `plain::Plain` kind `OUTER` (bare, or in
/// VXLAN over IPv4), whose head header is the slot's whole array: the same rewrite at
/// fixed offsets, without reading the shape. Every delivered run of the commonest
/// frames comes through here (`tests::finalize_plain_is_finalize` holds the two equal).
#[inline]
pub(crate) fn finalize_plain<const OUTER: usize>(run: &Run, header: &mut [u8; HEADER_CAP]) -> Offload {
    const ETHERNET: usize = 14;
    let ip = OUTER + ETHERNET;
    let l4 = ip + IPV4_PLAIN_LEN;
    let headers_len = usize::from(run.headers_len);
    let l4_len = headers_len - l4 + run.payload_total();
    let l4_sum = plain_ipv4_at(header, ip, l4_len, TCP_PROTOCOL);
    let mut tunnel = None;
    if let (true, Some(outer)) = (OUTER != 0, &run.outer) {
        let outer_l4 = ETHERNET + IPV4_PLAIN_LEN;
        let outer_l4_len = run.outer_ip_len as usize - IPV4_PLAIN_LEN;
        let seed = plain_ipv4_at(header, ETHERNET, outer_l4_len, UDP_PROTOCOL);
        header[outer_l4 + 4..outer_l4 + 6].copy_from_slice(&(outer_l4_len as u16).to_be_bytes());
        if outer.udp_checksum != 0 {
            header[outer_l4 + 6..outer_l4 + 8].copy_from_slice(&checksum::fold(seed).to_be_bytes());
        }
        tunnel = Some(TunnelGso {
            outer_ipv6: false,
            outer_checksum: outer.udp_checksum != 0,
            outer_th: outer_l4 as u16,
            inner_nh: ip as u16,
        });
    }
    finish_plain_tcp(header, l4, l4_sum, run, false, tunnel)
}

/// `finalize_plain` for a run of TCP/IPv6 frames without extension headers
/// (`kind::PLAIN6_SHAPE`).
#[inline]
pub(crate) fn finalize_plain6(run: &Run, header: &mut [u8; HEADER_CAP]) -> Offload {
    const IP: usize = 14;
    let l4 = IP + IPV6_FIXED_LEN;
    let l4_len = usize::from(run.headers_len) - l4 + run.payload_total();
    let l4_sum = set_ip_length(&mut header[..], IP..l4, true, l4_len, TCP_PROTOCOL);
    finish_plain_tcp(header, l4, l4_sum, run, true, None)
}

/// The end of `finalize_plain` and `finalize_plain6`: the TCP header at `l4` gets the
/// run's PSH/FIN and the pseudo-header sum `l4_sum` as its checksum seed, and the
/// offload describing the merged packet.
#[inline(always)]
fn finish_plain_tcp(
    header: &mut [u8; HEADER_CAP],
    l4: usize,
    l4_sum: u32,
    run: &Run,
    inner_v6: bool,
    tunnel: Option<TunnelGso>,
) -> Offload {
    const TCP_FLAGS: usize = 13;
    header[l4 + TCP_FLAGS] |= run.end_flags.bits();
    let checksum_at = l4 + usize::from(TCP_CHECKSUM_OFFSET);
    header[checksum_at..checksum_at + 2].copy_from_slice(&checksum::fold(l4_sum).to_be_bytes());
    Offload {
        transport: Transport::Tcp,
        inner_v6,
        segment_size: run.seg_size,
        headers_len: run.headers_len,
        csum_start: l4 as u16,
        csum_offset: TCP_CHECKSUM_OFFSET,
        tunnel,
    }
}

/// `set_plain_ipv4_length` for the 20-byte IPv4 header at `at` of a slot's header.
#[inline(always)]
fn plain_ipv4_at(header: &mut [u8; HEADER_CAP], at: usize, l4_len: usize, protocol: u8) -> u32 {
    match header.get_mut(at..at + IPV4_PLAIN_LEN).and_then(|h| <&mut [u8; IPV4_PLAIN_LEN]>::try_from(h).ok()) {
        Some(ip) => set_plain_ipv4_length(ip, l4_len, protocol),
        None => 0,
    }
}

/// Sets the length of the IP header at `ip` for `l4_len` transport bytes, refreshes an
/// IPv4 header checksum, and returns the pseudo-header sum for `protocol`.
fn set_ip_length(
    header: &mut [u8],
    ip: core::ops::Range<usize>,
    v6: bool,
    l4_len: usize,
    protocol: u8,
) -> u32 {
    let ip_header_len = ip.len();
    let bytes = &mut header[ip];
    if v6 {
        let mut p = Ipv6Packet::new_unchecked(bytes);
        p.set_payload_len((ip_header_len - IPV6_FIXED_LEN + l4_len) as u16);
        checksum::pseudo_header_v6(&p.src_addr(), &p.dst_addr(), protocol, l4_len as u32)
    } else if let Ok(plain) = <&mut [u8; IPV4_PLAIN_LEN]>::try_from(&mut *bytes) {
        set_plain_ipv4_length(plain, l4_len, protocol)
    } else {
        let mut p = Ipv4Packet::new_unchecked(bytes);
        p.set_total_len((ip_header_len + l4_len) as u16);
        // Inline instead of `fill_checksum`: its general checksum dispatch costs more
        // than this 20-byte header, once per delivered run.
        p.set_checksum(0);
        let checksum = super::ip::header_checksum(p.header());
        p.set_checksum(checksum);
        checksum::pseudo_header_v4(p.src_addr(), p.dst_addr(), protocol, l4_len as u16)
    }
}

/// `set_ip_length` for a 20-byte IPv4 header (the only kind GRO merges) on a fixed-size
/// array: no bounds checks, no checksum dispatch, once per delivered run.
///
/// Summed in native byte order: a ones'-complement sum of byte-swapped words is the sum
/// byte-swapped (RFC 1071 section 2(B)), so the header checksum is summed, folded and
/// stored natively, with no swap per word; only the pseudo-header sum, which callers
/// take in network order, is converted once.
#[inline]
fn set_plain_ipv4_length(ip: &mut [u8; IPV4_PLAIN_LEN], l4_len: usize, protocol: u8) -> u32 {
    let total_len = (IPV4_PLAIN_LEN + l4_len) as u16;
    // Every word is read before anything is written: summing the header after storing
    // into it would reload bytes still in the store buffer, which stalls.
    let half = |at: usize| u64::from(u16::from_ne_bytes([ip[at], ip[at + 1]]));
    let word = |at: usize| u64::from(u32::from_ne_bytes([ip[at], ip[at + 1], ip[at + 2], ip[at + 3]]));
    let addrs = word(12) + word(16);
    // Version/IHL/TOS, ID and flags/fragment, TTL/protocol, the addresses: all but the
    // length (2..4) and the checksum (10..12).
    let unchanged = half(0) + word(4) + half(8) + addrs;
    let native_len = u64::from(u16::from_ne_bytes(total_len.to_be_bytes()));
    let header_checksum = !checksum::fold64(unchanged + native_len);
    ip[2..4].copy_from_slice(&total_len.to_be_bytes());
    ip[10..12].copy_from_slice(&header_checksum.to_ne_bytes());
    let native = |v: u16| u64::from(u16::from_ne_bytes(v.to_be_bytes()));
    let pseudo = checksum::fold64(addrs + native(u16::from(protocol)) + native(l4_len as u16));
    u32::from(u16::from_be_bytes(pseudo.to_ne_bytes()))
}

fn transport_protocol(t: Transport) -> u8 {
    match t {
        Transport::Tcp => TCP_PROTOCOL,
        Transport::Udp => UDP_PROTOCOL,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gro::coalesce::Run;
    use crate::gro::facts;
    use crate::gro::kind::VXLAN_OUTER;
    use crate::gro::tests::builder::{Pkt, Tunnel};
    use crate::wire::parse::ParseOptions;
    use crate::wire::TcpFlags;
    use proptest::prelude::*;

    proptest! {
        /// On runs of every plain TCP kind (bare IPv4, VXLAN with and without the outer
        /// checksum, IPv6; with and without TCP options; any segment count, last length
        /// and end flags), the fixed-offset rewrite writes exactly the header and
        /// offload the general one does.
        #[test]
        fn finalize_plain_is_finalize(
            v6 in prop::bool::ANY,
            vxlan in prop::option::of(prop::bool::ANY),
            options in prop::bool::ANY,
            seg_size in 1usize..1500,
            extra in 0u16..40,
            last_len in 1usize..1500,
            end_flags in prop::sample::select(vec![0u8, 0x08, 0x01, 0x09]),
        ) {
            let vxlan = vxlan.filter(|_| !v6);
            let mut p = if v6 { Pkt::tcp6(7, seg_size) } else { Pkt::tcp4(7, seg_size) };
            if !options {
                p.tcp_options = Vec::new();
            }
            if let Some(outer_checksum) = vxlan {
                let mut t = Tunnel::vxlan(5);
                t.outer_udp_checksum = outer_checksum;
                p.tunnel = Some(t);
            }
            let frame = p.build();
            let facts = facts::classify(&frame, false, HEADER_CAP, &ParseOptions::DEFAULT).unwrap();
            let mut run = Run::open(&facts, 0);
            let ids = (run.ip_ids, run.outer_ids);
            for _ in 0..extra {
                run.append_segment(seg_size, Some(TcpFlags(0x10)), ids);
            }
            run.append_segment(last_len.min(seg_size), Some(TcpFlags(0x10 | end_flags)), ids);
            let mut general = [0u8; HEADER_CAP];
            general[..facts.headers_len].copy_from_slice(&frame[..facts.headers_len]);
            let mut fixed = general;
            let expected = finalize(&facts.shape, &run, &mut general[..facts.headers_len]);
            let got = match (v6, vxlan) {
                (true, _) => finalize_plain6(&run, &mut fixed),
                (false, None) => finalize_plain::<0>(&run, &mut fixed),
                (false, Some(_)) => finalize_plain::<VXLAN_OUTER>(&run, &mut fixed),
            };
            prop_assert_eq!(got, expected);
            prop_assert_eq!(&fixed[..], &general[..]);
        }
    }
}
