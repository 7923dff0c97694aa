//! VXLAN and Geneve: inner TCP/UDP coalesced under equal outer headers.

use super::builder::{Pkt, Tunnel};
use super::{reason, Harness};
use crate::gro::{Held, Reason};
use crate::virtio::TunnelGso;

fn in_tunnel(p: Pkt, t: Tunnel) -> Pkt {
    Pkt {
        tunnel: Some(t),
        ..p
    }
}

#[test]
fn vxlan_inner_tcp_merges() {
    let mut h = Harness::new();
    let a = in_tunnel(Pkt::tcp4(0, 100), Tunnel::vxlan(42));
    let b = a.next(100);
    let c = b.next(100);
    h.push(&a).unwrap();
    assert_eq!(h.push(&b), Ok(Held::Merged));
    assert_eq!(h.push(&c), Ok(Held::Merged));
    h.flush();
    assert_eq!(h.segments(), vec![3]);
    let merged = h.packet(0);
    let outer_ip_len = u16::from_be_bytes([merged[16], merged[17]]) as usize;
    assert_eq!(outer_ip_len + 14, merged.len());
    let outer_udp_len = u16::from_be_bytes([merged[38], merged[39]]) as usize;
    assert_eq!(outer_udp_len, outer_ip_len - 20);
    // Inner IPv4 after outer eth 14 + ip 20 + udp 8 + vxlan 8 + inner eth 14 = 64.
    let inner_ip_len = u16::from_be_bytes([merged[66], merged[67]]) as usize;
    assert_eq!(inner_ip_len, 20 + 32 + 300);
    assert_eq!(h.out[0].csum_start, 84);
    // The run's header says where the tunnel is (virtio UDP-tunnel GSO), and that
    // header validates against the merged packet as a guest or TAP would check it.
    let tunnel = TunnelGso {
        outer_ipv6: false,
        outer_checksum: false,
        outer_th: 34,
        inner_nh: 64,
    };
    assert_eq!(h.out[0].tunnel, Some(tunnel));
    let gso = h.out[0].vnet.validate(&merged, None).unwrap().gso.unwrap();
    assert_eq!((gso.segments, gso.gso_size), (3, 100));
}

#[test]
fn vxlan_over_ipv6_with_outer_checksum_names_both_in_its_header() {
    let mut h = Harness::new();
    let mut t = Tunnel::vxlan(42);
    t.outer_v6 = true;
    t.outer_udp_checksum = true;
    let a = in_tunnel(Pkt::tcp6(0, 100), t);
    let b = a.next(100);
    h.push(&a).unwrap();
    assert_eq!(h.push(&b), Ok(Held::Merged));
    h.flush();
    // Outer: eth 14 + IPv6 40 = UDP at 54; + 8 + VXLAN 8 + inner eth 14 = inner IP at 84.
    let tunnel = TunnelGso {
        outer_ipv6: true,
        outer_checksum: true,
        outer_th: 54,
        inner_nh: 84,
    };
    assert_eq!(h.out[0].tunnel, Some(tunnel));
    assert!(h.out[0].vnet.validate(&h.packet(0), None).is_ok());
}

#[test]
fn vxlan_different_vni_never_merged() {
    let mut h = Harness::new();
    let a = in_tunnel(Pkt::tcp4(0, 100), Tunnel::vxlan(42));
    let b = in_tunnel(a.next(100), Tunnel::vxlan(43));
    h.push(&a).unwrap();
    assert_eq!(h.push(&b), Ok(Held::NewFlow));
    h.flush();
    assert_eq!(h.segments(), vec![1, 1]);
}

#[test]
fn vxlan_outer_ttl_differs() {
    let mut h = Harness::new();
    let a = in_tunnel(Pkt::tcp4(0, 100), Tunnel::vxlan(42));
    let mut b = a.next(100);
    b.tunnel.as_mut().unwrap().outer_ttl = 3;
    h.push(&a).unwrap();
    h.push(&b).unwrap();
    assert_eq!(h.gro.stats().ended(Reason::TtlDiffers), 1);
}

#[test]
fn vxlan_outer_ip_id_must_increment() {
    let mut h = Harness::new();
    let a = in_tunnel(Pkt::tcp4(0, 100), Tunnel::vxlan(42));
    let mut b = a.next(100);
    b.tunnel.as_mut().unwrap().outer_id += 5;
    h.push(&a).unwrap();
    h.push(&b).unwrap();
    assert_eq!(h.gro.stats().ended(Reason::IpIdNotSequential), 1);
}

#[test]
fn vxlan_outer_udp_checksum_is_verified_and_seeded() {
    let mut h = Harness::new();
    let mut t = Tunnel::vxlan(1);
    t.outer_udp_checksum = true;
    let a = in_tunnel(Pkt::udp6(100), t);
    h.push(&a).unwrap();
    h.push(&a.next(100)).unwrap();
    h.flush();
    assert_eq!(h.segments(), vec![2]);
    let mut bad = a.build();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    h.validated = true;
    assert_eq!(h.push_frame(bad.clone()), Ok(Held::NewFlow));
    h.validated = false;
    assert_eq!(reason(h.push_frame(bad)), Reason::BadL4Checksum);
}

#[test]
fn geneve_inner_ipv6_merges() {
    let mut h = Harness::new();
    let mut t = Tunnel::geneve(7, vec![0, 1, 2, 1, 0xaa, 0xbb, 0xcc, 0xdd]);
    t.outer_v6 = true;
    let a = in_tunnel(Pkt::tcp6(0, 100), t);
    h.push(&a).unwrap();
    h.push(&a.next(100)).unwrap();
    h.flush();
    assert_eq!(h.segments(), vec![2]);
    // Outer IPv6 payload length covers UDP + Geneve + inner frame.
    let merged = h.packet(0);
    let outer_payload = u16::from_be_bytes([merged[18], merged[19]]) as usize;
    assert_eq!(outer_payload, merged.len() - 14 - 40);
}

#[test]
fn geneve_options_differ() {
    let mut h = Harness::new();
    let a = in_tunnel(
        Pkt::tcp4(0, 100),
        Tunnel::geneve(7, vec![0, 1, 2, 1, 0, 0, 0, 1]),
    );
    let b = in_tunnel(a.next(100), Tunnel::geneve(7, vec![0, 1, 2, 1, 0, 0, 0, 2]));
    h.push(&a).unwrap();
    assert_eq!(h.push(&b), Ok(Held::NewFlow));
    h.flush();
    assert_eq!(h.segments(), vec![1, 1]);
}

#[test]
fn geneve_oam_is_refused() {
    let mut h = Harness::new();
    let mut frame = in_tunnel(Pkt::tcp4(0, 100), Tunnel::geneve(7, vec![])).build();
    frame[14 + 20 + 8 + 1] |= 0x80;
    assert_eq!(reason(h.push_frame(frame)), Reason::TunnelUnsupported);
}

/// A full-size segment that repeats its run's headers joins without being classified
/// (`plain::continues`), so that join checks each IPv4 header checksum itself: a bad
/// outer or inner one is refused, the run delivered first, as the general path does.
#[test]
fn vxlan_segment_with_a_bad_ip_checksum_is_refused_mid_run() {
    // Outer IPv4 checksum at 14 + 10; inner IPv4 at 64, its checksum at 74.
    for (at, layer) in [(24, "outer"), (25, "outer"), (74, "inner")] {
        let mut h = Harness::new();
        h.validated = true;
        let a = in_tunnel(Pkt::tcp4(0, 100), Tunnel::vxlan(42));
        let b = a.next(100);
        h.push(&a).unwrap();
        assert_eq!(h.push(&b), Ok(Held::Merged), "{layer}");
        let mut bad = b.next(100).build();
        bad[at] ^= 0x10;
        assert_eq!(reason(h.push_frame(bad)), Reason::BadIpChecksum, "{layer}");
        assert_eq!(h.segments(), vec![2], "{layer}: the run went out first");
        assert_eq!(h.push(&b.next(100)), Ok(Held::NewFlow), "{layer}: the next one opens a run");
    }
}

/// Linux keeps tunnelled datagrams with an outer UDP checksum and without one apart
/// (`udp_gro_receive`: `!uh->check ^ !uh2->check` is another flow): a frame whose
/// outer checksum presence differs opens its own run and the held one stays; each
/// continues with its own frames. On every path: validated frames (VXLAN over IPv4 by
/// `plain.rs`, VXLAN over IPv6 and Geneve by template) and unvalidated ones (general).
#[test]
fn outer_checksum_presence_is_flow_identity() {
    let tunnels = [
        ("vxlan4", Tunnel::vxlan(42)),
        ("vxlan6", Tunnel { outer_v6: true, ..Tunnel::vxlan(42) }),
        ("geneve4", Tunnel::geneve(9, Vec::new())),
    ];
    for (name, tunnel) in tunnels {
        for validated in [true, false] {
            let mut h = Harness::new();
            h.validated = validated;
            let mut with = tunnel.clone();
            with.outer_udp_checksum = true;
            let mut without = tunnel.clone();
            without.outer_udp_checksum = false;
            // `a` and `a2` carry an outer checksum; `b` and `b2`, the same flow
            // otherwise and contiguous with `a`, carry none.
            let a = in_tunnel(Pkt::tcp4(0, 100), with);
            let a2 = a.next(100);
            let b = Pkt { tunnel: Some(without), ..a2.clone() };
            let b2 = b.next(100);
            assert_eq!(h.push(&a), Ok(Held::NewFlow), "{name} {validated}");
            assert_eq!(h.push(&b), Ok(Held::NewFlow), "{name} {validated}: another flow");
            assert_eq!(h.push(&a2), Ok(Held::Merged), "{name} {validated}: joins its own run");
            assert_eq!(h.push(&b2), Ok(Held::Merged), "{name} {validated}: joins its own run");
            assert!(h.segments().is_empty(), "{name} {validated}: nothing delivered yet");
            h.flush();
            assert_eq!(h.segments(), vec![2, 2], "{name} {validated}");
            let checksummed: Vec<bool> = h.out.iter().map(|o| o.tunnel.unwrap().outer_checksum).collect();
            assert_eq!(checksummed, vec![true, false], "{name} {validated}");
        }
    }
}
