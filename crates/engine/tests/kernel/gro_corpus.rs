//! The batches the GRO differential test sends through a veth with GRO on (the kernel)
//! and pushes through `offlab_engine::gro` (the engine). Each case is named after the
//! merge rule it exercises.

use crate::kernel::frames::{self, tcp_flags as f, Csum, Eth, Ip, Packet, Tcp, L4};

pub const SRC_MAC: [u8; 6] = [0x02, 0x0f, 0x1a, 0xb0, 0x00, 0x01];
/// The receiving veth's address, so frames are PACKET_HOST there.
pub const DST_MAC: [u8; 6] = [0x02, 0x0f, 0x1a, 0xb0, 0x00, 0x02];
pub const DST_MAC_TEXT: &str = "02:0f:1a:b0:00:02";

pub const MSS: usize = 1448;

pub struct GroCase {
    pub name: String,
    /// Wire frames in send order (full checksums unless the case corrupts one).
    pub frames: Vec<Vec<u8>>,
}

fn case(name: &str, packets: Vec<Packet>) -> GroCase {
    GroCase { name: name.to_owned(), frames: packets.iter().map(|p| p.build(Csum::Full)).collect() }
}

pub fn v4() -> Ip {
    Ip::V4 { src: [10, 2, 0, 1], dst: [10, 2, 0, 2], id: 1000, ttl: 64, tos: 0, df: true }
}

pub fn v6() -> Ip {
    let mut src = [0u8; 16];
    src[0] = 0xfd;
    src[1] = 2;
    src[15] = 1;
    let mut dst = src;
    dst[15] = 2;
    Ip::V6 { src, dst, hop_limit: 64, tclass: 0, flow_label: 0x1234, dest_opts: false }
}

/// A TCP bulk flow: packet `i` carries bytes `i*len..` with ID base+i.
#[derive(Clone)]
pub struct TcpFlow {
    pub ip: Ip,
    pub sport: u16,
    pub options: Vec<u8>,
    pub len: usize,
}

impl TcpFlow {
    pub fn new(ip: Ip) -> TcpFlow {
        TcpFlow { ip, sport: 40000, options: vec![], len: MSS }
    }

    pub fn packet(&self, i: usize) -> Packet {
        let mut ip = self.ip.clone();
        if let Ip::V4 { id, .. } = &mut ip {
            *id = id.wrapping_add(i as u16);
        }
        Packet {
            eth: Eth { dst: DST_MAC, src: SRC_MAC, vlan: None },
            ip,
            l4: L4::Tcp(Tcp {
                sport: self.sport,
                dport: 5201,
                seq: 0x1000_0000u32.wrapping_add((i * self.len) as u32),
                ack: 0x2000_0000,
                flags: f::ACK,
                window: 502,
                options: self.options.clone(),
            }),
            payload: frames::payload(self.len, i as u8),
        }
    }

    pub fn run(&self, n: usize) -> Vec<Packet> {
        (0..n).map(|i| self.packet(i)).collect()
    }
}

fn tcp_of(p: &mut Packet) -> &mut Tcp {
    match &mut p.l4 {
        L4::Tcp(t) => t,
        L4::Udp { .. } => unreachable!("TCP flow"),
    }
}

fn set_v4(p: &mut Packet, edit: impl FnOnce(&mut u16, &mut u8, &mut u8, &mut bool)) {
    if let Ip::V4 { id, ttl, tos, df, .. } = &mut p.ip {
        edit(id, ttl, tos, df);
    }
}

/// Applies `edit` to packet `at` of a run of `n`.
fn run_with(flow: &TcpFlow, n: usize, at: usize, edit: impl FnOnce(&mut Packet)) -> Vec<Packet> {
    let mut run = flow.run(n);
    edit(&mut run[at]);
    run
}

pub fn tcp_cases() -> Vec<GroCase> {
    let v4f = TcpFlow::new(v4());
    // 1500-byte MTU: IPv6 leaves 1440 bytes for TCP payload.
    let v6f = TcpFlow { len: 1440, ..TcpFlow::new(v6()) };
    let ts = TcpFlow { options: frames::ts_option(0x0102_0304, 0x0506_0708), len: MSS - 12, ..v4f.clone() };
    let mut cases = vec![
        case("tcp4 in-order run of 20", v4f.run(20)),
        case("tcp4 run of 50 hits the 64 KiB cap", v4f.run(50)),
        case("tcp4 timestamps, equal options", ts.run(16)),
        case("tcp4 single packet", v4f.run(1)),
        case("tcp4 run in 802.1Q VLAN 100", v4f.run(8).into_iter().map(|mut p| { p.eth.vlan = Some(100); p }).collect()),
        case("tcp4 PSH mid-run ends the run", run_with(&v4f, 10, 4, |p| tcp_of(p).flags |= f::PSH)),
        case("tcp4 FIN on last", run_with(&v4f, 8, 7, |p| tcp_of(p).flags |= f::FIN)),
        case("tcp4 FIN mid-run", run_with(&v4f, 8, 3, |p| tcp_of(p).flags |= f::FIN)),
        case("tcp4 SYN mid-run", run_with(&v4f, 8, 3, |p| tcp_of(p).flags |= f::SYN)),
        case("tcp4 RST mid-run", run_with(&v4f, 8, 3, |p| tcp_of(p).flags |= f::RST)),
        case("tcp4 URG mid-run", run_with(&v4f, 8, 3, |p| tcp_of(p).flags |= f::URG)),
        case("tcp4 CWR mid-run", run_with(&v4f, 8, 3, |p| tcp_of(p).flags |= f::CWR)),
        case("tcp4 CWR on first packet", run_with(&v4f, 8, 0, |p| tcp_of(p).flags |= f::CWR)),
        case("tcp4 ECE on all", v4f.run(8).into_iter().map(|mut p| { tcp_of(&mut p).flags |= f::ECE; p }).collect()),
        case("tcp4 short segment mid-run", run_with(&v4f, 8, 3, |p| p.payload.truncate(700))),
        case("tcp4 window change mid-run", run_with(&v4f, 8, 4, |p| tcp_of(p).window = 503)),
        case("tcp4 ACK advances mid-run", run_with(&v4f, 8, 4, |p| tcp_of(p).ack += 1)),
        case("tcp4 timestamp changes mid-run", run_with(&ts, 8, 4, |p| {
            tcp_of(p).options = frames::ts_option(0x0102_0305, 0x0506_0708)
        })),
        case("tcp4 TTL differs mid-run", run_with(&v4f, 8, 4, |p| set_v4(p, |_, ttl, _, _| *ttl = 63))),
        case("tcp4 TOS differs mid-run", run_with(&v4f, 8, 4, |p| set_v4(p, |_, _, tos, _| *tos = 0x10))),
        case("tcp4 DF differs mid-run", run_with(&v4f, 8, 4, |p| set_v4(p, |_, _, _, df| *df = false))),
        case("tcp4 IP ID jump mid-run", run_with(&v4f, 8, 4, |p| set_v4(p, |id, _, _, _| *id += 100))),
        case("tcp4 IP ID wraps 0xffff to 0", {
            let flow = TcpFlow { ip: Ip::V4 { src: [10, 2, 0, 1], dst: [10, 2, 0, 2], id: 0xfffc, ttl: 64, tos: 0, df: true }, ..v4f.clone() };
            flow.run(8)
        }),
        case("tcp4 fixed IP ID with DF", v4f.run(8).into_iter().map(|mut p| { set_v4(&mut p, |id, _, _, _| *id = 7); p }).collect()),
        case("tcp4 fixed IP ID without DF", v4f.run(8).into_iter().map(|mut p| { set_v4(&mut p, |id, _, _, df| { *id = 7; *df = false }); p }).collect()),
        case("tcp4 reordered: 3 and 4 swapped", {
            let mut r = v4f.run(8);
            r.swap(3, 4);
            r
        }),
        case("tcp4 gap: packet 4 missing", {
            let mut r = v4f.run(9);
            r.remove(4);
            r
        }),
        case("tcp4 duplicate packet", {
            let mut r = v4f.run(8);
            r.insert(4, r[3].clone());
            r
        }),
        case("tcp4 pure ACKs are not merged", (0..4).map(|i| {
            let mut p = v4f.packet(i);
            p.payload.clear();
            tcp_of(&mut p).ack += i as u32;
            p
        }).collect()),
        case("tcp4 two interleaved flows", {
            let other = TcpFlow { sport: 40002, ..v4f.clone() };
            (0..12).map(|i| if i % 2 == 0 { v4f.packet(i / 2) } else { other.packet(i / 2) }).collect()
        }),
        case("tcp6 in-order run of 20", v6f.run(20)),
        case("tcp6 timestamps", TcpFlow { options: frames::ts_option(9, 9), len: 1428, ..v6f.clone() }.run(10)),
        case("tcp6 PSH mid-run", run_with(&v6f, 8, 2, |p| tcp_of(p).flags |= f::PSH)),
        case("tcp6 Destination Options header, equal", {
            let mut ip = v6();
            if let Ip::V6 { dest_opts, .. } = &mut ip { *dest_opts = true }
            TcpFlow { ip, len: 1432, ..v6f.clone() }.run(10)
        }),
        case("tcp6 Destination Options header on one packet", run_with(&TcpFlow { len: 1432, ..v6f.clone() }, 8, 4, |p| {
            if let Ip::V6 { dest_opts, .. } = &mut p.ip { *dest_opts = true }
        })),
        case("tcp6 CWR mid-run", run_with(&v6f, 8, 4, |p| tcp_of(p).flags |= f::CWR)),
        case("tcp6 flow label differs mid-run", run_with(&v6f, 8, 4, |p| {
            if let Ip::V6 { flow_label, .. } = &mut p.ip { *flow_label = 0x4321 }
        })),
        case("tcp6 hop limit differs mid-run", run_with(&v6f, 8, 4, |p| {
            if let Ip::V6 { hop_limit, .. } = &mut p.ip { *hop_limit = 9 }
        })),
        case("tcp6 traffic class differs mid-run", run_with(&v6f, 8, 4, |p| {
            if let Ip::V6 { tclass, .. } = &mut p.ip { *tclass = 0x20 }
        })),
    ];
    let mut bad = case("tcp4 bad TCP checksum mid-run", v4f.run(8));
    bad.frames[4] = v4f.packet(4).build(Csum::Corrupt);
    cases.push(bad);
    let mut bad_ip = case("tcp4 bad IPv4 header checksum mid-run", v4f.run(8));
    bad_ip.frames[4][frames::ETH_LEN + 10] ^= 0x40;
    cases.push(bad_ip);
    let small = TcpFlow { len: 4, ..v4f.clone() };
    let mut padded = case("tcp4 Ethernet padding after small segments", small.run(6));
    for frame in &mut padded.frames {
        frame.extend_from_slice(&[0, 0]); // 58 bytes padded to the 60-byte minimum
    }
    cases.push(padded);
    cases.push(case("tcp4 100 segments of 500 bytes (kernel caps bytes, not segments)", TcpFlow { len: 500, ..v4f.clone() }.run(100)));
    // 45 × 1448 + 40 = 65200; a last segment of 335 makes the IP length exactly 65535.
    cases.push(case("tcp4 run ending at exactly 65535 bytes", run_with(&v4f, 46, 45, |p| p.payload.truncate(335))));
    cases.push(case("tcp4 run one byte over 65535", run_with(&v4f, 46, 45, |p| p.payload.truncate(336))));
    cases.push(case("tcp4 PSH on every packet", v4f.run(6).into_iter().map(|mut p| { tcp_of(&mut p).flags |= f::PSH; p }).collect()));
    cases.push(case("tcp4 40 bytes of options", TcpFlow { options: vec![1; 40], len: 1408, ..v4f }.run(8)));
    cases
}

/// UDP datagrams of one flow (forwarded traffic: no local socket, so the kernel needs
/// `rx-udp-gro-forwarding` to coalesce them).
pub fn udp_packet(ip: &Ip, i: usize, len: usize) -> Packet {
    let mut ip = ip.clone();
    if let Ip::V4 { id, .. } = &mut ip {
        *id = id.wrapping_add(i as u16);
    }
    Packet {
        eth: Eth { dst: DST_MAC, src: SRC_MAC, vlan: None },
        ip,
        l4: L4::Udp { sport: 40001, dport: 5202 },
        payload: frames::payload(len, i as u8),
    }
}

pub fn udp_cases() -> Vec<GroCase> {
    let run = |ip: &Ip, n: usize, len: usize| (0..n).map(|i| udp_packet(ip, i, len)).collect::<Vec<_>>();
    let mut short_mid = run(&v4(), 8, 1400);
    short_mid[3].payload.truncate(500);
    let mut short_last = run(&v4(), 8, 1400);
    short_last[7].payload.truncate(500);
    let mut ttl_mid = run(&v4(), 8, 1400);
    if let Ip::V4 { ttl, .. } = &mut ttl_mid[4].ip {
        *ttl = 9;
    }
    let mut id_jump = run(&v4(), 8, 1400);
    if let Ip::V4 { id, .. } = &mut id_jump[4].ip {
        *id += 50;
    }
    let two_flows: Vec<Packet> = (0..12)
        .map(|i| {
            let mut p = udp_packet(&v4(), i / 2, 1000);
            if i % 2 == 1 {
                p.l4 = L4::Udp { sport: 40003, dport: 5202 };
            }
            p
        })
        .collect();
    let mut bad = case("udp4 bad UDP checksum mid-run", run(&v4(), 8, 1400));
    bad.frames[4] = udp_packet(&v4(), 4, 1400).build(Csum::Corrupt);
    let zero = GroCase {
        name: "udp4 zero checksum datagrams".into(),
        frames: run(&v4(), 6, 1400).iter().map(|p| p.build(Csum::Zero)).collect(),
    };
    vec![
        bad,
        zero,
        case("udp4 TTL differs mid-run", ttl_mid),
        case("udp4 IP ID jump mid-run", id_jump),
        case("udp4 two interleaved flows", two_flows),
        case("udp4 run of 20 datagrams", run(&v4(), 20, 1400)),
        case("udp4 run of 70 hits the 64-segment cap", run(&v4(), 70, 500)),
        case("udp4 short datagram mid-run", short_mid),
        case("udp4 short datagram last", short_last),
        case("udp6 run of 16 datagrams", run(&v6(), 16, 1200)),
    ]
}

/// VXLAN (UDP to 4789) around the packets of inner flows; outer IPv4 IDs increment.
pub fn vxlan_cases() -> Vec<GroCase> {
    let outer_v4 = |i: usize| Ip::V4 { src: [10, 3, 0, 1], dst: [10, 3, 0, 2], id: 2000u16.wrapping_add(i as u16), ttl: 64, tos: 0, df: false };
    let outer_v6 = |_: usize| {
        let mut src = [0u8; 16];
        src[0] = 0xfd;
        src[1] = 3;
        src[15] = 1;
        let mut dst = src;
        dst[15] = 2;
        Ip::V6 { src, dst, hop_limit: 64, tclass: 0, flow_label: 0x777, dest_opts: false }
    };
    let inner = TcpFlow { len: 1398, ..TcpFlow::new(v4()) };
    let inner6 = TcpFlow { len: 1358, ..TcpFlow::new(v6()) };
    let wrap = |packets: Vec<Packet>, outer: &dyn Fn(usize) -> Ip, vni: u32, udp: Csum| -> Vec<Vec<u8>> {
        let eth = Eth { dst: DST_MAC, src: SRC_MAC, vlan: None };
        packets
            .iter()
            .enumerate()
            .map(|(i, p)| frames::vxlan_frame(&eth, &outer(i), 50000, vni, &p.build(Csum::Full), udp))
            .collect()
    };
    let vxcase = |name: &str, frames: Vec<Vec<u8>>| GroCase { name: name.to_owned(), frames };
    let mut two_vnis = wrap(inner.run(6), &outer_v4, 42, Csum::Zero);
    let other_vni = wrap(inner.run(6), &outer_v4, 43, Csum::Zero);
    for (i, f) in other_vni.into_iter().enumerate() {
        two_vnis.insert(2 * i + 1, f);
    }
    let udp_inner: Vec<Packet> = (0..8).map(|i| udp_packet(&v4(), i, 1350)).collect();
    vec![
        vxcase("vxlan4 tcp4 run, outer UDP checksum zero", wrap(inner.run(16), &outer_v4, 42, Csum::Zero)),
        vxcase("vxlan4 tcp4 run, outer UDP checksum", wrap(inner.run(16), &outer_v4, 42, Csum::Full)),
        vxcase("vxlan4 tcp4 PSH mid-run", wrap(run_with(&inner, 8, 3, |p| tcp_of(p).flags |= f::PSH), &outer_v4, 42, Csum::Zero)),
        vxcase(
            "vxlan4 inner TTL differs mid-run",
            wrap(run_with(&inner, 8, 4, |p| set_v4(p, |_, ttl, _, _| *ttl = 1)), &outer_v4, 42, Csum::Zero),
        ),
        vxcase("vxlan4 tcp6 inner run", wrap(inner6.run(10), &outer_v4, 42, Csum::Zero)),
        vxcase("vxlan4 two VNIs interleaved", two_vnis),
        vxcase("vxlan4 inner UDP datagrams", wrap(udp_inner, &outer_v4, 42, Csum::Zero)),
        vxcase("vxlan6 tcp4 run, outer UDP checksum", wrap(TcpFlow { len: 1378, ..inner.clone() }.run(12), &outer_v6, 42, Csum::Full)),
    ]
}
