//! The fast classifier for the two commonest frames: untagged Ethernet, IPv4 without
//! options, TCP — bare, or inside VXLAN over untagged IPv4 without options (the
//! default Linux VXLAN device) — checksums validated by the caller. It reads the fixed
//! offsets directly instead of walking the frame with `parse_frame` and building a
//! `Layout`, and yields exactly the [`Facts`] that `facts::classify` would.
//!
//! [`Plain`] is generic over `OUTER`, the bytes before the (inner) Ethernet header: 0
//! for a bare frame, [`VXLAN_OUTER`] for the VXLAN encapsulation, whose outer headers
//! get the same treatment as the inner ones (shape checks, the IPv4 header checksum,
//! masked compares against the head, the ID rule).
//!
//! It only ever answers "here are the facts" or "not sure": every frame that the
//! general path would refuse, or that is not of this one shape, gets `None` and takes
//! the general path, which then finds the reason (and keeps the flow in order). So the
//! fast path cannot change a decision; `tests/fast_path.rs` checks that it does not.

use super::coalesce::{Limits, Run, RunL4};
use super::facts::{Facts, L4Facts};
use super::flow;
use super::ip::{self, IpFacts};
use super::fast::{
    id_mode, masked_equal, FastFrame, Joined, TcpSegment, FLAGS_REFUSED, FLAG_ACK, TCP_MIN_LEN,
    TCP_RUN_VARIANT_FLAGS, TCP_WORD_MASK,
};
use super::kind::{plain4_shape, HEADER_CAP, PLAIN6, VXLAN_OUTER};
use super::tcp::{self, TcpFacts};
use super::tunnel::OuterFacts;
use crate::wire::parse::ParseOptions;

const ETHERNET_LEN: usize = 14;
const IPV4_LEN: usize = 20;
const L4_OFFSET: usize = ETHERNET_LEN + IPV4_LEN;
/// Ethernet + IPv4 + the fixed TCP header: what is read at fixed offsets.
pub(crate) const FIXED_LEN: usize = L4_OFFSET + TCP_MIN_LEN;

/// Offsets within the frame.
const ETHERTYPE: usize = 12;
const IP_VERSION_IHL: usize = ETHERNET_LEN;
const IP_TOS: usize = ETHERNET_LEN + 1;
const IP_TOTAL_LEN: usize = ETHERNET_LEN + 2;
const IP_ID: usize = ETHERNET_LEN + 4;
const IP_FLAGS: usize = ETHERNET_LEN + 6;
const IP_TTL: usize = ETHERNET_LEN + 8;
const IP_PROTOCOL: usize = ETHERNET_LEN + 9;
const TCP_DATA_OFFSET: usize = L4_OFFSET + 12;
const TCP_FLAGS: usize = L4_OFFSET + 13;
const ADDRS: usize = ETHERNET_LEN + 12;
const TCP_SEQ: usize = L4_OFFSET + 4;
const IP_CHECKSUM: usize = ETHERNET_LEN + 10;
const TCP_CHECKSUM_AND_URGENT: usize = L4_OFFSET + 16;

/// The word from the TOS byte to the TTL byte (15..23): TOS, flags/fragment and TTL
/// must equal the head's; total length and ID (16..20) change per segment.
const IP_WORD: usize = IP_TOS;
const IP_WORD_MASK: [u8; 8] = [0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff];
/// The word from the ACK number to the window (42..50): ACK, data offset byte, flags
/// and window must equal the head's, except PSH and FIN, which end a run.
const TCP_WORD: usize = L4_OFFSET + 8;

/// IPv4 flags/fragment word: DF may be set; the reserved bit, MF and the offset not.
const IPV4_DF: u16 = 0x4000;

const UDP_LEN: usize = 8;
const OUTER_UDP: usize = ETHERNET_LEN + IPV4_LEN;
const OUTER_UDP_CHECKSUM: usize = OUTER_UDP + 6;
const VXLAN_FLAGS: usize = OUTER_UDP + UDP_LEN;
/// VXLAN's I flag: the VNI is valid (`parse_frame` refuses a header without it).
const VXLAN_FLAG_VNI: u8 = 0x08;
const UDP_PROTOCOL: u8 = 17;

impl<const OUTER: usize> FastFrame for Plain<'_, OUTER> {
    #[inline(always)]
    fn same_flow(&self, held: &[u8; HEADER_CAP]) -> bool {
        same_flow(self, held)
    }
    #[inline(always)]
    fn try_join(&self, run: &Run, held: &[u8; HEADER_CAP], limits: &Limits) -> Option<Joined> {
        Plain::try_join(self, run, held, limits)
    }
    #[inline(always)]
    fn facts(&self, hash: u64) -> Facts {
        Plain::facts(self, hash)
    }
}

/// A TCP/IPv4 frame, bare (`OUTER` 0) or in VXLAN (`OUTER` = [`VXLAN_OUTER`]), that no
/// rule refuses on its own (checked by [`Plain::check`]).
pub(crate) struct Plain<'a, const OUTER: usize> {
    /// The encapsulation (nothing for a bare frame).
    pub outer: &'a [u8; OUTER],
    /// The (inner) Ethernet, IPv4 and fixed TCP headers.
    pub fixed: &'a [u8; FIXED_LEN],
    frame: &'a [u8],
    headers_len: usize,
}

/// Whether the Ethernet + IPv4 header at the start of `h` (whose IP packet should be
/// `ip_len` bytes long and carry `protocol`) is one the fast path takes: no options, no
/// fragment, not padded, header checksum right.
#[inline(always)]
fn plain_ipv4(h: &[u8; L4_OFFSET], ip_len: usize, protocol: u8) -> bool {
    let be16 = |at: usize| u16::from_be_bytes([h[at], h[at + 1]]);
    let Ok(ip_header) = <&[u8; IPV4_LEN]>::try_from(&h[ETHERNET_LEN..L4_OFFSET]) else {
        return false;
    };
    be16(ETHERTYPE) == 0x0800
        && h[IP_VERSION_IHL] == 0x45
        && h[IP_PROTOCOL] == protocol
        // Not padded (and not truncated): the IP packet ends where the frame does.
        && usize::from(be16(IP_TOTAL_LEN)) == ip_len
        && be16(IP_FLAGS) & !IPV4_DF == 0
        && ip::header_checksum_ok(ip_header)
}

impl<'a, const OUTER: usize> Plain<'a, OUTER> {
    /// `frame` when it is a TCP/IPv4 frame of this kind that no rule refuses on its
    /// own; `None` otherwise (the general path decides then).
    #[inline(always)]
    pub fn check(
        frame: &'a [u8],
        validated: bool,
        header_cap: usize,
        parse: &ParseOptions,
    ) -> Option<Self> {
        let outer: &[u8; OUTER] = frame.get(..OUTER)?.try_into().ok()?;
        let fixed: &[u8; FIXED_LEN] = frame.get(OUTER..OUTER + FIXED_LEN)?.try_into().ok()?;
        let be16 = |at: usize| u16::from_be_bytes([fixed[at], fixed[at + 1]]);
        let tcp_len = usize::from(fixed[TCP_DATA_OFFSET] >> 4) * 4;
        let headers_len = OUTER + L4_OFFSET + tcp_len;
        let inner_len = frame.len() - OUTER;
        let plain = validated
            && tcp_len >= TCP_MIN_LEN
            && headers_len < frame.len()
            && headers_len <= header_cap
            && fixed[TCP_FLAGS] & (FLAGS_REFUSED | FLAG_ACK) == FLAG_ACK
            && be16(ETHERTYPE) == 0x0800
            && (OUTER == 0 || Self::vxlan_outer_ok(outer, frame.len(), parse));
        let inner_ip: &[u8; L4_OFFSET] = fixed[..L4_OFFSET].try_into().ok()?;
        if !plain || !plain_ipv4(inner_ip, inner_len - ETHERNET_LEN, 6) {
            return None;
        }
        Some(Plain {
            outer,
            fixed,
            frame,
            headers_len,
        })
    }

    /// The VXLAN encapsulation's own checks: a plain outer IPv4 header carrying UDP to a
    /// VXLAN port, lengths that end with the frame, the I flag.
    #[inline(always)]
    fn vxlan_outer_ok(outer: &[u8; OUTER], frame_len: usize, parse: &ParseOptions) -> bool {
        let (Some(ip), Some(udp)) = (
            outer.get(..L4_OFFSET).and_then(|h| <&[u8; L4_OFFSET]>::try_from(h).ok()),
            outer.get(OUTER_UDP..VXLAN_OUTER),
        ) else {
            return false;
        };
        let port = u16::from_be_bytes([udp[2], udp[3]]);
        let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
        parse.tunnels
            && parse.vxlan_ports.contains(port)
            && udp_len == frame_len - OUTER_UDP
            && udp[UDP_LEN] & VXLAN_FLAG_VNI != 0
            && plain_ipv4(ip, frame_len - ETHERNET_LEN, UDP_PROTOCOL)
    }

    /// Exactly the facts `facts::classify` reads from this frame.
    #[inline(always)]
    pub fn facts(&self, hash: u64) -> Facts {
        let outer = (OUTER != 0).then(|| {
            let o = self.outer;
            OuterFacts {
                ip: ipv4_facts(o),
                udp_checksum: u16::from_be_bytes([
                    o[OUTER_UDP_CHECKSUM],
                    o[OUTER_UDP_CHECKSUM + 1],
                ]),
            }
        });
        Facts {
            shape: plain4_shape(OUTER),
            plain: OUTER,
            hash,
            headers_len: self.headers_len,
            payload_len: self.payload_len(),
            outer_ip_len: self.frame.len() - ETHERNET_LEN,
            ip: ipv4_facts(self.fixed),
            outer,
            l4: L4Facts::Tcp(self.tcp_facts()),
        }
    }

    /// Whether the frame continues `run` (whose head header is `held`): the rules of
    /// `coalesce::can_coalesce` for this shape. `None` when it does not (the general
    /// path then finds the reason and delivers the run).
    ///
    /// The fields that must equal the head's (TOS, DF and fragment word, TTL; ACK, data
    /// offset byte, flags but PSH/FIN, window; the option bytes) are compared with the
    /// held header bytes as masked words, without reading them one by one: the held
    /// header is the head frame's, from which the run's facts were read.
    #[inline(always)]
    pub fn try_join(&self, run: &Run, held: &[u8; HEADER_CAP], limits: &Limits) -> Option<Joined> {
        let RunL4::Tcp(t) = &run.l4 else { return None };
        if run.outer.is_some() != (OUTER != 0) {
            return None;
        }
        let f = self.fixed;
        let inner_held = held.get(OUTER..OUTER + FIXED_LEN)?;
        let mut differ = masked_differ(f, inner_held, IP_WORD, IP_WORD_MASK)
            | masked_differ(f, inner_held, TCP_WORD, TCP_WORD_MASK);
        if OUTER != 0 {
            // The outer IPv4 header's TOS, flags/fragment word and TTL.
            differ |= masked_differ(self.outer, held, IP_WORD, IP_WORD_MASK);
        }
        if differ != 0 || !same_options::<OUTER>(self.frame, held, self.headers_len) {
            return None;
        }
        let ip_ids = id_mode(ip_id(f), &run.ip, run.ip_ids, run.segments)?;
        let outer_ids = match &run.outer {
            Some(head) => id_mode(ip_id(self.outer), &head.ip, run.outer_ids, run.segments)?,
            None => run.outer_ids,
        };
        let segment = TcpSegment::read(f, L4_OFFSET, self.payload_len());
        segment.joins(run, t.next_seq, limits, (ip_ids, outer_ids))
    }

    fn payload_len(&self) -> usize {
        self.frame.len() - self.headers_len
    }

    #[inline(always)]
    fn tcp_facts(&self) -> TcpFacts {
        let mut facts = tcp::read(&self.fixed[L4_OFFSET..]);
        facts.header_len = (self.headers_len - OUTER - L4_OFFSET) as u16;
        facts
    }
}

/// `flow::flow_hash` of a frame of kind `OUTER` with these headers: the inner addresses
/// and ports, and for VXLAN the VXLAN header.
#[inline(always)]
fn hash_of<const OUTER: usize>(outer: &[u8; OUTER], f: &[u8; FIXED_LEN]) -> u64 {
    let addrs = [f[26], f[27], f[28], f[29], f[30], f[31], f[32], f[33]];
    let ports = [f[34], f[35], f[36], f[37]];
    let vxlan = (OUTER != 0).then(|| {
        let at = VXLAN_FLAGS;
        let o = outer;
        [o[at], o[at + 1], o[at + 2], o[at + 3], o[at + 4], o[at + 5], o[at + 6], o[at + 7]]
    });
    flow::plain_tcp4_hash(addrs, ports, vxlan)
}

/// Which fixed-offset kind a frame can only be: by its EtherType and protocol (or next
/// header) byte, bare TCP/IPv4 (0), TCP/IPv4 in VXLAN if the VXLAN flags and the inner
/// protocol byte say so ([`VXLAN_OUTER`]), or TCP/IPv6 ([`PLAIN6`]). Nothing else is
/// checked: the frame may be none of them.
#[inline(always)]
pub(crate) fn kind_at(frame: &[u8]) -> Option<usize> {
    const IPV6_NEXT_HEADER: usize = ETHERNET_LEN + 6;
    let head: &[u8; IP_PROTOCOL + 1] = frame.get(..=IP_PROTOCOL)?.try_into().ok()?;
    let ethertype = u16::from_be_bytes([head[ETHERTYPE], head[ETHERTYPE + 1]]);
    match (ethertype, head[IP_PROTOCOL]) {
        (0x0800, 6) => Some(0),
        (0x0800, UDP_PROTOCOL) => {
            // Only what looks like VXLAN carrying TCP (the I flag, the inner protocol),
            // so that plain UDP goes on to the templates at once; the port and the rest
            // are checked later.
            let looks_vxlan = frame.get(VXLAN_OUTER + IP_PROTOCOL) == Some(&6)
                && frame[VXLAN_FLAGS] & VXLAN_FLAG_VNI != 0;
            looks_vxlan.then_some(VXLAN_OUTER)
        }
        (0x86dd, _) if head[IPV6_NEXT_HEADER] == 6 => Some(PLAIN6),
        _ => None,
    }
}

/// The headers of a frame of kind `OUTER` read at fixed offsets (the encapsulation and
/// the inner Ethernet, IPv4 and fixed TCP headers), whatever the frame is; `None` when
/// it is too short.
#[inline(always)]
fn headers_at<const OUTER: usize>(frame: &[u8]) -> Option<(&[u8; OUTER], &[u8; FIXED_LEN])> {
    let outer = frame.get(..OUTER)?.try_into().ok()?;
    let fixed = frame.get(OUTER..OUTER + FIXED_LEN)?.try_into().ok()?;
    Some((outer, fixed))
}

/// `flow::flow_hash` of `frame` if it is of kind `OUTER` (a meaningless number if it is
/// not); `None` when it is too short to be.
#[inline(always)]
pub(crate) fn hash_at<const OUTER: usize>(frame: &[u8]) -> Option<u64> {
    let (outer, fixed) = headers_at::<OUTER>(frame)?;
    Some(hash_of(outer, fixed))
}

/// Length of the per-segment mask: the VXLAN encapsulation and the fixed inner headers.
const REPEAT_LEN: usize = VXLAN_OUTER + FIXED_LEN;

/// Which bytes of the fixed headers (from the frame's start) a segment continuing a run
/// of kind `outer` must repeat from the run's head (0xff) and which it may change (0):
/// each IPv4 header's ID and header checksum, the TCP sequence number, PSH and FIN,
/// the TCP checksum and urgent pointer, and the outer UDP checksum. Everything else —
/// addresses, ports, MACs, EtherTypes, IHL, TOS, the lengths, flags and fragment word,
/// TTL, protocol, the VXLAN header, ACK, data offset, the other flags, window — must
/// be the head's.
const fn repeat_mask(outer: usize) -> [u8; REPEAT_LEN] {
    let mut mask = [0xff; REPEAT_LEN];
    mask = clear(mask, outer + FIXED_LEN, REPEAT_LEN - outer - FIXED_LEN);
    mask = clear(mask, outer + IP_ID, 2);
    mask = clear(mask, outer + IP_CHECKSUM, 2);
    mask = clear(mask, outer + TCP_SEQ, 4);
    mask = clear(mask, outer + TCP_CHECKSUM_AND_URGENT, 4);
    if outer != 0 {
        mask = clear(mask, IP_ID, 2);
        mask = clear(mask, IP_CHECKSUM, 2);
        mask = clear(mask, OUTER_UDP_CHECKSUM, 2);
    }
    mask[outer + TCP_FLAGS] = !TCP_RUN_VARIANT_FLAGS;
    mask
}

/// `mask` with `len` bytes from `at` cleared.
const fn clear(mut mask: [u8; REPEAT_LEN], at: usize, len: usize) -> [u8; REPEAT_LEN] {
    let mut i = at;
    while i < at + len {
        mask[i] = 0;
        i += 1;
    }
    mask
}

/// The per-segment masks of the two kinds.
const REPEAT_MASKS: [[u8; REPEAT_LEN]; 2] = [repeat_mask(0), repeat_mask(VXLAN_OUTER)];

/// Whether `frame`, of kind `OUTER`, is the next full-size segment of `run` (whose head
/// header `held` is of this kind): it repeats the head's headers outside the
/// per-segment fields ([`repeat_mask`]) and its option bytes, is as long as the head,
/// and its IDs, header checksums and sequence number are what the rules want.
///
/// Such a frame has the head's layout and lengths, so every check `Plain::check` makes
/// of a frame on its own holds for it as it held for the head, except the header
/// checksums, checked here; and it is the head's flow. This is the commonest frame by
/// far, and it joins without those checks, the flow compare and the field-by-field
/// rules of `Plain::try_join`. Any other frame gets `None` and takes that path.
#[inline(always)]
pub(crate) fn continues<const OUTER: usize>(
    frame: &[u8],
    run: &Run,
    held: &[u8; HEADER_CAP],
    limits: &Limits,
) -> Option<Joined> {
    let RunL4::Tcp(t) = &run.l4 else { return None };
    let headers_len = usize::from(run.headers_len);
    let payload_len = usize::from(run.seg_size);
    if frame.len() != headers_len + payload_len || run.outer.is_some() != (OUTER != 0) {
        return None;
    }
    let (outer, fixed) = headers_at::<OUTER>(frame)?;
    let mask = &REPEAT_MASKS[(OUTER != 0) as usize];
    let equal = match OUTER {
        0 => masked_equal::<FIXED_LEN>(frame, held, mask),
        _ => masked_equal::<REPEAT_LEN>(frame, held, mask),
    };
    if !equal || !same_options::<OUTER>(frame, held, headers_len) {
        return None;
    }
    // The masked compare left each IPv4 header's ID and checksum to check; the held
    // head's headers verified when it was classified.
    if !ip::header_checksum_ok_beside(ip_at(fixed, 0)?, ip_at(held, OUTER)?) {
        return None;
    }
    let outer_ids = match &run.outer {
        Some(head) => {
            // The outer UDP checksum is masked out: only its presence is identity
            // (`flow::same_outer_checksum_presence`), compared with the head's facts.
            let present = outer[OUTER_UDP_CHECKSUM] | outer[OUTER_UDP_CHECKSUM + 1] != 0;
            let outer_ok = ip::header_checksum_ok_beside(ip_at(outer, 0)?, ip_at(held, 0)?);
            if !outer_ok || present != (head.udp_checksum != 0) {
                return None;
            }
            id_mode(ip_id(outer), &head.ip, run.outer_ids, run.segments)?
        }
        None => run.outer_ids,
    };
    let ip_ids = id_mode(ip_id(fixed), &run.ip, run.ip_ids, run.segments)?;
    let segment = TcpSegment::read(fixed, L4_OFFSET, payload_len);
    segment.joins(run, t.next_seq, limits, (ip_ids, outer_ids))
}

/// The IPv4 header after the Ethernet header at `at` in `h`.
#[inline(always)]
fn ip_at(h: &[u8], at: usize) -> Option<&[u8; IPV4_LEN]> {
    h.get(at + ETHERNET_LEN..at + L4_OFFSET)?.try_into().ok()
}

/// The IPv4 ID of the Ethernet + IPv4 header at the start of `h`.
#[inline(always)]
fn ip_id(h: &[u8]) -> u16 {
    u16::from_be_bytes([h[IP_ID], h[IP_ID + 1]])
}

/// The IP facts of the Ethernet + IPv4 header at the start of `h`.
#[inline(always)]
fn ipv4_facts(h: &[u8]) -> IpFacts {
    let be16 = |at: usize| u16::from_be_bytes([h[at], h[at + 1]]);
    IpFacts {
        v6: false,
        ttl: h[IP_TTL],
        tos: h[IP_TOS],
        df: be16(IP_FLAGS) & IPV4_DF != 0,
        id: be16(IP_ID),
    }
}

/// The bits of the 8 bytes at `at` that differ between `frame` and `held` under `mask`.
#[inline(always)]
fn masked_differ(frame: &[u8], held: &[u8], at: usize, mask: [u8; 8]) -> u64 {
    let word = |b: &[u8]| match b.get(at..at + 8) {
        Some(w) => u64::from_ne_bytes(w.try_into().unwrap_or([0; 8])),
        None => u64::MAX,
    };
    (word(frame) ^ word(held)) & u64::from_ne_bytes(mask)
}

/// Whether the TCP option bytes (after the fixed header, up to `headers_len`) of
/// `frame` equal the held head's; the data offsets are already equal. Up to 16 option
/// bytes (the usual 12 of a timestamp) are compared as two overlapping words.
#[inline(always)]
fn same_options<const OUTER: usize>(frame: &[u8], held: &[u8; HEADER_CAP], headers_len: usize) -> bool {
    let (Some(a), Some(b)) = (
        frame.get(OUTER + FIXED_LEN..headers_len),
        held.get(OUTER + FIXED_LEN..headers_len),
    ) else {
        return false;
    };
    let len = a.len();
    let word = |c: &[u8], at: usize| match c.get(at..at + 8) {
        Some(w) => u64::from_ne_bytes(w.try_into().unwrap_or([0; 8])),
        None => 0,
    };
    match len {
        0 => true,
        8..=16 => (word(a, 0) ^ word(b, 0)) | (word(a, len - 8) ^ word(b, len - 8)) == 0,
        _ => a == b,
    }
}

/// Whether frame `p` and the held header `held` (of a run whose shape is this kind's)
/// are the same flow: what `flow::same_flow` compares for this shape — the Ethernet
/// header, the IP protocol, addresses and ports, and for VXLAN also the outer IP
/// protocol, addresses and UDP ports, the VXLAN header and the inner Ethernet header —
/// in a few word loads.
#[inline(always)]
pub(crate) fn same_flow<const OUTER: usize>(p: &Plain<'_, OUTER>, held: &[u8; HEADER_CAP]) -> bool {
    let Some(inner) = held.get(OUTER..OUTER + FIXED_LEN) else {
        return false;
    };
    let word = |b: &[u8], at: usize| u64::from_ne_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
    let ports = |b: &[u8], at: usize| u32::from_ne_bytes(b[at..at + 4].try_into().unwrap_or([0; 4]));
    let frame: &[u8] = p.fixed;
    // Bytes 0..14 as two overlapping words; addresses 26..34; ports 34..38.
    let mut differ = (word(frame, 0) ^ word(inner, 0))
        | (word(frame, 6) ^ word(inner, 6))
        | (word(frame, ADDRS) ^ word(inner, ADDRS))
        | u64::from(ports(frame, L4_OFFSET) ^ ports(inner, L4_OFFSET))
        | u64::from(frame[IP_PROTOCOL] ^ inner[IP_PROTOCOL]);
    if OUTER != 0 {
        // Outer Ethernet 0..14; outer addresses and UDP ports 26..38; the VXLAN header
        // 42..50 (the inner Ethernet header is compared above).
        let outer: &[u8] = p.outer;
        differ |= (word(outer, 0) ^ word(held, 0))
            | (word(outer, 6) ^ word(held, 6))
            | (word(outer, ADDRS) ^ word(held, ADDRS))
            | u64::from(ports(outer, L4_OFFSET) ^ ports(held, L4_OFFSET))
            | u64::from(outer[IP_PROTOCOL] ^ held[IP_PROTOCOL])
            | (word(outer, VXLAN_FLAGS) ^ word(held, VXLAN_FLAGS))
            | u64::from(!flow::same_outer_checksum_presence(OUTER_UDP, outer, held));
    }
    differ == 0
}
