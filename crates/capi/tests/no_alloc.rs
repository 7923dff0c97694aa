//! After warm-up, pushing, flushing and segmenting through the C API allocate nothing
//! (the GRO table and the GSO output are sized once). One test per binary, so the
//! global counter sees only this test's thread.
use core::ffi::c_void;
use core::ptr::{null, null_mut};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use offlab_engine_c::*;

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A TCP/IPv4 frame of flow `flow`, packet `k`, with a pseudo-header-only checksum
/// (GRO is told the checksums were validated).
fn tcp4(flow: u16, k: u32, payload: usize, flags: u8) -> Vec<u8> {
    let mut f = vec![0u8; 54 + payload];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&((40 + payload) as u16).to_be_bytes());
    f[18..20].copy_from_slice(&(k as u16).to_be_bytes());
    f[20] = 0x40;
    f[22] = 64;
    f[23] = 6;
    f[26..30].copy_from_slice(&[10, 0, 0, 1]);
    f[30..34].copy_from_slice(&[10, 0, 0, 2]);
    let mut check = 0u16;
    unsafe { ofl_csum_of(f[14..34].as_ptr(), 20, &mut check) };
    f[24..26].copy_from_slice(&check.to_be_bytes());
    f[34..36].copy_from_slice(&(10000 + flow).to_be_bytes());
    f[36..38].copy_from_slice(&5201u16.to_be_bytes());
    f[38..42].copy_from_slice(&(1 + k * payload as u32).to_be_bytes());
    f[42..46].copy_from_slice(&1u32.to_be_bytes());
    f[46] = 5 << 4;
    f[47] = flags;
    f[48..50].copy_from_slice(&0xffffu16.to_be_bytes());
    f
}

unsafe extern "C" fn count(user: *mut c_void, merged: *const ofl_gro_merged) {
    unsafe { *(user as *mut u64) += u64::from((*merged).segments) };
}

#[test]
fn steady_state_allocates_nothing() {
    let frames: Vec<Vec<u8>> = (0..256u32)
        .map(|n| tcp4((n % 8) as u16, n / 8, 1448, 0x10))
        .collect();
    let super_packet = tcp4(0, 0, 1448 * 45, 0x18);
    let vnet = ofl_vnet_hdr {
        flags: OFL_VNET_F_NEEDS_CSUM,
        gso_type: OFL_VNET_GSO_TCPV4,
        hdr_len: 54,
        gso_size: 1448,
        csum_start: 34,
        csum_offset: 16,
        ..ofl_vnet_hdr::default()
    };
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
    round(); // warm-up: the GSO output grows to the super-packet's size
    let before = ALLOCS.load(Ordering::Relaxed);
    for _ in 0..3 {
        round();
    }
    let allocs = ALLOCS.load(Ordering::Relaxed) - before;
    assert_eq!(allocs, 0, "the steady state allocated {allocs} times");
    assert_eq!(segments, 4 * 256);
    unsafe {
        ofl_gro_free(gro);
        ofl_gso_free(gso);
    }
}
