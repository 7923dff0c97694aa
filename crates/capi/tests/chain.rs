//! Chained input through the C API (ABI 1.2): `ofl_gro_push_chain` and
//! `ofl_gso_segment_chain` give exactly what the contiguous calls give on the
//! concatenated bytes, wherever the chain is cut (inside headers, at odd offsets, with
//! empty iovecs); `ofl_gso_segment_pieces` maps each segment's payload back onto the
//! chain; bad chains get typed codes.
use core::ffi::{c_void, CStr};
use core::ptr::{null, null_mut};

use offlab_engine_c::*;

mod common;
use common::{iovecs, tcp4_frame, tso_vnet};

/// A frame of flow `flow` with correct checksums (the chained GRO tests have them
/// verified, not trusted).
fn tcp4(flow: u16, seq: u32, ip_id: u16, payload: usize, flags: u8) -> Vec<u8> {
    tcp4_frame(40000 + flow, seq, ip_id, payload, flags, true)
}

const ACK: u8 = 0x10;
const PSH: u8 = 0x08;

/// Cut sets: none, inside the Ethernet/IP/TCP headers, at odd payload offsets, empty
/// iovecs (repeated cuts, a cut at 0 and at the end).
fn cut_sets(len: usize) -> Vec<Vec<usize>> {
    let mut sets = vec![
        vec![],
        vec![0],
        vec![13],
        vec![1, 2, 3, 33, 34, 53],
        vec![54, 54],
        vec![20, 21, 301, 302, 303],
        vec![7, 55, 555, len],
    ];
    // Many iovecs (at most 100 cuts: `OFL_CHAIN_MAX_IOV` is 128).
    sets.push((1..len).step_by((len / 100).max(1)).collect());
    sets.iter_mut().for_each(|s| s.retain(|&c| c <= len));
    sets
}

unsafe extern "C" fn record(user: *mut c_void, merged: *const ofl_gro_merged) {
    let said = unsafe { &mut *(user as *mut Vec<String>) };
    let m = unsafe { &*merged };
    let header = unsafe { core::slice::from_raw_parts(m.header, m.header_len) };
    let parts = unsafe { core::slice::from_raw_parts(m.parts, m.n_parts) };
    let parts: Vec<_> = parts.iter().map(|p| (p.id, p.payload_offset, p.payload_len)).collect();
    said.push(format!(
        "{header:?} {parts:?} {:?} {} {} {}",
        m.vnet, m.segments, m.end, m.end_reason
    ));
}

/// Verdicts, reasons, delivered runs and counters of one table fed `frames`, each
/// pushed whole or (with `cuts`) as a chain.
fn gro_transcript(frames: &[Vec<u8>], flags: u32, cuts: Option<&[usize]>) -> Vec<String> {
    let mut gro = null_mut();
    assert_eq!(unsafe { ofl_gro_new(null(), &mut gro) }, 0);
    let mut said: Vec<String> = Vec::new();
    let user = &mut said as *mut Vec<String> as *mut c_void;
    for (id, f) in frames.iter().enumerate() {
        let mut reason = u32::MAX;
        let rc = unsafe {
            match cuts {
                None => ofl_gro_push(gro, id as u64, f.as_ptr(), f.len(), flags, 0, Some(record), user, &mut reason),
                Some(cuts) => {
                    let cuts: Vec<usize> = cuts.iter().map(|&c| c.min(f.len())).collect();
                    let iov = iovecs(f, &cuts);
                    ofl_gro_push_chain(gro, id as u64, iov.as_ptr(), iov.len(), flags, 0, Some(record), user, &mut reason)
                }
            }
        };
        unsafe { (*(user as *mut Vec<String>)).push(format!("verdict {rc} reason {reason}")) };
    }
    assert!(unsafe { ofl_gro_flush(gro, Some(record), user) } >= 0);
    let mut stats = core::mem::MaybeUninit::<ofl_gro_stats>::uninit();
    assert_eq!(unsafe { ofl_gro_get_stats(gro, stats.as_mut_ptr()) }, 0);
    said.push(format!("{:?}", unsafe { stats.assume_init() }));
    unsafe { ofl_gro_free(gro) };
    said
}

#[test]
fn gro_push_chain_decides_as_push_on_the_concatenated_bytes() {
    let mut frames = Vec::new();
    for flow in 0..3u16 {
        // Odd payload sizes put every later cut at an odd offset of the checksum.
        let size = [1001, 700, 1447][usize::from(flow)];
        for k in 0..6u32 {
            let flags = if k == 5 { ACK | PSH } else { ACK };
            frames.push(tcp4(flow, 1 + k * size as u32, k as u16, size, flags));
        }
    }
    let mut bad = tcp4(7, 1, 0, 999, ACK);
    bad[700] ^= 0x40; // payload byte: the TCP checksum no longer verifies
    frames.push(bad);
    frames.push(tcp4(8, 1, 0, 100, ACK)[..40].to_vec()); // cut inside the IP header
    let longest = frames.iter().map(Vec::len).max().unwrap();
    for flags in [0, OFL_RX_CSUM_VALIDATED] {
        let whole = gro_transcript(&frames, flags, None);
        assert!(whole.iter().any(|s| s.contains(&format!("reason {}", ofl_gro_reason::OFL_GRO_REASON_BAD_L4_CHECKSUM as u32))) || flags != 0);
        for cuts in cut_sets(longest) {
            assert_eq!(gro_transcript(&frames, flags, Some(&cuts)), whole, "cuts {cuts:?} flags {flags}");
        }
    }
}

/// Everything the segments of the last call say: headers, payload ranges, checksum
/// fields.
fn segments(gso: *mut ofl_gso, n: i32) -> Vec<String> {
    (0..n.max(0) as usize)
        .map(|i| {
            let mut seg = core::mem::MaybeUninit::<ofl_gso_seg>::uninit();
            assert_eq!(unsafe { ofl_gso_segment_get(gso, i, seg.as_mut_ptr()) }, 0);
            let s = unsafe { seg.assume_init() };
            let header = unsafe { core::slice::from_raw_parts(s.header, s.header_len) };
            format!("{header:?} {} {} {} {} {}", s.payload_offset, s.payload_len, s.csum_partial, s.csum_start, s.csum_offset)
        })
        .collect()
}

#[test]
fn gso_segment_chain_gives_the_segments_of_the_concatenated_bytes() {
    let mut gso = null_mut();
    assert_eq!(unsafe { ofl_gso_new(null(), &mut gso) }, 0);
    let frame = tcp4(0, 1, 0, 1448 * 20 + 333, ACK | PSH);
    let mut truncated = frame.clone();
    truncated.truncate(30_000);
    for f in [&frame, &truncated] {
        for flags in [0, OFL_GSO_FULL_CSUM, OFL_GSO_FULL_CSUM | OFL_GSO_FIXED_IP_ID] {
            for mss in [1448u16, 1001] {
                let vnet = tso_vnet(mss);
                let n = unsafe { ofl_gso_segment(gso, f.as_ptr(), f.len(), &vnet, flags) };
                let whole = (n, segments(gso, n));
                for cuts in cut_sets(f.len()) {
                    let iov = iovecs(f, &cuts);
                    let n = unsafe { ofl_gso_segment_chain(gso, iov.as_ptr(), iov.len(), &vnet, flags) };
                    assert_eq!((n, segments(gso, n)), whole, "cuts {cuts:?} flags {flags} mss {mss}");
                    check_pieces(gso, n, f, &iov);
                }
            }
        }
    }
    unsafe { ofl_gso_free(gso) };
}

/// Each segment's payload, gathered from the chain by `ofl_gso_segment_pieces`, is
/// the frame's bytes at the segment's payload offset.
fn check_pieces(gso: *mut ofl_gso, n: i32, frame: &[u8], iov: &[ofl_iovec]) {
    for i in 0..n.max(0) as usize {
        let mut seg = core::mem::MaybeUninit::<ofl_gso_seg>::uninit();
        assert_eq!(unsafe { ofl_gso_segment_get(gso, i, seg.as_mut_ptr()) }, 0);
        let seg = unsafe { seg.assume_init() };
        let count = unsafe { ofl_gso_segment_pieces(gso, i, null_mut(), 0) };
        assert!(count >= 1);
        let mut pieces = vec![ofl_chain_piece { iov_index: 0, offset: 0, len: 0 }; count as usize];
        assert_eq!(unsafe { ofl_gso_segment_pieces(gso, i, pieces.as_mut_ptr(), pieces.len()) }, count);
        let mut payload = Vec::new();
        for p in &pieces {
            let v = iov[p.iov_index as usize];
            assert!(p.len > 0 && (p.offset + p.len) as usize <= v.len);
            let bytes = unsafe { core::slice::from_raw_parts(v.base, v.len) };
            payload.extend_from_slice(&bytes[p.offset as usize..(p.offset + p.len) as usize]);
        }
        assert_eq!(payload, &frame[seg.payload_offset..seg.payload_offset + seg.payload_len]);
    }
}

#[test]
fn bad_chains_get_typed_codes() {
    let frame = tcp4(0, 1, 0, 3000, ACK);
    let vnet = tso_vnet(1000);
    let (mut gro, mut gso) = (null_mut(), null_mut());
    assert_eq!(unsafe { ofl_gro_new(null(), &mut gro) }, 0);
    assert_eq!(unsafe { ofl_gso_new(null(), &mut gso) }, 0);
    let mut said: Vec<String> = Vec::new();
    let user = &mut said as *mut Vec<String> as *mut c_void;
    let push = |iov: *const ofl_iovec, n: usize| unsafe {
        ofl_gro_push_chain(gro, 1, iov, n, 0, 0, Some(record), user, null_mut())
    };
    let segment = |iov: *const ofl_iovec, n: usize| unsafe { ofl_gso_segment_chain(gso, iov, n, &vnet, 0) };
    let good = iovecs(&frame, &[10, 10, 100]);
    let null_base = [ofl_iovec { base: null(), len: 5 }, good[0]];
    let empty_null = [good[0], ofl_iovec { base: null(), len: 0 }, good[2], good[3]];
    let many = vec![ofl_iovec { base: null(), len: 0 }; OFL_CHAIN_MAX_IOV + 1];
    let calls: [&dyn Fn(*const ofl_iovec, usize) -> i32; 2] = [&push, &segment];
    for call in calls {
        assert_eq!(call(good.as_ptr(), 0), ofl_status::OFL_ERR_INVALID_ARGUMENT as i32);
        assert_eq!(call(null(), 3), ofl_status::OFL_ERR_NULL as i32);
        assert_eq!(call(null_base.as_ptr(), 2), ofl_status::OFL_ERR_NULL as i32);
        assert_eq!(call(many.as_ptr(), many.len()), ofl_status::OFL_ERR_TOO_MANY_IOVECS as i32);
        assert!(call(empty_null.as_ptr(), 4) >= 0, "an empty iovec may have a NULL base");
        // The most iovecs allowed: empty ones and the frame in the last.
        let mut most = vec![ofl_iovec { base: null(), len: 0 }; OFL_CHAIN_MAX_IOV];
        most[OFL_CHAIN_MAX_IOV - 1] = ofl_iovec { base: frame.as_ptr(), len: frame.len() };
        assert!(call(most.as_ptr(), most.len()) >= 0);
    }
    let no_cb = unsafe { ofl_gro_push_chain(gro, 1, good.as_ptr(), good.len(), 0, 0, None, null_mut(), null_mut()) };
    assert_eq!(no_cb, ofl_status::OFL_ERR_NULL as i32);
    let flags = unsafe { ofl_gro_push_chain(gro, 1, good.as_ptr(), good.len(), 1 << 30, 0, Some(record), user, null_mut()) };
    assert_eq!(flags, ofl_status::OFL_ERR_INVALID_ARGUMENT as i32);
    assert_eq!(unsafe { ofl_gso_segment_chain(null_mut(), good.as_ptr(), good.len(), &vnet, 0) }, ofl_status::OFL_ERR_NULL as i32);
    assert_eq!(unsafe { ofl_gso_segment_chain(gso, good.as_ptr(), good.len(), null(), 0) }, ofl_status::OFL_ERR_NULL as i32);

    // Pieces: sized with 0, too small, NULL, out of range, after a failed call.
    assert_eq!(segment(good.as_ptr(), good.len()), 3);
    let mut one = [ofl_chain_piece { iov_index: 9, offset: 9, len: 9 }];
    assert_eq!(unsafe { ofl_gso_segment_pieces(gso, 1, null_mut(), 0) }, 1);
    assert_eq!(unsafe { ofl_gso_segment_pieces(gso, 1, one.as_mut_ptr(), 1) }, 1);
    assert_eq!(one[0], ofl_chain_piece { iov_index: 3, offset: 954, len: 1000 });
    let two = iovecs(&frame, &[54 + 500]);
    assert_eq!(segment(two.as_ptr(), two.len()), 3);
    assert_eq!(unsafe { ofl_gso_segment_pieces(gso, 0, null_mut(), 0) }, 2);
    assert_eq!(unsafe { ofl_gso_segment_pieces(gso, 0, one.as_mut_ptr(), 1) }, ofl_status::OFL_ERR_BUFFER_TOO_SMALL as i32);
    assert_eq!(unsafe { ofl_gso_segment_pieces(gso, 0, null_mut(), 2) }, ofl_status::OFL_ERR_NULL as i32);
    assert_eq!(unsafe { ofl_gso_segment_pieces(gso, 3, null_mut(), 0) }, ofl_status::OFL_ERR_INVALID_ARGUMENT as i32);
    assert_eq!(unsafe { ofl_gso_segment_pieces(null(), 0, null_mut(), 0) }, ofl_status::OFL_ERR_NULL as i32);
    // After a contiguous call the frame is iovec 0.
    assert_eq!(unsafe { ofl_gso_segment(gso, frame.as_ptr(), frame.len(), &vnet, 0) }, 3);
    assert_eq!(unsafe { ofl_gso_segment_pieces(gso, 2, one.as_mut_ptr(), 1) }, 1);
    assert_eq!(one[0], ofl_chain_piece { iov_index: 0, offset: 2054, len: 1000 });
    let short = iovecs(&frame[..60], &[30]);
    assert!(segment(short.as_ptr(), short.len()) < 0);
    assert_eq!(unsafe { ofl_gso_segment_pieces(gso, 0, null_mut(), 0) }, ofl_status::OFL_ERR_INVALID_ARGUMENT as i32);

    let text = unsafe { CStr::from_ptr(ofl_strerror(ofl_status::OFL_ERR_TOO_MANY_IOVECS as i32)) };
    assert!(text.to_str().unwrap().contains("OFL_CHAIN_MAX_IOV"));
    assert!(ofl_abi_version() >> 16 == 1 && ofl_abi_version() & 0xffff >= 2, "the chain API came with ABI 1.2");
    unsafe {
        ofl_gro_free(gro);
        ofl_gso_free(gso);
    }
}
