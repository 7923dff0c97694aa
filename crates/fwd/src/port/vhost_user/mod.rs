//! A vhost-user-net backend port: offlab-fwd listens on a unix socket, a guest's QEMU
//! connects (`-netdev vhost-user`), and frames move between the guest's virtqueues and
//! the forwarder with no kernel in between — seed 004's DPDK vhost backend, with the
//! engine doing GRO/GSO/checksums.
//!
//! Everything runs on the forwarding thread: the port's pollable descriptor is an epoll
//! set of the listening socket, the connection and the rings' kick eventfds, and each
//! `recv_batch` first serves what is ready there (a new connection, one protocol
//! message, kicks), then moves frames (ring.rs). A guest that goes away (QEMU killed)
//! ends only its connection: the device is reset, frames towards it are dropped as
//! "guest not connected", and the next connection on the same path starts afresh.

mod avail;
mod device;
mod ring;

use std::io::{self, ErrorKind};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::json;
use vhost::vhost_user::{BackendReqHandler, Error as ProtocolError};
use virtio_bindings::virtio_net::*;
use virtio_queue::desc::split::Descriptor;
use virtio_queue::QueueT;
use vm_memory::GuestMemoryMmap;
use vmm_sys_util::epoll::{ControlOperation, Epoll, EpollEvent, EventSet};

use super::{Offloads, Port, PortSpec, RxBatch, TxQueue, VNET_LEN};
use crate::stats::{emit, Counters};
use device::{feature_names, NetDevice, RX_QUEUE, TX_QUEUE};
use avail::DriverRing;
use ring::{copy_chain, in_place, pop_rx_chain, ChainError, RxChain, UsedBatch};

/// Drop category of frames the port itself refused (bad chains, a full ring).
const CATEGORY: &str = "vhost-user";
const NUM_BUFFERS: std::ops::Range<usize> = 10..12;
/// A frame found too few receive buffers: held by the forwarder, dropped only when the
/// guest takes none for long (pipeline.rs, HOLD_LIMIT).
pub const RING_FULL: &str = "guest receive ring full";
/// epoll tokens: the listening socket, the connection, then one per ring's kick.
const LISTENER: u64 = 0;
const CONNECTION: u64 = 1;
const KICK_BASE: u64 = 2;
/// The connection and the kicks are served at most this often (a forwarder that sleeps
/// in poll always wakes later than this): an `epoll_wait` per batch per port was a
/// system call per round, mostly for nothing.
const SERVE_EVERY: Duration = Duration::from_micros(100);
/// The clock is read for SERVE_EVERY only every this many batches: a clock read per
/// batch was a sixth of the forwarder's samples on MTU frames (`perf record`, W5).
const CLOCK_EVERY: u32 = 16;

type Handler = BackendReqHandler<Mutex<NetDevice>>;

pub struct VhostUserPort {
    label: String,
    socket: PathBuf,
    mtu: usize,
    listener: UnixListener,
    epoll: Epoll,
    device: Arc<Mutex<NetDevice>>,
    connection: Option<Handler>,
    /// The kick generation registered for each ring (re-registered when it changes).
    kicks: [u64; 2],
    connections: u64,
    scratch: Scratch,
    last_served: Instant,
    /// Batches since the clock was last read.
    batches: u32,
    /// Whether the guest was asked not to kick the transmit queue (VRING_USED_F_NO_NOTIFY),
    /// as it is while frames keep coming: this side polls then.
    kicks_off: bool,
}

impl VhostUserPort {
    pub fn open(spec: &PortSpec) -> io::Result<VhostUserPort> {
        let socket = PathBuf::from(&spec.ifname);
        // A socket file left by a killed forwarder would make bind fail.
        match std::fs::remove_file(&socket) {
            Err(err) if err.kind() != ErrorKind::NotFound => return Err(err),
            _ => {}
        }
        let listener = UnixListener::bind(&socket)
            .map_err(|err| io::Error::new(err.kind(), format!("cannot listen on {}: {err}", socket.display())))?;
        listener.set_nonblocking(true)?;
        let epoll = Epoll::new()?;
        epoll.ctl(ControlOperation::Add, listener.as_raw_fd(), EpollEvent::new(EventSet::IN, LISTENER))?;
        Ok(VhostUserPort {
            label: spec.label(),
            socket,
            mtu: spec.mtu,
            listener,
            epoll,
            device: Arc::new(Mutex::new(NetDevice::default())),
            connection: None,
            kicks: [0; 2],
            connections: 0,
            scratch: Scratch::default(),
            last_served: Instant::now(),
            batches: 0,
            kicks_off: false,
        })
    }

    fn device(&self) -> MutexGuard<'_, NetDevice> {
        // Only this thread locks it (the handler runs inside `serve`): never poisoned
        // unless a panic already ended the forwarder.
        self.device.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves what the epoll set reports: a connection to accept, a protocol message,
    /// kicks (which only need consuming: the rings are read anyway).
    fn serve(&mut self) {
        let mut events = [EpollEvent::default(); 8];
        let ready = self.epoll.wait(0, &mut events).unwrap_or(0);
        for event in &events[..ready] {
            match event.data() {
                LISTENER => self.accept(),
                CONNECTION => self.handle_message(event.event_set()),
                token => self.consume_kick((token - KICK_BASE) as usize),
            }
        }
    }

    fn accept(&mut self) {
        let Ok((stream, _)) = self.listener.accept() else { return };
        if self.connection.is_some() {
            // One guest per port: a second frontend is closed at once.
            emit(&json!({"event": "refused", "port": self.label, "error": "already connected"}));
            return;
        }
        if stream.set_nonblocking(false).is_err()
            || self
                .epoll
                .ctl(ControlOperation::Add, stream.as_raw_fd(), EpollEvent::new(EventSet::IN, CONNECTION))
                .is_err()
        {
            return;
        }
        self.connection = Some(BackendReqHandler::from_stream(stream, Arc::clone(&self.device)));
        self.connections += 1;
        emit(&json!({"event": "connected", "port": self.label}));
    }

    fn handle_message(&mut self, events: EventSet) {
        let Some(handler) = self.connection.as_mut() else { return };
        if events.contains(EventSet::HANG_UP) && !events.contains(EventSet::IN) {
            return self.disconnect("peer hung up".into());
        }
        match handler.handle_request() {
            Ok(()) => self.sync_kicks(),
            // QEMU 7.2 enables rings before it acknowledges PROTOCOL_FEATURES (when the
            // guest sets its features) and repeats it after SET_FEATURES; the early one
            // needs no reply and is ignored.
            Err(ProtocolError::InactiveFeature(_)) => {}
            // A request this device does not implement: refused, the connection stays.
            Err(ProtocolError::InvalidOperation(_) | ProtocolError::InvalidParam) => {}
            Err(err) => self.disconnect(err.to_string()),
        }
    }

    /// Registers each ring's current kick eventfd for polling.
    fn sync_kicks(&mut self) {
        let device = self.device.lock().unwrap_or_else(|p| p.into_inner());
        for (index, ring) in device.rings.iter().enumerate() {
            if ring.kick_generation == self.kicks[index] {
                continue;
            }
            self.kicks[index] = ring.kick_generation;
            if let Some(kick) = &ring.kick {
                set_nonblocking(kick.as_raw_fd());
                let token = KICK_BASE + index as u64;
                let _ = self.epoll.ctl(ControlOperation::Add, kick.as_raw_fd(), EpollEvent::new(EventSet::IN, token));
            }
        }
    }

    fn consume_kick(&mut self, index: usize) {
        let device = self.device();
        if let Some(kick) = device.rings.get(index).and_then(|r| r.kick.as_ref()) {
            // Non-blocking (see `sync_kicks`): QEMU may drain the same eventfd itself (it
            // does when it takes a ring back), so "readable" can be stale by now.
            let mut value = [0u8; 8];
            let _ = io::Read::read(&mut &*kick, &mut value);
        }
    }

    fn disconnect(&mut self, why: String) {
        if let Some(handler) = self.connection.take() {
            let _ = self.epoll.ctl(ControlOperation::Delete, handler.as_raw_fd(), EpollEvent::default());
        }
        // Dropping the device's kick files closes them, which also removes them from
        // the epoll set.
        *self.device() = NetDevice::default();
        self.kicks = [0; 2];
        self.kicks_off = false;
        // Entries of the old rings must not land in a new connection's.
        self.scratch.used = UsedBatch::default();
        self.scratch.sent = UsedBatch::default();
        emit(&json!({"event": "disconnected", "port": self.label, "error": why}));
    }

    /// Publishes the used entries of the transmit chains last read (see `Scratch::sent`).
    fn return_sent_chains(&mut self) {
        if self.scratch.sent.is_empty() {
            return;
        }
        let device = &mut *self.device.lock().unwrap_or_else(|p| p.into_inner());
        let NetDevice { memory, rings, .. } = device;
        let ring = &mut rings[TX_QUEUE];
        match (memory.as_ref(), ring.active()) {
            (Some(memory), Some(queue)) => {
                self.scratch.sent.publish(queue, memory);
                ring.notify(memory);
            }
            // The ring was stopped or reset meanwhile: its entries mean nothing now.
            _ => self.scratch.sent = UsedBatch::default(),
        }
    }

    /// Takes the transmit chains `avail` offers into `batch` until it is full; returns
    /// how many chains were taken. Each gets a used entry (also those refused), kept
    /// in `scratch.sent` until the batch has been forwarded: a frame read in place
    /// lives in its chain's buffer until then.
    fn read_frames(avail: &mut DriverRing<'_>, memory: &GuestMemoryMmap,
                   acked: u64, batch: &mut RxBatch, scratch: &mut Scratch, counters: &mut Counters) -> usize {
        let mut taken = 0;
        while !batch.is_full() {
            let Some((head, shape)) = avail.next_chain(false, &mut scratch.descriptors) else { break };
            scratch.sent.push(head, 0);
            taken += 1;
            let taken_frame = shape
                .map_err(|error| (CATEGORY, error.reason()))
                .and_then(|()| Self::take_frame(avail, memory, acked, &scratch.descriptors, batch, counters));
            if let Err((category, reason)) = taken_frame {
                counters.drop(category, reason);
            }
        }
        taken
    }

    /// Adds the frame of a checked transmit chain to `batch`: read in place when it is
    /// one buffer in one memory region (its payload is then copied once, into the
    /// egress), else copied into the batch. A header with DATA_VALID is copied too:
    /// the bit must be cleared, and the guest's buffer is not ours to write.
    fn take_frame(avail: &mut DriverRing<'_>, memory: &GuestMemoryMmap, acked: u64, descriptors: &[Descriptor],
                  batch: &mut RxBatch, counters: &mut Counters) -> Result<(), (&'static str, &'static str)> {
        const DATA_VALID: u8 = VIRTIO_NET_HDR_F_DATA_VALID as u8;
        if let Some((bytes, len)) = in_place(avail, descriptors).filter(|&(_, len)| len >= VNET_LEN) {
            // SAFETY: `in_place` checked that `len` (>= VNET_LEN) bytes at `bytes` lie in
            // a mapping of guest memory; the header is copied out before it is read.
            let header: [u8; VNET_LEN] = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast()) };
            if let Some(reason) = Self::offload_refusal(acked, &header) {
                return Err(("virtio", reason));
            }
            // SAFETY: the mapping lives until the device's memory table is replaced,
            // which only `serve` does, and `recv_batch` calls it after clearing the
            // batch; the chain's used entry waits in `Scratch::sent` until then too.
            if header[0] & DATA_VALID == 0 && unsafe { batch.commit_in_place(bytes, len) } {
                return Ok(());
            }
        }
        let slot = batch.next_slot().ok_or((CATEGORY, ChainError::TooLong.reason()))?;
        let len = copy_chain(memory, descriptors, slot).map_err(|error| (CATEGORY, error.reason()))?;
        if len < VNET_LEN {
            return Err((CATEGORY, "frame shorter than its virtio header"));
        }
        counters.copied_bytes += len as u64;
        if let Some(reason) = Self::offload_refusal(acked, &slot[..VNET_LEN]) {
            return Err(("virtio", reason));
        }
        // The guest is the driver here: its DATA_VALID is not the device's verdict and
        // must not reach the other port as one.
        offlab_engine::virtio::ignore_driver_data_valid(&mut slot[0]);
        batch.commit(len);
        Ok(())
    }

    /// A frame from the guest may use only the offloads it negotiated from the device.
    fn offload_refusal(acked: u64, header: &[u8]) -> Option<&'static str> {
        let has = |bit: u32| acked & (1 << bit) != 0;
        const NEEDS_CSUM: u8 = VIRTIO_NET_HDR_F_NEEDS_CSUM as u8;
        const ECN: u8 = VIRTIO_NET_HDR_GSO_ECN as u8;
        if header[0] & NEEDS_CSUM != 0 && !has(VIRTIO_NET_F_CSUM) {
            return Some("partial checksum the guest did not negotiate");
        }
        if header[1] & ECN != 0 && !has(VIRTIO_NET_F_HOST_ECN) {
            return Some("gso ECN the guest did not negotiate");
        }
        let needed = match (header[1] & !ECN) as u32 {
            VIRTIO_NET_HDR_GSO_NONE => return None,
            VIRTIO_NET_HDR_GSO_TCPV4 => VIRTIO_NET_F_HOST_TSO4,
            VIRTIO_NET_HDR_GSO_TCPV6 => VIRTIO_NET_F_HOST_TSO6,
            _ => return Some("gso type the device does not offer"),
        };
        (!has(needed)).then_some("gso type the guest did not negotiate")
    }
}

/// O_NONBLOCK on an eventfd shared with QEMU: its own event notifiers are non-blocking
/// already, so this changes nothing on its side.
fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor this port holds open.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

/// What one batch reuses from the last: a chain's descriptors, the receive chains of
/// one frame, the used entries not yet written.
#[derive(Default)]
struct Scratch {
    descriptors: Vec<Descriptor>,
    chains: Vec<RxChain>,
    /// Receive-queue entries of the frames written by the current `send`.
    used: UsedBatch,
    /// Transmit-queue entries of the batch last read, returned to the guest when the
    /// next `recv_batch` begins: its frames are forwarded (or dropped) by then.
    sent: UsedBatch,
}

/// Writes one frame of `len` bytes — `header` (its virtio-net header) then `body`'s
/// pieces — straight
/// from the forwarder's buffers into as many receive chains as it needs (one without
/// merged buffers), so each byte is copied once on the way to the guest; the chains go
/// back to the ring when the frame does not fit.
#[allow(clippy::too_many_arguments)]
fn deliver<'a>(
    avail: &mut DriverRing<'_>,
    memory: &GuestMemoryMmap,
    merged: bool,
    mut header: [u8; VNET_LEN],
    len: usize,
    mut body: impl Iterator<Item = &'a [u8]>,
    scratch: &mut Scratch,
    counters: &mut Counters,
) -> Result<usize, &'static str> {
    let Scratch { descriptors, chains, used: used_batch, .. } = scratch;
    let mut count = 0;
    let mut capacity = 0;
    while capacity < len && (merged || count == 0) {
        if chains.len() == count {
            chains.push(RxChain::default());
        }
        match pop_rx_chain(avail, descriptors, &mut chains[count]) {
            Ok(true) => {
                capacity += chains[count].capacity;
                count += 1;
            }
            Ok(false) => break,
            Err((head, error)) => {
                // A malformed buffer is consumed (returned empty), not retried.
                used_batch.push(head, 0);
                counters.drop(CATEGORY, error.reason());
            }
        }
    }
    if capacity < len {
        let none_left = count == 0 || merged;
        avail.put_back(count as u16);
        return Err(if none_left {
            RING_FULL
        } else {
            "guest receive buffer too small"
        });
    }
    let chains = &chains[..count];
    header[NUM_BUFFERS].copy_from_slice(&(chains.len() as u16).to_le_bytes());
    let mut writer = ChainWriter { chains, chain: 0, buffer: 0, offset: 0 };
    let written = writer.write_header(memory, &header).and_then(|()| body.try_for_each(|piece| writer.write(memory, piece)));
    let mut left = len;
    for chain in chains.iter() {
        let used = if written.is_ok() { chain.capacity.min(left) } else { 0 };
        used_batch.push(chain.head, used as u32);
        left -= used.min(left);
    }
    written.map(|()| len).map_err(|error| error.reason())
}

/// A cursor over the receive chains of one frame: the buffer being filled and how far,
/// so each piece is copied where the last one ended without walking the chain again.
struct ChainWriter<'a> {
    chains: &'a [RxChain],
    chain: usize,
    buffer: usize,
    offset: usize,
}

impl ChainWriter<'_> {
    /// Writes the frame's virtio header, first: where the first buffer holds it (every
    /// buffer a Linux driver posts does) as one fixed-size store rather than a `memcpy`
    /// call of a length known only at run time.
    fn write_header(&mut self, memory: &GuestMemoryMmap, header: &[u8; VNET_LEN]) -> Result<(), ChainError> {
        let first = self.chains.first().and_then(|chain| chain.buffers.first());
        if (self.chain, self.buffer, self.offset) == (0, 0, 0) && first.is_some_and(|buffer| buffer.write_array(header)) {
            self.offset = VNET_LEN;
            return Ok(());
        }
        self.write(memory, header)
    }

    /// Writes `bytes` where the last write ended. Inlined: called once per piece of
    /// every frame, and a call of its own per piece cost GRO's merged frames (eight
    /// pieces each) more than the header store saved (callgrind, W5 GRO 8 flows).
    #[inline(always)]
    fn write(&mut self, memory: &GuestMemoryMmap, mut bytes: &[u8]) -> Result<(), ChainError> {
        while !bytes.is_empty() {
            let chain = self.chains.get(self.chain).ok_or(ChainError::TooLong)?;
            let Some(buffer) = chain.buffers.get(self.buffer) else {
                (self.chain, self.buffer, self.offset) = (self.chain + 1, 0, 0);
                continue;
            };
            let take = (buffer.size() - self.offset).min(bytes.len());
            if take == 0 {
                (self.buffer, self.offset) = (self.buffer + 1, 0);
                continue;
            }
            buffer.write(memory, self.offset, &bytes[..take])?;
            self.offset += take;
            bytes = &bytes[take..];
        }
        Ok(())
    }
}

impl Port for VhostUserPort {
    fn label(&self) -> &str {
        &self.label
    }

    fn fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }

    /// What the guest takes: partial checksums with GUEST_CSUM, TCP super-packets with
    /// GUEST_TSO4/6 (virtio ties them to GUEST_CSUM), CWR-marked ones with GUEST_ECN.
    fn offloads(&self) -> Offloads {
        let device = self.device();
        let csum = device.has(VIRTIO_NET_F_GUEST_CSUM);
        Offloads {
            csum,
            tso4: csum && device.has(VIRTIO_NET_F_GUEST_TSO4),
            tso6: csum && device.has(VIRTIO_NET_F_GUEST_TSO6),
            ecn: csum && device.has(VIRTIO_NET_F_GUEST_ECN),
            ..Offloads::default()
        }
    }

    fn mtu(&self) -> usize {
        self.mtu
    }

    fn refresh_mtu(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn recv_batch(&mut self, batch: &mut RxBatch, counters: &mut Counters) -> io::Result<()> {
        // The last batch is forwarded: its chains go back to the guest, before `serve`
        // may stop the rings or replace the memory its in-place frames were read from.
        batch.clear();
        batch.set_vnet_len(VNET_LEN);
        self.return_sent_chains();
        self.batches += 1;
        if self.connection.is_none()
            || (self.batches >= CLOCK_EVERY && {
                self.batches = 0;
                self.last_served.elapsed() >= SERVE_EVERY
            })
        {
            self.serve();
            self.last_served = Instant::now();
        }
        let device = &mut *self.device.lock().unwrap_or_else(|p| p.into_inner());
        let acked = device.acked;
        // The memory is borrowed beside the rings, not cloned: a clone of the region
        // table is an allocation and a free per batch (a tenth of the forwarder's
        // samples on MTU frames, `perf record`, W5).
        let NetDevice { memory, rings, .. } = device;
        let Some(memory) = memory.as_ref() else { return Ok(()) };
        let Some(queue) = rings[TX_QUEUE].active() else { return Ok(()) };
        let mut read;
        loop {
            // One read of the available index per batch, not one per frame: the
            // driver's core writes that cache line, so every read may be a miss.
            read = match DriverRing::new(queue, memory) {
                Some(mut avail) => {
                    let read = Self::read_frames(&mut avail, memory, acked, batch, &mut self.scratch, counters);
                    avail.finish(queue);
                    read
                }
                None => 0,
            };
            if read > 0 {
                if !self.kicks_off {
                    let _ = queue.disable_notification(memory);
                    self.kicks_off = true;
                }
                break;
            }
            // Nothing waiting: ask for kicks again before the forwarder may sleep; a
            // frame that came meanwhile is read now (the kick may not follow it).
            if !self.kicks_off {
                break;
            }
            self.kicks_off = false;
            if !queue.enable_notification(memory).unwrap_or(false) {
                break;
            }
        }
        Ok(())
    }

    fn send(&mut self, tx: &TxQueue, rx: &RxBatch, from: usize, counters: &mut Counters)
        -> io::Result<usize> {
        let device = &mut *self.device.lock().unwrap_or_else(|p| p.into_inner());
        let merged = device.has(VIRTIO_NET_F_MRG_RXBUF);
        let NetDevice { memory, rings, .. } = device;
        let Some(memory) = memory.as_ref().filter(|_| self.connection.is_some()) else {
            (from..tx.len()).for_each(|_| counters.drop("egress", "guest not connected"));
            return Ok(tx.len());
        };
        let ring = &mut rings[RX_QUEUE];
        let Some(queue) = ring.active() else {
            (from..tx.len()).for_each(|_| counters.drop("egress", "guest receive queue not ready"));
            return Ok(tx.len());
        };
        // The available index is read once per call, and once more only when the
        // buffers it counted ran out (see `recv_batch`).
        let mut avail = DriverRing::new(queue, memory);
        let mut refreshed = false;
        let mut delivered = false;
        let mut reached = tx.len();
        let mut index = from;
        while index < tx.len() {
            let (header, len, body) = (tx.vnet_header(index), tx.frame_len(index), tx.body(index, rx));
            let result = match avail.as_mut() {
                Some(avail) => deliver(avail, memory, merged, header, len, body, &mut self.scratch, counters),
                None => Err(RING_FULL),
            };
            match result {
                Ok(len) => {
                    delivered = true;
                    counters.copied_bytes += len as u64;
                    counters.sent(len - VNET_LEN)
                }
                // The guest may have posted buffers since the index was read.
                Err(RING_FULL) if !refreshed => {
                    refreshed = true;
                    // An index not to be believed leaves the old one: the frame waits.
                    if let Some(avail) = avail.as_mut() {
                        avail.refresh();
                    }
                    continue;
                }
                // No buffer for it yet: the caller holds it and the frames behind it.
                Err(RING_FULL) => {
                    reached = index;
                    break;
                }
                Err(reason) => counters.drop("egress", reason),
            }
            index += 1;
        }
        if let Some(avail) = &avail {
            avail.finish(queue);
        }
        // Every entry, also those of frames that failed half-way, is published.
        self.scratch.used.publish(queue, memory);
        if delivered {
            ring.notify(memory);
        }
        Ok(reached)
    }

    fn state(&self) -> Option<serde_json::Value> {
        let mut device = self.device();
        let acked = device.acked;
        let rings_ready = device.rings.iter_mut().all(|ring| ring.active().is_some());
        Some(json!({
            "connected": self.connection.is_some(),
            "rings_ready": self.connection.is_some() && rings_ready,
            "connections": self.connections,
            "features": format!("{acked:#x}"),
            "negotiated": feature_names(acked),
        }))
    }
}

impl Drop for VhostUserPort {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.socket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::RxBuffer;
    use std::ptr::NonNull;
    use vm_memory::{Bytes, GuestAddress, GuestMemoryBackend};

    fn chain(memory: &GuestMemoryMmap, head: u16, buffers: &[(u64, u32)]) -> RxChain {
        let buffers: Vec<RxBuffer> = buffers
            .iter()
            .map(|&(addr, len)| {
                let host = |addr, len| memory.get_slice(addr, len).ok().and_then(|s| NonNull::new(s.ptr_guard_mut().as_ptr()));
                RxBuffer::new(&Descriptor::new(addr, len, 0, 0), host)
            })
            .collect();
        let capacity = buffers.iter().map(RxBuffer::size).sum();
        RxChain { head, buffers, capacity }
    }

    /// Pieces cut across buffers and chains land back to back, each buffer filled
    /// before the next; bytes past the last buffer are refused, not written.
    #[test]
    fn a_frame_written_in_pieces_fills_its_buffers_in_order() {
        let memory = GuestMemoryMmap::from_ranges(&[(GuestAddress(0), 0x10000)]).unwrap();
        let chains = [chain(&memory, 0, &[(0x1000, 5), (0x2000, 3)]), chain(&memory, 1, &[(0x3000, 6)])];
        let mut writer = ChainWriter { chains: &chains, chain: 0, buffer: 0, offset: 0 };
        for piece in [&b"abc"[..], b"", b"defghij", b"klmn"] {
            writer.write(&memory, piece).unwrap();
        }
        let read = |addr: u64, len: usize| {
            let mut out = vec![0u8; len];
            memory.read_slice(&mut out, GuestAddress(addr)).unwrap();
            out
        };
        assert_eq!([read(0x1000, 5), read(0x2000, 3), read(0x3000, 6)].concat(), b"abcdefghijklmn");
        assert_eq!(writer.write(&memory, b"x"), Err(ChainError::TooLong));
        assert_eq!(read(0x3006, 1), [0]);
    }

    /// The virtio header lands at the start of the first buffer whether that buffer
    /// holds all of it (one fixed-size store) or only part (split like any piece), and
    /// the body follows it.
    #[test]
    fn the_header_is_written_first_whatever_the_first_buffer_holds() {
        let memory = GuestMemoryMmap::from_ranges(&[(GuestAddress(0), 0x10000)]).unwrap();
        let header: [u8; VNET_LEN] = std::array::from_fn(|i| i as u8 + 1);
        let read = |addr: u64, len: usize| {
            let mut out = vec![0u8; len];
            memory.read_slice(&mut out, GuestAddress(addr)).unwrap();
            out
        };
        for first in [64u32, 5] {
            let base = u64::from(first) * 0x100;
            let chains = [chain(&memory, 0, &[(base, first), (base + 0x80, 64)])];
            let mut writer = ChainWriter { chains: &chains, chain: 0, buffer: 0, offset: 0 };
            writer.write_header(&memory, &header).unwrap();
            writer.write(&memory, b"body").unwrap();
            let bytes = [read(base, first as usize), read(base + 0x80, 64)].concat();
            let written: Vec<u8> = bytes.into_iter().filter(|&b| b != 0).collect();
            assert_eq!(written, [&header[..], b"body"].concat(), "first buffer of {first}");
        }
    }
}
