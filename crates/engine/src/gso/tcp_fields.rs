//! The TCP header of a super-packet as both segmenters read it (`tcp.rs`, the general
//! path, and `fast.rs`, the fixed-layout path): field offsets and the per-segment flags.

use crate::checksum;

use super::be;
use super::plan::Plan;

/// TCP field offsets from the start of the TCP header.
pub(super) mod field {
    pub const SEQ: usize = 4;
    /// Data offset, reserved bits and the flags.
    pub const FLAGS_WORD: usize = 12;
    pub const CHECKSUM: usize = 16;
}

const FIN: u16 = 0x01;
const PSH: u16 = 0x08;
const CWR: u16 = 0x80;

/// What the TCP header of the super-packet contributes to every segment.
#[derive(Clone, Copy)]
pub(super) struct TcpFields {
    pub offset: usize,
    pub base_seq: u32,
    pub flags_word: u16,
    /// Sum of the header with sequence number, flags word and checksum zeroed.
    pub constant_sum: u32,
}

impl TcpFields {
    pub fn new(frame: &[u8], plan: &Plan) -> Self {
        let header = &frame[plan.l4_offset..plan.headers_len];
        let mut zeroed = [0u8; 60];
        let zeroed = &mut zeroed[..header.len()];
        zeroed.copy_from_slice(header);
        be::put32(zeroed, field::SEQ, 0);
        be::put16(zeroed, field::FLAGS_WORD, 0);
        be::put16(zeroed, field::CHECKSUM, 0);
        TcpFields {
            offset: plan.l4_offset,
            base_seq: be::get32(header, field::SEQ),
            flags_word: be::get16(header, field::FLAGS_WORD),
            constant_sum: checksum::sum(zeroed, 0),
        }
    }

    /// Flags of segment `index` of `count`: CWR only on the first (Linux clears it on the
    /// rest so the sender's window reduction is signalled once), FIN and PSH only on the
    /// last.
    #[inline]
    pub fn flags(&self, index: usize, count: usize) -> u16 {
        let mut word = self.flags_word;
        if index != 0 {
            word &= !CWR;
        }
        if index + 1 != count {
            word &= !(FIN | PSH);
        }
        word
    }
}
