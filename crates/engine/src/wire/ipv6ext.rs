//! IPv6 extension headers: the generic TLV-sized ones (Hop-by-Hop, Routing,
//! Destination Options, Authentication) and the Fragment header.

use super::bytes::{get_u16, get_u32};
use super::error::{truncated, Layer, ParseError};
use super::ip::IpProtocol;

/// Whether `protocol` is an extension header this crate walks over.
pub fn is_extension_header(protocol: IpProtocol) -> bool {
    matches!(
        protocol,
        IpProtocol::HopByHop
            | IpProtocol::Ipv6Route
            | IpProtocol::Ipv6Frag
            | IpProtocol::Ipv6DestOpts
            | IpProtocol::Ah
    )
}

/// A view of one extension header of the given kind: next header and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6ExtHeader<T> {
    buffer: T,
    kind: IpProtocol,
}

impl<T: AsRef<[u8]>> Ipv6ExtHeader<T> {
    /// `kind` is the protocol number that announced this header.
    #[inline]
    pub const fn new_unchecked(buffer: T, kind: IpProtocol) -> Self {
        Ipv6ExtHeader { buffer, kind }
    }

    #[inline]
    pub fn new_checked(buffer: T, kind: IpProtocol) -> Result<Self, ParseError> {
        let header = Self::new_unchecked(buffer, kind);
        header.check_len()?;
        Ok(header)
    }

    #[inline]
    pub fn check_len(&self) -> Result<(), ParseError> {
        let len = self.buffer.as_ref().len();
        if len < 8 || len < self.header_len() {
            return Err(truncated(Layer::Ipv6Extension));
        }
        Ok(())
    }

    #[inline]
    pub fn kind(&self) -> IpProtocol {
        self.kind
    }

    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        self.buffer.as_ref()[0].into()
    }

    /// Length in bytes: 8 for Fragment, (len + 2) × 4 for AH, (len + 1) × 8 otherwise.
    #[inline]
    pub fn header_len(&self) -> usize {
        let raw = usize::from(self.buffer.as_ref().get(1).copied().unwrap_or(0));
        match self.kind {
            IpProtocol::Ipv6Frag => 8,
            IpProtocol::Ah => (raw + 2) * 4,
            _ => (raw + 1) * 8,
        }
    }

    /// The bytes after next header and length (options, routing data, ...).
    #[inline]
    pub fn data(&self) -> &[u8] {
        let end = self.header_len().min(self.buffer.as_ref().len());
        &self.buffer.as_ref()[2..end]
    }
}

/// A view of the 8-byte IPv6 Fragment header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6FragmentHeader<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6FragmentHeader<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6FragmentHeader { buffer }
    }

    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let header = Self::new_unchecked(buffer);
        if header.buffer.as_ref().len() < 8 {
            return Err(truncated(Layer::Ipv6Extension));
        }
        Ok(header)
    }

    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        self.buffer.as_ref()[0].into()
    }

    /// Fragment offset in bytes.
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        get_u16(self.buffer.as_ref(), 2) & 0xfff8
    }

    #[inline]
    pub fn more_frags(&self) -> bool {
        get_u16(self.buffer.as_ref(), 2) & 1 != 0
    }

    #[inline]
    pub fn ident(&self) -> u32 {
        get_u32(self.buffer.as_ref(), 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_length() {
        // Next header 44 (fragment), length 0 → 8 bytes: PadN option.
        let hbh = [44, 0, 1, 4, 0, 0, 0, 0];
        let h = Ipv6ExtHeader::new_checked(&hbh[..], IpProtocol::HopByHop).unwrap();
        assert_eq!(h.next_header(), IpProtocol::Ipv6Frag);
        assert_eq!(h.header_len(), 8);
        assert_eq!(h.data(), &[1, 4, 0, 0, 0, 0]);
        let long = [6, 1, 0, 0, 0, 0, 0, 0];
        assert_eq!(
            Ipv6ExtHeader::new_checked(&long[..], IpProtocol::Ipv6DestOpts),
            Err(ParseError::Truncated {
                layer: Layer::Ipv6Extension
            })
        );
    }

    #[test]
    fn fragment_fields() {
        let frag = [17, 0, 0x05, 0xa9, 0xde, 0xad, 0xbe, 0xef];
        let f = Ipv6FragmentHeader::new_checked(&frag[..]).unwrap();
        assert_eq!(f.next_header(), IpProtocol::Udp);
        assert_eq!(f.frag_offset(), 1448);
        assert!(f.more_frags());
        assert_eq!(f.ident(), 0xdeadbeef);
    }
}
