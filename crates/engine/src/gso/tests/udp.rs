//! USO and UFO.

use super::*;

#[test]
fn uso_gives_each_datagram_its_own_header() {
    let frame = build(&Spec::udp4(3000));
    for checksum in [L4Checksum::Full, L4Checksum::Partial] {
        let params = GsoParams {
            checksum,
            ..GsoParams::tcp(1200).with_kind(GsoKind::Udp)
        };
        let segs = segments(&frame, &run(&frame, &params).unwrap());
        let lens: Vec<u16> = segs
            .iter()
            .map(|(b, l)| u16::from_be_bytes([b[l.ip.l4_offset + 4], b[l.ip.l4_offset + 5]]))
            .collect();
        assert_eq!(lens, [1208, 1208, 608]);
        let ids: Vec<u16> = segs.iter().map(|(b, l)| ipv4_id(b, l.ip.offset)).collect();
        assert_eq!(ids, [0x1234, 0x1235, 0x1236]);
        assert_eq!(concat_payloads(&segs), payload(3000));
    }
}

#[test]
fn ufo_fragment_offsets_are_multiples_of_8() {
    let frame = build(&Spec::udp4(3000));
    // 1001 rounds down to 1000 bytes of IP payload per fragment.
    let params = GsoParams::tcp(1001).with_kind(GsoKind::UdpFragment);
    let out = run(&frame, &params).unwrap();
    assert_eq!(out.len(), 4); // 3008-byte datagram
    let mut datagram = Vec::new();
    for (i, seg) in out.iter().enumerate() {
        let bytes = wire_bytes(&frame, &seg);
        let ip = ETH_LEN;
        assert_eq!(
            reference(&bytes[ip..ip + 20]),
            0xffff,
            "ipv4 header checksum"
        );
        let frag = u16::from_be_bytes([bytes[ip + 6], bytes[ip + 7]]);
        let total = usize::from(u16::from_be_bytes([bytes[ip + 2], bytes[ip + 3]]));
        assert_eq!(total, bytes.len() - ip);
        assert_eq!(
            usize::from(frag & 0x1fff) * 8,
            i * 1000,
            "offset of fragment {i}"
        );
        assert_eq!(frag & 0x2000 != 0, i < 3, "MF only before the last");
        assert_eq!(ipv4_id(&bytes, ip), 0x1234, "fragments share the ID");
        if i < 3 {
            assert_eq!((total - 20) % 8, 0);
        }
        datagram.extend_from_slice(&bytes[ip + 20..]);
    }
    // Reassembled: the UDP header (first fragment only) and a checksum over it all.
    assert_eq!(datagram.len(), 3008);
    assert_eq!(&datagram[8..], &payload(3000)[..]);
    let sum = pseudo_sum(&frame[ETH_LEN..], 17, 3008) + u32::from(reference(&datagram));
    assert_eq!(
        ((sum & 0xffff) + (sum >> 16)) as u16,
        0xffff,
        "udp checksum of the datagram"
    );
}
