//! Ethernet II header and 802.1Q / 802.1ad tags.

use super::bytes::{get_u16, set_u16};
use super::error::{truncated, Layer, ParseError};

/// EtherType values this crate names; anything else is kept as `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EtherType {
    Ipv4,
    Ipv6,
    Arp,
    /// 802.1Q customer tag (0x8100).
    Vlan,
    /// 802.1ad service tag (0x88a8).
    QinQ,
    /// Transparent Ethernet bridging (0x6558): the payload type of gretap and Geneve.
    TransparentEthernet,
    Other(u16),
}

impl EtherType {
    #[inline]
    pub const fn is_vlan(self) -> bool {
        matches!(self, EtherType::Vlan | EtherType::QinQ)
    }
}

impl From<u16> for EtherType {
    #[inline]
    fn from(value: u16) -> Self {
        match value {
            0x0800 => EtherType::Ipv4,
            0x86dd => EtherType::Ipv6,
            0x0806 => EtherType::Arp,
            0x8100 => EtherType::Vlan,
            0x88a8 => EtherType::QinQ,
            0x6558 => EtherType::TransparentEthernet,
            other => EtherType::Other(other),
        }
    }
}

impl From<EtherType> for u16 {
    #[inline]
    fn from(value: EtherType) -> Self {
        match value {
            EtherType::Ipv4 => 0x0800,
            EtherType::Ipv6 => 0x86dd,
            EtherType::Arp => 0x0806,
            EtherType::Vlan => 0x8100,
            EtherType::QinQ => 0x88a8,
            EtherType::TransparentEthernet => 0x6558,
            EtherType::Other(other) => other,
        }
    }
}

mod field {
    use crate::wire::bytes::Field;
    pub const DESTINATION: Field = 0..6;
    pub const SOURCE: Field = 6..12;
    pub const ETHERTYPE: usize = 12;
}

/// Length of an untagged Ethernet header.
pub const ETHERNET_HEADER_LEN: usize = 14;

/// A view of an Ethernet II frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetFrame<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps a buffer without checking its length; accessors may panic if it is short.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// Wraps a buffer after checking that it holds the 14-byte header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    #[inline]
    pub fn check_len(&self) -> Result<(), ParseError> {
        if self.buffer.as_ref().len() < ETHERNET_HEADER_LEN {
            return Err(truncated(Layer::Ethernet));
        }
        Ok(())
    }

    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline]
    pub fn destination(&self) -> [u8; 6] {
        let mut mac = [0; 6];
        mac.copy_from_slice(&self.buffer.as_ref()[field::DESTINATION]);
        mac
    }

    #[inline]
    pub fn source(&self) -> [u8; 6] {
        let mut mac = [0; 6];
        mac.copy_from_slice(&self.buffer.as_ref()[field::SOURCE]);
        mac
    }

    #[inline]
    pub fn ethertype(&self) -> EtherType {
        get_u16(self.buffer.as_ref(), field::ETHERTYPE).into()
    }

    /// Everything after the 14-byte header (VLAN tags included, if any).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[ETHERNET_HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    #[inline]
    pub fn set_destination(&mut self, mac: [u8; 6]) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&mac);
    }

    #[inline]
    pub fn set_source(&mut self, mac: [u8; 6]) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&mac);
    }

    #[inline]
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        set_u16(self.buffer.as_mut(), field::ETHERTYPE, ethertype.into());
    }

    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[ETHERNET_HEADER_LEN..]
    }
}

mod tag_field {
    pub const TCI: usize = 0;
    pub const ETHERTYPE: usize = 2;
}

/// Length of one 802.1Q tag (TCI + the EtherType that follows it).
pub const VLAN_TAG_LEN: usize = 4;

/// A view of the 4 bytes after a 0x8100 / 0x88a8 EtherType: the tag control
/// information and the EtherType of what follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTag<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VlanTag<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        VlanTag { buffer }
    }

    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let tag = Self::new_unchecked(buffer);
        tag.check_len()?;
        Ok(tag)
    }

    #[inline]
    pub fn check_len(&self) -> Result<(), ParseError> {
        if self.buffer.as_ref().len() < VLAN_TAG_LEN {
            return Err(truncated(Layer::Vlan));
        }
        Ok(())
    }

    /// Tag control information: PCP (3 bits), DEI (1 bit), VLAN id (12 bits).
    #[inline]
    pub fn tci(&self) -> u16 {
        get_u16(self.buffer.as_ref(), tag_field::TCI)
    }

    #[inline]
    pub fn vlan_id(&self) -> u16 {
        self.tci() & 0x0fff
    }

    #[inline]
    pub fn priority(&self) -> u8 {
        (self.tci() >> 13) as u8
    }

    #[inline]
    pub fn drop_eligible(&self) -> bool {
        self.tci() & 0x1000 != 0
    }

    #[inline]
    pub fn ethertype(&self) -> EtherType {
        get_u16(self.buffer.as_ref(), tag_field::ETHERTYPE).into()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanTag<T> {
    #[inline]
    pub fn set_tci(&mut self, tci: u16) {
        set_u16(self.buffer.as_mut(), tag_field::TCI, tci);
    }

    #[inline]
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        set_u16(self.buffer.as_mut(), tag_field::ETHERTYPE, ethertype.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tagged_frame() {
        let frame: [u8; 18] = [
            0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02, 0x81, 0x00, 0xa0, 0x64, 0x08, 0x00,
        ];
        let eth = EthernetFrame::new_checked(&frame[..]).unwrap();
        assert_eq!(eth.destination(), [0x02, 0, 0, 0, 0, 1]);
        assert_eq!(eth.source(), [0x02, 0, 0, 0, 0, 2]);
        assert_eq!(eth.ethertype(), EtherType::Vlan);
        let tag = VlanTag::new_checked(eth.payload()).unwrap();
        assert_eq!(tag.vlan_id(), 100);
        assert_eq!(tag.priority(), 5);
        assert!(!tag.drop_eligible());
        assert_eq!(tag.ethertype(), EtherType::Ipv4);
    }

    #[test]
    fn short_frame_is_truncated() {
        assert_eq!(
            EthernetFrame::new_checked(&[0u8; 13][..]),
            Err(ParseError::Truncated {
                layer: Layer::Ethernet
            })
        );
    }

    #[test]
    fn ethertype_round_trips_unknown_values() {
        assert_eq!(EtherType::from(0x1234), EtherType::Other(0x1234));
        assert_eq!(u16::from(EtherType::from(0x88a8)), 0x88a8);
    }
}
