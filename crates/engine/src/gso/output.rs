//! The reusable result of `segment`: every segment's fresh header bytes in one buffer,
//! and a table saying which header bytes and which payload range form each segment.

use core::mem::MaybeUninit;
use core::ops::Range;

use crate::chain::Sums;

/// Where the caller (or NIC) must finish a checksum left partial: the virtio-net
/// `csum_start` / `csum_offset` pair, identical for every segment of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PartialChecksum {
    /// Offset, from the start of the segment, where checksumming starts (the L4 header).
    pub start: u16,
    /// Offset of the checksum field from `start`.
    pub offset: u16,
}

/// One segment as stored: header bytes in `GsoOutput::headers`, payload in the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    header: Range<usize>,
    payload: Range<usize>,
}

/// One produced segment: fresh header bytes followed (on the wire) by a slice of the
/// input frame. Write it with `writev([header, payload_slice(frame)])`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentRef<'a> {
    /// Complete headers of this segment (L2 through L4, outer headers included).
    pub header: &'a [u8],
    /// The payload as a range of the frame passed to `segment`.
    pub payload: Range<usize>,
    /// Set when the L4 checksum was left partial (`L4Checksum::Partial`).
    pub partial_checksum: Option<PartialChecksum>,
}

impl<'a> SegmentRef<'a> {
    /// The payload bytes, borrowed from the frame the segments were made from. A frame
    /// shorter than the range (not the one that was segmented) yields an empty slice.
    pub fn payload_slice<'f>(&self, frame: &'f [u8]) -> &'f [u8] {
        frame.get(self.payload.clone()).unwrap_or(&[])
    }

    /// Length of the segment on the wire.
    pub fn len(&self) -> usize {
        self.header.len() + self.payload.len()
    }

    /// Never true for a produced segment (it always has headers); here for clippy's sake.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Segments of one super-packet. Reuse it across calls: it only allocates when a call
/// needs more room than any before it.
#[derive(Debug, Default, Clone)]
pub struct GsoOutput {
    headers: Vec<u8>,
    entries: Vec<Entry>,
    partial_checksum: Option<PartialChecksum>,
    /// The longest header of the segments, kept as they are added: the C API's bulk
    /// reader asks for it per call, and a walk over 45 entries cost ~3 instructions a
    /// segment.
    longest_header: usize,
    /// Scratch: each segment's payload sum (software checksums), kept for its capacity.
    payload_sums: Vec<u32>,
    /// The last call wrote its headers into the caller's [`HeaderTargets`], not here.
    headers_in_targets: bool,
}

/// The caller's buffers a call may write its segments' headers into directly
/// ([`super::segment_chain_into`]): one buffer of `cap` bytes per segment, in order.
/// A C adopter names the data rooms of the header mbufs it allocated in bulk, so each
/// header is written once, in its final place.
#[derive(Debug, Clone, Copy)]
pub struct HeaderTargets<'t> {
    bufs: &'t [*mut u8],
    cap: usize,
}

impl<'t> HeaderTargets<'t> {
    /// # Safety
    /// Every pointer in `bufs` is valid for writes of `cap` bytes for `'t`, and no
    /// buffer overlaps another or any memory the segmenting call reads or writes (the
    /// frame, its chain's pieces, the `GsoOutput`).
    pub unsafe fn new(bufs: &'t [*mut u8], cap: usize) -> Self {
        HeaderTargets { bufs, cap }
    }

    /// How many buffers there are.
    pub fn len(&self) -> usize {
        self.bufs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bufs.is_empty()
    }

    /// Bytes each buffer holds.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// The first `count` buffers cut to `len` bytes each, or `None` when there are
    /// fewer or they are shorter (then nothing is written to any).
    pub(super) fn slots(self, count: usize, len: usize) -> Option<impl Iterator<Item = &'t mut [MaybeUninit<u8>]>> {
        let bufs = self.bufs.get(..count)?;
        (len <= self.cap).then(|| {
            bufs.iter().map(move |&buf| {
                // SAFETY: `new`'s contract: each buffer is `cap >= len` writable bytes
                // for `'t`, apart from every other and from what the call reads; each
                // is handed out once (the iterator yields every pointer once).
                unsafe { core::slice::from_raw_parts_mut(buf.cast::<MaybeUninit<u8>>(), len) }
            })
        })
    }
}

impl GsoOutput {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of segments produced by the last call.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The `i`-th segment, if there is one.
    #[inline]
    pub fn segment(&self, i: usize) -> Option<SegmentRef<'_>> {
        self.entries.get(i).map(|e| self.make_ref(e))
    }

    /// All segments, in wire order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = SegmentRef<'_>> + '_ {
        self.entries.iter().map(|e| self.make_ref(e))
    }

    /// The checksum the caller must finish, when the L4 checksum was left partial.
    pub fn partial_checksum(&self) -> Option<PartialChecksum> {
        self.partial_checksum
    }

    /// The longest header of the last call's segments (0 without segments): the room a
    /// caller's header buffer needs for any of them.
    pub fn longest_header(&self) -> usize {
        self.longest_header
    }

    /// Total bytes of header written here (for statistics: the bytes GSO had to
    /// produce; 0 when they went to the caller's targets).
    pub fn header_bytes(&self) -> usize {
        self.headers.len()
    }

    /// Whether the last call wrote its headers into the caller's [`HeaderTargets`]:
    /// then every segment's header is `longest_header()` bytes in target `i`, and
    /// [`Self::segment`] and [`Self::iter`] give empty header slices.
    pub fn headers_in_targets(&self) -> bool {
        self.headers_in_targets
    }

    /// Each segment's payload range, in wire order (what a caller whose headers are
    /// in its own buffers reads).
    #[inline]
    pub fn payloads(&self) -> impl ExactSizeIterator<Item = Range<usize>> + '_ {
        self.entries.iter().map(|e| e.payload.clone())
    }

    #[inline]
    fn make_ref<'s>(&'s self, e: &Entry) -> SegmentRef<'s> {
        SegmentRef {
            header: self.headers.get(e.header.clone()).unwrap_or(&[]),
            payload: e.payload.clone(),
            partial_checksum: self.partial_checksum,
        }
    }

    /// Allocated sizes of the buffers, to check the steady state allocates nothing.
    #[cfg(test)]
    pub(super) fn capacities(&self) -> (usize, usize) {
        (self.headers.capacity(), self.entries.capacity())
    }

    // ----- used by the segmenters -----

    pub(super) fn clear(&mut self) {
        self.headers.clear();
        self.entries.clear();
        self.partial_checksum = None;
        self.longest_header = 0;
        self.headers_in_targets = false;
    }

    /// Makes room for `segments` segments of at most `header_len` header bytes each, so
    /// the emit loop never reallocates.
    pub(super) fn reserve(&mut self, segments: usize, header_len: usize) {
        self.headers.reserve(segments.saturating_mul(header_len));
        self.entries.reserve(segments);
    }

    /// The partial sum of each `size`-byte piece of the frame's bytes `payload` (one per
    /// segment, read from the frame or its chain's pieces as `source` says), in a
    /// buffer reused across calls. Taken out of `self` so the caller can push segments
    /// while reading it; give it back with `put_payload_sums`.
    pub(super) fn payload_sums(
        &mut self,
        (frame, source): (&[u8], impl Sums),
        payload: Range<usize>,
        size: usize,
        count: usize,
    ) -> Vec<u32> {
        let mut sums = core::mem::take(&mut self.payload_sums);
        sums.clear();
        sums.resize(count, 0);
        source.sum_chunks(frame, payload, size, &mut sums);
        sums
    }

    pub(super) fn put_payload_sums(&mut self, sums: Vec<u32>) {
        self.payload_sums = sums;
    }

    pub(super) fn set_partial_checksum(&mut self, partial: Option<PartialChecksum>) {
        self.partial_checksum = partial;
    }

    /// `bytes` bytes of uninitialised header room after the headers written so far, for
    /// `commit_headers`.
    pub(super) fn spare_headers(&mut self, bytes: usize) -> &mut [core::mem::MaybeUninit<u8>] {
        self.headers.reserve(bytes);
        &mut self.headers.spare_capacity_mut()[..bytes]
    }

    /// Appends `count` segments whose headers (`header_len` bytes each) were written to
    /// `spare_headers(count * header_len)`, with payloads cut from
    /// `payload_start..payload_end` every `size` bytes (the last one shorter).
    ///
    /// # Safety
    /// All `count * header_len` bytes of the `spare_headers` room must be initialised.
    pub(super) unsafe fn commit_headers(
        &mut self,
        count: usize,
        header_len: usize,
        payload_start: usize,
        payload_end: usize,
        size: usize,
    ) {
        let first = self.headers.len();
        // SAFETY: the caller initialised these bytes, within the reserved capacity.
        unsafe { self.headers.set_len(first + count * header_len) };
        self.commit_entries(first, count, header_len, payload_start..payload_end, size);
    }

    /// Appends `count` segments whose headers (`header_len` bytes each) were written
    /// into the caller's targets, payloads cut as `commit_headers` cuts them.
    pub(super) fn commit_in_targets(&mut self, count: usize, header_len: usize, payload: Range<usize>, size: usize) {
        self.headers_in_targets = true;
        self.commit_entries(self.headers.len(), count, header_len, payload, size);
    }

    /// The entries of `commit_headers` (header `i` at `first + i * header_len`).
    fn commit_entries(&mut self, first: usize, count: usize, header_len: usize, payload: Range<usize>, size: usize) {
        let (payload_start, payload_end) = (payload.start, payload.end);
        // Written into the spare capacity and committed once: a `push` per segment
        // would check the capacity and store the length every time.
        self.entries.reserve(count);
        if count > 0 {
            self.longest_header = self.longest_header.max(header_len);
        }
        let filled = self.entries.len();
        let (mut header, mut start) = (first, payload_start);
        if let Some((last, rest)) = self.entries.spare_capacity_mut()[..count].split_last_mut() {
            for slot in rest {
                slot.write(Entry {
                    header: header..header + header_len,
                    payload: start..start + size,
                });
                header += header_len;
                start += size;
            }
            last.write(Entry {
                header: header..header + header_len,
                payload: start..payload_end,
            });
        }
        // SAFETY: the `count` entries after `filled` were written above.
        unsafe { self.entries.set_len(filled + count) };
    }

    /// Appends a segment whose header starts as a copy of `template`; returns that fresh
    /// header for patching.
    #[inline(always)]
    pub(super) fn push(&mut self, template: &[u8], payload: Range<usize>) -> &mut [u8] {
        let start = self.headers.len();
        let len = template.len();
        self.headers.reserve(len);
        let spare = &mut self.headers.spare_capacity_mut()[..len];
        copy_header(spare, template);
        // SAFETY: `copy_header` initialised the `len` bytes after the old length.
        unsafe { self.headers.set_len(start + len) };
        let end = start + len;
        self.longest_header = self.longest_header.max(len);
        self.entries.push(Entry {
            header: start..end,
            payload,
        });
        &mut self.headers[start..end]
    }
}

/// Copies `src` into `dst` (same length) with a few fixed-size moves, the last one
/// overlapping the one before, inlined rather than a call to `memcpy` (headers are
/// 42–200 bytes: two 64-byte moves cover 64–128 bytes).
#[inline(always)]
pub(super) fn copy_header(dst: &mut [core::mem::MaybeUninit<u8>], src: &[u8]) {
    let len = src.len();
    assert_eq!(dst.len(), len);
    let (d, s) = (dst.as_mut_ptr().cast::<u8>(), src.as_ptr());
    // SAFETY (every copy): both buffers are `len` bytes and do not overlap (`dst` is
    // spare capacity); each copy's range is checked against `len` right before it.
    unsafe {
        let copy = |at: usize, n: usize| core::ptr::copy_nonoverlapping(s.add(at), d.add(at), n);
        if len > 128 {
            let mut at = 0;
            while at + 64 < len {
                copy(at, 64);
                at += 64;
            }
            copy(len - 64, 64);
        } else if len >= 64 {
            copy(0, 64);
            copy(len - 64, 64);
        } else if len >= 32 {
            copy(0, 32);
            copy(len - 32, 32);
        } else {
            copy(0, len);
        }
    }
}
