//! UDP cases (forwarded datagrams) and VXLAN cases (inner TCP and UDP flows).

use super::{case, eth, run_with, set_v4, tcp_of, udp_packet, v4, v6, v6_net, GroCase, TcpFlow};
use crate::kernel::frames::{self, tcp_flags as f, Csum, Ip, Packet, L4};

fn udp_run(ip: &Ip, n: usize, len: usize) -> Vec<Packet> {
    (0..n).map(|i| udp_packet(ip, i, len)).collect()
}

pub fn udp_cases() -> Vec<GroCase> {
    let edit = |at: usize, edit: &dyn Fn(&mut Packet)| {
        let mut run = udp_run(&v4(), 8, 1400);
        edit(&mut run[at]);
        run
    };
    let two_flows = (0..12).map(|i| {
        let mut p = udp_packet(&v4(), i / 2, 1000);
        if i % 2 == 1 {
            p.l4 = L4::Udp {
                sport: 40003,
                dport: 5202,
            };
        }
        p
    });
    let mut bad = case("udp4 bad UDP checksum mid-run", udp_run(&v4(), 8, 1400));
    bad.frames[4] = udp_packet(&v4(), 4, 1400).build(Csum::Corrupt);
    let zero_frames = udp_run(&v4(), 6, 1400)
        .iter()
        .map(|p| p.build(Csum::Zero))
        .collect();
    let zero = GroCase {
        name: "udp4 zero checksum datagrams".into(),
        frames: zero_frames,
    };
    vec![
        case("udp4 run of 20 datagrams", udp_run(&v4(), 20, 1400)),
        case(
            "udp4 run of 70 hits the 64-segment cap",
            udp_run(&v4(), 70, 500),
        ),
        case(
            "udp4 short datagram mid-run",
            edit(3, &|p| p.payload.truncate(500)),
        ),
        case(
            "udp4 short datagram last",
            edit(7, &|p| p.payload.truncate(500)),
        ),
        case(
            "udp4 TTL differs mid-run",
            edit(4, &|p| set_v4(p, |_, ttl, _, _| *ttl = 9)),
        ),
        case(
            "udp4 IP ID jump mid-run",
            edit(4, &|p| set_v4(p, |id, _, _, _| *id += 50)),
        ),
        case("udp4 two interleaved flows", two_flows.collect()),
        bad,
        zero,
        case("udp6 run of 16 datagrams", udp_run(&v6(), 16, 1200)),
    ]
}

/// Outer IPv4 header of the `i`th VXLAN packet (no DF, so the ID must increment).
fn outer_v4(i: usize) -> Ip {
    let id = 2000u16.wrapping_add(i as u16);
    Ip::V4 {
        src: [10, 3, 0, 1],
        dst: [10, 3, 0, 2],
        id,
        ttl: 64,
        tos: 0,
        df: false,
    }
}

fn outer_v6(_: usize) -> Ip {
    let mut ip = v6_net(3);
    if let Ip::V6 { flow_label, .. } = &mut ip {
        *flow_label = 0x777;
    }
    ip
}

/// Each packet wrapped in VXLAN (source port 50000, `vni`) with the given outer header.
fn wrap(packets: Vec<Packet>, outer: fn(usize) -> Ip, vni: u32, udp: Csum) -> Vec<Vec<u8>> {
    let wrap_one = |(i, p): (usize, &Packet)| {
        frames::vxlan_frame(&eth(), &outer(i), 50000, vni, &p.build(Csum::Full), udp)
    };
    packets.iter().enumerate().map(wrap_one).collect()
}

fn vxcase(name: &str, frames: Vec<Vec<u8>>) -> GroCase {
    GroCase {
        name: name.to_owned(),
        frames,
    }
}

pub fn vxlan_cases() -> Vec<GroCase> {
    let inner = TcpFlow::new(v4()).len(1398);
    let mut two_vnis = wrap(inner.run(6), outer_v4, 42, Csum::Zero);
    for (i, f) in wrap(inner.run(6), outer_v4, 43, Csum::Zero)
        .into_iter()
        .enumerate()
    {
        two_vnis.insert(2 * i + 1, f);
    }
    let psh = run_with(&inner, 8, 3, |p| tcp_of(p).flags |= f::PSH);
    let ttl = run_with(&inner, 8, 4, |p| set_v4(p, |_, ttl, _, _| *ttl = 1));
    let udp_inner = (0..8).map(|i| udp_packet(&v4(), i, 1350)).collect();
    vec![
        vxcase(
            "vxlan4 tcp4 run, outer UDP checksum zero",
            wrap(inner.run(16), outer_v4, 42, Csum::Zero),
        ),
        vxcase(
            "vxlan4 tcp4 run, outer UDP checksum",
            wrap(inner.run(16), outer_v4, 42, Csum::Full),
        ),
        vxcase(
            "vxlan4 tcp4 PSH mid-run",
            wrap(psh, outer_v4, 42, Csum::Zero),
        ),
        vxcase(
            "vxlan4 inner TTL differs mid-run",
            wrap(ttl, outer_v4, 42, Csum::Zero),
        ),
        vxcase(
            "vxlan4 tcp6 inner run",
            wrap(
                TcpFlow::new(v6()).len(1358).run(10),
                outer_v4,
                42,
                Csum::Zero,
            ),
        ),
        vxcase("vxlan4 two VNIs interleaved", two_vnis),
        vxcase(
            "vxlan4 inner UDP datagrams",
            wrap(udp_inner, outer_v4, 42, Csum::Zero),
        ),
        vxcase(
            "vxlan6 tcp4 run, outer UDP checksum",
            wrap(inner.clone().len(1378).run(12), outer_v6, 42, Csum::Full),
        ),
    ]
}
