//! The header itself: its forms on the wire and the decoded [`Header`], read from and
//! written to bytes. Checking one against its frame is `validate.rs`'s.

use super::error::VirtioError;
use super::fields::{check_kind_fits, Flags, GsoKind, GsoType, GSO_ECN, TCP_CSUM_OFFSET, UDP_CSUM_OFFSET};
use super::tunnel::{self, TunnelGso, HEADER_LEN_TUNNEL};
use crate::wire::{L4Proto, Layout};

/// Length of the virtio 1.x header (with `num_buffers`).
pub const HEADER_LEN_V1: usize = 12;
/// Length of the legacy header without `num_buffers` (TAP's default `TUNSETVNETHDRSZ`).
pub const HEADER_LEN_LEGACY: usize = 10;

/// Which of the header layouts is on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderForm {
    V1,
    Legacy,
    /// The v1 header, hash fields and the UDP-tunnel GSO offsets.
    V1Tunnel,
}

impl HeaderForm {
    pub const fn header_len(self) -> usize {
        match self {
            HeaderForm::V1 => HEADER_LEN_V1,
            HeaderForm::Legacy => HEADER_LEN_LEGACY,
            HeaderForm::V1Tunnel => HEADER_LEN_TUNNEL,
        }
    }

    /// The form of a header of `len` bytes, as a port negotiated it.
    pub const fn of_len(len: usize) -> Option<HeaderForm> {
        match len {
            HEADER_LEN_V1 => Some(HeaderForm::V1),
            HEADER_LEN_LEGACY => Some(HeaderForm::Legacy),
            HEADER_LEN_TUNNEL => Some(HeaderForm::V1Tunnel),
            _ => None,
        }
    }
}


/// A decoded virtio-net header. Public fields: it is plain data, validated separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Header {
    pub flags: Flags,
    pub gso_type: GsoType,
    /// The ECN bit of `gso_type`: the TCP super-packet carries CWR (set it on the first
    /// segment only).
    pub gso_ecn: bool,
    /// Length of the headers; a hint only, never trusted (see `validate`).
    pub hdr_len: u16,
    /// Payload bytes per segment.
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
    /// Mergeable receive buffers used (v1 forms only; 0 in the legacy form).
    pub num_buffers: u16,
    /// UDP-tunnel GSO (the tunnel form only): the super-packet is inside VXLAN or
    /// Geneve, and these say where.
    pub tunnel: Option<TunnelGso>,
}


impl Header {
    /// Reads a header from the start of `bytes`. In the tunnel form, contradictory
    /// tunnel bits are refused here; the rest is checked by [`Header::validate`].
    #[inline]
    pub fn decode(bytes: &[u8], form: HeaderForm) -> Result<Header, VirtioError> {
        let b = bytes
            .get(..form.header_len())
            .ok_or(VirtioError::Truncated)?;
        // Every form begins with the legacy header's ten bytes: read as an array, its
        // fields need no bounds check each (they cost a W5 frame ~20 instructions).
        let legacy: &[u8; HEADER_LEN_LEGACY] = b.first_chunk().ok_or(VirtioError::Truncated)?;
        let le16 = |at: usize| u16::from_le_bytes([legacy[at], legacy[at + 1]]);
        let (flags, gso_type, tunnel) = match form {
            HeaderForm::V1Tunnel => {
                let whole: &[u8; HEADER_LEN_TUNNEL] =
                    b.try_into().map_err(|_| VirtioError::Truncated)?;
                tunnel::decode(whole)?
            }
            HeaderForm::V1 | HeaderForm::Legacy => (legacy[0], legacy[1], None),
        };
        Ok(Header {
            flags: Flags(flags),
            gso_type: GsoType::from(gso_type & !GSO_ECN),
            gso_ecn: gso_type & GSO_ECN != 0,
            hdr_len: le16(2),
            gso_size: le16(4),
            csum_start: le16(6),
            csum_offset: le16(8),
            num_buffers: match b.get(HEADER_LEN_LEGACY..HEADER_LEN_V1) {
                Some(&[low, high]) => u16::from_le_bytes([low, high]),
                _ => 0,
            },
            tunnel,
        })
    }

    /// Writes the header into the start of `out`; returns the bytes written. Tunnel
    /// fields need the tunnel form.
    pub fn encode(&self, form: HeaderForm, out: &mut [u8]) -> Result<usize, VirtioError> {
        let len = form.header_len();
        let out = out.get_mut(..len).ok_or(VirtioError::BufferTooSmall)?;
        match form {
            HeaderForm::V1Tunnel => out.copy_from_slice(&self.to_tunnel_bytes()),
            _ if self.tunnel.is_some() => return Err(VirtioError::TunnelNeedsTunnelForm),
            _ => out.copy_from_slice(&self.to_bytes()[..len]),
        }
        Ok(len)
    }

    /// The 24-byte tunnel-form encoding (hash fields zero).
    pub fn to_tunnel_bytes(&self) -> [u8; HEADER_LEN_TUNNEL] {
        let mut b = [0u8; HEADER_LEN_TUNNEL];
        b[..HEADER_LEN_V1].copy_from_slice(&self.to_bytes());
        if let Some(t) = &self.tunnel {
            tunnel::encode(t, &mut b);
        }
        b
    }

    /// The flags byte and the GSO-type byte as the tunnel form writes them (the v1 and
    /// legacy forms too, when there is no tunnel): for callers that want the header's
    /// values, not its bytes (the C API's `ofl_vnet_hdr`). Inlined: the C API's GRO
    /// delivery converts a header per run, and the call cost it ~20 instructions.
    #[inline]
    pub fn type_bytes(&self) -> (u8, u8) {
        let (flags, gso_type) = self.tunnel.as_ref().map_or((0, 0), tunnel::type_bits);
        (self.flags.0 | flags, self.v1_gso_type_byte() | gso_type)
    }

    /// The GSO-type byte without tunnel bits: the type and the ECN bit.
    fn v1_gso_type_byte(&self) -> u8 {
        u8::from(self.gso_type) | if self.gso_ecn { GSO_ECN } else { 0 }
    }

    /// The 12-byte v1 encoding, without any tunnel fields; its first 10 bytes are the
    /// legacy encoding.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN_V1] {
        let mut b = [0u8; HEADER_LEN_V1];
        b[0] = self.flags.0;
        b[1] = self.v1_gso_type_byte();
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
        b[10..12].copy_from_slice(&self.num_buffers.to_le_bytes());
        b
    }

    /// A header saying nothing: no offload, checksums complete.
    pub const fn none() -> Header {
        Header {
            flags: Flags::NONE,
            gso_type: GsoType::None,
            gso_ecn: false,
            hdr_len: 0,
            gso_size: 0,
            csum_start: 0,
            csum_offset: 0,
            num_buffers: 0,
            tunnel: None,
        }
    }

    /// This header as a device takes it from a driver: DATA_VALID, the device's to set,
    /// is dropped (see [`ignore_driver_data_valid`](super::ignore_driver_data_valid)).
    pub fn from_driver(mut self) -> Header {
        self.flags = self.flags.without(Flags::DATA_VALID);
        self
    }

    /// A header saying the frame's checksums are known good.
    pub const fn data_valid() -> Header {
        Header {
            flags: Flags::DATA_VALID,
            ..Header::none()
        }
    }

    /// A header for a frame whose innermost TCP/UDP checksum holds only the
    /// pseudo-header sum (checksum-partial).
    pub fn needs_csum(layout: &Layout) -> Result<Header, VirtioError> {
        let csum_offset = match layout.ip.l4 {
            L4Proto::Tcp => TCP_CSUM_OFFSET,
            L4Proto::Udp => UDP_CSUM_OFFSET,
            L4Proto::Other(_) => return Err(VirtioError::NotTcpOrUdp),
        };
        Ok(Header {
            flags: Flags::NEEDS_CSUM,
            hdr_len: to_u16(layout.headers_len())?,
            csum_start: to_u16(layout.ip.l4_offset)?,
            csum_offset,
            ..Header::none()
        })
    }

    /// A header asking for segmentation of `layout`'s frame into `gso_size`-byte
    /// payloads (checksum-partial, as GSO requires). The kind must fit the innermost
    /// IP version and transport.
    pub fn for_gso(layout: &Layout, kind: GsoKind, gso_size: u16) -> Result<Header, VirtioError> {
        check_kind_fits(kind, layout)?;
        if gso_size == 0 {
            return Err(VirtioError::GsoSizeZero);
        }
        Ok(Header {
            gso_type: kind.into(),
            gso_size,
            ..Header::needs_csum(layout)?
        })
    }
}

fn to_u16(value: usize) -> Result<u16, VirtioError> {
    u16::try_from(value).map_err(|_| VirtioError::OffsetTooLarge)
}
