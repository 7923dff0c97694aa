//! `ofl_gso_segment_bulk` (ABI 1.4): segmenting and reading every segment in one call,
//! headers written straight into the caller's buffers. Differential: the flat call
//! read one segment at a time (`ofl_gso_segment` + `ofl_gso_segment_get`), the chained
//! call (`ofl_gso_segment_chain`, cut anywhere, headers included) and this call on the
//! same frame cut the same way give the same segments, header bytes and checksum
//! fields; its refusals are typed and write nothing; after it the handle describes the
//! segments it keeps (count, lengths, payload pieces) and refuses header reads.
use core::ptr::{null, null_mut};

use offlab_engine_c::*;
use proptest::prelude::*;

mod common;
use common::{iovecs, tcp4_frame, tso_vnet};

/// One segment as bytes: its header, where its payload lies, and its checksum fields.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seg {
    header: Vec<u8>,
    payload: (usize, usize),
    csum: (u8, u16, u16),
}

fn seg_of(s: &ofl_gso_seg) -> Seg {
    Seg {
        header: unsafe { core::slice::from_raw_parts(s.header, s.header_len) }.to_vec(),
        payload: (s.payload_offset, s.payload_len),
        csum: (s.csum_partial, s.csum_start, s.csum_offset),
    }
}

fn new_gso() -> *mut ofl_gso {
    let mut gso = null_mut();
    assert_eq!(unsafe { ofl_gso_new(null(), &mut gso) }, 0);
    gso
}

fn zeroed_segs(n: usize) -> Vec<ofl_gso_seg> {
    vec![unsafe { core::mem::zeroed::<ofl_gso_seg>() }; n]
}

/// The segments of the last call, one `ofl_gso_segment_get` each.
fn one_by_one(gso: *mut ofl_gso) -> Vec<Seg> {
    let n = unsafe { ofl_gso_count(gso) } as usize;
    (0..n)
        .map(|i| {
            let mut s = zeroed_segs(1);
            assert_eq!(unsafe { ofl_gso_segment_get(gso, i, s.as_mut_ptr()) }, 0);
            seg_of(&s[0])
        })
        .collect()
}

/// The flat reference, then the chained call read one by one.
fn flat_and_chained(frame: &[u8], cuts: &[usize], mss: u16, flags: u32) -> (Vec<Seg>, Vec<Seg>) {
    let gso = new_gso();
    let vnet = tso_vnet(mss);
    assert!(unsafe { ofl_gso_segment(gso, frame.as_ptr(), frame.len(), &vnet, flags) } > 0);
    let flat = one_by_one(gso);
    let iov = iovecs(frame, cuts);
    assert!(unsafe { ofl_gso_segment_chain(gso, iov.as_ptr(), iov.len(), &vnet, flags) } > 0);
    let chained = one_by_one(gso);
    unsafe { ofl_gso_free(gso) };
    (flat, chained)
}

/// `ofl_gso_segment_bulk` on `frame` cut at `cuts`, `room` descriptors and header
/// buffers of `cap` bytes (filled with 0xee first): the return code, the segments it
/// described, and the buffers.
fn bulk(gso: *mut ofl_gso, frame: &[u8], cuts: &[usize], mss: u16, flags: u32, room: usize, cap: usize) -> (i32, Vec<Seg>, Vec<Vec<u8>>) {
    let vnet = tso_vnet(mss);
    let iov = iovecs(frame, cuts);
    let mut segs = zeroed_segs(room);
    let mut bufs = vec![vec![0xeeu8; cap]; room];
    let ptrs: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
    let rc = unsafe {
        ofl_gso_segment_bulk(gso, iov.as_ptr(), iov.len(), &vnet, flags, segs.as_mut_ptr(), room, ptrs.as_ptr(), cap)
    };
    let n = usize::try_from(rc).unwrap_or(0);
    for (s, &p) in segs[..n].iter().zip(&ptrs) {
        assert_eq!(s.header, p.cast_const(), "a header is not in its caller buffer");
    }
    let described = segs[..n].iter().map(seg_of).collect();
    (rc, described, bufs)
}

fn super_packet(payload: usize) -> Vec<u8> {
    tcp4_frame(40000, 1, 7, payload, 0x18, false)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Flat, chained and bulk (the frame cut anywhere, inside headers too) give the
    /// same segments, header bytes and checksum fields, with and without software
    /// checksums, and no buffer is written past its header.
    #[test]
    fn bulk_equals_flat_and_chained(
        payload in 1usize..9000,
        mss in 200u16..1500,
        full in any::<bool>(),
        spare in 0usize..3,
        mut cuts in proptest::collection::vec(0usize..9054, 0..8),
    ) {
        let frame = super_packet(payload);
        let flags = if full { OFL_GSO_FULL_CSUM } else { 0 };
        cuts.iter_mut().for_each(|c| *c %= frame.len() + 1);
        cuts.sort_unstable();
        let (flat, chained) = flat_and_chained(&frame, &cuts, mss, flags);
        prop_assert_eq!(&chained, &flat);
        let gso = new_gso();
        let (rc, got, bufs) = bulk(gso, &frame, &cuts, mss, flags, flat.len() + spare, 64);
        prop_assert_eq!(rc as usize, flat.len());
        prop_assert_eq!(&got, &flat);
        for (i, s) in flat.iter().enumerate() {
            prop_assert!(bufs[i][s.header.len()..].iter().all(|&b| b == 0xee), "segment {} wrote past its header", i);
        }
        prop_assert!(bufs[flat.len()..].iter().all(|b| b.iter().all(|&x| x == 0xee)), "a spare buffer was written");
        unsafe { ofl_gso_free(gso) };
    }
}

/// A small chain cut inside the headers: the case Miri runs over the call's raw-pointer
/// writes (`make test-engine-checks`).
#[test]
fn segment_bulk_of_a_small_chain_matches_flat_and_chained() {
    let frame = super_packet(2500);
    let cuts = [10, 60, 1000];
    let (flat, chained) = flat_and_chained(&frame, &cuts, 1000, OFL_GSO_FULL_CSUM);
    assert_eq!(chained, flat);
    let gso = new_gso();
    let (rc, got, _) = bulk(gso, &frame, &cuts, 1000, OFL_GSO_FULL_CSUM, 3, 54);
    assert_eq!((rc, got), (3, flat));
    unsafe { ofl_gso_free(gso) };
}

/// Refusals are typed and write nothing: NULL arrays or a NULL buffer, too few
/// descriptors, buffers shorter than a header; a failed segmentation too.
#[test]
fn segment_bulk_refusals_write_nothing() {
    let frame = super_packet(4000);
    let gso = new_gso();
    let vnet = tso_vnet(1000);
    let iov = iovecs(&frame, &[]);
    let mut segs = zeroed_segs(4);
    let mut bufs = vec![vec![0xeeu8; 64]; 4];
    let mut ptrs: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
    let call = |vnet: &ofl_vnet_hdr, segs: *mut ofl_gso_seg, n, ptrs: *const *mut u8, cap| unsafe {
        ofl_gso_segment_bulk(gso, iov.as_ptr(), iov.len(), vnet, 0, segs, n, ptrs, cap)
    };
    let null_code = ofl_status::OFL_ERR_NULL as i32;
    let small = ofl_status::OFL_ERR_BUFFER_TOO_SMALL as i32;
    assert_eq!(call(&vnet, null_mut(), 4, ptrs.as_ptr(), 64), null_code);
    assert_eq!(call(&vnet, segs.as_mut_ptr(), 4, null(), 64), null_code);
    assert_eq!(call(&vnet, segs.as_mut_ptr(), 3, ptrs.as_ptr(), 64), small);
    assert_eq!(unsafe { ofl_gso_count(gso) }, 4, "a refusal for room still describes the segments");
    assert_eq!(call(&vnet, segs.as_mut_ptr(), 4, ptrs.as_ptr(), 53), small);
    assert_eq!(one_by_one(gso).len(), 4, "the headers stay readable from the handle then");
    assert!(call(&tso_vnet(0), segs.as_mut_ptr(), 4, ptrs.as_ptr(), 64) < 0);
    assert_eq!(unsafe { ofl_gso_count(gso) }, 0);
    ptrs[3] = null_mut();
    assert_eq!(call(&vnet, segs.as_mut_ptr(), 4, ptrs.as_ptr(), 64), null_code);
    assert!(bufs.iter().all(|b| b.iter().all(|&x| x == 0xee)), "a refused call wrote a header");
    assert!(segs.iter().all(|s| s.header.is_null() && s.header_len == 0), "a refused call wrote a descriptor");
    unsafe { ofl_gso_free(gso) };
}

/// After the call the handle keeps the count, the lengths and the payload pieces, and
/// refuses to read headers it does not hold; the next call of another kind reads again.
#[test]
fn after_segment_bulk_the_handle_describes_what_it_keeps() {
    let frame = super_packet(4000);
    let gso = new_gso();
    let (rc, got, _) = bulk(gso, &frame, &[30, 2000], 1000, 0, 4, 64);
    assert_eq!(rc, 4);
    assert_eq!(unsafe { ofl_gso_count(gso) }, 4);
    let mut total = 0usize;
    assert_eq!(unsafe { ofl_gso_total_len(gso, &mut total) }, 0);
    assert_eq!(total, 4 * 54 + 4000);
    let mut pieces = [ofl_chain_piece { iov_index: 0, offset: 0, len: 0 }; 4];
    // Segment 1's payload (bytes 1054..2054 of the frame) spans the cut at 2000.
    assert_eq!(unsafe { ofl_gso_segment_pieces(gso, 1, pieces.as_mut_ptr(), 4) }, 2);
    assert_eq!(pieces[..2], [ofl_chain_piece { iov_index: 1, offset: 1024, len: 946 }, ofl_chain_piece { iov_index: 2, offset: 0, len: 54 }]);
    assert_eq!(got[1].payload, (1054, 1000));
    let mut seg = zeroed_segs(1);
    let invalid = ofl_status::OFL_ERR_INVALID_ARGUMENT as i32;
    assert_eq!(unsafe { ofl_gso_segment_get(gso, 0, seg.as_mut_ptr()) }, invalid);
    assert_eq!(unsafe { ofl_gso_segment_get_bulk(gso, 0, seg.as_mut_ptr(), 1, null(), 0) }, invalid);
    let vnet = tso_vnet(1000);
    assert_eq!(unsafe { ofl_gso_segment(gso, frame.as_ptr(), frame.len(), &vnet, 0) }, 4);
    assert_eq!(one_by_one(gso), got);
    assert!(ofl_abi_version() >> 16 == 1 && ofl_abi_version() & 0xffff >= 4, "the call came with ABI 1.4");
    unsafe { ofl_gso_free(gso) };
}
