//! Which offloads a port negotiated, like a virtio device's feature bits.
//!
//! For a TAP port the same set is given to the kernel with `TUNSETOFFLOAD` (so the
//! namespace behind it may send checksum-partial frames and super-packets, like a guest
//! with `host_tso4`) and used as the port's egress capability (the forwarder may hand it
//! super-packets and partial checksums, like `guest_tso4`).

use std::fmt;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offloads {
    /// Partial checksums (NEEDS_CSUM) accepted.
    pub csum: bool,
    pub tso4: bool,
    pub tso6: bool,
    /// TCP super-packets with the CWR flag (gso type | ECN).
    pub ecn: bool,
    /// UDP segmentation offload (gso type UDP_L4), IPv4 and IPv6.
    pub uso: bool,
    /// Super-packets inside a UDP tunnel (VXLAN, Geneve) described by the 24-byte
    /// tunnel vnet header (`TUN_F_UDP_TUNNEL_GSO`, Linux 6.17+); TAP ports only.
    pub udp_tunnel: bool,
    /// Tunnel super-packets whose outer UDP checksum is to be filled in per segment
    /// (`TUN_F_UDP_TUNNEL_GSO_CSUM`).
    pub udp_tunnel_csum: bool,
}

/// `TUN_F_UDP_TUNNEL_GSO` and `TUN_F_UDP_TUNNEL_GSO_CSUM` (`include/uapi/linux/if_tun.h`),
/// not yet in the libc crate.
const TUN_F_UDP_TUNNEL_GSO: libc::c_uint = 0x80;
const TUN_F_UDP_TUNNEL_GSO_CSUM: libc::c_uint = 0x100;

/// The virtio-net header of a port without tunnel offloads (v1, with `num_buffers`).
pub const BASE_VNET_LEN: usize = 12;
/// `struct virtio_net_hdr_v1_hash_tunnel`: the v1 header, hash fields, then
/// `outer_th_offset` and `inner_nh_offset`; TAP reads the tunnel offsets only when its
/// header is at least this long.
pub const TUNNEL_VNET_LEN: usize = 24;

impl Offloads {
    pub const ALL: Offloads = Offloads {
        csum: true,
        tso4: true,
        tso6: true,
        ecn: true,
        uso: true,
        udp_tunnel: false,
        udp_tunnel_csum: false,
    };

    /// Parses `csum+tso4+tso6+ecn+uso` (or `none`, or `all`).
    pub fn parse(text: &str) -> Result<Offloads, String> {
        let mut offloads = Offloads::default();
        for word in text.split('+').filter(|w| !w.is_empty()) {
            match word {
                "none" => {}
                "all" => offloads = Offloads::ALL,
                "csum" => offloads.csum = true,
                "tso4" => offloads.tso4 = true,
                "tso6" => offloads.tso6 = true,
                "tso" => (offloads.tso4, offloads.tso6) = (true, true),
                "ecn" => offloads.ecn = true,
                "uso" => offloads.uso = true,
                "udptnl" => offloads.udp_tunnel = true,
                "udptnl-csum" => (offloads.udp_tunnel, offloads.udp_tunnel_csum) = (true, true),
                other => {
                    return Err(format!(
                    "unknown offload {other:?} (known: csum, tso4, tso6, tso, ecn, uso, udptnl, udptnl-csum, all, none)"
                ))
                }
            }
        }
        if offloads.any_segmentation() && !offloads.csum {
            return Err("segmentation offloads (tso4, tso6, ecn, uso) need csum".to_string());
        }
        if offloads.udp_tunnel && !(offloads.tso4 || offloads.tso6 || offloads.uso) {
            return Err("udptnl needs an inner segmentation offload (tso4, tso6, uso)".to_string());
        }
        Ok(offloads)
    }

    pub fn any_segmentation(&self) -> bool {
        self.tso4 || self.tso6 || self.ecn || self.uso || self.udp_tunnel
    }

    /// Size of the virtio-net header this port exchanges.
    pub fn vnet_len(&self) -> usize {
        if self.udp_tunnel {
            TUNNEL_VNET_LEN
        } else {
            BASE_VNET_LEN
        }
    }

    /// The `TUNSETOFFLOAD` argument.
    pub fn tun_flags(&self) -> libc::c_uint {
        let mut flags = 0;
        let bits = [
            (self.csum, libc::TUN_F_CSUM),
            (self.tso4, libc::TUN_F_TSO4),
            (self.tso6, libc::TUN_F_TSO6),
            (self.ecn, libc::TUN_F_TSO_ECN),
            (self.uso, libc::TUN_F_USO4 | libc::TUN_F_USO6),
            (self.udp_tunnel, TUN_F_UDP_TUNNEL_GSO),
            (self.udp_tunnel_csum, TUN_F_UDP_TUNNEL_GSO_CSUM),
        ];
        for (on, bit) in bits {
            if on {
                flags |= bit;
            }
        }
        flags
    }
}

impl fmt::Display for Offloads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (self.csum, "csum"),
            (self.tso4, "tso4"),
            (self.tso6, "tso6"),
            (self.ecn, "ecn"),
            (self.uso, "uso"),
            (self.udp_tunnel, "udptnl"),
            (self.udp_tunnel_csum, "udptnl-csum"),
        ];
        let on: Vec<&str> = names
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect();
        if on.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&on.join("+"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_a_feature_list() {
        let o = Offloads::parse("csum+tso4+uso").unwrap();
        assert!(o.csum && o.tso4 && o.uso && !o.tso6);
        assert_eq!(o.to_string(), "csum+tso4+uso");
        assert_eq!(
            o.tun_flags(),
            libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_USO4 | libc::TUN_F_USO6
        );
    }

    #[test]
    fn udp_tunnel_offloads_ask_for_the_tunnel_header() {
        let o = Offloads::parse("csum+tso4+udptnl-csum").unwrap();
        assert!(o.udp_tunnel && o.udp_tunnel_csum);
        assert_eq!(o.to_string(), "csum+tso4+udptnl+udptnl-csum");
        assert_eq!(o.tun_flags() & 0x180, 0x180);
        assert_eq!(o.vnet_len(), TUNNEL_VNET_LEN);
        assert_eq!(Offloads::ALL.vnet_len(), BASE_VNET_LEN);
        assert!(Offloads::parse("csum+udptnl").is_err());
        assert!(Offloads::parse("udptnl").is_err());
    }

    #[test]
    fn segmentation_without_csum_is_refused() {
        assert!(Offloads::parse("tso4").is_err());
        assert!(Offloads::parse("csum+bogus").is_err());
        assert_eq!(Offloads::parse("none").unwrap(), Offloads::default());
    }
}
