//! Frames in and out of the guest's virtqueues, with every descriptor checked: a chain
//! the guest wrote wrongly is a typed reason, never a panic and never a read or write
//! outside the guest's memory.

use virtio_queue::desc::split::Descriptor;
use virtio_queue::{Queue, QueueT};
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

use super::avail::DriverRing;
use vm_memory::{Address, Bytes, GuestAddress, GuestMemoryBackend, GuestMemoryMmap};

/// Why a descriptor chain was not used as a frame (the guest's fault, or a full ring).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainError {
    /// The chain had no descriptor the iterator could read (its head was unreadable).
    Empty,
    /// A descriptor of length zero.
    ZeroLength,
    /// A descriptor whose buffer is not inside the guest's memory regions.
    OutsideMemory,
    /// The chain did not end within the queue's size (a loop, or a bad `next`).
    Unterminated,
    /// A device-writable descriptor on the transmit queue.
    WritableOnTransmit,
    /// A device-readable descriptor on the receive queue.
    ReadableOnReceive,
    /// More bytes than the largest frame with its virtio header.
    TooLong,
    /// An indirect descriptor not alone at the head, nested, or of a length that is not
    /// whole descriptors.
    BadIndirect,
}

impl ChainError {
    pub fn reason(self) -> &'static str {
        match self {
            ChainError::Empty => "empty descriptor chain",
            ChainError::ZeroLength => "zero-length descriptor",
            ChainError::OutsideMemory => "descriptor outside guest memory",
            ChainError::Unterminated => "descriptor chain loops or outruns the queue",
            ChainError::WritableOnTransmit => "device-writable descriptor on the transmit queue",
            ChainError::ReadableOnReceive => "device-readable descriptor on the receive queue",
            ChainError::TooLong => "frame longer than 64 KiB",
            ChainError::BadIndirect => "malformed indirect descriptor",
        }
    }
}

/// Copies a transmit chain's checked buffers (virtio header + frame) into `slot`;
/// returns its length.
pub fn copy_chain(memory: &GuestMemoryMmap, descriptors: &[Descriptor], slot: &mut [u8]) -> Result<usize, ChainError> {
    let mut len = 0usize;
    for desc in descriptors {
        let end = len + desc.len() as usize;
        let into = slot.get_mut(len..end).ok_or(ChainError::TooLong)?;
        copy_from_guest(memory, desc.addr(), into)?;
        len = end;
    }
    Ok(len)
}

/// The host address of a transmit chain that is one buffer inside one guest memory
/// region (what a driver posts for a frame whose header and data are contiguous), so
/// the frame can be read where it is; None for any other chain.
pub fn in_place(avail: &mut DriverRing<'_>, descriptors: &[Descriptor]) -> Option<(NonNull<u8>, usize)> {
    let [desc] = descriptors else { return None };
    let len = desc.len() as usize;
    avail.host(desc.addr(), len).map(|bytes| (bytes, len))
}

/// A receive chain popped for one frame: its head and writable buffers (reused from
/// frame to frame, so popping allocates nothing once warm).
#[derive(Default)]
pub struct RxChain {
    pub head: u16,
    pub buffers: Vec<RxBuffer>,
    pub capacity: usize,
}

/// One writable buffer of a receive chain.
pub struct RxBuffer {
    addr: GuestAddress,
    len: usize,
    /// Its host address when it lies inside one memory region (every buffer a driver
    /// posts): translated once when the chain is popped, not once per piece written.
    host: Option<NonNull<u8>>,
}

impl RxBuffer {
    /// `desc`'s buffer, with the host address `host` finds for it (`DriverRing::host`).
    pub(super) fn new(desc: &Descriptor, host: impl FnOnce(GuestAddress, usize) -> Option<NonNull<u8>>) -> RxBuffer {
        let len = desc.len() as usize;
        RxBuffer { addr: desc.addr(), len, host: host(desc.addr(), len) }
    }
}

/// Takes the next receive chain `avail` offers into `into`; `Ok(false)` when the
/// guest had posted no more when its available index was read.
pub fn pop_rx_chain(
    avail: &mut DriverRing<'_>,
    scratch: &mut Vec<Descriptor>,
    into: &mut RxChain,
) -> Result<bool, (u16, ChainError)> {
    let Some((head, shape)) = avail.next_chain(true, scratch) else {
        return Ok(false);
    };
    shape.map_err(|e| (head, e))?;
    into.head = head;
    into.buffers.clear();
    into.buffers.extend(scratch.iter().map(|d| RxBuffer::new(d, |addr, len| avail.host(addr, len))));
    into.capacity = into.buffers.iter().map(|b| b.len).sum();
    Ok(true)
}

impl RxBuffer {
    /// Writes `bytes` at the start of this buffer when it has a host address and room
    /// for them (false, and nothing written, otherwise): a copy of a length known at
    /// compile time, which the compiler makes a few stores.
    pub fn write_array<const N: usize>(&self, bytes: &[u8; N]) -> bool {
        match self.host {
            // SAFETY: as in `write`: `N <= self.len` bytes at `host` lie in a writable
            // mapping of guest memory that outlives this call, and `bytes` is not in it.
            Some(host) if N <= self.len => {
                unsafe { std::ptr::write_unaligned(host.as_ptr().cast::<[u8; N]>(), *bytes) };
                true
            }
            _ => false,
        }
    }

    /// Its length in bytes.
    pub fn size(&self) -> usize {
        self.len
    }

    /// Writes `bytes` at `offset` of this buffer, just popped from the ring of `memory`;
    /// `offset + bytes.len()` must be within its length (else nothing is written).
    pub fn write(&self, memory: &GuestMemoryMmap, offset: usize, bytes: &[u8]) -> Result<(), ChainError> {
        if offset.checked_add(bytes.len()).is_none_or(|end| end > self.len) {
            return Err(ChainError::TooLong);
        }
        match self.host {
            // SAFETY: `RxBuffer::new` checked that `self.len` bytes at `host` lie in a
            // writable shared mapping of `memory`, which the caller still holds (the
            // device's memory table cannot change while it does); `offset + bytes.len()`
            // is within `self.len` (checked above); `bytes` is the forwarder's memory or
            // the other port's mapping of its guest (each port maps its guest itself),
            // never this mapping.
            Some(host) => unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), host.as_ptr().add(offset), bytes.len()) },
            None => {
                let at = self.addr.checked_add(offset as u64).ok_or(ChainError::OutsideMemory)?;
                copy_to_guest(memory, at, bytes)?;
            }
        }
        Ok(())
    }
}

/// Copies guest bytes at `addr` into `into`. A range inside one memory region (every
/// buffer a guest driver posts) is one `memcpy`; `vm-memory`'s `read_slice` walks a
/// slice iterator per call, which cost a third of the forwarder's time at MTU frame
/// rates, and remains the path for a range that spans regions.
fn copy_from_guest(memory: &GuestMemoryMmap, addr: GuestAddress, into: &mut [u8]) -> Result<(), ChainError> {
    match memory.get_slice(addr, into.len()) {
        Ok(slice) => {
            // SAFETY: `get_slice` checked that `into.len()` bytes at this host address
            // lie inside a mapping of guest memory; `into` is this process's own buffer,
            // so they do not overlap. The guest may change the bytes meanwhile (as with
            // any vhost backend's copy): they are parsed as untrusted afterwards.
            unsafe { std::ptr::copy_nonoverlapping(slice.ptr_guard().as_ptr(), into.as_mut_ptr(), into.len()) };
            Ok(())
        }
        Err(_) => memory.read_slice(into, addr).map_err(|_| ChainError::OutsideMemory),
    }
}

/// Copies `bytes` into guest memory at `addr` (see `copy_from_guest`).
fn copy_to_guest(memory: &GuestMemoryMmap, addr: GuestAddress, bytes: &[u8]) -> Result<(), ChainError> {
    match memory.get_slice(addr, bytes.len()) {
        Ok(slice) => {
            // SAFETY: as in `copy_from_guest`, the other way round: the destination is
            // a writable shared mapping of guest memory, checked to hold `bytes.len()`.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), slice.ptr_guard_mut().as_ptr(), bytes.len()) };
            Ok(())
        }
        Err(_) => memory.write_slice(bytes, addr).map_err(|_| ChainError::OutsideMemory),
    }
}

/// The used entries of one batch, kept here and written to the used ring together
/// when the batch ends (one copy per batch, or two where the ring wraps, instead of an
/// address lookup and a store per frame); the used index, which the guest's driver
/// polls from its own core, is stored once after them (a store per frame pulled its
/// cache line away from the driver every time). DPDK's vhost library keeps its shadow
/// used ring for the same reasons.
#[derive(Default)]
pub struct UsedBatch {
    /// `virtq_used_elem`s as the ring holds them: id and length, little-endian u32s
    /// (one push of 8 bytes per entry, not two appends of 4).
    entries: Vec<[u8; 8]>,
}

impl UsedBatch {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn push(&mut self, head: u16, len: u32) {
        let entry = (u64::from(head) | u64::from(len) << 32).to_le_bytes();
        self.entries.push(entry);
    }

    /// Writes the entries at the ring's next used slots and makes them visible to
    /// the driver (the index is stored even with no entries: a no-op for it).
    pub fn publish(&mut self, queue: &mut Queue, memory: &GuestMemoryMmap) {
        const ENTRY: usize = 8;
        let size = queue.size();
        let mut next = queue.next_used();
        let mut rest = self.entries.as_flattened();
        while size > 0 && !rest.is_empty() {
            let slot = next % size;
            let run = (usize::from(size - slot) * ENTRY).min(rest.len());
            let at = GuestAddress(queue.used_ring() + 4 + ENTRY as u64 * u64::from(slot));
            if copy_to_guest(memory, at, &rest[..run]).is_err() {
                break;
            }
            next = next.wrapping_add((run / ENTRY) as u16);
            rest = &rest[run..];
        }
        self.entries.clear();
        queue.set_next_used(next);
        let index = GuestAddress(queue.used_ring() + 2);
        let _ = memory.store(next.to_le(), index, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch that runs past the used ring's end is written in two pieces: its first
    /// entries at the last slots, the rest from slot 0, and the index counts them all.
    #[test]
    fn a_batch_of_used_entries_wraps_round_the_ring() {
        let memory = GuestMemoryMmap::from_ranges(&[(GuestAddress(0), 0x1000)]).unwrap();
        let mut queue = Queue::new(4).unwrap();
        queue.set_used_ring_address(Some(0x800), Some(0));
        queue.set_next_used(u16::MAX - 1);
        let mut batch = UsedBatch::default();
        for head in 0..3u16 {
            batch.push(head, 100 + u32::from(head));
        }
        batch.publish(&mut queue, &memory);
        let entry = |slot: u64| -> (u32, u32) {
            let at = GuestAddress(0x800 + 4 + 8 * slot);
            (memory.read_obj(at).unwrap(), memory.read_obj(at.unchecked_add(4)).unwrap())
        };
        // u16::MAX - 1 is slot 2 of 4; the third entry lands in slot 0.
        assert_eq!([entry(2), entry(3), entry(0)], [(0, 100), (1, 101), (2, 102)]);
        let index: u16 = memory.read_obj(GuestAddress(0x802)).unwrap();
        assert_eq!(index, 1);
        assert_eq!(queue.next_used(), 1);
    }
}
