//! Why a super-packet was not segmented: one variant per cause, so the forwarder can
//! count refusals by reason.

use core::fmt;

/// A super-packet `segment` refuses, with the reason.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GsoError {
    /// `GsoKind::Tcp` asked for, but the innermost transport is not TCP.
    NotTcp,
    /// `GsoKind::Udp` / `UdpFragment` asked for, but the innermost transport is not UDP.
    NotUdp,
    /// A segment size of zero would never finish.
    SegmentSizeZero,
    /// UFO needs fragments of at least 8 payload bytes (offsets count 8-byte units).
    FragmentSizeTooSmall,
    /// The payload would need this many segments; the limit is `MAX_SEGMENTS`.
    TooManySegments(usize),
    /// The transport payload exceeds 65535 bytes.
    TooLarge,
    /// The headers repeated in every segment exceed `MAX_HEADERS_LEN` bytes.
    HeadersTooLong,
    /// The input is itself an IP fragment (IPv4 MF/offset or an IPv6 Fragment header).
    FragmentedInput,
    /// UFO was asked for an IPv6 packet; only IPv4 fragmentation is implemented.
    UfoNeedsIpv4,
    /// Fixed IPv4 IDs without DF would make the segments' reassembly ambiguous
    /// (Linux's TCP_FIXEDID is only valid with DF).
    FixedIdWithoutDf,
    /// GRE with a sequence number: every segment would need its own number, which only
    /// the tunnel endpoint knows (Linux disables GSO on such tunnels).
    GreSequenceNumber,
    /// The tunnelled packet does not end where the outer packet ends.
    TrailingBytes,
    /// The `Layout` does not describe this frame (offsets out of order or outside it).
    LayoutMismatch,
    /// The virtio header's GSO type does not match the packet (e.g. TCPV4 on IPv6).
    VirtioTypeMismatch,
    /// The virtio header asks for no segmentation (GSO_NONE).
    VirtioNoGso,
    /// The virtio header's GSO type is not one this engine segments.
    VirtioUnsupportedType(u8),
    /// NEEDS_CSUM with a checksum start/offset other than the transport checksum field.
    VirtioChecksumMismatch,
    /// An IPv6 Authentication Header: every segment would need a fresh ICV (Linux has
    /// no GSO handler for AH and drops the packet).
    AuthenticationHeader,
    /// An IPv6 Routing header with segments left whose type (the value) the engine
    /// cannot read the final destination from (or a second such header); segmenting
    /// with the IPv6 header's destination would give every segment a wrong checksum.
    RoutingHeaderUnsupported(u8),
}

impl GsoError {
    /// A short, stable reason suitable for a counter name.
    pub fn reason(&self) -> &'static str {
        match self {
            GsoError::NotTcp => "not tcp",
            GsoError::NotUdp => "not udp",
            GsoError::SegmentSizeZero => "segment size zero",
            GsoError::FragmentSizeTooSmall => "fragment size below 8",
            GsoError::TooManySegments(_) => "too many segments",
            GsoError::TooLarge => "payload over 65535 bytes",
            GsoError::HeadersTooLong => "headers too long",
            GsoError::FragmentedInput => "fragmented input",
            GsoError::UfoNeedsIpv4 => "ufo on ipv6",
            GsoError::FixedIdWithoutDf => "fixed ip id without df",
            GsoError::GreSequenceNumber => "gre sequence number",
            GsoError::TrailingBytes => "bytes after the inner packet",
            GsoError::LayoutMismatch => "layout does not match frame",
            GsoError::VirtioTypeMismatch => "virtio gso type does not match packet",
            GsoError::VirtioNoGso => "virtio header asks for no gso",
            GsoError::VirtioUnsupportedType(_) => "unsupported virtio gso type",
            GsoError::VirtioChecksumMismatch => "virtio checksum start/offset mismatch",
            GsoError::AuthenticationHeader => "ipv6 authentication header",
            GsoError::RoutingHeaderUnsupported(_) => "ipv6 routing header type unsupported",
        }
    }
}

impl fmt::Display for GsoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            GsoError::TooManySegments(n) => write!(f, "too many segments ({n})"),
            GsoError::RoutingHeaderUnsupported(t) => {
                write!(f, "ipv6 routing header of type {t} with segments left")
            }
            GsoError::VirtioUnsupportedType(t) => {
                write!(f, "unsupported virtio gso type {t:#04x}")
            }
            _ => f.write_str(self.reason()),
        }
    }
}

impl std::error::Error for GsoError {}
