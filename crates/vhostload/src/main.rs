//! `offlab-vhostload`: connects to a backend's two vhost-user sockets as two guests,
//! sends one workload from the first, receives on the second, prints one JSON line.

use std::time::Duration;

use clap::{Parser, ValueEnum};
use serde_json::json;

use offlab_vhostload::frames::{Shape, SourceChecksum, Workload};
use offlab_vhostload::guest::{feature_names, parse_features, Guest};
use offlab_vhostload::load::{self, Sink, Source, Timing};
use offlab_vhostload::wire::Ip;
use offlab_vhostload::{receive_buffer_len, BIG_BUFFER};

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
    };
    workload.validate()?;
    if !args.queue_size.is_power_of_two() || !(64..=1024).contains(&args.queue_size) {
        return Err(format!("--queue-size {}: a power of two from 64 to 1024", args.queue_size));
    }
    let source_wanted = parse_features(&args.source_features)?;
    let sink_wanted = parse_features(&args.sink_features)?;
    let wait = Duration::from_secs_f64(args.connect_wait);
    let queue = args.queue_size;
    let frames_size = workload.flows as usize * (workload.run_len() + 64 * 45 * 2 + 4096);
    let source_guest = Guest::connect(&args.source, source_wanted, frames_size + (4 << 20), queue, wait)
        .map_err(|e| e.to_string())?;
    check_source_features(&source_guest, &workload)?;
    let sink_guest = Guest::connect(&args.sink, sink_wanted, usize::from(queue) * BIG_BUFFER + (4 << 20), queue, wait)
        .map_err(|e| e.to_string())?;
    let tso = sink_guest.has("guest_csum") && (sink_guest.has("guest_tso4") || sink_guest.has("guest_tso6"));
    let buffer = receive_buffer_len(sink_guest.has("mrg_rxbuf"), tso, workload.mtu);
    let (source_acked, sink_acked) = (source_guest.acked, sink_guest.acked);
    let mut source = Source::new(source_guest, &workload).map_err(|e| e.to_string())?;
    let mut sink = Sink::new(sink_guest, buffer).map_err(|e| e.to_string())?;
    let timing = Timing {
        warmup: Duration::from_secs_f64(args.warmup),
        measure: Duration::from_secs_f64(args.seconds),
        verify_every: args.verify_every,
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
        "segments_per_input_frame": per_frame(counts.frames * counts.sent_payload, counts.sent_frames * counts.payload.max(1)),
        "gso_types": counts.gso.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "over_mtu_without_gso": counts.over_mtu_without_gso,
        "verified": counts.verified,
        "mismatches": counts.mismatches,
        "receive_buffer": buffer,
    }));
    Ok(())
}

/// The source's frames need the offloads they use: partial checksums need `csum`,
/// super-packets `host_tso4`/`host_tso6`.
fn check_source_features(guest: &Guest, w: &Workload) -> Result<(), String> {
    let needed: &[&str] = match (w.shape, w.checksum, w.ip) {
        (Shape::Tso, _, Ip::V4) => &["csum", "host_tso4"],
        (Shape::Tso, _, Ip::V6) => &["csum", "host_tso6"],
        (Shape::Mtu, SourceChecksum::Partial, _) => &["csum"],
        (Shape::Mtu, SourceChecksum::Full, _) => &[],
    };
    match needed.iter().find(|f| !guest.has(f)) {
        Some(missing) => Err(format!(
            "the sending guest did not negotiate {missing}, which its frames need (offered: {}; wanted via --source-features)",
            feature_names(guest.offered).join(","))),
        None => Ok(()),
    }
}
