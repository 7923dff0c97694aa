//! GSO → GRO → GSO round trip on valid super-packets.
//!
//! From the input, a well-formed super-packet is built (TCP or UDP over IPv4 or IPv6,
//! optional VLAN tag, IPv6 Destination Options header, TCP options, plain or inside
//! VXLAN / Geneve over IPv4 or IPv6), cut by `gso::segment`, and every segment is
//! pushed, in order, through one `Gro`, then flushed. Linux GRO would give back the
//! super-packet itself, so:
//!
//! - exactly one packet comes out (two with CWR: Linux delivers the CWR segment alone),
//!   carrying every payload byte once, in order;
//! - once its checksum-partial fields are completed (the innermost transport checksum,
//!   and a present outer UDP checksum, as a NIC or the kernel would), the merged packet
//!   equals the original super-packet byte for byte: every header field restored;
//! - its virtio-net header describes the offload (GSO type, `gso_size` = the segment
//!   size, NEEDS_CSUM at the innermost transport checksum), validates against the
//!   packet, and segmenting the merged packet as that header says gives back exactly
//!   the segments of the first pass.
//!
//! Input layout: 40 bytes of fields (see `read`), then payload bytes (repeated to
//! the wanted length in "long" mode, so 64 KiB super-packets are reachable).
#![no_main]

#[path = "../../src/gro/tests/builder.rs"]
#[allow(dead_code, unused_imports)]
mod builder;

use builder::{Pkt, Tunnel, ACK, CWR, ECE, FIN, L4, PSH};
use libfuzzer_sys::fuzz_target;
use offlab_engine::checksum;
use offlab_engine::gro::{Gro, GroConfig, Merged, RxMeta};
use offlab_engine::gso::{self, GsoKind, GsoOutput, GsoParams, L4Checksum};
use offlab_engine::virtio::{ChecksumState, Flags, GsoType};
use offlab_engine::wire::{parse_frame, IpLayer, IpVersion, L4Proto, Layout};
use std::net::{Ipv4Addr, Ipv6Addr};

/// GRO's default caps: 64 segments per run, 65535 bytes of outermost IP packet.
const MAX_SEGMENTS: usize = 64;
const MAX_IP_LEN: usize = 65535;
const FIELDS: usize = 40;

struct Case {
    /// The super-packet.
    original: Vec<u8>,
    /// Its fields (`payload` left empty).
    pkt: Pkt,
    params: GsoParams,
    validated: bool,
}

fn read(input: &[u8]) -> Option<Case> {
    let (f, rest) = input.split_first_chunk::<FIELDS>()?;
    let u16_at = |at: usize| u16::from_le_bytes([f[at], f[at + 1]]);
    let u32_at = |at: usize| u32::from_le_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]]);
    let (shape, flags, misc) = (f[0], f[1], f[2]);

    let v6 = shape & 1 != 0;
    let l4 = if shape & 2 != 0 { L4::Udp } else { L4::Tcp };
    let mut pkt = if v6 { Pkt::tcp6(0, 0) } else { Pkt::tcp4(0, 0) };
    pkt.l4 = l4;
    pkt.vlan = (shape & 0x10 != 0).then(|| u16_at(28) & 0x0fff);
    pkt.ext = (v6 && shape & 0x20 != 0).then(|| [1, 4, f[32], f[33], f[34], f[35]]);
    pkt.ttl = f[3].max(1);
    pkt.tos = f[4];
    pkt.id = u16_at(5);
    pkt.seq = u32_at(7);
    pkt.ack = u32_at(11);
    pkt.window = u16_at(15);
    pkt.flow_label = u32_at(21) & 0xfffff;
    pkt.src = f[30];
    pkt.dst = f[31];
    pkt.sport = u16_at(24);
    pkt.dport = u16_at(26);
    if l4 == L4::Udp && matches!(pkt.dport, 4789 | 6081) {
        pkt.dport ^= 1; // not a tunnel port: the inner datagram stays a datagram
    }
    pkt.df = flags & 0x40 != 0;
    pkt.flags = ACK
        | if flags & 1 != 0 { PSH } else { 0 }
        | if flags & 2 != 0 { FIN } else { 0 }
        | if flags & 4 != 0 { ECE } else { 0 }
        | if flags & 8 != 0 { CWR } else { 0 };
    // TCP option bytes (any bytes: GRO only compares them), 0..=40 in words.
    let option_words = usize::from(misc >> 5) + usize::from(misc & 3 == 3) * 3;
    pkt.tcp_options = (0..option_words * 4)
        .map(|i| rest.get(i).copied().unwrap_or(1))
        .collect();

    pkt.tunnel = match (shape >> 2) & 3 {
        1 | 2 => {
            let vni = u32_at(32) & 0x00ff_ffff;
            let mut t = if (shape >> 2) & 3 == 1 {
                Tunnel::vxlan(vni)
            } else {
                // Geneve options: whole TLVs (class, type, length in words, data).
                let words = usize::from((misc >> 2) & 7);
                let mut options = Vec::new();
                if words > 0 {
                    options.extend_from_slice(&[f[38], f[39], f[37], (words - 1) as u8]);
                    options.extend((0..(words - 1) * 4).map(|i| f[(i % 8) + 32]));
                }
                Tunnel::geneve(vni, options)
            };
            t.outer_v6 = shape & 0x40 != 0;
            t.outer_id = u16_at(35);
            t.outer_df = misc & 1 != 0;
            t.outer_ttl = f[37].max(1);
            t.outer_udp_checksum = flags & 0x80 != 0;
            t.src_port = u16_at(28);
            Some(t)
        }
        _ => None,
    };

    // Payload: the rest of the input, or in long mode that many bytes cycled from it.
    let payload: &[u8] = &rest[pkt.tcp_options.len().min(rest.len())..];
    let long = shape & 0x80 != 0;
    let len = if long { usize::from(u16_at(19)) } else { payload.len() };
    // No more than the outermost IP packet's 65535 bytes allow.
    let headers_only = pkt.build(); // `pkt.payload` is empty
    let l = parse_frame(&headers_only).expect("the builder makes parseable frames");
    let outer = l.tunnel.map_or(l.ip, |t| t.outer);
    let len = len.min(MAX_IP_LEN - (outer.end - outer.offset));
    let mut bytes = Vec::with_capacity(len);
    if payload.is_empty() {
        bytes.extend((0..len).map(|i| i as u8));
    }
    bytes.extend_from_slice(&payload[..payload.len().min(len)]);
    while bytes.len() < len {
        let n = bytes.len().min(len - bytes.len());
        bytes.extend_from_within(..n);
    }

    let kind = if l4 == L4::Udp { GsoKind::Udp } else { GsoKind::Tcp };
    let mut params = GsoParams::tcp(u16_at(17).max(1)).with_kind(kind);
    params.checksum = if flags & 0x10 != 0 {
        L4Checksum::Partial
    } else {
        L4Checksum::Full
    };
    params.fixed_ip_id = flags & 0x20 != 0;
    params.ecn = l4 == L4::Tcp && pkt.flags & CWR != 0;
    params.outer_udp_checksum = flags & 0x80 != 0;
    Some(Case {
        original: with_payload(&headers_only, &bytes),
        pkt,
        params,
        // A checksum left partial is only acceptable to GRO when it was validated.
        validated: misc & 2 != 0 || params.checksum == L4Checksum::Partial,
    })
}

/// One output of GRO (or a refused frame, as it was pushed).
struct Out {
    bytes: Vec<u8>,
    segments: u16,
    /// The transport checksums are checksum-partial (a merged run, or GSO's `Partial`).
    partial: bool,
    /// A merged run: the outer UDP checksum, if any, is the pseudo-header seed.
    merged: bool,
    vnet: Option<offlab_engine::virtio::Header>,
}

fuzz_target!(|input: &[u8]| {
    let Some(Case {
        original,
        pkt,
        mut params,
        validated,
    }) = read(input)
    else {
        return;
    };
    let layout = parse_frame(&original).expect("a well-formed super-packet");
    if layout.payload().is_empty() {
        return; // GRO refuses payload-less packets; the `gso` target covers them.
    }
    let outermost = layout.tunnel.map_or(layout.ip, |t| t.outer);
    if outermost.end - outermost.offset > MAX_IP_LEN {
        return;
    }
    // At most GRO's 64 segments per run: raise the segment size if needed.
    let payload_len = layout.payload().len();
    let min_size = payload_len.div_ceil(MAX_SEGMENTS);
    params.segment_size = params.segment_size.max(min_size as u16);
    let mut first = GsoOutput::new();
    if let Err(e) = gso::segment(&original, &layout, &params, &mut first) {
        // The only refusal a well-formed super-packet may get here.
        assert_eq!(e, gso::GsoError::FixedIdWithoutDf, "{params:?}");
        assert!(params.fixed_ip_id && !pkt.v6 && !pkt.df);
        return;
    }
    let segments: Vec<Vec<u8>> = first
        .iter()
        .map(|s| [s.header, s.payload_slice(&original)].concat())
        .collect();
    assert_eq!(segments.len(), payload_len.div_ceil(usize::from(params.segment_size)));

    // Every segment through one GRO, in order.
    let mut gro = Gro::new(GroConfig {
        max_flows: 4, // one flow; a small table is cheaper to set up per input
        ..GroConfig::default()
    });
    let meta = RxMeta {
        csum_validated: validated,
        now: 0,
    };
    let partial = params.checksum == L4Checksum::Partial;
    let tcp_flags = if pkt.l4 == L4::Tcp { pkt.flags } else { 0 };
    let outs = std::cell::RefCell::new(Vec::new());
    {
        let mut collect = |m: Merged<'_>| {
            let mut bytes = m.header.to_vec();
            for part in m.parts {
                let frame = &segments[part.id as usize];
                bytes.extend_from_slice(&frame[part.payload()]);
            }
            outs.borrow_mut().push(Out {
                bytes,
                segments: m.segments,
                partial: m.segments > 1 || partial,
                merged: m.segments > 1,
                vnet: Some(m.vnet),
            })
        };
        for (id, frame) in segments.iter().enumerate() {
            if let Err(refusal) = gro.push(id as u64, frame, meta, &mut collect) {
                let cwr_head = id == 0 && tcp_flags & CWR != 0;
                // A last segment with PSH/FIN that would open a run goes alone (after a
                // CWR head that went alone, or as the only segment).
                let opens_run = id == 0 || (id == 1 && tcp_flags & CWR != 0);
                let lone_end =
                    id + 1 == segments.len() && opens_run && tcp_flags & (PSH | FIN) != 0;
                assert!(
                    cwr_head || lone_end,
                    "segment {id} of {} refused: {:?}",
                    segments.len(),
                    refusal.reason()
                );
                outs.borrow_mut().push(Out {
                    bytes: frame.clone(),
                    segments: 1,
                    partial,
                    merged: false,
                    vnet: None,
                });
            }
        }
        gro.flush(&mut collect);
    }
    assert_eq!(gro.held_flows(), 0);
    let outs = outs.into_inner();

    let cwr_split = tcp_flags & CWR != 0 && segments.len() > 1;
    if cwr_split || outs.len() != 1 {
        // Every payload byte once, in order (one output is compared whole below).
        let mut stream = Vec::new();
        for out in &outs {
            let l = parse_frame(&out.bytes).expect("an output parses");
            assert_eq!(l.frame_end(), out.bytes.len());
            stream.extend_from_slice(&out.bytes[l.payload()]);
        }
        assert!(stream == original[layout.payload()], "payload lost, reordered or invented");
    }
    let expected_outs = if cwr_split { 2 } else { 1 };
    assert_eq!(
        outs.len(),
        expected_outs,
        "runs of {:?} segments from {} segments",
        outs.iter().map(|o| o.segments).collect::<Vec<_>>(),
        segments.len()
    );
    if cwr_split {
        return;
    }
    let out = &outs[0];
    assert_eq!(usize::from(out.segments), segments.len());
    let mut restored = out.bytes.clone();
    complete_checksums(&mut restored, out.partial, out.merged && params.outer_udp_checksum);
    if restored != original {
        let first_diff = restored.iter().zip(&original).position(|(a, b)| a != b);
        panic!(
            "merged packet differs from the super-packet (len {} vs {}), first at byte {:?}\n\
             got      {:02x?}\nexpected {:02x?}",
            restored.len(),
            original.len(),
            first_diff,
            &restored[..layout.headers_len().min(restored.len())],
            &original[..layout.headers_len()],
        );
    }

    // The virtio-net header of a merged run describes it, and GSO as it says gives the
    // segments back.
    let Some(vnet) = out.vnet else { return };
    if out.segments == 1 {
        assert_eq!(vnet.gso_type, GsoType::None);
        return;
    }
    let expected_type = match (pkt.l4, pkt.v6) {
        (L4::Udp, _) => GsoType::UdpL4,
        (L4::Tcp, false) => GsoType::TcpV4,
        (L4::Tcp, true) => GsoType::TcpV6,
    };
    assert_eq!(vnet.gso_type, expected_type);
    assert_eq!(vnet.gso_size, params.segment_size);
    assert_eq!(usize::from(vnet.hdr_len), layout.headers_len());
    assert!(vnet.flags.contains(Flags::NEEDS_CSUM));
    assert_eq!(usize::from(vnet.csum_start), layout.ip.l4_offset);
    let merged = &out.bytes;
    {
        let offload = vnet
            .validate(merged, None)
            .expect("the merged packet's virtio header validates");
        assert_eq!(
            offload.checksum,
            ChecksumState::Partial {
                start: layout.ip.l4_offset,
                offset: if pkt.l4 == L4::Tcp { 16 } else { 6 },
            }
        );
        let gso_request = offload.gso.expect("a merged run asks for GSO");
        assert_eq!(gso_request.segments, segments.len());
    }
    let merged_layout = parse_frame(merged).expect("parses");
    let mut again_params = GsoParams::from_virtio(&vnet, &merged_layout).expect("GSO accepts it");
    again_params.checksum = params.checksum;
    again_params.fixed_ip_id = params.fixed_ip_id;
    again_params.outer_udp_checksum = params.outer_udp_checksum;
    let mut again = GsoOutput::new();
    gso::segment(merged, &merged_layout, &again_params, &mut again).expect("re-segments");
    assert_eq!(again.len(), segments.len());
    for (i, (s, want)) in again.iter().zip(&segments).enumerate() {
        let got = [s.header, s.payload_slice(merged)].concat();
        assert!(&got == want, "segment {i} differs after GSO → GRO → GSO\ngot  {:02x?}\nwant {:02x?}",
            &got[..s.header.len()], &want[..s.header.len().min(want.len())]);
    }
});

/// Completes the checksum-partial fields of `frame` as a NIC would: the innermost
/// transport checksum (seeded with the pseudo-header sum) when `inner`, then the outer
/// UDP checksum of a tunnel (also a seed) when `outer`.
fn complete_checksums(frame: &mut [u8], inner: bool, outer: bool) {
    let layout: Layout = parse_frame(frame).expect("parses");
    if inner {
        complete(frame, layout.ip.l4_offset, layout.ip.end, layout.ip.l4);
    }
    if let (true, Some(t)) = (outer, layout.tunnel) {
        assert_eq!(t.outer.l4, L4Proto::Udp);
        complete(frame, t.outer.l4_offset, t.outer.end, L4Proto::Udp);
    }
}

fn complete(frame: &mut [u8], start: usize, end: usize, l4: L4Proto) {
    let at = start + if l4 == L4Proto::Tcp { 16 } else { 6 };
    // The field holds the pseudo-header sum; summing the whole segment adds it in.
    let mut value = checksum::finish(checksum::sum(&frame[start..end], 0));
    if l4 == L4Proto::Udp && value == 0 {
        value = 0xffff;
    }
    frame[at..at + 2].copy_from_slice(&value.to_be_bytes());
}

/// `headers` (a header-only frame from the builder) followed by `payload`, with every
/// length and checksum fixed for it: innermost layers first, then a tunnel's outer ones
/// (an outer UDP checksum of zero, "none", stays zero). The builder sums byte pairs in
/// instrumented code, far too slowly for 64 KiB payloads; the engine's `checksum::sum`
/// is checked against the byte-by-byte reference by the `checksum` target.
fn with_payload(headers: &[u8], payload: &[u8]) -> Vec<u8> {
    let layout = parse_frame(headers).expect("the builder makes parseable frames");
    let n = payload.len();
    let mut f = Vec::with_capacity(headers.len() + n);
    f.extend_from_slice(headers);
    f.extend_from_slice(payload);
    grow(&mut f, &layout.ip, n, false);
    if let Some(t) = layout.tunnel {
        grow(&mut f, &t.outer, n, true);
    }
    f
}

/// Adds `n` bytes to the IP packet `ip` and its transport header's lengths, and
/// recomputes their checksums.
fn grow(f: &mut [u8], ip: &IpLayer, n: usize, keep_zero_udp_checksum: bool) {
    let add16 = |f: &mut [u8], at: usize| {
        let v = u16::from_be_bytes([f[at], f[at + 1]]) as usize + n;
        f[at..at + 2].copy_from_slice(&(v as u16).to_be_bytes());
    };
    let (o, l4) = (ip.offset, ip.l4_offset);
    let end = ip.end + n;
    let (proto, csum_at) = match ip.l4 {
        L4Proto::Tcp => (6, l4 + 16),
        L4Proto::Udp => (17, l4 + 6),
        L4Proto::Other(_) => unreachable!("the builder makes TCP and UDP"),
    };
    let len = end - l4;
    let pseudo = match ip.version {
        IpVersion::V4 => {
            add16(f, o + 2);
            f[o + 10..o + 12].copy_from_slice(&[0, 0]);
            let c = checksum::finish(checksum::sum(&f[o..l4], 0));
            f[o + 10..o + 12].copy_from_slice(&c.to_be_bytes());
            let addr = |at: usize| Ipv4Addr::new(f[at], f[at + 1], f[at + 2], f[at + 3]);
            checksum::pseudo_header_v4(addr(o + 12), addr(o + 16), proto, len as u16)
        }
        IpVersion::V6 => {
            add16(f, o + 4);
            let addr = |at: usize| Ipv6Addr::from(<[u8; 16]>::try_from(&f[at..at + 16]).unwrap());
            checksum::pseudo_header_v6(&addr(o + 8), &addr(o + 24), proto, len as u32)
        }
    };
    if proto == 17 {
        add16(f, l4 + 4);
        if keep_zero_udp_checksum && f[csum_at..csum_at + 2] == [0, 0] {
            return;
        }
    }
    f[csum_at..csum_at + 2].copy_from_slice(&[0, 0]);
    let mut c = checksum::finish(checksum::sum(&f[l4..end], pseudo));
    if proto == 17 && c == 0 {
        c = 0xffff;
    }
    f[csum_at..csum_at + 2].copy_from_slice(&c.to_be_bytes());
}
