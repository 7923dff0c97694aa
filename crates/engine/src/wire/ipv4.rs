//! IPv4 header (RFC 791).

use std::net::Ipv4Addr;

use super::bytes::{get_u16, set_u16};
use super::error::{truncated, Layer, ParseError};
use super::ip::IpProtocol;
use crate::checksum;

mod field {
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const TOTAL_LEN: usize = 2;
    pub const IDENT: usize = 4;
    pub const FLAGS_FRAG: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: usize = 10;
    pub const SRC: core::ops::Range<usize> = 12..16;
    pub const DST: core::ops::Range<usize> = 16..20;
}

/// Length of an IPv4 header without options.
pub const IPV4_MIN_HEADER_LEN: usize = 20;

const FLAG_DONT_FRAG: u16 = 0x4000;
const FLAG_MORE_FRAGS: u16 = 0x2000;
const FRAG_OFFSET_MASK: u16 = 0x1fff;
/// The bits that make a packet a fragment: MF or a non-zero offset.
pub(super) const FRAGMENT_BITS: u16 = FLAG_MORE_FRAGS | FRAG_OFFSET_MASK;

/// A view of an IPv4 packet. `new_checked` guarantees the header (with options) and the
/// total length it announces lie inside the buffer, so no getter can panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Packet<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks the version, that IHL ≥ 5, and that IHL × 4 ≤ total length ≤ buffer length.
    /// Bytes after the total length (Ethernet padding) are allowed.
    #[inline]
    pub fn check_len(&self) -> Result<(), ParseError> {
        let len = self.buffer.as_ref().len();
        if len < IPV4_MIN_HEADER_LEN {
            return Err(truncated(Layer::Ipv4));
        }
        if self.version() != 4 {
            return Err(ParseError::BadIpVersion(self.version()));
        }
        let header_len = self.header_len();
        if header_len < IPV4_MIN_HEADER_LEN {
            return Err(ParseError::BadHeaderLength { layer: Layer::Ipv4 });
        }
        if len < header_len {
            return Err(truncated(Layer::Ipv4));
        }
        let total_len = usize::from(self.total_len());
        if total_len < header_len {
            return Err(ParseError::LengthMismatch { layer: Layer::Ipv4 });
        }
        if len < total_len {
            return Err(truncated(Layer::Ipv4));
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
    pub fn version(&self) -> u8 {
        self.data()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL × 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.data()[field::VER_IHL] & 0x0f) * 4
    }

    /// The whole type-of-service byte (DSCP and ECN).
    #[inline]
    pub fn tos(&self) -> u8 {
        self.data()[field::TOS]
    }

    #[inline]
    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }

    #[inline]
    pub fn ecn(&self) -> u8 {
        self.tos() & 0x03
    }

    #[inline]
    pub fn total_len(&self) -> u16 {
        get_u16(self.data(), field::TOTAL_LEN)
    }

    #[inline]
    pub fn ident(&self) -> u16 {
        get_u16(self.data(), field::IDENT)
    }

    #[inline]
    pub fn dont_frag(&self) -> bool {
        get_u16(self.data(), field::FLAGS_FRAG) & FLAG_DONT_FRAG != 0
    }

    #[inline]
    pub fn more_frags(&self) -> bool {
        get_u16(self.data(), field::FLAGS_FRAG) & FLAG_MORE_FRAGS != 0
    }

    /// Fragment offset in bytes.
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (get_u16(self.data(), field::FLAGS_FRAG) & FRAG_OFFSET_MASK) * 8
    }

    /// True for any fragment: MF set or a non-zero offset.
    #[inline]
    pub fn is_fragment(&self) -> bool {
        get_u16(self.data(), field::FLAGS_FRAG) & FRAGMENT_BITS != 0
    }

    #[inline]
    pub fn ttl(&self) -> u8 {
        self.data()[field::TTL]
    }

    #[inline]
    pub fn protocol(&self) -> IpProtocol {
        self.data()[field::PROTOCOL].into()
    }

    #[inline]
    pub fn checksum(&self) -> u16 {
        get_u16(self.data(), field::CHECKSUM)
    }

    #[inline]
    pub fn src_addr(&self) -> Ipv4Addr {
        let b = &self.data()[field::SRC];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    #[inline]
    pub fn dst_addr(&self) -> Ipv4Addr {
        let b = &self.data()[field::DST];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// The options between the fixed header and IHL × 4 (empty if there are none).
    #[inline]
    pub fn options(&self) -> &[u8] {
        let end = self
            .header_len()
            .clamp(IPV4_MIN_HEADER_LEN, self.data().len());
        &self.data()[IPV4_MIN_HEADER_LEN..end]
    }

    /// The header including options.
    #[inline]
    pub fn header(&self) -> &[u8] {
        let end = self
            .header_len()
            .clamp(IPV4_MIN_HEADER_LEN, self.data().len());
        &self.data()[..end]
    }

    /// The payload up to the total length (padding after it is excluded).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let data = self.data();
        let end = usize::from(self.total_len()).min(data.len());
        let start = self.header_len().min(end);
        &data[start..end]
    }

    /// Whether the header checksum is correct (the header sums to 0xffff).
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::fold(checksum::sum(self.header(), 0)) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    #[inline]
    fn data_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    #[inline]
    pub fn set_version_and_header_len(&mut self, header_len: usize) {
        self.data_mut()[field::VER_IHL] = 0x40 | ((header_len / 4) as u8 & 0x0f);
    }

    #[inline]
    pub fn set_tos(&mut self, tos: u8) {
        self.data_mut()[field::TOS] = tos;
    }

    #[inline]
    pub fn set_total_len(&mut self, len: u16) {
        set_u16(self.data_mut(), field::TOTAL_LEN, len);
    }

    #[inline]
    pub fn set_ident(&mut self, ident: u16) {
        set_u16(self.data_mut(), field::IDENT, ident);
    }

    /// Sets DF, MF and the fragment offset (in bytes, must be a multiple of 8).
    #[inline]
    pub fn set_frag(&mut self, dont_frag: bool, more_frags: bool, offset: u16) {
        let mut value = (offset / 8) & FRAG_OFFSET_MASK;
        if dont_frag {
            value |= FLAG_DONT_FRAG;
        }
        if more_frags {
            value |= FLAG_MORE_FRAGS;
        }
        set_u16(self.data_mut(), field::FLAGS_FRAG, value);
    }

    #[inline]
    pub fn set_ttl(&mut self, ttl: u8) {
        self.data_mut()[field::TTL] = ttl;
    }

    #[inline]
    pub fn set_protocol(&mut self, protocol: IpProtocol) {
        self.data_mut()[field::PROTOCOL] = protocol.into();
    }

    #[inline]
    pub fn set_checksum(&mut self, checksum: u16) {
        set_u16(self.data_mut(), field::CHECKSUM, checksum);
    }

    #[inline]
    pub fn set_src_addr(&mut self, addr: Ipv4Addr) {
        self.data_mut()[field::SRC].copy_from_slice(&addr.octets());
    }

    #[inline]
    pub fn set_dst_addr(&mut self, addr: Ipv4Addr) {
        self.data_mut()[field::DST].copy_from_slice(&addr.octets());
    }

    /// Recomputes and stores the header checksum.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let value = checksum::of(self.header());
        self.set_checksum(value);
    }

    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.total_len()).min(self.data().len());
        let start = self.header_len().min(end);
        &mut self.data_mut()[start..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real header (TCP SYN, 172.16.10.99 → 172.16.10.12) plus 40 bytes of TCP.
    const HEADER: [u8; 20] = [
        0x45, 0x00, 0x00, 0x3c, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0xb1, 0xe6, 0xac, 0x10, 0x0a,
        0x63, 0xac, 0x10, 0x0a, 0x0c,
    ];

    fn packet() -> Vec<u8> {
        let mut p = HEADER.to_vec();
        p.resize(60, 0);
        p
    }

    #[test]
    fn reads_every_field() {
        let bytes = packet();
        let ip = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(ip.version(), 4);
        assert_eq!(ip.header_len(), 20);
        assert_eq!(ip.total_len(), 60);
        assert_eq!(ip.ident(), 0x1c46);
        assert!(ip.dont_frag());
        assert!(!ip.more_frags());
        assert!(!ip.is_fragment());
        assert_eq!(ip.frag_offset(), 0);
        assert_eq!(ip.ttl(), 64);
        assert_eq!(ip.protocol(), IpProtocol::Tcp);
        assert_eq!(ip.checksum(), 0xb1e6);
        assert_eq!(ip.src_addr(), Ipv4Addr::new(172, 16, 10, 99));
        assert_eq!(ip.dst_addr(), Ipv4Addr::new(172, 16, 10, 12));
        assert!(ip.options().is_empty());
        assert_eq!(ip.payload().len(), 40);
        assert!(ip.verify_checksum());
    }

    #[test]
    fn setters_and_fill_checksum() {
        let mut bytes = packet();
        let mut ip = Ipv4Packet::new_checked(&mut bytes[..]).unwrap();
        ip.set_ttl(63);
        assert!(!ip.verify_checksum());
        ip.fill_checksum();
        assert!(ip.verify_checksum());
        ip.set_frag(false, true, 1480);
        ip.set_tos(0xb9);
        assert!(ip.more_frags() && !ip.dont_frag());
        assert_eq!(ip.frag_offset(), 1480);
        assert_eq!((ip.dscp(), ip.ecn()), (46, 1));
    }

    #[test]
    fn options_are_exposed() {
        let mut bytes = packet();
        bytes[0] = 0x46; // IHL 6: one word of options
        bytes[20..24].copy_from_slice(&[0x94, 0x04, 0x00, 0x00]); // router alert
        let ip = Ipv4Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(ip.options(), &[0x94, 0x04, 0, 0]);
        assert_eq!(ip.payload().len(), 36);
    }

    #[test]
    fn rejects_bad_lengths() {
        let mut bytes = packet();
        bytes[0] = 0x44;
        assert_eq!(
            Ipv4Packet::new_checked(&bytes[..]),
            Err(ParseError::BadHeaderLength { layer: Layer::Ipv4 })
        );
        bytes[0] = 0x65;
        assert_eq!(
            Ipv4Packet::new_checked(&bytes[..]),
            Err(ParseError::BadIpVersion(6))
        );
        bytes[0] = 0x45;
        assert_eq!(
            Ipv4Packet::new_checked(&bytes[..59]),
            Err(ParseError::Truncated { layer: Layer::Ipv4 })
        );
        bytes[3] = 19;
        assert_eq!(
            Ipv4Packet::new_checked(&bytes[..]),
            Err(ParseError::LengthMismatch { layer: Layer::Ipv4 })
        );
        bytes[0] = 0x4f; // 60-byte header in a 60-byte buffer is fine length-wise
        bytes[3] = 60;
        assert!(Ipv4Packet::new_checked(&bytes[..]).is_ok());
    }
}
