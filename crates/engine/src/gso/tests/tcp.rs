//! TCP segmentation rules.

use super::*;

#[test]
fn fin_only_on_last() {
    let frame = build(&Spec::tcp4(5000).flags(TCP_ACK | TCP_FIN));
    let out = run(&frame, &GsoParams::tcp(1448)).unwrap();
    let segs = segments(&frame, &out);
    assert_eq!(segs.len(), 4);
    for (i, s) in segs.iter().enumerate() {
        assert_eq!(tcp_flags(s) & TCP_FIN != 0, i == 3, "segment {i}");
        assert!(tcp_flags(s) & TCP_ACK != 0);
    }
}

#[test]
fn psh_only_on_last() {
    let frame = build(&Spec::tcp4(3000).flags(TCP_ACK | TCP_PSH));
    let segs = segments(&frame, &run(&frame, &GsoParams::tcp(1000)).unwrap());
    let psh: Vec<bool> = segs.iter().map(|s| tcp_flags(s) & TCP_PSH != 0).collect();
    assert_eq!(psh, [false, false, true]);
}

#[test]
fn cwr_only_on_first() {
    let frame = build(&Spec::tcp6(3000).flags(TCP_ACK | TCP_CWR));
    let params = GsoParams {
        ecn: true,
        ..GsoParams::tcp(1000)
    };
    let segs = segments(&frame, &run(&frame, &params).unwrap());
    let cwr: Vec<bool> = segs.iter().map(|s| tcp_flags(s) & TCP_CWR != 0).collect();
    assert_eq!(cwr, [true, false, false]);
}

#[test]
fn syn_is_copied_to_every_segment_like_linux() {
    // tcp_gso_segment does not look at SYN/RST; only FIN, PSH and CWR are rewritten.
    let frame = build(&Spec::tcp4(3000).flags(TCP_SYN));
    let segs = segments(&frame, &run(&frame, &GsoParams::tcp(1000)).unwrap());
    assert!(segs.iter().all(|s| tcp_flags(s) == TCP_SYN));
}

#[test]
fn sequence_numbers_advance_by_segment_size_and_wrap() {
    let spec = Spec::tcp4(4000);
    let frame = build(&spec);
    let segs = segments(&frame, &run(&frame, &GsoParams::tcp(1448)).unwrap());
    for (i, (b, l)) in segs.iter().enumerate() {
        let at = l.ip.l4_offset + 4;
        let seq = u32::from_be_bytes(b[at..at + 4].try_into().unwrap());
        assert_eq!(seq, spec.seq.wrapping_add(1448 * i as u32));
    }
    assert_eq!(concat_payloads(&segs), payload(4000));
}

#[test]
fn ip_id_increments() {
    let frame = build(&Spec::tcp4(5000));
    let segs = segments(&frame, &run(&frame, &GsoParams::tcp(1448)).unwrap());
    let ids: Vec<u16> = segs.iter().map(|(b, l)| ipv4_id(b, l.ip.offset)).collect();
    assert_eq!(ids, [0x1234, 0x1235, 0x1236, 0x1237]);
}

#[test]
fn fixed_ip_id_keeps_every_id() {
    let frame = build(&Spec::tcp4(5000));
    let params = GsoParams {
        fixed_ip_id: true,
        ..GsoParams::tcp(1448)
    };
    let segs = segments(&frame, &run(&frame, &params).unwrap());
    assert!(segs.iter().all(|(b, l)| ipv4_id(b, l.ip.offset) == 0x1234));
}

#[test]
fn ipv6_payload_length() {
    let frame = build(&Spec::tcp6(3000));
    let segs = segments(&frame, &run(&frame, &GsoParams::tcp(1400)).unwrap());
    let lens: Vec<usize> = segs
        .iter()
        .map(|(b, l)| usize::from(u16::from_be_bytes([b[l.ip.offset + 4], b[l.ip.offset + 5]])))
        .collect();
    // 32 bytes of TCP header (12 of options) + 1400, 1400, 200.
    assert_eq!(lens, [1432, 1432, 232]);
}

#[test]
fn partial_checksum_is_the_pseudo_header_seed() {
    let frame = build(&Spec::tcp4(3000));
    let params = GsoParams {
        checksum: L4Checksum::Partial,
        ..GsoParams::tcp(1448)
    };
    let out = run(&frame, &params).unwrap();
    let l = layout(&frame);
    let expected = PartialChecksum {
        start: l.ip.l4_offset as u16,
        offset: 16,
    };
    assert_eq!(out.partial_checksum(), Some(expected));
    for seg in out.iter() {
        let h = seg.header;
        let l4_len = h.len() - l.ip.l4_offset + seg.payload.len();
        let seed = pseudo_sum(&h[l.ip.offset..], 6, l4_len) as u16;
        let at = l.ip.l4_offset + 16;
        assert_eq!(u16::from_be_bytes([h[at], h[at + 1]]), seed);
    }
    segments(&frame, &out); // finished by `wire_bytes`, then verified
}

#[test]
fn segment_size_larger_than_payload_gives_one_segment() {
    let frame = build(&Spec::tcp4(1000).flags(TCP_ACK | TCP_PSH | TCP_CWR | TCP_FIN));
    let out = run(&frame, &GsoParams::tcp(1448)).unwrap();
    let segs = segments(&frame, &out);
    assert_eq!(segs.len(), 1);
    assert_eq!(segs[0].0, frame, "one segment is the packet itself");
}

#[test]
fn header_only_packet_gives_one_segment() {
    let frame = build(&Spec::tcp4(0).flags(TCP_ACK));
    let out = run(&frame, &GsoParams::tcp(1448)).unwrap();
    assert_eq!(segments(&frame, &out).len(), 1);
}

#[test]
fn steady_state_does_not_grow_the_output() {
    let frame = build(&Spec::tcp4(60000).encap(Encap::Vxlan, false));
    let mut out = GsoOutput::new();
    let l = layout(&frame);
    segment(&frame, &l, &GsoParams::tcp(1448), &mut out).unwrap();
    let before = out.capacities();
    for _ in 0..3 {
        segment(&frame, &l, &GsoParams::tcp(1448), &mut out).unwrap();
    }
    assert_eq!(out.capacities(), before);
}

#[test]
fn ipv6_extension_headers_are_repeated() {
    let frame = build(&Spec {
        v6_ext: 24,
        ..Spec::tcp6(3000)
    });
    let l = layout(&frame);
    assert_eq!(l.ip.header_len, 64);
    for checksum in [L4Checksum::Full, L4Checksum::Partial] {
        let params = GsoParams {
            checksum,
            ..GsoParams::tcp(1400)
        };
        let segs = segments(&frame, &run(&frame, &params).unwrap());
        for (b, sl) in &segs {
            assert_eq!(sl.ip.header_len, 64);
            assert_eq!(
                &b[l.ip.offset + 40..l.ip.l4_offset],
                &frame[l.ip.offset + 40..l.ip.l4_offset]
            );
        }
        assert_eq!(concat_payloads(&segs), payload(3000));
    }
}

#[test]
fn vlan_tag_and_ipv4_options_are_repeated() {
    let frame = with_vlan_tag(&with_ipv4_options(&build(&Spec::tcp4(4000))));
    let l = layout(&frame);
    assert_eq!((l.l2_len, l.ip.header_len), (18, 24));
    let segs = segments(&frame, &run(&frame, &GsoParams::tcp(1448)).unwrap());
    assert_eq!(segs.len(), 3);
    for (b, _) in &segs {
        assert_eq!(&b[12..16], &[0x81, 0x00, 0x00, 100]);
        assert_eq!(&b[18 + 20..18 + 24], &[1, 1, 1, 0], "options copied");
    }
    assert_eq!(concat_payloads(&segs), payload(4000));
}
