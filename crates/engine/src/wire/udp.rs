//! UDP header (RFC 768).

use super::bytes::{get_u16, set_u16};
use super::error::{truncated, Layer, ParseError};

mod field {
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const LENGTH: usize = 4;
    pub const CHECKSUM: usize = 6;
}

pub const UDP_HEADER_LEN: usize = 8;

/// A view of a UDP datagram. `new_checked` guarantees 8 ≤ length field ≤ buffer length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpPacket<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
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
        if len < UDP_HEADER_LEN {
            return Err(truncated(Layer::Udp));
        }
        let length = usize::from(self.len());
        if length < UDP_HEADER_LEN {
            return Err(ParseError::BadHeaderLength { layer: Layer::Udp });
        }
        if len < length {
            return Err(truncated(Layer::Udp));
        }
        Ok(())
    }

    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn src_port(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::SRC_PORT)
    }
    #[inline]
    pub fn dst_port(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::DST_PORT)
    }
    /// The length field: header plus payload.
    #[inline]
    pub fn len(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::LENGTH)
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= UDP_HEADER_LEN
    }
    #[inline]
    pub fn checksum(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::CHECKSUM)
    }
    /// The payload up to the length field.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let data = self.buffer.as_ref();
        let end = usize::from(self.len()).clamp(UDP_HEADER_LEN, data.len());
        &data[UDP_HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    #[inline]
    pub fn set_src_port(&mut self, port: u16) {
        set_u16(self.buffer.as_mut(), field::SRC_PORT, port);
    }
    #[inline]
    pub fn set_dst_port(&mut self, port: u16) {
        set_u16(self.buffer.as_mut(), field::DST_PORT, port);
    }
    #[inline]
    pub fn set_len(&mut self, len: u16) {
        set_u16(self.buffer.as_mut(), field::LENGTH, len);
    }
    #[inline]
    pub fn set_checksum(&mut self, checksum: u16) {
        set_u16(self.buffer.as_mut(), field::CHECKSUM, checksum);
    }
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len()).clamp(UDP_HEADER_LEN, self.buffer.as_ref().len());
        &mut self.buffer.as_mut()[UDP_HEADER_LEN..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_checks_length() {
        // DNS query header: 53000 → 53, length 12.
        let bytes = [
            0xcf, 0x08, 0x00, 0x35, 0x00, 0x0c, 0x12, 0x34, 0xaa, 0xbb, 0xcc, 0xdd, 0xee,
        ];
        let udp = UdpPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!((udp.src_port(), udp.dst_port(), udp.len()), (53000, 53, 12));
        assert_eq!(udp.checksum(), 0x1234);
        assert_eq!(udp.payload(), &[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(
            UdpPacket::new_checked(&bytes[..11]),
            Err(ParseError::Truncated { layer: Layer::Udp })
        );
        let mut short = bytes;
        short[5] = 7;
        assert_eq!(
            UdpPacket::new_checked(&short[..]),
            Err(ParseError::BadHeaderLength { layer: Layer::Udp })
        );
    }
}
