//! Receive buffers and the description of what to transmit.

use std::ops::Range;
use std::ptr::NonNull;

use offlab_engine::virtio::Header;

/// Size of the virtio-net header most ports exchange (v1 layout, with `num_buffers`);
/// TAP ports with UDP-tunnel offloads use the longer tunnel header.
pub const VNET_LEN: usize = super::offloads::BASE_VNET_LEN;
/// The longest header a port may use.
const MAX_VNET_LEN: usize = super::offloads::TUNNEL_VNET_LEN;
/// Room for the largest frame: a 65535-byte IP packet plus Ethernet, two VLAN tags and
/// (for tunnels) outer headers.
pub const MAX_FRAME: usize = 65535 + 256;
/// A batch stops growing past this many bytes: a batch of super-packets then stays in
/// the CPU cache between the read that fills it and the write that empties it.
pub const BATCH_BYTES: usize = 256 * 1024;

/// Room one frame may need: its virtio header and the largest frame.
const SLOT: usize = MAX_VNET_LEN + MAX_FRAME;
/// Frames read one at a time are packed at this alignment (a cache line).
const PACK_ALIGN: usize = 64;

/// Where a received frame's `[vnet header][frame]` bytes are.
#[derive(Clone, Copy)]
enum Stored {
    /// Copied into the batch's arena, at this range.
    Arena { start: usize, end: usize },
    /// Left where the sending guest put them (a vhost-user transmit buffer the port
    /// has not returned yet): read in place, copied once, into the other port.
    InPlace { bytes: NonNull<u8>, len: usize },
}

/// A batch of received frames, each `[vnet header][frame]`: copied into one arena, or
/// (vhost-user) left in the sending guest's memory until the batch is cleared.
/// Frames read one by one are packed densely (a batch of small frames touches few
/// cache lines and pages); batched receive calls get strided maximum-size slots.
pub struct RxBatch {
    arena: Box<[u8]>,
    capacity: usize,
    frames: Vec<Stored>,
    /// Where the next frame goes.
    next: usize,
    bytes: usize,
    /// Length of the vnet header that starts every frame (the receiving port's).
    vnet_len: usize,
}

impl RxBatch {
    pub fn new(capacity: usize) -> RxBatch {
        RxBatch {
            arena: vec![0u8; capacity * SLOT].into_boxed_slice(),
            capacity,
            frames: Vec::with_capacity(capacity),
            next: 0,
            bytes: 0,
            vnet_len: VNET_LEN,
        }
    }

    pub fn clear(&mut self) {
        self.frames.clear();
        self.next = 0;
        self.bytes = 0;
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Length of the vnet header before each frame.
    pub fn vnet_len(&self) -> usize {
        self.vnet_len
    }

    /// Sets the header length for the frames received next (call after `clear`).
    pub fn set_vnet_len(&mut self, len: usize) {
        debug_assert!(self.frames.is_empty() && len <= MAX_VNET_LEN);
        self.vnet_len = len;
    }

    pub fn is_full(&self) -> bool {
        self.frames.len() == self.capacity || self.bytes >= BATCH_BYTES
    }

    /// The buffer the next received frame goes into; `None` once the batch is full.
    /// Each frame so far used at most `SLOT` bytes, so a whole slot is always left.
    pub fn next_slot(&mut self) -> Option<&mut [u8]> {
        if self.is_full() {
            return None;
        }
        self.arena.get_mut(self.next..self.next + SLOT)
    }

    /// Records that the buffer from `next_slot` now holds `len` bytes (header included).
    pub fn commit(&mut self, len: usize) {
        debug_assert!(self.frames.len() < self.capacity && len <= SLOT);
        self.frames.push(Stored::Arena { start: self.next, end: self.next + len });
        self.next += len.next_multiple_of(PACK_ALIGN);
        self.bytes += len;
    }

    /// Records a frame left where it was received: `len` bytes at `bytes`, read in
    /// place by the forwarder and copied only into the egress. Once the batch is full
    /// the frame is not taken (returns false).
    ///
    /// # Safety
    /// The `len` bytes at `bytes` must stay mapped and readable until the batch is
    /// cleared, and their owner must not get them back (a vhost-user guest: the chain's
    /// used entry) before then. Their owner may still write them meanwhile (a guest
    /// racing its own buffer): the forwarder treats them as untrusted, as any frame,
    /// and every offset it takes stays within `len`, so that garbles only that frame.
    pub unsafe fn commit_in_place(&mut self, bytes: NonNull<u8>, len: usize) -> bool {
        if self.is_full() || len > SLOT {
            return false;
        }
        self.frames.push(Stored::InPlace { bytes, len });
        self.bytes += len;
        true
    }

    /// Every free slot at full size, for batched receive calls.
    pub fn free_slots(&mut self) -> impl Iterator<Item = &mut [u8]> {
        let free = self.capacity - self.frames.len();
        self.arena[self.next..].chunks_exact_mut(SLOT).take(free)
    }

    /// Records the lengths of frames a batched receive put into `free_slots`, in order.
    pub fn commit_slots(&mut self, lens: impl IntoIterator<Item = usize>) {
        for len in lens {
            debug_assert!(self.frames.len() < self.capacity && len <= SLOT);
            self.frames.push(Stored::Arena { start: self.next, end: self.next + len });
            self.next += SLOT;
            self.bytes += len;
        }
    }

    /// Everything received as frame `i`: the vnet header followed by the frame.
    pub fn raw(&self, i: usize) -> &[u8] {
        match self.frames[i] {
            Stored::Arena { start, end } => &self.arena[start..end],
            // SAFETY: `commit_in_place`'s contract keeps these bytes mapped until
            // `clear`, which takes `&mut self` and so ends this borrow first.
            Stored::InPlace { bytes, len } => unsafe { std::slice::from_raw_parts(bytes.as_ptr(), len) },
        }
    }

    /// Frame `i`, writable (checksum completion happens in place). A frame left in the
    /// sending guest's memory is copied into the arena first: a device must not write
    /// a buffer the driver gave it to read.
    pub fn raw_mut(&mut self, i: usize) -> &mut [u8] {
        let (start, end) = match self.frames[i] {
            Stored::Arena { start, end } => (start, end),
            Stored::InPlace { bytes, len } => {
                // Every frame so far took at most SLOT bytes of the arena and the batch
                // holds at most `capacity` frames, so a slot is left for this copy.
                let start = self.next;
                // SAFETY: as in `raw`; the destination is the arena, never guest memory.
                let received = unsafe { std::slice::from_raw_parts(bytes.as_ptr(), len) };
                self.arena[start..start + len].copy_from_slice(received);
                self.frames[i] = Stored::Arena { start, end: start + len };
                self.next += len.next_multiple_of(PACK_ALIGN);
                (start, start + len)
            }
        };
        &mut self.arena[start..end]
    }

}

/// One piece of an outgoing frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Bytes in the queue's scratch area (a vnet header or rebuilt packet headers).
    Scratch(Range<u32>),
    /// Bytes of a received slot, sent without copying.
    Rx { slot: u32, range: Range<u32> },
}

/// Frames to send, each its virtio-net header and a list of pieces; rebuilt per batch.
#[derive(Default)]
pub struct TxQueue {
    frames: Vec<TxFrame>,
    pieces: Vec<Piece>,
    scratch: Vec<u8>,
    /// Length of the vnet header each frame starts with (the egress port's); the
    /// base length when not set.
    vnet_len: usize,
}

/// One frame to send: its header, where its pieces start, and its total length
/// (counted as pieces are added, so a port that needs the length before it writes does
/// not walk the pieces twice). A frame is recorded when it is begun and its pieces run
/// to the next frame's first: no frame is held apart while it is built.
struct TxFrame {
    /// Its v1 virtio-net header, held here rather than in `scratch`: for most frames
    /// the only bytes of their own, so a frame is built without growing `scratch` or
    /// `pieces` for it (two appends and a zero fill per frame, W5's MTU rows).
    header: [u8; VNET_LEN],
    /// The rest of a longer egress header (tunnel fields, zero fill) in `scratch`;
    /// empty for a port with the v1 header.
    header_tail: Range<u32>,
    /// Its first piece after the header, in `pieces`.
    first_piece: usize,
    /// Bytes in all, the header included.
    len: usize,
}

impl TxQueue {
    pub fn clear(&mut self) {
        self.frames.clear();
        self.pieces.clear();
        self.scratch.clear();
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Sets the egress port's header length for the frames begun next.
    pub fn set_vnet_len(&mut self, len: usize) {
        debug_assert!((VNET_LEN..=MAX_VNET_LEN).contains(&len));
        self.vnet_len = len;
    }

    /// Starts a frame whose header is `vnet`, zero-extended to the egress header
    /// length (no hash, no tunnel).
    pub fn begin(&mut self, vnet: &[u8; VNET_LEN]) {
        self.begin_extended(vnet, &[]);
    }

    /// Starts a frame with `header`: in the UDP-tunnel form when it carries tunnel
    /// fields (such frames are offered only to an egress that negotiated that form),
    /// else in the v1 form.
    pub fn begin_header(&mut self, header: &Header) {
        if header.tunnel.is_none() {
            return self.begin(&header.to_bytes());
        }
        let bytes = header.to_tunnel_bytes();
        let (base, tail) = bytes.split_at(VNET_LEN);
        let base: &[u8; VNET_LEN] = base.try_into().unwrap_or(&[0; VNET_LEN]);
        self.begin_extended(base, tail);
    }

    /// Starts a frame whose header is `vnet` followed by `tail` (the bytes after the
    /// v1 header in the egress's longer header), zero-filled to the egress length.
    pub fn begin_extended(&mut self, vnet: &[u8; VNET_LEN], tail: &[u8]) {
        let len = self.vnet_len.max(VNET_LEN);
        debug_assert!(VNET_LEN + tail.len() <= len);
        let header_tail = if len == VNET_LEN {
            0..0
        } else {
            let start = self.scratch.len();
            self.scratch.extend_from_slice(tail);
            self.scratch.resize(start + len - VNET_LEN, 0);
            start as u32..self.scratch.len() as u32
        };
        self.frames.push(TxFrame { header: *vnet, header_tail, first_piece: self.pieces.len(), len });
    }

    /// Appends bytes copied into scratch (headers, never payload).
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        let start = self.scratch.len() as u32;
        self.scratch.extend_from_slice(bytes);
        self.pieces
            .push(Piece::Scratch(start..self.scratch.len() as u32));
        self.grow_open(bytes.len());
    }

    /// Appends a range of received slot `slot`, by reference.
    pub fn push_rx(&mut self, slot: usize, range: Range<usize>) {
        if range.is_empty() {
            return;
        }
        self.grow_open(range.len());
        self.pieces.push(Piece::Rx {
            slot: slot as u32,
            range: range.start as u32..range.end as u32,
        });
    }

    /// Counts `bytes` more in the frame begun last.
    fn grow_open(&mut self, bytes: usize) {
        debug_assert!(!self.frames.is_empty(), "a piece pushed before any frame was begun");
        if let Some(open) = self.frames.last_mut() {
            open.len += bytes;
        }
    }

    /// Frame `index`'s pieces after its header.
    fn piece_range(&self, index: usize) -> Range<usize> {
        let end = self.frames.get(index + 1).map_or(self.pieces.len(), |next| next.first_piece);
        self.frames[index].first_piece..end
    }

    /// Frame `index`'s length in bytes, its vnet header included.
    pub fn frame_len(&self, index: usize) -> usize {
        self.frames[index].len
    }

    /// The first VNET_LEN bytes of frame `index` (its v1 virtio-net header).
    pub fn vnet_header(&self, index: usize) -> [u8; VNET_LEN] {
        self.frames[index].header
    }

    /// The byte slices of frame `index` after its first VNET_LEN bytes, in order.
    pub fn body<'a>(&'a self, index: usize, rx: &'a RxBatch) -> impl Iterator<Item = &'a [u8]> + 'a {
        let frame = &self.frames[index];
        let tail = &frame.header_tail;
        let tail = (!tail.is_empty()).then(|| &self.scratch[tail.start as usize..tail.end as usize]);
        tail.into_iter().chain(self.pieces[self.piece_range(index)].iter().map(move |piece| match piece {
            Piece::Scratch(r) => &self.scratch[r.start as usize..r.end as usize],
            Piece::Rx { slot, range } => &rx.raw(*slot as usize)[range.start as usize..range.end as usize],
        }))
    }

    /// The byte slices of frame `index`, in order.
    pub fn pieces<'a>(
        &'a self,
        index: usize,
        rx: &'a RxBatch,
    ) -> impl Iterator<Item = &'a [u8]> + 'a {
        std::iter::once(&self.frames[index].header[..]).chain(self.body(index, rx))
    }

    /// Appends frame `index` as iovecs to `out`; returns its byte count. The iovecs
    /// point into `self` and `rx`: use them before either changes.
    pub fn iovecs(&self, index: usize, rx: &RxBatch, out: &mut Vec<libc::iovec>) -> usize {
        let mut total = 0;
        for bytes in self.pieces(index, rx) {
            total += bytes.len();
            out.push(libc::iovec {
                iov_base: bytes.as_ptr() as *mut libc::c_void,
                iov_len: bytes.len(),
            });
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receive(batch: &mut RxBatch, bytes: &[u8]) {
        batch.next_slot().unwrap()[..bytes.len()].copy_from_slice(bytes);
        batch.commit(bytes.len());
    }

    #[test]
    fn packed_and_strided_frames_read_back_and_fill_the_batch() {
        let mut batch = RxBatch::new(3);
        receive(&mut batch, &[1; 100]);
        receive(&mut batch, &[2; 30]);
        assert_eq!(batch.raw(0), &[1; 100][..]);
        assert_eq!(batch.raw(1), &[2; 30][..]);
        let mut free: Vec<_> = batch.free_slots().collect();
        assert_eq!(free.len(), 1);
        free[0][..5].copy_from_slice(&[3; 5]);
        batch.commit_slots([5]);
        assert_eq!(batch.raw(2), &[3; 5][..]);
        assert!(batch.is_full() && batch.next_slot().is_none());
        batch.clear();
        assert_eq!(batch.len(), 0);
        assert_eq!(batch.next_slot().map(|s| s.len()), Some(SLOT));
    }

    /// A frame left where it was received reads back in place; writing it copies it
    /// into the arena first, so the sender's buffer is never written.
    #[test]
    fn a_frame_read_in_place_is_copied_before_it_is_written() {
        let mut sender = *b"in-place frame";
        let mut batch = RxBatch::new(2);
        receive(&mut batch, b"copied");
        let bytes = NonNull::new(sender.as_mut_ptr()).unwrap();
        // SAFETY: `sender` outlives the batch's use of it and is not touched meanwhile.
        assert!(unsafe { batch.commit_in_place(bytes, sender.len()) });
        assert_eq!(batch.raw(1).as_ptr(), sender.as_ptr());
        batch.raw_mut(1)[0] = b'X';
        assert_eq!(batch.raw(1), b"Xn-place frame");
        assert_ne!(batch.raw(1).as_ptr(), sender.as_ptr());
        assert_eq!(batch.raw(0), b"copied");
        assert!(batch.is_full());
        // SAFETY: as above; a full batch takes nothing.
        assert!(!unsafe { batch.commit_in_place(bytes, sender.len()) });
        assert_eq!(&sender, b"in-place frame");
    }

    #[test]
    fn a_batch_stops_at_its_byte_budget() {
        let mut batch = RxBatch::new(64);
        while let Some(slot) = batch.next_slot() {
            let len = slot.len();
            batch.commit(len);
        }
        assert_eq!(batch.len(), BATCH_BYTES.div_ceil(SLOT));
    }

    #[test]
    fn a_frame_is_sent_as_its_pieces_in_order() {
        let mut batch = RxBatch::new(1);
        receive(&mut batch, b"0123456789");
        let mut tx = TxQueue::default();
        tx.begin(&[9; VNET_LEN]);
        tx.push_bytes(b"head");
        tx.push_rx(0, 2..6);
        tx.push_rx(0, 6..6);
        let bytes: Vec<u8> = tx.pieces(0, &batch).flatten().copied().collect();
        assert_eq!(bytes, [&[9; VNET_LEN][..], b"head", b"2345"].concat());
        let mut iovecs = Vec::new();
        assert_eq!(tx.iovecs(0, &batch, &mut iovecs), VNET_LEN + 8);
        assert_eq!(iovecs.len(), 3);
    }

    /// A port that writes the header apart gets it, the frame's length and the rest
    /// without walking the pieces (the header piece of a longer egress header split).
    #[test]
    fn a_frame_gives_its_header_length_and_body_apart() {
        let mut batch = RxBatch::new(1);
        receive(&mut batch, b"0123456789");
        let mut tx = TxQueue::default();
        tx.set_vnet_len(VNET_LEN + 8);
        tx.begin_extended(&[7; VNET_LEN], &[5; 8]);
        tx.push_rx(0, 0..4);
        tx.begin(&[9; VNET_LEN]);
        tx.push_bytes(b"hd");
        tx.push_rx(0, 4..10);
        for index in 0..2 {
            let whole: Vec<u8> = tx.pieces(index, &batch).flatten().copied().collect();
            assert_eq!(tx.frame_len(index), whole.len());
            assert_eq!(tx.vnet_header(index)[..], whole[..VNET_LEN]);
            let body: Vec<u8> = tx.body(index, &batch).flatten().copied().collect();
            assert_eq!(body, whole[VNET_LEN..]);
        }
        assert_eq!(tx.frame_len(1), VNET_LEN + 8 + 2 + 6);
    }
}
