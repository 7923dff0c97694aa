//! VXLAN super-packets described by the 24-byte UDP-tunnel vnet header (what a TAP with
//! `udptnl` hands over): passed on with their tunnel fields to an egress that took
//! `udptnl`, segmented (outer UDP checksum per segment) for any other, refused when the
//! offsets do not match the frame.

use super::tunnel_tests::{inner_tcp, verify, vxlan, OUTER_L4, OUTER_LEN};
use super::*;
use crate::port::Offloads;

const TUNNEL_LEN: usize = 24;
const MTU: usize = 1500;
const PAYLOAD: usize = 3000;
const MSS: u16 = 1400;
const INNER_L3: usize = OUTER_LEN + 14;
const INNER_L4: usize = INNER_L3 + 20;

/// The 24-byte header of a VXLAN/IPv4 TCPv4 super-packet, outer checksum asked for.
fn tunnel_header(inner_nh: u16) -> [u8; TUNNEL_LEN] {
    let base = Header {
        flags: Flags::NEEDS_CSUM,
        gso_type: virtio::GsoType::TcpV4,
        hdr_len: (INNER_L4 + 20) as u16,
        gso_size: MSS,
        csum_start: INNER_L4 as u16,
        csum_offset: 16,
        ..Header::none()
    };
    let mut h = [0u8; TUNNEL_LEN];
    h[..12].copy_from_slice(&base.to_bytes());
    h[0] |= 0x08; // VIRTIO_NET_HDR_F_UDP_TUNNEL_CSUM
    h[1] |= 0x20; // VIRTIO_NET_HDR_GSO_UDP_TUNNEL_IPV4
    h[20..22].copy_from_slice(&(OUTER_L4 as u16).to_le_bytes());
    h[22..24].copy_from_slice(&inner_nh.to_le_bytes());
    h
}

fn tunnel_egress(udp_tunnel: bool) -> Egress {
    let mut offloads = Offloads::parse("csum+tso4+tso6").unwrap();
    (offloads.udp_tunnel, offloads.udp_tunnel_csum) = (udp_tunnel, udp_tunnel);
    offloads.csum = true;
    Egress { offloads, mtu: MTU }
}

type Sent = Vec<(Vec<u8>, Vec<u8>)>;

/// Every frame sent (header bytes, frame bytes) and the counters.
fn run(mode: Mode, target: Egress, header: &[u8], frame: &[u8]) -> (Sent, Counters) {
    run_batch(mode, target, &[(header.to_vec(), frame.to_vec())])
}

fn run_batch(mode: Mode, target: Egress, input: &[(Vec<u8>, Vec<u8>)]) -> (Sent, Counters) {
    let mut rx = RxBatch::new(input.len());
    rx.set_vnet_len(TUNNEL_LEN);
    for (header, frame) in input {
        let slot = rx.next_slot().unwrap();
        slot[..TUNNEL_LEN].copy_from_slice(header);
        slot[TUNNEL_LEN..TUNNEL_LEN + frame.len()].copy_from_slice(frame);
        rx.commit(TUNNEL_LEN + frame.len());
    }
    let mut direction = Direction::new(mode);
    direction.process(&mut rx, &target);
    let out_len = target.offloads.vnet_len();
    let (tx, counters) = direction.output();
    let frames = (0..tx.len())
        .map(|i| {
            let bytes: Vec<u8> = tx.pieces(i, &rx).flat_map(|s| s.iter().copied()).collect();
            (bytes[..out_len].to_vec(), bytes[out_len..].to_vec())
        })
        .collect();
    (frames, counters.clone())
}

#[test]
fn a_tunnel_super_packet_passes_to_an_egress_with_udptnl() {
    let frame = vxlan(&inner_tcp(PAYLOAD));
    let header = tunnel_header(INNER_L3 as u16);
    let (frames, counters) = run(Mode::Pass, tunnel_egress(true), &header, &frame);
    assert_eq!(frames, vec![(header.to_vec(), frame)], "{counters:?}");
    assert_eq!(counters.passed_super_packets, 1);
}

#[test]
fn a_tunnel_super_packet_is_segmented_for_an_egress_without_udptnl() {
    let frame = vxlan(&inner_tcp(PAYLOAD));
    let header = tunnel_header(INNER_L3 as u16);
    for mode in [Mode::Pass, Mode::Csum, Mode::Gso] {
        let target = tunnel_egress(mode == Mode::Gso);
        let (frames, counters) = run(mode, target, &header, &frame);
        assert_eq!(
            frames.len(),
            PAYLOAD.div_ceil(usize::from(MSS)),
            "{mode:?} {counters:?}"
        );
        assert_eq!(counters.segments, frames.len() as u64);
        let mut payload = Vec::new();
        for (vnet, segment) in &frames {
            assert!(segment.len() - 14 <= MTU);
            assert_eq!(
                &vnet[12..],
                &vec![0; vnet.len() - 12][..],
                "no tunnel fields"
            );
            let sent = Header::decode(vnet, HeaderForm::V1).unwrap();
            assert_eq!(sent.gso_type, virtio::GsoType::None);
            let mut segment = segment.clone();
            if sent.flags.contains(Flags::NEEDS_CSUM) {
                let span = ChecksumSpan {
                    start: sent.csum_start.into(),
                    offset: sent.csum_offset.into(),
                    end: segment.len(),
                };
                complete_checksum(&mut segment, span);
            }
            let (src, dst) = ([10, 210, 0, 1], [10, 210, 0, 2]);
            assert_eq!(verify(&segment[OUTER_L4..], 17, src, dst), 0, "outer udp");
            let (src, dst) = ([10, 211, 0, 1], [10, 211, 0, 2]);
            assert_eq!(verify(&segment[INNER_L4..], 6, src, dst), 0, "inner tcp");
            payload.extend_from_slice(&segment[INNER_L4 + 20..]);
        }
        assert_eq!(payload, frame[INNER_L4 + 20..].to_vec(), "{mode:?}");
    }
}

#[test]
fn a_tunnel_header_whose_offsets_miss_the_frame_is_dropped() {
    let frame = vxlan(&inner_tcp(PAYLOAD));
    let header = tunnel_header(INNER_L3 as u16 + 2);
    let (frames, counters) = run(Mode::Gso, tunnel_egress(false), &header, &frame);
    assert!(frames.is_empty());
    let reason = ("virtio", "tunnel gso inner_nh_offset mismatch");
    assert_eq!(counters.drops.get(&reason), Some(&1), "{counters:?}");
}

/// An MTU-size VXLAN frame of one TCP flow, `index`-th in sequence, checksums complete.
fn vxlan_mtu_segment(index: u32) -> Vec<u8> {
    let payload = usize::from(MSS);
    let mut inner = inner_tcp(payload);
    let tcp = 14 + 20;
    inner[tcp + 4..tcp + 8].copy_from_slice(&(1 + index * u32::from(MSS)).to_be_bytes());
    inner[tcp + 13] = 0x10; // ACK only: PSH would end the run
    inner[tcp + 16..tcp + 18].fill(0);
    let sum = verify(&inner[tcp..], 6, [10, 211, 0, 1], [10, 211, 0, 2]);
    inner[tcp + 16..tcp + 18].copy_from_slice(&sum.to_be_bytes());
    vxlan(&inner)
}

#[test]
fn gro_merges_vxlan_frames_into_a_tunnel_super_packet_for_a_udptnl_egress() {
    let mut valid = [0u8; TUNNEL_LEN];
    valid[..12].copy_from_slice(&Header::data_valid().to_bytes());
    let input: Vec<_> = (0..3)
        .map(|i| (valid.to_vec(), vxlan_mtu_segment(i)))
        .collect();
    let (frames, counters) = run_batch(Mode::Gro, tunnel_egress(true), &input);
    assert_eq!(frames.len(), 1, "{counters:?}");
    assert_eq!(counters.merged_super_packets, 1);
    let (vnet, merged) = &frames[0];
    assert_eq!(vnet[0], 1 | 0x08, "NEEDS_CSUM and the outer checksum flag");
    assert_eq!(vnet[1], 1 | 0x20, "TCPV4 in an IPv4 UDP tunnel");
    let header = Header::decode(vnet, HeaderForm::V1Tunnel).unwrap();
    let tunnel = header.tunnel.unwrap();
    assert_eq!(
        (usize::from(tunnel.outer_th), usize::from(tunnel.inner_nh)),
        (OUTER_L4, INNER_L3)
    );
    assert_eq!(header.gso_size, MSS);
    assert_eq!(usize::from(header.csum_start), INNER_L4);
    let payload: Vec<u8> = input
        .iter()
        .flat_map(|(_, f)| f[INNER_L4 + 20..].to_vec())
        .collect();
    assert_eq!(merged[INNER_L4 + 20..].to_vec(), payload);
    // Segmenting the merged packet again gives the original frames back.
    let (again, counters) = run(Mode::Csum, tunnel_egress(false), vnet, merged);
    assert_eq!(again.len(), 3, "{counters:?}");
    for ((_, segment), (_, original)) in again.iter().zip(&input) {
        assert_eq!(segment[INNER_L4 + 20..], original[INNER_L4 + 20..]);
        assert_eq!(
            verify(&segment[OUTER_L4..], 17, [10, 210, 0, 1], [10, 210, 0, 2]),
            0
        );
    }
}

#[test]
fn gro_leaves_vxlan_frames_alone_for_an_egress_without_udptnl() {
    let mut valid = [0u8; TUNNEL_LEN];
    valid[..12].copy_from_slice(&Header::data_valid().to_bytes());
    let input: Vec<_> = (0..3)
        .map(|i| (valid.to_vec(), vxlan_mtu_segment(i)))
        .collect();
    let (frames, counters) = run_batch(Mode::Gro, tunnel_egress(false), &input);
    assert_eq!(frames.len(), 3, "{counters:?}");
    assert_eq!(counters.merged_super_packets, 0);
}
