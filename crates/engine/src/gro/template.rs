//! The fast join for every shape the fixed-offset classifiers (`plain.rs`, `plain6.rs`)
//! do not take: VLAN-tagged frames, UDP, IPv6 with extension headers, Geneve, VXLAN
//! over IPv6, inner IPv6.
//!
//! Within one flow, a frame that continues a run repeats its head's header byte for
//! byte except in a few per-segment fields: the IP lengths, IDs and header checksums,
//! the UDP lengths and checksums, the TCP sequence number, checksum and urgent pointer,
//! and the PSH/FIN bits. A [`Template`] is the mask of those fields for one [`Shape`],
//! as 8-byte words. A frame that equals a held header under the mask has the head's
//! layout (every byte `parse_frame` branches on — EtherTypes, IHL, next headers, ports,
//! tunnel flags, data offset — is the head's), so when its length fields also agree
//! with the frame's length, it parses exactly as the head did; then only the
//! per-segment rules remain, and they are checked here as `can_coalesce` checks them.
//!
//! A frame that opens a run (or belongs to no held flow) is classified against the
//! template's *reference*, the header of the last frame of this shape the general path
//! classified: when the frame repeats the reference's structural bytes (EtherTypes and
//! VLAN TPIDs, IP version, IHL, flags and fragment word, protocol or next header and
//! IPv6 extension headers, the tunnel's UDP destination port and the first word of
//! its header, the inner EtherType, the TCP data offset) and its lengths agree, it has
//! the reference's layout, and its facts are read at fixed offsets.
//!
//! Like `plain.rs`, this path only ever says "joins, with these effects" or "not
//! sure": anything else (a difference under the mask, an inconsistent length, a bad
//! IPv4 header checksum, an out-of-order sequence number, an unvalidated checksum…)
//! goes to the general path, which finds the reason. `tests/fast_path.rs` checks on
//! random frames of every shape that no decision changes.

use super::coalesce::{Limits, Run, RunL4};
use super::facts::{Facts, L4Facts};
use super::flow::{self, Shape, Transport};
use super::ip::{self, IdMode, IpFacts};
use super::fast::{self, Joined, TCP_RUN_VARIANT_FLAGS};
use super::kind::{HEADER_CAP, NOT_PLAIN};
use super::reason::Reason;
use super::tcp;
use super::tunnel::OuterFacts;
use super::udp;
use crate::wire::parse::ParseOptions;
use crate::wire::{Ipv4Packet, Ipv6Packet, TcpFlags};

const WORDS: usize = HEADER_CAP / 8;
const IPV4_LEN: usize = 20;
const IPV6_FIXED_LEN: usize = 40;
const UDP_LEN: usize = 8;

/// Per-segment fields, relative to their header.
mod varies {
    use core::ops::Range;
    pub const IPV4_TOTAL_LEN_AND_ID: Range<usize> = 2..6;
    pub const IPV4_CHECKSUM: Range<usize> = 10..12;
    pub const IPV6_PAYLOAD_LEN: Range<usize> = 4..6;
    pub const UDP_LEN_AND_CHECKSUM: Range<usize> = 4..8;
    pub const TCP_SEQ: Range<usize> = 4..8;
    pub const TCP_CHECKSUM_AND_URGENT: Range<usize> = 16..20;
    pub const TCP_FLAGS: usize = 13;
}

/// Bytes that decide how a frame parses, relative to their header.
mod structure {
    use core::ops::Range;
    /// After the MAC addresses: the EtherType and any VLAN tags.
    pub const L2_AFTER_MACS: usize = 12;
    pub const IPV4_VERSION_IHL: Range<usize> = 0..1;
    pub const IPV4_FLAGS_FRAGMENT: Range<usize> = 6..8;
    pub const IPV4_PROTOCOL: Range<usize> = 9..10;
    pub const IPV6_VERSION: Range<usize> = 0..1;
    pub const IPV6_NEXT_HEADER: Range<usize> = 6..7;
    /// Extension headers, from the end of the fixed header.
    pub const IPV6_EXTENSIONS_FROM: usize = 40;
    pub const UDP_DST_PORT: Range<usize> = 2..4;
    /// VXLAN flags, Geneve version, option length, O and C bits and protocol.
    pub const TUNNEL_FIRST_WORD: Range<usize> = 0..4;
    pub const TCP_DATA_OFFSET: Range<usize> = 12..13;
}

/// One IP layer of a shape: where it is and which version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IpAt {
    offset: usize,
    v6: bool,
}

/// Where a shape's headers are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Offsets {
    inner: IpAt,
    /// The outer IP layer, the outer UDP header and the tunnel header of a tunnel.
    outer: Option<(IpAt, usize, usize)>,
    l4: usize,
}

/// The mask of one shape and where its per-segment fields are.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    pub shape: Shape,
    /// Bit set = the frame's bit must equal the held header's.
    mask: [u64; WORDS],
    /// Bit set = the frame's bit must equal the reference's.
    structure: [u64; WORDS],
    /// The header of the last frame of this shape that the general path classified.
    reference: [u8; HEADER_CAP],
    reference_len: usize,
    offsets: Offsets,
}

impl Template {
    /// The template of `shape`, with `header` (the headers of a frame of this shape that
    /// classified without refusal) as its reference; `None` when it cannot fit a slot.
    pub fn of(shape: &Shape, header: &[u8]) -> Option<Template> {
        let mut template = Template::masks_of(shape)?;
        template.set_reference(header)?;
        Some(template)
    }

    /// Makes `header` (of a frame of this shape that classified) the reference.
    pub fn set_reference(&mut self, header: &[u8]) -> Option<()> {
        self.reference.get_mut(..header.len())?.copy_from_slice(header);
        self.reference_len = header.len();
        Some(())
    }

    fn masks_of(shape: &Shape) -> Option<Template> {
        let mut bytes = [0xffu8; HEADER_CAP];
        let mut vary = |at: usize, range: core::ops::Range<usize>| {
            bytes
                .get_mut(at + range.start..at + range.end)
                .map(|b| b.fill(0))
        };
        let inner = IpAt {
            offset: usize::from(shape.ip_offset),
            v6: shape.ip_v6,
        };
        let l4 = inner.offset + usize::from(shape.ip_header_len);
        let outer = shape.tunnel.map(|t| {
            let ip = IpAt {
                offset: usize::from(shape.l2_len),
                v6: t.outer_v6,
            };
            (ip, ip.offset + usize::from(t.outer_header_len), usize::from(t.offset))
        });
        for ip in core::iter::once(inner).chain(outer.map(|(ip, _, _)| ip)) {
            if ip.v6 {
                vary(ip.offset, varies::IPV6_PAYLOAD_LEN)?;
            } else {
                vary(ip.offset, varies::IPV4_TOTAL_LEN_AND_ID)?;
                vary(ip.offset, varies::IPV4_CHECKSUM)?;
            }
        }
        if let Some((_, udp, _)) = outer {
            vary(udp, varies::UDP_LEN_AND_CHECKSUM)?;
        }
        match shape.transport {
            Transport::Tcp => {
                vary(l4, varies::TCP_SEQ)?;
                vary(l4, varies::TCP_CHECKSUM_AND_URGENT)?;
                *bytes.get_mut(l4 + varies::TCP_FLAGS)? = !TCP_RUN_VARIANT_FLAGS;
            }
            Transport::Udp => {
                vary(l4, varies::UDP_LEN_AND_CHECKSUM)?;
            }
        }
        let offsets = Offsets { inner, outer, l4 };
        let structure = structure_of(shape, &offsets)?;
        Some(Template {
            shape: *shape,
            mask: words(&bytes)?,
            structure: words(&structure)?,
            reference: [0; HEADER_CAP],
            reference_len: 0,
            offsets,
        })
    }

    /// `flow::flow_hash` of `frame` for this shape.
    #[inline(always)]
    pub fn hash(&self, frame: &[u8]) -> u64 {
        let o = &self.offsets;
        let tunnel = o.outer.map(|(_, _, tunnel)| tunnel);
        flow::flow_hash_at(self.shape.transport, o.inner.v6, o.inner.offset, o.l4, tunnel, frame)
    }

    /// The facts `facts::classify` would read from `frame` (whose flow hash for this
    /// shape is `hash`), when it has the reference's layout and no rule refuses it on
    /// its own; `None` when not sure. The caller knows the checksums were validated.
    #[inline(always)]
    pub fn classify(&self, frame: &[u8], hash: u64, parse: &ParseOptions) -> Option<Facts> {
        let o = &self.offsets;
        let headers_len = self.reference_len;
        if frame.len() <= headers_len
            || !same_under(&self.structure, frame, headers_len, &self.reference)
            || self.lengths_agree(frame).is_none()
        {
            return None;
        }
        let payload_len = frame.len() - headers_len;
        let l4_header = frame.get(o.l4..headers_len)?;
        let l4 = match self.shape.transport {
            Transport::Tcp => {
                let tcp = tcp::read(l4_header);
                tcp::refuse_alone(&tcp, payload_len).ok()?;
                L4Facts::Tcp(tcp)
            }
            Transport::Udp => {
                // A plain UDP frame to a tunnel port would parse as a tunnel.
                let port = be16(frame, o.l4 + 2)?;
                let tunnel_port = parse.tunnels
                    && (parse.vxlan_ports.contains(port) || parse.geneve_ports.contains(port));
                if o.outer.is_none() && tunnel_port {
                    return None;
                }
                let udp = udp::read(l4_header);
                udp::refuse_alone(&udp, payload_len).ok()?;
                L4Facts::Udp(udp)
            }
        };
        let outer = match o.outer {
            Some((ip, udp, _)) => Some(OuterFacts {
                ip: ip_facts(frame, ip)?,
                udp_checksum: be16(frame, udp + 6)?,
            }),
            None => None,
        };
        Some(Facts {
            shape: self.shape,
            // Templates are kept only for shapes no fixed-offset classifier takes.
            plain: NOT_PLAIN,
            hash,
            headers_len,
            payload_len,
            outer_ip_len: frame.len() - usize::from(self.shape.l2_len),
            ip: ip_facts(frame, o.inner)?,
            outer,
            l4,
        })
    }

    /// Whether `frame` repeats the held header `held` of `run` wherever a segment of
    /// the run must. The mask covers the flow's identity, so this also finds the flow.
    #[inline(always)]
    pub fn repeats(&self, frame: &[u8], run: &Run, held: &[u8; HEADER_CAP]) -> bool {
        let headers_len = usize::from(run.headers_len);
        // The outer UDP checksum is masked out: only its presence is identity.
        let same_checksum_presence = match self.offsets.outer {
            Some((_, udp, _)) => flow::same_outer_checksum_presence(udp, frame, held),
            None => true,
        };
        frame.len() > headers_len
            && same_under(&self.mask, frame, headers_len, held)
            && same_checksum_presence
    }

    /// Whether `frame`, which [`repeats`](Self::repeats) `run`'s head, continues the
    /// run, and with what effects; `None` when not sure. The caller knows the
    /// transport checksums were validated.
    #[inline(always)]
    pub fn try_join(&self, frame: &[u8], run: &Run, limits: &Limits) -> Option<Joined> {
        let o = &self.offsets;
        let headers_len = usize::from(run.headers_len);
        let payload_len = frame.len() - headers_len;
        self.lengths_agree(frame)?;
        let ip_ids = id_mode(frame, o.inner, &run.ip, run.ip_ids, run.segments)?;
        let outer_ids = match (o.outer, &run.outer) {
            // Whether the outer checksum is present was compared by `repeats` (flow
            // identity); its value was validated with the frame.
            (Some((ip, _, _)), Some(head)) => id_mode(frame, ip, &head.ip, run.outer_ids, run.segments)?,
            (None, None) => run.outer_ids,
            _ => return None,
        };
        let seg_size = usize::from(run.seg_size);
        if payload_len > seg_size || run.outer_ip_len as usize + payload_len > limits.max_bytes {
            return None;
        }
        let short = (payload_len < seg_size).then_some(Reason::ShortSegment);
        let (flags, ends, max_segments) = match &run.l4 {
            RunL4::Tcp(t) => {
                let seq = u32::from_be_bytes(frame.get(o.l4 + 4..o.l4 + 8)?.try_into().ok()?);
                if seq != t.next_seq {
                    return None;
                }
                let flags = TcpFlags(*frame.get(o.l4 + varies::TCP_FLAGS)?);
                let ends = tcp::ends_run_by_flags(flags, payload_len, seg_size);
                (flags, ends, limits.max_segments_tcp)
            }
            RunL4::Udp { .. } => {
                // Only checksummed datagrams are coalesced (`udp::refuse_alone`).
                if be16(frame, o.l4 + 6)? == 0 {
                    return None;
                }
                (TcpFlags::NONE, short, limits.max_segments_udp)
            }
        };
        let ends = ends.or((run.segments + 1 >= max_segments).then_some(Reason::SegmentCap));
        Some(Joined {
            ip_ids,
            outer_ids,
            ends,
            payload_len,
            flags,
        })
    }

    /// Whether every length field says the packet ends where the frame ends (so it
    /// parses as its head did and is neither padded nor truncated), and every IPv4
    /// header checksum verifies.
    #[inline(always)]
    fn lengths_agree(&self, frame: &[u8]) -> Option<()> {
        let o = &self.offsets;
        let ip_agrees = |ip: IpAt| -> Option<()> {
            let len = frame.len().checked_sub(ip.offset)?;
            if ip.v6 {
                let payload = len.checked_sub(IPV6_FIXED_LEN)?;
                (usize::from(be16(frame, ip.offset + 4)?) == payload).then_some(())
            } else {
                let header: &[u8; IPV4_LEN] =
                    frame.get(ip.offset..ip.offset + IPV4_LEN)?.try_into().ok()?;
                (usize::from(be16(frame, ip.offset + 2)?) == len && ip::header_checksum_ok(header))
                    .then_some(())
            }
        };
        ip_agrees(o.inner)?;
        if let Some((ip, udp, _)) = o.outer {
            ip_agrees(ip)?;
            (usize::from(be16(frame, udp + 4)?) == frame.len().checked_sub(udp)?).then_some(())?;
        }
        if self.shape.transport == Transport::Udp {
            let len = frame.len().checked_sub(o.l4)?;
            (usize::from(be16(frame, o.l4 + 4)?) == len && len > UDP_LEN).then_some(())?;
        }
        Some(())
    }
}

/// Whether the first `len` bytes of `frame` equal `like` wherever `mask` has a bit set,
/// compared word by word. The last word is read whole from the frame (which is longer
/// than its headers) and the bytes past `len` are masked out.
#[inline(always)]
fn same_under(mask: &[u64; WORDS], frame: &[u8], len: usize, like: &[u8; HEADER_CAP]) -> bool {
    let words = len.div_ceil(8);
    let body = words.saturating_sub(1) * 8;
    let (Some(frame), Some(like), Some(mask)) =
        (frame.get(..words * 8), like.get(..words * 8), mask.get(..words))
    else {
        return false;
    };
    let Some((&last_mask, body_mask)) = mask.split_last() else { return false };
    let as_word = |b: &[u8]| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8]));
    // Four words at a time in independent lanes (SIMD registers where there are any),
    // then the remaining whole words; no bounds checks inside the loops.
    let mut lanes = [0u64; 4];
    let blocks = frame[..body].chunks_exact(32).zip(like[..body].chunks_exact(32));
    for ((a, b), m) in blocks.zip(body_mask.chunks_exact(4)) {
        for i in 0..4 {
            lanes[i] |= (as_word(&a[i * 8..i * 8 + 8]) ^ as_word(&b[i * 8..i * 8 + 8])) & m[i];
        }
    }
    let done = body / 32 * 32;
    let rest = frame[done..body].chunks_exact(8).zip(like[done..body].chunks_exact(8));
    let differ = rest
        .zip(&body_mask[done / 8..])
        .fold(lanes[0] | lanes[1] | lanes[2] | lanes[3], |acc, ((a, b), m)| {
            acc | ((as_word(a) ^ as_word(b)) & m)
        });
    let tail = (as_word(&frame[body..]) ^ as_word(&like[body..])) & last_mask & VALID[len % 8];
    differ | tail == 0
}

/// `VALID[n]`: the bytes of a word that are among its first `n` (all for 0), in
/// native byte order.
const VALID: [u64; 8] = {
    let mut valid = [u64::MAX; 8];
    let mut n = 1;
    while n < 8 {
        let mut bytes = [0u8; 8];
        let mut i = 0;
        while i < n {
            bytes[i] = 0xff;
            i += 1;
        }
        valid[n] = u64::from_ne_bytes(bytes);
        n += 1;
    }
    valid
};

/// The mask of the bytes that decide how a frame of `shape` parses.
fn structure_of(shape: &Shape, offsets: &Offsets) -> Option<[u8; HEADER_CAP]> {
    let Offsets { inner, outer, l4 } = *offsets;
    let mut bytes = [0u8; HEADER_CAP];
    let mut fixed = |at: usize, range: core::ops::Range<usize>| {
        bytes
            .get_mut(at + range.start..at + range.end)
            .map(|b| b.fill(0xff))
    };
    fixed(0, structure::L2_AFTER_MACS..usize::from(shape.l2_len))?;
    let inner_header_len = usize::from(shape.ip_header_len);
    let mut ips = [(inner, inner_header_len), (inner, inner_header_len)];
    if let (Some((ip, udp, _)), Some(t)) = (outer, shape.tunnel) {
        ips[1] = (ip, udp - ip.offset);
        fixed(udp, structure::UDP_DST_PORT)?;
        let tunnel = usize::from(t.offset);
        fixed(tunnel, structure::TUNNEL_FIRST_WORD)?;
        // An inner Ethernet header: its EtherType and tags.
        let inner_l2 = tunnel + usize::from(t.header_len);
        if inner.offset > inner_l2 {
            fixed(inner_l2, structure::L2_AFTER_MACS..inner.offset - inner_l2)?;
        }
    }
    for (ip, header_len) in ips {
        if ip.v6 {
            fixed(ip.offset, structure::IPV6_VERSION)?;
            fixed(ip.offset, structure::IPV6_NEXT_HEADER)?;
            fixed(ip.offset, structure::IPV6_EXTENSIONS_FROM..header_len)?;
        } else {
            fixed(ip.offset, structure::IPV4_VERSION_IHL)?;
            fixed(ip.offset, structure::IPV4_FLAGS_FRAGMENT)?;
            fixed(ip.offset, structure::IPV4_PROTOCOL)?;
        }
    }
    if shape.transport == Transport::Tcp {
        fixed(l4, structure::TCP_DATA_OFFSET)?;
    }
    Some(bytes)
}

fn words(bytes: &[u8; HEADER_CAP]) -> Option<[u64; WORDS]> {
    let mut words = [0u64; WORDS];
    for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(8)) {
        *word = u64::from_ne_bytes(chunk.try_into().ok()?);
    }
    Some(words)
}

/// `ip::read`'s facts of the IP layer `ip` (its structure already known good).
#[inline(always)]
fn ip_facts(frame: &[u8], ip: IpAt) -> Option<IpFacts> {
    if ip.v6 {
        let header = Ipv6Packet::new_unchecked(frame.get(ip.offset..ip.offset + IPV6_FIXED_LEN)?);
        return Some(IpFacts {
            v6: true,
            ttl: header.hop_limit(),
            tos: header.traffic_class(),
            df: false,
            id: 0,
        });
    }
    let header = Ipv4Packet::new_unchecked(frame.get(ip.offset..ip.offset + IPV4_LEN)?);
    Some(IpFacts {
        v6: false,
        ttl: header.ttl(),
        tos: header.tos(),
        df: header.dont_frag(),
        id: header.ident(),
    })
}

/// `ip::can_join`'s ID rule for the IP layer `ip` of `frame` (TTL, TOS, DF, traffic
/// class and hop limit already equal the head's under the mask).
#[inline(always)]
fn id_mode(frame: &[u8], ip: IpAt, head: &IpFacts, mode: IdMode, segments: u16) -> Option<IdMode> {
    if ip.v6 {
        return Some(mode);
    }
    fast::id_mode(be16(frame, ip.offset + 4)?, head, mode, segments)
}

#[inline(always)]
fn be16(frame: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(frame.get(at..at + 2)?.try_into().ok()?))
}
