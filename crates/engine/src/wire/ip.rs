//! IP protocol numbers (shared by IPv4's protocol field and IPv6's next header).

/// IP protocol numbers this crate names; anything else is kept as `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpProtocol {
    HopByHop,
    Icmp,
    Tcp,
    Udp,
    Ipv6Route,
    Ipv6Frag,
    Gre,
    Esp,
    Ah,
    Icmpv6,
    Ipv6NoNext,
    Ipv6DestOpts,
    Other(u8),
}

impl From<u8> for IpProtocol {
    #[inline]
    fn from(value: u8) -> Self {
        match value {
            0 => IpProtocol::HopByHop,
            1 => IpProtocol::Icmp,
            6 => IpProtocol::Tcp,
            17 => IpProtocol::Udp,
            43 => IpProtocol::Ipv6Route,
            44 => IpProtocol::Ipv6Frag,
            47 => IpProtocol::Gre,
            50 => IpProtocol::Esp,
            51 => IpProtocol::Ah,
            58 => IpProtocol::Icmpv6,
            59 => IpProtocol::Ipv6NoNext,
            60 => IpProtocol::Ipv6DestOpts,
            other => IpProtocol::Other(other),
        }
    }
}

impl From<IpProtocol> for u8 {
    #[inline]
    fn from(value: IpProtocol) -> Self {
        match value {
            IpProtocol::HopByHop => 0,
            IpProtocol::Icmp => 1,
            IpProtocol::Tcp => 6,
            IpProtocol::Udp => 17,
            IpProtocol::Ipv6Route => 43,
            IpProtocol::Ipv6Frag => 44,
            IpProtocol::Gre => 47,
            IpProtocol::Esp => 50,
            IpProtocol::Ah => 51,
            IpProtocol::Icmpv6 => 58,
            IpProtocol::Ipv6NoNext => 59,
            IpProtocol::Ipv6DestOpts => 60,
            IpProtocol::Other(other) => other,
        }
    }
}
