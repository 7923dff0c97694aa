//! GSO through the public API only: the steady state allocates nothing (counted by a
//! global allocator in this test binary), and arbitrary bytes never make `segment`
//! panic, whatever the kind and segment size.

use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use offlab_engine::gso::{self, GsoKind, GsoOutput, GsoParams, L4Checksum};
use offlab_engine::wire::parse::parse_frame;
use proptest::prelude::*;

// The unit tests' packet builder, reused: its `crate::` paths resolve through these.
mod checksum {
    pub use offlab_engine::checksum::*;
}
mod wire {
    pub use offlab_engine::wire::*;
}
#[allow(dead_code)]
#[path = "../src/gso/tests/packets.rs"]
mod packets;

use packets::{build, Encap, Spec};

/// Counts allocations made by the current thread while `COUNTING` names it.
struct CountingAllocator;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static COUNTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: AllocLayout) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: AllocLayout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: AllocLayout, new_size: usize) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

#[test]
fn gso_steady_state_allocates_nothing() {
    let cases = [
        (build(&Spec::tcp4(65000)), GsoParams::tcp(1448)),
        (
            build(&Spec::tcp6(30000).encap(Encap::Vxlan, true)),
            GsoParams::tcp(1400),
        ),
        (
            build(&Spec::udp4(20000).encap(Encap::Geneve { options: 8 }, false)),
            GsoParams {
                outer_udp_checksum: true,
                ..GsoParams::tcp(1200).with_kind(GsoKind::Udp)
            },
        ),
        (
            build(&Spec::udp4(20000).encap(
                Encap::Gre {
                    checksum: true,
                    key: true,
                },
                false,
            )),
            GsoParams::tcp(1480).with_kind(GsoKind::UdpFragment),
        ),
    ];
    let mut out = GsoOutput::new();
    let (frame, params) = &cases[0];
    let layout = parse_frame(frame).unwrap();
    let cold = allocations_during(|| gso::segment(frame, &layout, params, &mut out).unwrap());
    assert!(cold > 0, "the counter sees the first call grow the output");
    // Warm up: the output grows to the largest of the cases.
    for (frame, params) in &cases {
        let layout = parse_frame(frame).unwrap();
        gso::segment(frame, &layout, params, &mut out).unwrap();
    }
    for (frame, params) in &cases {
        let layout = parse_frame(frame).unwrap();
        for checksum in [L4Checksum::Full, L4Checksum::Partial] {
            let params = GsoParams {
                checksum,
                ..*params
            };
            let n = allocations_during(|| {
                gso::segment(frame, &layout, &params, &mut out).unwrap();
                let bytes: usize = out.iter().map(|s| s.len()).sum();
                assert!(bytes > frame.len());
            });
            assert_eq!(n, 0, "allocations for {params:?}");
        }
    }
}

proptest! {
    /// Random bytes (often a mangled real packet) never panic, for any kind and size.
    #[test]
    fn gso_never_panics_on_arbitrary_frames(
        base in prop_oneof![
            Just(build(&Spec::tcp4(3000))),
            Just(build(&Spec::tcp6(3000).encap(Encap::Vxlan, false))),
            Just(build(&Spec::udp4(3000).encap(Encap::Gre { checksum: true, key: false }, true))),
            proptest::collection::vec(any::<u8>(), 0..200),
        ],
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in prop_oneof![Just(0usize), 1usize..64],
        size in any::<u16>(),
        kind in prop_oneof![Just(GsoKind::Tcp), Just(GsoKind::Udp), Just(GsoKind::UdpFragment)],
        partial in any::<bool>(),
    ) {
        let mut frame = base;
        if !frame.is_empty() {
            for (at, value) in flips {
                let at = at % frame.len();
                frame[at] = value;
            }
        }
        frame.truncate(frame.len().saturating_sub(cut));
        let checksum = if partial { L4Checksum::Partial } else { L4Checksum::Full };
        let params = GsoParams { checksum, ..GsoParams::tcp(size).with_kind(kind) };
        let mut out = GsoOutput::new();
        if let Ok(layout) = parse_frame(&frame) {
            if gso::segment(&frame, &layout, &params, &mut out).is_ok() {
                for seg in out.iter() {
                    prop_assert!(seg.payload.end <= frame.len());
                    prop_assert!(!seg.header.is_empty());
                }
            } else {
                prop_assert!(out.is_empty());
            }
        }
    }
}
