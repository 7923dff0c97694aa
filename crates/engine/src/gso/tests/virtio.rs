//! `GsoParams::from_virtio`.

use super::*;
use crate::virtio::{Flags, GsoType, Header};

fn header(gso_type: GsoType, l: &Layout, csum_offset: u16) -> Header {
    Header {
        flags: Flags::NEEDS_CSUM,
        gso_type,
        gso_size: 1448,
        csum_start: l.ip.l4_offset as u16,
        csum_offset,
        ..Header::none()
    }
}

#[test]
fn tcpv4_header_gives_partial_tcp_params() {
    let frame = build(&Spec::tcp4(5000).encap(Encap::Vxlan, true));
    let l = layout(&frame);
    let hdr = Header {
        gso_ecn: true,
        ..header(GsoType::TcpV4, &l, 16)
    };
    let p = GsoParams::from_virtio(&hdr, &l).unwrap();
    let expected = GsoParams {
        kind: GsoKind::Tcp,
        segment_size: 1448,
        checksum: L4Checksum::Partial,
        fixed_ip_id: false,
        ecn: true,
        outer_udp_checksum: true,
    };
    assert_eq!(p, expected);
    segments(&frame, &run(&frame, &p).unwrap());
}

#[test]
fn mismatched_virtio_headers_are_refused() {
    let tcp4 = layout(&build(&Spec::tcp4(5000)));
    let udp4 = layout(&build(&Spec::udp4(5000)));
    let cases = [
        (
            header(GsoType::TcpV6, &tcp4, 16),
            &tcp4,
            GsoError::VirtioTypeMismatch,
        ),
        (
            header(GsoType::UdpL4, &tcp4, 6),
            &tcp4,
            GsoError::VirtioTypeMismatch,
        ),
        (
            header(GsoType::TcpV4, &udp4, 16),
            &udp4,
            GsoError::VirtioTypeMismatch,
        ),
        (
            Header {
                gso_ecn: true,
                ..header(GsoType::UdpL4, &udp4, 6)
            },
            &udp4,
            GsoError::VirtioTypeMismatch,
        ),
        (
            header(GsoType::TcpV4, &tcp4, 6),
            &tcp4,
            GsoError::VirtioChecksumMismatch,
        ),
        (
            Header {
                csum_start: 0,
                ..header(GsoType::TcpV4, &tcp4, 16)
            },
            &tcp4,
            GsoError::VirtioChecksumMismatch,
        ),
        (
            Header {
                gso_size: 0,
                ..header(GsoType::TcpV4, &tcp4, 16)
            },
            &tcp4,
            GsoError::SegmentSizeZero,
        ),
        (
            header(GsoType::None, &tcp4, 16),
            &tcp4,
            GsoError::VirtioNoGso,
        ),
        (
            header(GsoType::Other(9), &tcp4, 16),
            &tcp4,
            GsoError::VirtioUnsupportedType(9),
        ),
    ];
    for (hdr, l, err) in cases {
        assert_eq!(GsoParams::from_virtio(&hdr, l), Err(err), "{hdr:?}");
    }
}

#[test]
fn ufo_and_uso_headers() {
    let udp4 = layout(&build(&Spec::udp4(5000)));
    let uso = GsoParams::from_virtio(&header(GsoType::UdpL4, &udp4, 6), &udp4).unwrap();
    assert_eq!(uso.kind, GsoKind::Udp);
    let hdr = Header {
        flags: Flags::NONE,
        ..header(GsoType::Udp, &udp4, 6)
    };
    let ufo = GsoParams::from_virtio(&hdr, &udp4).unwrap();
    assert_eq!(
        (ufo.kind, ufo.checksum),
        (GsoKind::UdpFragment, L4Checksum::Full)
    );
}
