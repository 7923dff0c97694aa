//! Frames held in several buffers: a DPDK mbuf chain, a VPP buffer chain, an iovec.
//! The frame is the concatenation of the pieces, Ethernet header first; any piece may
//! be empty and a header may span pieces.
//!
//! GRO and GSO read a frame in two ways: header fields at offsets (parsing, flow keys,
//! the header templates copied per segment) and sums over the payload (checksum
//! verification, software checksums, outer checksums). So a chained frame is seen as
//! a [`ChainFrame`]: a contiguous *view* of the frame's length whose header bytes are
//! the frame's (copied into a scratch buffer owned by the caller's context), plus the
//! pieces, from which every payload sum is read, combined across piece boundaries of
//! any parity with [`checksum::combine`]. The payload itself is never copied: GRO
//! parts and GSO segments name it by offsets in the logical frame.
//!
//! Which bytes are copied: the first [`HEAD_COPY`] (or the whole frame if shorter).
//! That suffices when the frame parses with every header inside them: a parse that
//! succeeds reads no byte past the headers it reports, and the GRO fast paths read
//! fixed offsets below GRO's header cap (`gro` asserts that `HEAD_COPY` covers it).
//! Otherwise (a frame that does not parse, or headers longer than `HEAD_COPY`) the
//! whole frame is copied, so every refusal and
//! every long-header frame is decided on the frame's own bytes: the results are the
//! contiguous call's, always. A frame in one non-empty piece is used as it is.
//!
//! The scratch is [`VIEW_MAX`] bytes, allocated on the first chained frame and reused.
//! A frame longer than that is seen through its first `VIEW_MAX` bytes, which changes
//! nothing: the outermost IP packet ends before (at most 22 bytes of Ethernet and VLAN
//! tags, 40 of IPv6 header, 65535 of payload), GRO and GSO read no byte after it, and
//! every length test they make against the frame's end ("the packet fits", "bytes
//! follow the packet") comes out the same for both lengths.

use core::ops::Range;

use crate::checksum;
use crate::wire::parse::{parse_frame_with, ParseOptions};

/// Bytes copied from the start of a chained frame before parsing it. Covers every
/// header GRO holds per flow (the assertion lives in `gro`, the layer above, so this
/// module names nothing of GRO's).
pub const HEAD_COPY: usize = 256;

/// Length of the contiguous view of a chained frame (see the module documentation):
/// above the longest frame whose bytes GRO and GSO read, 22 + 40 + 65535.
pub const VIEW_MAX: usize = 65_664;

/// Reusable scratch for the header bytes of chained frames; one per GRO table or GSO
/// context. Empty until the first chained frame, then `VIEW_MAX` bytes for good.
#[derive(Debug, Default, Clone)]
pub struct ChainScratch {
    buf: Vec<u8>,
}

/// A chained frame ready for GRO or GSO: see the module documentation.
#[derive(Debug, Clone, Copy)]
pub struct ChainFrame<'a> {
    view: &'a [u8],
    payload: Payload<'a>,
}

/// Where payload sums are read from: the view itself (it holds the frame's bytes), or
/// the pieces (the view holds only the headers).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Payload<'a> {
    InView,
    Pieces(&'a [&'a [u8]]),
}

impl ChainScratch {
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes `chain` readable by GRO and GSO, copying its header bytes (or, for a frame
    /// that does not parse with its headers in the first `HEAD_COPY` bytes, all of it).
    /// `parse` must be the options the frame will be parsed with.
    pub fn view<'a>(&'a mut self, chain: &'a [&'a [u8]], parse: &ParseOptions) -> ChainFrame<'a> {
        let mut filled = chain.iter().filter(|piece| !piece.is_empty());
        match (filled.next(), filled.next()) {
            (None, _) => return ChainFrame::whole(&[]),
            (Some(only), None) => return ChainFrame::whole(only),
            _ => {}
        }
        let total = chain.iter().fold(0usize, |sum, piece| sum.saturating_add(piece.len()));
        let len = total.min(VIEW_MAX);
        if self.buf.len() < VIEW_MAX {
            self.buf.resize(VIEW_MAX, 0);
        }
        let head = len.min(HEAD_COPY);
        gather(chain, &mut self.buf[..head]);
        let headers_only = head < len
            && parse_frame_with(&self.buf[..len], parse).is_ok_and(|l| l.headers_len() <= head);
        if !headers_only && head < len {
            gather(chain, &mut self.buf[..len]);
        }
        ChainFrame {
            view: &self.buf[..len],
            payload: if headers_only { Payload::Pieces(chain) } else { Payload::InView },
        }
    }
}

impl<'a> ChainFrame<'a> {
    /// A frame in one buffer, as a `ChainFrame` (nothing copied).
    pub fn whole(frame: &'a [u8]) -> Self {
        ChainFrame {
            view: frame,
            payload: Payload::InView,
        }
    }

    /// The contiguous stand-in for the frame: the frame's length (up to `VIEW_MAX`),
    /// every header byte equal to the frame's. Its payload bytes may be anything: give
    /// it to `wire::parse_frame` and `virtio::Header::validate_parsed`, which read
    /// headers only, and take payload bytes from the pieces.
    pub fn view(&self) -> &'a [u8] {
        self.view
    }

    pub(crate) fn payload(&self) -> Payload<'a> {
        self.payload
    }
}

/// Where GRO and GSO read payload sums from: a trait rather than the `Payload` enum
/// alone, so that the contiguous paths pass `Contiguous` (zero-sized) and compile to
/// what they were before chains existed, with no variant tested per sum.
pub(crate) trait Sums: Copy {
    /// Partial sum of the frame's bytes `range` (inside `view`) added to `seed`.
    fn sum(self, view: &[u8], range: Range<usize>, seed: u32) -> u32;

    /// `checksum::sum_pieces` over the frame's bytes `range`: the sum of each
    /// `size`-byte chunk into `sums`, stopping when either runs out.
    fn sum_chunks(self, view: &[u8], range: Range<usize>, size: usize, sums: &mut [u32]);
}

/// The view is the whole frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Contiguous;

impl Sums for Contiguous {
    #[inline(always)]
    fn sum(self, view: &[u8], range: Range<usize>, seed: u32) -> u32 {
        checksum::sum(&view[range], seed)
    }

    #[inline(always)]
    fn sum_chunks(self, view: &[u8], range: Range<usize>, size: usize, sums: &mut [u32]) {
        checksum::sum_pieces(&view[range], size, sums)
    }
}

impl Sums for Payload<'_> {
    fn sum(self, view: &[u8], range: Range<usize>, seed: u32) -> u32 {
        match self {
            Payload::InView => Contiguous.sum(view, range, seed),
            Payload::Pieces(pieces) => Cursor::new(pieces).sum(range, seed),
        }
    }

    fn sum_chunks(self, view: &[u8], range: Range<usize>, size: usize, sums: &mut [u32]) {
        match self {
            Payload::InView => Contiguous.sum_chunks(view, range, size, sums),
            Payload::Pieces(pieces) => {
                let mut cursor = Cursor::new(pieces);
                let mut start = range.start;
                for sum in sums.iter_mut() {
                    if start >= range.end {
                        break;
                    }
                    let end = range.end.min(start + size);
                    *sum = cursor.sum(start..end, 0);
                    start = end;
                }
            }
        }
    }
}

/// Copies the first `dst.len()` bytes of the chain (which has at least that many).
fn gather(chain: &[&[u8]], dst: &mut [u8]) {
    let mut at = 0;
    for piece in chain {
        if at == dst.len() {
            break;
        }
        let n = piece.len().min(dst.len() - at);
        dst[at..at + n].copy_from_slice(&piece[..n]);
        at += n;
    }
}

/// Sums ranges of a chain's logical bytes, ranges in increasing order: it remembers
/// the first piece that may still overlap the next range, so summing every segment of
/// a super-packet walks the chain once.
struct Cursor<'a> {
    pieces: &'a [&'a [u8]],
    /// The first piece not wholly before the last range, and its logical offset.
    index: usize,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(pieces: &'a [&'a [u8]]) -> Self {
        Cursor { pieces, index: 0, at: 0 }
    }

    /// Partial sum of the bytes `range` added to `seed`, the bytes of each piece placed
    /// at their offset from `range.start` (odd offsets swap the halves of the sum).
    fn sum(&mut self, range: Range<usize>, seed: u32) -> u32 {
        if range.start < self.at {
            (self.index, self.at) = (0, 0);
        }
        let mut sum = seed;
        let (mut index, mut at) = (self.index, self.at);
        while let Some(piece) = self.pieces.get(index) {
            let end = at + piece.len();
            if end <= range.start {
                (index, at) = (index + 1, end);
                (self.index, self.at) = (index, at);
                continue;
            }
            if at >= range.end {
                break;
            }
            let (from, to) = (range.start.max(at), range.end.min(end));
            let part = checksum::sum(&piece[from - at..to - at], 0);
            sum = checksum::combine(sum, part, from - range.start);
            (index, at) = (index + 1, end);
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn splits(data: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut pieces = Vec::new();
        let mut at = 0;
        for &cut in cuts {
            pieces.push(data[at..cut].to_vec());
            at = cut;
        }
        pieces.push(data[at..].to_vec());
        pieces
    }

    #[test]
    fn chain_sums_equal_contiguous_sums_at_every_odd_and_even_cut() {
        let data: Vec<u8> = (0..301u32).map(|i| (i * 37 + 11) as u8).collect();
        for a in 0..data.len() {
            for b in [a, a + 1, a + 2, a + 7, data.len()] {
                let b = b.min(data.len());
                let owned = splits(&data, &[a, b]);
                let pieces: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
                let chain = Payload::Pieces(&pieces);
                for range in [0..data.len(), 3..200, a.saturating_sub(1)..b, 5..5] {
                    let want = checksum::fold(checksum::sum(&data[range.clone()], 0x1234));
                    let got = checksum::fold(chain.sum(&[], range.clone(), 0x1234));
                    assert_eq!(got, want, "cuts {a},{b} range {range:?}");
                }
                let mut want = [0u32; 8];
                let mut got = [0u32; 8];
                checksum::sum_pieces(&data[7..290], 41, &mut want);
                chain.sum_chunks(&[], 7..290, 41, &mut got);
                let fold = |s: [u32; 8]| s.map(checksum::fold);
                assert_eq!(fold(got), fold(want), "cuts {a},{b}");
            }
        }
    }

    #[test]
    fn one_filled_piece_is_used_in_place() {
        let frame = [1u8, 2, 3];
        let chain: [&[u8]; 3] = [&[], &frame, &[]];
        let mut scratch = ChainScratch::new();
        let view = scratch.view(&chain, &ParseOptions::DEFAULT);
        assert_eq!(view.view().as_ptr(), frame.as_ptr());
        assert!(scratch.buf.is_empty(), "no scratch for a frame in one piece");
    }

    #[test]
    fn an_unparseable_chain_is_copied_whole() {
        let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let chain: [&[u8]; 2] = [&data[..10], &data[10..]];
        let mut scratch = ChainScratch::new();
        let view = scratch.view(&chain, &ParseOptions::DEFAULT);
        assert_eq!(view.view(), &data[..]);
        assert!(matches!(view.payload(), Payload::InView));
    }
}
