//! VXLAN header (RFC 7348): flags, 24-bit VNI.

use super::bytes::{get_u32, set_u32};
use super::error::{truncated, Layer, ParseError};

pub const VXLAN_HEADER_LEN: usize = 8;
/// The IANA port; others can be added through `ParseOptions`.
pub const VXLAN_PORT: u16 = 4789;
/// The "I" flag: the VNI is valid. Required (the kernel drops frames without it).
pub const VXLAN_FLAG_VNI: u8 = 0x08;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VxlanHeader<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VxlanHeader<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        VxlanHeader { buffer }
    }

    /// Checks the length and that the I flag is set.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let header = Self::new_unchecked(buffer);
        if header.buffer.as_ref().len() < VXLAN_HEADER_LEN {
            return Err(truncated(Layer::Vxlan));
        }
        if header.flags() & VXLAN_FLAG_VNI == 0 {
            return Err(ParseError::BadTunnelHeader {
                layer: Layer::Vxlan,
            });
        }
        Ok(header)
    }

    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[0]
    }

    #[inline]
    pub fn vni(&self) -> u32 {
        get_u32(self.buffer.as_ref(), 4) >> 8
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VxlanHeader<T> {
    /// Writes a complete header: I flag, reserved bits zero, and `vni` (low 24 bits).
    #[inline]
    pub fn set_vni(&mut self, vni: u32) {
        let data = self.buffer.as_mut();
        data[..4].copy_from_slice(&[VXLAN_FLAG_VNI, 0, 0, 0]);
        set_u32(data, 4, (vni & 0x00ff_ffff) << 8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vni_round_trip() {
        let mut bytes = [0u8; 8];
        VxlanHeader::new_unchecked(&mut bytes[..]).set_vni(0x123456);
        assert_eq!(bytes, [0x08, 0, 0, 0, 0x12, 0x34, 0x56, 0]);
        assert_eq!(
            VxlanHeader::new_checked(&bytes[..]).unwrap().vni(),
            0x123456
        );
        bytes[0] = 0;
        assert_eq!(
            VxlanHeader::new_checked(&bytes[..]),
            Err(ParseError::BadTunnelHeader {
                layer: Layer::Vxlan
            })
        );
    }
}
