//! `--port` arguments: `tap:NAME@NETNS[,offloads=csum+tso4,napi]`,
//! `packet:IFNAME@NETNS[,offloads=…,qdisc-bypass]`, `vhost-user:SOCKET[,mtu=N]`.

use super::Offloads;
use crate::netns::Netns;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortKind {
    /// A TAP device the forwarder creates, with `IFF_VNET_HDR` (the "VM" side).
    Tap,
    /// An AF_PACKET socket on an existing device, with `PACKET_VNET_HDR` (the "NIC").
    Packet,
    /// A vhost-user socket the forwarder listens on; a guest's QEMU connects (the
    /// "VM" side, with real virtqueues). `ifname` holds the socket's path.
    VhostUser,
}

/// What a guest's interface carries without segmentation, unless `mtu=` says otherwise
/// (virtio-net has no MTU to read unless the device offers one, which this one does not).
pub const DEFAULT_GUEST_MTU: usize = 1500;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSpec {
    pub kind: PortKind,
    pub ifname: String,
    pub netns: Netns,
    pub offloads: Offloads,
    /// TAP only: `IFF_NAPI`, so frames written go through the kernel's GRO.
    pub napi: bool,
    /// AF_PACKET only: `PACKET_QDISC_BYPASS`.
    pub qdisc_bypass: bool,
    /// vhost-user only: the guest interface's MTU.
    pub mtu: usize,
}

impl PortSpec {
    pub fn label(&self) -> String {
        let kind = match self.kind {
            PortKind::Tap => "tap",
            PortKind::Packet => "packet",
            PortKind::VhostUser => return format!("vhost-user:{}", self.ifname),
        };
        match &self.netns {
            Netns::Current => format!("{kind}:{}", self.ifname),
            Netns::Named(ns) => format!("{kind}:{}@{ns}", self.ifname),
        }
    }
}

impl std::str::FromStr for PortSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<PortSpec, String> {
        let (kind, rest) = text
            .split_once(':')
            .ok_or_else(|| format!("{text:?}: expected tap:NAME@NETNS or packet:IFNAME@NETNS"))?;
        let kind = match kind {
            "tap" => PortKind::Tap,
            "packet" => PortKind::Packet,
            "vhost-user" => return vhost_user(rest),
            other => return Err(format!("unknown port kind {other:?} (tap, packet or vhost-user)")),
        };
        let mut options = rest.split(',');
        let place = options.next().unwrap_or_default();
        let (ifname, netns) = match place.split_once('@') {
            Some((name, ns)) => (name, Netns::parse(Some(ns))),
            None => (place, Netns::Current),
        };
        if ifname.is_empty() || ifname.len() > 15 || ifname.contains('/') {
            return Err(format!(
                "{ifname:?}: a device name has 1 to 15 characters, no '/'"
            ));
        }
        let mut spec = PortSpec {
            kind,
            ifname: ifname.to_string(),
            netns,
            offloads: match kind {
                PortKind::Packet => Offloads::ALL,
                PortKind::Tap | PortKind::VhostUser => Offloads::default(),
            },
            napi: false,
            qdisc_bypass: false,
            mtu: 0,
        };
        for option in options {
            match (kind, option.split_once('=')) {
                (_, Some(("offloads", list))) => spec.offloads = Offloads::parse(list)?,
                (PortKind::Tap, None) if option == "napi" => spec.napi = true,
                (PortKind::Packet, None) if option == "qdisc-bypass" => spec.qdisc_bypass = true,
                _ => {
                    return Err(format!(
                        "{option:?}: not an option of a {} port",
                        spec.label()
                    ))
                }
            }
        }
        if kind == PortKind::Packet && spec.offloads.udp_tunnel {
            // AF_PACKET's vnet header has no tunnel fields.
            return Err(format!("{}: udptnl is a TAP offload", spec.label()));
        }
        Ok(spec)
    }
}

/// `vhost-user:SOCKET[,mtu=N]`: the socket's path (absolute, so a message names it
/// unambiguously) and the guest interface's MTU. Offloads are not given: they follow what
/// the guest negotiates.
fn vhost_user(rest: &str) -> Result<PortSpec, String> {
    let mut parts = rest.split(',');
    let path = parts.next().unwrap_or_default();
    if !path.starts_with('/') || path.len() > 107 {
        return Err(format!(
            "{path:?}: a vhost-user port needs an absolute socket path of at most 107 bytes"
        ));
    }
    let mut spec = PortSpec {
        kind: PortKind::VhostUser,
        ifname: path.to_string(),
        netns: Netns::Current,
        offloads: Offloads::default(),
        napi: false,
        qdisc_bypass: false,
        mtu: DEFAULT_GUEST_MTU,
    };
    for option in parts {
        match option.split_once('=') {
            Some(("mtu", value)) => {
                spec.mtu = value
                    .parse()
                    .ok()
                    .filter(|mtu| (68..=65535).contains(mtu))
                    .ok_or_else(|| format!("mtu={value}: a number from 68 to 65535"))?
            }
            _ => return Err(format!("{option:?}: not an option of a vhost-user port (mtu=N)")),
        }
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_tap_port_with_options() {
        let spec: PortSpec = "tap:ofl-ta@ofl-1-a,offloads=csum+tso4,napi"
            .parse()
            .unwrap();
        assert_eq!(spec.kind, PortKind::Tap);
        assert_eq!(spec.ifname, "ofl-ta");
        assert_eq!(spec.netns, Netns::Named("ofl-1-a".into()));
        assert!(spec.napi && spec.offloads.tso4 && !spec.offloads.tso6);
        assert_eq!(spec.label(), "tap:ofl-ta@ofl-1-a");
    }

    #[test]
    fn packet_ports_default_to_every_offload() {
        let spec: PortSpec = "packet:ofl-vm@ofl-1-m".parse().unwrap();
        assert_eq!(spec.offloads, Offloads::ALL);
    }

    #[test]
    fn refuses_bad_specs() {
        for bad in [
            "tap",
            "udp:x@y",
            "tap:@ns",
            "tap:ofl-way-too-long-name@n",
            "packet:x@n,napi",
        ] {
            assert!(bad.parse::<PortSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn parses_a_vhost_user_port() {
        let spec: PortSpec = "vhost-user:/run/offlab/a.sock,mtu=9000".parse().unwrap();
        assert_eq!(spec.kind, PortKind::VhostUser);
        assert_eq!((spec.ifname.as_str(), spec.mtu), ("/run/offlab/a.sock", 9000));
        assert_eq!(spec.label(), "vhost-user:/run/offlab/a.sock");
        let default: PortSpec = "vhost-user:/tmp/x.sock".parse().unwrap();
        assert_eq!(default.mtu, DEFAULT_GUEST_MTU);
        for bad in ["vhost-user:relative.sock", "vhost-user:/x.sock,mtu=0", "vhost-user:/x.sock,napi"] {
            assert!(bad.parse::<PortSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn udptnl_is_a_tap_offload() {
        let tap: PortSpec = "tap:ofl-ta@ofl-1-a,offloads=csum+tso4+udptnl"
            .parse()
            .unwrap();
        assert!(tap.offloads.udp_tunnel);
        let packet = "packet:ofl-p@ofl-1-a,offloads=csum+tso4+udptnl".parse::<PortSpec>();
        assert!(packet.is_err());
    }
}
