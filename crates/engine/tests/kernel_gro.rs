//! GRO differential test: the same batch of wire frames is coalesced by the Linux kernel
//! and by `offlab_engine::gro`, and the delivered packets are compared.
//!
//! Kernel path (namespace A → namespace B): AF_PACKET `sendmmsg` of the whole batch on
//! veth ofl-a (TSO off, so veth hands frames to the peer's NAPI) → veth ofl-b with GRO
//! on and `gro_flush_timeout` 20 ms (held packets survive the end of each NAPI poll and
//! are flushed when the jiffy changes or the timer fires) → AF_PACKET with
//! PACKET_VNET_HDR on ofl-b, which shows every delivered skb with the virtio header the
//! kernel derives from it (gso_type, gso_size, NEEDS_CSUM/DATA_VALID, csum_start/offset).
//!
//! Engine path: `Gro::push` of every frame in the same order with
//! `csum_validated = false` (veth hands the kernel CHECKSUM_NONE frames, so it verifies
//! checksums itself), then `Gro::flush`. A refused frame is delivered unchanged.
//!
//! Compared: every delivered packet's bytes (headers with lengths, IPv4 header checksum
//! and the checksum-partial transport field; payload concatenation), and its virtio
//! flags, gso_type, gso_size, csum_start, csum_offset. Delivery order is compared per flow.
//! Named differences (counted, not failures): `hdr_len`, which the kernel fills with the
//! skb's linear length (a buffer-layout hint) and the engine with the header length.

#[path = "kernel/gro_corpus/mod.rs"]
mod corpus;
mod kernel;

use corpus::GroCase;
use kernel::diff::{self, Tally};
use kernel::netns::{veth_pair, Netns};
use kernel::sock::{PacketSocket, Received};
use kernel::vnet::{self, VnetHdr};
use offlab_engine::gro::{Gro, GroConfig, Merged, Reason, RxMeta};
use offlab_engine::wire::parse::parse_frame;
use std::time::Duration;

/// Longer than `gro_flush_timeout`: after this much silence every run has been flushed.
const QUIET: Duration = Duration::from_millis(100);
const FLUSH_TIMEOUT_NS: &str = "20000000";
/// A kernel run can be cut by a jiffy boundary falling inside the batch (the age-based
/// flush at the end of a NAPI poll). Such a split is a timing artefact, not a rule, so
/// a case that differs is sent again, up to this many times in all.
const ATTEMPTS: usize = 3;

/// What namespace B needs besides a veth with GRO on.
#[derive(Clone, Copy)]
struct Extra {
    /// `rx-udp-gro-forwarding`: the kernel coalesces UDP that no local socket asked for
    /// (the engine always coalesces UDP: its user is a forwarder).
    udp_forwarding: bool,
    /// A VXLAN device (port 4789, external mode: IPv4 and IPv6 sockets), whose socket
    /// gives GRO its tunnel hook.
    vxlan: bool,
}

struct GroLab {
    sender: PacketSocket,
    receiver: PacketSocket,
    _b: Netns,
    _a: Netns,
}

impl GroLab {
    fn new(tag: &str, extra: Extra) -> GroLab {
        let a = Netns::create(&format!("{tag}a"));
        let b = Netns::create(&format!("{tag}b"));
        veth_pair(&a, "ofl-a", &b, "ofl-b");
        b.ip(&["link", "set", "ofl-b", "address", corpus::DST_MAC_TEXT]);
        // veth passes frames to the peer's NAPI (where GRO runs) only when the sending
        // device has no TSO; otherwise it assumes the stack already built big packets.
        a.ethtool_features("ofl-a", &[("tso", false)]);
        b.ethtool_features("ofl-b", &[("gro", true)]);
        if extra.udp_forwarding {
            b.ethtool_features("ofl-b", &[("rx-udp-gro-forwarding", true)]);
        }
        b.write_sysfs("ofl-b", "gro_flush_timeout", FLUSH_TIMEOUT_NS);
        a.ip(&["link", "set", "ofl-a", "up"]);
        b.ip(&["link", "set", "ofl-b", "up"]);
        if extra.vxlan {
            b.ip(&["addr", "add", "10.3.0.2/24", "dev", "ofl-b"]);
            b.ip(&[
                "link", "add", "ofl-vx", "type", "vxlan", "external", "dstport", "4789",
            ]);
            b.ip(&["link", "set", "ofl-vx", "up"]);
        }
        let sender = a
            .enter(|| PacketSocket::bind("ofl-a", false))
            .expect("bind sender");
        let receiver = b
            .enter(|| PacketSocket::bind("ofl-b", true))
            .expect("bind receiver");
        GroLab {
            sender,
            receiver,
            _b: b,
            _a: a,
        }
    }

    fn kernel_delivers(&self, case: &GroCase) -> Vec<Delivered> {
        self.receiver.drain().expect("drain");
        self.sender.send_batch(&case.frames).expect("sendmmsg");
        let ours = |r: &Received| {
            r.bytes.get(vnet::BASE_LEN + 6..vnet::BASE_LEN + 12) == Some(&corpus::SRC_MAC[..])
        };
        let got = self
            .receiver
            .collect(ours, QUIET, Duration::from_secs(5))
            .expect("receive");
        got.into_iter()
            .map(|r| {
                let mut vnet = VnetHdr::decode(&r.bytes);
                // The stack keeps a VLAN tag as metadata; offsets the kernel reports
                // are then relative to the untagged frame.
                if r.vlan.is_some() && vnet.flags & vnet::F_NEEDS_CSUM != 0 {
                    vnet.csum_start += 4;
                }
                Delivered {
                    vnet,
                    frame: r.wire_frame(vnet::BASE_LEN),
                    refused: None,
                }
            })
            .collect()
    }
}

/// One packet as delivered to the stack.
#[derive(Debug, Clone)]
struct Delivered {
    vnet: VnetHdr,
    frame: Vec<u8>,
    /// Engine only: the frame was handed back unchanged, for this reason.
    refused: Option<Reason>,
}

fn engine_delivers(case: &GroCase) -> Vec<Delivered> {
    let mut gro = Gro::new(GroConfig::default());
    // Runs come out through the callback, refusals from `push`: one list keeps their
    // delivery order.
    let out = std::cell::RefCell::new(Vec::new());
    let frames = &case.frames;
    let mut collect = |m: Merged<'_>| {
        let mut frame = m.header.to_vec();
        for part in m.parts {
            let range = part.payload();
            frame.extend_from_slice(&frames[part.id as usize][range]);
        }
        // Through the wire encoding, so both sides are read by the same decoder.
        let vnet = VnetHdr::decode(&m.vnet.to_bytes());
        out.borrow_mut().push(Delivered {
            vnet,
            frame,
            refused: None,
        });
    };
    for (id, frame) in frames.iter().enumerate() {
        let meta = RxMeta {
            csum_validated: false,
            now: 0,
        };
        if let Err(refusal) = gro.push(id as u64, frame, meta, &mut collect) {
            // Handed back: forwarded as it is, marked DATA_VALID when the kernel would
            // have verified its transport checksum before refusing it.
            let reason = refusal.reason();
            let flags = if checked_before_refusal(reason) {
                vnet::F_DATA_VALID
            } else {
                0
            };
            let vnet = VnetHdr {
                flags,
                ..VnetHdr::default()
            };
            out.borrow_mut().push(Delivered {
                vnet,
                frame: frame.clone(),
                refused: Some(reason),
            });
        }
    }
    gro.flush(&mut collect);
    out.into_inner()
}

/// Whether the kernel verifies the transport checksum before it refuses a packet for
/// `reason` (then the packet reaches the stack as CHECKSUM_UNNECESSARY, DATA_VALID).
/// Refusals decided in the IP layer, or by the checksum itself, come first.
fn checked_before_refusal(reason: Reason) -> bool {
    !matches!(
        reason,
        Reason::Unparseable(_)
            | Reason::NotTcpOrUdp
            | Reason::TunnelUnsupported
            | Reason::IpOptions
            | Reason::Fragment
            | Reason::Padded
            | Reason::HeaderTooLong
            | Reason::BadIpChecksum
            | Reason::BadL4Checksum
    )
}

/// Addresses and ports of the innermost flow (the unit whose order GRO must keep).
fn flow_key(frame: &[u8]) -> Vec<u8> {
    let Ok(layout) = parse_frame(frame) else {
        return frame.to_vec();
    };
    let ip = &layout.ip;
    let addrs = match frame[ip.offset] >> 4 {
        4 => ip.offset + 12..ip.offset + 20,
        _ => ip.offset + 8..ip.offset + 40,
    };
    let mut key = frame[addrs].to_vec();
    key.extend_from_slice(&frame[ip.l4_offset..ip.l4_offset + 4]);
    key
}

/// What one attempt's comparison found.
#[derive(Default)]
struct Outcome {
    /// Packets with no identical twin on the other side, or with a different virtio header.
    content: Vec<String>,
    /// Packets of one flow delivered in a different order.
    order: Vec<String>,
    /// Matched packets whose virtio `hdr_len` differs (a named difference).
    hdr_len_hints: usize,
}

impl Outcome {
    fn is_clean(&self) -> bool {
        self.content.is_empty() && self.order.is_empty()
    }
}

fn compare(kernel: &[Delivered], engine: &[Delivered]) -> Outcome {
    let mut found = Outcome::default();
    let mut used = vec![false; engine.len()];
    let mut unmatched_kernel = Vec::new();
    let mut order: Vec<(Vec<u8>, usize)> = Vec::new();
    for (ki, k) in kernel.iter().enumerate() {
        let Some(ei) = (0..engine.len()).find(|&i| !used[i] && engine[i].frame == k.frame) else {
            unmatched_kernel.push(ki);
            continue;
        };
        used[ei] = true;
        let e = &engine[ei];
        let fields = |h: &VnetHdr| (h.flags, h.gso_type, h.gso_size, h.csum_start, h.csum_offset);
        if fields(&k.vnet) != fields(&e.vnet) {
            found.content.push(format!(
                "kernel packet {ki} ({} bytes): virtio header differs: kernel {:?}, engine {:?} (refused: {:?})",
                k.frame.len(),
                k.vnet,
                e.vnet,
                e.refused
            ));
        } else if k.vnet.hdr_len != e.vnet.hdr_len && e.refused.is_none() {
            found.hdr_len_hints += 1;
        }
        order.push((flow_key(&k.frame), ei));
    }
    for (i, (key, ei)) in order.iter().enumerate() {
        if let Some((_, later)) = order[i + 1..].iter().find(|(k2, _)| k2 == key) {
            if later < ei {
                found.order.push(format!("one flow delivered in another order (kernel's next is engine output {later}, after {ei})"));
            }
        }
    }
    let unmatched_engine: Vec<usize> = (0..engine.len()).filter(|&i| !used[i]).collect();
    for (n, &ki) in unmatched_kernel.iter().enumerate() {
        let k = &kernel[ki];
        let detail = match unmatched_engine.get(n) {
            Some(&ei) => diff::bytes(&k.frame, &engine[ei].frame).unwrap_or_default(),
            None => "no engine packet left".into(),
        };
        found.content.push(format!(
            "kernel packet {ki} ({} bytes, {:?}) has no engine twin: {detail}",
            k.frame.len(),
            k.vnet
        ));
    }
    for &ei in unmatched_engine.iter().skip(unmatched_kernel.len()) {
        let e = &engine[ei];
        found.content.push(format!(
            "engine packet {ei} ({} bytes, {:?}, refused {:?}) has no kernel twin",
            e.frame.len(),
            e.vnet,
            e.refused
        ));
    }
    if kernel.len() != engine.len() {
        let sizes = |v: &[Delivered]| v.iter().map(|d| d.frame.len()).collect::<Vec<_>>();
        found.content.push(format!(
            "kernel delivered {:?}, engine {:?}",
            sizes(kernel),
            sizes(engine)
        ));
    }
    found
}

/// A case where the engine knowingly differs from this kernel: what differs and why,
/// and a check that the observed difference is exactly that and nothing else.
struct Known {
    case: &'static str,
    why: &'static str,
    holds: fn(&[Delivered], &[Delivered], &Outcome) -> bool,
}

const KNOWN: &[Known] = &[
    Known {
        case: "tcp4 fixed IP ID without DF",
        why: "Linux 6.18 merges a fixed IPv4 ID without DF (commit \"net: gro: remove unnecessary df checks\"); \
              the engine keeps the earlier rule, fixed ID only with DF (ARCHITECTURE.md), and delivers each packet alone",
        holds: |kernel, engine, _| {
            kernel.len() == 1
                && kernel[0].vnet.gso_type == vnet::GSO_TCPV4
                && engine.len() > 1
                && engine.iter().all(|e| e.vnet.gso_type == vnet::GSO_NONE)
                && payload_stream(kernel) == payload_stream(engine)
        },
    },
    Known {
        case: "tcp4 bad TCP checksum mid-run",
        why: BAD_PACKET_OVERTAKES,
        holds: bad_packet_overtakes,
    },
    Known {
        case: "tcp4 bad IPv4 header checksum mid-run",
        why: BAD_PACKET_OVERTAKES,
        holds: bad_packet_overtakes,
    },
    Known {
        case: "udp4 bad UDP checksum mid-run",
        why: BAD_PACKET_OVERTAKES,
        holds: bad_packet_overtakes,
    },
    Known {
        case: "tcp4 run in 802.1Q VLAN 100",
        why: "this kernel is built without CONFIG_VLAN_8021Q, so it has no GRO for tagged frames and delivers \
              each alone; the engine coalesces within a VLAN (the tag is part of the flow)",
        holds: |kernel, engine, _| {
            !kernel_has_vlan_gro()
                && kernel.iter().all(|k| k.vnet.gso_type == vnet::GSO_NONE)
                && engine.len() == 1
                && payload_stream(kernel) == payload_stream(engine)
        },
    },
    Known {
        case: "tcp4 100 segments of 500 bytes (kernel caps bytes, not segments)",
        why: "the engine ends a TCP run at GroConfig::max_segments_tcp (64 by default); the kernel caps a run \
              by bytes only (65535), so below a 1 KiB MSS it merges more segments into one packet",
        holds: |kernel, engine, _| {
            kernel.len() < engine.len()
                && engine.iter().all(|e| e.frame.len() <= 54 + 64 * 500)
                && payload_stream(kernel) == payload_stream(engine)
        },
    },
];

/// Whether the running kernel was built with 802.1Q support (which brings VLAN GRO).
fn kernel_has_vlan_gro() -> bool {
    let config = std::process::Command::new("zcat")
        .arg("/proc/config.gz")
        .output();
    config.is_ok_and(|out| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.starts_with("CONFIG_VLAN_8021Q="))
    })
}

const BAD_PACKET_OVERTAKES: &str = "the kernel delivers a packet that fails validation (IPv4 header or transport \
     checksum) at once and keeps the flow's held run, so the bad packet overtakes it; the engine delivers the \
     held run first (a flow is never reordered)";

/// Same packets on both sides, only the order differs, and the kernel's first delivery
/// is the engine's refused bad packet, unmarked.
fn bad_packet_overtakes(kernel: &[Delivered], engine: &[Delivered], outcome: &Outcome) -> bool {
    let is_bad = |e: &&Delivered| {
        matches!(
            e.refused,
            Some(Reason::BadL4Checksum | Reason::BadIpChecksum)
        )
    };
    let bad = engine.iter().find(is_bad);
    outcome.content.is_empty()
        && !outcome.order.is_empty()
        && bad.is_some_and(|b| {
            kernel
                .first()
                .is_some_and(|k| k.frame == b.frame && k.vnet.flags == 0)
        })
}

/// The transport payload bytes of every delivered packet, concatenated in order.
fn payload_stream(delivered: &[Delivered]) -> Vec<u8> {
    let mut out = Vec::new();
    for d in delivered {
        if let Ok(layout) = parse_frame(&d.frame) {
            out.extend_from_slice(&d.frame[layout.payload()]);
        }
    }
    out
}

const HDR_LEN_HINT: &str = "virtio hdr_len: the kernel reports the skb's linear length (a buffer hint), the engine the header length";

fn run(test: &str, tag: &str, extra: Extra, cases: Vec<GroCase>) {
    if kernel::skip_unless_root(test) {
        return;
    }
    let lab = GroLab::new(tag, extra);
    let mut tally = Tally::default();
    let mut reruns = 0;
    for case in &cases {
        let engine = engine_delivers(case);
        let known = KNOWN.iter().find(|k| k.case == case.name);
        tally.cases += 1;
        tally.packets_in += case.frames.len();
        for attempt in 1..=ATTEMPTS {
            let kernel = lab.kernel_delivers(case);
            let outcome = compare(&kernel, &engine);
            let explained = known.is_some_and(|k| (k.holds)(&kernel, &engine, &outcome));
            if !(outcome.is_clean() || explained) && attempt < ATTEMPTS {
                reruns += 1;
                continue;
            }
            tally.packets_compared += kernel.len();
            tally.name(HDR_LEN_HINT, outcome.hdr_len_hints);
            match known {
                Some(k) if explained => tally.name(k.why, 1),
                Some(k) if outcome.is_clean() => println!(
                    "[{}] kernel and engine agree here ({} does not show)",
                    case.name, k.why
                ),
                Some(k) => tally.fail(
                    &case.name,
                    format!("the named difference did not show as described ({})", k.why),
                ),
                None => {}
            }
            if !explained {
                for problem in outcome.content.into_iter().chain(outcome.order) {
                    tally.fail(&case.name, problem);
                }
            }
            break;
        }
    }
    println!("{test}: {reruns} kernel re-runs after a differing attempt");
    tally.finish(test);
}

#[test]
fn gro_tcp_matches_kernel() {
    run(
        "gro_tcp_matches_kernel",
        "rt",
        Extra {
            udp_forwarding: false,
            vxlan: false,
        },
        corpus::tcp_cases(),
    );
}

#[test]
fn gro_udp_matches_kernel() {
    run(
        "gro_udp_matches_kernel",
        "ru",
        Extra {
            udp_forwarding: true,
            vxlan: false,
        },
        corpus::udp_cases(),
    );
}

#[test]
fn gro_vxlan_matches_kernel() {
    run(
        "gro_vxlan_matches_kernel",
        "rv",
        Extra {
            udp_forwarding: true,
            vxlan: true,
        },
        corpus::vxlan_cases(),
    );
}
