//! IPv6 fixed header (RFC 8200).

use std::net::Ipv6Addr;

use super::bytes::{get_u16, get_u32, set_u16, set_u32};
use super::error::{truncated, Layer, ParseError};
use super::ip::IpProtocol;

mod field {
    pub const VER_TC_FLOW: usize = 0;
    pub const PAYLOAD_LEN: usize = 4;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: core::ops::Range<usize> = 8..24;
    pub const DST: core::ops::Range<usize> = 24..40;
}

/// Length of the fixed IPv6 header.
pub const IPV6_HEADER_LEN: usize = 40;

/// A view of an IPv6 packet. `new_checked` guarantees the fixed header and the payload
/// length it announces lie inside the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Packet<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6Packet { buffer }
    }

    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks the version and that 40 + payload length ≤ buffer length (trailing
    /// Ethernet padding is allowed).
    #[inline]
    pub fn check_len(&self) -> Result<(), ParseError> {
        let len = self.buffer.as_ref().len();
        if len < IPV6_HEADER_LEN {
            return Err(truncated(Layer::Ipv6));
        }
        if self.version() != 6 {
            return Err(ParseError::BadIpVersion(self.version()));
        }
        if len < self.total_len() {
            return Err(truncated(Layer::Ipv6));
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
    fn first_word(&self) -> u32 {
        get_u32(self.data(), field::VER_TC_FLOW)
    }

    #[inline]
    pub fn version(&self) -> u8 {
        (self.first_word() >> 28) as u8
    }

    #[inline]
    pub fn traffic_class(&self) -> u8 {
        (self.first_word() >> 20) as u8
    }

    #[inline]
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    #[inline]
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 0x03
    }

    #[inline]
    pub fn flow_label(&self) -> u32 {
        self.first_word() & 0x000f_ffff
    }

    #[inline]
    pub fn payload_len(&self) -> u16 {
        get_u16(self.data(), field::PAYLOAD_LEN)
    }

    /// Header plus payload length.
    #[inline]
    pub fn total_len(&self) -> usize {
        IPV6_HEADER_LEN + usize::from(self.payload_len())
    }

    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        self.data()[field::NEXT_HEADER].into()
    }

    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.data()[field::HOP_LIMIT]
    }

    #[inline]
    pub fn src_addr(&self) -> Ipv6Addr {
        let mut octets = [0; 16];
        octets.copy_from_slice(&self.data()[field::SRC]);
        Ipv6Addr::from(octets)
    }

    #[inline]
    pub fn dst_addr(&self) -> Ipv6Addr {
        let mut octets = [0; 16];
        octets.copy_from_slice(&self.data()[field::DST]);
        Ipv6Addr::from(octets)
    }

    /// The payload (extension headers included) up to the payload length.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let end = self.total_len().min(self.data().len());
        &self.data()[IPV6_HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    #[inline]
    fn data_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Writes version 6, the traffic class and the flow label (low 20 bits).
    #[inline]
    pub fn set_version_class_flow(&mut self, traffic_class: u8, flow_label: u32) {
        let word = (6 << 28) | (u32::from(traffic_class) << 20) | (flow_label & 0x000f_ffff);
        set_u32(self.data_mut(), field::VER_TC_FLOW, word);
    }

    #[inline]
    pub fn set_traffic_class(&mut self, traffic_class: u8) {
        let flow = self.flow_label();
        self.set_version_class_flow(traffic_class, flow);
    }

    #[inline]
    pub fn set_flow_label(&mut self, flow_label: u32) {
        let class = self.traffic_class();
        self.set_version_class_flow(class, flow_label);
    }

    #[inline]
    pub fn set_payload_len(&mut self, len: u16) {
        set_u16(self.data_mut(), field::PAYLOAD_LEN, len);
    }

    #[inline]
    pub fn set_next_header(&mut self, next: IpProtocol) {
        self.data_mut()[field::NEXT_HEADER] = next.into();
    }

    #[inline]
    pub fn set_hop_limit(&mut self, hop_limit: u8) {
        self.data_mut()[field::HOP_LIMIT] = hop_limit;
    }

    #[inline]
    pub fn set_src_addr(&mut self, addr: Ipv6Addr) {
        self.data_mut()[field::SRC].copy_from_slice(&addr.octets());
    }

    #[inline]
    pub fn set_dst_addr(&mut self, addr: Ipv6Addr) {
        self.data_mut()[field::DST].copy_from_slice(&addr.octets());
    }

    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = self.total_len().min(self.data().len());
        &mut self.data_mut()[IPV6_HEADER_LEN..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_fields() {
        let mut bytes = [0u8; 48];
        bytes[..8].copy_from_slice(&[0x6b, 0x81, 0x23, 0x45, 0x00, 0x08, 0x11, 0x40]);
        bytes[8..24].copy_from_slice(&"fd00::1".parse::<Ipv6Addr>().unwrap().octets());
        bytes[24..40].copy_from_slice(&"fd00::2".parse::<Ipv6Addr>().unwrap().octets());
        let mut ip = Ipv6Packet::new_checked(&mut bytes[..]).unwrap();
        assert_eq!(ip.version(), 6);
        assert_eq!(ip.traffic_class(), 0xb8);
        assert_eq!(ip.dscp(), 46);
        assert_eq!(ip.flow_label(), 0x12345);
        assert_eq!(ip.payload_len(), 8);
        assert_eq!(ip.next_header(), IpProtocol::Udp);
        assert_eq!(ip.hop_limit(), 64);
        assert_eq!(ip.src_addr(), "fd00::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(ip.dst_addr(), "fd00::2".parse::<Ipv6Addr>().unwrap());
        ip.set_flow_label(0xfffff);
        ip.set_traffic_class(1);
        assert_eq!(
            (ip.traffic_class(), ip.flow_label(), ip.version()),
            (1, 0xfffff, 6)
        );
    }

    #[test]
    fn payload_length_beyond_buffer_is_truncated() {
        let mut bytes = [0u8; 48];
        bytes[0] = 0x60;
        bytes[5] = 9;
        assert_eq!(
            Ipv6Packet::new_checked(&bytes[..]),
            Err(ParseError::Truncated { layer: Layer::Ipv6 })
        );
        bytes[0] = 0x40;
        assert_eq!(
            Ipv6Packet::new_checked(&bytes[..]),
            Err(ParseError::BadIpVersion(4))
        );
    }
}
