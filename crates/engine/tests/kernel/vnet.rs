//! The virtio-net header as the kernel reads it from a TAP and writes it on an AF_PACKET
//! socket with PACKET_VNET_HDR (little-endian, `struct virtio_net_hdr`, optionally
//! followed by the 2-byte `num_buffers` of `virtio_net_hdr_v1`). Kept independent of the
//! engine's `virtio` module on purpose: the tests decode the kernel's bytes themselves.

pub const F_NEEDS_CSUM: u8 = 1;
pub const F_DATA_VALID: u8 = 2;

pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
/// UFO: one UDP datagram cut into IPv4 fragments.
pub const GSO_UDP: u8 = 3;
pub const GSO_TCPV6: u8 = 4;
pub const GSO_UDP_L4: u8 = 5;
pub const GSO_ECN: u8 = 0x80;
/// UDP tunnel GSO (Linux 6.17+, `virtio_net_hdr_v1_hash_tunnel`): outer IP version bits
/// ORed into `gso_type`, and the flag asking for the outer UDP checksum.
pub const GSO_UDP_TUNNEL_IPV4: u8 = 0x20;
pub const GSO_UDP_TUNNEL_IPV6: u8 = 0x40;
pub const F_UDP_TUNNEL_CSUM: u8 = 8;
/// Size of `virtio_net_hdr_v1_hash_tunnel`: TAP parses the tunnel offsets only when its
/// header size is at least this.
pub const TUNNEL_LEN: usize = 24;

/// Length of the basic header; AF_PACKET always uses this size.
pub const BASE_LEN: usize = 10;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
    /// `outer_th_offset` and `inner_nh_offset` of the tunnel header (bytes 20..24).
    pub tunnel: Option<(u16, u16)>,
}

impl VnetHdr {
    /// Header bytes of `len` (10, or 12 with a zero `num_buffers`).
    pub fn encode(&self, len: usize) -> Vec<u8> {
        let mut b = Vec::with_capacity(len);
        b.push(self.flags);
        b.push(self.gso_type);
        for v in [
            self.hdr_len,
            self.gso_size,
            self.csum_start,
            self.csum_offset,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.resize(len.max(BASE_LEN), 0);
        if let Some((outer_th, inner_nh)) = self.tunnel {
            assert!(
                len >= TUNNEL_LEN,
                "tunnel offsets need a {TUNNEL_LEN}-byte header"
            );
            b[20..22].copy_from_slice(&outer_th.to_le_bytes());
            b[22..24].copy_from_slice(&inner_nh.to_le_bytes());
        }
        b
    }

    pub fn decode(b: &[u8]) -> VnetHdr {
        assert!(
            b.len() >= BASE_LEN,
            "virtio header needs {BASE_LEN} bytes, got {}",
            b.len()
        );
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
            tunnel: None,
        }
    }
}
