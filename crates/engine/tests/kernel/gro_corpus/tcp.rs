//! TCP cases: runs and caps, flags, header fields, order and validity, IPv6.

use super::{case, each, flagged, run_with, set_v4, set_v6, tcp_of, v4, v6, GroCase, TcpFlow, MSS};
use crate::kernel::frames::{self, tcp_flags as f, Csum, Ip};

pub fn tcp_cases() -> Vec<GroCase> {
    let mut cases = run_cases();
    cases.extend(flag_cases());
    cases.extend(header_cases());
    cases.extend(order_cases());
    cases.extend(v6_cases());
    cases
}

/// In-order runs and what ends them by size.
fn run_cases() -> Vec<GroCase> {
    let flow = TcpFlow::new(v4());
    let ts = flow
        .clone()
        .options(frames::ts_option(0x0102_0304, 0x0506_0708))
        .len(MSS - 12);
    let vlan = each(flow.run(8), |p| p.eth.vlan = Some(100));
    vec![
        case("tcp4 in-order run of 20", flow.run(20)),
        case("tcp4 run of 50 hits the 64 KiB cap", flow.run(50)),
        case("tcp4 timestamps, equal options", ts.run(16)),
        case(
            "tcp4 40 bytes of options",
            flow.clone().options(vec![1; 40]).len(1408).run(8),
        ),
        case("tcp4 single packet", flow.run(1)),
        case("tcp4 run in 802.1Q VLAN 100", vlan),
        case(
            "tcp4 short segment mid-run",
            run_with(&flow, 8, 3, |p| p.payload.truncate(700)),
        ),
        // 45 × 1448 + 40 = 65200; a last segment of 335 makes the IP length 65535.
        case(
            "tcp4 run ending at exactly 65535 bytes",
            run_with(&flow, 46, 45, |p| p.payload.truncate(335)),
        ),
        case(
            "tcp4 run one byte over 65535",
            run_with(&flow, 46, 45, |p| p.payload.truncate(336)),
        ),
        case(
            "tcp4 100 segments of 500 bytes (kernel caps bytes, not segments)",
            flow.clone().len(500).run(100),
        ),
    ]
}

fn flag_cases() -> Vec<GroCase> {
    let flow = TcpFlow::new(v4());
    vec![
        case(
            "tcp4 PSH mid-run ends the run",
            flagged(&flow, 10, 4, f::PSH),
        ),
        case(
            "tcp4 PSH on every packet",
            each(flow.run(6), |p| tcp_of(p).flags |= f::PSH),
        ),
        case("tcp4 FIN on last", flagged(&flow, 8, 7, f::FIN)),
        case("tcp4 FIN mid-run", flagged(&flow, 8, 3, f::FIN)),
        case("tcp4 SYN mid-run", flagged(&flow, 8, 3, f::SYN)),
        case("tcp4 RST mid-run", flagged(&flow, 8, 3, f::RST)),
        case("tcp4 URG mid-run", flagged(&flow, 8, 3, f::URG)),
        case("tcp4 CWR mid-run", flagged(&flow, 8, 3, f::CWR)),
        case("tcp4 CWR on first packet", flagged(&flow, 8, 0, f::CWR)),
        case(
            "tcp4 ECE on all",
            each(flow.run(8), |p| tcp_of(p).flags |= f::ECE),
        ),
    ]
}

/// One header field of one packet differs from the rest of its run.
fn header_cases() -> Vec<GroCase> {
    let flow = TcpFlow::new(v4());
    let ts = flow
        .clone()
        .options(frames::ts_option(0x0102_0304, 0x0506_0708))
        .len(MSS - 12);
    let wrapping = TcpFlow::new(v4()).run(8);
    let wrapping = each(wrapping, |p| {
        set_v4(p, |id, _, _, _| *id = id.wrapping_add(0xfffc - 1000))
    });
    let fixed_id = each(flow.run(8), |p| set_v4(p, |id, _, _, _| *id = 7));
    let fixed_no_df = each(flow.run(8), |p| {
        set_v4(p, |id, _, _, df| (*id, *df) = (7, false))
    });
    vec![
        case(
            "tcp4 window change mid-run",
            run_with(&flow, 8, 4, |p| tcp_of(p).window = 503),
        ),
        case(
            "tcp4 ACK advances mid-run",
            run_with(&flow, 8, 4, |p| tcp_of(p).ack += 1),
        ),
        case(
            "tcp4 timestamp changes mid-run",
            run_with(&ts, 8, 4, |p| {
                tcp_of(p).options = frames::ts_option(0x0102_0305, 0x0506_0708)
            }),
        ),
        case(
            "tcp4 TTL differs mid-run",
            run_with(&flow, 8, 4, |p| set_v4(p, |_, ttl, _, _| *ttl = 63)),
        ),
        case(
            "tcp4 TOS differs mid-run",
            run_with(&flow, 8, 4, |p| set_v4(p, |_, _, tos, _| *tos = 0x10)),
        ),
        case(
            "tcp4 DF differs mid-run",
            run_with(&flow, 8, 4, |p| set_v4(p, |_, _, _, df| *df = false)),
        ),
        case(
            "tcp4 IP ID jump mid-run",
            run_with(&flow, 8, 4, |p| set_v4(p, |id, _, _, _| *id += 100)),
        ),
        case("tcp4 IP ID wraps 0xffff to 0", wrapping),
        case("tcp4 fixed IP ID with DF", fixed_id),
        case("tcp4 fixed IP ID without DF", fixed_no_df),
    ]
}

/// Order, duplicates, other flows, and packets GRO must not trust.
fn order_cases() -> Vec<GroCase> {
    let flow = TcpFlow::new(v4());
    let other = TcpFlow {
        sport: 40002,
        ..flow.clone()
    };
    let mut swapped = flow.run(8);
    swapped.swap(3, 4);
    let mut gap = flow.run(9);
    gap.remove(4);
    let mut duplicate = flow.run(8);
    duplicate.insert(4, duplicate[3].clone());
    let interleaved = (0..12).map(|i| {
        if i % 2 == 0 {
            flow.packet(i / 2)
        } else {
            other.packet(i / 2)
        }
    });
    let pure_acks = (0..4).map(|i| {
        let mut p = flow.packet(i);
        p.payload.clear();
        tcp_of(&mut p).ack += i as u32;
        p
    });
    let mut bad = case("tcp4 bad TCP checksum mid-run", flow.run(8));
    bad.frames[4] = flow.packet(4).build(Csum::Corrupt);
    let mut bad_ip = case("tcp4 bad IPv4 header checksum mid-run", flow.run(8));
    bad_ip.frames[4][frames::ETH_LEN + 10] ^= 0x40;
    let mut padded = case(
        "tcp4 Ethernet padding after small segments",
        flow.clone().len(4).run(6),
    );
    for frame in &mut padded.frames {
        frame.extend_from_slice(&[0, 0]); // 58 bytes padded to the 60-byte minimum
    }
    vec![
        case("tcp4 reordered: 3 and 4 swapped", swapped),
        case("tcp4 gap: packet 4 missing", gap),
        case("tcp4 duplicate packet", duplicate),
        case("tcp4 two interleaved flows", interleaved.collect()),
        case("tcp4 pure ACKs are not merged", pure_acks.collect()),
        bad,
        bad_ip,
        padded,
    ]
}

fn v6_cases() -> Vec<GroCase> {
    // 1500-byte MTU: IPv6 leaves 1440 bytes for TCP payload.
    let flow = TcpFlow::new(v6()).len(1440);
    let mut with_opts = v6();
    if let Ip::V6 { dest_opts, .. } = &mut with_opts {
        *dest_opts = true;
    }
    let opts_flow = TcpFlow::new(with_opts).len(1432);
    let opts_one = run_with(&flow.clone().len(1432), 8, 4, |p| {
        set_v6(p, |_, _, _, d| *d = true)
    });
    vec![
        case("tcp6 in-order run of 20", flow.run(20)),
        case(
            "tcp6 timestamps",
            flow.clone()
                .options(frames::ts_option(9, 9))
                .len(1428)
                .run(10),
        ),
        case("tcp6 PSH mid-run", flagged(&flow, 8, 2, f::PSH)),
        case("tcp6 CWR mid-run", flagged(&flow, 8, 4, f::CWR)),
        case("tcp6 Destination Options header, equal", opts_flow.run(10)),
        case("tcp6 Destination Options header on one packet", opts_one),
        case(
            "tcp6 flow label differs mid-run",
            run_with(&flow, 8, 4, |p| set_v6(p, |_, _, fl, _| *fl = 0x4321)),
        ),
        case(
            "tcp6 hop limit differs mid-run",
            run_with(&flow, 8, 4, |p| set_v6(p, |h, _, _, _| *h = 9)),
        ),
        case(
            "tcp6 traffic class differs mid-run",
            run_with(&flow, 8, 4, |p| set_v6(p, |_, tc, _, _| *tc = 0x20)),
        ),
    ]
}
