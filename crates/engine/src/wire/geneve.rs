//! Geneve header (RFC 8926) with its variable-length options.

use super::bytes::{get_u16, get_u32, set_u16, set_u32};
use super::error::{truncated, Layer, ParseError};
use super::ethernet::EtherType;

pub const GENEVE_MIN_HEADER_LEN: usize = 8;
pub const GENEVE_PORT: u16 = 6081;

mod field {
    pub const VER_OPTLEN: usize = 0;
    pub const FLAGS: usize = 1;
    pub const PROTOCOL: usize = 2;
    pub const VNI: usize = 4;
}

const FLAG_OAM: u8 = 0x80;
const FLAG_CRITICAL: u8 = 0x40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeneveHeader<T> {
    buffer: T,
}

impl<T: AsRef<[u8]>> GeneveHeader<T> {
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        GeneveHeader { buffer }
    }

    /// Checks version 0 and that the options fit in the buffer.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, ParseError> {
        let header = Self::new_unchecked(buffer);
        let len = header.buffer.as_ref().len();
        if len < GENEVE_MIN_HEADER_LEN {
            return Err(truncated(Layer::Geneve));
        }
        if header.version() != 0 {
            return Err(ParseError::BadTunnelHeader {
                layer: Layer::Geneve,
            });
        }
        if len < header.header_len() {
            return Err(truncated(Layer::Geneve));
        }
        Ok(header)
    }

    #[inline]
    fn data(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    #[inline]
    pub fn version(&self) -> u8 {
        self.data()[field::VER_OPTLEN] >> 6
    }
    /// Length of the options in bytes (6-bit field × 4).
    #[inline]
    pub fn options_len(&self) -> usize {
        usize::from(self.data()[field::VER_OPTLEN] & 0x3f) * 4
    }
    #[inline]
    pub fn header_len(&self) -> usize {
        GENEVE_MIN_HEADER_LEN + self.options_len()
    }
    #[inline]
    pub fn is_oam(&self) -> bool {
        self.data()[field::FLAGS] & FLAG_OAM != 0
    }
    /// Some option is marked critical (a receiver that does not know it must drop).
    #[inline]
    pub fn has_critical_options(&self) -> bool {
        self.data()[field::FLAGS] & FLAG_CRITICAL != 0
    }
    #[inline]
    pub fn protocol(&self) -> EtherType {
        get_u16(self.data(), field::PROTOCOL).into()
    }
    #[inline]
    pub fn vni(&self) -> u32 {
        get_u32(self.data(), field::VNI) >> 8
    }
    #[inline]
    pub fn options(&self) -> &[u8] {
        let end = self.header_len().min(self.data().len());
        &self.data()[GENEVE_MIN_HEADER_LEN..end]
    }
    #[inline]
    pub fn option_iter(&self) -> GeneveOptions<'_> {
        GeneveOptions {
            rest: self.options(),
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> GeneveHeader<T> {
    /// Writes version 0, the options length (bytes, multiple of 4, ≤ 252), no flags,
    /// the protocol and the VNI.
    #[inline]
    pub fn set_fixed(&mut self, options_len: usize, protocol: EtherType, vni: u32) {
        let data = self.buffer.as_mut();
        data[field::VER_OPTLEN] = ((options_len / 4) as u8) & 0x3f;
        data[field::FLAGS] = 0;
        set_u16(data, field::PROTOCOL, protocol.into());
        set_u32(data, field::VNI, (vni & 0x00ff_ffff) << 8);
    }
}

/// One Geneve option (TLV).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeneveOption<'a> {
    pub class: u16,
    /// The type byte; its high bit is the critical bit.
    pub kind: u8,
    pub data: &'a [u8],
}

/// Iterator over Geneve options; yields `Err` once for an option overrunning the area.
#[derive(Debug, Clone)]
pub struct GeneveOptions<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for GeneveOptions<'a> {
    type Item = Result<GeneveOption<'a>, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let Some(fixed) = self.rest.get(..4) else {
            self.rest = &[];
            return Some(Err(truncated(Layer::Geneve)));
        };
        let len = 4 + usize::from(fixed[3] & 0x1f) * 4;
        let Some(data) = self.rest.get(4..len) else {
            self.rest = &[];
            return Some(Err(truncated(Layer::Geneve)));
        };
        let option = GeneveOption {
            class: get_u16(fixed, 0),
            kind: fixed[2],
            data,
        };
        self.rest = &self.rest[len..];
        Some(Ok(option))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_with_one_option() {
        // Version 0, 8 bytes of options, protocol 0x6558, VNI 0xabcdef, then an option
        // of class 0x0102, type 0x80 (critical), one 4-byte word of data.
        let bytes = [
            0x02, 0x40, 0x65, 0x58, 0xab, 0xcd, 0xef, 0x00, 0x01, 0x02, 0x80, 0x01, 0xde, 0xad,
            0xbe, 0xef,
        ];
        let g = GeneveHeader::new_checked(&bytes[..]).unwrap();
        assert_eq!(g.header_len(), 16);
        assert_eq!(g.protocol(), EtherType::TransparentEthernet);
        assert_eq!(g.vni(), 0xabcdef);
        assert!(g.has_critical_options() && !g.is_oam());
        let options: Vec<_> = g.option_iter().collect::<Result<_, _>>().unwrap();
        assert_eq!(
            options,
            vec![GeneveOption {
                class: 0x0102,
                kind: 0x80,
                data: &[0xde, 0xad, 0xbe, 0xef]
            }]
        );
        assert_eq!(
            GeneveHeader::new_checked(&bytes[..15]),
            Err(ParseError::Truncated {
                layer: Layer::Geneve
            })
        );
    }

    #[test]
    fn overrunning_option_is_an_error() {
        let bytes = [0x01, 0, 0x65, 0x58, 0, 0, 1, 0, 0x01, 0x02, 0x03, 0x02];
        let g = GeneveHeader::new_checked(&bytes[..]).unwrap();
        let mut it = g.option_iter();
        assert!(matches!(it.next(), Some(Err(_))));
        assert_eq!(it.next(), None);
    }

    #[test]
    fn version_must_be_zero() {
        let bytes = [0x40, 0, 0x65, 0x58, 0, 0, 1, 0];
        assert_eq!(
            GeneveHeader::new_checked(&bytes[..]),
            Err(ParseError::BadTunnelHeader {
                layer: Layer::Geneve
            })
        );
    }
}
