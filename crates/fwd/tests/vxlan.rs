//! VXLAN inside the namespaces: nsA ⇄ vxlan ⇄ tap ⇄ offlab-fwd ⇄ tap ⇄ vxlan ⇄ nsB,
//! with the outer UDP checksum on (`udpcsum`) and the taps negotiating checksum
//! offload, so the forwarder sees frames whose partial checksum is the outer UDP one
//! (ARP, neighbour discovery inside the tunnel) or the inner TCP one under an outer
//! checksum computed by local checksum offload. Every byte is checked and neither
//! stack may count a checksum error.

mod common;

use common::traffic::tcp_exchange;
use common::{drops_in, Netns, Topology};

const INNER_A: &str = "10.211.0.1";
const INNER_B: &str = "10.211.0.2";
const INNER6_B: &str = "[fd00:211::2]";
const UP: usize = 8 << 20;
const DOWN: usize = 2 << 20;

/// A VXLAN device (VNI 42, outer UDP checksum on) from `local` to `remote`.
fn add_vxlan(ns: &Netns, local: &str, remote: &str, inner: &str, inner6: &str) {
    ns.ip(&[
        "link", "add", "ofl-vx", "type", "vxlan", "id", "42", "local", local, "remote", remote,
        "dstport", "4789", "udpcsum",
    ]);
    ns.ip(&["link", "set", "ofl-vx", "mtu", "1450", "up"]);
    ns.ip(&["addr", "add", &format!("{inner}/24"), "dev", "ofl-vx"]);
    ns.ip(&[
        "-6",
        "addr",
        "add",
        &format!("{inner6}/64"),
        "dev",
        "ofl-vx",
        "nodad",
    ]);
}

/// Moves content-checked TCP both ways through the tunnel; returns fwd's final stats.
fn vxlan_transfer(tag: &str, mode: &str, offloads: &str) -> serde_json::Value {
    vxlan_transfer_between(tag, mode, offloads, offloads)
}

fn vxlan_transfer_between(tag: &str, mode: &str, a: &str, b: &str) -> serde_json::Value {
    let mut topo = Topology::vm2vm(tag, mode, a, b);
    add_vxlan(
        &topo.a,
        common::ADDR_A,
        common::ADDR_B,
        INNER_A,
        "fd00:211::1",
    );
    add_vxlan(
        &topo.b,
        common::ADDR_B,
        common::ADDR_A,
        INNER_B,
        "fd00:211::2",
    );
    let before = (topo.a.checksum_errors(), topo.b.checksum_errors());
    tcp_exchange(&topo.a, &topo.b, INNER_B, UP, DOWN);
    tcp_exchange(&topo.b, &topo.a, INNER_A, DOWN, UP);
    tcp_exchange(&topo.a, &topo.b, INNER6_B, UP, DOWN);
    let after = (topo.a.checksum_errors(), topo.b.checksum_errors());
    assert_eq!(before, after, "checksum errors counted (nsA, nsB)");
    let (status, stats) = topo.stop();
    assert!(status.success(), "offlab-fwd exit: {status:?}");
    assert_eq!(
        drops_in(&stats, "virtio") + drops_in(&stats, "parse"),
        0,
        "{stats:#}"
    );
    stats
}

/// Sums one counter over both directions.
fn total(stats: &serde_json::Value, counter: &str) -> u64 {
    stats["directions"]
        .as_object()
        .unwrap()
        .values()
        .map(|d| d[counter].as_u64().unwrap())
        .sum()
}

#[test]
fn vxlan_with_outer_checksum_in_pass_mode() {
    vxlan_transfer("xp", "pass", "csum+tso4+tso6");
}

#[test]
fn vxlan_with_outer_checksum_in_csum_mode() {
    vxlan_transfer("xc", "csum", "csum+tso4+tso6");
}

#[test]
fn vxlan_with_outer_checksum_in_gso_mode() {
    vxlan_transfer("xs", "gso", "csum+tso4+tso6");
}

#[test]
fn vxlan_with_outer_checksum_in_gro_mode() {
    vxlan_transfer("xg", "gro", "csum+tso4+tso6");
}

/// The taps negotiate UDP-tunnel segmentation (24-byte vnet header), so nsA's VXLAN
/// device hands whole VXLAN super-packets to the forwarder.
const TUNNEL_OFFLOADS: &str = "csum+tso4+tso6+udptnl-csum";

#[test]
fn vxlan_super_packets_pass_between_taps_with_udptnl() {
    let stats = vxlan_transfer("xtp", "pass", TUNNEL_OFFLOADS);
    assert!(total(&stats, "rx_super_packets") > 0, "{stats:#}");
    assert!(total(&stats, "passed_super_packets") > 0, "{stats:#}");
}

#[test]
fn vxlan_super_packets_from_a_tap_with_udptnl_are_segmented_in_gso_mode() {
    let stats = vxlan_transfer("xts", "gso", TUNNEL_OFFLOADS);
    let super_packets = total(&stats, "segmented_super_packets");
    assert!(super_packets > 0, "{stats:#}");
    assert!(total(&stats, "segments") > super_packets, "{stats:#}");
}

#[test]
fn vxlan_super_packets_are_segmented_in_pass_mode_for_a_tap_without_udptnl() {
    let stats = vxlan_transfer_between("xtm", "pass", TUNNEL_OFFLOADS, "csum+tso4+tso6");
    let super_packets = total(&stats, "segmented_super_packets");
    assert!(super_packets > 0, "{stats:#}");
    assert!(total(&stats, "segments") > super_packets, "{stats:#}");
}

/// nsA's tap lacks `udptnl`, so nsA segments and the forwarder merges the VXLAN MTU
/// frames into tunnel super-packets for nsB's `udptnl` tap; nsB's super-packets are
/// segmented on the way back.
#[test]
fn vxlan_frames_merged_in_gro_mode_reach_a_udptnl_tap_as_tunnel_super_packets() {
    let stats = vxlan_transfer_between("xtg", "gro", "csum+tso4+tso6", TUNNEL_OFFLOADS);
    assert!(total(&stats, "merged_super_packets") > 0, "{stats:#}");
    assert!(total(&stats, "segmented_super_packets") > 0, "{stats:#}");
}
