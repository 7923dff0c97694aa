//! The fast classifier for TCP/IPv6: untagged Ethernet, IPv6 without extension
//! headers, TCP, checksums validated by the caller — `plain.rs` for IPv6. It reads the
//! fixed offsets directly and yields exactly the [`Facts`] that `facts::classify`
//! would; anything it is not sure of gets `None` and takes the general path, which
//! finds the reason (`tests/fast_path.rs` checks that no decision changes).

use super::coalesce::{Limits, Run, RunL4};
use super::facts::{Facts, L4Facts};
use super::flow;
use super::ip::IpFacts;
use super::fast::{
    masked_equal, FastFrame, Joined, TcpSegment, FLAGS_REFUSED, FLAG_ACK, TCP_MIN_LEN,
    TCP_RUN_VARIANT_FLAGS, TCP_WORD_MASK,
};
use super::kind::{HEADER_CAP, PLAIN6, PLAIN6_SHAPE};
use super::tcp;

const ETHERNET_LEN: usize = 14;
const IPV6_LEN: usize = 40;
const L4_OFFSET: usize = ETHERNET_LEN + IPV6_LEN;
/// Ethernet + IPv6 + the fixed TCP header: what is read at fixed offsets.
const FIXED_LEN: usize = L4_OFFSET + TCP_MIN_LEN;

const ETHERTYPE: usize = 12;
const IP: usize = ETHERNET_LEN;
const IP_PAYLOAD_LEN: usize = IP + 4;
const IP_NEXT_HEADER: usize = IP + 6;
const IP_HOP_LIMIT: usize = IP + 7;
/// Source address through the TCP ports: one flow-identity range.
const ADDRS_TO_PORTS: core::ops::Range<usize> = IP + 8..L4_OFFSET + 4;
const TCP_SEQ: usize = L4_OFFSET + 4;
const TCP_DATA_OFFSET: usize = L4_OFFSET + 12;
const TCP_FLAGS: usize = L4_OFFSET + 13;
const TCP_CHECKSUM_AND_URGENT: usize = L4_OFFSET + 16;

/// The IPv6 word from the version to the hop limit (14..22): version, traffic class
/// and flow label, next header and hop limit must equal the head's; the payload length
/// changes per segment.
const IP_WORD: usize = IP;
const IP_WORD_MASK: [u8; 8] = [0xff, 0xff, 0xff, 0xff, 0, 0, 0xff, 0xff];
/// The word from the ACK number to the window, as in `plain.rs`.
const TCP_WORD: usize = L4_OFFSET + 8;
/// The flow label: the low 20 bits of the first word (identity; the traffic class is a
/// merge rule).
const FLOW_LABEL_MASK: u32 = 0x000f_ffff;

const TCP_PROTOCOL: u8 = 6;


/// A TCP/IPv6 frame that no rule refuses on its own (checked by [`Plain6::check`]).
pub(crate) struct Plain6<'a> {
    fixed: &'a [u8; FIXED_LEN],
    frame: &'a [u8],
    headers_len: usize,
}

impl<'a> Plain6<'a> {
    /// `frame` when it is a TCP/IPv6 frame of this kind that no rule refuses on its
    /// own; `None` otherwise (the general path decides then).
    #[inline(always)]
    pub fn check(frame: &'a [u8], validated: bool, header_cap: usize) -> Option<Self> {
        let fixed: &[u8; FIXED_LEN] = frame.get(..FIXED_LEN)?.try_into().ok()?;
        let be16 = |at: usize| u16::from_be_bytes([fixed[at], fixed[at + 1]]);
        let tcp_len = usize::from(fixed[TCP_DATA_OFFSET] >> 4) * 4;
        let headers_len = L4_OFFSET + tcp_len;
        let plain = validated
            && be16(ETHERTYPE) == 0x86dd
            && fixed[IP] >> 4 == 6
            // TCP right after the fixed header: no extension headers.
            && fixed[IP_NEXT_HEADER] == TCP_PROTOCOL
            // Not padded (and not truncated): the IP packet ends where the frame does.
            && L4_OFFSET + usize::from(be16(IP_PAYLOAD_LEN)) == frame.len()
            && tcp_len >= TCP_MIN_LEN
            && headers_len < frame.len()
            && headers_len <= header_cap
            && fixed[TCP_FLAGS] & (FLAGS_REFUSED | FLAG_ACK) == FLAG_ACK;
        plain.then_some(Plain6 {
            fixed,
            frame,
            headers_len,
        })
    }

    /// Exactly the facts `facts::classify` reads from this frame.
    #[inline(always)]
    pub fn facts(&self, hash: u64) -> Facts {
        let f = self.fixed;
        let mut tcp = tcp::read(&f[L4_OFFSET..]);
        tcp.header_len = (self.headers_len - L4_OFFSET) as u16;
        Facts {
            shape: PLAIN6_SHAPE,
            plain: PLAIN6,
            hash,
            headers_len: self.headers_len,
            payload_len: self.payload_len(),
            outer_ip_len: self.frame.len() - ETHERNET_LEN,
            ip: IpFacts {
                v6: true,
                ttl: f[IP_HOP_LIMIT],
                tos: (f[IP] << 4) | (f[IP + 1] >> 4),
                df: false,
                id: 0,
            },
            outer: None,
            l4: L4Facts::Tcp(tcp),
        }
    }

    /// Whether the frame continues `run` (whose head header is `held`), as
    /// `coalesce::can_coalesce` decides for this shape; `None` when it does not.
    #[inline(always)]
    pub fn try_join(&self, run: &Run, held: &[u8; HEADER_CAP], limits: &Limits) -> Option<Joined> {
        let RunL4::Tcp(t) = &run.l4 else { return None };
        if run.outer.is_some() {
            return None;
        }
        let f = self.fixed;
        let differ = masked_differ(f, held, IP_WORD, IP_WORD_MASK)
            | masked_differ(f, held, TCP_WORD, TCP_WORD_MASK);
        let options = (self.frame.get(FIXED_LEN..self.headers_len), held.get(FIXED_LEN..self.headers_len));
        if differ != 0 || !matches!(options, (Some(a), Some(b)) if flow::same_bytes(a, b)) {
            return None;
        }
        let segment = TcpSegment::read(f, L4_OFFSET, self.payload_len());
        // IPv6 has no ID: the modes stay as they are.
        segment.joins(run, t.next_seq, limits, (run.ip_ids, run.outer_ids))
    }

    fn payload_len(&self) -> usize {
        self.frame.len() - self.headers_len
    }
}

/// `flow::flow_hash` of `frame` if it is of this kind (a meaningless number if it is
/// not); `None` when it is too short to be.
#[inline(always)]
pub(crate) fn hash_at(frame: &[u8]) -> Option<u64> {
    (frame.len() >= FIXED_LEN).then(|| flow::flow_hash(&PLAIN6_SHAPE, frame))
}

/// Which bytes of the fixed headers a segment continuing a run must repeat from the
/// run's head (0xff) and which it may change (0): the TCP sequence number, PSH and FIN,
/// the TCP checksum and urgent pointer. Everything else — MACs, EtherType, version,
/// traffic class, flow label, payload length, next header, hop limit, addresses,
/// ports, ACK, data offset, the other flags, window — must be the head's.
const REPEAT_MASK: [u8; FIXED_LEN] = {
    let mut mask = [0xff; FIXED_LEN];
    let mut i = 0;
    while i < 4 {
        mask[TCP_SEQ + i] = 0;
        mask[TCP_CHECKSUM_AND_URGENT + i] = 0;
        i += 1;
    }
    mask[TCP_FLAGS] = !TCP_RUN_VARIANT_FLAGS;
    mask
};

/// Whether `frame` is the next full-size segment of `run` (whose head header `held` is
/// of this kind): `plain::continues` for TCP/IPv6, which has no IDs or header checksum
/// to check. Any other frame gets `None` and takes `Plain6::check`'s path.
#[inline(always)]
pub(crate) fn continues(frame: &[u8], run: &Run, held: &[u8; HEADER_CAP], limits: &Limits) -> Option<Joined> {
    let RunL4::Tcp(t) = &run.l4 else { return None };
    let headers_len = usize::from(run.headers_len);
    let payload_len = usize::from(run.seg_size);
    if frame.len() != headers_len + payload_len || run.outer.is_some() {
        return None;
    }
    let options = (frame.get(FIXED_LEN..headers_len), held.get(FIXED_LEN..headers_len));
    if !masked_equal::<FIXED_LEN>(frame, held, &REPEAT_MASK)
        || !matches!(options, (Some(a), Some(b)) if flow::same_bytes(a, b))
    {
        return None;
    }
    let segment = TcpSegment::read(frame, L4_OFFSET, payload_len);
    segment.joins(run, t.next_seq, limits, (run.ip_ids, run.outer_ids))
}

/// The bits of the 8 bytes at `at` that differ between `frame` and `held` under `mask`.
#[inline(always)]
fn masked_differ(frame: &[u8; FIXED_LEN], held: &[u8; HEADER_CAP], at: usize, mask: [u8; 8]) -> u64 {
    let word = |b: &[u8]| u64::from_ne_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
    (word(frame) ^ word(held)) & u64::from_ne_bytes(mask)
}

/// Whether frame `p` and the held header `held` (of a run of [`PLAIN6_SHAPE`]) are the same
/// flow: what `flow::same_flow` compares for this shape — the Ethernet header, the flow
/// label, the next header, and the addresses through the ports.
#[inline(always)]
pub(crate) fn same_flow(p: &Plain6<'_>, held: &[u8; HEADER_CAP]) -> bool {
    let f: &[u8] = p.fixed;
    let word = |b: &[u8], at: usize| u64::from_ne_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
    let first = |b: &[u8]| u32::from_be_bytes(b[IP..IP + 4].try_into().unwrap_or([0; 4]));
    let l2 = (word(f, 0) ^ word(held, 0)) | (word(f, 6) ^ word(held, 6));
    let label = (first(f) ^ first(held)) & FLOW_LABEL_MASK;
    l2 == 0
        && label == 0
        && f[IP_NEXT_HEADER] == held[IP_NEXT_HEADER]
        && flow::same_bytes(&f[ADDRS_TO_PORTS], &held[ADDRS_TO_PORTS])
}

impl FastFrame for Plain6<'_> {
    #[inline(always)]
    fn same_flow(&self, held: &[u8; HEADER_CAP]) -> bool {
        same_flow(self, held)
    }
    #[inline(always)]
    fn try_join(&self, run: &Run, held: &[u8; HEADER_CAP], limits: &Limits) -> Option<Joined> {
        Plain6::try_join(self, run, held, limits)
    }
    #[inline(always)]
    fn facts(&self, hash: u64) -> Facts {
        Plain6::facts(self, hash)
    }
}
