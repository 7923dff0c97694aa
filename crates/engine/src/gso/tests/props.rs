//! Property tests: random super-packets and segment sizes.

use super::*;
use proptest::prelude::*;

fn encap_strategy() -> impl Strategy<Value = (Encap, bool)> {
    prop_oneof![
        Just((Encap::None, false)),
        any::<bool>().prop_map(|v6| (Encap::Vxlan, v6)),
        (0usize..3, any::<bool>()).prop_map(|(o, v6)| (Encap::Geneve { options: o * 4 }, v6)),
        (any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(checksum, key, v6)| (Encap::Gre { checksum, key }, v6)),
        (any::<bool>(), any::<bool>()).prop_map(|(checksum, v6)| (Encap::GreIp { checksum }, v6)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Segments are valid packets whose payloads concatenate back to the original.
    #[test]
    fn tcp_segments_reassemble(
        v6 in any::<bool>(),
        v6_ext in prop_oneof![Just(0usize), Just(8), Just(32)],
        payload_len in 0usize..20000,
        mss in 40u16..3000,
        (encap, outer_v6) in encap_strategy(),
        partial in any::<bool>(),
        outer_udp_checksum in any::<bool>(),
        flags in prop_oneof![Just(TCP_ACK), Just(TCP_ACK | TCP_PSH), Just(TCP_ACK | TCP_FIN | TCP_CWR)],
    ) {
        let v6_ext = if v6 { v6_ext } else { 0 };
        let spec = Spec { v6, v6_ext, ..Spec::tcp4(payload_len) }.flags(flags).encap(encap, outer_v6);
        let frame = build(&spec);
        let checksum = if partial { L4Checksum::Partial } else { L4Checksum::Full };
        let params = GsoParams { checksum, outer_udp_checksum, ..GsoParams::tcp(mss) };
        let out = run(&frame, &params).unwrap();
        prop_assert_eq!(out.len(), payload_len.div_ceil(usize::from(mss)).max(1));
        let segs = segments(&frame, &out);
        prop_assert_eq!(concat_payloads(&segs), payload(payload_len));
        for (i, s) in segs.iter().enumerate() {
            let last = i + 1 == segs.len();
            prop_assert_eq!(tcp_flags(s) & (TCP_FIN | TCP_PSH), if last { flags & (TCP_FIN | TCP_PSH) } else { 0 });
            prop_assert!(s.0.len() - s.1.headers_len() <= usize::from(mss));
        }
    }

    /// `longest_header` is the longest header of the last call's segments, also when
    /// one output is reused after a call with longer headers (it is kept as segments
    /// are added, not walked per read) and after a refused call (none).
    #[test]
    fn longest_header_is_the_last_calls(
        first_encap in encap_strategy(),
        (encap, outer_v6) in encap_strategy(),
        payload_len in 0usize..6000,
        mss in 40u16..3000,
    ) {
        let mut out = GsoOutput::new();
        let params = GsoParams::tcp(mss);
        let first = build(&Spec::tcp4(payload_len).encap(first_encap.0, first_encap.1));
        segment(&first, &layout(&first), &params, &mut out).unwrap();
        let frame = build(&Spec::tcp4(payload_len).encap(encap, outer_v6));
        segment(&frame, &layout(&frame), &params, &mut out).unwrap();
        let longest = out.iter().map(|s| s.header.len()).max().unwrap_or(0);
        prop_assert_eq!(out.longest_header(), longest);
        let refused = GsoParams::tcp(0);
        prop_assert!(segment(&frame, &layout(&frame), &refused, &mut out).is_err());
        prop_assert_eq!(out.longest_header(), 0);
    }

    /// USO: every segment a valid datagram, payloads concatenate back.
    #[test]
    fn udp_segments_reassemble(
        v6 in any::<bool>(),
        payload_len in 0usize..20000,
        size in 40u16..3000,
        (encap, outer_v6) in encap_strategy(),
        partial in any::<bool>(),
    ) {
        let spec = Spec { v6, ..Spec::udp4(payload_len) }.encap(encap, outer_v6);
        let frame = build(&spec);
        let checksum = if partial { L4Checksum::Partial } else { L4Checksum::Full };
        let params = GsoParams { checksum, outer_udp_checksum: true, ..GsoParams::tcp(size).with_kind(GsoKind::Udp) };
        let segs = segments(&frame, &run(&frame, &params).unwrap());
        prop_assert_eq!(concat_payloads(&segs), payload(payload_len));
    }

    /// Arbitrary bytes with the layout of a real frame never panic.
    #[test]
    fn mangled_frames_never_panic(
        cut in 0usize..200,
        flips in proptest::collection::vec((0usize..200, any::<u8>()), 0..8),
        mss in 0u16..2000,
        kind in prop_oneof![Just(GsoKind::Tcp), Just(GsoKind::Udp), Just(GsoKind::UdpFragment)],
    ) {
        let good = build(&Spec::tcp4(3000).encap(Encap::Gre { checksum: true, key: true }, false));
        let l = layout(&good);
        let mut bad = good.clone();
        for (at, v) in flips {
            bad[at % good.len()] = v;
        }
        bad.truncate(good.len() - cut);
        let mut out = GsoOutput::new();
        let params = GsoParams::tcp(mss).with_kind(kind);
        let _ = segment(&bad, &l, &params, &mut out);
        if let Ok(l2) = parse_frame(&bad) {
            let _ = segment(&bad, &l2, &params, &mut out);
        }
    }
}

/// Every segment of `out` as header bytes, payload range and partial-checksum place.
fn flat(out: &GsoOutput) -> Vec<(Vec<u8>, core::ops::Range<usize>, Option<PartialChecksum>)> {
    out.iter()
        .map(|s| (s.header.to_vec(), s.payload.clone(), s.partial_checksum))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The TCP fast path (bare, VXLAN, Geneve; IPv4/IPv6 inside and out) writes exactly
    /// what the general path writes, whatever the shape, options, IDs, flags and sizes;
    /// shapes it does not take (GRE, VLAN tags, IPv4 options) fall through unchanged.
    #[test]
    fn tcp_fast_path_equals_general_path(
        v6 in any::<bool>(),
        v6_ext in prop_oneof![Just(0usize), Just(8)],
        tcp_options in prop_oneof![Just(0usize), Just(12), Just(40)],
        payload_len in 0usize..12000,
        mss in 1u16..3000,
        (encap, outer_v6) in encap_strategy(),
        vlan in any::<bool>(),
        ipv4_options in any::<bool>(),
        partial in any::<bool>(),
        outer_udp_checksum in any::<bool>(),
        fixed_ip_id in any::<bool>(),
        ip_id in any::<u16>(),
        outer_id in any::<u16>(),
        seq in any::<u32>(),
        flags in prop_oneof![Just(TCP_ACK), Just(TCP_ACK | TCP_PSH), Just(TCP_ACK | TCP_FIN | TCP_CWR | TCP_PSH)],
    ) {
        let spec = Spec {
            v6,
            v6_ext: if v6 { v6_ext } else { 0 },
            l4: L4::Tcp { flags, options: tcp_options },
            ip_id,
            outer_id,
            seq,
            ..Spec::tcp4(payload_len)
        }
        .encap(encap, outer_v6);
        let mut frame = build(&spec);
        if encap == Encap::None && vlan {
            frame = with_vlan_tag(&frame);
        }
        if encap == Encap::None && !v6 && ipv4_options && !vlan {
            frame = with_ipv4_options(&frame);
        }
        let checksum = if partial { L4Checksum::Partial } else { L4Checksum::Full };
        let params = GsoParams { checksum, outer_udp_checksum, fixed_ip_id, ..GsoParams::tcp(mss) };
        let fast = run(&frame, &params);
        let general = super::super::tcp::without_fast_path(|| run(&frame, &params));
        match (fast, general) {
            (Ok(fast), Ok(general)) => {
                prop_assert_eq!(flat(&fast), flat(&general));
                prop_assert_eq!(fast.header_bytes(), general.header_bytes());
                segments(&frame, &fast);
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "fast {:?} vs general {:?}", a.err(), b.err()),
        }
    }

    /// Software checksums: every segment's checksums verify, and the bytes are exactly
    /// those of the checksum-partial segments finished the way a NIC (or the kernel's
    /// `skb_checksum_help`) finishes them: the one's complement of the sum from the
    /// checksum start to the end, over the pseudo-header seed already in the field.
    #[test]
    fn software_checksums_equal_finished_partial_ones(
        v6 in any::<bool>(),
        payload_len in 0usize..12000,
        mss in 24u16..3000,
        (encap, outer_v6) in encap_strategy(),
        outer_udp_checksum in any::<bool>(),
        udp in any::<bool>(),
        frame_offset in 0usize..64,
    ) {
        let base = if udp { Spec::udp4(payload_len) } else { Spec::tcp4(payload_len) };
        let spec = Spec { v6, ..base }.encap(encap, outer_v6);
        // The frame at every alignment, so the payload sums start at every address.
        let built = build(&spec);
        let mut storage = vec![0u8; frame_offset];
        storage.extend_from_slice(&built);
        let frame = &storage[frame_offset..];
        let kind = if udp { GsoKind::Udp } else { GsoKind::Tcp };
        let full = GsoParams { checksum: L4Checksum::Full, outer_udp_checksum, ..GsoParams::tcp(mss).with_kind(kind) };
        let partial = GsoParams { checksum: L4Checksum::Partial, ..full };
        let full_out = run(frame, &full).unwrap();
        let partial_out = run(frame, &partial).unwrap();
        prop_assert_eq!(full_out.len(), partial_out.len());
        let verified = segments(frame, &full_out);
        for (i, (f, p)) in full_out.iter().zip(partial_out.iter()).enumerate() {
            prop_assert!(f.partial_checksum.is_none());
            let mut finished = wire_bytes(frame, &p);
            if udp {
                // UDP sends a computed zero as 0xffff.
                let at = usize::from(p.partial_checksum.unwrap().start) + 6;
                if finished[at..at + 2] == [0, 0] {
                    finished[at..at + 2].copy_from_slice(&[0xff, 0xff]);
                }
            }
            prop_assert_eq!(&verified[i].0, &finished, "segment {}", i);
        }
    }
}
