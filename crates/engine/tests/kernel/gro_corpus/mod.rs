//! The batches the GRO differential test sends through a veth with GRO on (the kernel)
//! and pushes through `offlab_engine::gro` (the engine). Each case is named after the
//! merge rule it exercises; `tcp` and `tunnel` hold the cases, this file the builders.

mod tcp;
mod tunnel;

pub use tcp::tcp_cases;
pub use tunnel::{udp_cases, vxlan_cases};

use crate::kernel::frames::{self, Csum, Eth, Ip, Packet, Tcp, V6Ext, L4};

pub const SRC_MAC: [u8; 6] = [0x02, 0x0f, 0x1a, 0xb0, 0x00, 0x01];
/// The receiving veth's address, so frames are PACKET_HOST there.
pub const DST_MAC: [u8; 6] = [0x02, 0x0f, 0x1a, 0xb0, 0x00, 0x02];
pub const DST_MAC_TEXT: &str = "02:0f:1a:b0:00:02";

/// TCP payload per segment on a 1500-byte MTU (IPv4, no options).
pub const MSS: usize = 1448;

pub struct GroCase {
    pub name: String,
    /// Wire frames in send order (full checksums unless the case corrupts one).
    pub frames: Vec<Vec<u8>>,
}

fn case(name: &str, packets: Vec<Packet>) -> GroCase {
    let frames = packets.iter().map(|p| p.build(Csum::Full)).collect();
    GroCase {
        name: name.to_owned(),
        frames,
    }
}

fn eth() -> Eth {
    Eth {
        dst: DST_MAC,
        src: SRC_MAC,
        vlan: None,
    }
}

pub fn v4() -> Ip {
    Ip::V4 {
        src: [10, 2, 0, 1],
        dst: [10, 2, 0, 2],
        id: 1000,
        ttl: 64,
        tos: 0,
        df: true,
    }
}

/// IPv6 addresses `fd<net>::1` → `fd<net>::2`.
pub fn v6_net(net: u8) -> Ip {
    let mut src = [0u8; 16];
    src[0] = 0xfd;
    src[1] = net;
    src[15] = 1;
    let mut dst = src;
    dst[15] = 2;
    Ip::V6 {
        src,
        dst,
        hop_limit: 64,
        tclass: 0,
        flow_label: 0x1234,
        dest_opts: false,
        ext: V6Ext::None,
    }
}

pub fn v6() -> Ip {
    v6_net(2)
}

/// A TCP bulk flow: packet `i` carries bytes `i*len..` with IPv4 ID base + i.
#[derive(Clone)]
pub struct TcpFlow {
    pub ip: Ip,
    pub sport: u16,
    pub options: Vec<u8>,
    pub len: usize,
}

impl TcpFlow {
    pub fn new(ip: Ip) -> TcpFlow {
        TcpFlow {
            ip,
            sport: 40000,
            options: vec![],
            len: MSS,
        }
    }

    pub fn len(self, len: usize) -> TcpFlow {
        TcpFlow { len, ..self }
    }

    pub fn options(self, options: Vec<u8>) -> TcpFlow {
        TcpFlow { options, ..self }
    }

    pub fn packet(&self, i: usize) -> Packet {
        let mut ip = self.ip.clone();
        if let Ip::V4 { id, .. } = &mut ip {
            *id = id.wrapping_add(i as u16);
        }
        let tcp = Tcp {
            sport: self.sport,
            dport: 5201,
            seq: 0x1000_0000u32.wrapping_add((i * self.len) as u32),
            ack: 0x2000_0000,
            flags: frames::tcp_flags::ACK,
            window: 502,
            options: self.options.clone(),
        };
        Packet {
            eth: eth(),
            ip,
            l4: L4::Tcp(tcp),
            payload: frames::payload(self.len, i as u8),
        }
    }

    pub fn run(&self, n: usize) -> Vec<Packet> {
        (0..n).map(|i| self.packet(i)).collect()
    }
}

/// UDP datagrams of one flow (forwarded traffic: no local socket, so the kernel needs
/// `rx-udp-gro-forwarding` to coalesce them).
pub fn udp_packet(ip: &Ip, i: usize, len: usize) -> Packet {
    let mut ip = ip.clone();
    if let Ip::V4 { id, .. } = &mut ip {
        *id = id.wrapping_add(i as u16);
    }
    let l4 = L4::Udp {
        sport: 40001,
        dport: 5202,
    };
    Packet {
        eth: eth(),
        ip,
        l4,
        payload: frames::payload(len, i as u8),
    }
}

fn tcp_of(p: &mut Packet) -> &mut Tcp {
    match &mut p.l4 {
        L4::Tcp(t) => t,
        L4::Udp { .. } => unreachable!("TCP flow"),
    }
}

/// Edits the IPv4 fields (ID, TTL, TOS, DF) of a packet.
fn set_v4(p: &mut Packet, edit: impl FnOnce(&mut u16, &mut u8, &mut u8, &mut bool)) {
    if let Ip::V4 {
        id, ttl, tos, df, ..
    } = &mut p.ip
    {
        edit(id, ttl, tos, df);
    }
}

/// Edits the IPv6 fields (hop limit, traffic class, flow label, Destination Options).
fn set_v6(p: &mut Packet, edit: impl FnOnce(&mut u8, &mut u8, &mut u32, &mut bool)) {
    if let Ip::V6 {
        hop_limit,
        tclass,
        flow_label,
        dest_opts,
        ..
    } = &mut p.ip
    {
        edit(hop_limit, tclass, flow_label, dest_opts);
    }
}

/// A run of `n` with `edit` applied to packet `at`.
fn run_with(flow: &TcpFlow, n: usize, at: usize, edit: impl FnOnce(&mut Packet)) -> Vec<Packet> {
    let mut run = flow.run(n);
    edit(&mut run[at]);
    run
}

/// A run of `n` with TCP flag `flag` added on packet `at`.
fn flagged(flow: &TcpFlow, n: usize, at: usize, flag: u8) -> Vec<Packet> {
    run_with(flow, n, at, |p| tcp_of(p).flags |= flag)
}

/// `edit` applied to every packet.
fn each(mut packets: Vec<Packet>, mut edit: impl FnMut(&mut Packet)) -> Vec<Packet> {
    packets.iter_mut().for_each(&mut edit);
    packets
}
