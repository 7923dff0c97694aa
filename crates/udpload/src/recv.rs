//! The sink: counts our datagrams of the measured window, splitting what UDP_GRO
//! coalesced by the segment size the kernel reports, until stopped (SIGTERM) or its
//! time is up. Datagrams that are not ours are refused by type and counted.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::sock;
use crate::wire::{segments, Header, Refusal};

pub struct Config {
    pub bind: SocketAddr,
    pub gro: bool,
    pub rcvbuf: usize,
    /// The longest the sink lives without being stopped.
    pub lifetime: Duration,
}

#[derive(Debug, Default)]
pub struct Report {
    pub received: u64,
    pub received_measured: u64,
    pub bytes_measured: u64,
    pub reads: u64,
    /// Reads that returned several datagrams coalesced by UDP GRO.
    pub coalesced_reads: u64,
    pub refused_short: u64,
    pub refused_foreign: u64,
    pub rcvbuf: usize,
}

const POLL: Duration = Duration::from_millis(20);

pub fn bind(config: &Config) -> io::Result<(UdpSocket, usize)> {
    let socket = UdpSocket::bind(config.bind)?;
    let granted = sock::buffer(&socket, config.rcvbuf, true)?;
    if config.gro {
        sock::enable_gro(&socket)?;
    }
    socket.set_read_timeout(Some(POLL))?;
    Ok((socket, granted))
}

pub fn run(socket: &UdpSocket, rcvbuf: usize, lifetime: Duration, stop: &AtomicBool) -> io::Result<Report> {
    let mut report = Report { rcvbuf, ..Report::default() };
    let mut buffer = vec![0u8; 65536];
    let end = Instant::now() + lifetime;
    while !stop.load(Ordering::Relaxed) && Instant::now() < end {
        let (length, segment) = match sock::receive(socket, &mut buffer) {
            Ok(found) => found,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted) => continue,
            Err(e) => return Err(e),
        };
        report.reads += 1;
        if segment > 0 && length > segment {
            report.coalesced_reads += 1;
        }
        for datagram in segments(&buffer[..length], segment) {
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
    Ok(report)
}
