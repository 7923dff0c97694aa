//! The driver's half of a split virtqueue (virtio 1.x, 2.7): the descriptor table,
//! the available ring this side writes and the used ring the backend writes, all in
//! guest memory. Publishing and reading the indexes follow the spec's ordering: write
//! entries, fence, write `avail.idx`; read `used.idx`, fence, read entries.

use std::ptr::{read_volatile, write_volatile};
use std::sync::atomic::{fence, Ordering};

use vhost::VringConfigData;

use crate::memory::GuestMemory;

pub const F_NEXT: u16 = 1;
pub const F_WRITE: u16 = 2;
/// `avail.flags`: the driver polls, the device need not interrupt it.
const AVAIL_F_NO_INTERRUPT: u16 = 1;
/// `used.flags`: the device polls, the driver need not kick it.
const USED_F_NO_NOTIFY: u16 = 1;
const DESCRIPTOR_LEN: u64 = 16;

pub struct SplitRing {
    pub size: u16,
    desc: *mut u8,
    avail: *mut u8,
    used: *mut u8,
    config: VringConfigData,
    avail_idx: u16,
    used_seen: u16,
}

impl SplitRing {
    /// Lays out a ring of `size` entries (a power of two) in `memory`.
    pub fn new(memory: &mut GuestMemory, size: u16) -> std::io::Result<SplitRing> {
        let n = u64::from(size);
        let desc = memory.alloc((DESCRIPTOR_LEN * n) as usize, 4096)?;
        let avail = memory.alloc((6 + 2 * n) as usize, 4096)?;
        let used = memory.alloc((6 + 8 * n) as usize, 4096)?;
        let host = memory.host_base();
        let config = VringConfigData {
            queue_max_size: size,
            queue_size: size,
            flags: 0,
            desc_table_addr: host + desc,
            used_ring_addr: host + used,
            avail_ring_addr: host + avail,
            log_addr: None,
        };
        let ring = SplitRing {
            size,
            desc: memory.ptr(desc),
            avail: memory.ptr(avail),
            used: memory.ptr(used),
            config,
            avail_idx: 0,
            used_seen: 0,
        };
        // SAFETY: the avail ring's flags field, inside the memory just reserved.
        unsafe { write_volatile(ring.avail as *mut u16, AVAIL_F_NO_INTERRUPT.to_le()) };
        Ok(ring)
    }

    /// The addresses SET_VRING_ADDR carries (this process's addresses, as QEMU sends).
    pub fn config(&self) -> &VringConfigData {
        &self.config
    }

    /// Writes descriptor `id`: guest address, length, flags, next.
    pub fn set_descriptor(&mut self, id: u16, addr: u64, len: u32, flags: u16, next: u16) {
        assert!(id < self.size);
        // SAFETY: entry `id` of the descriptor table (asserted in range); 16-byte aligned.
        unsafe {
            let at = self.desc.add(usize::from(id) * DESCRIPTOR_LEN as usize);
            write_volatile(at as *mut u64, addr.to_le());
            write_volatile(at.add(8) as *mut u32, len.to_le());
            write_volatile(at.add(12) as *mut u16, flags.to_le());
            write_volatile(at.add(14) as *mut u16, next.to_le());
        }
    }

    /// Puts chain head `id` in the next available slot (seen after `publish`).
    pub fn push_avail(&mut self, id: u16) {
        let slot = usize::from(self.avail_idx % self.size);
        // SAFETY: slot < size inside the avail ring's entries.
        unsafe { write_volatile(self.avail.add(4 + 2 * slot) as *mut u16, id.to_le()) };
        self.avail_idx = self.avail_idx.wrapping_add(1);
    }

    /// Makes the pushed entries visible to the device.
    pub fn publish(&mut self) {
        fence(Ordering::Release);
        // SAFETY: the avail ring's idx field.
        unsafe { write_volatile(self.avail.add(2) as *mut u16, self.avail_idx.to_le()) };
        fence(Ordering::SeqCst);
    }

    /// Whether the device asked to be kicked (it polls when it sets NO_NOTIFY).
    pub fn wants_kick(&self) -> bool {
        // SAFETY: the used ring's flags field.
        let flags = u16::from_le(unsafe { read_volatile(self.used as *const u16) });
        flags & USED_F_NO_NOTIFY == 0
    }

    /// The next used entry (chain head, bytes written) the device has returned.
    pub fn pop_used(&mut self) -> Option<(u16, u32)> {
        // SAFETY: the used ring's idx field.
        let idx = u16::from_le(unsafe { read_volatile(self.used.add(2) as *const u16) });
        if idx == self.used_seen {
            return None;
        }
        fence(Ordering::Acquire);
        let slot = usize::from(self.used_seen % self.size);
        // SAFETY: slot < size inside the used ring's entries.
        let (id, len) = unsafe {
            let at = self.used.add(4 + 8 * slot);
            (u32::from_le(read_volatile(at as *const u32)), u32::from_le(read_volatile(at.add(4) as *const u32)))
        };
        self.used_seen = self.used_seen.wrapping_add(1);
        Some((id as u16, len))
    }

    /// Entries handed to the device and not yet returned.
    pub fn in_flight(&self) -> u16 {
        self.avail_idx.wrapping_sub(self.used_seen)
    }
}
