//! Plain TCP/UDP rules.

use super::builder::{self, Pkt, ACK, CWR, FIN, PSH, RST, SYN, URG};
use super::{reason, Harness};
use crate::gro::{FlushCause, Held, Reason};

/// Three 100-byte segments, each the next of the previous.
fn run_of(first: Pkt, n: usize) -> Vec<Pkt> {
    let mut v = vec![first];
    while v.len() < n {
        let next = v.last().unwrap().next(100);
        v.push(next);
    }
    v
}

#[test]
fn contiguous_segments_merge_into_one_checksum_partial_packet() {
    let mut h = Harness::new();
    let pkts = run_of(Pkt::tcp4(1000, 100), 3);
    assert_eq!(h.push(&pkts[0]), Ok(Held::NewFlow));
    assert_eq!(h.push(&pkts[1]), Ok(Held::Merged));
    assert_eq!(h.push(&pkts[2]), Ok(Held::Merged));
    h.flush();
    assert_eq!(h.segments(), vec![3]);
    let o = &h.out[0];
    assert_eq!(
        (o.gso_size, o.gso_type, o.csum_start, o.csum_offset),
        (100, 1, 34, 16)
    );
    let merged = h.packet(0);
    let hdr = 14 + 20 + 32;
    assert_eq!(merged.len(), hdr + 300);
    // IPv4 total length and header checksum.
    assert_eq!(
        u16::from_be_bytes([merged[16], merged[17]]) as usize,
        20 + 32 + 300
    );
    assert_eq!(builder::sum(&merged[14..34], 0), 0xffff);
    // The transport checksum is the pseudo-header seed: completing it gives a valid sum.
    let seed = u16::from_be_bytes([merged[34 + 16], merged[34 + 17]]);
    let mut l4 = merged[34..].to_vec();
    l4[16..18].copy_from_slice(&[0, 0]);
    let full = builder::finish(builder::sum(&l4, u32::from(seed)));
    l4[16..18].copy_from_slice(&full.to_be_bytes());
    let mut expected = pkts[0].clone();
    expected.payload = pkts.iter().flat_map(|p| p.payload.clone()).collect();
    assert_eq!(&merged[34 + 20..], &expected.build()[34 + 20..]);
    assert_eq!(
        builder::finish(builder::sum(&l4, expected_pseudo_v4(l4.len()))),
        0
    );
    assert_eq!(h.gro.stats().merged, 2);
    assert_eq!(h.gro.stats().flushed_explicit, 1);
}

fn expected_pseudo_v4(len: usize) -> u32 {
    let mut p = vec![10, 0, 0, 1, 10, 0, 0, 2, 0, 6];
    p.extend_from_slice(&(len as u16).to_be_bytes());
    builder::sum(&p, 0)
}

#[test]
fn single_packet_comes_out_unchanged_with_data_valid() {
    let mut h = Harness::new();
    let p = Pkt::tcp4(1, 100);
    h.push(&p).unwrap();
    h.flush();
    assert_eq!(h.segments(), vec![1]);
    assert_eq!(h.packet(0), p.build());
    assert_eq!((h.out[0].gso_type, h.out[0].flags), (0, 2));
}

#[test]
fn unequal_ttl() {
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    let b = Pkt {
        ttl: 63,
        ..a.next(100)
    };
    assert_eq!(h.push(&a), Ok(Held::NewFlow), "the first packet of a flow");
    assert_eq!(
        h.push(&b),
        Ok(Held::Restarted {
            ended_by: Reason::TtlDiffers
        }),
        "a mismatch ends the run: not a new flow"
    );
    h.flush();
    assert_eq!(h.segments(), vec![1, 1]);
    assert_eq!(h.gro.stats().ended(Reason::TtlDiffers), 1);
    // Each delivered run says why it ended.
    assert_eq!(h.out[0].end, FlushCause::Rule(Reason::TtlDiffers));
    assert_eq!(h.out[1].end, FlushCause::Explicit);
}

#[test]
fn delivered_runs_carry_their_end_reason() {
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    h.push(&a).unwrap();
    h.push(&a.next(100)).unwrap();
    let psh = Pkt {
        flags: ACK | PSH,
        ..a.next(100).next(100)
    };
    assert_eq!(h.push(&psh), Ok(Held::Merged));
    let b = a.next(100).next(100).next(100);
    assert_eq!(h.push(&b), Ok(Held::NewFlow), "its run was delivered by PSH: a new flow");
    let ack = Pkt {
        ack: b.ack.wrapping_add(1),
        ..b.next(100)
    };
    assert_eq!(
        h.push(&ack),
        Ok(Held::Restarted {
            ended_by: Reason::AckDiffers
        })
    );
    h.flush();
    let ends: Vec<FlushCause> = h.out.iter().map(|o| o.end).collect();
    assert_eq!(
        ends,
        vec![
            FlushCause::Rule(Reason::PshEnd),
            FlushCause::Rule(Reason::AckDiffers),
            FlushCause::Explicit
        ]
    );
}

#[test]
fn unequal_tos_and_df() {
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    h.push(&a).unwrap();
    h.push(&Pkt {
        tos: 4,
        ..a.next(100)
    })
    .unwrap();
    let c = Pkt {
        tos: 4,
        df: false,
        ..a.next(100).next(100)
    };
    h.push(&c).unwrap();
    assert_eq!(h.gro.stats().ended(Reason::TosDiffers), 1);
    assert_eq!(h.gro.stats().ended(Reason::DfDiffers), 1);
}

#[test]
fn psh_mid_run_ends_the_run() {
    let mut h = Harness::new();
    let pkts = run_of(Pkt::tcp4(0, 100), 3);
    h.push(&pkts[0]).unwrap();
    assert_eq!(
        h.push(&Pkt {
            flags: ACK | PSH,
            ..pkts[1].clone()
        }),
        Ok(Held::Merged)
    );
    assert_eq!(h.segments(), vec![2], "PSH delivers the run at once");
    assert_eq!(h.out[0].header[34 + 13], ACK | PSH);
    h.push(&pkts[2]).unwrap();
    h.flush();
    assert_eq!(h.segments(), vec![2, 1]);
    assert_eq!(h.gro.stats().ended(Reason::PshEnd), 1);
}

#[test]
fn psh_alone_is_not_held() {
    let mut h = Harness::new();
    assert_eq!(
        reason(h.push(&Pkt {
            flags: ACK | PSH,
            ..Pkt::tcp4(0, 100)
        })),
        Reason::Psh
    );
    assert!(h.out.is_empty());
}

#[test]
fn fin() {
    let mut h = Harness::new();
    let pkts = run_of(Pkt::tcp4(0, 100), 2);
    h.push(&pkts[0]).unwrap();
    assert_eq!(
        h.push(&Pkt {
            flags: ACK | FIN,
            ..pkts[1].clone()
        }),
        Ok(Held::Merged)
    );
    assert_eq!(h.segments(), vec![2]);
    assert_eq!(h.out[0].header[34 + 13], ACK | FIN);
    assert_eq!(h.gro.stats().ended(Reason::FinEnd), 1);
}

#[test]
fn syn_never_merged() {
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    h.push(&a).unwrap();
    assert_eq!(
        reason(h.push(&Pkt {
            flags: SYN | ACK,
            ..a.next(100)
        })),
        Reason::Syn
    );
    assert_eq!(
        h.segments(),
        vec![1],
        "the held run goes out before the refused packet"
    );
    assert_eq!(
        reason(h.push(&Pkt {
            flags: RST | ACK,
            ..Pkt::tcp4(0, 10)
        })),
        Reason::Rst
    );
    assert_eq!(
        reason(h.push(&Pkt {
            flags: URG | ACK,
            ..Pkt::tcp4(0, 10)
        })),
        Reason::Urg
    );
    assert_eq!(
        reason(h.push(&Pkt {
            flags: 0,
            ..Pkt::tcp4(0, 10)
        })),
        Reason::NoAck
    );
    assert_eq!(reason(h.push(&Pkt::tcp4(0, 0))), Reason::NoPayload);
    assert_eq!(h.gro.stats().refused(Reason::Syn), 1);
}

#[test]
fn cwr_is_delivered_alone_after_the_run() {
    // Linux 6.18 (tests/kernel_gro.rs): the run goes out, then the CWR segment alone,
    // then the following segments form a new run.
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    let b = a.next(100);
    let c = Pkt {
        flags: ACK | CWR,
        ..b.next(100)
    };
    let d = Pkt {
        flags: ACK,
        ..c.next(100)
    };
    h.push(&a).unwrap();
    h.push(&b).unwrap();
    assert_eq!(reason(h.push(&c)), Reason::Cwr);
    assert_eq!(
        h.segments(),
        vec![2],
        "the held run goes out before the CWR segment"
    );
    assert_eq!(h.push(&d), Ok(Held::NewFlow));
    assert_eq!(h.push(&d.next(100)), Ok(Held::Merged));
    h.flush();
    assert_eq!(h.segments(), vec![2, 2]);
    assert_eq!(
        reason(h.push(&Pkt {
            flags: ACK | CWR,
            ..Pkt::tcp4(0, 100)
        })),
        Reason::Cwr
    );
}

#[test]
fn options_differ() {
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    let mut b = a.next(100);
    b.tcp_options[11] = 9;
    h.push(&a).unwrap();
    h.push(&b).unwrap();
    let c = Pkt {
        tcp_options: vec![],
        ..b.next(100)
    };
    h.push(&c).unwrap();
    assert_eq!(h.gro.stats().ended(Reason::OptionsDiffer), 2);
}

#[test]
fn window_differs() {
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    h.push(&a).unwrap();
    h.push(&Pkt {
        window: 1,
        ..a.next(100)
    })
    .unwrap();
    assert_eq!(h.gro.stats().ended(Reason::WindowDiffers), 1);
}

#[test]
fn ack_differs() {
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    h.push(&a).unwrap();
    h.push(&Pkt {
        ack: 78,
        ..a.next(100)
    })
    .unwrap();
    assert_eq!(h.gro.stats().ended(Reason::AckDiffers), 1);
}

#[test]
fn ece_differs() {
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    h.push(&a).unwrap();
    h.push(&Pkt {
        flags: ACK | builder::ECE,
        ..a.next(100)
    })
    .unwrap();
    assert_eq!(h.gro.stats().ended(Reason::FlagsDiffer), 1);
}

#[test]
fn sequence_gap_is_not_contiguous() {
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    let mut b = a.next(100);
    b.seq += 1;
    h.push(&a).unwrap();
    h.push(&b).unwrap();
    assert_eq!(h.gro.stats().ended(Reason::NotContiguous), 1);
}

#[test]
fn ip_id_jump() {
    let mut h = Harness::new();
    let a = Pkt {
        df: false,
        ..Pkt::tcp4(0, 100)
    };
    let b = a.next(100);
    let c = Pkt {
        id: b.id + 2,
        ..b.next(100)
    };
    h.push(&a).unwrap();
    h.push(&b).unwrap();
    h.push(&c).unwrap();
    h.flush();
    assert_eq!(h.segments(), vec![2, 1]);
    assert_eq!(h.gro.stats().ended(Reason::IpIdNotSequential), 1);
}

#[test]
fn fixed_ip_id_with_df_merges() {
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    let b = Pkt {
        id: a.id,
        ..a.next(100)
    };
    let c = Pkt {
        id: a.id,
        ..b.next(100)
    };
    h.push(&a).unwrap();
    h.push(&b).unwrap();
    h.push(&c).unwrap();
    h.flush();
    assert_eq!(h.segments(), vec![3]);
    // Without DF a fixed ID is a jump.
    let mut h = Harness::new();
    let a = Pkt {
        df: false,
        ..Pkt::tcp4(0, 100)
    };
    h.push(&a).unwrap();
    h.push(&Pkt {
        id: a.id,
        ..a.next(100)
    })
    .unwrap();
    assert_eq!(h.gro.stats().ended(Reason::IpIdNotSequential), 1);
}

#[test]
fn ipv6_segments_merge() {
    let mut h = Harness::new();
    let pkts = run_of(Pkt::tcp6(5, 100), 4);
    for p in &pkts {
        h.push(p).unwrap();
    }
    h.flush();
    assert_eq!(h.segments(), vec![4]);
    let merged = h.packet(0);
    assert_eq!(
        u16::from_be_bytes([merged[18], merged[19]]) as usize,
        32 + 400
    );
    assert_eq!((h.out[0].gso_type, h.out[0].csum_start), (4, 54));
}

#[test]
fn ipv6_ext_headers_differ() {
    let mut h = Harness::new();
    let a = Pkt {
        ext: Some([1, 4, 0, 0, 0, 0]),
        ..Pkt::tcp6(0, 100)
    };
    let b = Pkt {
        ext: Some([1, 4, 0, 0, 0, 1]),
        ..a.next(100)
    };
    h.push(&a).unwrap();
    assert_eq!(
        h.push(&b),
        Ok(Held::NewFlow),
        "other extension headers: another flow"
    );
    h.push(&a.next(100)).unwrap();
    h.flush();
    assert_eq!(h.segments(), vec![2, 1]);
}

#[test]
fn ipv6_traffic_class_and_hop_limit_differ() {
    let mut h = Harness::new();
    let a = Pkt::tcp6(0, 100);
    h.push(&a).unwrap();
    h.push(&Pkt {
        tos: 8,
        ..a.next(100)
    })
    .unwrap();
    h.push(&Pkt {
        tos: 8,
        ttl: 1,
        ..a.next(100).next(100)
    })
    .unwrap();
    assert_eq!(h.gro.stats().ended(Reason::TrafficClassDiffers), 1);
    assert_eq!(h.gro.stats().ended(Reason::HopLimitDiffers), 1);
}

#[test]
fn flow_label_differs() {
    let mut h = Harness::new();
    let a = Pkt::tcp6(0, 100);
    h.push(&a).unwrap();
    assert_eq!(
        h.push(&Pkt {
            flow_label: 9,
            ..a.next(100)
        }),
        Ok(Held::NewFlow)
    );
    h.flush();
    assert_eq!(h.segments(), vec![1, 1]);
    assert_eq!(h.gro.stats().flows_opened, 2);
}

#[test]
fn shorter_last_segment_then_more_is_a_new_run() {
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    let b = a.next(60);
    let c = b.next(100);
    h.push(&a).unwrap();
    assert_eq!(h.push(&b), Ok(Held::Merged));
    assert_eq!(h.segments(), vec![2], "a short segment ends the run");
    assert_eq!(h.push(&c), Ok(Held::NewFlow));
    h.flush();
    assert_eq!(h.segments(), vec![2, 1]);
    assert_eq!(h.out[0].parts[1].payload().len(), 60);
    assert_eq!(h.gro.stats().ended(Reason::ShortSegment), 1);
}

#[test]
fn longer_segment_starts_a_new_run() {
    let mut h = Harness::new();
    let a = Pkt::tcp4(0, 100);
    h.push(&a).unwrap();
    assert_eq!(
        h.push(&a.next(101)),
        Ok(Held::Restarted {
            ended_by: Reason::SizeDiffers
        })
    );
    assert_eq!(h.gro.stats().ended(Reason::SizeDiffers), 1);
}

#[test]
fn cap_64_kib() {
    let mut h = Harness::new();
    let mut p = Pkt::tcp4(0, 1448);
    for _ in 0..46 {
        h.push(&p).unwrap();
        p = p.next(1448);
    }
    h.flush();
    // 20 + 32 + 45 × 1448 = 65212 ≤ 65535; a 46th segment would pass 65535.
    assert_eq!(h.segments(), vec![45, 1]);
    assert_eq!(h.gro.stats().ended(Reason::SizeCap), 1);
    assert_eq!(h.packet(0).len(), 14 + 65212);
}

/// A full-size segment that repeats its run's headers joins without being classified
/// (`plain::continues`): that join checks the IPv4 header checksum itself, and a bad
/// one is refused with the run delivered first, as the general path does; the other
/// representation of a zero checksum (0xffff for 0) still verifies.
#[test]
fn segment_with_a_bad_ip_checksum_is_refused_mid_run() {
    let mut h = Harness::new();
    h.validated = true;
    let pkts = run_of(Pkt::tcp4(1000, 100), 4);
    h.push(&pkts[0]).unwrap();
    assert_eq!(h.push(&pkts[1]), Ok(Held::Merged));
    let mut bad = pkts[2].build();
    bad[24] ^= 0x01;
    assert_eq!(reason(h.push_frame(bad)), Reason::BadIpChecksum);
    assert_eq!(h.segments(), vec![2], "the run went out first");

    // A run whose next segment's checksum comes out as 0 is sent as 0xffff.
    let mut h = Harness::new();
    h.validated = true;
    let mut head = Pkt::tcp4(1000, 100);
    let frame = |p: &Pkt| p.build();
    let id_for_zero = (0..=u16::MAX)
        .find(|&id| {
            let mut p = head.clone();
            p.id = id.wrapping_add(1);
            let f = frame(&p);
            f[24] == 0 && f[25] == 0
        })
        .expect("some ID gives a zero checksum");
    head.id = id_for_zero;
    let next = head.next(100);
    let mut other_zero = frame(&next);
    assert_eq!(&other_zero[24..26], &[0, 0]);
    other_zero[24..26].copy_from_slice(&[0xff, 0xff]);
    h.push(&head).unwrap();
    assert_eq!(h.push_frame(other_zero), Ok(Held::Merged));
    assert_eq!(h.push(&next.next(100)), Ok(Held::Merged));
}
