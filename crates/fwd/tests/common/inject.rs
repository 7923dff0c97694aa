//! Crafted frames written into a TAP from inside its namespace: an AF_PACKET socket
//! with PACKET_VNET_HDR bound to the tap sends `[virtio header][frame]` exactly as
//! given, so the forwarder reads what the kernel lets through.

use super::Netns;
use std::ffi::CString;

const SOL_PACKET: libc::c_int = 263;
const PACKET_VNET_HDR: libc::c_int = 15;

/// The legacy 10-byte virtio-net header (what PACKET_VNET_HDR expects).
pub fn vnet(
    flags: u8,
    gso_type: u8,
    hdr_len: u16,
    gso_size: u16,
    csum_start: u16,
    csum_offset: u16,
) -> Vec<u8> {
    let mut h = vec![flags, gso_type];
    for field in [hdr_len, gso_size, csum_start, csum_offset] {
        h.extend_from_slice(&field.to_le_bytes());
    }
    h
}

fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Ethernet (broadcast, IPv4) + IPv4 header claiming `total_len` + `l4`.
pub fn ipv4_frame(protocol: u8, l4: &[u8], total_len: Option<u16>) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00]);
    let total = total_len.unwrap_or(20 + l4.len() as u16);
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[
        0, 1, 0x40, 0, 64, protocol, 0, 0, 10, 210, 0, 1, 10, 210, 0, 2,
    ]);
    let sum = checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(l4);
    f
}

/// A TCP header (ACK|PSH, ports 1234 → 5201, no checksum) followed by `payload`.
pub fn tcp(payload: &[u8]) -> Vec<u8> {
    let mut t = vec![
        0x04, 0xd2, 0x14, 0x51, 0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x18, 0x03, 0xe8, 0, 0, 0, 0,
    ];
    t.extend_from_slice(payload);
    t
}

/// Sends each `[vnet header][frame]` on `ifname` from inside `ns`; returns per frame
/// whether the kernel accepted it (its own checks come first).
pub fn send_frames(ns: &Netns, ifname: &str, frames: Vec<Vec<u8>>) -> Vec<bool> {
    let ifname = ifname.to_string();
    ns.spawn(move || {
        // SAFETY: plain socket calls on an fd this closure owns and closes.
        unsafe {
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
            assert!(
                fd >= 0,
                "packet socket: {}",
                std::io::Error::last_os_error()
            );
            let one: libc::c_int = 1;
            let rc = libc::setsockopt(
                fd,
                SOL_PACKET,
                PACKET_VNET_HDR,
                &one as *const _ as *const libc::c_void,
                4,
            );
            assert_eq!(rc, 0, "PACKET_VNET_HDR");
            let name = CString::new(ifname).unwrap();
            let mut addr: libc::sockaddr_ll = std::mem::zeroed();
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_ifindex = libc::if_nametoindex(name.as_ptr()) as i32;
            let rc = libc::bind(
                fd,
                &addr as *const _ as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            );
            assert_eq!(rc, 0, "bind: {}", std::io::Error::last_os_error());
            let accepted = frames
                .iter()
                .map(|f| {
                    libc::send(fd, f.as_ptr() as *const libc::c_void, f.len(), 0)
                        == f.len() as isize
                })
                .collect();
            libc::close(fd);
            accepted
        }
    })
    .join()
    .unwrap()
}
