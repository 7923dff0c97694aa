//! GSO through the public API only: the steady state allocates nothing (counted by a
//! global allocator in this test binary), and arbitrary bytes never make `segment`
//! panic, whatever the kind and segment size.

use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use offlab_engine::gso::{self, GsoKind, GsoOutput, GsoParams, L4Checksum};
use offlab_engine::chain::{ChainFrame, ChainScratch};
use offlab_engine::wire::parse::{parse_frame, ParseOptions};
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

/// Cuts `frame` into pieces at `cuts` (positions taken modulo the frame length plus
/// one; repeats give empty pieces), in order.
fn split<'a>(frame: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (frame.len() + 1)).collect();
    at.sort_unstable();
    let mut pieces = Vec::with_capacity(at.len() + 1);
    let mut start = 0;
    for cut in at {
        pieces.push(&frame[start..cut]);
        start = cut;
    }
    pieces.push(&frame[start..]);
    pieces
}

/// What GSO makes of a frame: the parse, then each segment (header bytes, payload
/// bytes, checksum left partial) or the refusal.
fn gso_transcript(frame: &[u8], pieces: Option<&[&[u8]]>, params: &GsoParams) -> Vec<String> {
    let mut scratch = ChainScratch::new();
    let chain = match pieces {
        Some(pieces) => scratch.view(pieces, &ParseOptions::DEFAULT),
        None => ChainFrame::whole(frame),
    };
    let layout = parse_frame(chain.view());
    let mut said = vec![format!("{layout:?}")];
    if let Ok(layout) = layout {
        let mut out = GsoOutput::new();
        let result = match pieces {
            Some(_) => gso::segment_chain(&chain, &layout, params, &mut out),
            None => gso::segment(frame, &layout, params, &mut out),
        };
        said.push(format!("{result:?}"));
        for s in out.iter() {
            said.push(format!("{:?} {:?} {:?}", s.header, s.payload_slice(frame), s.partial_checksum));
        }
    }
    said
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A super-packet given as pieces, cut anywhere (inside headers, at odd offsets,
    /// with empty pieces), is segmented exactly as its bytes in one buffer: every kind,
    /// tunnels, software and partial checksums, outer UDP checksums; mangled and cut
    /// frames are refused the same way.
    #[test]
    fn gso_of_a_chain_is_gso_of_its_bytes(
        base in prop_oneof![
            (1usize..20_000).prop_map(|n| build(&Spec::tcp4(n))),
            (1usize..9_000).prop_map(|n| build(&Spec::tcp6(n).encap(Encap::Vxlan, true))),
            (1usize..9_000).prop_map(|n| build(&Spec::udp4(n).encap(Encap::Geneve { options: 8 }, false))),
            (1usize..9_000).prop_map(|n| build(&Spec::udp4(n).encap(Encap::Gre { checksum: true, key: true }, false))),
            (1usize..9_000).prop_map(|n| build(&Spec::tcp4(n).encap(Encap::Geneve { options: 240 }, true))),
        ],
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..2),
        cut in prop_oneof![4 => Just(0usize), 1 => 1usize..64],
        size in prop_oneof![500u16..1500, any::<u16>()],
        kind in prop_oneof![Just(GsoKind::Tcp), Just(GsoKind::Udp), Just(GsoKind::UdpFragment)],
        (partial, outer_udp_checksum) in any::<(bool, bool)>(),
        cuts in proptest::collection::vec(prop_oneof![0usize..120, any::<usize>()], 0..6),
    ) {
        let mut frame = base;
        for (at, value) in flips {
            let at = at % frame.len();
            frame[at] = value;
        }
        frame.truncate(frame.len().saturating_sub(cut));
        let checksum = if partial { L4Checksum::Partial } else { L4Checksum::Full };
        let params = GsoParams { checksum, outer_udp_checksum, ..GsoParams::tcp(size).with_kind(kind) };
        let pieces = split(&frame, &cuts);
        prop_assert_eq!(gso_transcript(&frame, Some(&pieces), &params), gso_transcript(&frame, None, &params));
    }
}

#[test]
fn gso_chain_steady_state_allocates_nothing() {
    let frame = build(&Spec::tcp4(60_000).encap(Encap::Vxlan, false));
    let pieces: Vec<&[u8]> = frame.chunks(2047).collect();
    let params = GsoParams { outer_udp_checksum: true, ..GsoParams::tcp(1400) };
    let mut scratch = ChainScratch::new();
    let mut out = GsoOutput::new();
    let run = |scratch: &mut ChainScratch, out: &mut GsoOutput| {
        let chain = scratch.view(&pieces, &ParseOptions::DEFAULT);
        let layout = parse_frame(chain.view()).unwrap();
        gso::segment_chain(&chain, &layout, &params, out).unwrap();
    };
    run(&mut scratch, &mut out);
    let n = allocations_during(|| {
        for _ in 0..3 {
            run(&mut scratch, &mut out);
        }
    });
    assert_eq!(n, 0, "segment_chain allocated after the first call");
    assert_eq!(out.len(), 43);
}

/// A frame longer than the chain view (`chain::VIEW_MAX`: a 64 KiB packet followed by
/// padding) is segmented, or refused, as the same bytes in one buffer.
#[test]
fn gso_of_a_chain_longer_than_the_view_is_gso_of_its_bytes() {
    let mut frame = build(&Spec::tcp4(65_000));
    frame.extend(std::iter::repeat_n(0xa5, 1_000));
    assert!(frame.len() > offlab_engine::chain::VIEW_MAX);
    for checksum in [L4Checksum::Full, L4Checksum::Partial] {
        let params = GsoParams { checksum, ..GsoParams::tcp(1448) };
        let pieces = split(&frame, &[31, 40_001, 65_990]);
        assert_eq!(gso_transcript(&frame, Some(&pieces), &params), gso_transcript(&frame, None, &params));
    }
}
