//! The fixed-offset frame kinds: which flow shapes the fast classifiers (`plain.rs`,
//! `plain6.rs`) take, and the size of a held header. It sits below the general path
//! (`facts.rs`, which records each opened run's kind) and below the fast paths, so
//! neither imports the other for these definitions.

use super::flow::{Shape, Transport, TunnelShape};
use crate::wire::layout::TunnelKind;

/// Bytes of header a slot holds (Ethernet + VLANs + outer IPv6 + UDP + Geneve with
/// options + inner Ethernet + IPv6 + TCP with options fits; longer headers are refused).
pub const HEADER_CAP: usize = 256;
// A chained frame's copied head must hold every header a flow keeps.
const _: () = assert!(crate::chain::HEAD_COPY >= HEADER_CAP);

const ETHERNET_LEN: usize = 14;
const IPV4_LEN: usize = 20;
const IPV6_LEN: usize = 40;
const UDP_LEN: usize = 8;
const VXLAN_LEN: usize = 8;
/// Where the VXLAN header starts in a frame of the VXLAN kind.
const VXLAN_AT: usize = ETHERNET_LEN + IPV4_LEN + UDP_LEN;

/// The VXLAN encapsulation before the inner Ethernet header: Ethernet, IPv4 without
/// options, UDP, VXLAN.
pub(crate) const VXLAN_OUTER: usize = VXLAN_AT + VXLAN_LEN;

/// `Slot::plain` of a shape no fixed-offset classifier takes.
pub(crate) const NOT_PLAIN: usize = usize::MAX;
/// `Slot::plain` of [`PLAIN6_SHAPE`].
pub(crate) const PLAIN6: usize = usize::MAX - 1;

/// Which fixed-offset classifier takes `shape`: the `OUTER` of a `Plain` kind,
/// [`PLAIN6`], or [`NOT_PLAIN`]. Every opened run asks, so the IP version and whether
/// there is a tunnel pick the one candidate to compare the whole shape with (three
/// comparisons of the shape cost 50 instructions per open).
#[inline]
pub(crate) fn kind_of(shape: &Shape) -> usize {
    let (candidate, kind) = match (shape.ip_v6, shape.tunnel.is_some()) {
        (true, false) => (PLAIN6_SHAPE, PLAIN6),
        (false, false) => (plain4_shape(0), 0),
        (false, true) => (plain4_shape(VXLAN_OUTER), VXLAN_OUTER),
        (true, true) => return NOT_PLAIN,
    };
    if *shape == candidate {
        kind
    } else {
        NOT_PLAIN
    }
}

/// The shape of every frame `Plain<OUTER>` accepts.
pub(crate) const fn plain4_shape(outer: usize) -> Shape {
    let tunnel = if outer == 0 {
        None
    } else {
        Some(TunnelShape {
            kind: TunnelKind::Vxlan,
            outer_header_len: IPV4_LEN as u16,
            outer_v6: false,
            offset: VXLAN_AT as u16,
            header_len: VXLAN_LEN as u16,
        })
    };
    Shape {
        l2_len: ETHERNET_LEN as u16,
        tunnel,
        ip_offset: (outer + ETHERNET_LEN) as u16,
        ip_header_len: IPV4_LEN as u16,
        ip_v6: false,
        transport: Transport::Tcp,
    }
}

/// The shape of every frame `plain6::Plain6` accepts: untagged Ethernet, IPv6 without
/// extension headers, TCP.
pub(crate) const PLAIN6_SHAPE: Shape = Shape {
    l2_len: ETHERNET_LEN as u16,
    tunnel: None,
    ip_offset: ETHERNET_LEN as u16,
    ip_header_len: IPV6_LEN as u16,
    ip_v6: true,
    transport: Transport::Tcp,
};
