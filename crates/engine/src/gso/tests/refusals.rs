//! Everything `segment` refuses, each with its typed reason.

use super::*;

#[test]
fn zero_segment_size_is_an_error() {
    let frame = build(&Spec::tcp4(1000));
    assert_eq!(
        run(&frame, &GsoParams::tcp(0)).unwrap_err(),
        GsoError::SegmentSizeZero
    );
}

#[test]
fn more_than_511_segments_is_an_error() {
    let frame = build(&Spec::tcp4(1024));
    assert_eq!(
        run(&frame, &GsoParams::tcp(2)).unwrap_err(),
        GsoError::TooManySegments(512)
    );
    assert_eq!(run(&frame, &GsoParams::tcp(3)).map(|o| o.len()), Ok(342));
}

#[test]
fn wrong_transport_is_refused() {
    let tcp = build(&Spec::tcp4(3000));
    let udp = build(&Spec::udp4(3000));
    assert_eq!(
        run(&udp, &GsoParams::tcp(1000)).unwrap_err(),
        GsoError::NotTcp
    );
    let uso = GsoParams::tcp(1000).with_kind(GsoKind::Udp);
    assert_eq!(run(&tcp, &uso).unwrap_err(), GsoError::NotUdp);
}

#[test]
fn ipv4_fragment_as_input_is_refused() {
    let mut frame = build(&Spec::udp4(3000));
    frame[ETH_LEN + 6] |= 0x20; // MF
    let c = u16::from_be_bytes([frame[ETH_LEN + 10], frame[ETH_LEN + 11]]);
    let fixed = crate::checksum::update16(c, 0, 0x2000);
    frame[ETH_LEN + 10..ETH_LEN + 12].copy_from_slice(&fixed.to_be_bytes());
    let l = parse_frame(&frame).expect("a fragment parses");
    let mut out = GsoOutput::new();
    let params = GsoParams::tcp(1000).with_kind(GsoKind::Udp);
    assert_eq!(
        segment(&frame, &l, &params, &mut out),
        Err(GsoError::FragmentedInput)
    );
    assert!(out.is_empty());
}

#[test]
fn layout_of_another_frame_is_refused_without_panic() {
    let small = build(&Spec::tcp4(100));
    let big = build(&Spec::tcp4(5000).encap(Encap::Vxlan, false));
    let mut out = GsoOutput::new();
    let params = GsoParams::tcp(1448);
    assert_eq!(
        segment(&small, &layout(&big), &params, &mut out),
        Err(GsoError::LayoutMismatch)
    );
    // The inner layout of a plain frame applied to a tunnelled one: offsets disagree.
    assert!(segment(&big, &layout(&small), &params, &mut out).is_err());
}

#[test]
fn fixed_ip_id_without_df_is_refused() {
    let frame = build(&Spec {
        dont_fragment: false,
        ..Spec::tcp4(5000)
    });
    let params = GsoParams {
        fixed_ip_id: true,
        ..GsoParams::tcp(1448)
    };
    assert_eq!(
        run(&frame, &params).unwrap_err(),
        GsoError::FixedIdWithoutDf
    );
}

#[test]
fn gre_with_sequence_number_is_refused() {
    let mut frame = build(&Spec::tcp4(4000).encap(
        Encap::Gre {
            checksum: false,
            key: false,
        },
        false,
    ));
    let gre = ETH_LEN + 20;
    frame[gre] |= 0x10;
    // Give the S flag its 4 bytes so the frame still parses: insert a sequence number.
    frame.splice(gre + 4..gre + 4, [0, 0, 0, 1]);
    let total = (frame.len() - ETH_LEN) as u16;
    frame[ETH_LEN + 2..ETH_LEN + 4].copy_from_slice(&total.to_be_bytes());
    frame[ETH_LEN + 10..ETH_LEN + 12].copy_from_slice(&[0, 0]);
    let c = !reference(&frame[ETH_LEN..ETH_LEN + 20]);
    frame[ETH_LEN + 10..ETH_LEN + 12].copy_from_slice(&c.to_be_bytes());
    let l = parse_frame(&frame).expect("GRE with a sequence number parses");
    let mut out = GsoOutput::new();
    assert_eq!(
        segment(&frame, &l, &GsoParams::tcp(1448), &mut out),
        Err(GsoError::GreSequenceNumber)
    );
}

#[test]
fn ufo_on_ipv6_and_tiny_fragments_are_refused() {
    let v6 = build(&Spec {
        v6: true,
        ..Spec::udp4(3000)
    });
    let ufo = GsoParams::tcp(1000).with_kind(GsoKind::UdpFragment);
    assert_eq!(run(&v6, &ufo).unwrap_err(), GsoError::UfoNeedsIpv4);
    let v4 = build(&Spec::udp4(3000));
    let tiny = GsoParams::tcp(7).with_kind(GsoKind::UdpFragment);
    assert_eq!(run(&v4, &tiny).unwrap_err(), GsoError::FragmentSizeTooSmall);
}

#[test]
fn headers_longer_than_the_cap_are_refused() {
    let frame = build(&Spec {
        v6_ext: 2048,
        ..Spec::tcp6(3000)
    });
    let l = parse_frame(&frame).expect("a 2 KiB destination options header parses");
    assert!(l.headers_len() > MAX_HEADERS_LEN);
    let mut out = GsoOutput::new();
    let result = segment(&frame, &l, &GsoParams::tcp(1448), &mut out);
    assert_eq!(result, Err(GsoError::HeadersTooLong));
}
