//! GSO rules, one test each, on real packet bytes; every checksum produced is verified
//! with the plain reference sum, independently of the code under test.

pub use super::*;
use crate::checksum::reference;
use crate::wire::layout::Layout;
use crate::wire::parse::parse_frame;
pub use packets::*;

fn layout(frame: &[u8]) -> Layout {
    parse_frame(frame).expect("test frame parses")
}

fn run(frame: &[u8], params: &GsoParams) -> Result<GsoOutput, GsoError> {
    let mut out = GsoOutput::new();
    segment(frame, &layout(frame), params, &mut out).map(|()| out)
}

/// Segment bytes on the wire, with a partial checksum finished as a NIC would.
fn wire_bytes(frame: &[u8], seg: &SegmentRef<'_>) -> Vec<u8> {
    let mut bytes = seg.header.to_vec();
    bytes.extend_from_slice(seg.payload_slice(frame));
    if let Some(p) = seg.partial_checksum {
        let start = usize::from(p.start);
        let at = start + usize::from(p.offset);
        let check = !reference(&bytes[start..]);
        bytes[at..at + 2].copy_from_slice(&check.to_be_bytes());
    }
    bytes
}

/// Every segment parses, and every length and checksum in it is right.
fn check_segment(bytes: &[u8]) -> Layout {
    let l = parse_frame(bytes).expect("segment parses");
    assert_eq!(l.frame_end(), bytes.len(), "no bytes beyond the packet");
    if let Some(t) = &l.tunnel {
        check_ip_packet(bytes, &t.outer, true);
        if t.kind == crate::wire::layout::TunnelKind::Gre && bytes[t.offset] & 0x80 != 0 {
            assert_eq!(reference(&bytes[t.offset..]), 0xffff, "gre checksum");
        }
    }
    check_ip_packet(bytes, &l.ip, true);
    l
}

fn segments(frame: &[u8], out: &GsoOutput) -> Vec<(Vec<u8>, Layout)> {
    out.iter()
        .map(|s| {
            let b = wire_bytes(frame, &s);
            let l = check_segment(&b);
            (b, l)
        })
        .collect()
}

fn tcp_flags(seg: &(Vec<u8>, Layout)) -> u8 {
    seg.0[seg.1.ip.l4_offset + 13]
}

fn ipv4_id(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([bytes[at + 4], bytes[at + 5]])
}

fn concat_payloads(segs: &[(Vec<u8>, Layout)]) -> Vec<u8> {
    segs.iter()
        .flat_map(|(b, l)| b[l.payload()].to_vec())
        .collect()
}

mod packets;
mod props;
mod refusals;
mod targets;
mod tcp;
mod tunnel;
mod udp;
mod virtio;
