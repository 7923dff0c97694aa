//! The fast paths (`plain.rs` for plain TCP/IPv4, `template.rs` for every other shape)
//! must not change a single decision: random frames of every shape — plain, VLAN,
//! IPv6 with and without extension headers, UDP, VXLAN and Geneve over IPv4 and IPv6
//! with inner IPv4 or IPv6, mutated, padded, truncated — go through a table with them
//! and one forced to the general path, and every result, delivered run and counter
//! must be equal. Each frame the plain classifier accepts must also yield exactly the
//! facts the general classifier reads.

use super::builder::{finish, sum, Pkt, Tunnel, L4, ACK, CWR, ECE, FIN, PSH, RST, SYN, URG};
use super::{copy, Gro, GroConfig, Merged, RxMeta};
use crate::gro::kind::VXLAN_OUTER;
use crate::gro::plain::{self, Plain};
use crate::gro::plain6::{self, Plain6};
use crate::gro::{facts, HEADER_CAP};
use crate::wire::layout::IpVersion;
use crate::wire::parse::{parse_frame, ParseOptions};
use proptest::prelude::*;

/// One frame to push: which flow, what kind of frame, and how it is damaged.
#[derive(Debug, Clone)]
struct Step {
    flow: u8,
    kind: u8,
    len: usize,
    flags: u8,
    /// Skip (or repeat) sequence space and IP IDs.
    seq_skip: u8,
    id_skip: u8,
    ttl_bump: bool,
    options: u8,
    validated: bool,
    bad_ip_checksum: bool,
    /// Byte to flip, and whether to then refresh the IPv4 header checksum at 14.
    mutation: Option<(usize, u8, bool)>,
    pad: u8,
    cut: u8,
    flush: bool,
}

/// Where to damage a frame: mostly the fields the fast classifier reads.
fn offset() -> impl Strategy<Value = usize> {
    // EtherType, version/IHL, TOS, total length, flags/fragment, TTL, protocol, the TCP
    // data offset and flags (for untagged IPv4 TCP frames); the fields the fast join
    // compares as masked words or masks out (IP ID and checksum, sequence, ACK, window,
    // TCP checksum and urgent pointer, option bytes); then anywhere.
    let fields = vec![
        12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 38, 41, 42, 45, 46, 47, 48, 49, 50,
        52, 53, 54, 57, 61, 65,
    ];
    // The same fields of the inner headers of a VXLAN frame (inner IPv4 at 64): ID,
    // TTL, checksum, sequence number, flags, window.
    let vxlan_fields = vec![68, 69, 72, 74, 75, 88, 97, 98];
    // Tunnelled and IPv6 frames have their per-segment fields further in.
    prop_oneof![
        3 => prop::sample::select(fields),
        1 => prop::sample::select(vxlan_fields),
        2 => 0usize..170,
    ]
}

/// How to damage a byte: one bit (small, targeted changes) or any pattern.
fn xor() -> impl Strategy<Value = u8> {
    prop_oneof![(0u32..8).prop_map(|b| 1u8 << b), 1u8..=255]
}

fn step() -> impl Strategy<Value = Step> {
    let flags = prop_oneof![
        6 => Just(ACK),
        1 => Just(ACK | PSH),
        1 => Just(ACK | FIN),
        1 => Just(ACK | ECE),
        1 => prop::sample::select(vec![SYN, RST, URG, CWR, 0, ACK | SYN, ACK | CWR, ACK | URG]),
    ];
    (
        (
            0u8..3,
            // Mostly the flow's own shape (so runs of every shape form), sometimes another.
            prop_oneof![4 => Just(FLOW_SHAPE), 1 => 0u8..SHAPES],
            prop::sample::select(vec![0usize, 1, 7, 100, 1448, 1448, 1448]),
            flags,
        ),
        (
            prop_oneof![8 => Just(0u8), 1 => 1u8..3],
            prop_oneof![8 => Just(0u8), 1 => 1u8..3],
            prop::bool::weighted(0.05),
            0u8..3,
        ),
        (prop::bool::weighted(0.9), prop::bool::weighted(0.05)),
        (
            prop::option::weighted(0.3, (offset(), xor(), prop::bool::weighted(0.8))),
            prop_oneof![9 => Just(0u8), 1 => 1u8..5],
            prop_oneof![9 => Just(0u8), 1 => 1u8..30],
            prop::bool::weighted(0.03),
        ),
    )
        .prop_map(
            |(
                (flow, kind, len, flags),
                (seq_skip, id_skip, ttl_bump, options),
                (validated, bad_ip_checksum),
                (mutation, pad, cut, flush),
            )| Step {
                flow,
                kind,
                len,
                flags,
                seq_skip,
                id_skip,
                ttl_bump,
                options,
                validated,
                bad_ip_checksum,
                mutation,
                pad,
                cut,
                flush,
            },
        )
}

/// Frame shapes `shape_of` builds; `FLOW_SHAPE` stands for the step's flow's own.
const SHAPES: u8 = 16;
const FLOW_SHAPE: u8 = u8::MAX;

/// Sets `p` up as one of the `SHAPES` frame shapes.
fn shape_of(p: &mut Pkt, kind: u8) {
    let geneve_options = vec![0x01, 0x02, 0x80, 0x01, 0xde, 0xad, 0xbe, 0xef];
    match kind {
        0..=3 => {}
        4 => p.vlan = Some(5),
        5 => p.ip_options = true,
        6 => p.v6 = true,
        7 => p.tunnel = Some(Tunnel::vxlan(7)),
        8 => {
            p.v6 = true;
            p.tunnel = Some(Tunnel::vxlan(8));
        }
        9 => {
            let mut t = Tunnel::geneve(9, geneve_options);
            t.outer_v6 = true;
            p.tunnel = Some(t);
        }
        10 => {
            let mut t = Tunnel::geneve(10, Vec::new());
            t.outer_udp_checksum = true;
            t.outer_df = true;
            p.v6 = true;
            p.tunnel = Some(t);
        }
        11 => p.l4 = L4::Udp,
        12 => {
            p.l4 = L4::Udp;
            p.v6 = true;
        }
        13 => {
            p.l4 = L4::Udp;
            p.tunnel = Some(Tunnel::vxlan(13));
        }
        14 => {
            p.v6 = true;
            p.ext = Some([0; 6]);
        }
        _ => {
            p.v6 = true;
            p.vlan = Some(6);
        }
    }
}

/// The frame for `step`, advancing its flow's sequence number and IP ID.
fn build(step: &Step, flow_shapes: [u8; 3], next: &mut [(u32, u16); 3]) -> Vec<u8> {
    let (seq, id) = &mut next[usize::from(step.flow)];
    *seq = seq.wrapping_add(u32::from(step.seq_skip) * 100);
    *id = id.wrapping_add(u16::from(step.id_skip));
    let mut p = Pkt::tcp4(*seq, step.len);
    p.sport = 1000 + u16::from(step.flow);
    p.id = *id;
    p.flags = step.flags;
    p.ttl = if step.ttl_bump { 63 } else { 64 };
    p.bad_ip_checksum = step.bad_ip_checksum;
    p.tcp_options = match step.options {
        0 => vec![1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2],
        1 => Vec::new(),
        _ => vec![1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 2],
    };
    let kind = match step.kind {
        FLOW_SHAPE => flow_shapes[usize::from(step.flow)],
        kind => kind,
    };
    shape_of(&mut p, kind);
    if let Some(t) = &mut p.tunnel {
        t.outer_id = id.wrapping_add(300);
    }
    *seq = seq.wrapping_add(step.len as u32);
    *id = id.wrapping_add(1);
    let mut frame = p.build();
    if let Some((at, xor, refresh)) = step.mutation {
        if let Some(b) = frame.get_mut(at) {
            *b ^= xor;
        }
        if refresh {
            refresh_ipv4_checksum(&mut frame);
        }
    }
    frame.extend(std::iter::repeat_n(0, usize::from(step.pad)));
    frame.truncate(frame.len().saturating_sub(usize::from(step.cut)));
    frame
}

/// Recomputes the checksum of every IPv4 header the mutated frame still has, so that
/// a mutated header reaches the rules after the checksum.
fn refresh_ipv4_checksum(frame: &mut [u8]) {
    let Ok(layout) = parse_frame(frame) else { return };
    let layers = [layout.tunnel.map(|t| t.outer), Some(layout.ip)];
    for ip in layers.into_iter().flatten() {
        if ip.version != IpVersion::V4 || frame.len() < ip.offset + ip.header_len {
            continue;
        }
        let at = ip.offset + 10;
        frame[at..at + 2].copy_from_slice(&[0, 0]);
        let checksum = finish(sum(&frame[ip.offset..ip.offset + ip.header_len], 0));
        frame[at..at + 2].copy_from_slice(&checksum.to_be_bytes());
    }
}

/// Pushes every step through `gro`; returns what came out, as comparable text.
fn run(mut gro: Gro, frames: &[Vec<u8>], steps: &[Step]) -> (Vec<String>, crate::gro::GroStats) {
    let mut log = Vec::new();
    for (i, (frame, step)) in frames.iter().zip(steps).enumerate() {
        let meta = RxMeta {
            csum_validated: step.validated,
            now: i as u64,
        };
        let mut outs = Vec::new();
        let r = gro.push(i as u64, frame, meta, &mut |m: Merged<'_>| {
            outs.push(copy(&m))
        });
        log.push(format!("{i}: {r:?} {outs:?}"));
        if step.flush {
            gro.flush_older_than(i as u64, 3, &mut |m: Merged<'_>| {
                log.push(format!("aged {:?}", copy(&m)))
            });
        }
    }
    gro.flush(&mut |m: Merged<'_>| log.push(format!("flush {:?}", copy(&m))));
    (log, gro.stats().clone())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn fast_path_changes_no_decision(steps in prop::collection::vec(step(), 1..120), flow_shapes in [0u8..SHAPES, 0u8..SHAPES, 0u8..SHAPES], max_flows in 1usize..4, max_segments_tcp in 2u16..30, max_bytes in prop_oneof![Just(65535usize), 1500usize..12000, (2usize..8, 0usize..2).prop_map(|(k, d)| 52 + k * 1448 - d)]) {
        let mut next = [(0u32, 0u16); 3];
        let frames: Vec<Vec<u8>> = steps.iter().map(|s| build(s, flow_shapes, &mut next)).collect();
        for (frame, s) in frames.iter().zip(&steps) {
            let general = || facts::classify(frame, s.validated, HEADER_CAP, &ParseOptions::DEFAULT).ok();
            if let Some(p) = Plain::<0>::check(frame, s.validated, HEADER_CAP, &ParseOptions::DEFAULT) {
                let fast = p.facts(plain::hash_at::<0>(frame).unwrap());
                prop_assert_eq!(Some(fast), general());
                prop_assert_eq!(fast.hash, crate::gro::flow::flow_hash(&fast.shape, frame));
            }
            if let Some(p) = Plain6::check(frame, s.validated, HEADER_CAP) {
                let fast = p.facts(plain6::hash_at(frame).unwrap());
                prop_assert_eq!(Some(fast), general());
            }
            if let Some(p) = Plain::<VXLAN_OUTER>::check(frame, s.validated, HEADER_CAP, &ParseOptions::DEFAULT) {
                let fast = p.facts(plain::hash_at::<VXLAN_OUTER>(frame).unwrap());
                prop_assert_eq!(Some(fast), general());
                prop_assert_eq!(fast.hash, crate::gro::flow::flow_hash(&fast.shape, frame));
            }
        }
        let cfg = GroConfig { max_flows, max_segments_tcp, max_bytes, ..GroConfig::default() };
        let fast = run(Gro::new(cfg), &frames, &steps);
        let general = run(Gro::new(cfg).general_path_only(), &frames, &steps);
        prop_assert_eq!(fast, general);
    }
}

#[test]
fn plain_frames_take_the_fast_path() {
    let parse = ParseOptions::DEFAULT;
    let p = Pkt::tcp4(0, 1448);
    assert!(Plain::<0>::check(&p.build(), true, HEADER_CAP, &parse).is_some());
    // Not validated: the general path verifies the TCP checksum.
    assert!(Plain::<0>::check(&p.build(), false, HEADER_CAP, &parse).is_none());
    let mut vxlan = p.clone();
    vxlan.tunnel = Some(Tunnel::vxlan(7));
    assert!(Plain::<VXLAN_OUTER>::check(&vxlan.build(), true, HEADER_CAP, &parse).is_some());
    assert!(Plain::<0>::check(&vxlan.build(), true, HEADER_CAP, &parse).is_none());
    // A VXLAN header without its I flag does not parse: not for the fast path either.
    let mut no_vni_flag = vxlan.build();
    no_vni_flag[42] &= !0x08;
    assert!(Plain::<VXLAN_OUTER>::check(&no_vni_flag, true, HEADER_CAP, &parse).is_none());
    let v6 = Pkt::tcp6(0, 1448).build();
    assert!(Plain6::check(&v6, true, HEADER_CAP).is_some());
    assert!(Plain::<0>::check(&v6, true, HEADER_CAP, &parse).is_none());
    // Without tunnel decoding the same frame is plain UDP to the general path.
    let no_tunnels = parse.without_tunnels();
    assert!(Plain::<VXLAN_OUTER>::check(&vxlan.build(), true, HEADER_CAP, &no_tunnels).is_none());
}

/// Every shape but IPv4 with options (never coalesced), TCP/IPv4 in VXLAN over IPv4
/// (`plain.rs` takes it) and TCP/IPv6 (`plain6.rs`) continues its run by template,
/// without being parsed: the 2nd..5th segments join through `push_by_template`, and a
/// second flow's head is classified by the template too.
#[test]
fn every_shape_joins_by_template() {
    for kind in (4..SHAPES).filter(|&k| ![5, 6, 7].contains(&k)) {
        let mut p = Pkt::tcp4(1000, 1448);
        shape_of(&mut p, kind);
        let mut gro = Gro::new(GroConfig::default());
        let meta = RxMeta { csum_validated: true, now: 0 };
        let mut out = Vec::new();
        let mut deliver = |m: Merged<'_>| out.push(copy(&m));
        assert!(gro.push(0, &p.build(), meta, &mut deliver).is_ok(), "shape {kind} opens a run");
        for id in 1..5 {
            p = p.next(1448);
            if p.l4 == L4::Udp {
                p.seq = 1000;
            }
            let joined = gro.push_by_template(id, &p.build(), id, &mut deliver);
            assert_eq!(joined, Some(Ok(super::Held::Merged)), "shape {kind} segment {id}");
        }
        let mut other = Pkt::tcp4(7, 1448);
        shape_of(&mut other, kind);
        other.sport += 1;
        let opened = gro.push_by_template(9, &other.build(), 9, &mut deliver);
        assert_eq!(opened, Some(Ok(super::Held::NewFlow)), "shape {kind}: 2nd flow's head");
        gro.flush(&mut deliver);
        assert_eq!(out.len(), 2, "shape {kind}: two runs");
        assert_eq!(out[0].segments, 5, "shape {kind}");
    }
}

/// The next full-size segment of a held TCP/IPv4 run, bare or in VXLAN, and of a
/// TCP/IPv6 run joins in `push` itself (`continue_run`: the masked header compare, the
/// IPv4 header checksums beside the head's, the ID and sequence rules), as its IDs and
/// checksums change from segment to segment.
#[test]
fn next_segments_continue_their_run_in_push() {
    let bare = Pkt::tcp4(1000, 1448);
    let vxlan = Pkt { tunnel: Some(Tunnel::vxlan(42)), ..Pkt::tcp4(1000, 1448) };
    let v6 = Pkt::tcp6(1000, 1448);
    for (name, head) in [("bare", bare), ("vxlan", vxlan), ("v6", v6)] {
        let mut gro = Gro::new(GroConfig::default());
        let meta = RxMeta { csum_validated: true, now: 0 };
        let mut deliver = |_: Merged<'_>| {};
        let mut p = head.clone();
        assert!(gro.push(0, &p.build(), meta, &mut deliver).is_ok(), "{name}: opens");
        for id in 1..20 {
            p = p.next(1448);
            let frame = p.build();
            let continued = match name {
                "bare" => gro.continue_run::<0>(&frame).is_ok(),
                "vxlan" => gro.continue_run::<VXLAN_OUTER>(&frame).is_ok(),
                _ => gro.continue_run6(&frame).is_ok(),
            };
            assert!(continued, "{name}: segment {id} continues in push");
            assert!(gro.push(id, &frame, meta, &mut deliver).is_ok(), "{name}: segment {id} joins");
        }
    }
}
