//! VM to host: nsA ⇄ tap ⇄ offlab-fwd ⇄ AF_PACKET on a veth in a middle namespace ⇄
//! nsB, one test per mode, with TCP and UDP transfers whose every byte is checked.

mod common;

use common::traffic::{tcp_exchange, udp_exchange};
use common::{drops_in, total, Topology, ADDR6_B, ADDR_A, ADDR_B};

const UP: usize = 8 << 20;
const DOWN: usize = 2 << 20;
const UDP_SIZES: [usize; 5] = [8, 100, 1472, 3000, 9000];

fn run_traffic(topo: &mut Topology) -> serde_json::Value {
    tcp_exchange(&topo.a, &topo.b, ADDR_B, UP, DOWN);
    tcp_exchange(&topo.b, &topo.a, ADDR_A, DOWN, UP);
    tcp_exchange(&topo.a, &topo.b, ADDR6_B, UP, DOWN);
    for (from, to, addr) in [(&topo.a, &topo.b, ADDR_B), (&topo.b, &topo.a, ADDR_A)] {
        let udp = udp_exchange(from, to, addr, &UDP_SIZES, 1000, None);
        assert_eq!(udp.corrupted, 0, "{udp:?}");
        assert!(udp.received * 2 >= udp.sent, "too few datagrams: {udp:?}");
        assert_eq!(udp.sizes_received.len(), UDP_SIZES.len(), "{udp:?}");
    }
    assert_eq!(
        topo.a.checksum_errors() + topo.b.checksum_errors(),
        0,
        "bad checksums arrived"
    );
    let (status, stats) = topo.stop();
    assert!(status.success(), "offlab-fwd exit: {status:?}");
    assert_eq!(
        drops_in(&stats, "virtio") + drops_in(&stats, "parse"),
        0,
        "{stats:#}"
    );
    stats
}

#[test]
fn pass_mode_between_tap_and_packet_socket() {
    let mut topo = Topology::vm2host("hp", "pass", "csum+tso4+tso6+ecn+uso");
    let stats = run_traffic(&mut topo);
    assert!(total(&stats, "passed_super_packets") > 0, "{stats:#}");
}

#[test]
fn csum_mode_between_tap_and_packet_socket() {
    let mut topo = Topology::vm2host("hc", "csum", "csum+tso4+tso6+uso");
    let stats = run_traffic(&mut topo);
    assert_eq!(total(&stats, "passed_super_packets"), 0, "{stats:#}");
    assert!(total(&stats, "checksums_completed") > 0, "{stats:#}");
}

#[test]
fn gso_mode_between_tap_and_packet_socket() {
    let mut topo = Topology::vm2host("hs", "gso", "csum+tso4+tso6+uso");
    let stats = run_traffic(&mut topo);
    assert!(total(&stats, "segmented_super_packets") > 0, "{stats:#}");
    assert_eq!(total(&stats, "passed_super_packets"), 0, "{stats:#}");
}

#[test]
fn gro_mode_between_tap_and_packet_socket() {
    let mut topo = Topology::vm2host("hg", "gro", "csum");
    let stats = run_traffic(&mut topo);
    assert!(total(&stats, "merged_super_packets") > 0, "{stats:#}");
}
