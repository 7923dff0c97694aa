//! `parse_frame` never panics, and every range of an `Ok` layout lies inside the input,
//! in order, and re-reads with the typed views.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offlab_engine::wire::{
    parse_frame, parse_frame_with, GeneveHeader, GreHeader, IpLayer, IpVersion, Ipv4Packet,
    Ipv6Packet, L4Proto, Layout, ParseOptions, TcpPacket, TunnelKind, UdpPacket, VxlanHeader,
};

fuzz_target!(|frame: &[u8]| {
    let Ok(layout) = parse_frame(frame) else {
        return;
    };
    check_layout(&layout, frame);
    // Without tunnel decoding, the outer layer is what a tunnelled parse called outer.
    let flat = parse_frame_with(frame, &ParseOptions::default().without_tunnels())
        .expect("outer parse succeeded before");
    let outer = layout.tunnel.map_or(layout.ip, |t| t.outer);
    assert_eq!(flat.ip, outer);
    assert_eq!(flat.l2_len, layout.l2_len);
});

fn check_layout(layout: &Layout, frame: &[u8]) {
    assert!(layout.l2_len >= 14);
    assert!(layout.frame_end() <= frame.len());
    match &layout.tunnel {
        None => {
            assert_eq!(layout.ip.offset, layout.l2_len);
            assert_eq!(layout.inner_l2_len, 0);
            check_ip(&layout.ip, frame);
        }
        Some(tunnel) => {
            assert_eq!(tunnel.outer.offset, layout.l2_len);
            check_ip(&tunnel.outer, frame);
            assert!(!tunnel.outer.is_fragment);
            assert_eq!(
                tunnel.offset,
                tunnel.outer.l4_offset + tunnel.outer.l4_header_len
            );
            let inner_start = tunnel.offset + tunnel.header_len;
            assert_eq!(tunnel.inner_l2_offset.is_some(), layout.inner_l2_len > 0);
            if let Some(l2) = tunnel.inner_l2_offset {
                assert_eq!(l2, inner_start);
            }
            assert_eq!(layout.ip.offset, inner_start + layout.inner_l2_len);
            assert!(layout.ip.end <= tunnel.outer.end);
            check_ip(&layout.ip, frame);
            let header = &frame[tunnel.offset..inner_start];
            match tunnel.kind {
                TunnelKind::Vxlan => assert!(VxlanHeader::new_checked(header).is_ok()),
                TunnelKind::Geneve => {
                    assert_eq!(
                        GeneveHeader::new_checked(header).unwrap().header_len(),
                        header.len()
                    );
                }
                TunnelKind::Gre => assert_eq!(
                    GreHeader::new_checked(header).unwrap().header_len(),
                    header.len()
                ),
            }
        }
    }
    let payload = layout.payload();
    assert!(payload.start <= payload.end && payload.end <= frame.len());
    assert_eq!(layout.headers_len(), payload.start);
}

fn check_ip(ip: &IpLayer, frame: &[u8]) {
    assert_eq!(ip.l4_offset, ip.offset + ip.header_len);
    assert!(ip.l4_offset + ip.l4_header_len <= ip.end);
    assert!(ip.end <= frame.len());
    let packet = &frame[ip.offset..ip.end];
    match ip.version {
        IpVersion::V4 => {
            let v4 = Ipv4Packet::new_checked(packet).unwrap();
            assert_eq!(v4.header_len(), ip.header_len);
            assert_eq!(usize::from(v4.total_len()), packet.len());
            let _ = (v4.verify_checksum(), v4.options(), v4.payload());
        }
        IpVersion::V6 => {
            let v6 = Ipv6Packet::new_checked(packet).unwrap();
            assert_eq!(v6.total_len(), packet.len());
            assert!(ip.header_len >= 40);
        }
    }
    let segment = &frame[ip.l4_offset..ip.end];
    match ip.l4 {
        L4Proto::Tcp => {
            let tcp = TcpPacket::new_checked(segment).unwrap();
            assert_eq!(tcp.header_len(), ip.l4_header_len);
            // Options never panic and never loop forever.
            assert!(tcp.option_iter().count() <= 40);
        }
        L4Proto::Udp => {
            assert_eq!(ip.l4_header_len, 8);
            if !ip.is_fragment {
                assert_eq!(
                    usize::from(UdpPacket::new_checked(segment).unwrap().len()),
                    segment.len()
                );
            }
        }
        L4Proto::Other(_) => assert_eq!(ip.l4_header_len, 0),
    }
}
