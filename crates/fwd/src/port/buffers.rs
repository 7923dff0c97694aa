//! Receive buffers and the description of what to transmit.

use std::ops::Range;

/// Size of the virtio-net header every port exchanges (v1 layout, with `num_buffers`).
pub const VNET_LEN: usize = 12;
/// Room for the largest frame: a 65535-byte IP packet plus Ethernet, two VLAN tags and
/// (for tunnels) outer headers.
pub const MAX_FRAME: usize = 65535 + 256;
/// A batch stops growing past this many bytes: a batch of super-packets then stays in
/// the CPU cache between the read that fills it and the write that empties it.
pub const BATCH_BYTES: usize = 256 * 1024;

/// A batch of received frames, each stored as `[vnet header][frame]`.
pub struct RxBatch {
    buffers: Vec<Box<[u8]>>,
    lens: Vec<usize>,
    bytes: usize,
}

impl RxBatch {
    pub fn new(capacity: usize) -> RxBatch {
        RxBatch {
            buffers: (0..capacity)
                .map(|_| vec![0u8; VNET_LEN + MAX_FRAME].into_boxed_slice())
                .collect(),
            lens: Vec::with_capacity(capacity),
            bytes: 0,
        }
    }

    pub fn clear(&mut self) {
        self.lens.clear();
        self.bytes = 0;
    }

    pub fn len(&self) -> usize {
        self.lens.len()
    }

    pub fn is_full(&self) -> bool {
        self.lens.len() == self.buffers.len() || self.bytes >= BATCH_BYTES
    }

    /// The buffer the next received frame goes into; `None` once the batch is full.
    pub fn next_slot(&mut self) -> Option<&mut [u8]> {
        if self.is_full() {
            return None;
        }
        let slot = self.lens.len();
        self.buffers.get_mut(slot).map(|b| &mut b[..])
    }

    /// Every free slot, for batched receive calls.
    pub fn free_slots(&mut self) -> impl Iterator<Item = &mut Box<[u8]>> {
        let used = self.lens.len();
        self.buffers.iter_mut().skip(used)
    }

    /// Records that the next slot now holds `len` bytes (header included).
    pub fn commit(&mut self, len: usize) {
        debug_assert!(self.lens.len() < self.buffers.len());
        self.lens.push(len);
        self.bytes += len;
    }

    /// Everything received in slot `i`: the vnet header followed by the frame.
    pub fn raw(&self, i: usize) -> &[u8] {
        &self.buffers[i][..self.lens[i]]
    }

    /// The frame of slot `i`, writable (checksum completion happens in place).
    pub fn raw_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.buffers[i][..self.lens[i]]
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

/// Frames to send, each a list of pieces; rebuilt per batch.
#[derive(Default)]
pub struct TxQueue {
    frames: Vec<Range<usize>>,
    pieces: Vec<Piece>,
    scratch: Vec<u8>,
    open_frame: Option<usize>,
}

impl TxQueue {
    pub fn clear(&mut self) {
        self.frames.clear();
        self.pieces.clear();
        self.scratch.clear();
        self.open_frame = None;
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Starts a frame whose first piece is `vnet` (copied to scratch).
    pub fn begin(&mut self, vnet: &[u8; VNET_LEN]) {
        self.finish();
        self.open_frame = Some(self.pieces.len());
        self.push_bytes(vnet);
    }

    /// Appends bytes copied into scratch (headers, never payload).
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        let start = self.scratch.len() as u32;
        self.scratch.extend_from_slice(bytes);
        self.pieces
            .push(Piece::Scratch(start..self.scratch.len() as u32));
    }

    /// Appends a range of received slot `slot`, by reference.
    pub fn push_rx(&mut self, slot: usize, range: Range<usize>) {
        if range.is_empty() {
            return;
        }
        self.pieces.push(Piece::Rx {
            slot: slot as u32,
            range: range.start as u32..range.end as u32,
        });
    }

    /// Closes the frame being built.
    pub fn finish(&mut self) {
        if let Some(start) = self.open_frame.take() {
            self.frames.push(start..self.pieces.len());
        }
    }

    /// The byte slices of frame `index`, in order.
    pub fn pieces<'a>(
        &'a self,
        index: usize,
        rx: &'a RxBatch,
    ) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.pieces[self.frames[index].clone()]
            .iter()
            .map(move |piece| match piece {
                Piece::Scratch(r) => &self.scratch[r.start as usize..r.end as usize],
                Piece::Rx { slot, range } => {
                    &rx.raw(*slot as usize)[range.start as usize..range.end as usize]
                }
            })
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
