//! The fast classifier for the common frame: untagged Ethernet, IPv4 without options,
//! TCP, checksums validated by the caller. It reads the fixed offsets directly instead
//! of walking the frame with `parse_frame` and building a `Layout`, and yields exactly
//! the [`Facts`] that `facts::classify` would.
//!
//! It only ever answers "here are the facts" or "not sure": every frame that the
//! general path would refuse, or that is not of this one shape, gets `None` and takes
//! the general path, which then finds the reason (and keeps the flow in order). So the
//! fast path cannot change a decision; `tests/fast_path.rs` checks that it does not.

use super::coalesce::{Limits, Run, RunL4};
use super::facts::{Facts, L4Facts};
use super::flow::{self, Shape, Transport};
use super::ip::{self, IdMode, IpFacts};
use super::reason::Reason;
use super::table::HEADER_CAP;
use super::tcp::{self, TcpFacts};
use crate::wire::TcpFlags;

const ETHERNET_LEN: usize = 14;
const IPV4_LEN: usize = 20;
const TCP_MIN_LEN: usize = 20;
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

/// The word from the TOS byte to the TTL byte (15..23): TOS, flags/fragment and TTL
/// must equal the head's; total length and ID (16..20) change per segment.
const IP_WORD: usize = IP_TOS;
const IP_WORD_MASK: [u8; 8] = [0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff];
/// The word from the ACK number to the window (42..50): ACK, data offset byte, flags
/// and window must equal the head's, except PSH and FIN, which end a run.
const TCP_WORD: usize = L4_OFFSET + 8;
const TCP_WORD_MASK: [u8; 8] = [0xff, 0xff, 0xff, 0xff, 0xff, !0x09, 0xff, 0xff];

/// IPv4 flags/fragment word: DF may be set; the reserved bit, MF and the offset not.
const IPV4_DF: u16 = 0x4000;
/// TCP flags byte: ACK must be set; SYN, RST, URG, CWR must not (PSH, FIN, ECE may).
const FLAGS_REFUSED: u8 = 0x02 | 0x04 | 0x20 | 0x80;
const FLAG_ACK: u8 = 0x10;

/// The shape of every frame this classifier accepts.
pub(crate) const SHAPE: Shape = Shape {
    l2_len: ETHERNET_LEN as u16,
    tunnel: None,
    ip_offset: ETHERNET_LEN as u16,
    ip_header_len: IPV4_LEN as u16,
    ip_v6: false,
    transport: Transport::Tcp,
};

/// A plain TCP/IPv4 frame that no rule refuses on its own (checked by [`Plain::check`]).
pub(crate) struct Plain<'a> {
    pub fixed: &'a [u8; FIXED_LEN],
    frame: &'a [u8],
    headers_len: usize,
}

/// What joining a held run changes, as `can_coalesce` would decide it.
pub(crate) struct Joined {
    pub ip_ids: IdMode,
    pub outer_ids: IdMode,
    pub ends: Option<Reason>,
    pub payload_len: usize,
    pub flags: TcpFlags,
}

impl<'a> Plain<'a> {
    /// `frame` when it is a plain TCP/IPv4 frame that no rule refuses on its own;
    /// `None` otherwise (the general path decides then).
    #[inline(always)]
    pub fn check(frame: &'a [u8], validated: bool, header_cap: usize) -> Option<Self> {
        let fixed: &[u8; FIXED_LEN] = frame.get(..FIXED_LEN)?.try_into().ok()?;
        let be16 = |at: usize| u16::from_be_bytes([fixed[at], fixed[at + 1]]);
        let tcp_len = usize::from(fixed[TCP_DATA_OFFSET] >> 4) * 4;
        let headers_len = L4_OFFSET + tcp_len;
        let plain = validated
            && be16(ETHERTYPE) == 0x0800
            && fixed[IP_VERSION_IHL] == 0x45
            && fixed[IP_PROTOCOL] == 6
            // Not padded (and not truncated): the IP packet ends where the frame does.
            && ETHERNET_LEN + usize::from(be16(IP_TOTAL_LEN)) == frame.len()
            && be16(IP_FLAGS) & !IPV4_DF == 0
            && tcp_len >= TCP_MIN_LEN
            && headers_len < frame.len()
            && headers_len <= header_cap
            && fixed[TCP_FLAGS] & (FLAGS_REFUSED | FLAG_ACK) == FLAG_ACK;
        if !plain {
            return None;
        }
        let ip_header: &[u8; IPV4_LEN] = fixed[ETHERNET_LEN..L4_OFFSET].try_into().ok()?;
        if !ip::header_checksum_ok(ip_header) {
            return None;
        }
        Some(Plain {
            fixed,
            frame,
            headers_len,
        })
    }

    /// `flow::flow_hash` of this frame.
    #[inline(always)]
    pub fn hash(&self) -> u64 {
        let f = self.fixed;
        let addrs = [f[26], f[27], f[28], f[29], f[30], f[31], f[32], f[33]];
        flow::plain_tcp4_hash(addrs, [f[34], f[35], f[36], f[37]])
    }

    /// Exactly the facts `facts::classify` reads from this frame.
    #[inline(always)]
    pub fn facts(&self, hash: u64) -> Facts {
        Facts {
            shape: SHAPE,
            hash,
            headers_len: self.headers_len,
            payload_len: self.payload_len(),
            outer_ip_len: self.frame.len() - ETHERNET_LEN,
            ip: self.ip_facts(),
            outer: None,
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
        if run.outer.is_some() {
            return None;
        }
        let f = self.fixed;
        let differ = masked_differ(f, held, IP_WORD, IP_WORD_MASK)
            | masked_differ(f, held, TCP_WORD, TCP_WORD_MASK);
        if differ != 0 || !same_options(self.frame, held, self.headers_len) {
            return None;
        }
        let ip_ids = self.ip_id_mode(run)?;
        let payload_len = self.payload_len();
        let seg_size = usize::from(run.seg_size);
        let seq = u32::from_be_bytes([f[TCP_SEQ], f[TCP_SEQ + 1], f[TCP_SEQ + 2], f[TCP_SEQ + 3]]);
        if payload_len > seg_size
            || seq != t.next_seq
            || run.outer_ip_len as usize + payload_len > limits.max_bytes
        {
            return None;
        }
        let flags = TcpFlags(f[TCP_FLAGS]);
        let ends = if flags.contains(TcpFlags::PSH) {
            Some(Reason::PshEnd)
        } else if flags.contains(TcpFlags::FIN) {
            Some(Reason::FinEnd)
        } else if payload_len < seg_size {
            Some(Reason::ShortSegment)
        } else {
            (run.segments + 1 >= limits.max_segments_tcp).then_some(Reason::SegmentCap)
        };
        Some(Joined {
            ip_ids,
            outer_ids: run.outer_ids,
            ends,
            payload_len,
            flags,
        })
    }

    /// `ip::can_join`'s IPv4 ID rule (TTL, TOS and DF already compared equal): the ID
    /// is the head's + segments, or the head's when DF (decided by the 2nd packet).
    #[inline(always)]
    fn ip_id_mode(&self, run: &Run) -> Option<IdMode> {
        let f = self.fixed;
        let offset = u16::from_be_bytes([f[IP_ID], f[IP_ID + 1]]).wrapping_sub(run.ip.id);
        let mode = match run.ip_ids {
            IdMode::Undecided if run.ip.df && offset == 0 => IdMode::Fixed,
            IdMode::Undecided => IdMode::Incrementing,
            decided => decided,
        };
        let expected = if mode == IdMode::Fixed {
            0
        } else {
            run.segments
        };
        (offset == expected).then_some(mode)
    }

    fn payload_len(&self) -> usize {
        self.frame.len() - self.headers_len
    }

    #[inline(always)]
    fn ip_facts(&self) -> IpFacts {
        let f = self.fixed;
        let be16 = |at: usize| u16::from_be_bytes([f[at], f[at + 1]]);
        IpFacts {
            v6: false,
            ttl: f[IP_TTL],
            tos: f[IP_TOS],
            df: be16(IP_FLAGS) & IPV4_DF != 0,
            id: be16(IP_ID),
        }
    }

    #[inline(always)]
    fn tcp_facts(&self) -> TcpFacts {
        let mut facts = tcp::read(&self.fixed[L4_OFFSET..]);
        facts.header_len = (self.headers_len - L4_OFFSET) as u16;
        facts
    }
}

/// The bits of the 8 bytes at `at` that differ between `frame` and `held` under `mask`.
#[inline(always)]
fn masked_differ(
    frame: &[u8; FIXED_LEN],
    held: &[u8; HEADER_CAP],
    at: usize,
    mask: [u8; 8],
) -> u64 {
    let word = |b: &[u8]| u64::from_ne_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
    (word(frame) ^ word(held)) & u64::from_ne_bytes(mask)
}

/// Whether the TCP option bytes (54..`headers_len`) of `frame` equal the held head's;
/// the data offsets are already equal. Up to 16 option bytes (the usual 12 of a
/// timestamp) are compared as two overlapping words.
#[inline(always)]
fn same_options(frame: &[u8], held: &[u8; HEADER_CAP], headers_len: usize) -> bool {
    let (Some(a), Some(b)) = (
        frame.get(FIXED_LEN..headers_len),
        held.get(FIXED_LEN..headers_len),
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

/// Whether plain frame `frame` and the held header `held` (of a run whose shape is
/// [`SHAPE`]) are the same flow: what `flow::same_flow` compares for this shape — the
/// Ethernet header, the IP protocol, addresses and ports — in a few word loads.
#[inline(always)]
pub(crate) fn same_flow(frame: &[u8; FIXED_LEN], held: &[u8; HEADER_CAP]) -> bool {
    let word = |b: &[u8], at: usize| u64::from_ne_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]));
    let ports =
        |b: &[u8]| u32::from_ne_bytes(b[L4_OFFSET..L4_OFFSET + 4].try_into().unwrap_or([0; 4]));
    // Bytes 0..14 as two overlapping words; addresses 26..34; ports 34..38.
    let differ = (word(frame, 0) ^ word(held, 0))
        | (word(frame, 6) ^ word(held, 6))
        | (word(frame, ADDRS) ^ word(held, ADDRS))
        | u64::from(ports(frame) ^ ports(held))
        | u64::from(frame[IP_PROTOCOL] ^ held[IP_PROTOCOL]);
    differ == 0
}
