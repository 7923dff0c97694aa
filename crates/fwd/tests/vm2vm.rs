//! VM to VM: nsA ⇄ tap ⇄ offlab-fwd ⇄ tap ⇄ nsB, one test per mode, with TCP and UDP
//! transfers whose every byte is checked.

mod common;

use common::traffic::{tcp_exchange, udp_exchange};
use common::{drops_in, total, Topology, ADDR6_B, ADDR_A, ADDR_B};

const UP: usize = 8 << 20;
const DOWN: usize = 2 << 20;
/// Datagram sizes: tiny, MTU-sized, and larger ones the sender's stack fragments.
const UDP_SIZES: [usize; 5] = [8, 100, 1472, 3000, 9000];

/// TCP both ways and UDP from A to B; returns the forwarder's final stats.
fn run_traffic(topo: &mut Topology, uso: bool) -> serde_json::Value {
    tcp_exchange(&topo.a, &topo.b, ADDR_B, UP, DOWN);
    tcp_exchange(&topo.b, &topo.a, ADDR_A, DOWN, UP);
    tcp_exchange(&topo.a, &topo.b, ADDR6_B, UP, DOWN);
    let udp = udp_exchange(&topo.a, &topo.b, ADDR_B, &UDP_SIZES, 1000, None);
    assert_eq!(udp.corrupted, 0, "{udp:?}");
    assert!(udp.received * 2 >= udp.sent, "too few datagrams: {udp:?}");
    assert_eq!(udp.sizes_received.len(), UDP_SIZES.len(), "{udp:?}");
    if uso {
        let udp = udp_exchange(&topo.a, &topo.b, ADDR_B, &[], 200, Some((1200, 8)));
        assert_eq!(udp.corrupted, 0, "{udp:?}");
        assert!(
            udp.received * 2 >= udp.sent,
            "too few USO datagrams: {udp:?}"
        );
    }
    assert_eq!(
        topo.a.checksum_errors() + topo.b.checksum_errors(),
        0,
        "bad checksums arrived"
    );
    let (status, stats) = topo.stop();
    assert!(status.success(), "offlab-fwd exit: {status:?}");
    assert_eq!(stats["event"], "exit");
    assert_eq!(
        drops_in(&stats, "virtio") + drops_in(&stats, "parse"),
        0,
        "{stats:#}"
    );
    stats
}

#[test]
fn pass_mode_carries_super_packets_through() {
    let all = "csum+tso4+tso6+ecn+uso";
    let mut topo = Topology::vm2vm("p", "pass", all, all);
    let stats = run_traffic(&mut topo, true);
    assert!(total(&stats, "passed_super_packets") > 0, "{stats:#}");
    assert_eq!(total(&stats, "segments"), 0, "{stats:#}");
}

#[test]
fn pass_mode_segments_for_a_tap_without_offloads() {
    let mut topo = Topology::vm2vm("q", "pass", "csum+tso4+tso6+uso", "none");
    let stats = run_traffic(&mut topo, true);
    assert!(total(&stats, "segments") > 0, "{stats:#}");
    assert!(total(&stats, "checksums_completed") > 0, "{stats:#}");
}

#[test]
fn csum_mode_sends_mtu_frames_with_complete_checksums() {
    let mut topo = Topology::vm2vm("c", "csum", "csum+tso4+tso6+uso", "csum+tso4+tso6+uso");
    let stats = run_traffic(&mut topo, true);
    assert_eq!(total(&stats, "passed_super_packets"), 0, "{stats:#}");
    assert!(total(&stats, "segments") > 0, "{stats:#}");
    assert!(total(&stats, "checksums_completed") > 0, "{stats:#}");
}

#[test]
fn gso_mode_segments_every_super_packet() {
    let mut topo = Topology::vm2vm("s", "gso", "csum+tso4+tso6+uso", "csum");
    let stats = run_traffic(&mut topo, true);
    assert!(total(&stats, "segmented_super_packets") > 0, "{stats:#}");
    assert_eq!(total(&stats, "passed_super_packets"), 0, "{stats:#}");
}

#[test]
fn pass_mode_into_a_tap_with_kernel_gro() {
    let mut topo = Topology::vm2vm("n", "pass", "csum", "csum,napi");
    let stats = run_traffic(&mut topo, false);
    assert_eq!(total(&stats, "rx_super_packets"), 0, "{stats:#}");
}

#[test]
fn gro_mode_coalesces_mtu_frames() {
    let mut topo = Topology::vm2vm("g", "gro", "csum", "csum+tso4+tso6+uso");
    let stats = run_traffic(&mut topo, false);
    assert!(total(&stats, "merged_super_packets") > 0, "{stats:#}");
    assert!(
        total(&stats, "merged_packets") > total(&stats, "merged_super_packets"),
        "{stats:#}"
    );
}
