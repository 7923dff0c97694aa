//! Typed zero-copy views of packet headers and the frame parser.
//!
//! Each header has a view `XxxPacket<T: AsRef<[u8]>>` (or `XxxHeader`) with
//! `new_unchecked` and `new_checked`; after `new_checked` succeeds no getter can panic.
//! Setters exist where `T: AsMut<[u8]>`. [`parse::parse_frame`] walks a whole frame and
//! returns its [`Layout`].

mod bytes;
pub mod error;
pub mod ethernet;
pub mod geneve;
pub mod gre;
pub mod ip;
pub mod ipv4;
pub mod ipv6;
pub mod ipv6ext;
pub mod layout;
pub mod parse;
pub mod tcp;
pub mod udp;
pub mod vxlan;

#[cfg(test)]
pub(crate) mod testframes;

pub use error::{Layer, ParseError};
pub use ethernet::{EtherType, EthernetFrame, VlanTag};
pub use geneve::{GeneveHeader, GeneveOption};
pub use gre::GreHeader;
pub use ip::IpProtocol;
pub use ipv4::Ipv4Packet;
pub use ipv6::Ipv6Packet;
pub use ipv6ext::{Ipv6ExtHeader, Ipv6FragmentHeader};
pub use layout::{IpLayer, IpVersion, L4Proto, Layout, TunnelKind, TunnelLayer};
pub use parse::{parse_frame, parse_frame_with, ParseOptions};
pub use tcp::{TcpFlags, TcpOption, TcpPacket};
pub use udp::UdpPacket;
pub use vxlan::VxlanHeader;
