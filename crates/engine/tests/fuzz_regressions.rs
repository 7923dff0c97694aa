//! Minimised reproducers of fuzzing findings (`crates/engine/fuzz`), as plain tests.
//! Each stays as a test once fixed; a finding not fixed yet would be `#[ignore]`d with
//! a comment saying what is wrong.

#[path = "../src/gro/tests/builder.rs"]
mod builder;

use builder::Pkt;
use offlab_engine::gro::{Gro, GroConfig, Merged, RxMeta};
use offlab_engine::gso::{self, GsoOutput, GsoParams};
use offlab_engine::virtio::GsoType;
use offlab_engine::wire::parse_frame;

/// Segments `frame` with `params`, pushes every segment through one GRO and returns
/// the merged packets (header + payload) with their virtio-net headers.
fn gso_then_gro(frame: &[u8], params: &GsoParams) -> Vec<(Vec<u8>, offlab_engine::virtio::Header)> {
    let layout = parse_frame(frame).expect("parses");
    let mut out = GsoOutput::new();
    gso::segment(frame, &layout, params, &mut out).expect("segments");
    let segments: Vec<Vec<u8>> = out
        .iter()
        .map(|s| [s.header, s.payload_slice(frame)].concat())
        .collect();
    let mut gro = Gro::new(GroConfig::default());
    let mut merged = Vec::new();
    let mut collect = |m: Merged<'_>| {
        let mut bytes = m.header.to_vec();
        for p in m.parts {
            bytes.extend_from_slice(
                &segments[p.id as usize][p.payload()],
            );
        }
        merged.push((bytes, m.vnet));
    };
    let meta = RxMeta {
        csum_validated: false,
        now: 0,
    };
    for (id, s) in segments.iter().enumerate() {
        gro.push(id as u64, s, meta, &mut collect)
            .expect("every segment joins the run");
    }
    gro.flush(&mut collect);
    merged
}

/// Finding (fuzz target `gso_gro_roundtrip`): GRO emits a virtio-net header that
/// `virtio::Header::validate` refuses.
///
/// A TCP/IPv4 super-packet whose IP packet is 65535 bytes (Ethernet 14 + IPv4 20 + TCP
/// 32 + 65483 payload), cut by GSO with a segment size of 65480: two segments (IP
/// lengths 65532 and 55), both valid. GRO merges them back into the 65535-byte IP
/// packet and describes it as TCPV4, gso_size 65480, hdr_len 66. Validating that
/// header against that very packet fails with `GsoSizeTooLarge`, because `validate`
/// requires `headers_len + gso_size <= 65535` with `headers_len` counting the
/// Ethernet header (and, for tunnels, every outer header): it bounds the first
/// segment's *frame* length, not its IP length (65532 here). Expected: `Ok` (or GRO
/// never producing a header its own validation refuses). A one-line fix would compare
/// `headers_len - layout.l2_len + gso_size` (the outermost IP length of the first
/// segment) in `virtio/validate.rs`. Fixed that way: the bound is on the first
/// segment's outermost IP packet.
#[test]
fn gro_vnet_header_of_a_64k_run_validates() {
    let mut pkt = Pkt::tcp4(1, 65535 - 20 - 32);
    pkt.flags = builder::ACK;
    let frame = pkt.build();
    let layout = parse_frame(&frame).expect("parses");
    assert_eq!(layout.ip.end - layout.ip.offset, 65535);
    let merged = gso_then_gro(&frame, &GsoParams::tcp(65480));
    assert_eq!(merged.len(), 1);
    let (packet, vnet) = &merged[0];
    assert_eq!(packet.len(), frame.len());
    assert_eq!(vnet.gso_type, GsoType::TcpV4);
    assert_eq!(vnet.gso_size, 65480);
    assert_eq!(vnet.hdr_len, 66);
    let result = vnet.validate(packet, None);
    assert!(result.is_ok(), "GRO's own header refused: {result:?}");
}
