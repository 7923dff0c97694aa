//! Why a virtio-net header was refused.

use core::fmt;

use crate::wire::ParseError;

/// One variant per cause, so a forwarder can count refusals by reason.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VirtioError {
    /// Fewer bytes than the header form needs.
    Truncated,
    /// The output buffer is shorter than the header form.
    BufferTooSmall,
    /// Flag bits outside NEEDS_CSUM | DATA_VALID | RSC_INFO.
    UnknownFlags(u8),
    /// RSC_INFO is only meaningful from a device to its driver.
    RscInfoNotAllowed,
    /// NEEDS_CSUM and DATA_VALID together contradict each other.
    ConflictingChecksumFlags,
    /// A `gso_type` value this crate does not know (tunnel GSO bits included).
    UnknownGsoType(u8),
    /// The ECN bit on a non-TCP GSO type.
    EcnWithoutTcp,
    /// Segmentation requested without NEEDS_CSUM.
    GsoWithoutNeedsCsum,
    /// Segmentation requested with `gso_size` 0.
    GsoSizeZero,
    /// `gso_size` plus the headers exceeds the 65535-byte IP limit.
    GsoSizeTooLarge,
    /// `gso_size` set although `gso_type` is NONE.
    GsoSizeWithoutGso,
    /// The GSO type names the other IP version (TCPV4 on IPv6 or TCPV6 on IPv4).
    GsoIpVersionMismatch,
    /// The GSO type names TCP but the packet is UDP, or the other way round.
    GsoTransportMismatch,
    /// Segmentation requested for an IP fragment.
    GsoOnFragment,
    /// The frame could not be parsed, and the header needs it parsed.
    Unparseable(ParseError),
    /// `csum_start + csum_offset + 2` runs past the end of the frame.
    ChecksumOutsideFrame,
    /// `csum_start` lies before the first transport header, so completing the checksum
    /// would rewrite Ethernet or IP header bytes the frame was classified by (Linux
    /// refuses a start below 20 bytes, `virtio_net_hdr_to_skb`; the engine, knowing the
    /// layout, refuses any start inside the headers).
    ChecksumStartInHeaders,
    /// GSO with `csum_start` somewhere other than the transport header.
    ChecksumStartMismatch,
    /// The checksum field is not the transport header's checksum field.
    ChecksumOffsetMismatch,
    /// The packet is neither TCP nor UDP where the header requires one.
    NotTcpOrUdp,
    /// An offset does not fit the header's 16-bit fields.
    OffsetTooLarge,
    /// The `Layout` passed in describes a longer frame than the one given.
    LayoutOutsideFrame,
    /// Tunnel GSO naming both outer IP versions.
    TunnelBothIpVersions,
    /// The outer UDP checksum flag without tunnel GSO.
    TunnelChecksumWithoutTunnel,
    /// Tunnel GSO whose inner GSO type is none or UFO.
    TunnelWithoutGso,
    /// Tunnel GSO on a frame without a VXLAN or Geneve tunnel.
    TunnelNotInFrame,
    /// Tunnel GSO naming the other outer IP version.
    TunnelIpVersionMismatch,
    /// `outer_th_offset` is not where the frame's outer UDP header is.
    TunnelOuterOffsetMismatch,
    /// `inner_nh_offset` is not where the frame's inner IP header is.
    TunnelInnerOffsetMismatch,
    /// A header with tunnel fields encoded in a form that has no room for them.
    TunnelNeedsTunnelForm,
}

impl VirtioError {
    /// A short, stable reason suitable for a counter name.
    pub fn reason(&self) -> &'static str {
        match self {
            VirtioError::Truncated => "truncated header",
            VirtioError::BufferTooSmall => "buffer too small",
            VirtioError::UnknownFlags(_) => "unknown flags",
            VirtioError::RscInfoNotAllowed => "rsc info not allowed",
            VirtioError::ConflictingChecksumFlags => "needs_csum with data_valid",
            VirtioError::UnknownGsoType(_) => "unknown gso type",
            VirtioError::EcnWithoutTcp => "ecn without tcp",
            VirtioError::GsoWithoutNeedsCsum => "gso without needs_csum",
            VirtioError::GsoSizeZero => "gso size zero",
            VirtioError::GsoSizeTooLarge => "gso size too large",
            VirtioError::GsoSizeWithoutGso => "gso size without gso",
            VirtioError::GsoIpVersionMismatch => "gso ip version mismatch",
            VirtioError::GsoTransportMismatch => "gso transport mismatch",
            VirtioError::GsoOnFragment => "gso on fragment",
            VirtioError::Unparseable(_) => "unparseable frame",
            VirtioError::ChecksumOutsideFrame => "checksum outside frame",
            VirtioError::ChecksumStartInHeaders => "checksum start inside the l2/ip headers",
            VirtioError::ChecksumStartMismatch => "checksum start mismatch",
            VirtioError::ChecksumOffsetMismatch => "checksum offset mismatch",
            VirtioError::NotTcpOrUdp => "not tcp or udp",
            VirtioError::OffsetTooLarge => "offset too large",
            VirtioError::LayoutOutsideFrame => "layout outside frame",
            VirtioError::TunnelBothIpVersions => "tunnel gso names both ip versions",
            VirtioError::TunnelChecksumWithoutTunnel => "tunnel checksum flag without tunnel gso",
            VirtioError::TunnelWithoutGso => "tunnel gso without inner gso",
            VirtioError::TunnelNotInFrame => "tunnel gso on a frame without a tunnel",
            VirtioError::TunnelIpVersionMismatch => "tunnel gso outer ip version mismatch",
            VirtioError::TunnelOuterOffsetMismatch => "tunnel gso outer_th_offset mismatch",
            VirtioError::TunnelInnerOffsetMismatch => "tunnel gso inner_nh_offset mismatch",
            VirtioError::TunnelNeedsTunnelForm => "tunnel fields need the tunnel header form",
        }
    }
}

impl fmt::Display for VirtioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VirtioError::UnknownFlags(bits) => write!(f, "unknown flags {bits:#04x}"),
            VirtioError::UnknownGsoType(t) => write!(f, "unknown gso type {t:#04x}"),
            VirtioError::Unparseable(err) => write!(f, "unparseable frame: {err}"),
            other => f.write_str(other.reason()),
        }
    }
}

impl std::error::Error for VirtioError {}
