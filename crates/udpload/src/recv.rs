//! The sink: counts our datagrams of the measured window, splitting what UDP_GRO
//! coalesced by the segment size the kernel reports, until stopped (SIGTERM) or its
//! time is up. Datagrams that are not ours are refused by type and counted.
//!
//! It reads up to `batch` messages per system call (recvmmsg), as a receiver tuned for
//! rate does; `batch` 1 reads one per call, as iperf3 3.12 does. On one core shared with
//! the receive softirq a one-per-call reader is the first thing to fall behind, and
//! the socket buffer then overflows however large it is: the sink would measure
//! itself, not the path.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::sock::{self, Batch};
use crate::wire::{segments, Header, Refusal};

pub struct Config {
    pub bind: SocketAddr,
    pub gro: bool,
    pub rcvbuf: usize,
    /// Messages (datagrams, or UDP_GRO runs) read per system call at most.
    pub batch: usize,
    /// The longest the sink lives without being stopped.
    pub lifetime: Duration,
}

#[derive(Debug, Default)]
pub struct Report {
    pub received: u64,
    pub received_measured: u64,
    pub bytes_measured: u64,
    /// Messages read: single datagrams, or runs UDP_GRO coalesced.
    pub reads: u64,
    /// recvmmsg calls that returned data.
    pub read_calls: u64,
    /// Reads that returned several datagrams coalesced by UDP GRO.
    pub coalesced_reads: u64,
    pub refused_short: u64,
    pub refused_foreign: u64,
    pub rcvbuf: usize,
}

const POLL: Duration = Duration::from_millis(20);
/// One slot holds the largest datagram, or the largest run UDP_GRO hands up.
const SLOT_LEN: usize = 65536;
/// Most messages one call reads (recvmmsg's batch; 64 slots of 64 KiB is 4 MiB).
pub const MAX_BATCH: usize = 64;

pub fn bind(config: &Config) -> io::Result<(UdpSocket, usize)> {
    let socket = UdpSocket::bind(config.bind)?;
    let granted = sock::buffer(&socket, config.rcvbuf, true)?;
    if config.gro {
        sock::enable_gro(&socket)?;
    }
    socket.set_read_timeout(Some(POLL))?;
    Ok((socket, granted))
}

pub fn run(socket: &UdpSocket, rcvbuf: usize, batch: usize, lifetime: Duration, stop: &AtomicBool) -> io::Result<Report> {
    let mut report = Report { rcvbuf, ..Report::default() };
    let mut reader = Batch::new(batch.clamp(1, MAX_BATCH), SLOT_LEN);
    let end = Instant::now() + lifetime;
    while !stop.load(Ordering::Relaxed) && Instant::now() < end {
        let count = match reader.receive(socket) {
            Ok(count) => count,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted) => continue,
            Err(e) => return Err(e),
        };
        report.read_calls += 1;
        for i in 0..count {
            let (bytes, segment) = reader.message(i);
            count_message(&mut report, bytes, segment);
        }
    }
    Ok(report)
}

/// One message: a datagram, or a run of them UDP_GRO coalesced (split by `segment`).
fn count_message(report: &mut Report, bytes: &[u8], segment: usize) {
    report.reads += 1;
    if segment > 0 && bytes.len() > segment {
        report.coalesced_reads += 1;
    }
    for datagram in segments(bytes, segment) {
        match Header::parse(datagram) {
            Ok(header) => {
                report.received += 1;
                if header.measured {
                    report.received_measured += 1;
                    report.bytes_measured += datagram.len() as u64;
                }
            }
            Err(Refusal::Short) => report.refused_short += 1,
            Err(Refusal::Magic) => report.refused_foreign += 1,
        }
    }
}
