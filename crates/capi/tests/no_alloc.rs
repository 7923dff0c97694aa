//! After warm-up, pushing, flushing and segmenting through the C API allocate nothing
//! (the GRO table and the GSO output are sized once). The C library's own global
//! allocator (`allocator::Router`) counts the allocations of each thread.
use core::ffi::c_void;
use core::ptr::{null, null_mut};

use offlab_engine_c::allocator::thread_allocations;
use offlab_engine_c::*;

mod common;
use common::{tcp4, tso_vnet};

unsafe extern "C" fn count(user: *mut c_void, merged: *const ofl_gro_merged) {
    unsafe { *(user as *mut u64) += u64::from((*merged).segments) };
}

#[test]
fn steady_state_allocates_nothing() {
    let frames: Vec<Vec<u8>> = (0..256u32)
        .map(|n| tcp4((n % 8) as u16, n / 8, 1448, 0x10))
        .collect();
    let super_packet = tcp4(0, 0, 1448 * 45, 0x18);
    let vnet = tso_vnet(1448);
    let (mut gro, mut gso) = (null_mut(), null_mut());
    assert_eq!(unsafe { ofl_gro_new(null(), &mut gro) }, 0);
    assert_eq!(unsafe { ofl_gso_new(null(), &mut gso) }, 0);
    let mut segments = 0u64;
    let user = &mut segments as *mut u64 as *mut c_void;
    let round = || {
        for (b, burst) in frames.chunks(32).enumerate() {
            for (i, f) in burst.iter().enumerate() {
                let id = (b * 32 + i) as u64;
                let rc = unsafe {
                    ofl_gro_push(
                        gro,
                        id,
                        f.as_ptr(),
                        f.len(),
                        OFL_RX_CSUM_VALIDATED,
                        b as u64,
                        Some(count),
                        user,
                        null_mut(),
                    )
                };
                assert!(rc == 0 || rc == 1, "pushed frame {id}: {rc}");
            }
            assert!(unsafe { ofl_gro_flush_older_than(gro, b as u64, 1, Some(count), user) } >= 0);
        }
        assert!(unsafe { ofl_gro_flush(gro, Some(count), user) } >= 0);
        for flags in [0, OFL_GSO_FULL_CSUM] {
            let n = unsafe {
                ofl_gso_segment(gso, super_packet.as_ptr(), super_packet.len(), &vnet, flags)
            };
            assert_eq!(n, 45);
        }
        let mut stats = std::mem::MaybeUninit::<ofl_gro_stats>::uninit();
        assert_eq!(unsafe { ofl_gro_get_stats(gro, stats.as_mut_ptr()) }, 0);
    };
    let before = thread_allocations();
    round();
    // Warm-up: the GSO output grows to the super-packet's size.
    assert!(thread_allocations() > before, "the counter sees the warm-up's growth");
    let before = thread_allocations();
    for _ in 0..3 {
        round();
    }
    let allocs = thread_allocations() - before;
    assert_eq!(allocs, 0, "the steady state allocated {allocs} times");
    assert_eq!(segments, 4 * 256);
    unsafe {
        ofl_gro_free(gro);
        ofl_gso_free(gso);
    }
}
