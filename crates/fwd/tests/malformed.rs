//! Malformed input written into a tap by the namespace behind it: what the kernel lets
//! through reaches the forwarder, which drops it with a counted reason and goes on
//! forwarding.
//!
//! What the kernel filters first (checked here on 6.x): a TAP hands the reader a
//! virtio header it rebuilds from the skb (`virtio_net_hdr_from_skb`), so unknown flag
//! bits and a missing NEEDS_CSUM on GSO never arrive, and `virtio_net_hdr_to_skb`
//! refuses a checksum outside the frame, a GSO type of the wrong IP version and ECN on
//! UDP at send time. What arrives unfiltered is the frame itself, and absurd
//! segmentation requests (gso_size 1).

mod common;

use common::inject::{ipv4_frame, send_frames, tcp, vnet};
use common::traffic::tcp_exchange;
use common::{drops_in, Topology, ADDR_B};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The A → B direction's counters.
fn a_to_b(stats: &Value) -> &Value {
    let name = stats["ports"][0].as_str().unwrap().to_string()
        + " -> "
        + stats["ports"][1].as_str().unwrap();
    &stats["directions"][name]
}

/// Polls the forwarder's stats until `done` holds (frames are read asynchronously).
fn wait_for(topo: &mut Topology, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let stats = topo.fwd().stats();
        if done(&stats) || Instant::now() > deadline {
            return stats;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn malformed_frames_are_dropped_by_reason_and_forwarding_goes_on() {
    let mut topo = Topology::vm2vm("m", "gso", "csum+tso4+tso6+uso", "csum");
    let mut bad_version = ipv4_frame(6, &tcp(&[7; 40]), None);
    bad_version[14] = 0x65;
    let mut short_ihl = ipv4_frame(6, &tcp(&[7; 40]), None);
    short_ihl[14] = 0x43;
    let frames = vec![
        [
            vnet(0, 0, 0, 0, 0, 0),
            ipv4_frame(6, &tcp(&[7; 40]), Some(1000)),
        ]
        .concat(),
        [vnet(0, 0, 0, 0, 0, 0), bad_version].concat(),
        [vnet(0, 0, 0, 0, 0, 0), short_ihl].concat(),
        // TCPv4 GSO of 1000 bytes in 1-byte segments: the kernel takes it, the engine
        // refuses to make 1000 segments.
        [
            vnet(1, 1, 54, 1, 34, 16),
            ipv4_frame(6, &tcp(&[7; 1000]), None),
        ]
        .concat(),
    ];
    let accepted = send_frames(&topo.a, "ofl-ta", frames);
    assert_eq!(
        accepted,
        vec![true; 4],
        "the kernel refused a frame meant for the forwarder"
    );

    let stats = wait_for(&mut topo, |s| {
        a_to_b(s)["dropped"].as_u64().unwrap_or(0) >= 4
    });
    let drops = &a_to_b(&stats)["drops"];
    assert_eq!(drops["parse"]["truncated"], 1, "{stats:#}");
    assert_eq!(drops["parse"]["bad ip version"], 1, "{stats:#}");
    assert_eq!(drops["parse"]["bad header length"], 1, "{stats:#}");
    assert_eq!(drops["gso"]["too many segments"], 1, "{stats:#}");

    tcp_exchange(&topo.a, &topo.b, ADDR_B, 1 << 20, 1 << 20);
    let (status, last) = topo.stop();
    assert_eq!(status.code(), Some(0));
    assert_eq!(drops_in(&last, "parse"), 3, "{last:#}");
    assert_eq!(drops_in(&last, "virtio"), 0, "{last:#}");
}
