//! The allocator hook of `ofl_gro_new_ex` / `ofl_gso_new_ex` (ABI 1.2), driven as a C
//! caller drives it: a counting allocator sees every block a handle allocates (at
//! creation and when GSO's output grows), gets every byte back when the handle is
//! freed, receives the NUMA node asked for; a hook that returns NULL gives
//! `OFL_ERR_NO_MEMORY` with nothing kept; nothing is allocated after warm-up; the
//! parameter structs' `size` field is checked.
use core::cell::{Cell, RefCell};
use core::ffi::c_void;
use core::ptr::null_mut;
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;

use offlab_engine_c::allocator::thread_allocations;
use offlab_engine_c::*;

mod common;
use common::{tcp4, tso_vnet};

/// What the hook saw. Single-threaded (a handle is used on one thread).
#[derive(Default)]
struct Ledger {
    /// Live blocks: address -> (size, align).
    live: RefCell<HashMap<usize, (usize, usize)>>,
    allocs: Cell<u64>,
    frees: Cell<u64>,
    bytes_allocated: Cell<usize>,
    bytes_freed: Cell<usize>,
    /// Every NUMA node passed to `alloc` that differs from `NODE`.
    wrong_nodes: RefCell<Vec<i32>>,
    /// Refuse every allocation (return NULL) while set.
    refuse: Cell<bool>,
    refused: Cell<u64>,
}

const NODE: i32 = 3;

unsafe extern "C" fn hook_alloc(user: *mut c_void, size: usize, align: usize, node: i32) -> *mut c_void {
    let ledger = unsafe { &*(user as *const Ledger) };
    if ledger.refuse.get() {
        ledger.refused.set(ledger.refused.get() + 1);
        return null_mut();
    }
    if node != NODE {
        ledger.wrong_nodes.borrow_mut().push(node);
    }
    // The system allocator directly: this hook must not recurse into the Rust one.
    let ptr = unsafe { System.alloc(Layout::from_size_align(size, align).unwrap()) };
    ledger.allocs.set(ledger.allocs.get() + 1);
    ledger.bytes_allocated.set(ledger.bytes_allocated.get() + size);
    assert!(ledger.live.borrow_mut().insert(ptr as usize, (size, align)).is_none());
    ptr.cast()
}

unsafe extern "C" fn hook_free(user: *mut c_void, ptr: *mut c_void, size: usize, align: usize) {
    let ledger = unsafe { &*(user as *const Ledger) };
    let known = ledger.live.borrow_mut().remove(&(ptr as usize));
    assert_eq!(known, Some((size, align)), "freed a block the hook did not allocate, or with another size");
    ledger.frees.set(ledger.frees.get() + 1);
    ledger.bytes_freed.set(ledger.bytes_freed.get() + size);
    unsafe { System.dealloc(ptr.cast(), Layout::from_size_align(size, align).unwrap()) };
}

impl Ledger {
    fn new() -> Box<Ledger> {
        let ledger = Box::new(Ledger::default());
        // Room up front, so that the hook's bookkeeping never allocates inside a call.
        ledger.live.borrow_mut().reserve(4096);
        ledger.wrong_nodes.borrow_mut().reserve(4096);
        ledger
    }

    fn allocator(&self) -> ofl_allocator {
        ofl_allocator {
            alloc: Some(hook_alloc),
            free: Some(hook_free),
            user: self as *const Ledger as *mut c_void,
            numa_node: NODE,
        }
    }

    fn assert_balanced(&self) {
        assert!(self.live.borrow().is_empty(), "{} blocks never freed", self.live.borrow().len());
        assert_eq!(self.allocs.get(), self.frees.get());
        assert_eq!(self.bytes_allocated.get(), self.bytes_freed.get());
        assert!(self.wrong_nodes.borrow().is_empty(), "nodes passed: {:?}", self.wrong_nodes.borrow());
    }
}

fn gro_params(ledger: &Ledger) -> ofl_gro_params {
    let mut config = std::mem::MaybeUninit::uninit();
    assert_eq!(unsafe { ofl_gro_config_default(config.as_mut_ptr()) }, 0);
    ofl_gro_params {
        size: std::mem::size_of::<ofl_gro_params>() as u32,
        config: unsafe { config.assume_init() },
        allocator: ledger.allocator(),
    }
}

fn gso_params(ledger: &Ledger) -> ofl_gso_params {
    ofl_gso_params {
        size: std::mem::size_of::<ofl_gso_params>() as u32,
        parse: ofl_parse_opts::default(),
        allocator: ledger.allocator(),
    }
}

/// A TCP/IPv4 super-packet of `segments` × 1448 bytes and its virtio-net header.
fn super_packet(segments: usize) -> (Vec<u8>, ofl_vnet_hdr) {
    let vnet = tso_vnet(1448);
    (tcp4(0, 0, 1448 * segments, 0x18), vnet)
}

fn segment(gso: *mut ofl_gso, segments: usize) -> i32 {
    let (frame, vnet) = super_packet(segments);
    unsafe { ofl_gso_segment(gso, frame.as_ptr(), frame.len(), &vnet, 0) }
}

unsafe extern "C" fn count(user: *mut c_void, merged: *const ofl_gro_merged) {
    unsafe { *(user as *mut u64) += u64::from((*merged).segments) };
}

#[test]
fn every_block_of_a_gro_table_comes_from_the_hook_and_goes_back() {
    let ledger = Ledger::new();
    let params = gro_params(&ledger);
    let mut gro = null_mut();
    let before = thread_allocations();
    assert_eq!(unsafe { ofl_gro_new_ex(&params, &mut gro) }, 0);
    let made = thread_allocations() - before;
    assert!(made > 0 && ledger.allocs.get() == made, "{made} allocations, {} through the hook", ledger.allocs.get());
    // The default table is about 0.9 MiB, all of it the hook's.
    assert!(ledger.bytes_allocated.get() > 512 * 1024, "{} bytes", ledger.bytes_allocated.get());

    let frames: Vec<Vec<u8>> = (0..64u32).map(|n| tcp4((n % 4) as u16, n / 4, 1448, 0x10)).collect();
    let mut segments = 0u64;
    let user = &mut segments as *mut u64 as *mut c_void;
    let (allocs, before) = (ledger.allocs.get(), thread_allocations());
    for (id, f) in frames.iter().enumerate() {
        let rc = unsafe {
            ofl_gro_push(gro, id as u64, f.as_ptr(), f.len(), OFL_RX_CSUM_VALIDATED, 0, Some(count), user, null_mut())
        };
        assert!(rc == 0 || rc == 1, "frame {id}: {rc}");
    }
    assert!(unsafe { ofl_gro_flush(gro, Some(count), user) } >= 0);
    assert_eq!(segments, 64);
    assert_eq!((ledger.allocs.get(), thread_allocations()), (allocs, before), "pushing allocated");
    unsafe { ofl_gro_free(gro) };
    ledger.assert_balanced();
}

#[test]
fn gso_output_grows_through_the_hook_then_never_allocates() {
    let ledger = Ledger::new();
    let mut gso = null_mut();
    assert_eq!(unsafe { ofl_gso_new_ex(&gso_params(&ledger), &mut gso) }, 0);
    assert_eq!(ledger.allocs.get(), 1, "the handle itself");
    // Warm-up, both checksum modes: the output grows (software checksums keep a
    // scratch array of their own).
    let (frame, vnet) = super_packet(45);
    for flags in [0, OFL_GSO_FULL_CSUM] {
        assert_eq!(unsafe { ofl_gso_segment(gso, frame.as_ptr(), frame.len(), &vnet, flags) }, 45);
    }
    assert!(ledger.allocs.get() > 1);
    let (t0, h0) = (thread_allocations(), ledger.allocs.get());
    for _ in 0..3 {
        for flags in [0, OFL_GSO_FULL_CSUM] {
            assert_eq!(unsafe { ofl_gso_segment(gso, frame.as_ptr(), frame.len(), &vnet, flags) }, 45);
        }
    }
    assert_eq!((thread_allocations(), ledger.allocs.get()), (t0, h0), "the steady state allocated");
    unsafe { ofl_gso_free(gso) };
    ledger.assert_balanced();
}

#[test]
fn growth_allocations_inside_a_call_all_go_to_the_hook() {
    let ledger = Ledger::new();
    let mut gso = null_mut();
    assert_eq!(unsafe { ofl_gso_new_ex(&gso_params(&ledger), &mut gso) }, 0);
    let (frame, vnet) = super_packet(45);
    let (t0, h0) = (thread_allocations(), ledger.allocs.get());
    assert_eq!(unsafe { ofl_gso_segment(gso, frame.as_ptr(), frame.len(), &vnet, 0) }, 45);
    let (t, h) = (thread_allocations() - t0, ledger.allocs.get() - h0);
    assert!(t > 0 && t == h, "{t} allocations in the call, {h} through the hook");
    unsafe { ofl_gso_free(gso) };
    ledger.assert_balanced();
}

#[test]
fn a_hook_returning_null_gives_a_clean_error() {
    let ledger = Ledger::new();
    ledger.refuse.set(true);
    let sentinel = core::ptr::NonNull::<ofl_gro>::dangling().as_ptr();
    let mut gro = sentinel;
    assert_eq!(unsafe { ofl_gro_new_ex(&gro_params(&ledger), &mut gro) }, ofl_status::OFL_ERR_NO_MEMORY as i32);
    assert_eq!(gro, sentinel, "*gro was written on failure");
    let mut gso = null_mut();
    assert_eq!(unsafe { ofl_gso_new_ex(&gso_params(&ledger), &mut gso) }, ofl_status::OFL_ERR_NO_MEMORY as i32);
    assert!(gso.is_null());
    assert!(ledger.refused.get() >= 2);
    ledger.assert_balanced();

    // Growth refused: the call fails cleanly, the handle keeps working and gives every
    // block back.
    ledger.refuse.set(false);
    assert_eq!(unsafe { ofl_gso_new_ex(&gso_params(&ledger), &mut gso) }, 0);
    assert_eq!(segment(gso, 4), 4);
    ledger.refuse.set(true);
    assert_eq!(segment(gso, 45), ofl_status::OFL_ERR_NO_MEMORY as i32);
    assert_eq!(unsafe { ofl_gso_count(gso) }, 0);
    let mut seg = std::mem::MaybeUninit::uninit();
    assert_eq!(unsafe { ofl_gso_segment_get(gso, 0, seg.as_mut_ptr()) }, ofl_status::OFL_ERR_INVALID_ARGUMENT as i32);
    ledger.refuse.set(false);
    assert_eq!(segment(gso, 45), 45);
    unsafe { ofl_gso_free(gso) };
    ledger.assert_balanced();
}

#[test]
fn the_size_field_is_checked() {
    let ledger = Ledger::new();
    let invalid = ofl_status::OFL_ERR_INVALID_ARGUMENT as i32;
    let mut gro = null_mut();
    let mut params = gro_params(&ledger);
    params.size = OFL_GRO_PARAMS_SIZE_1_2 as u32 - 1;
    assert_eq!(unsafe { ofl_gro_new_ex(&params, &mut gro) }, invalid);
    params.size = 0;
    assert_eq!(unsafe { ofl_gro_new_ex(&params, &mut gro) }, invalid);
    assert_eq!(unsafe { ofl_gro_new_ex(core::ptr::null(), &mut gro) }, ofl_status::OFL_ERR_NULL as i32);

    // A newer caller's larger struct: accepted when what this library does not know is
    // zero, refused when it asks for something (a non-zero byte past the known end).
    #[repr(C)]
    struct Newer {
        params: ofl_gso_params,
        later_field: u64,
    }
    let mut newer = Newer { params: gso_params(&ledger), later_field: 0 };
    newer.params.size = std::mem::size_of::<Newer>() as u32;
    // The whole struct, as a C caller's pointer covers it.
    let whole = |n: &Newer| n as *const Newer as *const ofl_gso_params;
    let mut gso = null_mut();
    assert_eq!(unsafe { ofl_gso_new_ex(whole(&newer), &mut gso) }, 0);
    unsafe { ofl_gso_free(gso) };
    newer.later_field = 1;
    gso = null_mut();
    assert_eq!(unsafe { ofl_gso_new_ex(whole(&newer), &mut gso) }, invalid);
    assert!(gso.is_null());

    // Half an allocator is refused; none at all is the system allocator.
    let mut params = gso_params(&ledger);
    params.allocator.free = None;
    assert_eq!(unsafe { ofl_gso_new_ex(&params, &mut gso) }, invalid);
    params.allocator = ofl_allocator { alloc: None, free: None, user: null_mut(), numa_node: -1 };
    assert_eq!(unsafe { ofl_gso_new_ex(&params, &mut gso) }, 0);
    assert_eq!(segment(gso, 3), 3);
    unsafe { ofl_gso_free(gso) };
    // A bad config is refused as ofl_gro_new refuses it.
    let mut params = gro_params(&ledger);
    params.config.max_flows = 0;
    assert_eq!(unsafe { ofl_gro_new_ex(&params, &mut gro) }, invalid);
    ledger.assert_balanced();
}
