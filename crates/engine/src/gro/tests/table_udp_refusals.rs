//! UDP, checksum and refusal rules, and the table itself (eviction, age, order).

use super::builder::{self, Pkt};
use super::{reason, Harness};
use crate::gro::{GroConfig, Held, Reason};

#[test]
fn udp_segment_cap_64() {
    let mut h = Harness::new();
    for i in 0..65 {
        h.push(&Pkt {
            id: 100 + i,
            ..Pkt::udp4(100)
        })
        .unwrap();
    }
    assert_eq!(h.segments(), vec![64]);
    h.flush();
    assert_eq!(h.segments(), vec![64, 1]);
    let o = &h.out[0];
    assert_eq!((o.gso_type, o.gso_size, o.csum_offset), (5, 100, 6));
    let merged = h.packet(0);
    assert_eq!(
        u16::from_be_bytes([merged[38], merged[39]]) as usize,
        8 + 6400
    );
    assert_eq!(h.gro.stats().ended(Reason::SegmentCap), 1);
}

#[test]
fn udp_shorter_last_datagram_ends_the_run_and_longer_restarts() {
    let mut h = Harness::new();
    h.push(&Pkt::udp6(200)).unwrap();
    h.push(&Pkt::udp6(200)).unwrap();
    assert_eq!(
        h.push(&Pkt::udp6(300)),
        Ok(Held::Restarted {
            ended_by: Reason::SizeDiffers
        })
    );
    assert_eq!(h.push(&Pkt::udp6(100)), Ok(Held::Merged));
    assert_eq!(h.segments(), vec![2, 2]);
    assert_eq!(h.gro.stats().ended(Reason::SizeDiffers), 1);
    assert_eq!(h.gro.stats().ended(Reason::ShortSegment), 1);
}

#[test]
fn udp_zero_checksum_is_refused() {
    let mut h = Harness::new();
    assert_eq!(
        reason(h.push(&Pkt {
            zero_udp_checksum: true,
            ..Pkt::udp4(100)
        })),
        Reason::UdpZeroChecksum
    );
}

#[test]
fn bad_ipv4_header_checksum() {
    let mut h = Harness::new();
    h.validated = true;
    assert_eq!(
        reason(h.push(&Pkt {
            bad_ip_checksum: true,
            ..Pkt::tcp4(0, 100)
        })),
        Reason::BadIpChecksum
    );
}

#[test]
fn bad_tcp_checksum_when_not_validated() {
    let mut h = Harness::new();
    let bad = Pkt {
        bad_l4_checksum: true,
        ..Pkt::tcp4(0, 100)
    };
    assert_eq!(reason(h.push(&bad)), Reason::BadL4Checksum);
    h.validated = true;
    assert_eq!(
        h.push(&bad),
        Ok(Held::NewFlow),
        "validated checksums are not checked again"
    );
    let mut h = Harness::new();
    assert_eq!(
        reason(h.push(&Pkt {
            bad_l4_checksum: true,
            ..Pkt::udp6(10)
        })),
        Reason::BadL4Checksum
    );
}

#[test]
fn ip_options_and_fragments_are_refused() {
    let mut h = Harness::new();
    assert_eq!(
        reason(h.push(&Pkt {
            ip_options: true,
            ..Pkt::tcp4(0, 100)
        })),
        Reason::IpOptions
    );
    let mut frame = Pkt::tcp4(0, 100).build();
    frame[20] |= 0x20; // MF
    fix_ipv4_checksum(&mut frame);
    assert_eq!(reason(h.push_frame(frame)), Reason::Fragment);
    let mut padded = Pkt::tcp4(0, 2).build();
    padded.extend_from_slice(&[0; 6]);
    assert_eq!(reason(h.push_frame(padded)), Reason::Padded);
    assert_eq!(
        reason(h.push_frame(vec![1, 2, 3])),
        Reason::Unparseable(crate::wire::ParseError::Truncated {
            layer: crate::wire::Layer::Ethernet
        })
    );
}

fn fix_ipv4_checksum(frame: &mut [u8]) {
    frame[24..26].copy_from_slice(&[0, 0]);
    let c = builder::finish(builder::sum(&frame[14..34], 0));
    frame[24..26].copy_from_slice(&c.to_be_bytes());
}

#[test]
fn different_flows_interleave_without_mixing() {
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    let b = Pkt {
        sport: 1001,
        ..Pkt::tcp4(5000, 100)
    };
    let c = Pkt {
        vlan: Some(7),
        ..Pkt::tcp4(0, 100)
    };
    let (mut a2, mut b2, mut c2) = (a.clone(), b.clone(), c.clone());
    for _ in 0..3 {
        h.push(&a2).unwrap();
        h.push(&b2).unwrap();
        h.push(&c2).unwrap();
        a2 = a2.next(100);
        b2 = b2.next(100);
        c2 = c2.next(100);
    }
    h.flush();
    assert_eq!(h.segments(), vec![3, 3, 3]);
    for (i, o) in h.out.iter().enumerate() {
        assert!(
            o.parts.iter().all(|p| p.id as usize % 3 == i),
            "run {i} mixes flows"
        );
    }
}

#[test]
fn table_full_evicts_oldest() {
    let mut h = Harness::with(GroConfig {
        max_flows: 2,
        ..GroConfig::default()
    });
    for port in 0..3 {
        h.push(&Pkt {
            sport: port,
            ..Pkt::tcp4(0, 100)
        })
        .unwrap();
    }
    assert_eq!(h.segments(), vec![1]);
    assert_eq!(h.out[0].parts[0].id, 0, "the oldest flow goes first");
    assert_eq!(h.gro.stats().ended(Reason::TableFull), 1);
    assert_eq!(h.gro.held_flows(), 2);
}

#[test]
fn flush_older_than() {
    let mut h = Harness::new();
    h.now = 10;
    h.push(&Pkt {
        sport: 1,
        ..Pkt::tcp4(0, 100)
    })
    .unwrap();
    h.now = 20;
    h.push(&Pkt {
        sport: 2,
        ..Pkt::tcp4(0, 100)
    })
    .unwrap();
    let out = &mut h.out;
    h.gro
        .flush_older_than(25, 10, &mut |m| out.push(super::copy(&m)));
    assert_eq!(h.segments(), vec![1], "only the run opened at 10 is 10 old");
    let out = &mut h.out;
    h.gro
        .flush_older_than(30, 10, &mut |m| out.push(super::copy(&m)));
    assert_eq!(h.segments(), vec![1, 1]);
    assert_eq!(h.gro.stats().flushed_aged, 2);
    assert_eq!(h.gro.held_flows(), 0);
}

#[test]
fn refused_packet_of_a_held_flow_delivers_the_run_first() {
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    h.push(&a).unwrap();
    h.push(&a.next(100)).unwrap();
    assert_eq!(reason(h.push(&Pkt::tcp4(200, 0))), Reason::NoPayload);
    assert_eq!(h.segments(), vec![2]);
}
