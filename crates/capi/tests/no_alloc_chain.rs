//! After the first chained frame, `ofl_gro_push_chain`, `ofl_gso_segment_chain` and
//! `ofl_gso_segment_pieces` allocate nothing (the header scratch is allocated once per
//! handle). The C library's own global allocator counts each thread's allocations.
use core::ffi::c_void;
use core::ptr::{null, null_mut};
use offlab_engine_c::allocator::thread_allocations;
use offlab_engine_c::*;

mod common;
use common::{iovecs, tcp4_frame, tso_vnet};

/// A frame of flow `flow` with correct checksums (the chained GRO tests have them
/// verified, not trusted).
fn tcp4(flow: u16, seq: u32, ip_id: u16, payload: usize, flags: u8) -> Vec<u8> {
    tcp4_frame(40000 + flow, seq, ip_id, payload, flags, true)
}

unsafe extern "C" fn count(user: *mut c_void, merged: *const ofl_gro_merged) {
    unsafe { *(user as *mut u64) += u64::from((*merged).segments) };
}

#[test]
fn chained_steady_state_allocates_nothing() {
    let frames: Vec<Vec<u8>> = (0..128u32)
        .map(|n| tcp4((n % 8) as u16, 1 + (n / 8) * 1001, (n / 8) as u16, 1001, 0x10))
        .collect();
    // A header mbuf, payload in 2000-byte mbufs (the first cut odd).
    let frame_iov: Vec<Vec<ofl_iovec>> = frames.iter().map(|f| iovecs(f, &[54, 555])).collect();
    let super_packet = tcp4(0, 1, 0, 1448 * 45, 0x18);
    let cuts: Vec<usize> = std::iter::once(54).chain((1055..super_packet.len()).step_by(2000)).collect();
    let super_iov = iovecs(&super_packet, &cuts);
    let vnet = tso_vnet(1448);
    let (mut gro, mut gso) = (null_mut(), null_mut());
    assert_eq!(unsafe { ofl_gro_new(null(), &mut gro) }, 0);
    assert_eq!(unsafe { ofl_gso_new(null(), &mut gso) }, 0);
    let mut segments = 0u64;
    let user = &mut segments as *mut u64 as *mut c_void;
    let mut pieces = [ofl_chain_piece { iov_index: 0, offset: 0, len: 0 }; 4];
    let mut round = || {
        for (id, iov) in frame_iov.iter().enumerate() {
            let rc = unsafe {
                ofl_gro_push_chain(gro, id as u64, iov.as_ptr(), iov.len(), 0, 0, Some(count), user, null_mut())
            };
            assert!(rc == 0 || rc == 1, "pushed frame {id}: {rc}");
        }
        assert!(unsafe { ofl_gro_flush(gro, Some(count), user) } >= 0);
        for flags in [0, OFL_GSO_FULL_CSUM] {
            let n = unsafe { ofl_gso_segment_chain(gso, super_iov.as_ptr(), super_iov.len(), &vnet, flags) };
            assert_eq!(n, 45);
            for i in 0..45 {
                let got = unsafe { ofl_gso_segment_pieces(gso, i, pieces.as_mut_ptr(), pieces.len()) };
                assert!((1..=2).contains(&got));
            }
        }
    };
    round(); // warm-up: the scratch and the GSO output are allocated
    let before = thread_allocations();
    for _ in 0..3 {
        round();
    }
    let allocs = thread_allocations() - before;
    assert_eq!(allocs, 0, "the chained steady state allocated {allocs} times");
    assert_eq!(segments, 4 * 128);
    unsafe {
        ofl_gro_free(gro);
        ofl_gso_free(gso);
    }
}
