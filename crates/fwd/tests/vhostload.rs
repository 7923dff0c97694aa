//! offlab-vhostload (the project's vhost-user source and sink, crates/vhostload)
//! against offlab-fwd's two vhost-user ports: the features each guest's driver
//! negotiates are the ones reported on both sides, every frame the sink receives is
//! verified (checksums, segment sizes, payload bytes at their stream offsets) in GRO,
//! GSO (partial and full checksums) and pass modes, and chains the source writes wrongly
//! are refused by the forwarder with a counted reason while good frames still cross.

mod common;

use std::time::{Duration, Instant};

use common::Fwd;
use offlab_vhostload::frames::{Shape, SourceChecksum, Workload};
use offlab_vhostload::guest::{feature_names, parse_features, Guest, TX};
use offlab_vhostload::load::{self, Counts, Sink, Source, Timing};
use offlab_vhostload::session::{self, Setup};
use offlab_vhostload::virtq::{F_NEXT, F_WRITE};
use offlab_vhostload::wire::Ip;
use serde_json::Value;

const QUEUE: u16 = 256;
/// A descriptor as the driver writes it: guest address, length, flags, next.
type RawDescriptor = (u64, u32, u16, u16);
const SINK_TSO: &str = "guest_csum,guest_tso4,guest_tso6,mrg_rxbuf";

struct Lab {
    fwd: Fwd,
    sockets: [String; 2],
    dir: String,
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn lab(mode: &str) -> Lab {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = format!("/tmp/ofl-vl-test-{}-{n}", std::process::id());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sockets = [format!("{dir}/a.sock"), format!("{dir}/b.sock")];
    let fwd = Fwd::start(&[
        "--port".into(), format!("vhost-user:{}", sockets[0]),
        "--port".into(), format!("vhost-user:{}", sockets[1]),
        "--mode".into(), mode.into(),
    ]);
    Lab { fwd, sockets, dir }
}

fn workload(shape: Shape, ip: Ip, flows: u16, checksum: SourceChecksum) -> Workload {
    Workload { ip, vxlan: false, flows, shape, checksum, mtu: 1500, runs: 1 }
}

/// Both guests of a run, connected until dropped.
struct Guests {
    source: Source,
    _sink: Sink,
}

/// Connects both guests, runs the workload for a short window verifying every frame,
/// and returns what the sink counted, both guests' negotiated features and the guests
/// (the forwarder resets a port once its guest goes).
fn run(lab: &Lab, w: Workload, source_features: &str, sink_features: &str)
    -> (Counts, Vec<&'static str>, Vec<&'static str>, Guests) {
    let setup = Setup {
        source: &lab.sockets[0],
        sink: &lab.sockets[1],
        workload: w,
        source_features: parse_features(source_features).unwrap(),
        sink_features: parse_features(sink_features).unwrap(),
        queue_size: QUEUE,
        connect_wait: Duration::from_secs(5),
    };
    let (mut source, mut sink) = session::connect(&setup).expect("connect");
    // The window lasts until the sink counted more frames than assert_all_verified asks
    // for: a frame floor inside a fixed window failed on a loaded machine.
    let timing = Timing { warmup: Duration::from_millis(100), measure: Duration::from_millis(700), verify_every: 1,
                          min_frames: MIN_VERIFIED + 1 };
    let (counts, _) = load::run(&mut source, &mut sink, &w, &timing);
    let features = (feature_names(source.guest.acked), feature_names(sink.guest.acked));
    (counts, features.0, features.1, Guests { source, _sink: sink })
}

fn direction<'a>(stats: &'a Value, lab: &Lab) -> &'a Value {
    &stats["directions"][format!("vhost-user:{} -> vhost-user:{}", lab.sockets[0], lab.sockets[1])]
}

/// The frames a run must have verified at the sink for its checks to mean something.
const MIN_VERIFIED: u64 = 100;

fn assert_all_verified(counts: &Counts) {
    assert!(counts.mismatches.is_empty(), "sink found: {:?}", counts.mismatches);
    assert!(counts.frames > MIN_VERIFIED && counts.verified >= counts.frames, "{counts:?}");
}

#[test]
fn gro_merges_mtu_segments_into_verified_super_packets_for_a_guest_tso4_sink() {
    let mut lab = lab("gro");
    let w = workload(Shape::Mtu, Ip::V4, 8, SourceChecksum::Partial);
    let (counts, source, sink, _guests) = run(&lab, w, "csum", SINK_TSO);
    assert_eq!(source, ["csum", "version_1"]);
    assert_eq!(sink, ["guest_csum", "guest_tso4", "guest_tso6", "mrg_rxbuf", "version_1"]);
    assert_all_verified(&counts);
    assert!(counts.gso.get(&1).copied().unwrap_or(0) > 0, "no TCPV4 super-packets: {counts:?}");
    assert!(counts.segments > 4 * counts.frames, "merge depth below 4: {counts:?}");
    let stats = lab.fwd.stats();
    let negotiated = stats["port_states"][format!("vhost-user:{}", lab.sockets[1])]["negotiated"].to_string();
    assert!(negotiated.contains("guest_tso4") && negotiated.contains("mrg_rxbuf"), "{negotiated}");
    assert!(direction(&stats, &lab)["merged_super_packets"].as_u64().unwrap() > 0);
    assert_eq!(common::drops_in(&stats, "virtio") + common::drops_in(&stats, "parse"), 0, "{stats}");
}

#[test]
fn gro_of_a_stream_that_continues_across_runs_is_verified() {
    // Four runs before the sequence repeats: offlab-fwd may merge a run's tail with the
    // next run's head, and every byte must still be where the stream puts it.
    let lab = lab("gro");
    let w = Workload { runs: 4, ..workload(Shape::Mtu, Ip::V4, 1, SourceChecksum::Partial) };
    let (counts, _, _, _guests) = run(&lab, w, "csum", SINK_TSO);
    assert_all_verified(&counts);
    assert!(counts.segments > 4 * counts.frames, "merge depth below 4: {counts:?}");
}

#[test]
fn gro_over_ipv6_is_verified_too() {
    let lab = lab("gro");
    let (counts, _, _, _guests) = run(&lab, workload(Shape::Mtu, Ip::V6, 1, SourceChecksum::Partial), "csum", SINK_TSO);
    assert_all_verified(&counts);
    assert!(counts.gso.get(&4).copied().unwrap_or(0) > 0, "no TCPV6 super-packets: {counts:?}");
}

#[test]
fn gso_cuts_tso_super_packets_for_sinks_with_and_without_guest_csum() {
    for (sink_features, partial) in [("guest_csum,mrg_rxbuf", true), ("mrg_rxbuf", false)] {
        let mut lab = lab("gso");
        let w = workload(Shape::Tso, Ip::V4, 1, SourceChecksum::Partial);
        let (counts, source, sink, _guests) = run(&lab, w, "csum,host_tso4,host_tso6", sink_features);
        assert_eq!(source, ["csum", "host_tso4", "host_tso6", "version_1"]);
        assert_eq!(sink.contains(&"guest_csum"), partial);
        assert_all_verified(&counts);
        assert_eq!(counts.gso.keys().collect::<Vec<_>>(), [&0], "only MTU frames: {counts:?}");
        assert_eq!(counts.segments, counts.frames, "every frame one segment: {counts:?}");
        let stats = lab.fwd.stats();
        assert!(direction(&stats, &lab)["segmented_super_packets"].as_u64().unwrap() > 0, "{stats}");
    }
}

#[test]
fn pass_hands_super_packets_on_whole_and_copies_each_byte_once() {
    let mut lab = lab("pass");
    let w = workload(Shape::Tso, Ip::V4, 2, SourceChecksum::Partial);
    let (counts, _, _, _guests) = run(&lab, w, "csum,host_tso4", SINK_TSO);
    assert_all_verified(&counts);
    assert_eq!(counts.segments, 45 * counts.frames, "whole super-packets: {counts:?}");
    let stats = lab.fwd.stats();
    let d = direction(&stats, &lab);
    // Every byte is copied once, from guest A's buffer straight into guest B's (each
    // super-packet is one descriptor: read in place, nothing copied on the way in).
    let (tx, copied) = (d["tx_bytes"].as_u64().unwrap(), d["copied_bytes"].as_u64().unwrap());
    let headers = 12 * d["tx_packets"].as_u64().unwrap();
    assert_eq!(copied, tx + headers, "{d}");
}

/// MTU frames with partial checksums towards a sink without guest_csum: the forwarder
/// completes every checksum, on a copy of the frame — the source's frames are read
/// in place, and a device must not write a buffer the driver gave it to read.
#[test]
fn checksums_are_completed_on_a_copy_never_in_the_sending_guests_buffer() {
    let mut lab = lab("csum");
    let w = workload(Shape::Mtu, Ip::V4, 2, SourceChecksum::Partial);
    let (counts, _, sink, guests) = run(&lab, w, "csum", "mrg_rxbuf");
    assert!(!sink.contains(&"guest_csum"), "{sink:?}");
    assert_all_verified(&counts);
    let stats = lab.fwd.stats();
    assert!(direction(&stats, &lab)["checksums_completed"].as_u64().unwrap() > 0, "{stats}");
    assert_eq!(guests.source.digest_now(), guests.source.digest, "the source's frames were written");
}

/// Chains the sending guest writes wrongly are refused, each with its reason; the
/// frames the source sends afterwards are all verified at the sink.
#[test]
fn malformed_descriptors_from_the_source_are_refused_by_reason() {
    let mut lab = lab("pass");
    let wait = Duration::from_secs(5);
    let mut a = Guest::connect(&lab.sockets[0], parse_features("csum").unwrap(), 8 << 20, QUEUE, wait).unwrap();
    let b = Guest::connect(&lab.sockets[1], parse_features(SINK_TSO).unwrap(), 32 << 20, QUEUE, wait).unwrap();
    let frame = a.memory.alloc(2048, 64).unwrap();
    let outside = a.memory.size() as u64 + 4096;
    let cases: [(&str, &[RawDescriptor]); 4] = [
        ("descriptor outside guest memory", &[(outside, 100, 0, 0)]),
        ("zero-length descriptor", &[(frame, 0, 0, 0)]),
        ("descriptor chain loops or outruns the queue", &[(frame, 64, F_NEXT, 1), (frame, 64, F_NEXT, 0)]),
        ("device-writable descriptor on the transmit queue", &[(frame, 1500, F_WRITE, 0)]),
    ];
    for (_, chain) in &cases {
        for (i, &(addr, len, flags, next)) in chain.iter().enumerate() {
            a.rings[TX].set_descriptor(i as u16, addr, len, flags, next);
        }
        a.rings[TX].push_avail(0);
        a.publish(TX);
        let deadline = Instant::now() + Duration::from_secs(5);
        while a.rings[TX].pop_used().is_none() {
            assert!(Instant::now() < deadline, "the forwarder did not return the chain");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let stats = lab.fwd.stats();
    for (reason, _) in &cases {
        let count = stats["directions"].as_object().unwrap().values()
            .map(|d| d["drops"]["vhost-user"][reason].as_u64().unwrap_or(0)).sum::<u64>();
        assert_eq!(count, 1, "{reason}: {stats}");
    }
    let w = workload(Shape::Mtu, Ip::V4, 4, SourceChecksum::Partial);
    let mut source = Source::new(a, &w).unwrap();
    let mut sink = Sink::new(b, 4096).unwrap();
    let timing = Timing { warmup: Duration::from_millis(50), measure: Duration::from_millis(200), verify_every: 1,
                          min_frames: MIN_VERIFIED + 1 };
    let (counts, _) = load::run(&mut source, &mut sink, &w, &timing);
    assert_all_verified(&counts);
    assert!(lab.fwd.alive());
}

/// A driver without mrg_rxbuf posts one 64 KiB buffer per frame when it takes TSO:
/// every super-packet fits one buffer, and the forwarder reports the narrower
/// negotiation.
#[test]
fn a_sink_without_mergeable_buffers_gets_each_super_packet_in_one_buffer() {
    let mut lab = lab("gro");
    let w = workload(Shape::Mtu, Ip::V4, 2, SourceChecksum::Partial);
    let (counts, _, sink, _guests) = run(&lab, w, "csum", "guest_csum,guest_tso4");
    assert_eq!(sink, ["guest_csum", "guest_tso4", "version_1"]);
    assert_all_verified(&counts);
    assert!(counts.gso.get(&1).copied().unwrap_or(0) > 0, "{counts:?}");
    let stats = lab.fwd.stats();
    let negotiated = stats["port_states"][format!("vhost-user:{}", lab.sockets[1])]["negotiated"].to_string();
    assert!(!negotiated.contains("mrg_rxbuf") && negotiated.contains("guest_tso4"), "{negotiated}");
}
