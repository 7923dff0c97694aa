//! `ofl_gso_segment_get_bulk` (ABI 1.3): every segment of the last GSO call at once,
//! headers written into caller buffers. Differential: flat input read one segment at a
//! time (`ofl_gso_segment_get`) against the bulk read, of flat and of chained input cut
//! anywhere (inside headers too), in any slices of the segment range; and the bulk
//! call's refusals, which write nothing.
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

/// Segments `frame` whole (or, with `cuts`, as a chain) and returns the count.
fn segment(gso: *mut ofl_gso, frame: &[u8], mss: u16, flags: u32, cuts: Option<&[usize]>) -> i32 {
    let vnet = tso_vnet(mss);
    match cuts {
        None => unsafe { ofl_gso_segment(gso, frame.as_ptr(), frame.len(), &vnet, flags) },
        Some(cuts) => {
            let iov = iovecs(frame, cuts);
            unsafe { ofl_gso_segment_chain(gso, iov.as_ptr(), iov.len(), &vnet, flags) }
        }
    }
}

/// The segments of the last call, one `ofl_gso_segment_get` each (the reference).
fn one_by_one(gso: *mut ofl_gso) -> Vec<Seg> {
    let n = unsafe { ofl_gso_count(gso) } as usize;
    (0..n)
        .map(|i| {
            let mut s = unsafe { core::mem::zeroed::<ofl_gso_seg>() };
            assert_eq!(unsafe { ofl_gso_segment_get(gso, i, &mut s) }, 0);
            seg_of(&s)
        })
        .collect()
}

/// The segments of the last call read in bulk, `step` at a time, headers into caller
/// buffers of `cap` bytes (or left in the handle without `cap`).
fn in_bulk(gso: *mut ofl_gso, step: usize, cap: Option<usize>) -> Vec<Seg> {
    let n = unsafe { ofl_gso_count(gso) } as usize;
    let mut out = Vec::new();
    let mut first = 0;
    while first < n {
        let mut segs = vec![unsafe { core::mem::zeroed::<ofl_gso_seg>() }; step];
        let mut bufs: Vec<Vec<u8>> = vec![vec![0xee; cap.unwrap_or(0)]; step];
        let ptrs: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
        let headers = if cap.is_some() { ptrs.as_ptr() } else { null() };
        let got = unsafe {
            ofl_gso_segment_get_bulk(gso, first, segs.as_mut_ptr(), step, headers, cap.unwrap_or(0))
        };
        assert_eq!(got as usize, step.min(n - first));
        for (i, s) in segs[..got as usize].iter().enumerate() {
            if cap.is_some() {
                assert_eq!(s.header, ptrs[i].cast_const(), "header not in the caller's buffer");
            }
            out.push(seg_of(s));
        }
        first += got as usize;
    }
    assert_eq!(unsafe { ofl_gso_segment_get_bulk(gso, n, null_mut(), 0, null(), 0) }, 0);
    out
}

fn super_packet(payload: usize) -> Vec<u8> {
    tcp4_frame(40000, 1, 7, payload, 0x18, false)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Flat, chained (cut anywhere, headers included) and bulk reads give the same
    /// segments, header bytes and checksum fields, with and without software checksums.
    #[test]
    fn bulk_equals_one_by_one_flat_and_chained(
        payload in 1usize..9000,
        mss in 200u16..1500,
        full in any::<bool>(),
        step in 1usize..12,
        mut cuts in proptest::collection::vec(0usize..9054, 0..8),
    ) {
        let frame = super_packet(payload);
        let flags = if full { OFL_GSO_FULL_CSUM } else { 0 };
        cuts.iter_mut().for_each(|c| *c %= frame.len() + 1);
        cuts.sort_unstable();
        let gso = new_gso();
        let n = segment(gso, &frame, mss, flags, None);
        prop_assert!(n > 0);
        let reference = one_by_one(gso);
        prop_assert_eq!(&in_bulk(gso, step, Some(64)), &reference);
        prop_assert_eq!(&in_bulk(gso, step, None), &reference);
        prop_assert_eq!(segment(gso, &frame, mss, flags, Some(&cuts)), n);
        prop_assert_eq!(&in_bulk(gso, step, Some(54)), &reference);
        unsafe { ofl_gso_free(gso) };
    }
}

/// A small chain cut inside the headers, read in bulk two at a time: the case Miri runs
/// over the bulk read's raw-pointer writes (`make test-engine-checks`).
#[test]
fn bulk_read_of_a_small_chain_matches_one_by_one() {
    let frame = super_packet(2500);
    let gso = new_gso();
    assert_eq!(segment(gso, &frame, 1000, OFL_GSO_FULL_CSUM, None), 3);
    let reference = one_by_one(gso);
    assert_eq!(segment(gso, &frame, 1000, OFL_GSO_FULL_CSUM, Some(&[10, 60, 1000])), 3);
    assert_eq!(in_bulk(gso, 2, Some(54)), reference);
    assert_eq!(in_bulk(gso, 3, None), reference);
    unsafe { ofl_gso_free(gso) };
}

/// Refusals are typed and write nothing: a `first` past the count, a NULL array or
/// buffer, a buffer shorter than the longest header.
#[test]
fn bulk_refusals_write_nothing() {
    let frame = super_packet(4000);
    let gso = new_gso();
    assert_eq!(segment(gso, &frame, 1000, 0, None), 4);
    let mut segs = vec![unsafe { core::mem::zeroed::<ofl_gso_seg>() }; 4];
    let mut bufs = vec![vec![0xeeu8; 64]; 4];
    let mut ptrs: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
    let bulk = |first, segs: *mut ofl_gso_seg, ptrs: *const *mut u8, cap| unsafe {
        ofl_gso_segment_get_bulk(gso, first, segs, 4, ptrs, cap)
    };
    assert_eq!(bulk(5, segs.as_mut_ptr(), ptrs.as_ptr(), 64), ofl_status::OFL_ERR_INVALID_ARGUMENT as i32);
    assert_eq!(bulk(0, null_mut(), ptrs.as_ptr(), 64), ofl_status::OFL_ERR_NULL as i32);
    assert_eq!(bulk(0, segs.as_mut_ptr(), ptrs.as_ptr(), 53), ofl_status::OFL_ERR_BUFFER_TOO_SMALL as i32);
    ptrs[3] = null_mut();
    assert_eq!(bulk(0, segs.as_mut_ptr(), ptrs.as_ptr(), 64), ofl_status::OFL_ERR_NULL as i32);
    assert!(bufs.iter().all(|b| b.iter().all(|&x| x == 0xee)), "a refused call wrote a header");
    assert!(segs.iter().all(|s| s.header.is_null() && s.header_len == 0), "a refused call wrote a descriptor");
    // A failed segmentation leaves no segments to read.
    let vnet = tso_vnet(0);
    assert!(unsafe { ofl_gso_segment(gso, frame.as_ptr(), frame.len(), &vnet, 0) } < 0);
    assert_eq!(bulk(0, segs.as_mut_ptr(), null(), 0), 0);
    assert_eq!(bulk(1, segs.as_mut_ptr(), null(), 0), ofl_status::OFL_ERR_INVALID_ARGUMENT as i32);
    assert!(ofl_abi_version() >> 16 == 1 && ofl_abi_version() & 0xffff >= 3, "the bulk read came with ABI 1.3");
    unsafe { ofl_gso_free(gso) };
}
