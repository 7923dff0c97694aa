//! `offlab-vhostload`: connects to a backend's two vhost-user sockets as two guests,
//! sends one workload from the first, receives on the second, prints one JSON line.

use std::time::Duration;

use clap::{Parser, ValueEnum};
use serde_json::json;

use offlab_vhostload::frames::{Shape, SourceChecksum, Workload};
use offlab_vhostload::guest::{feature_names, parse_features};
use offlab_vhostload::load::{self, Timing};
use offlab_vhostload::session::{self, Setup};
use offlab_vhostload::wire::Ip;

#[derive(Clone, Copy, ValueEnum)]
enum ShapeArg { Mtu, Tso }
#[derive(Clone, Copy, ValueEnum)]
enum ChecksumArg { Partial, Full }

/// A vhost-user traffic source and sink (see docs/fwd.md).
#[derive(Parser)]
#[command(name = "offlab-vhostload")]
struct Args {
    /// The backend's socket the sending guest connects to.
    #[arg(long)]
    source: String,
    /// The backend's socket the receiving guest connects to.
    #[arg(long)]
    sink: String,
    /// MTU segments (for GRO) or 64 KiB TSO super-packets (for GSO).
    #[arg(long, value_enum, default_value = "mtu")]
    shape: ShapeArg,
    /// IP version of the (inner) packets.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(4..=6))]
    ip: u8,
    /// Wrap every frame in VXLAN (outer IPv4/UDP 4789, outer checksum zero).
    #[arg(long)]
    vxlan: bool,
    #[arg(long, default_value_t = 1)]
    flows: u16,
    /// The source's TCP checksums: partial (NEEDS_CSUM, as Linux with csum) or full.
    #[arg(long, value_enum, default_value = "partial")]
    checksum: ChecksumArg,
    #[arg(long, default_value_t = 1500)]
    mtu: usize,
    /// Runs of 45 segments per flow before the flow's sequence numbers repeat (1: every
    /// run is the same; more: the stream continues across runs, and GRO can merge across).
    #[arg(long, default_value_t = 1)]
    runs: u16,
    /// virtio-net features the sending guest's driver wants (QEMU's names).
    #[arg(long, default_value = "csum,host_tso4,host_tso6")]
    source_features: String,
    /// virtio-net features the receiving guest's driver wants.
    #[arg(long, default_value = "guest_csum,guest_tso4,guest_tso6,mrg_rxbuf")]
    sink_features: String,
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    #[arg(long, default_value_t = 0.5)]
    warmup: f64,
    /// Verify one received frame in N (1: every frame).
    #[arg(long, default_value_t = 16)]
    verify_every: u64,
    #[arg(long, default_value_t = 1024)]
    queue_size: u16,
    /// Seconds to keep trying to connect while the backend starts.
    #[arg(long, default_value_t = 20.0)]
    connect_wait: f64,
}

fn main() {
    let args = Args::parse();
    if let Err(message) = run(&args) {
        eprintln!("offlab-vhostload: {message}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), String> {
    let workload = Workload {
        ip: if args.ip == 6 { Ip::V6 } else if args.ip == 4 { Ip::V4 } else { return Err("--ip: 4 or 6".into()) },
        vxlan: args.vxlan,
        flows: args.flows,
        shape: match args.shape { ShapeArg::Mtu => Shape::Mtu, ShapeArg::Tso => Shape::Tso },
        checksum: match args.checksum { ChecksumArg::Partial => SourceChecksum::Partial, ChecksumArg::Full => SourceChecksum::Full },
        mtu: args.mtu,
        runs: args.runs,
    };
    let setup = Setup {
        source: &args.source,
        sink: &args.sink,
        workload,
        source_features: parse_features(&args.source_features)?,
        sink_features: parse_features(&args.sink_features)?,
        queue_size: args.queue_size,
        connect_wait: Duration::from_secs_f64(args.connect_wait),
    };
    let (mut source, mut sink) = session::connect(&setup)?;
    let (source_acked, sink_acked, buffer) = (source.guest.acked, sink.guest.acked, sink.buffer_len());
    let timing = Timing {
        warmup: Duration::from_secs_f64(args.warmup),
        measure: Duration::from_secs_f64(args.seconds),
        verify_every: args.verify_every,
        min_frames: 0,
    };
    let (counts, elapsed) = load::run(&mut source, &mut sink, &workload, &timing);
    let secs = elapsed.as_secs_f64();
    let per_frame = |n: u64, d: u64| if d == 0 { None } else { Some(n as f64 / d as f64) };
    println!("{}", json!({
        "event": "result",
        "source_negotiated": feature_names(source_acked),
        "sink_negotiated": feature_names(sink_acked),
        "input_digest": format!("{:016x}", source.digest),
        "mss": workload.mss(),
        "seconds": secs,
        "sent_frames": counts.sent_frames,
        "sent_payload_bytes": counts.sent_payload,
        "frames": counts.frames,
        "bytes": counts.bytes,
        "payload_bytes": counts.payload,
        "gbps": counts.payload as f64 * 8.0 / secs / 1e9,
        "frames_per_s": counts.frames as f64 / secs,
        "merge_depth": per_frame(counts.segments, counts.frames),
        "sink_frames_per_source_frame": per_frame(counts.frames * counts.sent_payload, counts.sent_frames * counts.payload.max(1)),
        "gso_types": counts.gso.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "over_mtu_without_gso": counts.over_mtu_without_gso,
        "verified": counts.verified,
        "mismatches": counts.mismatches,
        "receive_buffer": buffer,
        "source_busy_seconds": counts.source_busy.as_secs_f64(),
        "sink_busy_seconds": counts.sink_busy.as_secs_f64(),
    }));
    Ok(())
}
