//! The values of the header's fields: the flags byte, the GSO type and the kinds of
//! segmentation, and where a transport's checksum sits. Plain data below the
//! [`Header`](super::Header) that holds them and the rules that check them.

use super::error::VirtioError;
use crate::wire::{IpVersion, L4Proto, Layout};

/// The `flags` byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags(pub u8);

impl Flags {
    /// The checksum from `csum_start` to the end is partial: fold and store it at
    /// `csum_start + csum_offset`.
    pub const NEEDS_CSUM: Flags = Flags(1);
    /// The checksums were already validated.
    pub const DATA_VALID: Flags = Flags(2);
    /// Receive-side coalescing info in the csum fields (device → driver only).
    pub const RSC_INFO: Flags = Flags(4);
    pub const NONE: Flags = Flags(0);
    pub(super) const KNOWN: u8 = 0x07;

    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
    pub const fn union(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
    pub const fn without(self, other: Flags) -> Flags {
        Flags(self.0 & !other.0)
    }
}

/// Clears DATA_VALID in the raw `flags` byte of a header a *driver* wrote (a guest's
/// transmit queue, read by a device such as a vhost-user backend). DATA_VALID says the
/// device verified the checksums; a driver must not set it (virtio 1.2, 5.1.6.2) and
/// Linux ignores it from a TAP writer, so a device that honoured it would let one guest
/// make another skip checksum verification. Returns whether the bit was set.
pub fn ignore_driver_data_valid(flags: &mut u8) -> bool {
    let was = *flags & Flags::DATA_VALID.0 != 0;
    *flags &= !Flags::DATA_VALID.0;
    was
}

/// The `gso_type` byte without its ECN bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum GsoType {
    #[default]
    None,
    TcpV4,
    /// UDP fragmentation offload (the datagram is split into IP fragments).
    Udp,
    TcpV6,
    /// UDP segmentation offload (USO: one datagram per segment).
    UdpL4,
    Other(u8),
}

/// The ECN bit of the `gso_type` byte.
pub(super) const GSO_ECN: u8 = 0x80;

impl From<u8> for GsoType {
    fn from(value: u8) -> Self {
        match value {
            0 => GsoType::None,
            1 => GsoType::TcpV4,
            3 => GsoType::Udp,
            4 => GsoType::TcpV6,
            5 => GsoType::UdpL4,
            other => GsoType::Other(other),
        }
    }
}

impl From<GsoType> for u8 {
    fn from(value: GsoType) -> Self {
        match value {
            GsoType::None => 0,
            GsoType::TcpV4 => 1,
            GsoType::Udp => 3,
            GsoType::TcpV6 => 4,
            GsoType::UdpL4 => 5,
            GsoType::Other(other) => other,
        }
    }
}

/// The kinds of segmentation a header can ask for (a [`GsoType`] other than `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GsoKind {
    TcpV4,
    TcpV6,
    /// UFO: IP fragmentation of one large UDP datagram.
    Ufo,
    /// USO: one UDP datagram per `gso_size` bytes of payload.
    Uso,
}

impl From<GsoKind> for GsoType {
    fn from(kind: GsoKind) -> Self {
        match kind {
            GsoKind::TcpV4 => GsoType::TcpV4,
            GsoKind::TcpV6 => GsoType::TcpV6,
            GsoKind::Ufo => GsoType::Udp,
            GsoKind::Uso => GsoType::UdpL4,
        }
    }
}


/// Offset of the checksum field inside a TCP header and a UDP header.
pub(super) const TCP_CSUM_OFFSET: u16 = 16;
pub(super) const UDP_CSUM_OFFSET: u16 = 6;

/// Whether a GSO kind can apply to the innermost IP layer and transport of `layout`.
pub(super) fn check_kind_fits(kind: GsoKind, layout: &Layout) -> Result<(), VirtioError> {
    let (version, l4) = (layout.ip.version, layout.ip.l4);
    let wants_v4 = match kind {
        GsoKind::TcpV4 => Some(IpVersion::V4),
        GsoKind::TcpV6 => Some(IpVersion::V6),
        GsoKind::Ufo | GsoKind::Uso => None,
    };
    if wants_v4.is_some_and(|wanted| wanted != version) {
        return Err(VirtioError::GsoIpVersionMismatch);
    }
    let wants_tcp = matches!(kind, GsoKind::TcpV4 | GsoKind::TcpV6);
    let fits = if wants_tcp {
        l4 == L4Proto::Tcp
    } else {
        l4 == L4Proto::Udp
    };
    if !fits {
        return Err(VirtioError::GsoTransportMismatch);
    }
    Ok(())
}
