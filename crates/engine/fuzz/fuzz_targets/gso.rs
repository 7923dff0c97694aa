//! `gso::segment` never panics, and what it produces adds up: the payload ranges tile
//! the super-packet's payload exactly (no byte lost, none invented), and every TCP/USO
//! segment parses back into a packet carrying exactly its payload.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offlab_engine::gso::{self, GsoKind, GsoOutput, GsoParams, L4Checksum};
use offlab_engine::wire::{parse_frame, IpVersion, Ipv4Packet};

fuzz_target!(|input: &[u8]| {
    let Some((control, rest)) = input.split_first_chunk::<3>() else {
        return;
    };
    let Ok(layout) = parse_frame(rest) else {
        return;
    };
    let params = params_from(*control);
    let mut out = GsoOutput::new();
    if gso::segment(rest, &layout, &params, &mut out).is_err() {
        assert!(out.is_empty(), "output left behind after an error");
        return;
    }
    assert!(!out.is_empty() && out.len() <= gso::MAX_SEGMENTS);
    let payload = layout.payload();
    let mut next = None;
    for segment in out.iter() {
        // Contiguous, in order, inside the frame.
        assert!(segment.payload.start <= segment.payload.end && segment.payload.end <= rest.len());
        if let Some(expected) = next {
            assert_eq!(
                segment.payload.start, expected,
                "gap or overlap between segments"
            );
        }
        next = Some(segment.payload.end);
        if params.kind != GsoKind::UdpFragment {
            check_segment(segment.header, &rest[segment.payload.clone()]);
        }
    }
    let first = out.segment(0).expect("non-empty").payload.start;
    if params.kind == GsoKind::UdpFragment {
        // Fragments carry the UDP header in the first one.
        assert!(first >= layout.ip.l4_offset && first <= payload.start);
    } else {
        assert_eq!(first, payload.start);
    }
    assert_eq!(next, Some(payload.end), "payload not covered to its end");
});

fn params_from(control: [u8; 3]) -> GsoParams {
    let kind = match control[0] & 3 {
        0 | 3 => GsoKind::Tcp,
        1 => GsoKind::Udp,
        _ => GsoKind::UdpFragment,
    };
    let mut params = GsoParams::tcp(u16::from_le_bytes([control[1], control[2]])).with_kind(kind);
    params.checksum = if control[0] & 4 != 0 {
        L4Checksum::Partial
    } else {
        L4Checksum::Full
    };
    params.fixed_ip_id = control[0] & 8 != 0;
    params.ecn = control[0] & 16 != 0;
    params.outer_udp_checksum = control[0] & 32 != 0;
    params
}

/// A produced segment is a well-formed packet whose payload is exactly its share.
fn check_segment(header: &[u8], payload: &[u8]) {
    let packet = [header, payload].concat();
    let layout = parse_frame(&packet).expect("a segment parses");
    assert_eq!(layout.headers_len(), header.len());
    assert_eq!(layout.payload().len(), payload.len());
    assert_eq!(layout.frame_end(), packet.len());
    for ip in [Some(layout.ip), layout.tunnel.map(|t| t.outer)]
        .into_iter()
        .flatten()
    {
        if ip.version == IpVersion::V4 {
            let v4 = Ipv4Packet::new_checked(&packet[ip.offset..]).expect("checked by parse");
            assert!(v4.verify_checksum(), "segment IPv4 header checksum");
        }
    }
}
