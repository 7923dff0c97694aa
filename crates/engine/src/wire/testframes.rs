//! Test-only builders: real header bytes with their length and checksum fields right.

use super::ipv4::Ipv4Packet;

pub(crate) fn eth(ethertype: u16) -> Vec<u8> {
    let mut frame = vec![
        0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef,
    ];
    frame.extend_from_slice(&ethertype.to_be_bytes());
    frame
}

pub(crate) fn ipv4(protocol: u8, payload: &[u8]) -> Vec<u8> {
    let total = (20 + payload.len()) as u16;
    let mut header = vec![
        0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, protocol, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    header[2..4].copy_from_slice(&total.to_be_bytes());
    Ipv4Packet::new_unchecked(&mut header[..]).fill_checksum();
    header.extend_from_slice(payload);
    header
}

pub(crate) fn ipv6(next_header: u8, payload: &[u8]) -> Vec<u8> {
    let mut header = vec![0x60, 0x01, 0x23, 0x45, 0, 0, next_header, 64];
    header[4..6].copy_from_slice(&(payload.len() as u16).to_be_bytes());
    header.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    header.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    header.extend_from_slice(payload);
    header
}

pub(crate) fn udp(dst_port: u16, payload: &[u8]) -> Vec<u8> {
    let mut datagram = vec![0xc0, 0x01];
    datagram.extend_from_slice(&dst_port.to_be_bytes());
    datagram.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    datagram.extend_from_slice(&[0, 0]);
    datagram.extend_from_slice(payload);
    datagram
}

/// A 20-byte ACK|PSH header followed by `payload`.
pub(crate) fn tcp(payload: &[u8]) -> Vec<u8> {
    let mut segment = vec![
        0x14, 0x51, 0xba, 0xf6, 0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x18, 0x01, 0xf5, 0, 0, 0, 0,
    ];
    segment.extend_from_slice(payload);
    segment
}

pub(crate) fn concat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}
