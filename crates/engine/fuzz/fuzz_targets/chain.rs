//! A frame given as pieces is treated exactly as its bytes in one buffer, by GSO
//! (`gso::segment_chain` against `gso::segment`) and by GRO (`Gro::push_chain` against
//! `Gro::push`, for the frame and then its GSO segments, each cut the same way).
//!
//! Input: a control byte (bit 0: checksums validated for GRO; bits 1-2: GSO kind;
//! bit 3: software L4 checksum; bit 4: outer UDP checksum), a byte whose low 3 bits
//! count the cuts, that many u16 little-endian cut positions (modulo the frame length
//! plus one; repeats give empty pieces), a u16 little-endian segment size, then the
//! frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use offlab_engine::chain::{ChainFrame, ChainScratch};
use offlab_engine::gro::{Gro, GroConfig, Merged, RxMeta};
use offlab_engine::gso::{self, GsoKind, GsoOutput, GsoParams, L4Checksum};
use offlab_engine::wire::{parse_frame, ParseOptions};

fuzz_target!(|input: &[u8]| {
    let Some((&[control, count], rest)) = input.split_first_chunk::<2>() else {
        return;
    };
    let cut_bytes = 2 * usize::from(count & 7);
    if rest.len() < cut_bytes + 2 {
        return;
    }
    let (cut_bytes, rest) = rest.split_at(cut_bytes);
    let cuts: Vec<usize> = cut_bytes
        .chunks(2)
        .map(|c| usize::from(u16::from_le_bytes([c[0], c[1]])))
        .collect();
    let size = u16::from_le_bytes([rest[0], rest[1]]);
    let frame = &rest[2..];
    let kind = match (control >> 1) & 3 {
        0 => GsoKind::Tcp,
        1 => GsoKind::Udp,
        _ => GsoKind::UdpFragment,
    };
    let params = GsoParams {
        checksum: if control & 8 != 0 { L4Checksum::Full } else { L4Checksum::Partial },
        outer_udp_checksum: control & 16 != 0,
        ..GsoParams::tcp(size).with_kind(kind)
    };
    let mut scratch = ChainScratch::new();
    let (whole, segments) = gso_transcript(frame, None, &params, &mut scratch);
    let (chained, _) = gso_transcript(frame, Some(&cuts), &params, &mut scratch);
    assert_eq!(chained, whole, "GSO of the chain differs");

    let mut frames = vec![frame.to_vec()];
    frames.extend(segments);
    let validated = control & 1 != 0;
    assert_eq!(
        gro_transcript(&frames, validated, Some(&cuts)),
        gro_transcript(&frames, validated, None),
        "GRO of the chain differs"
    );
});

/// `frame` cut at `cuts` (taken modulo its length plus one), in order.
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

/// What GSO says of `frame` (whole, or cut at `cuts`), and its segments as frames.
fn gso_transcript(
    frame: &[u8],
    cuts: Option<&[usize]>,
    params: &GsoParams,
    scratch: &mut ChainScratch,
) -> (Vec<String>, Vec<Vec<u8>>) {
    let pieces = cuts.map(|cuts| split(frame, cuts));
    let chain = match &pieces {
        Some(pieces) => scratch.view(pieces, &ParseOptions::DEFAULT),
        None => ChainFrame::whole(frame),
    };
    let layout = parse_frame(chain.view());
    let mut said = vec![format!("{layout:?}")];
    let mut segments = Vec::new();
    if let Ok(layout) = layout {
        let mut out = GsoOutput::new();
        let result = gso::segment_chain(&chain, &layout, params, &mut out);
        said.push(format!("{result:?}"));
        for s in out.iter() {
            said.push(format!("{:?} {:?} {:?}", s.header, s.payload, s.partial_checksum));
            segments.push([s.header, s.payload_slice(frame)].concat());
        }
    }
    (said, segments)
}

/// Verdicts, delivered runs and counters of a small table fed `frames`, each whole or
/// cut at `cuts`.
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
