//! offlab-vhostload: a vhost-user traffic source and sink. It plays the virtio-net
//! driver of two guests against any vhost-user-net backend (offlab-fwd, DPDK's
//! net_vhost in testpmd, OVS-DPDK, VPP): guest A sends prepared frames at full speed,
//! guest B receives, verifies a sample and counts frames, payload and merge depth.

pub mod frames;
pub mod guest;
pub mod load;
pub mod memory;
pub mod rtt;
pub mod session;
pub mod verify;
pub mod virtq;
pub mod wire;

/// Largest frame a receive buffer must hold without merged buffers: 64 KiB of IP
/// packet, Ethernet and VXLAN headers and the virtio-net header.
pub const BIG_BUFFER: usize = 65_536 + 14 + 50 + 12;

/// The receive buffer size a driver with these features posts: 4 KiB pages with merged
/// buffers (Linux's mergeable buffers are at most a page), one whole super-packet
/// without them when it takes TSO, else one MTU frame.
pub fn receive_buffer_len(merged: bool, tso: bool, mtu: usize) -> usize {
    if merged {
        4096
    } else if tso {
        BIG_BUFFER
    } else {
        (mtu + 14 + 12).next_multiple_of(64)
    }
}
