//! `Direction::process` on crafted batches: the real per-frame path without the I/O.

use super::*;
use crate::port::Offloads;
use crate::port::VNET_LEN;
use offlab_engine::virtio::GsoType;

const MTU: usize = 1500;

fn egress(offloads: Offloads) -> Egress {
    Egress { offloads, mtu: MTU }
}

fn checksum_of(parts: &[&[u8]]) -> u16 {
    let mut sum = 0u32;
    for part in parts {
        sum = checksum::sum(part, sum);
    }
    checksum::finish(sum)
}

/// Ethernet + IPv4 (valid header checksum) + TCP (ACK, no checksum) + payload.
fn tcp_frame(payload_len: usize) -> Vec<u8> {
    tcp_segment(payload_len, 1, 1)
}

/// Like `tcp_frame`, with a sequence number and IP ID (for GRO runs).
fn tcp_segment(payload_len: usize, seq: u32, ip_id: u16) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = (20 + 20 + payload_len) as u16;
    let mut ip = vec![
        0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 210, 0, 1, 10, 210, 0, 2,
    ];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[4..6].copy_from_slice(&ip_id.to_be_bytes());
    let sum = checksum_of(&[&ip]);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&[0x04, 0xd2, 0x14, 0x51]);
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 1, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend((0..payload_len).map(|i| (i as u32 * 7 + seq) as u8));
    f
}

/// The pseudo-header sum a checksum-partial TCP/IPv4 frame carries in its field.
fn seed_partial_tcp(frame: &mut [u8]) {
    let l4_len = (frame.len() - 34) as u16;
    let pseudo =
        checksum::pseudo_header_v4([10, 210, 0, 1].into(), [10, 210, 0, 2].into(), 6, l4_len);
    frame[50..52].copy_from_slice(&checksum::fold(pseudo).to_be_bytes());
}

/// Runs `frames` (each `(header, frame)`) through a direction; returns the frames sent
/// (header bytes + frame bytes each) and the counters.
fn run(
    mode: Mode,
    target: Egress,
    frames: &[(Header, Vec<u8>)],
) -> (Vec<(Header, Vec<u8>)>, Counters) {
    let mut rx = RxBatch::new(frames.len());
    for (header, frame) in frames {
        let slot = rx.next_slot().unwrap();
        slot[..VNET_LEN].copy_from_slice(&header.to_bytes());
        slot[VNET_LEN..VNET_LEN + frame.len()].copy_from_slice(frame);
        rx.commit(VNET_LEN + frame.len());
    }
    let mut direction = Direction::new(mode);
    direction.process(&mut rx, &target);
    let (tx, counters) = direction.output();
    let sent = (0..tx.len())
        .map(|i| {
            let bytes: Vec<u8> = tx.pieces(i, &rx).flat_map(|s| s.iter().copied()).collect();
            (
                Header::decode(&bytes, HeaderForm::V1).unwrap(),
                bytes[VNET_LEN..].to_vec(),
            )
        })
        .collect();
    (sent, counters.clone())
}

fn partial_tcp_header() -> Header {
    Header {
        flags: Flags::NEEDS_CSUM,
        csum_start: 34,
        csum_offset: 16,
        ..Header::none()
    }
}

#[test]
fn bad_virtio_headers_are_dropped_by_reason() {
    let tso = |gso_type, frame_flags| Header {
        flags: frame_flags,
        gso_type,
        gso_size: 100,
        csum_start: 34,
        csum_offset: 16,
        ..Header::none()
    };
    let cases = [
        (
            Header {
                flags: Flags(0x40),
                ..Header::none()
            },
            "unknown flags",
        ),
        (
            Header {
                flags: Flags(3),
                ..Header::none()
            },
            "needs_csum with data_valid",
        ),
        (
            tso(GsoType::TcpV6, Flags::NEEDS_CSUM),
            "gso ip version mismatch",
        ),
        (
            tso(GsoType::UdpL4, Flags::NEEDS_CSUM),
            "gso transport mismatch",
        ),
        (tso(GsoType::TcpV4, Flags::NONE), "gso without needs_csum"),
        (
            tso(GsoType::Other(2), Flags::NEEDS_CSUM),
            "unknown gso type",
        ),
        (
            Header {
                csum_start: 2000,
                ..partial_tcp_header()
            },
            "checksum outside frame",
        ),
        (
            Header {
                gso_size: 100,
                ..Header::none()
            },
            "gso size without gso",
        ),
    ];
    let frames: Vec<_> = cases.iter().map(|(h, _)| (*h, tcp_frame(1000))).collect();
    let (sent, counters) = run(Mode::Pass, egress(Offloads::ALL), &frames);
    assert!(sent.is_empty());
    for (_, reason) in cases {
        assert_eq!(
            counters.drops.get(&("virtio", reason)),
            Some(&1),
            "{reason}: {:?}",
            counters.drops
        );
    }
}

#[test]
fn short_and_malformed_frames_are_dropped_and_non_ip_is_forwarded() {
    let mut arp = tcp_frame(0);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    let mut truncated = tcp_frame(100);
    truncated.truncate(60);
    let frames = [
        (Header::none(), vec![0u8; 10]),
        (Header::none(), truncated),
        (Header::none(), arp.clone()),
    ];
    let (sent, counters) = run(Mode::Pass, egress(Offloads::ALL), &frames);
    assert_eq!(
        counters
            .drops
            .get(&("frame", "shorter than an ethernet header")),
        Some(&1)
    );
    assert_eq!(
        counters.drops.get(&("parse", "truncated")),
        Some(&1),
        "{:?}",
        counters.drops
    );
    assert_eq!(sent, vec![(Header::none(), arp)]);
    assert_eq!(counters.non_ip_frames, 1);
}

#[test]
fn csum_mode_completes_a_partial_checksum() {
    let mut frame = tcp_frame(333);
    seed_partial_tcp(&mut frame);
    let (sent, counters) = run(
        Mode::Csum,
        egress(Offloads::ALL),
        &[(partial_tcp_header(), frame)],
    );
    let (header, out) = &sent[0];
    assert_eq!(*header, Header::none());
    let pseudo = checksum::pseudo_header_v4([10, 210, 0, 1].into(), [10, 210, 0, 2].into(), 6, 353);
    assert_eq!(
        checksum::finish(checksum::sum(&out[34..], pseudo)),
        0,
        "checksum does not verify"
    );
    assert_eq!(counters.checksums_completed, 1);
}

#[test]
fn pass_mode_hands_a_partial_checksum_to_an_egress_that_takes_it() {
    let mut frame = tcp_frame(333);
    seed_partial_tcp(&mut frame);
    let (sent, _) = run(
        Mode::Pass,
        egress(Offloads::ALL),
        &[(partial_tcp_header(), frame.clone())],
    );
    assert_eq!(sent, vec![(partial_tcp_header(), frame)]);
}

#[test]
fn super_packets_pass_or_are_segmented_as_the_egress_allows() {
    let mut frame = tcp_frame(4000);
    seed_partial_tcp(&mut frame);
    let tso = Header {
        gso_type: GsoType::TcpV4,
        gso_size: 1448,
        ..partial_tcp_header()
    };
    let (sent, counters) = run(Mode::Pass, egress(Offloads::ALL), &[(tso, frame.clone())]);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0.gso_type, GsoType::TcpV4);
    assert_eq!(counters.passed_super_packets, 1);

    let (sent, counters) = run(Mode::Pass, egress(Offloads::default()), &[(tso, frame)]);
    assert_eq!(sent.len(), 3);
    assert_eq!(counters.segments, 3);
    let mut payload = Vec::new();
    for (header, segment) in &sent {
        assert_eq!(*header, Header::none());
        assert!(segment.len() - 14 <= MTU);
        let l4_len = (segment.len() - 34) as u16;
        let pseudo =
            checksum::pseudo_header_v4([10, 210, 0, 1].into(), [10, 210, 0, 2].into(), 6, l4_len);
        assert_eq!(checksum::finish(checksum::sum(&segment[34..], pseudo)), 0);
        payload.extend_from_slice(&segment[54..]);
    }
    assert_eq!(payload, tcp_frame(4000)[54..]);
}

#[test]
fn frames_over_the_egress_mtu_are_dropped() {
    let (sent, counters) = run(
        Mode::Pass,
        egress(Offloads::ALL),
        &[(Header::none(), tcp_frame(2000))],
    );
    assert!(sent.is_empty());
    assert_eq!(
        counters.drops.get(&("egress", "frame over egress mtu")),
        Some(&1)
    );
}

#[test]
fn a_frame_longer_than_its_ip_packet_is_trimmed_before_the_mtu_check() {
    // 3054 bytes on the wire, an IP total length of 1000: the kernel would trim the rest
    // on receive; the forwarder sends the 1014 bytes of the packet, within the MTU.
    let mut long = tcp_frame(960);
    long.resize(3054, 0xAA);
    let (sent, counters) = run(
        Mode::Pass,
        egress(Offloads::ALL),
        &[(Header::none(), long.clone())],
    );
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].1, long[..14 + 1000]);
    assert_eq!(counters.trimmed_frames, 1);
    assert!(counters.drops.is_empty());
}

#[test]
fn an_ip_length_beyond_the_frame_is_dropped_with_its_reason() {
    let mut short = tcp_frame(960);
    short.truncate(500);
    let (sent, counters) = run(
        Mode::Pass,
        egress(Offloads::ALL),
        &[(Header::none(), short)],
    );
    assert!(sent.is_empty());
    assert_eq!(counters.dropped(), 1);
    assert!(counters
        .drops
        .keys()
        .all(|(category, _)| *category == "parse"));
}

#[test]
fn gro_mode_merges_a_run_into_one_super_packet() {
    let frames: Vec<_> = (0..4u32)
        .map(|i| {
            let mut frame = tcp_segment(1448, 1 + i * 1448, 10 + i as u16);
            seed_partial_tcp(&mut frame);
            (partial_tcp_header(), frame)
        })
        .collect();
    let (sent, counters) = run(Mode::Gro, egress(Offloads::ALL), &frames);
    assert_eq!(sent.len(), 1, "{counters:?}");
    let (header, merged) = &sent[0];
    assert_eq!(header.gso_type, GsoType::TcpV4);
    assert_eq!(header.gso_size, 1448);
    let payload: Vec<u8> = frames
        .iter()
        .flat_map(|(_, f)| f[54..].iter().copied())
        .collect();
    assert_eq!(merged[54..], payload[..]);
    assert_eq!(
        (counters.merged_super_packets, counters.merged_packets),
        (1, 4)
    );
}

#[test]
fn gro_mode_sends_frames_it_cannot_merge_as_they_are() {
    let mut syn = tcp_segment(0, 1, 1);
    syn[47] = 0x02;
    let mut frame = tcp_segment(100, 1, 2);
    seed_partial_tcp(&mut frame);
    let frames = [
        (Header::none(), syn.clone()),
        (partial_tcp_header(), frame.clone()),
    ];
    // An egress without TSO: GRO is not even tried, the partial checksum is completed.
    let (sent, counters) = run(
        Mode::Gro,
        egress(Offloads {
            csum: true,
            ..Offloads::default()
        }),
        &frames,
    );
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0], (Header::none(), syn.clone()));
    assert_eq!(sent[1].0, partial_tcp_header());
    assert!(counters.gro_refusals.is_empty());
    // With TSO: the SYN is refused (counted) and goes out; the lone segment is a run of one.
    let (sent, counters) = run(Mode::Gro, egress(Offloads::ALL), &frames);
    assert_eq!(sent.len(), 2);
    assert_eq!(
        counters.gro_refusals.values().sum::<u64>(),
        1,
        "{:?}",
        counters.gro_refusals
    );
    assert_eq!(sent[1], (partial_tcp_header(), frame));
}
