use super::*;
use crate::wire::parse::parse_frame;
use crate::wire::testframes::{concat, eth, ipv4, ipv6, tcp, udp};

/// What Linux's TAP hands userspace for a TSO super-packet of 3 × 1448 bytes over
/// TCP/IPv4 (NEEDS_CSUM, TCPV4, hdr_len 54, gso_size 1448, csum_start 34, offset 16).
const TAP_TSO_HEADER: [u8; 10] = [0x01, 0x01, 0x36, 0x00, 0xa8, 0x05, 0x22, 0x00, 0x10, 0x00];

fn tcp4_frame(payload_len: usize) -> Vec<u8> {
    concat(&[&eth(0x0800), &ipv4(6, &tcp(&vec![0x61; payload_len]))])
}

fn tcp6_frame(payload_len: usize) -> Vec<u8> {
    concat(&[&eth(0x86dd), &ipv6(6, &tcp(&vec![0x62; payload_len]))])
}

fn udp4_frame(payload_len: usize) -> Vec<u8> {
    concat(&[
        &eth(0x0800),
        &ipv4(17, &udp(9000, &vec![0x63; payload_len])),
    ])
}

fn tso_header() -> Header {
    Header::decode(&TAP_TSO_HEADER, HeaderForm::Legacy).unwrap()
}

#[test]
fn decodes_a_tap_tso_header() {
    let header = tso_header();
    assert_eq!(header.flags, Flags::NEEDS_CSUM);
    assert_eq!(header.gso_type, GsoType::TcpV4);
    assert!(!header.gso_ecn);
    assert_eq!((header.hdr_len, header.gso_size), (54, 1448));
    assert_eq!(
        (header.csum_start, header.csum_offset, header.num_buffers),
        (34, 16, 0)
    );
}

#[test]
fn encode_round_trips_both_forms() {
    let mut header = tso_header();
    header.gso_ecn = true;
    header.num_buffers = 3;
    let mut out = [0u8; 12];
    assert_eq!(header.encode(HeaderForm::V1, &mut out), Ok(12));
    assert_eq!(out[1], 0x81);
    assert_eq!(&out[10..], &[3, 0]);
    assert_eq!(Header::decode(&out, HeaderForm::V1), Ok(header));
    let mut legacy = [0u8; 10];
    assert_eq!(tso_header().encode(HeaderForm::Legacy, &mut legacy), Ok(10));
    assert_eq!(legacy, TAP_TSO_HEADER);
    assert_eq!(
        header.encode(HeaderForm::V1, &mut legacy),
        Err(VirtioError::BufferTooSmall)
    );
    assert_eq!(
        Header::decode(&TAP_TSO_HEADER, HeaderForm::V1),
        Err(VirtioError::Truncated)
    );
}

#[test]
fn valid_tso_request() {
    let frame = tcp4_frame(3 * 1448);
    let offload = tso_header().validate(&frame, None).unwrap();
    let gso = offload.gso.unwrap();
    assert_eq!(gso.kind, GsoKind::TcpV4);
    assert_eq!((gso.headers_len, gso.gso_size, gso.segments), (54, 1448, 3));
    assert_eq!(
        offload.checksum,
        ChecksumState::Partial {
            start: 34,
            offset: 16
        }
    );
    assert!(offload.layout.is_some());
}

#[test]
fn hdr_len_is_only_a_hint() {
    let frame = tcp4_frame(3000);
    for hint in [0, 1, 54, 9000, u16::MAX] {
        let header = Header {
            hdr_len: hint,
            ..tso_header()
        };
        assert_eq!(
            header
                .validate(&frame, None)
                .unwrap()
                .gso
                .unwrap()
                .headers_len,
            54
        );
    }
}

#[test]
fn gso_type_must_match_ip_version_and_transport() {
    let v6 = tcp6_frame(3000);
    assert_eq!(
        tso_header().validate(&v6, None),
        Err(VirtioError::GsoIpVersionMismatch)
    );
    let v4 = tcp4_frame(3000);
    let tcpv6 = Header {
        gso_type: GsoType::TcpV6,
        ..tso_header()
    };
    assert_eq!(
        tcpv6.validate(&v4, None),
        Err(VirtioError::GsoIpVersionMismatch)
    );
    let uso = Header {
        gso_type: GsoType::UdpL4,
        csum_offset: 6,
        ..tso_header()
    };
    assert_eq!(
        uso.validate(&v4, None),
        Err(VirtioError::GsoTransportMismatch)
    );
    let tcpv6_ok = Header {
        csum_start: 54,
        ..tcpv6
    };
    assert_eq!(
        tcpv6_ok
            .validate(&v6, None)
            .unwrap()
            .gso
            .unwrap()
            .headers_len,
        74
    );
}

#[test]
fn gso_size_rules() {
    let frame = tcp4_frame(3000);
    let zero = Header {
        gso_size: 0,
        ..tso_header()
    };
    assert_eq!(zero.validate(&frame, None), Err(VirtioError::GsoSizeZero));
    // The bound is the first segment's IP packet: 40 bytes of IPv4 + TCP headers here
    // (the 14-byte Ethernet header is not part of it).
    let huge = Header {
        gso_size: 65535 - 39,
        ..tso_header()
    };
    assert_eq!(
        huge.validate(&frame, None),
        Err(VirtioError::GsoSizeTooLarge)
    );
    let largest = Header {
        gso_size: 65535 - 40,
        ..tso_header()
    };
    assert!(largest.validate(&frame, None).is_ok());
    let without_gso = Header {
        gso_type: GsoType::None,
        ..tso_header()
    };
    assert_eq!(
        without_gso.validate(&frame, None),
        Err(VirtioError::GsoSizeWithoutGso)
    );
    // A payload that fits one segment is an ordinary packet.
    let small = tcp4_frame(1000);
    let offload = tso_header().validate(&small, None).unwrap();
    assert_eq!(offload.gso, None);
    assert_eq!(
        offload.checksum,
        ChecksumState::Partial {
            start: 34,
            offset: 16
        }
    );
}

#[test]
fn gso_requires_needs_csum_at_the_transport_header() {
    let frame = tcp4_frame(3000);
    let no_csum = Header {
        flags: Flags::NONE,
        ..tso_header()
    };
    assert_eq!(
        no_csum.validate(&frame, None),
        Err(VirtioError::GsoWithoutNeedsCsum)
    );
    let wrong_start = Header {
        csum_start: 14,
        ..tso_header()
    };
    assert_eq!(
        wrong_start.validate(&frame, None),
        Err(VirtioError::ChecksumStartMismatch)
    );
    let wrong_offset = Header {
        csum_offset: 6,
        ..tso_header()
    };
    assert_eq!(
        wrong_offset.validate(&frame, None),
        Err(VirtioError::ChecksumOffsetMismatch)
    );
}

#[test]
fn checksum_field_must_be_inside_the_packet() {
    let frame = udp4_frame(100);
    let partial = Header {
        flags: Flags::NEEDS_CSUM,
        csum_start: 34,
        csum_offset: 6,
        ..Header::none()
    };
    assert_eq!(
        partial.validate(&frame, None).unwrap().checksum,
        ChecksumState::Partial {
            start: 34,
            offset: 6
        }
    );
    let outside = Header {
        csum_start: frame.len() as u16 - 1,
        csum_offset: 0,
        ..partial
    };
    assert_eq!(
        outside.validate(&frame, None),
        Err(VirtioError::ChecksumOutsideFrame)
    );
    let far = Header {
        csum_start: u16::MAX,
        csum_offset: u16::MAX,
        ..partial
    };
    assert_eq!(
        far.validate(&frame, None),
        Err(VirtioError::ChecksumOutsideFrame)
    );
    // A non-IP frame can still carry a generic partial checksum, from Linux's lowest
    // start (20) on; below it the kernel refuses the header, and so does the engine.
    let arp_like = concat(&[&eth(0x0806), &[0u8; 28]]);
    let generic = Header {
        csum_start: 20,
        csum_offset: 2,
        ..partial
    };
    assert!(generic.validate(&arp_like, None).unwrap().layout.is_none());
    let in_ethernet = Header {
        csum_start: 14,
        ..generic
    };
    assert_eq!(
        in_ethernet.validate(&arp_like, None),
        Err(VirtioError::ChecksumStartInHeaders)
    );
}

/// A partial checksum that starts inside the IP header would, once completed, rewrite
/// IP header bytes (here the IPv4 header checksum) after the frame was classified.
#[test]
fn checksum_start_inside_the_ip_header_is_refused() {
    let frame = tcp4_frame(100);
    for start in [20u16, 24, 33] {
        let header = Header {
            flags: Flags::NEEDS_CSUM,
            csum_start: start,
            csum_offset: 0,
            ..Header::none()
        };
        assert_eq!(
            header.validate(&frame, None),
            Err(VirtioError::ChecksumStartInHeaders),
            "start {start}"
        );
    }
    let at_tcp = Header {
        flags: Flags::NEEDS_CSUM,
        csum_start: 34,
        csum_offset: 16,
        ..Header::none()
    };
    assert!(at_tcp.validate(&frame, None).is_ok());
}

#[test]
fn flags_and_types_are_checked() {
    let frame = tcp4_frame(3000);
    let unknown = Header {
        flags: Flags(0x11),
        ..tso_header()
    };
    assert_eq!(
        unknown.validate(&frame, None),
        Err(VirtioError::UnknownFlags(0x10))
    );
    let rsc = Header {
        flags: Flags(0x05),
        ..tso_header()
    };
    assert_eq!(
        rsc.validate(&frame, None),
        Err(VirtioError::RscInfoNotAllowed)
    );
    let both = Header {
        flags: Flags(0x03),
        ..tso_header()
    };
    assert_eq!(
        both.validate(&frame, None),
        Err(VirtioError::ConflictingChecksumFlags)
    );
    let tunnel_bits = Header {
        gso_type: GsoType::from(0x21),
        ..tso_header()
    };
    assert_eq!(
        tunnel_bits.validate(&frame, None),
        Err(VirtioError::UnknownGsoType(0x21))
    );
    let udp_ecn = Header {
        gso_type: GsoType::UdpL4,
        gso_ecn: true,
        ..tso_header()
    };
    assert_eq!(
        udp_ecn.validate(&frame, None),
        Err(VirtioError::EcnWithoutTcp)
    );
    let tcp_ecn = Header {
        gso_ecn: true,
        ..tso_header()
    };
    assert!(tcp_ecn.validate(&frame, None).unwrap().gso.unwrap().ecn);
    let valid = Header::data_valid();
    assert_eq!(
        valid.validate(&frame, None).unwrap().checksum,
        ChecksumState::Valid
    );
}

#[test]
fn gso_needs_a_parseable_frame_and_no_fragment() {
    let garbage = [0xffu8; 100];
    assert!(matches!(
        tso_header().validate(&garbage, None),
        Err(VirtioError::Unparseable(_))
    ));
    let mut fragment = udp4_frame(3000);
    fragment[20] = 0x20; // MF
    let ufo = Header {
        gso_type: GsoType::Udp,
        csum_offset: 6,
        ..tso_header()
    };
    assert_eq!(
        ufo.validate(&fragment, None),
        Err(VirtioError::GsoOnFragment)
    );
    assert!(ufo.validate(&udp4_frame(3000), None).unwrap().gso.is_some());
}

#[test]
fn caller_layout_must_fit_the_frame() {
    let frame = tcp4_frame(3000);
    let layout = parse_frame(&frame).unwrap();
    assert!(tso_header().validate(&frame, Some(&layout)).is_ok());
    assert_eq!(
        tso_header().validate(&frame[..100], Some(&layout)),
        Err(VirtioError::LayoutOutsideFrame)
    );
}

#[test]
fn constructors_produce_headers_that_validate() {
    let frame = udp4_frame(5000);
    let layout = parse_frame(&frame).unwrap();
    let uso = Header::for_gso(&layout, GsoKind::Uso, 1400).unwrap();
    assert_eq!((uso.csum_start, uso.csum_offset, uso.hdr_len), (34, 6, 42));
    assert_eq!(
        uso.validate(&frame, Some(&layout))
            .unwrap()
            .gso
            .unwrap()
            .segments,
        4
    );
    assert_eq!(
        Header::for_gso(&layout, GsoKind::TcpV4, 1400),
        Err(VirtioError::GsoTransportMismatch)
    );
    assert_eq!(
        Header::for_gso(&layout, GsoKind::Uso, 0),
        Err(VirtioError::GsoSizeZero)
    );
    let partial = Header::needs_csum(&parse_frame(&tcp6_frame(10)).unwrap()).unwrap();
    assert_eq!((partial.csum_start, partial.csum_offset), (54, 16));
    assert!(partial.validate(&tcp6_frame(10), None).is_ok());
}

#[test]
fn vxlan_inner_tcp_gso_points_at_the_inner_transport() {
    let vxlan = [0x08, 0, 0, 0, 0, 0, 1, 0];
    let inner = tcp4_frame(4000);
    let frame = concat(&[
        &eth(0x0800),
        &ipv4(17, &udp(4789, &concat(&[&vxlan, &inner]))),
    ]);
    let layout = parse_frame(&frame).unwrap();
    let header = Header::for_gso(&layout, GsoKind::TcpV4, 1400).unwrap();
    assert_eq!(header.csum_start, 84);
    let gso = header.validate(&frame, None).unwrap().gso.unwrap();
    assert_eq!((gso.headers_len, gso.segments), (104, 3));
}

/// A VXLAN frame (outer IPv4, UDP at 34, inner IPv4 at 64) carrying TCP.
fn vxlan4_frame(payload_len: usize) -> Vec<u8> {
    let vxlan = [0x08, 0, 0, 0, 0, 0, 1, 0];
    concat(&[
        &eth(0x0800),
        &ipv4(17, &udp(4789, &concat(&[&vxlan, &tcp4_frame(payload_len)]))),
    ])
}

/// A 24-byte tunnel-form header: TSO at the inner TCP header, tunnel bits as given.
fn tunnel_bytes(flags: u8, gso_type: u8, outer_th: u16, inner_nh: u16) -> [u8; 24] {
    let mut b = [0u8; 24];
    b[0] = flags;
    b[1] = gso_type;
    b[4..6].copy_from_slice(&1400u16.to_le_bytes());
    b[6..8].copy_from_slice(&84u16.to_le_bytes());
    b[8..10].copy_from_slice(&16u16.to_le_bytes());
    b[20..22].copy_from_slice(&outer_th.to_le_bytes());
    b[22..24].copy_from_slice(&inner_nh.to_le_bytes());
    b
}

#[test]
fn tunnel_form_round_trips() {
    // NEEDS_CSUM | UDP_TUNNEL_CSUM, TCPV4 | UDP_TUNNEL_IPV4.
    let bytes = tunnel_bytes(0x01 | 0x08, 0x01 | 0x20, 34, 64);
    let header = Header::decode(&bytes, HeaderForm::V1Tunnel).unwrap();
    assert_eq!((header.flags, header.gso_type), (Flags::NEEDS_CSUM, GsoType::TcpV4));
    let tunnel = TunnelGso {
        outer_ipv6: false,
        outer_checksum: true,
        outer_th: 34,
        inner_nh: 64,
    };
    assert_eq!(header.tunnel, Some(tunnel));
    assert_eq!(header.to_tunnel_bytes(), bytes);
    let mut out = [0u8; 24];
    assert_eq!(header.encode(HeaderForm::V1Tunnel, &mut out), Ok(24));
    assert_eq!(out, bytes);
    // The shorter forms have no room for the tunnel.
    assert_eq!(
        header.encode(HeaderForm::V1, &mut out),
        Err(VirtioError::TunnelNeedsTunnelForm)
    );
    // A tunnel-form header without tunnel bits is a v1 header.
    let plain = Header::decode(&tunnel_bytes(1, 1, 0, 0), HeaderForm::V1Tunnel).unwrap();
    assert_eq!(plain.tunnel, None);
    assert_eq!(HeaderForm::of_len(24), Some(HeaderForm::V1Tunnel));
}

#[test]
fn tunnel_bits_that_contradict_each_other_are_refused() {
    let both = tunnel_bytes(1, 0x01 | 0x20 | 0x40, 34, 64);
    assert_eq!(
        Header::decode(&both, HeaderForm::V1Tunnel),
        Err(VirtioError::TunnelBothIpVersions)
    );
    let flag_alone = tunnel_bytes(1 | 0x08, 0x01, 0, 0);
    assert_eq!(
        Header::decode(&flag_alone, HeaderForm::V1Tunnel),
        Err(VirtioError::TunnelChecksumWithoutTunnel)
    );
    // In the v1 form the same bits are an unknown GSO type / flag, refused on validation.
    let v1 = Header::decode(&tunnel_bytes(1, 0x21, 34, 64), HeaderForm::V1).unwrap();
    assert_eq!(v1.tunnel, None);
    assert_eq!(
        v1.validate(&vxlan4_frame(4000), None),
        Err(VirtioError::UnknownGsoType(0x21))
    );
}

#[test]
fn tunnel_fields_must_name_the_frames_tunnel() {
    let frame = vxlan4_frame(4000);
    let check = |flags: u8, gso_type: u8, outer_th: u16, inner_nh: u16, frame: &[u8]| {
        let bytes = tunnel_bytes(flags, gso_type, outer_th, inner_nh);
        Header::decode(&bytes, HeaderForm::V1Tunnel)
            .unwrap()
            .validate(frame, None)
            .map(|offload| offload.gso.map(|gso| gso.segments))
    };
    assert_eq!(check(1, 0x21, 34, 64, &frame), Ok(Some(3)));
    assert_eq!(check(1, 0x41, 34, 64, &frame), Err(VirtioError::TunnelIpVersionMismatch));
    assert_eq!(check(1, 0x21, 36, 64, &frame), Err(VirtioError::TunnelOuterOffsetMismatch));
    assert_eq!(check(1, 0x21, 34, 66, &frame), Err(VirtioError::TunnelInnerOffsetMismatch));
    // The tunnel must carry GSO (kernel: not none, not UFO).
    let mut no_gso = tunnel_bytes(1, 0x20, 34, 64);
    no_gso[4..6].copy_from_slice(&[0, 0]);
    let header = Header::decode(&no_gso, HeaderForm::V1Tunnel).unwrap();
    assert_eq!(header.validate(&frame, None), Err(VirtioError::TunnelWithoutGso));
    // A frame without a tunnel.
    let plain = tcp4_frame(4000);
    assert_eq!(check(1, 0x21, 34, 64, &plain), Err(VirtioError::TunnelNotInFrame));
}

#[test]
fn describe_reads_the_tunnel_of_a_frame() {
    let frame = vxlan4_frame(100);
    let layout = parse_frame(&frame).unwrap();
    let tunnel = TunnelGso::describe(&layout, &frame).unwrap();
    assert_eq!((tunnel.outer_ipv6, tunnel.outer_checksum), (false, false));
    assert_eq!((tunnel.outer_th, tunnel.inner_nh), (34, 64));
    assert_eq!(TunnelGso::describe(&parse_frame(&tcp4_frame(10)).unwrap(), &frame), None);
}

proptest::proptest! {
    /// Any header against a real frame: validation never panics, and what it accepts
    /// names offsets inside the frame and segments that cover the payload.
    #[test]
    fn any_header_validates_or_errs_cleanly(
        bytes in proptest::array::uniform12(proptest::num::u8::ANY),
        payload in 0usize..5000,
        v6 in proptest::bool::ANY,
    ) {
        let frame = if v6 { tcp6_frame(payload) } else { tcp4_frame(payload) };
        let header = Header::decode(&bytes, HeaderForm::V1).unwrap();
        proptest::prop_assert_eq!(header.to_bytes(), bytes);
        // With the frame already parsed, the same decision, errors included.
        let layout = crate::wire::parse_frame(&frame).unwrap();
        proptest::prop_assert_eq!(
            header.validate_parsed(&frame, &layout),
            header.validate(&frame, None).map(|offload| (offload.gso, offload.checksum))
        );
        if let Ok(offload) = header.validate(&frame, None) {
            if let ChecksumState::Partial { start, offset } = offload.checksum {
                proptest::prop_assert!(start + offset + 2 <= frame.len());
            }
            if let Some(gso) = offload.gso {
                let size = usize::from(gso.gso_size);
                proptest::prop_assert!((gso.segments - 1) * size < payload && payload <= gso.segments * size);
            }
        }
    }
}

proptest::proptest! {
    /// `type_bytes` (what the C API reports per GRO delivery without encoding) is what
    /// the tunnel form writes, for every header that decodes, with and without a tunnel.
    #[test]
    fn type_bytes_are_the_tunnel_forms_first_two_bytes(
        bytes in proptest::array::uniform24(proptest::num::u8::ANY),
    ) {
        if let Ok(header) = Header::decode(&bytes, HeaderForm::V1Tunnel) {
            let encoded = header.to_tunnel_bytes();
            proptest::prop_assert_eq!(header.type_bytes(), (encoded[0], encoded[1]));
            if header.tunnel.is_none() {
                let v1 = header.to_bytes();
                proptest::prop_assert_eq!(header.type_bytes(), (v1[0], v1[1]));
            }
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 4000, ..Default::default() })]

    /// The few compares for the commonest header decide as every rule does, wherever
    /// they answer: headers near the common ones (flags, GSO type and size, checksum
    /// start and offset around the transport header's) on TCP and UDP frames over IPv4
    /// and IPv6, VXLAN, and frames with padding or cut short of their IP length.
    #[test]
    fn plain_checksum_agrees_with_the_rules(
        flags in 0u8..8,
        gso_type in proptest::sample::select(vec![0u8, 1, 3, 4, 5, 0x80, 0x81, 9]),
        gso_size in proptest::sample::select(vec![0u16, 1, 1448]),
        start_delta in -3i32..=3,
        offset in proptest::sample::select(vec![6u16, 16, 17, 0, 1000]),
        shape in 0usize..4,
        payload in 0usize..64,
        cut in 0usize..8,
        padding in 0usize..8,
    ) {
        let mut frame = match shape {
            0 => tcp4_frame(payload),
            1 => udp4_frame(payload),
            2 => tcp6_frame(payload),
            _ => vxlan4_frame(payload),
        };
        let Ok(layout) = parse_frame(&frame) else { return Ok(()) };
        frame.resize(frame.len() + padding, 0);
        frame.truncate(frame.len() - cut.min(frame.len()));
        let start = (layout.ip.l4_offset as i32 + start_delta).max(0) as u16;
        let mut bytes = [0u8; 12];
        bytes[0] = flags;
        bytes[1] = gso_type;
        bytes[4..6].copy_from_slice(&gso_size.to_le_bytes());
        bytes[6..8].copy_from_slice(&start.to_le_bytes());
        bytes[8..10].copy_from_slice(&offset.to_le_bytes());
        let header = Header::decode(&bytes, HeaderForm::V1).unwrap();
        if let Some(checksum) = header.plain_checksum(&frame, &layout) {
            proptest::prop_assert_eq!(Ok((None, checksum)), header.check_rules(&frame, Ok(&layout)));
        }
    }
}

/// The commonest headers take the few compares: a partial TCP or UDP checksum, DATA_VALID
/// and no flag at all, on a frame that parsed.
#[test]
fn plain_checksum_takes_the_common_headers() {
    for (frame, offset) in [(tcp4_frame(100), 16), (udp4_frame(100), 6), (tcp6_frame(100), 16)] {
        let layout = parse_frame(&frame).unwrap();
        let partial = Header::needs_csum(&layout).unwrap();
        let start = layout.ip.l4_offset;
        assert_eq!(
            partial.plain_checksum(&frame, &layout),
            Some(ChecksumState::Partial { start, offset: offset as usize })
        );
        let valid = Header::data_valid();
        assert_eq!(valid.plain_checksum(&frame, &layout), Some(ChecksumState::Valid));
        assert_eq!(Header::none().plain_checksum(&frame, &layout), Some(ChecksumState::Complete));
    }
}
