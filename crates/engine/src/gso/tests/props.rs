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
