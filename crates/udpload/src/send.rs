//! The sender: datagrams of one size at an offered rate (or as fast as the socket takes
//! them), one `send` per datagram — as iperf3 and most applications send — or, with
//! `gso`, one `send` of up to 64 datagrams that the kernel cuts (UDP_SEGMENT): in the
//! device when it offers tx-udp-segmentation (USO), in software GSO otherwise. Without
//! `gso`, `batch` > 1 hands the kernel that many separate datagrams per sendmmsg call.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use crate::sock;
use crate::wire::Header;

pub struct Config {
    pub to: SocketAddr,
    pub payload: usize,
    /// Offered rate in bits of payload per second; 0: as fast as the socket takes them.
    pub rate_bps: f64,
    pub warmup: Duration,
    pub measured: Duration,
    pub gso: bool,
    /// Without `gso`: datagrams per system call at most (sendmmsg); 1 sends one per
    /// call, as iperf3 does.
    pub batch: usize,
    pub sndbuf: usize,
}

#[derive(Debug, Default)]
pub struct Report {
    pub sent: u64,
    pub sent_measured: u64,
    pub bytes_measured: u64,
    pub measured_s: f64,
    pub send_calls: u64,
    pub send_errors: u64,
    pub segments_per_send: usize,
    pub sndbuf: usize,
}

/// Sleeping is coarse (tens of µs at best): below this the sender spins to its next send.
const SPIN_BELOW: Duration = Duration::from_micros(200);

pub fn run(config: &Config) -> io::Result<Report> {
    let bind: SocketAddr = if config.to.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().expect("literal");
    let socket = UdpSocket::bind(bind)?;
    socket.connect(config.to)?;
    let mut report = Report { sndbuf: sock::buffer(&socket, config.sndbuf, false)?, ..Report::default() };
    report.segments_per_send = if config.gso {
        sock::segment_size(&socket, config.payload)?;
        (sock::MAX_SEND / config.payload).clamp(1, sock::MAX_SEGMENTS)
    } else {
        1
    };
    let batch = if config.gso { 1 } else { config.batch.max(1) };
    let mut buffer = vec![0u8; report.segments_per_send * config.payload * batch];
    let per_second = if config.rate_bps > 0.0 { config.rate_bps / (8.0 * config.payload as f64) } else { 0.0 };
    let start = Instant::now();
    let (warm_end, end) = (start + config.warmup, start + config.warmup + config.measured);
    let mut first_measured: Option<Instant> = None;
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        // Calls' worth of datagrams due by now (all of the batch when unpaced).
        let mut calls = batch;
        if per_second > 0.0 {
            let due_total = ((now - start).as_secs_f64() * per_second) as u64;
            let due = due_total.saturating_sub(report.sent) / report.segments_per_send as u64;
            if due == 0 {
                let next = start + Duration::from_secs_f64((report.sent + report.segments_per_send as u64) as f64 / per_second);
                pace(next.saturating_duration_since(now));
                continue;
            }
            calls = calls.min(due as usize);
        }
        let measured = now >= warm_end;
        let unit = report.segments_per_send * config.payload;
        for (i, datagram) in buffer[..calls * unit].chunks_mut(config.payload).enumerate() {
            Header { seq: report.sent + i as u64, measured }.write(datagram);
        }
        report.send_calls += 1;
        let outcome = if batch > 1 {
            sock::send_batch(&socket, &mut buffer, config.payload, calls)
        } else {
            socket.send(&buffer[..unit]).map(|_| 1)
        };
        match outcome {
            Ok(taken) => {
                let count = (taken * report.segments_per_send) as u64;
                report.sent += count;
                if measured {
                    first_measured.get_or_insert(now);
                    report.sent_measured += count;
                    report.bytes_measured += count * config.payload as u64;
                }
            }
            // A full queue refuses the send: counted, and the same datagrams go again.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOBUFS) | Some(libc::EAGAIN)) => report.send_errors += 1,
            Err(e) => return Err(e),
        }
    }
    report.measured_s = first_measured.map_or(0.0, |t| end.saturating_duration_since(t).as_secs_f64());
    Ok(report)
}

fn pace(wait: Duration) {
    if wait > SPIN_BELOW {
        std::thread::sleep(wait - SPIN_BELOW / 2);
    } else {
        std::hint::spin_loop();
    }
}
