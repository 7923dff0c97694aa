//! `ofl_gso_segment_bulk` (ABI 1.4) on arbitrary input: nothing panics, every error
//! code has a name, a refused call writes no buffer, and what a call gives is exactly
//! what `ofl_gso_segment` + `ofl_gso_segment_get` give segment by segment, for the
//! super-packet cut into a chain anywhere (headers included), whichever path wrote the
//! headers (the engine's fast path straight into the buffers, or the handle and a copy).
//!
//! Input: a control byte (flags, the room in descriptors and header bytes), a 12-byte
//! virtio-net header, up to four cut offsets (u16 little-endian each), then the frame
//! (the layout of the gso_bulk target, so the two share seeds).
#![no_main]

use core::ffi::CStr;
use core::ptr::{null, null_mut};

use libfuzzer_sys::fuzz_target;
use offlab_engine_c::*;

fn check_code(rc: i32) -> i32 {
    assert_ne!(rc, ofl_status::OFL_ERR_PANIC as i32, "a panic crossed into the C API");
    if rc < 0 {
        let name = unsafe { CStr::from_ptr(ofl_strerror(rc)) };
        assert_ne!(name.to_bytes(), b"unknown error code", "code {rc} has no name");
    }
    rc
}

type Seg = (Vec<u8>, usize, usize, u8, u16, u16);

fn seg_of(s: &ofl_gso_seg) -> Seg {
    let header = unsafe { core::slice::from_raw_parts(s.header, s.header_len) }.to_vec();
    (header, s.payload_offset, s.payload_len, s.csum_partial, s.csum_start, s.csum_offset)
}

fn one_by_one(gso: *mut ofl_gso, n: usize) -> Vec<Seg> {
    (0..n)
        .map(|i| {
            let mut s = unsafe { core::mem::zeroed::<ofl_gso_seg>() };
            assert_eq!(check_code(unsafe { ofl_gso_segment_get(gso, i, &mut s) }), 0);
            seg_of(&s)
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 1 + 12 + 8 {
        return;
    }
    let control = data[0];
    let mut vnet = ofl_vnet_hdr::default();
    if check_code(unsafe { ofl_vnet_decode(data[1..].as_ptr(), 12, OFL_VNET_FORM_V1, &mut vnet) }) < 0 {
        return;
    }
    let frame = &data[21..];
    let mut cuts: Vec<usize> = data[13..21]
        .chunks(2)
        .map(|c| usize::from(u16::from_le_bytes([c[0], c[1]])) % (frame.len() + 1))
        .collect();
    cuts.sort_unstable();
    let flags = u32::from(control & 3);
    let cap = if control & 0x20 != 0 { 64 } else { 256 };
    let mut gso = null_mut();
    assert_eq!(unsafe { ofl_gso_new(null(), &mut gso) }, 0);
    let n = check_code(unsafe { ofl_gso_segment(gso, frame.as_ptr(), frame.len(), &vnet, flags) });
    let reference = one_by_one(gso, n.max(0) as usize);
    // Room for every segment, or (control bit 6) one descriptor short.
    let room = (n.max(1) as usize).saturating_sub(usize::from(control >> 6 & 1)).max(1);
    let mut iov = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain([frame.len()].iter()) {
        iov.push(ofl_iovec { base: frame[start..].as_ptr(), len: cut - start });
        start = cut;
    }
    let mut segs = vec![unsafe { core::mem::zeroed::<ofl_gso_seg>() }; room];
    let mut bufs = vec![vec![0xa5u8; cap]; room];
    let ptrs: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
    let rc = check_code(unsafe {
        ofl_gso_segment_bulk(gso, iov.as_ptr(), iov.len(), &vnet, flags, segs.as_mut_ptr(), room, ptrs.as_ptr(), cap)
    });
    if rc >= 0 {
        assert_eq!(rc, n, "the one call segmented otherwise");
        let got: Vec<Seg> = segs[..rc as usize].iter().map(seg_of).collect();
        assert_eq!(got, reference);
        for (s, &p) in segs[..rc as usize].iter().zip(&ptrs) {
            assert_eq!(s.header, p.cast_const(), "a header is not in its caller buffer");
        }
    } else {
        assert!(bufs.iter().all(|b| b.iter().all(|&x| x == 0xa5)), "a refused call wrote");
        if rc == ofl_status::OFL_ERR_BUFFER_TOO_SMALL as i32 {
            // Refused for room only: the handle still holds the segments.
            assert_eq!(one_by_one(gso, n as usize), reference);
        } else {
            assert_eq!(rc, n, "refused otherwise than the flat call");
        }
    }
    unsafe { ofl_gso_free(gso) };
});
