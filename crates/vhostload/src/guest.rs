//! One guest's virtio-net device as its driver sees it: a vhost-user connection to the
//! backend's socket, the features negotiated the way Linux's virtio-net driver does
//! (it acknowledges what it wants of what the device offers), its memory, and the
//! receive and transmit rings of one queue pair.

use std::io;
use std::time::{Duration, Instant};

use vhost::vhost_user::Frontend;
use vhost::{VhostBackend, VhostUserMemoryRegionInfo};
use vmm_sys_util::eventfd::EventFd;

use crate::memory::GuestMemory;
use crate::virtq::SplitRing;

pub const RX: usize = 0;
pub const TX: usize = 1;

/// virtio-net feature bits by the names QEMU's device properties use.
pub const FEATURES: &[(&str, u32)] = &[
    ("csum", 0),
    ("guest_csum", 1),
    ("guest_tso4", 7),
    ("guest_tso6", 8),
    ("guest_ecn", 9),
    ("host_tso4", 11),
    ("host_tso6", 12),
    ("host_ecn", 13),
    ("mrg_rxbuf", 15),
    ("version_1", 32),
];

pub fn feature_bit(name: &str) -> Option<u64> {
    FEATURES.iter().find(|(n, _)| *n == name).map(|(_, bit)| 1u64 << bit)
}

/// The names of the known bits set in `features`.
pub fn feature_names(features: u64) -> Vec<&'static str> {
    FEATURES.iter().filter(|(_, bit)| features & (1 << bit) != 0).map(|(n, _)| *n).collect()
}

/// Parses a comma-separated feature list ("" = none); VERSION_1 is always wanted.
pub fn parse_features(list: &str) -> Result<u64, String> {
    let mut bits = feature_bit("version_1").unwrap_or(0);
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        bits |= feature_bit(name).ok_or_else(|| {
            let known: Vec<_> = FEATURES.iter().map(|(n, _)| *n).collect();
            format!("unknown virtio-net feature {name:?} (known: {})", known.join(", "))
        })?;
    }
    Ok(bits)
}

pub struct Guest {
    _frontend: Frontend,
    pub memory: GuestMemory,
    pub rings: [SplitRing; 2],
    kicks: [EventFd; 2],
    _calls: [EventFd; 2],
    /// What the device offered and what this driver acknowledged.
    pub offered: u64,
    pub acked: u64,
}

impl Guest {
    /// Connects to `socket` (retrying for `wait` while the backend starts), negotiates
    /// `wanted` features and hands over memory and rings of `queue_size` entries.
    pub fn connect(socket: &str, wanted: u64, memory_size: usize, queue_size: u16, wait: Duration)
        -> io::Result<Guest> {
        let mut memory = GuestMemory::new(memory_size)?;
        let deadline = Instant::now() + wait;
        let frontend = loop {
            match Frontend::connect(socket, 2) {
                Ok(f) => break f,
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
                Err(err) => return Err(io::Error::other(format!("cannot connect to {socket}: {err}"))),
            }
        };
        let protocol = |err: vhost::Error| io::Error::other(format!("{socket}: {err}"));
        frontend.set_owner().map_err(protocol)?;
        let offered = frontend.get_features().map_err(protocol)?;
        let acked = offered & wanted;
        frontend.set_features(acked).map_err(protocol)?;
        frontend
            .set_mem_table(&[VhostUserMemoryRegionInfo {
                guest_phys_addr: 0,
                memory_size: memory.size() as u64,
                userspace_addr: memory.host_base(),
                mmap_offset: 0,
                mmap_handle: memory.fd(),
            }])
            .map_err(protocol)?;
        let rings = [SplitRing::new(&mut memory, queue_size)?, SplitRing::new(&mut memory, queue_size)?];
        let kicks = [EventFd::new(libc::EFD_NONBLOCK)?, EventFd::new(libc::EFD_NONBLOCK)?];
        let calls = [EventFd::new(libc::EFD_NONBLOCK)?, EventFd::new(libc::EFD_NONBLOCK)?];
        for queue in [RX, TX] {
            frontend.set_vring_num(queue, queue_size).map_err(protocol)?;
            frontend.set_vring_addr(queue, rings[queue].config()).map_err(protocol)?;
            frontend.set_vring_base(queue, 0).map_err(protocol)?;
            frontend.set_vring_call(queue, &calls[queue]).map_err(protocol)?;
            frontend.set_vring_kick(queue, &kicks[queue]).map_err(protocol)?;
        }
        Ok(Guest { _frontend: frontend, memory, rings, kicks, _calls: calls, offered, acked })
    }

    pub fn has(&self, name: &str) -> bool {
        feature_bit(name).is_some_and(|bit| self.acked & bit != 0)
    }

    /// Publishes what was pushed on `queue` and kicks the device if it asked for kicks.
    pub fn publish(&mut self, queue: usize) {
        self.rings[queue].publish();
        if self.rings[queue].wants_kick() {
            let _ = self.kicks[queue].write(1);
        }
    }

    /// The virtio-net header length this negotiation implies (VERSION_1 or MRG_RXBUF:
    /// 12 bytes; legacy without merged buffers: 10).
    pub fn header_len(&self) -> usize {
        if self.has("version_1") || self.has("mrg_rxbuf") { 12 } else { 10 }
    }
}
