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

fn vxlan_transfer(tag: &str, mode: &str, offloads: &str) {
    let mut topo = Topology::vm2vm(tag, mode, offloads, offloads);
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
