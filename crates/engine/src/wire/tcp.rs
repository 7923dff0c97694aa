//! TCP header (RFC 9293) and its options.

use core::fmt;
use core::ops::{BitAnd, BitOr, BitOrAssign, Not};

use super::bytes::{get_u16, get_u32, set_u16, set_u32};
use super::error::{truncated, Layer, ParseError};

mod field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const SEQ: usize = 4;
    pub const ACK: usize = 8;
    pub const DATA_OFFSET: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: usize = 14;
    pub const CHECKSUM: usize = 16;
    pub const URGENT: usize = 18;
}

/// Length of a TCP header without options.
pub const TCP_MIN_HEADER_LEN: usize = 20;

/// The eight TCP flag bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub const FIN: TcpFlags = TcpFlags(0x01);
    pub const SYN: TcpFlags = TcpFlags(0x02);
    pub const RST: TcpFlags = TcpFlags(0x04);
    pub const PSH: TcpFlags = TcpFlags(0x08);
    pub const ACK: TcpFlags = TcpFlags(0x10);
    pub const URG: TcpFlags = TcpFlags(0x20);
    pub const ECE: TcpFlags = TcpFlags(0x40);
    pub const CWR: TcpFlags = TcpFlags(0x80);
    pub const NONE: TcpFlags = TcpFlags(0);

    #[inline]
    pub const fn bits(self) -> u8 {
        self.0
    }
    /// True if every flag in `other` is set.
    #[inline]
    pub const fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }
    /// True if any flag in `other` is set.
    #[inline]
    pub const fn intersects(self, other: TcpFlags) -> bool {
        self.0 & other.0 != 0
    }
    #[inline]
    pub const fn union(self, other: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | other.0)
    }
    #[inline]
    pub const fn without(self, other: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 & !other.0)
    }
}

impl BitOr for TcpFlags {
    type Output = TcpFlags;
    fn bitor(self, rhs: TcpFlags) -> TcpFlags {
        self.union(rhs)
    }
}
impl BitOrAssign for TcpFlags {
    fn bitor_assign(&mut self, rhs: TcpFlags) {
        self.0 |= rhs.0;
    }
}
impl BitAnd for TcpFlags {
    type Output = TcpFlags;
    fn bitand(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 & rhs.0)
    }
}
impl Not for TcpFlags {
    type Output = TcpFlags;
    fn not(self) -> TcpFlags {
        TcpFlags(!self.0)
    }
}

impl fmt::Debug for TcpFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [&str; 8] = ["FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"];
        let mut first = true;
        for (bit, name) in NAMES.iter().enumerate() {
            if self.0 & (1 << bit) != 0 {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        if first {
            f.write_str("-")?;
        }
        Ok(())
    }
}

/// A view of a TCP segment. `new_checked` guarantees 20 ≤ data offset × 4 ≤ buffer length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpPacket<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    #[inline]
    pub fn check_len(&self) -> Result<(), ParseError> {
        let len = self.buffer.as_ref().len();
        if len < TCP_MIN_HEADER_LEN {
            return Err(truncated(Layer::Tcp));
        }
        let header_len = self.header_len();
        if header_len < TCP_MIN_HEADER_LEN {
            return Err(ParseError::BadHeaderLength { layer: Layer::Tcp });
        }
        if len < header_len {
            return Err(truncated(Layer::Tcp));
        }
        Ok(())
    }

    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    fn data(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    #[inline]
    pub fn src_port(&self) -> u16 {
        get_u16(self.data(), field::SRC_PORT)
    }
    #[inline]
    pub fn dst_port(&self) -> u16 {
        get_u16(self.data(), field::DST_PORT)
    }
    #[inline]
    pub fn seq_number(&self) -> u32 {
        get_u32(self.data(), field::SEQ)
    }
    #[inline]
    pub fn ack_number(&self) -> u32 {
        get_u32(self.data(), field::ACK)
    }
    /// Header length in bytes (data offset × 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.data()[field::DATA_OFFSET] >> 4) * 4
    }
    #[inline]
    pub fn flags(&self) -> TcpFlags {
        TcpFlags(self.data()[field::FLAGS])
    }
    #[inline]
    pub fn window(&self) -> u16 {
        get_u16(self.data(), field::WINDOW)
    }
    #[inline]
    pub fn checksum(&self) -> u16 {
        get_u16(self.data(), field::CHECKSUM)
    }
    #[inline]
    pub fn urgent_pointer(&self) -> u16 {
        get_u16(self.data(), field::URGENT)
    }

    #[inline]
    fn header_end(&self) -> usize {
        self.header_len()
            .clamp(TCP_MIN_HEADER_LEN, self.data().len())
    }

    /// The raw option bytes (data offset × 4 − 20 of them).
    #[inline]
    pub fn options(&self) -> &[u8] {
        &self.data()[TCP_MIN_HEADER_LEN..self.header_end()]
    }

    /// The options, decoded one by one.
    #[inline]
    pub fn option_iter(&self) -> TcpOptions<'_> {
        TcpOptions::new(self.options())
    }

    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.data()[self.header_end()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    #[inline]
    fn data_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    #[inline]
    pub fn set_src_port(&mut self, port: u16) {
        set_u16(self.data_mut(), field::SRC_PORT, port);
    }
    #[inline]
    pub fn set_dst_port(&mut self, port: u16) {
        set_u16(self.data_mut(), field::DST_PORT, port);
    }
    #[inline]
    pub fn set_seq_number(&mut self, seq: u32) {
        set_u32(self.data_mut(), field::SEQ, seq);
    }
    #[inline]
    pub fn set_ack_number(&mut self, ack: u32) {
        set_u32(self.data_mut(), field::ACK, ack);
    }
    /// Sets the data offset from a header length in bytes (a multiple of 4, ≤ 60).
    #[inline]
    pub fn set_header_len(&mut self, len: usize) {
        let reserved = self.data()[field::DATA_OFFSET] & 0x0f;
        self.data_mut()[field::DATA_OFFSET] = (((len / 4) as u8) << 4) | reserved;
    }
    #[inline]
    pub fn set_flags(&mut self, flags: TcpFlags) {
        self.data_mut()[field::FLAGS] = flags.0;
    }
    #[inline]
    pub fn set_window(&mut self, window: u16) {
        set_u16(self.data_mut(), field::WINDOW, window);
    }
    #[inline]
    pub fn set_checksum(&mut self, checksum: u16) {
        set_u16(self.data_mut(), field::CHECKSUM, checksum);
    }
    #[inline]
    pub fn set_urgent_pointer(&mut self, urgent: u16) {
        set_u16(self.data_mut(), field::URGENT, urgent);
    }
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_end();
        &mut self.data_mut()[TCP_MIN_HEADER_LEN..end]
    }
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_end();
        &mut self.data_mut()[start..]
    }
}

/// One TCP option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpOption<'a> {
    EndOfList,
    NoOperation,
    MaxSegmentSize(u16),
    WindowScale(u8),
    SackPermitted,
    /// Up to four (left, right) edges, as raw bytes (8 per block).
    Sack(&'a [u8]),
    Timestamps {
        value: u32,
        echo: u32,
    },
    Unknown {
        kind: u8,
        data: &'a [u8],
    },
}

/// Iterator over TCP options; yields `Err` once (then stops) for a malformed option.
#[derive(Debug, Clone)]
pub struct TcpOptions<'a> {
    rest: &'a [u8],
}

impl<'a> TcpOptions<'a> {
    #[inline]
    pub fn new(options: &'a [u8]) -> Self {
        TcpOptions { rest: options }
    }
}

impl<'a> Iterator for TcpOptions<'a> {
    type Item = Result<TcpOption<'a>, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        let (&kind, after_kind) = self.rest.split_first()?;
        match kind {
            0 => {
                // End of list: the remaining bytes are padding.
                self.rest = &[];
                return Some(Ok(TcpOption::EndOfList));
            }
            1 => {
                self.rest = after_kind;
                return Some(Ok(TcpOption::NoOperation));
            }
            _ => {}
        }
        let len = match after_kind.first() {
            Some(&len) if len >= 2 && usize::from(len) <= self.rest.len() => usize::from(len),
            _ => {
                self.rest = &[];
                return Some(Err(ParseError::BadHeaderLength { layer: Layer::Tcp }));
            }
        };
        let data = &self.rest[2..len];
        self.rest = &self.rest[len..];
        let option = match (kind, data.len()) {
            (2, 2) => TcpOption::MaxSegmentSize(u16::from_be_bytes([data[0], data[1]])),
            (3, 1) => TcpOption::WindowScale(data[0]),
            (4, 0) => TcpOption::SackPermitted,
            (5, n) if n % 8 == 0 && n > 0 => TcpOption::Sack(data),
            (8, 8) => TcpOption::Timestamps {
                value: get_u32(data, 0),
                echo: get_u32(data, 4),
            },
            _ => TcpOption::Unknown { kind, data },
        };
        Some(Ok(option))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real Linux SYN (port 47862 → 5201): MSS 1460, SACK permitted, timestamps,
    /// NOP, window scale 7.
    pub(crate) const SYN: [u8; 40] = [
        0xba, 0xf6, 0x14, 0x51, 0x5c, 0x7e, 0x61, 0x2a, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfa,
        0xf0, 0x8d, 0x3c, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x9c, 0x2e,
        0x3c, 0x8e, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07,
    ];

    #[test]
    fn reads_syn_with_options() {
        let tcp = TcpPacket::new_checked(&SYN[..]).unwrap();
        assert_eq!(tcp.src_port(), 47862);
        assert_eq!(tcp.dst_port(), 5201);
        assert_eq!(tcp.seq_number(), 0x5c7e612a);
        assert_eq!(tcp.ack_number(), 0);
        assert_eq!(tcp.header_len(), 40);
        assert_eq!(tcp.flags(), TcpFlags::SYN);
        assert_eq!(tcp.window(), 64240);
        assert_eq!(tcp.checksum(), 0x8d3c);
        assert_eq!(tcp.urgent_pointer(), 0);
        assert!(tcp.payload().is_empty());
        let options: Vec<_> = tcp.option_iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(
            options,
            vec![
                TcpOption::MaxSegmentSize(1460),
                TcpOption::SackPermitted,
                TcpOption::Timestamps {
                    value: 0x9c2e3c8e,
                    echo: 0
                },
                TcpOption::NoOperation,
                TcpOption::WindowScale(7),
            ]
        );
    }

    #[test]
    fn malformed_option_is_an_error() {
        let mut options = TcpOptions::new(&[2, 9, 5, 0xb4]);
        assert_eq!(
            options.next(),
            Some(Err(ParseError::BadHeaderLength { layer: Layer::Tcp }))
        );
        assert_eq!(options.next(), None);
        let mut zero_len = TcpOptions::new(&[0x22, 0, 1, 1]);
        assert!(matches!(zero_len.next(), Some(Err(_))));
    }

    #[test]
    fn bad_data_offset() {
        let mut bytes = SYN;
        bytes[12] = 0x40;
        assert_eq!(
            TcpPacket::new_checked(&bytes[..]),
            Err(ParseError::BadHeaderLength { layer: Layer::Tcp })
        );
        bytes[12] = 0xb0;
        assert_eq!(
            TcpPacket::new_checked(&bytes[..]),
            Err(ParseError::Truncated { layer: Layer::Tcp })
        );
    }

    #[test]
    fn setters_and_flags() {
        let mut bytes = SYN;
        let mut tcp = TcpPacket::new_checked(&mut bytes[..]).unwrap();
        tcp.set_flags(TcpFlags::ACK | TcpFlags::PSH);
        tcp.set_seq_number(7);
        tcp.set_header_len(20);
        assert!(tcp.flags().contains(TcpFlags::ACK));
        assert!(!tcp.flags().intersects(TcpFlags::SYN | TcpFlags::FIN));
        assert_eq!(format!("{:?}", tcp.flags()), "PSH|ACK");
        assert_eq!(tcp.seq_number(), 7);
        assert_eq!(tcp.payload().len(), 20);
    }
}
