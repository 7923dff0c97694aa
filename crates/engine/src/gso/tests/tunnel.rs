//! VXLAN, Geneve and GRE: outer headers fixed up per segment.

use super::*;

#[test]
fn vxlan_outer_udp_length_and_checksum() {
    for outer_v6 in [false, true] {
        for outer_udp_checksum in [false, true] {
            for checksum in [L4Checksum::Full, L4Checksum::Partial] {
                let spec = Spec::tcp4(4000).encap(Encap::Vxlan, outer_v6);
                let frame = build(&spec);
                let params = GsoParams {
                    checksum,
                    outer_udp_checksum,
                    ..GsoParams::tcp(1448)
                };
                let segs = segments(&frame, &run(&frame, &params).unwrap());
                assert_eq!(segs.len(), 3);
                for (i, (b, l)) in segs.iter().enumerate() {
                    let t = l.tunnel.unwrap();
                    let udp = t.outer.l4_offset;
                    let len = usize::from(u16::from_be_bytes([b[udp + 4], b[udp + 5]]));
                    assert_eq!(len, b.len() - udp, "outer udp length");
                    let check = u16::from_be_bytes([b[udp + 6], b[udp + 7]]);
                    assert_eq!(check != 0, outer_udp_checksum, "outer checksum present");
                    if !outer_v6 {
                        assert_eq!(ipv4_id(b, t.outer.offset), spec.outer_id + i as u16);
                    }
                    assert_eq!(ipv4_id(b, l.ip.offset), spec.ip_id + i as u16);
                }
                assert_eq!(concat_payloads(&segs), payload(4000));
            }
        }
    }
}

#[test]
fn gre_with_checksum_flag() {
    for key in [false, true] {
        let frame = build(&Spec::tcp6(4000).encap(
            Encap::Gre {
                checksum: true,
                key,
            },
            false,
        ));
        for checksum in [L4Checksum::Full, L4Checksum::Partial] {
            let params = GsoParams {
                checksum,
                ..GsoParams::tcp(1448)
            };
            let segs = segments(&frame, &run(&frame, &params).unwrap());
            assert_eq!(segs.len(), 3);
            // `check_segment` verified the GRE checksum of each.
            assert!(segs
                .iter()
                .all(|(b, l)| b[l.tunnel.unwrap().offset] & 0x80 != 0));
            assert_eq!(concat_payloads(&segs), payload(4000));
        }
    }
}

#[test]
fn geneve_with_options() {
    let frame = build(&Spec::udp4(3000).encap(Encap::Geneve { options: 8 }, true));
    let params = GsoParams {
        outer_udp_checksum: true,
        ..GsoParams::tcp(1000).with_kind(GsoKind::Udp)
    };
    let segs = segments(&frame, &run(&frame, &params).unwrap());
    assert_eq!(segs.len(), 3);
    let l = layout(&frame);
    let t = l.tunnel.unwrap();
    for (b, sl) in &segs {
        assert_eq!(sl.tunnel.unwrap().header_len, 16, "8 bytes of options kept");
        assert_eq!(&b[t.offset..t.offset + 16], &frame[t.offset..t.offset + 16]);
    }
    assert_eq!(concat_payloads(&segs), payload(3000));
}

#[test]
fn ufo_inside_vxlan_with_outer_checksum() {
    let frame = build(&Spec::udp4(3000).encap(Encap::Vxlan, false));
    let params = GsoParams {
        outer_udp_checksum: true,
        ..GsoParams::tcp(1200).with_kind(GsoKind::UdpFragment)
    };
    let out = run(&frame, &params).unwrap();
    assert_eq!(out.len(), 3);
    let l = layout(&frame);
    let mut datagram = Vec::new();
    for seg in out.iter() {
        let b = wire_bytes(&frame, &seg);
        let sl = parse_frame(&b).expect("a tunnelled fragment parses");
        check_ip_packet(&b, &sl.tunnel.unwrap().outer, true);
        assert_eq!(reference(&b[l.ip.offset..l.ip.l4_offset]), 0xffff);
        datagram.extend_from_slice(&b[l.ip.l4_offset..]);
    }
    assert_eq!(&datagram[8..], &payload(3000)[..]);
    let sum =
        pseudo_sum(&frame[l.ip.offset..], 17, datagram.len()) + u32::from(reference(&datagram));
    assert_eq!(
        ((sum & 0xffff) + (sum >> 16)) as u16,
        0xffff,
        "udp checksum of the datagram"
    );
}

#[test]
fn gre_carrying_ip_directly() {
    for (v6, outer_v6) in [(false, false), (true, false), (false, true)] {
        let spec = Spec {
            v6,
            ..Spec::tcp4(4000)
        };
        let frame = build(&spec.encap(Encap::GreIp { checksum: true }, outer_v6));
        assert_eq!(layout(&frame).tunnel.unwrap().inner_l2_offset, None);
        let segs = segments(&frame, &run(&frame, &GsoParams::tcp(1448)).unwrap());
        assert_eq!(segs.len(), 3);
        assert_eq!(concat_payloads(&segs), payload(4000));
    }
}
