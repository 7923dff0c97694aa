//! Frames built from real header bytes, walked by `parse_frame`.

use super::*;
use crate::wire::testframes::{concat, eth, ipv4, ipv6, tcp, udp};

/// tcpdump -x of a Linux iperf3 SYN: 172.16.10.99.47862 > 172.16.10.12.5201, options
/// [mss 1460,sackOK,TS val 2620275854 ecr 0,nop,wscale 7].
const TCP4_SYN: [u8; 74] = [
    0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef, 0x08, 0x00, // eth
    0x45, 0x00, 0x00, 0x3c, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0xb1, 0xe6, 0xac, 0x10, 0x0a, 0x63,
    0xac, 0x10, 0x0a, 0x0c, // ipv4
    0xba, 0xf6, 0x14, 0x51, 0x5c, 0x7e, 0x61, 0x2a, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfa, 0xf0,
    0x8d, 0x3c, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0x9c, 0x2e, 0x3c, 0x8e,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07, // tcp
];

fn assert_inside(layout: &Layout, frame: &[u8]) {
    let ip = &layout.ip;
    assert!(layout.l2_len <= ip.offset);
    assert!(ip.offset + ip.header_len == ip.l4_offset);
    assert!(ip.l4_offset + ip.l4_header_len <= ip.end);
    assert!(layout.frame_end() <= frame.len());
}

#[test]
fn tcp4_syn_with_options() {
    let layout = parse_frame(&TCP4_SYN).unwrap();
    assert_eq!(layout.l2_len, 14);
    assert_eq!(layout.vlan_tci, None);
    assert!(layout.tunnel.is_none());
    assert_eq!(layout.ip.version, IpVersion::V4);
    assert_eq!(
        (layout.ip.offset, layout.ip.header_len, layout.ip.end),
        (14, 20, 74)
    );
    assert_eq!(
        (layout.ip.l4, layout.ip.l4_offset, layout.ip.l4_header_len),
        (L4Proto::Tcp, 34, 40)
    );
    assert_eq!(layout.headers_len(), 74);
    assert!(layout.payload().is_empty());
    assert!(!layout.ip.is_fragment);
    assert!(Ipv4Packet::new_checked(&TCP4_SYN[14..])
        .unwrap()
        .verify_checksum());
}

#[test]
fn ethernet_padding_is_not_payload() {
    let mut frame = eth(0x0800);
    frame.extend_from_slice(&ipv4(6, &tcp(b"hi")));
    frame.resize(60, 0); // minimum frame size: padding after the IP packet
    let layout = parse_frame(&frame).unwrap();
    assert_eq!(layout.payload(), 54..56);
    assert_eq!(layout.frame_end(), 56);
    assert_inside(&layout, &frame);
}

#[test]
fn two_vlan_tags_and_a_third_refused() {
    let mut frame = eth(0x88a8);
    frame.extend_from_slice(&[0x00, 0x0a, 0x81, 0x00, 0x20, 0x64, 0x08, 0x00]);
    frame.extend_from_slice(&ipv4(17, &udp(53, b"query")));
    let layout = parse_frame(&frame).unwrap();
    assert_eq!(layout.l2_len, 22);
    assert_eq!(layout.vlan_tci, Some(0x000a));
    assert_eq!(layout.ip.l4, L4Proto::Udp);
    assert_eq!(&frame[layout.payload()], b"query");

    let mut three = eth(0x88a8);
    three.extend_from_slice(&[0, 1, 0x81, 0x00, 0, 2, 0x81, 0x00, 0, 3, 0x08, 0x00]);
    three.extend_from_slice(&ipv4(17, &udp(53, b"query")));
    assert_eq!(parse_frame(&three), Err(ParseError::TooManyVlanTags));
}

#[test]
fn ipv6_hop_by_hop_and_first_fragment() {
    let hop_by_hop = [44, 0, 0x01, 0x04, 0, 0, 0, 0]; // next: fragment; PadN
    let fragment = [17, 0, 0x00, 0x01, 0xca, 0xfe, 0xf0, 0x0d]; // offset 0, M=1
    let mut datagram = udp(4500, &[0x5a; 16]);
    datagram[4..6].copy_from_slice(&1008u16.to_be_bytes()); // covers later fragments
    let frame = concat(&[
        &eth(0x86dd),
        &ipv6(0, &concat(&[&hop_by_hop, &fragment, &datagram])),
    ]);
    let layout = parse_frame(&frame).unwrap();
    assert_eq!(layout.ip.version, IpVersion::V6);
    assert_eq!(layout.ip.header_len, 56);
    assert!(layout.ip.is_fragment);
    assert_eq!(
        (layout.ip.l4, layout.ip.l4_offset, layout.ip.l4_header_len),
        (L4Proto::Udp, 70, 8)
    );
    assert_eq!(layout.ip.end, frame.len());
    assert_inside(&layout, &frame);
}

#[test]
fn ipv6_later_fragment_has_no_transport_header() {
    let fragment = [6, 0, 0x05, 0xa8, 0xca, 0xfe, 0xf0, 0x0d]; // offset 1448, M=0
    let frame = concat(&[&eth(0x86dd), &ipv6(44, &concat(&[&fragment, &[0xaa; 40]]))]);
    let layout = parse_frame(&frame).unwrap();
    assert!(layout.ip.is_fragment);
    assert_eq!(
        (layout.ip.l4, layout.ip.l4_header_len),
        (L4Proto::Other(6), 0)
    );
}

#[test]
fn ipv6_extension_header_walk_is_bounded() {
    let dest_opts = |next: u8| [next, 0, 0x01, 0x04, 0, 0, 0, 0];
    let mut chain = Vec::new();
    for _ in 0..8 {
        chain.extend_from_slice(&dest_opts(60));
    }
    chain.extend_from_slice(&dest_opts(6));
    chain.extend_from_slice(&tcp(b""));
    let frame = concat(&[&eth(0x86dd), &ipv6(60, &chain)]);
    assert_eq!(
        parse_frame(&frame),
        Err(ParseError::TooManyExtensionHeaders)
    );

    let misplaced = concat(&[&dest_opts(0), &[6, 0, 1, 4, 0, 0, 0, 0], &tcp(b"")]);
    let frame = concat(&[&eth(0x86dd), &ipv6(60, &misplaced)]);
    assert_eq!(parse_frame(&frame), Err(ParseError::MisplacedHopByHop));
}

#[test]
fn ipv4_fragment_is_flagged_and_not_decapsulated() {
    let mut packet = ipv4(17, &udp(4789, &[0x08, 0, 0, 0, 0, 0, 1, 0]));
    packet[6] = 0x20; // MF
    let frame = concat(&[&eth(0x0800), &packet]);
    let layout = parse_frame(&frame).unwrap();
    assert!(layout.ip.is_fragment);
    assert!(layout.tunnel.is_none());
}

fn inner_tcp4_frame(payload: &[u8]) -> Vec<u8> {
    concat(&[&eth(0x0800), &ipv4(6, &tcp(payload))])
}

#[test]
fn vxlan_frame() {
    let vxlan = [0x08, 0, 0, 0, 0x00, 0x00, 0x2a, 0x00]; // VNI 42
    let inner = inner_tcp4_frame(&[0x11; 100]);
    let frame = concat(&[
        &eth(0x0800),
        &ipv4(17, &udp(4789, &concat(&[&vxlan, &inner]))),
    ]);
    let layout = parse_frame(&frame).unwrap();
    let tunnel = layout.tunnel.unwrap();
    assert_eq!(tunnel.kind, TunnelKind::Vxlan);
    assert_eq!(
        (tunnel.offset, tunnel.header_len, tunnel.inner_l2_offset),
        (42, 8, Some(50))
    );
    assert_eq!(tunnel.outer.l4, L4Proto::Udp);
    assert_eq!(layout.inner_l2_len, 14);
    assert_eq!(
        (layout.ip.offset, layout.ip.l4, layout.ip.l4_offset),
        (64, L4Proto::Tcp, 84)
    );
    assert_eq!(layout.payload(), 104..204);
    assert_eq!(layout.frame_end(), frame.len());
    assert_eq!(VxlanHeader::new_checked(&frame[42..]).unwrap().vni(), 42);
    assert_inside(&layout, &frame);

    // The same frame on another port is plain UDP unless the port is configured.
    let mut other_port = frame.clone();
    other_port[36..38].copy_from_slice(&8472u16.to_be_bytes());
    assert!(parse_frame(&other_port).unwrap().tunnel.is_none());
    let options = ParseOptions::default().with_vxlan_port(8472).unwrap();
    assert!(parse_frame_with(&other_port, &options)
        .unwrap()
        .tunnel
        .is_some());
    assert!(parse_frame_with(&frame, &options.without_tunnels())
        .unwrap()
        .tunnel
        .is_none());
}

#[test]
fn geneve_frame_with_option_over_ipv6() {
    let geneve = [
        0x02, 0x00, 0x65, 0x58, 0x00, 0x01, 0x00, 0x00, // 8 bytes of options, VNI 256
        0x01, 0x02, 0x03, 0x01, 0xde, 0xad, 0xbe, 0xef, // class 0x0102 type 3, 4 bytes
    ];
    let inner = concat(&[&eth(0x86dd), &ipv6(17, &udp(9000, &[0x22; 64]))]);
    let frame = concat(&[
        &eth(0x86dd),
        &ipv6(17, &udp(6081, &concat(&[&geneve, &inner]))),
    ]);
    let layout = parse_frame(&frame).unwrap();
    let tunnel = layout.tunnel.unwrap();
    assert_eq!(tunnel.kind, TunnelKind::Geneve);
    assert_eq!(tunnel.outer.version, IpVersion::V6);
    assert_eq!(
        (tunnel.offset, tunnel.header_len, tunnel.inner_l2_offset),
        (62, 16, Some(78))
    );
    assert_eq!(layout.ip.version, IpVersion::V6);
    assert_eq!((layout.ip.l4, layout.ip.l4_offset), (L4Proto::Udp, 132));
    assert_eq!(layout.payload().len(), 64);
    assert_inside(&layout, &frame);
}

#[test]
fn gre_frame_with_key_and_checksum() {
    let gre = [
        0xa0, 0x00, 0x65, 0x58, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8,
    ];
    let frame = concat(&[
        &eth(0x0800),
        &ipv4(47, &concat(&[&gre, &inner_tcp4_frame(b"abc")])),
    ]);
    let layout = parse_frame(&frame).unwrap();
    let tunnel = layout.tunnel.unwrap();
    assert_eq!(tunnel.kind, TunnelKind::Gre);
    assert_eq!(tunnel.outer.l4, L4Proto::Other(47));
    assert_eq!(
        (tunnel.offset, tunnel.header_len, tunnel.inner_l2_offset),
        (34, 12, Some(46))
    );
    let header = GreHeader::new_checked(&frame[34..]).unwrap();
    assert_eq!(header.key(), Some(1000));
    assert_eq!(&frame[layout.payload()], b"abc");
    assert_inside(&layout, &frame);
}

#[test]
fn gre_carrying_ip_directly() {
    let gre = [0x20, 0x00, 0x08, 0x00, 0, 0, 0, 7];
    let frame = concat(&[
        &eth(0x0800),
        &ipv4(47, &concat(&[&gre, &ipv4(6, &tcp(b"xyz"))])),
    ]);
    let layout = parse_frame(&frame).unwrap();
    let tunnel = layout.tunnel.unwrap();
    assert_eq!(tunnel.inner_l2_offset, None);
    assert_eq!(layout.inner_l2_len, 0);
    assert_eq!(layout.ip.offset, 42);
    assert_eq!(&frame[layout.payload()], b"xyz");
}

#[test]
fn typed_errors() {
    assert_eq!(
        parse_frame(&TCP4_SYN[..10]),
        Err(ParseError::Truncated {
            layer: Layer::Ethernet
        })
    );
    assert_eq!(
        parse_frame(&TCP4_SYN[..70]),
        Err(ParseError::Truncated { layer: Layer::Ipv4 })
    );
    let arp = eth(0x0806);
    assert_eq!(
        parse_frame(&arp),
        Err(ParseError::UnsupportedEtherType(0x0806))
    );
    let mut wrong_version = TCP4_SYN;
    wrong_version[14] = 0x65;
    assert_eq!(
        parse_frame(&wrong_version),
        Err(ParseError::BadIpVersion(6))
    );
    let mut bad_offset = TCP4_SYN;
    bad_offset[46] = 0x30;
    assert_eq!(
        parse_frame(&bad_offset),
        Err(ParseError::BadHeaderLength { layer: Layer::Tcp })
    );
    let mut short_udp = udp(53, b"abcd");
    short_udp[5] = 10; // says 10, IP says 12
    let frame = concat(&[&eth(0x0800), &ipv4(17, &short_udp)]);
    assert_eq!(
        parse_frame(&frame),
        Err(ParseError::LengthMismatch { layer: Layer::Udp })
    );
    let vxlan_no_i_flag = [0u8; 8];
    let frame = concat(&[
        &eth(0x0800),
        &ipv4(
            17,
            &udp(4789, &concat(&[&vxlan_no_i_flag, &inner_tcp4_frame(b"")])),
        ),
    ]);
    assert_eq!(
        parse_frame(&frame),
        Err(ParseError::BadTunnelHeader {
            layer: Layer::Vxlan
        })
    );
    assert_eq!(
        ParseError::TooManyVlanTags.to_string(),
        "802.1q: too many vlan tags"
    );
}

#[test]
fn every_prefix_of_a_tunnel_frame_parses_or_errs_cleanly() {
    let vxlan = [0x08, 0, 0, 0, 0x00, 0x00, 0x2a, 0x00];
    let frame = concat(&[
        &eth(0x0800),
        &ipv4(
            17,
            &udp(4789, &concat(&[&vxlan, &inner_tcp4_frame(&[1; 30])])),
        ),
    ]);
    for len in 0..frame.len() {
        if let Ok(layout) = parse_frame(&frame[..len]) {
            assert_inside(&layout, &frame[..len]);
        }
    }
}

proptest::proptest! {
    /// Corrupting any bytes of real frames never panics, and whatever still parses
    /// keeps every range inside the frame (the fuzz target's invariant, run in CI).
    #[test]
    fn corrupted_frames_parse_or_err_cleanly(
        which in 0usize..4,
        edits in proptest::collection::vec((0usize..200, proptest::num::u8::ANY), 1..8),
        cut in 0usize..200,
    ) {
        let vxlan = [0x08, 0, 0, 0, 0x00, 0x00, 0x2a, 0x00];
        let geneve = [0x01, 0x00, 0x65, 0x58, 0, 1, 0, 0, 0x01, 0x02, 0x03, 0x00];
        let gre = [0xb0, 0x00, 0x65, 0x58, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2];
        let ext = [6, 0, 0x01, 0x04, 0, 0, 0, 0];
        let mut frame = match which {
            0 => concat(&[&eth(0x0800), &ipv4(17, &udp(4789, &concat(&[&vxlan, &inner_tcp4_frame(&[1; 40])])))]),
            1 => concat(&[&eth(0x86dd), &ipv6(17, &udp(6081, &concat(&[&geneve, &inner_tcp4_frame(&[2; 40])])))]),
            2 => concat(&[&eth(0x0800), &ipv4(47, &concat(&[&gre, &inner_tcp4_frame(&[3; 40])]))]),
            _ => concat(&[&eth(0x86dd), &ipv6(60, &concat(&[&ext, &tcp(&[4; 40])]))]),
        };
        for (at, value) in edits {
            if let Some(byte) = frame.get_mut(at) {
                *byte = value;
            }
        }
        frame.truncate(frame.len().saturating_sub(cut % 8));
        if let Ok(layout) = parse_frame(&frame) {
            assert_inside(&layout, &frame);
            proptest::prop_assert!(layout.payload().end <= frame.len());
        }
    }
}

#[test]
fn layout_lists_ip_layers_outermost_first() {
    let vxlan = [0x08, 0, 0, 0, 0, 0, 1, 0];
    let frame = concat(&[&eth(0x86dd), &ipv6(17, &udp(4789, &concat(&[&vxlan, &inner_tcp4_frame(b"x")])))]);
    let layout = parse_frame(&frame).unwrap();
    assert_eq!(layout.outer_ip().version, IpVersion::V6);
    let versions: Vec<_> = layout.ip_layers().map(|ip| ip.version).collect();
    assert_eq!(versions, vec![IpVersion::V6, IpVersion::V4]);
    let plain = parse_frame(&TCP4_SYN).unwrap();
    assert_eq!(plain.outer_ip(), &plain.ip);
    assert_eq!(plain.ip_layers().count(), 1);
}

/// A plain TCP/IPv4 frame (20-byte TCP header, or with options) with `payload`.
fn plain_tcp4(payload: &[u8], tcp_options: usize) -> Vec<u8> {
    let mut segment = tcp(&[]);
    segment[12] = ((20 + tcp_options) / 4 << 4) as u8;
    segment.resize(20 + tcp_options, 1);
    segment.extend_from_slice(payload);
    concat(&[&eth(0x0800), &ipv4(6, &segment)])
}

#[test]
fn plain_tcp4_is_read_at_fixed_offsets() {
    for options in [0, 12, 40] {
        let frame = plain_tcp4(&[0x5a; 100], options);
        let fast = parse_plain_tcp4(&frame).expect("a plain TCP/IPv4 frame takes the fixed-offset read");
        assert_eq!(Ok(fast), walk(&frame, &ParseOptions::DEFAULT));
        assert_eq!(fast.headers_len(), 54 + options);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 4000, ..Default::default() })]

    /// The fixed-offset read never decides otherwise than the walk: wherever it answers,
    /// the walk gives the same layout, on frames with any header byte changed (version,
    /// IHL, lengths, flags, protocol, data offset, ethertype), cut short or padded.
    #[test]
    fn plain_tcp4_read_agrees_with_the_walk(
        options in 0usize..=10,
        payload in 0usize..200,
        edits in proptest::collection::vec((0usize..80, proptest::num::u8::ANY), 0..4),
        cut in 0usize..300,
        padding in 0usize..20,
    ) {
        let mut frame = plain_tcp4(&vec![0xa5; payload], options * 4);
        for (at, value) in edits {
            if let Some(byte) = frame.get_mut(at) {
                *byte = value;
            }
        }
        frame.truncate(cut.max(1));
        frame.resize(frame.len() + padding, 0);
        let walked = walk(&frame, &ParseOptions::DEFAULT);
        if let Some(fast) = parse_plain_tcp4(&frame) {
            proptest::prop_assert_eq!(Ok(fast), walked);
        }
        proptest::prop_assert_eq!(parse_frame(&frame), walked);
    }
}
