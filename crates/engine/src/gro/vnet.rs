//! The virtio-net header of a delivered run (kernel `virtio_net_hdr_from_skb` after
//! `tcp_gro_complete` / `udp_gro_complete`).
//!
//! The GSO type names the innermost transport and `csum_start` points at it; a run of
//! VXLAN/Geneve frames also carries the UDP-tunnel GSO fields (`virtio::TunnelGso`:
//! outer IP version, outer UDP and inner IP offsets, and the outer checksum flag when
//! the frames had an outer UDP checksum, left as the pseudo-header seed for
//! segmentation to complete), so its header needs the tunnel form
//! (`HeaderForm::V1Tunnel`) on the wire.

use super::emit::Offload;
use super::flow::Transport;
use crate::virtio::{Flags, GsoType, Header};

/// A run of several segments: GSO type and size, checksum-partial innermost transport.
#[inline]
pub(crate) fn merged(o: &Offload) -> Header {
    let gso_type = match (o.transport, o.inner_v6) {
        (Transport::Tcp, false) => GsoType::TcpV4,
        (Transport::Tcp, true) => GsoType::TcpV6,
        (Transport::Udp, _) => GsoType::UdpL4,
    };
    Header {
        flags: Flags::NEEDS_CSUM,
        gso_type,
        hdr_len: o.headers_len,
        gso_size: o.segment_size,
        csum_start: o.csum_start,
        csum_offset: o.csum_offset,
        tunnel: o.tunnel,
        ..Header::none()
    }
}

/// A run of one packet: its own header, checksums verified or validated.
#[inline]
pub(crate) fn single() -> Header {
    Header::data_valid()
}
