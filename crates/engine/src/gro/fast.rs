//! What the fast paths share (`plain.rs`, `plain6.rs`, `template.rs`): the answer of a
//! fast join, the TCP rules they read at fixed offsets, the masked header compare and
//! the IPv4 ID rule. It imports the general path's types (`Run`, `Facts`) and nothing
//! of the fast paths, which import it and not each other.

use super::coalesce::{Limits, Run};
use super::facts::Facts;
use super::ip::{IdMode, IpFacts};
use super::kind::HEADER_CAP;
use super::reason::Reason;
use super::tcp;
use crate::wire::TcpFlags;

/// The fixed TCP header, without options.
pub(crate) const TCP_MIN_LEN: usize = 20;
/// PSH and FIN may differ within a run (they end it).
pub(crate) const TCP_RUN_VARIANT_FLAGS: u8 = 0x08 | 0x01;
/// The TCP word from the ACK number to the window (ACK, data offset, flags, window),
/// masked where a run's segments may differ.
pub(crate) const TCP_WORD_MASK: [u8; 8] =
    [0xff, 0xff, 0xff, 0xff, 0xff, !TCP_RUN_VARIANT_FLAGS, 0xff, 0xff];
/// TCP flags byte: ACK must be set; SYN, RST, URG, CWR must not (PSH, FIN, ECE may).
pub(crate) const FLAGS_REFUSED: u8 = 0x02 | 0x04 | 0x20 | 0x80;
pub(crate) const FLAG_ACK: u8 = 0x10;

/// A frame a fixed-offset classifier took: what `Gro::push_looked` needs of it.
pub(crate) trait FastFrame {
    /// Whether the held header `held` (of a run of this kind) is the frame's flow.
    fn same_flow(&self, held: &[u8; HEADER_CAP]) -> bool;
    /// Whether the frame continues `run` (head header `held`), and how.
    fn try_join(&self, run: &Run, held: &[u8; HEADER_CAP], limits: &Limits) -> Option<Joined>;
    /// Exactly the facts `facts::classify` reads from the frame.
    fn facts(&self, hash: u64) -> Facts;
}

/// What joining a held run changes, as `can_coalesce` would decide it.
pub(crate) struct Joined {
    pub ip_ids: IdMode,
    pub outer_ids: IdMode,
    pub ends: Option<Reason>,
    pub payload_len: usize,
    pub flags: TcpFlags,
}

/// What a fixed-offset classifier read of a TCP segment whose headers matched its run's.
pub(crate) struct TcpSegment {
    pub seq: u32,
    pub flags: TcpFlags,
    pub payload_len: usize,
}

impl TcpSegment {
    /// The sequence number and flags of the TCP header at `l4` in `headers` (the frame's
    /// fixed headers, which the caller has checked are long enough), for a segment of
    /// `payload_len` bytes.
    #[inline(always)]
    pub fn read(headers: &[u8], l4: usize, payload_len: usize) -> Self {
        const SEQ: usize = 4;
        const FLAGS: usize = 13;
        let h = headers;
        TcpSegment {
            seq: u32::from_be_bytes([h[l4 + SEQ], h[l4 + SEQ + 1], h[l4 + SEQ + 2], h[l4 + SEQ + 3]]),
            flags: TcpFlags(h[l4 + FLAGS]),
            payload_len,
        }
    }

    /// The rest of `can_coalesce` for this segment: size, sequence and caps; how the
    /// run ends after it; `ids` are the ID modes the IP layers decided.
    #[inline(always)]
    pub fn joins(&self, run: &Run, next_seq: u32, limits: &Limits, ids: (IdMode, IdMode)) -> Option<Joined> {
        let seg_size = usize::from(run.seg_size);
        if self.payload_len > seg_size
            || self.seq != next_seq
            || run.outer_ip_len as usize + self.payload_len > limits.max_bytes
        {
            return None;
        }
        let full = run.segments + 1 >= limits.max_segments_tcp;
        let ends = tcp::ends_run_by_flags(self.flags, self.payload_len, seg_size)
            .or(full.then_some(Reason::SegmentCap));
        Some(Joined {
            ip_ids: ids.0,
            outer_ids: ids.1,
            ends,
            payload_len: self.payload_len,
            flags: self.flags,
        })
    }
}

/// `ip::can_join`'s IPv4 ID rule (TTL, TOS and DF already compared equal): the ID is
/// the head's + segments, or the head's when DF (decided by the 2nd packet).
#[inline(always)]
pub(crate) fn id_mode(id: u16, head: &IpFacts, mode: IdMode, segments: u16) -> Option<IdMode> {
    let offset = id.wrapping_sub(head.id);
    let mode = match mode {
        IdMode::Undecided if head.df && offset == 0 => IdMode::Fixed,
        IdMode::Undecided => IdMode::Incrementing,
        decided => decided,
    };
    let expected = if mode == IdMode::Fixed { 0 } else { segments };
    (offset == expected).then_some(mode)
}

/// Whether the first `LEN` bytes (at least 16) of `frame` and `held` are equal where
/// `mask` is set, 16 bytes at a time (the last block overlapping): SSE2, which every
/// x86_64 has, compares a VXLAN frame's 104 bytes in 7 blocks instead of 13 words.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn masked_equal<const LEN: usize>(frame: &[u8], held: &[u8; HEADER_CAP], mask: &[u8]) -> bool {
    use core::arch::x86_64::{
        _mm_and_si128, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128,
        _mm_setzero_si128, _mm_xor_si128,
    };
    const BLOCK: usize = 16;
    let len = LEN;
    if !(BLOCK..=HEADER_CAP).contains(&len) || frame.len() < len || mask.len() < len {
        return false;
    }
    // SAFETY: SSE2 is part of the x86_64 baseline; every block read is at
    // `at..at + BLOCK` with `at + BLOCK <= len`, and `len` is within `frame`, `held` and
    // `mask` (checked above).
    unsafe {
        let mut differ = _mm_setzero_si128();
        let mut block = 0;
        while block < len {
            let at = block.min(len - BLOCK);
            let a = _mm_loadu_si128(frame.as_ptr().add(at).cast());
            let b = _mm_loadu_si128(held.as_ptr().add(at).cast());
            let m = _mm_loadu_si128(mask.as_ptr().add(at).cast());
            differ = _mm_or_si128(differ, _mm_and_si128(_mm_xor_si128(a, b), m));
            block += BLOCK;
        }
        _mm_movemask_epi8(_mm_cmpeq_epi8(differ, _mm_setzero_si128())) == 0xffff
    }
}

/// `masked_equal` as 8-byte words (the last one overlapping), where there is no SSE2.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn masked_equal<const LEN: usize>(frame: &[u8], held: &[u8; HEADER_CAP], mask: &[u8]) -> bool {
    let len = LEN;
    if len < 8 || frame.len() < len || mask.len() < len {
        return false;
    }
    let word = |b: &[u8], at: usize| match b.get(at..at + 8) {
        Some(w) => u64::from_ne_bytes(w.try_into().unwrap_or([0; 8])),
        None => u64::MAX,
    };
    let mut differ = 0;
    let mut at = 0;
    while at < len {
        let at_ = at.min(len - 8);
        differ |= (word(frame, at_) ^ word(held, at_)) & word(mask, at_);
        at += 8;
    }
    differ == 0
}
