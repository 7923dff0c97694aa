//! VXLAN frames through `Direction::process`: the partial checksum a tunnel endpoint
//! leaves (outer UDP for a non-IP inner frame, inner TCP with the outer UDP checksum
//! already computed by local checksum offload) must be handed on or completed exactly.

use super::*;
use crate::port::Offloads;
use crate::port::VNET_LEN;

const MTU: usize = 1500;
pub(super) const OUTER_L4: usize = 34;
/// Outer Ethernet + IPv4 + UDP + VXLAN.
pub(super) const OUTER_LEN: usize = 50;
const OUTER_SRC: [u8; 4] = [10, 210, 0, 1];
const OUTER_DST: [u8; 4] = [10, 210, 0, 2];

fn egress(offloads: Offloads) -> Egress {
    Egress { offloads, mtu: MTU }
}

fn ipv4_header(protocol: u8, payload_len: usize, src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, protocol, 0, 0];
    ip[2..4].copy_from_slice(&((20 + payload_len) as u16).to_be_bytes());
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let sum = checksum::finish(checksum::sum(&ip, 0));
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    ip
}

/// Sum over a UDP/TCP segment with its IPv4 pseudo-header: 0 when the checksum is right.
pub(super) fn verify(segment: &[u8], protocol: u8, src: [u8; 4], dst: [u8; 4]) -> u16 {
    let pseudo = checksum::pseudo_header_v4(src.into(), dst.into(), protocol, segment.len() as u16);
    checksum::finish(checksum::sum(segment, pseudo))
}

/// `inner` (an Ethernet frame) inside VXLAN over IPv4/UDP to port 4789, with a
/// complete outer UDP checksum.
pub(super) fn vxlan(inner: &[u8]) -> Vec<u8> {
    let udp_len = 8 + 8 + inner.len();
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend(ipv4_header(17, udp_len, OUTER_SRC, OUTER_DST));
    f.extend_from_slice(&[0xc3, 0x50, 0x12, 0xb5]);
    f.extend_from_slice(&(udp_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]); // UDP checksum, filled in below
    f.extend_from_slice(&[0x08, 0, 0, 0, 0, 0, 42, 0]); // VXLAN: I flag, VNI 42
    f.extend_from_slice(inner);
    let sum = match verify(&f[OUTER_L4..], 17, OUTER_SRC, OUTER_DST) {
        0 => 0xffff,
        sum => sum,
    };
    f[OUTER_L4 + 6..OUTER_L4 + 8].copy_from_slice(&sum.to_be_bytes());
    f
}

fn inner_arp() -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 3, 0x08, 0x06]);
    f.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 3, 10, 211, 0, 1]);
    f.extend_from_slice(&[0; 6]);
    f.extend_from_slice(&[10, 211, 0, 2]);
    f
}

const INNER_SRC: [u8; 4] = [10, 211, 0, 1];
const INNER_DST: [u8; 4] = [10, 211, 0, 2];

/// Inner Ethernet + IPv4 + TCP (complete checksum) + payload.
pub(super) fn inner_tcp(payload_len: usize) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 4, 0x02, 0, 0, 0, 0, 3, 0x08, 0x00];
    f.extend(ipv4_header(6, 20 + payload_len, INNER_SRC, INNER_DST));
    let mut tcp = vec![
        0x04, 0xd2, 0x14, 0x51, 0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0,
    ];
    tcp.extend((0..payload_len).map(|i| (i * 13) as u8));
    let sum = verify(&tcp, 6, INNER_SRC, INNER_DST);
    tcp[16..18].copy_from_slice(&sum.to_be_bytes());
    f.extend(tcp);
    f
}

/// Turns the complete checksum at `field` into the seed a NEEDS_CSUM frame carries.
fn seed(frame: &mut [u8], field: usize, l4: usize, protocol: u8, src: [u8; 4], dst: [u8; 4]) {
    let len = (frame.len() - l4) as u16;
    let pseudo = checksum::pseudo_header_v4(src.into(), dst.into(), protocol, len);
    frame[field..field + 2].copy_from_slice(&checksum::fold(pseudo).to_be_bytes());
}

fn partial(start: usize, offset: u16) -> Header {
    Header {
        flags: Flags::NEEDS_CSUM,
        csum_start: start as u16,
        csum_offset: offset,
        ..Header::none()
    }
}

fn run(mode: Mode, target: Egress, header: Header, frame: &[u8]) -> (Header, Vec<u8>, Counters) {
    let mut rx = RxBatch::new(1);
    let slot = rx.next_slot().unwrap();
    slot[..VNET_LEN].copy_from_slice(&header.to_bytes());
    slot[VNET_LEN..VNET_LEN + frame.len()].copy_from_slice(frame);
    rx.commit(VNET_LEN + frame.len());
    let mut direction = Direction::new(mode);
    direction.process(&mut rx, &target);
    let (tx, counters) = direction.output();
    assert_eq!(tx.len(), 1, "{counters:?}");
    let bytes: Vec<u8> = tx.pieces(0, &rx).flat_map(|s| s.iter().copied()).collect();
    let sent = Header::decode(&bytes, HeaderForm::V1).unwrap();
    (sent, bytes[VNET_LEN..].to_vec(), counters.clone())
}

#[test]
fn outer_partial_checksum_of_a_tunnelled_arp_is_handed_on() {
    let mut frame = vxlan(&inner_arp());
    seed(&mut frame, OUTER_L4 + 6, OUTER_L4, 17, OUTER_SRC, OUTER_DST);
    let header = partial(OUTER_L4, 6);
    for mode in [Mode::Pass, Mode::Gso, Mode::Gro] {
        let (sent, out, _) = run(mode, egress(Offloads::ALL), header, &frame);
        assert_eq!((sent, &out), (header, &frame), "{mode:?}");
    }
}

#[test]
fn outer_partial_checksum_of_a_tunnelled_arp_is_completed() {
    let mut frame = vxlan(&inner_arp());
    seed(&mut frame, OUTER_L4 + 6, OUTER_L4, 17, OUTER_SRC, OUTER_DST);
    let header = partial(OUTER_L4, 6);
    let cases = [
        (Mode::Csum, Offloads::ALL),
        (Mode::Pass, Offloads::default()),
    ];
    for (mode, offloads) in cases {
        let (sent, out, counters) = run(mode, egress(offloads), header, &frame);
        assert_eq!(sent, Header::none(), "{mode:?}");
        assert_eq!(out, vxlan(&inner_arp()), "{mode:?}");
        assert_eq!(verify(&out[OUTER_L4..], 17, OUTER_SRC, OUTER_DST), 0);
        assert_eq!(counters.checksums_completed, 1);
    }
}

/// What a VXLAN device with udpcsum hands a TAP with `csum`: the inner TCP checksum
/// partial, the outer UDP one already complete as if the inner were filled in (LCO).
fn lco_frame() -> (Header, Vec<u8>) {
    let mut frame = vxlan(&inner_tcp(700));
    let inner_l4 = OUTER_LEN + 34;
    seed(&mut frame, inner_l4 + 16, inner_l4, 6, INNER_SRC, INNER_DST);
    (partial(inner_l4, 16), frame)
}

#[test]
fn inner_partial_checksum_under_an_lco_outer_checksum_is_handed_on() {
    let (header, frame) = lco_frame();
    for mode in [Mode::Pass, Mode::Gso, Mode::Gro] {
        let (sent, out, _) = run(mode, egress(Offloads::ALL), header, &frame);
        assert_eq!((sent, &out), (header, &frame), "{mode:?}");
    }
}

#[test]
fn inner_partial_checksum_under_an_lco_outer_checksum_is_completed_alone() {
    let (header, frame) = lco_frame();
    for (mode, offloads) in [
        (Mode::Csum, Offloads::ALL),
        (Mode::Pass, Offloads::default()),
    ] {
        let (sent, out, counters) = run(mode, egress(offloads), header, &frame);
        assert_eq!(sent, Header::none(), "{mode:?}");
        assert_eq!(out, vxlan(&inner_tcp(700)), "{mode:?}");
        let inner_l4 = OUTER_LEN + 34;
        assert_eq!(verify(&out[inner_l4..], 6, INNER_SRC, INNER_DST), 0);
        assert_eq!(verify(&out[OUTER_L4..], 17, OUTER_SRC, OUTER_DST), 0);
        assert_eq!(counters.checksums_completed, 1);
    }
}
