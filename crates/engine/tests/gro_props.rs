//! Property tests of GRO:
//! 1. GSO then GRO gives back the original super-packet (TCP and UDP, IPv4/IPv6, plain,
//!    VXLAN, Geneve; PSH/FIN — not CWR, whose segment Linux and GRO deliver alone).
//! 2. On random interleavings of several flows with gaps, duplicates and reordering,
//!    GRO never merges across flows or gaps and never loses or duplicates a byte.

#[path = "../src/gro/tests/builder.rs"]
mod builder;

use builder::{Pkt, Tunnel, ACK, FIN, L4, PSH};
use offlab_engine::gro::{Gro, GroConfig, Merged, Part, RxMeta};
use offlab_engine::gso::{self, GsoKind, GsoOutput, GsoParams, L4Checksum};
use offlab_engine::wire::parse_frame;
use proptest::prelude::*;

/// One delivered run, copied out, or a refused frame passed through.
#[derive(Debug, Clone)]
struct Delivered {
    header: Vec<u8>,
    parts: Vec<Part>,
    segments: u16,
    gso_size: u16,
}

/// Pushes `frames` (id = index) through a fresh GRO, flushes, and returns what came
/// out in order; a refused frame comes out as itself (one part, no header change).
fn run_gro(frames: &[Vec<u8>], validated: bool) -> Vec<Delivered> {
    run_gro_with(frames, validated, GroConfig::default())
}

fn run_gro_with(frames: &[Vec<u8>], validated: bool, cfg: GroConfig) -> Vec<Delivered> {
    let mut gro = Gro::new(cfg);
    let mut out = Vec::new();
    for (id, frame) in frames.iter().enumerate() {
        let meta = RxMeta {
            csum_validated: validated,
            now: 0,
        };
        let mut collect = |m: Merged<'_>| out.push(copy(&m));
        if gro.push(id as u64, frame, meta, &mut collect).is_err() {
            out.push(Delivered {
                header: Vec::new(),
                parts: vec![Part {
                    id: id as u64,
                    offset: 0,
                    len: frame.len() as u32,
                }],
                segments: 1,
                gso_size: 0,
            });
        }
    }
    gro.flush(&mut |m: Merged<'_>| out.push(copy(&m)));
    let stats = gro.stats();
    assert_eq!(
        stats.emitted_segments + stats.refused_total(),
        frames.len() as u64
    );
    out
}

fn copy(m: &Merged<'_>) -> Delivered {
    Delivered {
        header: m.header.to_vec(),
        parts: m.parts.to_vec(),
        segments: m.segments,
        gso_size: m.vnet.gso_size,
    }
}

fn assemble(d: &Delivered, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = d.header.clone();
    for p in &d.parts {
        bytes.extend_from_slice(
            &frames[p.id as usize][p.payload()],
        );
    }
    bytes
}

/// Zeroes the innermost transport checksum (GSO fills it in per segment; GRO leaves the
/// merged one checksum-partial), so packets can be compared byte for byte otherwise.
fn without_l4_checksum(mut frame: Vec<u8>) -> Vec<u8> {
    let layout = parse_frame(&frame).expect("parses");
    let at = layout.ip.l4_offset
        + if layout.ip.l4 == offlab_engine::wire::L4Proto::Tcp {
            16
        } else {
            6
        };
    frame[at..at + 2].copy_from_slice(&[0, 0]);
    frame
}

fn super_packet() -> impl Strategy<Value = (Pkt, u16)> {
    (
        any::<bool>(),
        prop_oneof![Just(L4::Tcp), Just(L4::Udp)],
        0u8..3,
        any::<bool>(),
        100u16..1500,
        1usize..20_000,
        any::<(bool, bool)>(),
    )
        .prop_map(|(v6, l4, tunnel, df, mss, len, (psh, fin))| {
            let base = if v6 {
                Pkt::tcp6(7, len)
            } else {
                Pkt::tcp4(7, len)
            };
            let mut p = Pkt { l4, df, ..base };
            if l4 == L4::Tcp {
                p.flags = ACK | if psh { PSH } else { 0 } | if fin { FIN } else { 0 };
            }
            p.tunnel = match tunnel {
                1 => Some(Tunnel::vxlan(99)),
                2 => Some(Tunnel::geneve(5, vec![0, 1, 2, 1, 1, 2, 3, 4])),
                _ => None,
            };
            (p, mss)
        })
        // At most 64 segments: the UDP cap (the kernel's) and the default TCP cap.
        .prop_filter("fits one run", |(p, mss)| {
            p.payload.len().div_ceil(usize::from(*mss)) <= 64
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn gso_then_gro_gives_back_the_super_packet((pkt, mss) in super_packet()) {
        let original = pkt.build();
        let layout = parse_frame(&original).expect("parses");
        let kind = if pkt.l4 == L4::Tcp { GsoKind::Tcp } else { GsoKind::Udp };
        let params = GsoParams {
            checksum: L4Checksum::Full,
            ..GsoParams::tcp(mss).with_kind(kind)
        };
        let mut out = GsoOutput::new();
        gso::segment(&original, &layout, &params, &mut out).expect("segments");
        let frames: Vec<Vec<u8>> = (0..out.len())
            .filter_map(|i| out.segment(i))
            .map(|s| [s.header, s.payload_slice(&original)].concat())
            .collect();
        let delivered = run_gro(&frames, false);
        prop_assert_eq!(delivered.len(), 1, "one run expected, got {:?}", delivered.iter().map(|d| d.segments).collect::<Vec<_>>());
        let d = &delivered[0];
        prop_assert_eq!(usize::from(d.segments), frames.len());
        if frames.len() > 1 {
            prop_assert_eq!(d.gso_size, mss);
        }
        let merged = assemble(d, &frames);
        prop_assert_eq!(without_l4_checksum(merged), without_l4_checksum(original));
    }
}

/// A frame of the interleaving test: which flow it belongs to and its TCP sequence
/// number (or, for UDP, its position in the flow).
#[derive(Debug, Clone)]
struct Sent {
    flow: usize,
    seq: u32,
    len: usize,
}

fn flow_packet(flow: usize, seq: u32, len: usize, id: u16) -> Pkt {
    let base = match flow % 3 {
        0 => Pkt::tcp4(seq, len),
        1 => Pkt::tcp6(seq, len),
        _ => Pkt {
            tunnel: Some(Tunnel::vxlan(flow as u32)),
            ..Pkt::tcp4(seq, len)
        },
    };
    let mut p = Pkt {
        sport: 3000 + flow as u16,
        id,
        ..base
    };
    if let Some(t) = &mut p.tunnel {
        t.outer_id = id;
    }
    p
}

/// Events: (flow, index into that flow's segments) in the order they are sent, and the
/// table size (small tables evict, exercising the index's deletion).
fn interleaving() -> impl Strategy<Value = (usize, Vec<(usize, usize)>, usize)> {
    (2usize..24).prop_flat_map(|flows| {
        let event = (0..flows, 0usize..40);
        (
            Just(flows),
            prop::collection::vec(event, 1..300),
            1usize..12,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn gro_never_mixes_flows_or_skips_or_repeats_bytes((flows, events, max_flows) in interleaving()) {
        // Each flow has 40 segments of 300 bytes (every 7th one shorter). An event sends
        // segment `i` of a flow: repeats are duplicates, skips are gaps, any order.
        let seg_len = |i: usize| if i % 7 == 6 { 120 } else { 300 };
        let seq_of = |i: usize| (0..i).map(seg_len).sum::<usize>() as u32;
        let mut sent = Vec::new();
        let frames: Vec<Vec<u8>> = events
            .iter()
            .map(|&(flow, i)| {
                sent.push(Sent { flow, seq: seq_of(i), len: seg_len(i) });
                flow_packet(flow, seq_of(i), seg_len(i), i as u16).build()
            })
            .collect();
        prop_assert!(flows >= 2);
        let delivered = run_gro_with(&frames, false, GroConfig { max_flows, ..GroConfig::default() });
        let mut seen = vec![0u32; frames.len()];
        for d in &delivered {
            prop_assert_eq!(usize::from(d.segments), d.parts.len());
            let first = &sent[d.parts[0].id as usize];
            let mut next_seq = first.seq;
            for (k, p) in d.parts.iter().enumerate() {
                seen[p.id as usize] += 1;
                let s = &sent[p.id as usize];
                prop_assert_eq!(s.flow, first.flow, "a run mixes flows");
                prop_assert_eq!(s.seq, next_seq, "a run skips or repeats bytes");
                prop_assert_eq!(p.payload().len(), if d.header.is_empty() { frames[p.id as usize].len() } else { s.len });
                if k + 1 < d.parts.len() {
                    prop_assert_eq!(s.len, first.len, "only the last segment may be shorter");
                }
                next_seq = next_seq.wrapping_add(s.len as u32);
            }
            if d.segments > 1 {
                // The merged packet carries exactly the payload of its parts, in order.
                let merged = assemble(d, &frames);
                let layout = parse_frame(&merged).expect("merged packet parses");
                prop_assert_eq!(layout.payload().len(), d.parts.iter().map(|p| p.payload().len()).sum::<usize>());
            }
        }
        prop_assert!(seen.iter().all(|&n| n == 1), "every frame comes out exactly once: {:?}", seen);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Frames with random bytes overwritten or cut short never make GRO panic, and every
    /// frame still comes out exactly once (merged or refused).
    #[test]
    fn gro_survives_mangled_frames(
        kind in 0usize..6,
        count in 1usize..12,
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), any::<prop::sample::Index>()), 0..8),
        cut in prop::option::of(any::<prop::sample::Index>()),
        validated in any::<bool>(),
    ) {
        let mut pkt = match kind {
            0 => Pkt::tcp4(1, 200),
            1 => Pkt::tcp6(1, 200),
            2 => Pkt::udp4(200),
            3 => Pkt { tunnel: Some(Tunnel::vxlan(3)), ..Pkt::tcp4(1, 200) },
            4 => Pkt { tunnel: Some(Tunnel::geneve(3, vec![0, 1, 2, 1, 9, 9, 9, 9])), ..Pkt::udp6(200) },
            _ => Pkt { vlan: Some(5), ext: Some([1, 4, 0, 0, 0, 0]), ..Pkt::tcp6(1, 200) },
        };
        let mut frames = Vec::new();
        for _ in 0..count {
            frames.push(pkt.build());
            pkt = pkt.next(200);
        }
        for (frame_index, value, at) in &edits {
            let frame = &mut frames[frame_index.index(count)];
            let at = at.index(frame.len());
            frame[at] = *value;
        }
        if let Some(cut) = cut {
            let frame = &mut frames[cut.index(count)];
            let len = cut.index(frame.len());
            frame.truncate(len);
        }
        let delivered = run_gro(&frames, validated);
        let mut seen = vec![0u32; frames.len()];
        for d in &delivered {
            for p in &d.parts {
                seen[p.id as usize] += 1;
                prop_assert!(p.payload().end <= frames[p.id as usize].len());
            }
        }
        prop_assert!(seen.iter().all(|&n| n == 1));
    }
}

/// Counts heap allocations made by the current thread (tests run on several threads).
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        pub static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    }

    pub struct Counting;

    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
            // SAFETY: forwarded unchanged to the system allocator.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: `ptr` came from `System.alloc` with this layout.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    pub fn count() -> u64 {
        ALLOCATIONS.with(|n| n.get())
    }
}

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

#[test]
fn gro_steady_state_does_not_allocate() {
    // Frames of every kind, built before counting starts.
    let mut frames = Vec::new();
    for flow in 0..6u16 {
        let mut p = match flow % 3 {
            0 => Pkt::tcp4(1, 1000),
            1 => Pkt {
                tunnel: Some(Tunnel::vxlan(1)),
                ..Pkt::tcp6(1, 1000)
            },
            _ => Pkt::udp4(1000),
        };
        p.sport = 100 + flow;
        for _ in 0..100 {
            frames.push(p.build());
            p = p.next(1000);
        }
    }
    let mut gro = Gro::new(GroConfig {
        max_flows: 4,
        ..GroConfig::default()
    });
    let mut segments = 0u64;
    let probe = counting::count();
    drop(std::hint::black_box(Vec::<u8>::with_capacity(8)));
    assert!(counting::count() > probe, "the allocation counter counts");
    let before = counting::count();
    for (i, frame) in frames.iter().enumerate() {
        let meta = RxMeta {
            csum_validated: i % 2 == 0,
            now: i as u64,
        };
        let _ = gro.push(i as u64, frame, meta, &mut |m: Merged<'_>| {
            segments += u64::from(m.segments)
        });
        if i % 50 == 0 {
            gro.flush_older_than(i as u64, 10, &mut |m: Merged<'_>| {
                segments += u64::from(m.segments)
            });
        }
    }
    gro.flush(&mut |m: Merged<'_>| segments += u64::from(m.segments));
    assert_eq!(counting::count(), before, "push/flush allocated");
    assert_eq!(segments, frames.len() as u64);
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

/// Cut positions: some in the headers (so they span pieces), some anywhere.
fn cuts() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![0usize..120, any::<usize>()], 0..6)
}

/// Everything GRO says about `frames` (each pushed as `push(frame)` or, with `cuts`,
/// as `push_chain` of its pieces): verdicts, delivered runs in full, and the counters.
fn gro_transcript(frames: &[Vec<u8>], validated: bool, cuts: Option<&[usize]>) -> Vec<String> {
    let mut gro = Gro::new(GroConfig { max_flows: 4, ..GroConfig::default() });
    let mut said = Vec::new();
    for (id, frame) in frames.iter().enumerate() {
        let meta = RxMeta { csum_validated: validated, now: id as u64 };
        let mut collect = |m: Merged<'_>| said.push(format!("{m:?}"));
        let verdict = match cuts {
            None => gro.push(id as u64, frame, meta, &mut collect),
            Some(cuts) => gro.push_chain(id as u64, &split(frame, cuts), meta, &mut collect),
        };
        said.push(format!("{verdict:?}"));
    }
    gro.flush(&mut |m: Merged<'_>| said.push(format!("{m:?}")));
    said.push(format!("{:?}", gro.stats()));
    said
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A frame pushed as pieces, cut anywhere (inside headers, at odd offsets, with
    /// empty pieces), gets exactly what the same bytes get in one buffer: the segments
    /// of a super-packet, some mangled or cut short (refusals, bad checksums), and a
    /// Geneve frame whose headers are longer than the bytes copied up front.
    #[test]
    fn gro_of_a_chain_is_gro_of_its_bytes(
        (pkt, mss) in super_packet(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), any::<prop::sample::Index>()), 0..3),
        cut in prop::option::of(any::<prop::sample::Index>()),
        long_headers in any::<bool>(),
        validated in any::<bool>(),
        cuts in cuts(),
    ) {
        let mut pkt = pkt;
        if long_headers {
            // Two Geneve options of 4 + 116 bytes: 240 option bytes, headers of 300+.
            let option = |class: u8| [vec![0, class, 2, 29], vec![class; 116]].concat();
            pkt.tunnel = Some(Tunnel::geneve(5, [option(1), option(2)].concat()));
        }
        let original = pkt.build();
        let layout = parse_frame(&original).expect("parses");
        let kind = if pkt.l4 == L4::Tcp { GsoKind::Tcp } else { GsoKind::Udp };
        let params = GsoParams { checksum: L4Checksum::Full, ..GsoParams::tcp(mss).with_kind(kind) };
        let mut out = GsoOutput::new();
        gso::segment(&original, &layout, &params, &mut out).expect("segments");
        let mut frames: Vec<Vec<u8>> = out.iter().map(|s| [s.header, s.payload_slice(&original)].concat()).collect();
        let count = frames.len();
        for (frame_index, value, at) in &edits {
            let frame = &mut frames[frame_index.index(count)];
            let at = at.index(frame.len());
            frame[at] = *value;
        }
        if let Some(cut) = cut {
            let frame = &mut frames[cut.index(count)];
            let len = cut.index(frame.len());
            frame.truncate(len);
        }
        let whole = gro_transcript(&frames, validated, None);
        let chained = gro_transcript(&frames, validated, Some(&cuts));
        prop_assert_eq!(chained, whole);
    }
}

#[test]
fn gro_chain_steady_state_does_not_allocate() {
    let mut frames = Vec::new();
    for flow in 0..4u16 {
        let mut p = match flow % 2 {
            0 => Pkt::tcp4(1, 1000),
            _ => Pkt { tunnel: Some(Tunnel::vxlan(1)), ..Pkt::tcp6(1, 1000) },
        };
        p.sport = 100 + flow;
        for _ in 0..50 {
            frames.push(p.build());
            p = p.next(1000);
        }
    }
    let mut gro = Gro::new(GroConfig::default());
    let mut segments = 0u64;
    let push = |gro: &mut Gro, i: usize, frame: &[u8], segments: &mut u64| {
        // A header piece, an odd cut in the payload, an empty piece.
        let chain: [&[u8]; 4] = [&frame[..30], &frame[30..501], &[], &frame[501..]];
        let meta = RxMeta { csum_validated: i.is_multiple_of(2), now: i as u64 };
        let _ = gro.push_chain(i as u64, &chain, meta, &mut |m: Merged<'_>| *segments += u64::from(m.segments));
    };
    push(&mut gro, 0, &frames[0], &mut segments);
    let before = counting::count();
    for (i, frame) in frames.iter().enumerate().skip(1) {
        push(&mut gro, i, frame, &mut segments);
    }
    gro.flush(&mut |m: Merged<'_>| segments += u64::from(m.segments));
    assert_eq!(counting::count(), before, "push_chain allocated after the first chained frame");
    assert_eq!(segments, frames.len() as u64);
}

/// Frames longer than the chain view (`chain::VIEW_MAX`: a 64 KiB packet followed by
/// padding), validated or verified, get what the same bytes get in one buffer.
#[test]
fn gro_of_a_chain_longer_than_the_view_is_gro_of_its_bytes() {
    let mut frame = Pkt::tcp4(1, 65_000).build();
    frame.extend(std::iter::repeat_n(0xa5, 1_000));
    assert!(frame.len() > offlab_engine::chain::VIEW_MAX);
    let frames = vec![frame, Pkt::tcp4(1, 65_000).build()];
    for validated in [false, true] {
        let cuts = [31, 40_001, 65_990];
        assert_eq!(gro_transcript(&frames, validated, Some(&cuts)), gro_transcript(&frames, validated, None));
    }
}
