//! Headers written straight into the caller's buffers (`segment_chain_into`): the same
//! segments and header bytes as `segment`, in the targets when the fast path takes the
//! shape and they fit, and not a byte of any target written otherwise. Small cases, so
//! Miri runs them over `HeaderTargets`' raw-pointer writes (`make test-engine-checks`).

use super::*;
use crate::chain::ChainFrame;

/// Segments `frame` into `targets` buffers of `cap` bytes (filled with 0xee first);
/// returns the output and the buffers.
fn into_targets(frame: &[u8], params: &GsoParams, targets: usize, cap: usize) -> (GsoOutput, Vec<Vec<u8>>) {
    let mut bufs = vec![vec![0xeeu8; cap]; targets];
    let ptrs: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
    let mut out = GsoOutput::new();
    // SAFETY: each pointer is `cap` writable bytes of its own Vec, alive until after the
    // call, apart from the frame and the output.
    let targets = unsafe { HeaderTargets::new(&ptrs, cap) };
    segment_chain_into(&ChainFrame::whole(frame), &layout(frame), params, &mut out, targets).unwrap();
    (out, bufs)
}

/// Each segment's header and payload range, read from the output.
fn reference(frame: &[u8], params: &GsoParams) -> Vec<(Vec<u8>, core::ops::Range<usize>)> {
    let out = run(frame, params).unwrap();
    out.iter().map(|s| (s.header.to_vec(), s.payload)).collect()
}

#[test]
fn tcp_headers_land_in_the_targets_byte_for_byte() {
    for params in [GsoParams::tcp(1000), GsoParams { checksum: L4Checksum::Partial, ..GsoParams::tcp(700) }] {
        let frame = build(&Spec::tcp4(3100));
        let want = reference(&frame, &params);
        let (out, bufs) = into_targets(&frame, &params, want.len() + 1, 80);
        assert!(out.headers_in_targets());
        assert_eq!(out.len(), want.len());
        assert_eq!(out.header_bytes(), 0, "a header was also written into the output");
        for (i, (header, payload)) in want.iter().enumerate() {
            assert_eq!(&bufs[i][..header.len()], &header[..], "segment {i}'s header");
            assert!(bufs[i][header.len()..].iter().all(|&b| b == 0xee), "segment {i} wrote past its header");
            assert_eq!(out.payloads().nth(i), Some(payload.clone()));
            assert_eq!(out.longest_header(), header.len());
        }
        assert!(bufs[want.len()].iter().all(|&b| b == 0xee), "the spare target was written");
        assert!(out.iter().all(|s| s.header.is_empty()), "the output names no header bytes of its own");
    }
}

#[test]
fn a_tunnel_on_the_fast_path_lands_in_the_targets_too() {
    let frame = build(&Spec::tcp4(2500).encap(Encap::Vxlan, true));
    let params = GsoParams { checksum: L4Checksum::Partial, ..GsoParams::tcp(1000) };
    let want = reference(&frame, &params);
    let (out, bufs) = into_targets(&frame, &params, want.len(), 256);
    assert!(out.headers_in_targets());
    for (i, (header, _)) in want.iter().enumerate() {
        assert_eq!(&bufs[i][..header.len()], &header[..], "segment {i}'s header");
    }
}

#[test]
fn too_few_or_too_short_targets_are_not_written_and_the_output_holds_the_headers() {
    let frame = build(&Spec::tcp4(3100));
    let params = GsoParams::tcp(1000);
    let want = reference(&frame, &params);
    let hlen = want[0].0.len();
    for (targets, cap) in [(want.len() - 1, 80), (want.len(), hlen - 1), (0, 0)] {
        let (out, bufs) = into_targets(&frame, &params, targets, cap);
        assert!(!out.headers_in_targets(), "{targets} targets of {cap} bytes");
        assert!(bufs.iter().all(|b| b.iter().all(|&x| x == 0xee)), "a target was written");
        let got: Vec<_> = out.iter().map(|s| (s.header.to_vec(), s.payload)).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn shapes_off_the_fast_path_keep_their_headers_in_the_output() {
    // UDP segmentation (USO) is not the TCP fast path.
    let frame = build(&Spec::udp4(3000));
    let params = GsoParams { kind: GsoKind::Udp, ..GsoParams::tcp(1000) };
    let want = reference(&frame, &params);
    let (out, bufs) = into_targets(&frame, &params, want.len(), 80);
    assert!(!out.headers_in_targets());
    assert!(bufs.iter().all(|b| b.iter().all(|&x| x == 0xee)), "a target was written");
    assert_eq!(out.iter().map(|s| (s.header.to_vec(), s.payload)).collect::<Vec<_>>(), want);
}

#[test]
fn the_next_call_without_targets_owns_its_headers_again() {
    let frame = build(&Spec::tcp4(3100));
    let params = GsoParams::tcp(1000);
    let (mut out, _bufs) = into_targets(&frame, &params, 4, 80);
    assert!(out.headers_in_targets());
    segment(&frame, &layout(&frame), &params, &mut out).unwrap();
    assert!(!out.headers_in_targets());
    assert_eq!(out.iter().map(|s| (s.header.to_vec(), s.payload)).collect::<Vec<_>>(), reference(&frame, &params));
}
