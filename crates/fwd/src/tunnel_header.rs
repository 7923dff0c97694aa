//! The UDP-tunnel part of the virtio-net header (`struct virtio_net_hdr_v1_hash_tunnel`,
//! Linux 6.17+): tunnel bits in `gso_type` and `flags`, and two offsets after the hash
//! fields. The engine's `virtio::Header` knows the v1 header only, so the tunnel bits
//! are split off here, checked against the parsed frame, and put back on the way out.

use offlab_engine::wire::{IpVersion, Layout, TunnelKind};

/// `VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4` / `_IPV6`: ORed into `gso_type`, naming the
/// outer IP version.
const GSO_UDP_TUNNEL_IPV4: u8 = 0x20;
const GSO_UDP_TUNNEL_IPV6: u8 = 0x40;
/// `VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM`: fill in the outer UDP checksum per segment.
const F_UDP_TUNNEL_CSUM: u8 = 0x08;
/// Where `outer_th_offset` and `inner_nh_offset` sit in the 24-byte header.
const OFFSETS: std::ops::Range<usize> = 20..24;

/// What the tunnel fields of a received header say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TunnelGso {
    pub outer_ipv6: bool,
    /// The outer UDP checksum is to be computed per segment.
    pub outer_checksum: bool,
    /// Offset of the outer UDP header.
    pub outer_th: u16,
    /// Offset of the inner IP header.
    pub inner_nh: u16,
}

/// The v1 header with the tunnel bits cleared, and the tunnel fields if any were set.
/// A header shorter than the tunnel header is returned as it is (tunnel bits there are
/// the engine's to refuse).
pub fn split(raw: &[u8]) -> Result<([u8; 12], Option<TunnelGso>), &'static str> {
    let mut base = [0u8; 12];
    let Some(head) = raw.get(..12) else {
        return Err("truncated header");
    };
    base.copy_from_slice(head);
    let Some(offsets) = raw.get(OFFSETS) else {
        return Ok((base, None));
    };
    let (flags, gso_type) = (base[0], base[1]);
    let ip_bits = gso_type & (GSO_UDP_TUNNEL_IPV4 | GSO_UDP_TUNNEL_IPV6);
    let outer_checksum = flags & F_UDP_TUNNEL_CSUM != 0;
    let outer_ipv6 = match ip_bits {
        0 if outer_checksum => return Err("tunnel checksum flag without tunnel gso"),
        0 => return Ok((base, None)),
        GSO_UDP_TUNNEL_IPV4 => false,
        GSO_UDP_TUNNEL_IPV6 => true,
        _ => return Err("tunnel gso names both ip versions"),
    };
    base[0] &= !F_UDP_TUNNEL_CSUM;
    base[1] &= !ip_bits;
    let tunnel = TunnelGso {
        outer_ipv6,
        outer_checksum,
        outer_th: u16::from_le_bytes([offsets[0], offsets[1]]),
        inner_nh: u16::from_le_bytes([offsets[2], offsets[3]]),
    };
    Ok((base, Some(tunnel)))
}

impl TunnelGso {
    /// Checks that the frame really is a UDP tunnel where the header says, and that
    /// the inner packet is what the inner gso type is about.
    pub fn check(&self, layout: &Layout) -> Result<(), &'static str> {
        let Some(tunnel) = layout.tunnel else {
            return Err("tunnel gso on a frame without a tunnel");
        };
        if !matches!(tunnel.kind, TunnelKind::Vxlan | TunnelKind::Geneve) {
            return Err("tunnel gso on a non-udp tunnel");
        }
        let outer_v6 = tunnel.outer.version == IpVersion::V6;
        if outer_v6 != self.outer_ipv6 {
            return Err("tunnel gso outer ip version mismatch");
        }
        if usize::from(self.outer_th) != tunnel.outer.l4_offset {
            return Err("tunnel gso outer_th_offset mismatch");
        }
        if usize::from(self.inner_nh) != layout.ip.offset {
            return Err("tunnel gso inner_nh_offset mismatch");
        }
        Ok(())
    }

    /// The fields describing `layout` (a VXLAN/Geneve frame, or the headers of one:
    /// `bytes` must reach the outer UDP checksum). The outer checksum is asked for
    /// when the frame carries one (a GRO'd header holds its pseudo-header seed there).
    pub fn describe(layout: &Layout, bytes: &[u8]) -> Option<TunnelGso> {
        let tunnel = layout.tunnel?;
        if !matches!(tunnel.kind, TunnelKind::Vxlan | TunnelKind::Geneve) {
            return None;
        }
        let checksum = tunnel.outer.l4_offset + 6;
        let outer_checksum = bytes.get(checksum..checksum + 2)? != [0, 0];
        Some(TunnelGso {
            outer_ipv6: tunnel.outer.version == IpVersion::V6,
            outer_checksum,
            outer_th: u16::try_from(tunnel.outer.l4_offset).ok()?,
            inner_nh: u16::try_from(layout.ip.offset).ok()?,
        })
    }

    /// Puts the tunnel bits into a v1 header; returns it and the bytes that follow it
    /// in the 24-byte header (hash fields zero, then the offsets).
    pub fn join(&self, mut base: [u8; 12]) -> ([u8; 12], [u8; 12]) {
        base[0] |= if self.outer_checksum {
            F_UDP_TUNNEL_CSUM
        } else {
            0
        };
        base[1] |= if self.outer_ipv6 {
            GSO_UDP_TUNNEL_IPV6
        } else {
            GSO_UDP_TUNNEL_IPV4
        };
        let mut tail = [0u8; 12];
        tail[8..10].copy_from_slice(&self.outer_th.to_le_bytes());
        tail[10..12].copy_from_slice(&self.inner_nh.to_le_bytes());
        (base, tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(flags: u8, gso_type: u8, outer_th: u16, inner_nh: u16) -> [u8; 24] {
        let mut h = [0u8; 24];
        h[0] = flags;
        h[1] = gso_type;
        h[20..22].copy_from_slice(&outer_th.to_le_bytes());
        h[22..24].copy_from_slice(&inner_nh.to_le_bytes());
        h
    }

    #[test]
    fn splits_and_joins_the_tunnel_fields() {
        let raw = header(1 | F_UDP_TUNNEL_CSUM, 1 | GSO_UDP_TUNNEL_IPV4, 34, 64);
        let (base, tunnel) = split(&raw).unwrap();
        assert_eq!((base[0], base[1]), (1, 1));
        let tunnel = tunnel.unwrap();
        assert_eq!(
            tunnel,
            TunnelGso {
                outer_ipv6: false,
                outer_checksum: true,
                outer_th: 34,
                inner_nh: 64
            }
        );
        let (joined, tail) = tunnel.join(base);
        assert_eq!([&joined[..], &tail[..]].concat(), raw.to_vec());
    }

    #[test]
    fn refuses_contradictory_tunnel_bits() {
        let both = header(1, 1 | GSO_UDP_TUNNEL_IPV4 | GSO_UDP_TUNNEL_IPV6, 34, 64);
        assert!(split(&both).is_err());
        let flag_alone = header(1 | F_UDP_TUNNEL_CSUM, 1, 0, 0);
        assert!(split(&flag_alone).is_err());
        // A 12-byte header carries no tunnel: its bits are left for the engine.
        let short = &header(1, 1 | GSO_UDP_TUNNEL_IPV4, 0, 0)[..12];
        assert_eq!(split(short).unwrap().1, None);
    }
}
