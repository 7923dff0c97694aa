//! Why a frame could not be parsed: one variant per cause, so callers can count drops
//! by reason.

use core::fmt;

/// The header a parse error refers to.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    Ethernet,
    Vlan,
    Ipv4,
    Ipv6,
    Ipv6Extension,
    Tcp,
    Udp,
    Vxlan,
    Geneve,
    Gre,
}

impl Layer {
    pub fn name(self) -> &'static str {
        match self {
            Layer::Ethernet => "ethernet",
            Layer::Vlan => "802.1q",
            Layer::Ipv4 => "ipv4",
            Layer::Ipv6 => "ipv6",
            Layer::Ipv6Extension => "ipv6 extension header",
            Layer::Tcp => "tcp",
            Layer::Udp => "udp",
            Layer::Vxlan => "vxlan",
            Layer::Geneve => "geneve",
            Layer::Gre => "gre",
        }
    }
}

/// A frame that is not a well-formed packet of a supported kind.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParseError {
    /// The buffer ends before the header (or the length it announces) does.
    Truncated { layer: Layer },
    /// The IP version nibble does not match the EtherType (or is neither 4 nor 6).
    BadIpVersion(u8),
    /// A header length field is below the minimum for that header.
    BadHeaderLength { layer: Layer },
    /// A length field disagrees with the enclosing packet (e.g. UDP length vs IP payload).
    LengthMismatch { layer: Layer },
    /// More IPv6 extension headers than the walk allows.
    TooManyExtensionHeaders,
    /// A Hop-by-Hop Options header somewhere other than right after the IPv6 header.
    MisplacedHopByHop,
    /// More than two 802.1Q/802.1ad tags.
    TooManyVlanTags,
    /// The frame does not carry IPv4 or IPv6.
    UnsupportedEtherType(u16),
    /// A tunnel header with a version, flag or reserved bit this parser refuses
    /// (VXLAN without the I flag, Geneve version ≠ 0, GRE version ≠ 0 or routing present).
    BadTunnelHeader { layer: Layer },
    /// A tunnel carrying something other than Ethernet, IPv4 or IPv6.
    UnsupportedTunnelPayload(u16),
}

impl ParseError {
    /// A short, stable reason suitable for a counter name.
    pub fn reason(&self) -> &'static str {
        match self {
            ParseError::Truncated { .. } => "truncated",
            ParseError::BadIpVersion(_) => "bad ip version",
            ParseError::BadHeaderLength { .. } => "bad header length",
            ParseError::LengthMismatch { .. } => "length mismatch",
            ParseError::TooManyExtensionHeaders => "too many ipv6 extension headers",
            ParseError::MisplacedHopByHop => "misplaced ipv6 hop-by-hop header",
            ParseError::TooManyVlanTags => "too many vlan tags",
            ParseError::UnsupportedEtherType(_) => "unsupported ethertype",
            ParseError::BadTunnelHeader { .. } => "bad tunnel header",
            ParseError::UnsupportedTunnelPayload(_) => "unsupported tunnel payload",
        }
    }

    /// The header the error is about, when there is one.
    pub fn layer(&self) -> Option<Layer> {
        match *self {
            ParseError::Truncated { layer }
            | ParseError::BadHeaderLength { layer }
            | ParseError::LengthMismatch { layer }
            | ParseError::BadTunnelHeader { layer } => Some(layer),
            ParseError::TooManyExtensionHeaders | ParseError::MisplacedHopByHop => {
                Some(Layer::Ipv6Extension)
            }
            ParseError::TooManyVlanTags => Some(Layer::Vlan),
            ParseError::BadIpVersion(_) | ParseError::UnsupportedEtherType(_) => None,
            ParseError::UnsupportedTunnelPayload(_) => None,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ParseError::BadIpVersion(v) => write!(f, "bad ip version {v}"),
            ParseError::UnsupportedEtherType(t) => write!(f, "unsupported ethertype {t:#06x}"),
            ParseError::UnsupportedTunnelPayload(t) => {
                write!(f, "unsupported tunnel payload {t:#06x}")
            }
            _ => match self.layer() {
                Some(layer) => write!(f, "{}: {}", layer.name(), self.reason()),
                None => f.write_str(self.reason()),
            },
        }
    }
}

impl std::error::Error for ParseError {}

/// Shorthand used by the views' `check_len`.
pub(crate) const fn truncated(layer: Layer) -> ParseError {
    ParseError::Truncated { layer }
}
