//! GRE header (RFC 2784 with the RFC 2890 key and sequence number extensions).

use super::bytes::{get_u16, get_u32, set_u16, set_u32};
use super::error::{truncated, Layer, ParseError};
use super::ethernet::EtherType;

pub const GRE_MIN_HEADER_LEN: usize = 4;

const FLAG_CHECKSUM: u16 = 0x8000;
const FLAG_ROUTING: u16 = 0x4000;
const FLAG_KEY: u16 = 0x2000;
const FLAG_SEQUENCE: u16 = 0x1000;
const VERSION_MASK: u16 = 0x0007;

mod field {
    pub const FLAGS: usize = 0;
    pub const PROTOCOL: usize = 2;
    pub const OPTIONAL: usize = 4;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GreHeader<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> GreHeader<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        GreHeader { buffer }
    }

    /// Checks version 0, no routing (RFC 1701 source routes are refused, as Linux does)
    /// and that the optional fields fit.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let header = Self::new_unchecked(buffer);
        let len = header.buffer.as_ref().len();
        if len < GRE_MIN_HEADER_LEN {
            return Err(truncated(Layer::Gre));
        }
        let flags = header.flags_word();
        if flags & VERSION_MASK != 0 || flags & FLAG_ROUTING != 0 {
            return Err(ParseError::BadTunnelHeader { layer: Layer::Gre });
        }
        if len < header.header_len() {
            return Err(truncated(Layer::Gre));
        }
        Ok(header)
    }

    #[inline]
    fn flags_word(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::FLAGS)
    }
    #[inline]
    pub fn has_checksum(&self) -> bool {
        self.flags_word() & FLAG_CHECKSUM != 0
    }
    #[inline]
    pub fn has_key(&self) -> bool {
        self.flags_word() & FLAG_KEY != 0
    }
    #[inline]
    pub fn has_sequence(&self) -> bool {
        self.flags_word() & FLAG_SEQUENCE != 0
    }
    #[inline]
    pub fn version(&self) -> u8 {
        (self.flags_word() & VERSION_MASK) as u8
    }
    #[inline]
    pub fn protocol(&self) -> EtherType {
        get_u16(self.buffer.as_ref(), field::PROTOCOL).into()
    }
    /// 4 bytes plus 4 for each of checksum(+reserved), key and sequence number.
    #[inline]
    pub fn header_len(&self) -> usize {
        GRE_MIN_HEADER_LEN
            + 4 * usize::from(self.has_checksum())
            + 4 * usize::from(self.has_key())
            + 4 * usize::from(self.has_sequence())
    }
    #[inline]
    fn key_offset(&self) -> usize {
        field::OPTIONAL + 4 * usize::from(self.has_checksum())
    }
    #[inline]
    fn sequence_offset(&self) -> usize {
        self.key_offset() + 4 * usize::from(self.has_key())
    }
    #[inline]
    pub fn checksum(&self) -> Option<u16> {
        self.has_checksum()
            .then(|| get_u16(self.buffer.as_ref(), field::OPTIONAL))
    }
    #[inline]
    pub fn key(&self) -> Option<u32> {
        self.has_key()
            .then(|| get_u32(self.buffer.as_ref(), self.key_offset()))
    }
    #[inline]
    pub fn sequence(&self) -> Option<u32> {
        self.has_sequence()
            .then(|| get_u32(self.buffer.as_ref(), self.sequence_offset()))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> GreHeader<T> {
    /// Writes the flags word for the given optional fields (version 0) and the protocol.
    /// The buffer must hold the resulting `header_len()`.
    #[inline]
    pub fn set_fixed(&mut self, checksum: bool, key: bool, sequence: bool, protocol: EtherType) {
        let mut flags = 0;
        if checksum {
            flags |= FLAG_CHECKSUM;
        }
        if key {
            flags |= FLAG_KEY;
        }
        if sequence {
            flags |= FLAG_SEQUENCE;
        }
        let data = self.buffer.as_mut();
        set_u16(data, field::FLAGS, flags);
        set_u16(data, field::PROTOCOL, protocol.into());
    }
    /// Stores the checksum (and zeroes the reserved word after it); no-op without C.
    #[inline]
    pub fn set_checksum(&mut self, checksum: u16) {
        if self.has_checksum() {
            set_u32(
                self.buffer.as_mut(),
                field::OPTIONAL,
                u32::from(checksum) << 16,
            );
        }
    }
    #[inline]
    pub fn set_key(&mut self, key: u32) {
        if self.has_key() {
            let at = self.key_offset();
            set_u32(self.buffer.as_mut(), at, key);
        }
    }
    #[inline]
    pub fn set_sequence(&mut self, sequence: u32) {
        if self.has_sequence() {
            let at = self.sequence_offset();
            set_u32(self.buffer.as_mut(), at, sequence);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_key_and_sequence() {
        let bytes = [
            0xb0, 0x00, 0x65, 0x58, 0x12, 0x34, 0, 0, 0, 0, 0, 42, 0, 0, 0, 7,
        ];
        let gre = GreHeader::new_checked(&bytes[..]).unwrap();
        assert_eq!(gre.header_len(), 16);
        assert_eq!(gre.protocol(), EtherType::TransparentEthernet);
        assert_eq!(gre.checksum(), Some(0x1234));
        assert_eq!(gre.key(), Some(42));
        assert_eq!(gre.sequence(), Some(7));
        assert_eq!(
            GreHeader::new_checked(&bytes[..15]),
            Err(ParseError::Truncated { layer: Layer::Gre })
        );
    }

    #[test]
    fn key_only_and_setters() {
        let mut bytes = [0u8; 8];
        let mut gre = GreHeader::new_unchecked(&mut bytes[..]);
        gre.set_fixed(false, true, false, EtherType::Ipv4);
        gre.set_key(0xdeadbeef);
        assert_eq!(bytes, [0x20, 0, 0x08, 0x00, 0xde, 0xad, 0xbe, 0xef]);
        let gre = GreHeader::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            (gre.checksum(), gre.key(), gre.sequence()),
            (None, Some(0xdeadbeef), None)
        );
    }

    #[test]
    fn refuses_routing_and_versions() {
        assert_eq!(
            GreHeader::new_checked(&[0x40, 0, 0x08, 0][..]),
            Err(ParseError::BadTunnelHeader { layer: Layer::Gre })
        );
        assert_eq!(
            GreHeader::new_checked(&[0x00, 1, 0x08, 0][..]),
            Err(ParseError::BadTunnelHeader { layer: Layer::Gre })
        );
    }
}
