//! The driver's side of a split virtqueue — its available ring and descriptor table —
//! read through slices translated once per batch.
//!
//! `virtio-queue`'s `AvailIter` and `DescriptorChain` look every available entry and
//! every descriptor up in the guest's memory table again (`GuestMemory::load` and
//! `read_obj`: a region search and an access check each); at MTU frame rates that was
//! ~370 instructions per frame of the forwarder's ~2500 (callgrind, W5). Here the table
//! and the ring are each one `VolatileSlice` per batch, and a descriptor is a bounds-
//! checked volatile load from it. `virtio-queue` still owns the queue's state (its
//! addresses, size, next available index, notification flags): a `DriverRing` reads
//! from the index the queue holds and writes its new position back with `finish`.

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;

use virtio_bindings::virtio_ring::VRING_DESC_F_INDIRECT;
use virtio_queue::desc::split::Descriptor;
use virtio_queue::{Queue, QueueT};
use vm_memory::{
    Bytes, GuestAddress, GuestMemoryBackend, GuestMemoryMmap, GuestMemoryRegion, MemoryRegionAddress,
    VolatileSlice,
};

use super::ring::ChainError;

const DESCRIPTOR: usize = std::mem::size_of::<Descriptor>();
/// The available ring's flags and index come before its entries.
const RING_HEADER: usize = 4;

/// One batch's view of a queue's available ring, from the index the queue holds to the
/// available index the driver had published when it was last read.
pub struct DriverRing<'m> {
    memory: &'m GuestMemoryMmap,
    table: Table<'m>,
    ring: VolatileSlice<'m>,
    /// The ring's entries, read as plain loads from here (`ring` holds `size` of them).
    heads: *const u8,
    size: u16,
    next: u16,
    end: u16,
    /// The memory region the last buffer was found in: its guest start, length and host
    /// address. A driver's buffers nearly all lie in one region, so most lookups are a
    /// range check here instead of `vm-memory`'s region search (~60 instructions each,
    /// two per forwarded frame: callgrind, W5).
    region: Option<(u64, u64, NonNull<u8>)>,
}

impl<'m> DriverRing<'m> {
    /// Translates `queue`'s descriptor table and available ring and reads the available
    /// index; None when either lies outside the guest's memory, the size is not a power
    /// of two, or the index claims more entries than the ring holds (a driver bug:
    /// nothing is read, as `virtio-queue` refuses it too).
    pub fn new(queue: &Queue, memory: &'m GuestMemoryMmap) -> Option<DriverRing<'m>> {
        let size = queue.size();
        // A split ring's size is a power of two (`Queue` refuses any other), so a slot
        // is the index masked, not divided: a `div` per chain taken is ~10 cycles.
        if !size.is_power_of_two() {
            return None;
        }
        let slots = usize::from(size);
        let table = Table::of(memory.get_slice(GuestAddress(queue.desc_table()), slots * DESCRIPTOR).ok()?, size).ok()?;
        let ring = memory.get_slice(GuestAddress(queue.avail_ring()), RING_HEADER + 2 * slots).ok()?;
        // SAFETY: `ring` maps RING_HEADER + 2 * slots bytes; the heads start after the header.
        let heads = unsafe { ring.ptr_guard().as_ptr().add(RING_HEADER) };
        let mut view = DriverRing { memory, table, ring, heads, size, next: queue.next_avail(), end: 0, region: None };
        view.refresh().then_some(view)
    }

    /// Reads the available index again (the driver may have posted more since); false
    /// when it is not believable.
    pub fn refresh(&mut self) -> bool {
        // Acquire: the entries and descriptors the driver wrote before publishing the
        // index are read after it.
        let Ok(end) = self.ring.load::<u16>(2, Ordering::Acquire).map(u16::from_le) else { return false };
        if end.wrapping_sub(self.next) > self.size {
            return false;
        }
        self.end = end;
        true
    }

    /// Takes the next available chain: its head, and its descriptors checked for shape
    /// into `out` (every one non-empty, of the wanted direction, the chain ended within
    /// its table). None when the driver had posted no more at the last `refresh`.
    pub fn next_chain(&mut self, writable: bool, out: &mut Vec<Descriptor>) -> Option<(u16, Result<(), ChainError>)> {
        if self.next == self.end {
            return None;
        }
        let slot = usize::from(self.next & (self.size - 1));
        // SAFETY: `heads` holds `size` entries of 2 bytes (see `new`) and slot < size.
        let head = u16::from_le_bytes(unsafe { std::ptr::read_volatile(self.heads.add(2 * slot).cast::<[u8; 2]>()) });
        self.next = self.next.wrapping_add(1);
        Some((head, self.walk(head, writable, out)))
    }

    /// Gives back the last `count` chains taken (a frame that did not fit).
    pub fn put_back(&mut self, count: u16) {
        self.next = self.next.wrapping_sub(count);
    }

    /// The host address of the `len` guest bytes at `addr`, when they lie inside one
    /// memory region (what `GuestMemory::get_slice` checks); None otherwise.
    pub fn host(&mut self, addr: GuestAddress, len: usize) -> Option<NonNull<u8>> {
        let (start, size, base) = match self.region {
            Some(region) if addr.0.wrapping_sub(region.0) < region.1 => region,
            _ => {
                let found = self.memory.find_region(addr)?;
                let base = NonNull::new(found.get_host_address(MemoryRegionAddress(0)).ok()?)?;
                let region = (found.start_addr().0, found.len(), base);
                self.region = Some(region);
                region
            }
        };
        let offset = addr.0 - start;
        if offset.checked_add(len as u64)? > size {
            return None;
        }
        // SAFETY: `base` maps the region's `size` bytes and `offset + len <= size`, so
        // the address is inside that mapping, which lives as long as `self.memory`.
        Some(unsafe { base.add(offset as usize) })
    }

    /// Records in `queue` how far this batch read.
    pub fn finish(&self, queue: &mut Queue) {
        queue.set_next_avail(self.next);
    }

    fn walk(&self, head: u16, writable: bool, out: &mut Vec<Descriptor>) -> Result<(), ChainError> {
        out.clear();
        let mut table = self.table;
        let mut index = head;
        let mut indirect = false;
        loop {
            if index >= table.entries || out.len() >= usize::from(table.entries) {
                // A head outside the table reads nothing; a `next` outside it, or more
                // descriptors than the table holds (a loop), never ends the chain.
                return Err(if out.is_empty() && !indirect { ChainError::Empty } else { ChainError::Unterminated });
            }
            let desc = table.get(index);
            if desc.flags() & VRING_DESC_F_INDIRECT as u16 != 0 {
                // Virtio 1.2, 2.7.5.3.1: a driver puts an indirect table alone at the
                // head (never with NEXT, never inside another indirect table).
                if indirect || !out.is_empty() || desc.has_next() {
                    return Err(ChainError::BadIndirect);
                }
                table = self.indirect_table(&desc)?;
                indirect = true;
                index = 0;
                continue;
            }
            if desc.len() == 0 {
                return Err(ChainError::ZeroLength);
            }
            if desc.is_write_only() != writable {
                return Err(if writable { ChainError::ReadableOnReceive } else { ChainError::WritableOnTransmit });
            }
            out.push(desc);
            if !desc.has_next() {
                return Ok(());
            }
            index = desc.next();
        }
    }

    /// The table an indirect descriptor points at: whole descriptors, at least one, at
    /// most as many as a `u16` index reaches, inside one memory region.
    fn indirect_table(&self, desc: &Descriptor) -> Result<Table<'m>, ChainError> {
        let len = desc.len() as usize;
        let entries = u16::try_from(len / DESCRIPTOR).map_err(|_| ChainError::BadIndirect)?;
        if !len.is_multiple_of(DESCRIPTOR) || entries == 0 {
            return Err(ChainError::BadIndirect);
        }
        let table = self.memory.get_slice(desc.addr(), len).map_err(|_| ChainError::OutsideMemory)?;
        Table::of(table, entries)
    }
}

/// A descriptor table in the guest's memory: where it is mapped and how many
/// descriptors it holds. A descriptor is one 16-byte load from it, the index checked
/// against `entries` by the walk (a `VolatileSlice` access checked the offset, the
/// length and the alignment again for every descriptor: callgrind, W5).
#[derive(Clone, Copy)]
struct Table<'m> {
    base: *const u8,
    entries: u16,
    _memory: PhantomData<&'m GuestMemoryMmap>,
}

impl<'m> Table<'m> {
    /// `slice` must hold `entries` descriptors (its length is what `get_slice` mapped).
    /// A table not at an 8-byte boundary in this mapping is refused, as `vm-memory`'s
    /// aligned access refused its descriptors before (a split ring's own table is at a
    /// 16-byte boundary, which `virtio-queue` checks).
    fn of(slice: VolatileSlice<'m>, entries: u16) -> Result<Table<'m>, ChainError> {
        debug_assert!(slice.len() >= usize::from(entries) * DESCRIPTOR);
        let base = slice.ptr_guard().as_ptr();
        if !base.cast::<u64>().is_aligned() {
            return Err(ChainError::OutsideMemory);
        }
        Ok(Table { base, entries, _memory: PhantomData })
    }

    /// Descriptor `index`, which the caller checked is below `entries`.
    fn get(&self, index: u16) -> Descriptor {
        assert!(index < self.entries);
        // SAFETY: `base` maps `entries` descriptors for the lifetime 'm and is 8-byte
        // aligned (`of`), and index < entries. The loads are volatile: the guest may
        // rewrite the table, and the walk must check the very values it uses.
        let (addr, rest) = unsafe {
            let words = self.base.add(usize::from(index) * DESCRIPTOR).cast::<u64>();
            (std::ptr::read_volatile(words), std::ptr::read_volatile(words.add(1)))
        };
        // Little-endian fields: address, then length (32 bits), flags and next (16 each).
        let rest = u64::from_le(rest);
        Descriptor::new(u64::from_le(addr), rest as u32, (rest >> 32) as u16, (rest >> 48) as u16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use virtio_bindings::virtio_ring::{VRING_DESC_F_NEXT, VRING_DESC_F_WRITE};

    const TABLE: u64 = 0x1000;
    const AVAIL: u64 = 0x2000;
    const INDIRECT: u64 = 0x3000;
    const NEXT: u16 = VRING_DESC_F_NEXT as u16;
    const WRITE: u16 = VRING_DESC_F_WRITE as u16;
    const IND: u16 = VRING_DESC_F_INDIRECT as u16;

    /// A queue of 8 whose driver posted `heads`, with `descriptors` from slot 0 on.
    fn ring(descriptors: &[Descriptor], heads: &[u16]) -> (GuestMemoryMmap, Queue) {
        let memory = GuestMemoryMmap::from_ranges(&[(GuestAddress(0), 0x10000)]).unwrap();
        let mut queue = Queue::new(8).unwrap();
        queue.set_desc_table_address(Some(TABLE as u32), Some(0));
        queue.set_avail_ring_address(Some(AVAIL as u32), Some(0));
        for (slot, desc) in descriptors.iter().enumerate() {
            memory.write_obj(*desc, GuestAddress(TABLE + (slot * DESCRIPTOR) as u64)).unwrap();
        }
        for (slot, head) in heads.iter().enumerate() {
            memory.write_obj(*head, GuestAddress(AVAIL + 4 + 2 * slot as u64)).unwrap();
        }
        memory.write_obj(heads.len() as u16, GuestAddress(AVAIL + 2)).unwrap();
        (memory, queue)
    }

    fn take(memory: &GuestMemoryMmap, queue: &Queue, writable: bool) -> Vec<Result<Vec<(u64, u32)>, ChainError>> {
        let mut view = DriverRing::new(queue, memory).unwrap();
        let mut out = Vec::new();
        let mut chains = Vec::new();
        while let Some((_, result)) = view.next_chain(writable, &mut out) {
            chains.push(result.map(|()| out.iter().map(|d| (d.addr().0, d.len())).collect()));
        }
        chains
    }

    #[test]
    fn chains_are_read_in_order_with_their_buffers() {
        let (memory, queue) = ring(
            &[Descriptor::new(0x4000, 12, NEXT, 2), Descriptor::new(0x5000, 100, 0, 0), Descriptor::new(0x4100, 60, 0, 0)],
            &[1, 0],
        );
        assert_eq!(take(&memory, &queue, false), [Ok(vec![(0x5000, 100)]), Ok(vec![(0x4000, 12), (0x4100, 60)])]);
    }

    /// An indirect table at the head is walked as the chain; one nested in another, one
    /// with NEXT, or one of a length that is not whole descriptors is refused.
    #[test]
    fn indirect_tables_are_followed_and_malformed_ones_refused() {
        let descriptor = |len| Descriptor::new(INDIRECT, len, IND, 0);
        let (memory, queue) = ring(
            &[descriptor(32), Descriptor::new(INDIRECT, 32, IND | NEXT, 0), descriptor(20), descriptor(16)],
            &[0, 1, 2, 3],
        );
        memory.write_obj(Descriptor::new(0x6000, 12, WRITE | NEXT, 1), GuestAddress(INDIRECT)).unwrap();
        memory.write_obj(Descriptor::new(0x7000, 1500, WRITE, 0), GuestAddress(INDIRECT + 16)).unwrap();
        let chains = take(&memory, &queue, true);
        assert_eq!(chains[0], Ok(vec![(0x6000, 12), (0x7000, 1500)]));
        assert_eq!(chains[1], Err(ChainError::BadIndirect));
        assert_eq!(chains[2], Err(ChainError::BadIndirect));
        // A one-entry table whose descriptor points on (to slot 1, outside it).
        assert_eq!(chains[3], Err(ChainError::Unterminated));
        memory.write_obj(descriptor(16), GuestAddress(INDIRECT)).unwrap();
        assert_eq!(take(&memory, &queue, true)[0], Err(ChainError::BadIndirect), "nested");
    }

    #[test]
    fn loops_heads_outside_the_table_and_wrong_directions_are_typed() {
        let (memory, queue) = ring(
            &[Descriptor::new(0x4000, 12, NEXT, 1), Descriptor::new(0x4000, 12, NEXT, 0), Descriptor::new(0x4000, 0, 0, 0),
              Descriptor::new(0x4000, 12, WRITE, 0), Descriptor::new(0x4000, 12, NEXT, 9)],
            &[0, 8, 2, 3, 4],
        );
        assert_eq!(
            take(&memory, &queue, false),
            [Err(ChainError::Unterminated), Err(ChainError::Empty), Err(ChainError::ZeroLength),
             Err(ChainError::WritableOnTransmit), Err(ChainError::Unterminated)]
        );
    }

    /// Host addresses of ranges inside a region are found (from either region, in any
    /// order); a range that crosses a region's end or lies in no region has none.
    #[test]
    fn buffers_are_translated_only_inside_one_region() {
        let memory = GuestMemoryMmap::from_ranges(&[(GuestAddress(0), 0x10000), (GuestAddress(0x20000), 0x1000)]).unwrap();
        let queue = {
            let mut queue = Queue::new(8).unwrap();
            queue.set_desc_table_address(Some(TABLE as u32), Some(0));
            queue.set_avail_ring_address(Some(AVAIL as u32), Some(0));
            queue
        };
        let mut view = DriverRing::new(&queue, &memory).unwrap();
        let expected = |addr: u64, len: usize| memory.get_slice(GuestAddress(addr), len).ok().map(|s| s.ptr_guard().as_ptr());
        for (addr, len) in [(0x4000, 100), (0x20010, 16), (0x4100, 1), (0xfff0, 16), (0x20ff0, 16), (0x20ff0, 17), (0xfff0, 17),
                            (0x18000, 1), (0x20000, 0x1000)] {
            let got = view.host(GuestAddress(addr), len).map(|p| p.as_ptr().cast_const());
            assert_eq!(got, expected(addr, len), "{addr:#x}+{len}");
        }
        assert!(view.host(GuestAddress(0x20ff0), 17).is_none());
    }

    /// The batch reads up to the index the driver had published; `finish` records the
    /// position in the queue, after chains given back are taken off it.
    #[test]
    fn the_queue_records_how_far_a_batch_read() {
        let (memory, mut queue) = ring(&[Descriptor::new(0x4000, 12, 0, 0)], &[0, 0, 0]);
        let mut view = DriverRing::new(&queue, &memory).unwrap();
        let mut out = Vec::new();
        while view.next_chain(false, &mut out).is_some() {}
        view.put_back(1);
        view.finish(&mut queue);
        assert_eq!(queue.next_avail(), 2);
        // An index more than the ring's size ahead is not believed.
        memory.write_obj(2 + 9u16, GuestAddress(AVAIL + 2)).unwrap();
        assert!(DriverRing::new(&queue, &memory).is_none());
    }
}
