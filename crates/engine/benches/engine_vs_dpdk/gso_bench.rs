//! W2 and W4 GSO rows: one 45-segment super-packet per round, parsed then segmented.
//! The parse is timed too (DPDK is handed its header lengths by the caller).

use std::hint::black_box;

use offlab_engine::gso::{self, GsoKind, GsoOutput, GsoParams, L4Checksum};
use offlab_engine::wire::parse::parse_frame;

use crate::measure::{measure, Row};
use crate::packets::{self, ref_fold, Net, Transport, GSO_MSS, GSO_SEGMENTS, TCP_ACK, TCP_PSH};

struct Case {
    name: &'static str,
    net: Net,
    transport: Transport,
    kind: GsoKind,
    checksum: L4Checksum,
}

const TCP: Transport = Transport::Tcp { flags: TCP_ACK | TCP_PSH };

const fn case(name: &'static str, net: Net, transport: Transport, checksum: L4Checksum) -> Case {
    let kind = match transport {
        Transport::Tcp { .. } => GsoKind::Tcp,
        Transport::Udp => GsoKind::Udp,
    };
    Case { name, net, transport, kind, checksum }
}

const UDP: Transport = Transport::Udp;
const PARTIAL: L4Checksum = L4Checksum::Partial;
const FULL: L4Checksum = L4Checksum::Full;

const CASES: [Case; 8] = [
    case("gso_tcp4_partial", Net::V4, TCP, PARTIAL),
    case("gso_tcp4_full", Net::V4, TCP, FULL),
    case("gso_tcp6_partial", Net::V6, TCP, PARTIAL),
    case("gso_tcp6_full", Net::V6, TCP, FULL),
    case("gso_vxlan_tcp4_partial", Net::Vxlan4, TCP, PARTIAL),
    case("gso_vxlan_tcp4_full", Net::Vxlan4, TCP, FULL),
    case("gso_udp4_partial", Net::V4, UDP, PARTIAL),
    case("gso_udp4_full", Net::V4, UDP, FULL),
];

pub fn run(seconds: f64, only: &str) {
    for case in CASES.iter().filter(|c| c.name.starts_with(only)) {
        let frame = packets::gso_frame(case.net, case.transport);
        let params = GsoParams {
            kind: case.kind,
            segment_size: GSO_MSS as u16,
            checksum: case.checksum,
            fixed_ip_id: false,
            ecn: false,
            outer_udp_checksum: false,
        };
        let mut out = GsoOutput::new();
        let round = |out: &mut GsoOutput| {
            let frame = black_box(frame.as_slice());
            let layout = parse_frame(frame).expect("benchmark frame parses");
            gso::segment(frame, &layout, &params, out).expect("benchmark frame segments");
            black_box(&*out);
        };
        round(&mut out);
        check_segments(case, &frame, &out);
        let m = measure(seconds, || round(&mut out));
        Row {
            workload: case.name,
            unit: "Msegs/s",
            ops_per_round: GSO_SEGMENTS as f64 / 1e6,
            depth: None,
            digest: packets::fnv1a(packets::FNV_OFFSET, &frame),
            reprime_ns_per_pkt: None,
        }
        .print(&m);
    }
}

/// Proves the measured work is the real work: 45 segments of 1448 B, and with full
/// checksums every segment's innermost L4 checksum verifies.
fn check_segments(case: &Case, frame: &[u8], out: &GsoOutput) {
    assert_eq!(out.len(), GSO_SEGMENTS, "{}: segment count", case.name);
    for seg in out.iter() {
        assert_eq!(seg.payload.len(), GSO_MSS, "{}: payload per segment", case.name);
        if case.checksum == L4Checksum::Full {
            let mut bytes = seg.header.to_vec();
            bytes.extend_from_slice(seg.payload_slice(frame));
            let layout = parse_frame(&bytes).expect("segment parses");
            let l4 = &bytes[layout.ip.l4_offset..layout.ip.end];
            assert_eq!(ref_fold(l4, pseudo_sum(&bytes, &layout)), 0xffff, "{}: L4 checksum", case.name);
        }
    }
}

/// The pseudo-header sum of the innermost IP layer of a parsed segment.
fn pseudo_sum(bytes: &[u8], layout: &offlab_engine::wire::layout::Layout) -> u32 {
    use offlab_engine::wire::layout::{IpVersion, L4Proto};
    let ip = &layout.ip;
    let proto = match ip.l4 {
        L4Proto::Tcp => 6u8,
        L4Proto::Udp => 17,
        L4Proto::Other(p) => p,
    };
    let l4_len = (ip.end - ip.l4_offset) as u32;
    let mut p = Vec::new();
    match ip.version {
        IpVersion::V4 => p.extend_from_slice(&bytes[ip.offset + 12..ip.offset + 20]),
        IpVersion::V6 => p.extend_from_slice(&bytes[ip.offset + 8..ip.offset + 40]),
    }
    p.extend_from_slice(&l4_len.to_be_bytes());
    p.extend_from_slice(&[0, 0, 0, proto]);
    u32::from(ref_fold(&p, 0))
}
