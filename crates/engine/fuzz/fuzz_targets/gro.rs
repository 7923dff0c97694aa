//! `Gro::push`/`flush` never panic, and coalescing adds up: every frame offered is
//! either handed back or delivered exactly once as a part whose bytes are that frame's
//! payload, and every merged packet parses back with exactly its parts as payload.
//!
//! Input: a control byte, then frames as (u16 little-endian length, bytes). With bit 0
//! of the control byte set, the first frame is instead cut by `gso::segment` into a
//! series of TCP segments (size from the next two bytes), which are offered in order:
//! a GSO → GRO round trip that has to give back the original payload.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use offlab_engine::gro::{Gro, GroConfig, Merged, RxMeta};
use offlab_engine::gso::{self, GsoOutput, GsoParams};
use offlab_engine::wire::{parse_frame, IpVersion, Ipv4Packet, Layout};

const MAX_FRAMES: usize = 64;

fuzz_target!(|input: &[u8]| {
    let Some((&control, rest)) = input.split_first() else {
        return;
    };
    let frames = if control & 1 != 0 {
        gso_series(rest)
    } else {
        split_frames(rest)
    };
    let Some(frames) = frames else {
        return;
    };
    let meta = RxMeta {
        csum_validated: control & 2 != 0,
        now: 0,
    };
    let config = GroConfig {
        max_flows: 1 + usize::from(control >> 4),
        ..GroConfig::default()
    };
    let mut gro = Gro::new(config);
    let mut delivered = vec![0usize; frames.len()];
    let mut refused = vec![false; frames.len()];
    // Payload bytes in the order they leave: merged packets as delivered, refused
    // frames where they were handed back.
    let stream = RefCell::new(Vec::new());
    {
        let mut check = |merged: Merged<'_>| {
            check_merged(&merged, &frames, &mut delivered, &mut stream.borrow_mut())
        };
        for (id, frame) in frames.iter().enumerate() {
            if gro.push(id as u64, frame, meta, &mut check).is_err() {
                refused[id] = true;
                if let Some(layout) = payload_of(frame) {
                    stream
                        .borrow_mut()
                        .extend_from_slice(&frame[layout.payload()]);
                }
            }
        }
        gro.flush(&mut check);
    }
    assert_eq!(gro.held_flows(), 0);
    for id in 0..frames.len() {
        let expected = usize::from(!refused[id]);
        assert_eq!(
            delivered[id], expected,
            "frame {id} delivered {} times",
            delivered[id]
        );
    }
    if control & 1 != 0 {
        // GSO → GRO round trip of one flow: the bytes come back whole and in order.
        let original = parse_frame(&rest[2..]).expect("segmented, so it parsed");
        assert_eq!(
            stream.into_inner(),
            &rest[2..][original.payload()],
            "payload lost, reordered or invented"
        );
    }
});

fn payload_of(frame: &[u8]) -> Option<Layout> {
    parse_frame(frame).ok()
}

fn check_merged(
    merged: &Merged<'_>,
    frames: &[Vec<u8>],
    delivered: &mut [usize],
    stream: &mut Vec<u8>,
) {
    assert!(!merged.parts.is_empty());
    assert_eq!(usize::from(merged.segments), merged.parts.len());
    let mut packet = merged.header.to_vec();
    for part in merged.parts {
        let id = usize::try_from(part.id).expect("ids are small");
        delivered[id] += 1;
        let frame = &frames[id];
        let layout = parse_frame(frame).expect("a held frame parsed");
        let range = part.payload();
        assert_eq!(
            range,
            layout.payload(),
            "a part is its frame's whole payload"
        );
        packet.extend_from_slice(&frame[range.clone()]);
        stream.extend_from_slice(&frame[range]);
    }
    let layout = parse_frame(&packet).expect("a merged packet parses");
    assert_eq!(layout.headers_len(), merged.header.len());
    assert_eq!(layout.frame_end(), packet.len());
    if layout.ip.version == IpVersion::V4 {
        assert!(Ipv4Packet::new_checked(&packet[layout.ip.offset..])
            .unwrap()
            .verify_checksum());
    }
}

fn split_frames(mut rest: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut frames = Vec::new();
    while let Some((len, tail)) = rest.split_first_chunk::<2>() {
        let len = usize::from(u16::from_le_bytes(*len)).min(tail.len());
        let mut frame = tail[..len].to_vec();
        fix_ipv4_checksums(&mut frame);
        frames.push(frame);
        rest = &tail[len..];
        if frames.len() == MAX_FRAMES {
            break;
        }
    }
    Some(frames)
}

/// Random bytes almost never carry a right IPv4 header checksum, which GRO always
/// checks; fixing it lets the fuzzer reach the merge rules.
fn fix_ipv4_checksums(frame: &mut [u8]) {
    let Ok(layout) = parse_frame(frame) else {
        return;
    };
    for ip in [Some(layout.ip), layout.tunnel.map(|t| t.outer)]
        .into_iter()
        .flatten()
    {
        if ip.version == IpVersion::V4 {
            Ipv4Packet::new_unchecked(&mut frame[ip.offset..ip.end]).fill_checksum();
        }
    }
}

fn gso_series(rest: &[u8]) -> Option<Vec<Vec<u8>>> {
    let (size, frame) = rest.split_first_chunk::<2>()?;
    let mut frame = frame.to_vec();
    fix_ipv4_checksums(&mut frame);
    let layout = parse_frame(&frame).ok()?;
    let mut out = GsoOutput::new();
    gso::segment(
        &frame,
        &layout,
        &GsoParams::tcp(u16::from_le_bytes(*size)),
        &mut out,
    )
    .ok()?;
    if out.len() > MAX_FRAMES {
        return None;
    }
    Some(
        out.iter()
            .map(|s| [s.header, &frame[s.payload.clone()]].concat())
            .collect(),
    )
}
