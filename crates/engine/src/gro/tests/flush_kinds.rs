//! A flush that frees the table in bulk hands each kind of run to the callback on a
//! path of its own (`Gro::emit::<true>`: bare and VXLAN TCP/IPv4, TCP/IPv6, every other
//! shape); a run delivered alone (an age flush, an ended run) takes the one shared path
//! (`emit::<false>`). Both must deliver the same runs, byte for byte.

use super::builder::{Pkt, Tunnel};
use super::{GroConfig, Harness, Merged, Out};

/// Runs of every kind the bulk flush tells apart, in one table small enough that its
/// flush frees it in bulk: three segments each of bare TCP/IPv4, TCP/IPv4 in VXLAN,
/// TCP/IPv6 and VLAN-tagged TCP/IPv4 (a shape of the general path), and a run of one.
fn held_runs() -> Harness {
    let mut h = Harness::with(GroConfig {
        max_flows: 8,
        ..GroConfig::default()
    });
    h.validated = true;
    let bare = Pkt::tcp4(1000, 1448);
    let vxlan = Pkt {
        sport: 1001,
        tunnel: Some(Tunnel::vxlan(7)),
        ..Pkt::tcp4(5000, 1400)
    };
    let v6 = Pkt {
        sport: 1002,
        ..Pkt::tcp6(9000, 1448)
    };
    let vlan = Pkt {
        sport: 1003,
        vlan: Some(5),
        ..Pkt::tcp4(13000, 1448)
    };
    for first in [bare, vxlan, v6, vlan] {
        let mut p = first;
        for _ in 0..3 {
            h.push(&p).expect("kept");
            p = p.next(p.payload.len());
        }
    }
    h.push(&Pkt {
        sport: 1004,
        ..Pkt::tcp4(20000, 100)
    })
    .expect("kept");
    assert!(
        h.gro.table.closes_in_bulk(),
        "the flush below must take the bulk path"
    );
    h
}

/// What a delivery says, without why it was delivered (the flushes differ there).
fn delivered(out: &[Out]) -> Vec<String> {
    out.iter()
        .map(|o| format!("{:?} {:?} {} {:?}", o.header, o.parts, o.segments, o.vnet))
        .collect()
}

#[test]
fn the_bulk_flush_delivers_every_kind_as_a_run_delivered_alone() {
    let mut bulk = held_runs();
    bulk.flush();
    let mut alone = held_runs();
    let out = &mut alone.out;
    alone
        .gro
        .flush_older_than(0, 0, &mut |m: Merged<'_>| out.push(super::copy(&m)));
    assert_eq!(bulk.segments(), vec![3, 3, 3, 3, 1]);
    assert!(
        bulk.out[1].tunnel.is_some(),
        "the VXLAN run's header names its tunnel"
    );
    assert_eq!(delivered(&bulk.out), delivered(&alone.out));
}
