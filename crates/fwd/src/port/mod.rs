//! Ports: where frames enter and leave the forwarder.
//!
//! Every port exchanges frames prefixed by a 12-byte virtio-net header (the v1 layout
//! with `num_buffers`). A batch of received frames lives in an [`RxBatch`]; what to send
//! is described by a [`TxQueue`] of iovec-like pieces that point either into the receive
//! buffers (payload, never copied) or into a small scratch area (rebuilt headers).

mod buffers;
mod offloads;
mod packet;
mod spec;
mod sys;
mod tap;
mod vhost_user;

pub use buffers::{RxBatch, TxQueue, VNET_LEN};
pub use offloads::Offloads;
pub use packet::PacketPort;
pub use spec::{PortKind, PortSpec};
pub use tap::TapPort;
pub use vhost_user::VhostUserPort;

use crate::stats::Counters;
use std::io;
use std::os::fd::RawFd;

/// One end of the forwarder.
pub trait Port {
    /// `tap:NAME@NS` or `packet:NAME@NS`, for stats and messages.
    fn label(&self) -> &str;
    /// Pollable descriptor that becomes readable when frames are waiting.
    fn fd(&self) -> RawFd;
    /// What may be sent to this port: super-packets of which kinds, partial checksums.
    fn offloads(&self) -> Offloads;
    /// Largest IP packet (L3 length) the device carries without segmentation.
    fn mtu(&self) -> usize;
    /// Reads the MTU again (it may be changed while the forwarder runs).
    fn refresh_mtu(&mut self) -> io::Result<()>;
    /// Reads waiting frames into `batch` (cleared first) until it is full or nothing is
    /// left; frames the port itself refuses are counted in `counters` (the direction's
    /// that starts here). An error is fatal for the port (the device went away).
    fn recv_batch(&mut self, batch: &mut RxBatch, counters: &mut Counters) -> io::Result<()>;
    /// Writes the frames of `tx` from index `from` on. Frames the device refuses are
    /// counted in `counters` as drops by errno; only a vanished device is an error.
    /// Returns the index of the first frame the receiver has no room for yet (a
    /// vhost-user guest whose receive ring is full: the caller holds it and the rest,
    /// and the sending guest's ring fills behind them), or `tx.len()`.
    fn send(&mut self, tx: &TxQueue, rx: &RxBatch, from: usize, counters: &mut Counters)
        -> io::Result<usize>;
    /// The port's own state for the stats (a vhost-user port: connected, negotiated
    /// features); None for ports that have nothing beyond their label.
    fn state(&self) -> Option<serde_json::Value> {
        None
    }
}

/// Opens the port a spec describes, inside its namespace.
pub fn open(spec: &PortSpec) -> io::Result<Box<dyn Port>> {
    match spec.kind {
        PortKind::Tap => Ok(Box::new(TapPort::open(spec)?)),
        PortKind::Packet => Ok(Box::new(PacketPort::open(spec)?)),
        PortKind::VhostUser => Ok(Box::new(VhostUserPort::open(spec)?)),
    }
}

/// The drop reason for an errno returned by a send.
pub(crate) fn send_error_reason(err: &io::Error) -> &'static str {
    match err.raw_os_error() {
        Some(libc::EAGAIN) => "egress full (EAGAIN)",
        Some(libc::ENOBUFS) => "egress out of buffers (ENOBUFS)",
        Some(libc::EMSGSIZE) => "egress frame too long (EMSGSIZE)",
        Some(libc::EINVAL) => "egress rejected frame (EINVAL)",
        Some(libc::EIO) | Some(libc::ENETDOWN) => "egress link down",
        _ => "egress error (other)",
    }
}
