//! The vhost-user device state a frontend (QEMU) sets up over the socket: features,
//! the guest's memory table, and the two virtqueues of one queue pair. The `vhost` crate
//! parses the messages and passes their file descriptors; this is what they do.
//!
//! Why not `vhost-user-backend`'s daemon: QEMU 7.2's vhost-user-net sends
//! SET_VRING_ENABLE when the guest driver sets its features, before it sends
//! SET_FEATURES, and the crate's request handler refuses that message as an inactive
//! feature and drops the connection (QEMU then cannot start the device). Driving the
//! `vhost` crate's handler ourselves lets the port ignore exactly that early message
//! (QEMU resends it after SET_FEATURES) and keep everything on the forwarding thread.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::Ordering;

use vhost::VhostUserMemoryRegionBase;
use vhost::vhost_user::message::*;
use vhost::vhost_user::{Backend, Error, GpuBackend, Result, VhostUserBackendReqHandlerMut};
use virtio_bindings::virtio_config::VIRTIO_F_VERSION_1;
use virtio_bindings::virtio_net::*;
use virtio_bindings::virtio_ring::{VIRTIO_RING_F_INDIRECT_DESC, VRING_AVAIL_F_NO_INTERRUPT};
use virtio_queue::{Queue, QueueT};
use vm_memory::{Bytes, FileOffset, GuestAddress, GuestMemoryMmap, GuestRegionMmap, MmapRegion};

/// Virtqueue indices of a single-queue-pair virtio-net device.
pub const RX_QUEUE: usize = 0;
pub const TX_QUEUE: usize = 1;
const MAX_QUEUE_SIZE: u16 = 1024;

/// What the device offers: checksum and TCP segmentation offloads both ways, merged
/// receive buffers, indirect descriptors. No UFO/USO (the engine does not segment UDP
/// for a guest), no event index (every kick is taken; the forwarder batches anyway), no
/// control queue, one queue pair.
pub const OFFERED: u64 = (1 << VIRTIO_NET_F_CSUM)
    | (1 << VIRTIO_NET_F_GUEST_CSUM)
    | (1 << VIRTIO_NET_F_GUEST_TSO4)
    | (1 << VIRTIO_NET_F_GUEST_TSO6)
    | (1 << VIRTIO_NET_F_GUEST_ECN)
    | (1 << VIRTIO_NET_F_HOST_TSO4)
    | (1 << VIRTIO_NET_F_HOST_TSO6)
    | (1 << VIRTIO_NET_F_HOST_ECN)
    | (1 << VIRTIO_NET_F_MRG_RXBUF)
    | (1 << VIRTIO_RING_F_INDIRECT_DESC)
    | (1 << VIRTIO_F_VERSION_1);

/// Feature bits by their virtio-net names, for the stats.
pub const FEATURE_NAMES: [(u32, &str); 11] = [
    (VIRTIO_NET_F_CSUM, "csum"),
    (VIRTIO_NET_F_GUEST_CSUM, "guest_csum"),
    (VIRTIO_NET_F_GUEST_TSO4, "guest_tso4"),
    (VIRTIO_NET_F_GUEST_TSO6, "guest_tso6"),
    (VIRTIO_NET_F_GUEST_ECN, "guest_ecn"),
    (VIRTIO_NET_F_HOST_TSO4, "host_tso4"),
    (VIRTIO_NET_F_HOST_TSO6, "host_tso6"),
    (VIRTIO_NET_F_HOST_ECN, "host_ecn"),
    (VIRTIO_NET_F_MRG_RXBUF, "mrg_rxbuf"),
    (VIRTIO_RING_F_INDIRECT_DESC, "indirect_desc"),
    (VIRTIO_F_VERSION_1, "version_1"),
];

/// Names of the acknowledged feature bits.
pub fn feature_names(acked: u64) -> Vec<&'static str> {
    FEATURE_NAMES
        .iter()
        .filter(|(bit, _)| acked & (1 << bit) != 0)
        .map(|(_, name)| *name)
        .collect()
}

/// One virtqueue as the frontend described it.
#[derive(Default)]
pub struct Ring {
    size: u16,
    base: u16,
    /// Descriptor table, available ring, used ring: guest physical addresses.
    addresses: Option<(u64, u64, u64)>,
    pub kick: Option<File>,
    call: Option<File>,
    /// Grows whenever `kick` is replaced, so the port re-registers it for polling.
    pub kick_generation: u64,
    enabled: bool,
    /// The queue, once size, addresses and kick are set.
    pub queue: Option<Queue>,
}

impl Ring {
    /// Tells the guest that used buffers are waiting (its call eventfd), unless its
    /// driver polls and said so (`VRING_AVAIL_F_NO_INTERRUPT`): a write system call per
    /// batch saved, as DPDK's vhost library saves it.
    pub fn notify(&mut self, memory: &GuestMemoryMmap) {
        // `needs_notification` also orders the used index written before the flags read.
        let wanted = self.queue.as_mut().map(|q| q.needs_notification(memory).unwrap_or(true));
        if wanted == Some(false) || self.queue.as_ref().is_some_and(|q| driver_polls(q, memory)) {
            return;
        }
        if let Some(call) = &self.call {
            // A full eventfd counter already signals; nothing else can fail here.
            let _ = (&*call).write_all(&1u64.to_ne_bytes());
        }
    }

    /// The queue when the guest may use it.
    pub fn active(&mut self) -> Option<&mut Queue> {
        if !self.enabled {
            return None;
        }
        self.queue.as_mut().filter(|q| q.ready())
    }

    fn start(&mut self) -> Result<()> {
        let (desc, avail, used) = self.addresses.ok_or(Error::InvalidParam)?;
        let mut queue = Queue::new(MAX_QUEUE_SIZE).map_err(|_| Error::InvalidParam)?;
        queue.set_size(self.size);
        let split = |a: u64| (Some(a as u32), Some((a >> 32) as u32));
        let (lo, hi) = split(desc);
        queue.set_desc_table_address(lo, hi);
        let (lo, hi) = split(avail);
        queue.set_avail_ring_address(lo, hi);
        let (lo, hi) = split(used);
        queue.set_used_ring_address(lo, hi);
        queue.set_next_avail(self.base);
        queue.set_next_used(self.base);
        queue.set_event_idx(false);
        queue.set_ready(true);
        self.queue = Some(queue);
        Ok(())
    }
}

/// Whether the driver set `VRING_AVAIL_F_NO_INTERRUPT` (it polls the used ring). Without
/// an event index this flag alone says whether the guest wants its call eventfd written,
/// and `virtio-queue`'s `needs_notification` does not read it: it answers "yes" whenever
/// the event index is off, so every send and every batch of returned transmit chains
/// cost a `write` system call (about 6 % of offlab-fwd's samples, `perf record`, W5 GRO).
fn driver_polls(queue: &Queue, memory: &GuestMemoryMmap) -> bool {
    const NO_INTERRUPT: u16 = VRING_AVAIL_F_NO_INTERRUPT as u16;
    memory
        .load::<u16>(GuestAddress(queue.avail_ring()), Ordering::Acquire)
        .is_ok_and(|flags| u16::from_le(flags) & NO_INTERRUPT != 0)
}

/// Frontend virtual address → guest physical address, for the rings' addresses.
struct Mapping {
    frontend: u64,
    size: u64,
    guest: u64,
}

/// The device one frontend connection configures.
#[derive(Default)]
pub struct NetDevice {
    pub acked: u64,
    protocol: u64,
    pub memory: Option<GuestMemoryMmap>,
    mappings: Vec<Mapping>,
    pub rings: [Ring; 2],
}

impl NetDevice {
    pub fn has(&self, bit: u32) -> bool {
        self.acked & (1 << bit) != 0
    }

    fn ring(&mut self, index: u32) -> Result<&mut Ring> {
        self.rings.get_mut(index as usize).ok_or(Error::InvalidParam)
    }

    fn guest_address(&self, frontend: u64) -> Result<u64> {
        self.mappings
            .iter()
            .find(|m| frontend >= m.frontend && frontend - m.frontend < m.size)
            .map(|m| frontend - m.frontend + m.guest)
            .ok_or(Error::InvalidParam)
    }
}

const UNSUPPORTED: Error = Error::InvalidOperation("not supported by offlab-fwd's vhost-user-net");

impl VhostUserBackendReqHandlerMut for NetDevice {
    fn set_owner(&mut self) -> Result<()> {
        Ok(())
    }

    fn reset_owner(&mut self) -> Result<()> {
        *self = NetDevice::default();
        Ok(())
    }

    fn reset_device(&mut self) -> Result<()> {
        self.reset_owner()
    }

    fn get_features(&mut self) -> Result<u64> {
        Ok(OFFERED | VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits())
    }

    fn set_features(&mut self, features: u64) -> Result<()> {
        if features & !(OFFERED | VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits()) != 0 {
            return Err(Error::InvalidParam);
        }
        self.acked = features;
        Ok(())
    }

    fn set_mem_table(
        &mut self,
        ctx: &[VhostUserMemoryRegion],
        files: Vec<File>,
        _postcopy_listening: Option<bool>,
    ) -> Result<Option<Vec<VhostUserMemoryRegionBase>>> {
        let mut regions = Vec::with_capacity(ctx.len());
        let mut mappings = Vec::with_capacity(ctx.len());
        for (region, file) in ctx.iter().zip(files) {
            let mapped = MmapRegion::from_file(
                FileOffset::new(file, region.mmap_offset),
                region.memory_size as usize,
            )
            .map_err(|_| Error::InvalidParam)?;
            let guest = GuestRegionMmap::new(mapped, GuestAddress(region.guest_phys_addr))
                .ok_or(Error::InvalidParam)?;
            regions.push(guest);
            mappings.push(Mapping {
                frontend: region.user_addr,
                size: region.memory_size,
                guest: region.guest_phys_addr,
            });
        }
        self.memory = Some(GuestMemoryMmap::from_regions(regions).map_err(|_| Error::InvalidParam)?);
        self.mappings = mappings;
        Ok(None)
    }

    fn set_vring_num(&mut self, index: u32, num: u32) -> Result<()> {
        if num == 0 || num > MAX_QUEUE_SIZE as u32 || !num.is_power_of_two() {
            return Err(Error::InvalidParam);
        }
        self.ring(index)?.size = num as u16;
        Ok(())
    }

    fn set_vring_addr(
        &mut self,
        index: u32,
        _flags: VhostUserVringAddrFlags,
        descriptor: u64,
        used: u64,
        available: u64,
        _log: u64,
    ) -> Result<()> {
        let addresses = (
            self.guest_address(descriptor)?,
            self.guest_address(available)?,
            self.guest_address(used)?,
        );
        self.ring(index)?.addresses = Some(addresses);
        Ok(())
    }

    fn set_vring_base(&mut self, index: u32, base: u32) -> Result<()> {
        self.ring(index)?.base = base as u16;
        Ok(())
    }

    /// Stops the ring (QEMU asks on device stop) and reports where it stood.
    fn get_vring_base(&mut self, index: u32) -> Result<VhostUserVringState> {
        let ring = self.ring(index)?;
        let next = ring.queue.as_ref().map_or(ring.base, |q| q.next_avail());
        ring.queue = None;
        ring.kick = None;
        ring.kick_generation += 1;
        ring.base = next;
        Ok(VhostUserVringState::new(index, next as u32))
    }

    fn set_vring_kick(&mut self, index: u8, fd: Option<File>) -> Result<()> {
        let ring = self.ring(index as u32)?;
        ring.kick = fd;
        ring.kick_generation += 1;
        // The kick is the last of a ring's settings: it starts now. Without
        // PROTOCOL_FEATURES a ring is enabled by this; with them QEMU also enables it.
        ring.enabled = true;
        ring.start()
    }

    fn set_vring_call(&mut self, index: u8, fd: Option<File>) -> Result<()> {
        self.ring(index as u32)?.call = fd;
        Ok(())
    }

    fn set_vring_err(&mut self, _index: u8, _fd: Option<File>) -> Result<()> {
        Ok(())
    }

    fn get_protocol_features(&mut self) -> Result<VhostUserProtocolFeatures> {
        // The vhost crate adds REPLY_ACK, which it implements itself.
        Ok(VhostUserProtocolFeatures::empty())
    }

    fn set_protocol_features(&mut self, features: u64) -> Result<()> {
        self.protocol = features;
        Ok(())
    }

    fn get_queue_num(&mut self) -> Result<u64> {
        Ok(2)
    }

    fn set_vring_enable(&mut self, index: u32, enable: bool) -> Result<()> {
        self.ring(index)?.enabled = enable;
        Ok(())
    }

    fn get_config(&mut self, _offset: u32, _size: u32, _flags: VhostUserConfigFlags) -> Result<Vec<u8>> {
        Err(UNSUPPORTED)
    }

    fn set_config(&mut self, _offset: u32, _buf: &[u8], _flags: VhostUserConfigFlags) -> Result<()> {
        Err(UNSUPPORTED)
    }

    fn set_backend_req_fd(&mut self, _backend: Backend) {}

    fn set_gpu_socket(&mut self, _gpu_backend: GpuBackend) -> Result<()> {
        Err(UNSUPPORTED)
    }

    fn get_shared_object(&mut self, _uuid: VhostUserSharedMsg) -> Result<File> {
        Err(UNSUPPORTED)
    }

    fn get_inflight_fd(&mut self, _inflight: &VhostUserInflight) -> Result<(VhostUserInflight, File)> {
        Err(UNSUPPORTED)
    }

    fn set_inflight_fd(&mut self, _inflight: &VhostUserInflight, _file: File) -> Result<()> {
        Err(UNSUPPORTED)
    }

    fn get_max_mem_slots(&mut self) -> Result<u64> {
        Err(UNSUPPORTED)
    }

    fn add_mem_region(
        &mut self,
        _region: &VhostUserSingleMemoryRegion,
        _fd: File,
        _postcopy_listening: Option<bool>,
    ) -> Result<Option<VhostUserMemoryRegionBase>> {
        Err(UNSUPPORTED)
    }

    fn remove_mem_region(&mut self, _region: &VhostUserSingleMemoryRegion) -> Result<()> {
        Err(UNSUPPORTED)
    }

    fn set_device_state_fd(
        &mut self,
        _direction: VhostTransferStateDirection,
        _phase: VhostTransferStatePhase,
        _fd: File,
    ) -> Result<Option<File>> {
        Err(UNSUPPORTED)
    }

    fn check_device_state(&mut self) -> Result<()> {
        Err(UNSUPPORTED)
    }

    fn get_shmem_config(&mut self) -> Result<VhostUserShMemConfig> {
        Err(UNSUPPORTED)
    }

    fn set_log_base(&mut self, _log: &VhostUserLog, _file: File) -> Result<()> {
        Err(UNSUPPORTED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::FromRawFd;

    /// A started ring of 8 entries at fixed addresses, and the read end of its call.
    fn ring_with_call() -> (Ring, File) {
        // SAFETY: eventfd returns a new descriptor this test owns (checked below).
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK) };
        assert!(fd >= 0);
        // SAFETY: `fd` is open and owned by nothing else; `dup` gives the second owner.
        let (call, read) = unsafe { (File::from_raw_fd(fd), File::from_raw_fd(libc::dup(fd))) };
        let mut ring = Ring {
            size: 8,
            addresses: Some((0x1000, 0x2000, 0x3000)),
            call: Some(call),
            ..Ring::default()
        };
        ring.start().unwrap();
        (ring, read)
    }

    fn called(read: &mut File) -> bool {
        let mut value = [0u8; 8];
        read.read(&mut value).is_ok()
    }

    /// A driver that polls (NO_INTERRUPT in its available ring's flags) gets no call; one
    /// that clears the flag again is called at the next notify.
    #[test]
    fn the_call_follows_the_drivers_no_interrupt_flag() {
        let memory = GuestMemoryMmap::from_ranges(&[(GuestAddress(0), 0x10000)]).unwrap();
        let (mut ring, mut read) = ring_with_call();
        ring.notify(&memory);
        assert!(called(&mut read), "no flag: called");
        let no_interrupt = (VRING_AVAIL_F_NO_INTERRUPT as u16).to_le();
        memory.write_obj(no_interrupt, GuestAddress(0x2000)).unwrap();
        ring.notify(&memory);
        assert!(!called(&mut read), "NO_INTERRUPT: not called");
        memory.write_obj(0u16, GuestAddress(0x2000)).unwrap();
        ring.notify(&memory);
        assert!(called(&mut read), "flag cleared: called again");
    }
}
