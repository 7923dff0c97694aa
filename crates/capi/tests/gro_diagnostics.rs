//! GRO diagnostics through the C API: a frame that starts a run because its flow's run
//! ended on a mismatch is told apart from a new flow (with `OFL_GRO_REPORT_RESTART`),
//! each delivered run says why it ended, and the per-reason counters are caller-sized.
use core::ffi::c_void;
use offlab_engine_c::*;

/// A TCP/IPv4 frame of flow port 40000, sequence `seq`, ACK number `ack`, 100 bytes.
fn frame(seq: u32, ack: u32) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let mut ip = vec![0x45, 0, 0, 140, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
    let sum: u32 = ip.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
    let folded = !(((sum & 0xffff) + (sum >> 16)) as u16);
    ip[10..12].copy_from_slice(&folded.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&5201u16.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&ack.to_be_bytes());
    f.extend_from_slice(&[0x50, 0x10, 0x01, 0xf4, 0, 0, 0, 0]);
    f.extend_from_slice(&[0x5a; 100]);
    f
}

/// Each delivered run's (segments, end, end_reason).
unsafe extern "C" fn record(user: *mut c_void, merged: *const ofl_gro_merged) {
    // SAFETY: `user` is the Vec passed below; `merged` is valid during the call.
    unsafe {
        let runs = &mut *(user as *mut Vec<(u16, u8, u32)>);
        let m = &*merged;
        runs.push((m.segments, m.end, m.end_reason));
    }
}

#[test]
fn restarts_and_end_reasons_are_reported() {
    let mut gro: *mut ofl_gro = core::ptr::null_mut();
    // SAFETY: NULL config gives the defaults; `gro` receives the handle.
    assert_eq!(unsafe { ofl_gro_new(core::ptr::null(), &mut gro) }, 0);
    let mut runs: Vec<(u16, u8, u32)> = Vec::new();
    let user = &mut runs as *mut Vec<(u16, u8, u32)> as *mut c_void;
    let flags = OFL_RX_CSUM_VALIDATED | OFL_GRO_REPORT_RESTART;
    let push = |f: &[u8], id: u64, reason: &mut u32| {
        // SAFETY: live handle, frame readable, callback valid.
        unsafe { ofl_gro_push(gro, id, f.as_ptr(), f.len(), flags, 0, Some(record), user, reason) }
    };
    let mut reason = u32::MAX;
    assert_eq!(push(&frame(1000, 7), 0, &mut reason), ofl_gro_verdict::OFL_GRO_NEW_FLOW as i32);
    assert_eq!(push(&frame(1100, 7), 1, &mut reason), ofl_gro_verdict::OFL_GRO_MERGED as i32);
    // Another ACK number: the run is delivered, the frame starts the next one.
    assert_eq!(push(&frame(1200, 8), 2, &mut reason), ofl_gro_verdict::OFL_GRO_RESTARTED as i32);
    assert_eq!(reason, ofl_gro_reason::OFL_GRO_REASON_ACK_DIFFERS as u32);
    // Without the flag the same event reads as before: a new flow.
    let mut old_reason = u32::MAX;
    // SAFETY: as above.
    let old = unsafe {
        let f = frame(1300, 9);
        ofl_gro_push(gro, 3, f.as_ptr(), f.len(), OFL_RX_CSUM_VALIDATED, 0, Some(record), user, &mut old_reason)
    };
    assert_eq!(old, ofl_gro_verdict::OFL_GRO_NEW_FLOW as i32);
    assert_eq!(old_reason, u32::MAX, "no reason written for a new flow");
    // SAFETY: live handle.
    assert_eq!(unsafe { ofl_gro_flush(gro, Some(record), user) }, 1);
    let ack = ofl_gro_reason::OFL_GRO_REASON_ACK_DIFFERS as u32;
    let rule = ofl_gro_end::OFL_GRO_END_RULE as u8;
    assert_eq!(runs, vec![(2, rule, ack), (1, rule, ack), (1, ofl_gro_end::OFL_GRO_END_FLUSH as u8, 0)]);
    // Caller-sized counters: ask for the count, then fill.
    // SAFETY: NULL arrays with n == 0.
    let count = unsafe { ofl_gro_get_reason_counts(gro, core::ptr::null_mut(), core::ptr::null_mut(), 0) };
    assert_eq!(count, OFL_GRO_REASON_COUNT as i32);
    let mut ended = vec![0u64; count as usize + 4];
    // SAFETY: `ended` holds more than `count` values; `refused` NULL.
    let got = unsafe { ofl_gro_get_reason_counts(gro, ended.as_mut_ptr(), core::ptr::null_mut(), ended.len()) };
    assert_eq!(got, count);
    assert_eq!(ended[ack as usize], 2);
    assert_eq!(&ended[count as usize..], &[0; 4], "nothing written past the library's count");
    // Unknown flags are refused, so a caller can tell an older library.
    let mut r = 0;
    let f = frame(5000, 1);
    // SAFETY: as above.
    let bad = unsafe { ofl_gro_push(gro, 9, f.as_ptr(), f.len(), 1 << 7, 0, Some(record), user, &mut r) };
    assert_eq!(bad, ofl_status::OFL_ERR_INVALID_ARGUMENT as i32);
    assert_eq!(ofl_abi_version() >> 16, OFL_ABI_MAJOR);
    // SAFETY: the handle is not used after.
    unsafe { ofl_gro_free(gro) };
}
