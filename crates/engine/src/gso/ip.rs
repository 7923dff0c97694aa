//! The per-segment fields of an IPv4 or IPv6 header: lengths, IPv4 ID, fragment word
//! and header checksum. Everything constant is summed once per super-packet.

use crate::checksum;
use crate::wire::layout::{IpLayer, IpVersion};

use super::be;

/// IPv4 field offsets from the start of the IPv4 header.
pub(super) mod v4 {
    pub const TOTAL_LEN: usize = 2;
    pub const IDENT: usize = 4;
    pub const FRAG: usize = 6;
    pub const CHECKSUM: usize = 10;
    pub const MIN_LEN: usize = 20;
    /// Don't Fragment / More Fragments bits and the offset mask of the fragment word.
    pub const DF: u16 = 0x4000;
    pub const MF: u16 = 0x2000;
    pub const OFFSET_MASK: u16 = 0x1fff;
}

/// IPv6 field offsets from the start of the IPv6 header.
pub(super) mod v6 {
    pub const PAYLOAD_LEN: usize = 4;
    pub const HEADER_LEN: usize = 40;
}

/// What one IP header of the super-packet needs per segment.
#[derive(Debug, Clone, Copy)]
pub(super) enum IpFields {
    V4(Ipv4Fields),
    V6 { offset: usize },
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Ipv4Fields {
    pub offset: usize,
    pub base_id: u16,
    /// Flags and fragment offset as in the super-packet (DF usually).
    pub frag_word: u16,
    /// Sum of the header with total length, ID, fragment word and checksum zeroed
    /// (unfolded: below 2^20).
    pub constant_sum: u32,
}

impl IpFields {
    /// Reads the header at `ip.offset`; the caller has checked it lies inside `frame`.
    pub fn new(frame: &[u8], ip: &IpLayer) -> Self {
        match ip.version {
            IpVersion::V6 => IpFields::V6 { offset: ip.offset },
            IpVersion::V4 => {
                let header = &frame[ip.offset..ip.l4_offset];
                // The words other than total length, ID, fragment word and checksum:
                // version/IHL/TOS, TTL/protocol, the addresses, then any options.
                let word = |at: usize| u32::from(be::get16(header, at));
                let fixed = word(0) + word(8) + word(12) + word(14) + word(16) + word(18);
                let options = &header[v4::MIN_LEN..];
                let options = if options.is_empty() { 0 } else { checksum::sum(options, 0) };
                IpFields::V4(Ipv4Fields {
                    offset: ip.offset,
                    base_id: be::get16(header, v4::IDENT),
                    frag_word: be::get16(header, v4::FRAG),
                    constant_sum: fixed + options,
                })
            }
        }
    }

    /// Writes the length fields (and for IPv4 the ID `base + id_step`, the fragment word
    /// and the header checksum) for a segment whose bytes end `wire_len` bytes after the
    /// start of the frame.
    #[inline(always)]
    pub fn patch(&self, header: &mut [u8], wire_len: usize, id_step: u16, frag_word: Option<u16>) {
        match self {
            IpFields::V6 { offset } => {
                let payload_len = wire_len - offset - v6::HEADER_LEN;
                be::put16(header, offset + v6::PAYLOAD_LEN, payload_len as u16);
            }
            IpFields::V4(f) => f.patch(header, wire_len, id_step, frag_word),
        }
    }

    pub fn as_v4(&self) -> Option<&Ipv4Fields> {
        match self {
            IpFields::V4(f) => Some(f),
            IpFields::V6 { .. } => None,
        }
    }
}

impl Ipv4Fields {
    pub fn dont_fragment(&self) -> bool {
        self.frag_word & v4::DF != 0
    }

    #[inline(always)]
    fn patch(&self, header: &mut [u8], wire_len: usize, id_step: u16, frag_word: Option<u16>) {
        let at = self.offset;
        let total_len = (wire_len - at) as u16;
        let id = self.base_id.wrapping_add(id_step);
        let frag = frag_word.unwrap_or(self.frag_word);
        be::put16(header, at + v4::TOTAL_LEN, total_len);
        be::put16(header, at + v4::IDENT, id);
        be::put16(header, at + v4::FRAG, frag);
        let sum = self.constant_sum + u32::from(total_len) + u32::from(id) + u32::from(frag);
        be::put16(header, at + v4::CHECKSUM, checksum::finish(sum));
    }
}
