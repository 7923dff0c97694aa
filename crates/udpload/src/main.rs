//! offlab-udpload: a UDP load generator (`send`) and sink (`recv`) that use the kernel's
//! UDP segmentation (UDP_SEGMENT → USO or software GSO) and UDP GRO (the UDP_GRO socket
//! option) as QUIC stacks do — iperf3 3.12 uses neither. Each prints one JSON object on
//! stdout when done; the lab (src/offlab/udpload.py) computes loss and rates from both.

mod recv;
mod send;
mod sock;
mod wire;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use serde_json::json;

#[derive(Parser)]
#[command(name = "offlab-udpload", about = "UDP load with UDP_SEGMENT / UDP_GRO")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Send datagrams to ADDR:PORT for warm-up + duration seconds.
    Send {
        #[arg(long)]
        to: SocketAddr,
        /// UDP payload bytes per datagram (≥ 13, the header).
        #[arg(long)]
        payload: usize,
        /// Offered rate, bits of payload per second; 0 sends as fast as the socket takes.
        #[arg(long, default_value_t = 0.0)]
        rate: f64,
        #[arg(long, default_value_t = 0.0)]
        warmup: f64,
        #[arg(long)]
        duration: f64,
        /// Up to 64 datagrams per send, cut by the kernel (UDP_SEGMENT).
        #[arg(long)]
        gso: bool,
        /// Without --gso: datagrams per system call at most (sendmmsg); 1 sends one per call.
        #[arg(long, default_value_t = 1)]
        batch: usize,
        #[arg(long, default_value_t = 4 << 20)]
        sndbuf: usize,
    },
    /// Receive on ADDR:PORT until SIGTERM (or --lifetime seconds).
    Recv {
        #[arg(long)]
        bind: SocketAddr,
        /// Let the kernel coalesce datagrams into one read (UDP_GRO).
        #[arg(long)]
        gro: bool,
        #[arg(long, default_value_t = 4 << 20)]
        rcvbuf: usize,
        /// Messages read per system call at most (recvmmsg); 1 reads one per call, as iperf3 does.
        #[arg(long, default_value_t = recv::MAX_BATCH)]
        batch: usize,
        #[arg(long, default_value_t = 60.0)]
        lifetime: f64,
    },
}

fn seconds(value: f64, what: &str) -> Result<Duration, String> {
    if value.is_finite() && (0.0..=3600.0).contains(&value) {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(format!("--{what} {value}: must be from 0 to 3600 seconds"))
    }
}

fn run(cli: Cli) -> Result<serde_json::Value, String> {
    match cli.command {
        Command::Send { to, payload, rate, warmup, duration, gso, batch, sndbuf } => {
            if !(wire::MIN_PAYLOAD..=sock::MAX_SEND).contains(&payload) {
                return Err(format!("--payload {payload}: must be from {} to {} bytes", wire::MIN_PAYLOAD, sock::MAX_SEND));
            }
            if !(rate.is_finite() && rate >= 0.0) {
                return Err(format!("--rate {rate}: must be 0 (unlimited) or a positive bit rate"));
            }
            if !(1..=recv::MAX_BATCH).contains(&batch) {
                return Err(format!("--batch {batch}: must be from 1 to {} datagrams per send", recv::MAX_BATCH));
            }
            let config = send::Config { to, payload, rate_bps: rate, warmup: seconds(warmup, "warmup")?,
                                        measured: seconds(duration, "duration")?, gso, batch, sndbuf };
            let r = send::run(&config).map_err(|e| format!("send to {to}: {e}"))?;
            Ok(json!({"role": "send", "gso": gso, "payload": payload, "offered_bps": rate,
                      "sent": r.sent, "sent_measured": r.sent_measured, "bytes_measured": r.bytes_measured,
                      "measured_s": r.measured_s, "send_calls": r.send_calls, "send_errors": r.send_errors, "batch": batch,
                      "segments_per_send": r.segments_per_send, "sndbuf": r.sndbuf}))
        }
        Command::Recv { bind, gro, rcvbuf, batch, lifetime } => {
            if !(1..=recv::MAX_BATCH).contains(&batch) {
                return Err(format!("--batch {batch}: must be from 1 to {} messages per read", recv::MAX_BATCH));
            }
            let config = recv::Config { bind, gro, rcvbuf, batch, lifetime: seconds(lifetime, "lifetime")? };
            let stop = Arc::new(AtomicBool::new(false));
            for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
                signal_hook::flag::register(signal, Arc::clone(&stop)).map_err(|e| e.to_string())?;
            }
            let (socket, granted) = recv::bind(&config).map_err(|e| format!("bind {bind}: {e}"))?;
            let r = recv::run(&socket, granted, config.batch, config.lifetime, &stop).map_err(|e| format!("receive on {bind}: {e}"))?;
            Ok(json!({"role": "recv", "gro": gro, "received": r.received, "received_measured": r.received_measured,
                      "bytes_measured": r.bytes_measured, "reads": r.reads, "read_calls": r.read_calls, "batch": batch,
                      "coalesced_reads": r.coalesced_reads,
                      "refused_short": r.refused_short, "refused_foreign": r.refused_foreign, "rcvbuf": r.rcvbuf}))
        }
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("offlab-udpload: {message}");
            ExitCode::from(2)
        }
    }
}
