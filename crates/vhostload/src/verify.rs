//! What the sink checks in a received frame: that it parses as the workload's TCP
//! segment of one of its flows, that its virtio-net header matches what the driver
//! negotiated, that its IPv4 header checksum and its TCP checksum (complete, or a
//! correct pseudo-header seed under NEEDS_CSUM) are right, that a GSO header names the
//! source's segment size, and that every payload byte is the one the flow carries at
//! that stream offset. Each failure is a named reason.

use crate::frames::{self, Workload, GSO_TCPV4, GSO_TCPV6, NEEDS_CSUM, VXLAN_PORT};
use crate::wire::{be16, be32, fold, pseudo_header, sum, Ip};

const DATA_VALID: u8 = 2;

/// The virtio-net header fields the sink reads.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    pub flags: u8,
    pub gso_type: u8,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
    pub num_buffers: u16,
}

impl Header {
    pub fn parse(h: &[u8]) -> Header {
        let le = |at: usize| u16::from_le_bytes([h[at], h[at + 1]]);
        Header {
            flags: h[0],
            gso_type: h[1],
            gso_size: le(4),
            csum_start: le(6),
            csum_offset: le(8),
            num_buffers: if h.len() >= 12 { le(10) } else { 1 },
        }
    }
}

/// What the sink may be sent: the offloads its driver negotiated.
#[derive(Debug, Clone, Copy)]
pub struct SinkOffloads {
    pub csum: bool,
    pub tso: bool,
}

/// A received frame's place in the workload, read from its headers alone.
#[derive(Debug, Clone, Copy)]
pub struct Facts {
    pub flow: u16,
    pub payload_len: usize,
    /// Stream offset of the first payload byte within the flow's run.
    pub offset: usize,
}

/// Reads flow, offset and payload length from the headers (no checksum, no payload).
pub fn facts(w: &Workload, frame: &[u8]) -> Result<Facts, &'static str> {
    let inner = w.inner_offset();
    if w.vxlan && (frame.len() < inner || be16(frame, 12) != 0x0800 || frame[23] != 17 || be16(frame, 36) != VXLAN_PORT) {
        return Err("not the workload's VXLAN frame");
    }
    let tcp = w.tcp_offset();
    if frame.len() < w.headers_len() {
        return Err("frame shorter than its headers");
    }
    let ip = inner + 14;
    let (ethertype, proto, ip_len) = match w.ip {
        Ip::V4 => (0x0800, frame[ip + 9], be16(frame, ip + 2) as usize),
        Ip::V6 => (0x86dd, frame[ip + 6], 40 + be16(frame, ip + 4) as usize),
    };
    if be16(frame, inner + 12) != ethertype || proto != 6 {
        return Err("not the workload's TCP frame");
    }
    if ip + ip_len != frame.len() {
        return Err("IP length disagrees with the frame");
    }
    let flow = be16(frame, tcp).wrapping_sub(frames::SOURCE_PORT_BASE);
    if flow >= w.flows || be16(frame, tcp + 2) != frames::DEST_PORT {
        return Err("ports of no flow of the workload");
    }
    let offset = be32(frame, tcp + 4).wrapping_sub(frames::isn(flow)) as usize;
    let payload_len = frame.len() - w.headers_len();
    if offset + payload_len > w.stream_len() {
        return Err("sequence number outside the flow's stream");
    }
    Ok(Facts { flow, payload_len, offset })
}

/// Checks everything about one received frame (see the module's comment).
pub fn verify(w: &Workload, sink: SinkOffloads, header: &Header, frame: &[u8]) -> Result<Facts, &'static str> {
    let facts = facts(w, frame)?;
    check_header(w, sink, header, frame, &facts)?;
    if w.vxlan {
        check_ipv4_header(&frame[14..34])?;
        if be16(frame, 40) != 0 {
            return Err("outer UDP checksum set (the source sent zero)");
        }
    }
    let inner = w.inner_offset();
    let ip = &frame[inner + 14..];
    if w.ip == Ip::V4 {
        check_ipv4_header(&ip[..20])?;
    }
    let tcp = w.tcp_offset();
    let l4_len = frame.len() - tcp;
    let pseudo = pseudo_header(ip, w.ip, l4_len);
    let field = be16(frame, tcp + 16);
    if header.flags & NEEDS_CSUM != 0 {
        if usize::from(header.csum_start) != tcp || header.csum_offset != 16 {
            return Err("partial checksum not at the TCP checksum field");
        }
        // The field must hold the pseudo-header sum (either zero of one's complement).
        let seed = fold(pseudo);
        if field != seed && !(seed == 0xffff && field == 0) && !(seed == 0 && field == 0xffff) {
            return Err("partial TCP checksum seed wrong");
        }
    } else if fold(sum(&frame[tcp..], pseudo)) != 0xffff {
        return Err("TCP checksum wrong");
    }
    // Every byte compared, in one pass without an early exit (the compiler vectorises it).
    let payload = &frame[w.headers_len()..];
    let Some(expected) = frames::flow_zero_stream().get(facts.offset..facts.offset + payload.len()) else {
        return Err("payload past the longest stream a workload can have");
    };
    let key = frames::flow_key(facts.flow);
    if payload.iter().zip(expected).fold(0u8, |differs, (&got, &want)| differs | (got ^ key ^ want)) != 0 {
        return Err("payload differs from the flow's bytes");
    }
    Ok(facts)
}

fn check_header(w: &Workload, sink: SinkOffloads, header: &Header, frame: &[u8], facts: &Facts)
    -> Result<(), &'static str> {
    if header.flags & !(NEEDS_CSUM | DATA_VALID) != 0 {
        return Err("unknown virtio-net header flags");
    }
    if header.flags & NEEDS_CSUM != 0 && !sink.csum {
        return Err("partial checksum to a driver without guest_csum");
    }
    let wanted_gso = match w.ip {
        Ip::V4 => GSO_TCPV4,
        Ip::V6 => GSO_TCPV6,
    };
    match header.gso_type {
        0 => {
            // Without a GSO type the frame must fit the MTU unless the driver takes
            // super-packets (a backend may then hand one on unmarked; it is counted).
            if frame.len() > w.mtu + 14 && !sink.tso {
                return Err("frame over the MTU to a driver without guest_tso");
            }
        }
        t if t == wanted_gso => {
            if !sink.tso {
                return Err("GSO frame to a driver without guest_tso");
            }
            if usize::from(header.gso_size) != w.mss() {
                return Err("GSO size differs from the source's segment size");
            }
            if header.flags & NEEDS_CSUM == 0 {
                return Err("GSO frame without NEEDS_CSUM");
            }
        }
        _ => return Err("GSO type of another protocol"),
    }
    if facts.payload_len > w.mss() && header.gso_type == 0 && !sink.tso {
        return Err("segment longer than the source's segment size");
    }
    Ok(())
}

fn check_ipv4_header(ip: &[u8]) -> Result<(), &'static str> {
    if ip[0] != 0x45 {
        return Err("IPv4 header not 20 bytes");
    }
    if fold(sum(ip, 0)) != 0xffff {
        return Err("IPv4 header checksum wrong");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::{build, Shape, SourceChecksum};

    fn workload(shape: Shape, ip: Ip, vxlan: bool, checksum: SourceChecksum) -> Workload {
        Workload { ip, vxlan, flows: 3, shape, checksum, mtu: 1500, runs: 1 }
    }

    fn sink(csum: bool, tso: bool) -> SinkOffloads {
        SinkOffloads { csum, tso }
    }

    #[test]
    fn every_prepared_frame_verifies_as_sent() {
        for (shape, ip, vxlan, checksum) in [
            (Shape::Mtu, Ip::V4, false, SourceChecksum::Partial),
            (Shape::Mtu, Ip::V6, false, SourceChecksum::Full),
            (Shape::Mtu, Ip::V4, true, SourceChecksum::Full),
            (Shape::Tso, Ip::V4, false, SourceChecksum::Partial),
            (Shape::Tso, Ip::V6, false, SourceChecksum::Partial),
        ] {
            for runs in [1, 3] {
                let w = Workload { runs, ..workload(shape, ip, vxlan, checksum) };
                for frame in build(&w) {
                    let header = Header::parse(&frame[..12]);
                    let facts = verify(&w, sink(true, true), &header, &frame[12..]).unwrap();
                    assert!(facts.payload_len == w.mss() || facts.payload_len == w.run_len());
                }
            }
        }
    }

    #[test]
    fn a_super_packet_across_two_runs_verifies_and_one_past_the_stream_does_not() {
        // What a GRO that merges across runs hands on: the run's last segment and the
        // next run's first as one super-packet (built as the source builds its frames).
        let w = Workload { runs: 2, ..workload(Shape::Tso, Ip::V4, false, SourceChecksum::Partial) };
        let across = frames::segment(&w, 1, w.run_len() - w.mss(), 2 * w.mss(), 0);
        let header = Header::parse(&across[..12]);
        let facts = verify(&w, sink(true, true), &header, &across[12..]).unwrap();
        assert_eq!((facts.flow, facts.offset, facts.payload_len), (1, w.run_len() - w.mss(), 2 * w.mss()));
        let past = frames::segment(&w, 1, w.stream_len() - w.mss(), 2 * w.mss(), 0);
        assert_eq!(verify(&w, sink(true, true), &Header::parse(&past[..12]), &past[12..]).unwrap_err(),
                   "sequence number outside the flow's stream");
        // With one run the same bytes are outside the flow's stream: its sequence repeats.
        let one_run = Workload { runs: 1, ..w };
        assert_eq!(verify(&one_run, sink(true, true), &header, &across[12..]).unwrap_err(),
                   "sequence number outside the flow's stream");
    }

    #[test]
    fn a_changed_byte_or_a_wrong_checksum_is_named() {
        let w = workload(Shape::Mtu, Ip::V4, false, SourceChecksum::Full);
        let frame = build(&w).swap_remove(4);
        let header = Header::parse(&frame[..12]);
        let mut payload = frame.clone();
        *payload.last_mut().unwrap() ^= 1;
        // The payload change breaks the TCP checksum first: both are caught.
        assert_eq!(verify(&w, sink(true, true), &header, &payload[12..]).unwrap_err(), "TCP checksum wrong");
        let mut ip = frame.clone();
        ip[12 + 14 + 8] = 1; // TTL without a checksum update
        assert_eq!(verify(&w, sink(true, true), &header, &ip[12..]).unwrap_err(), "IPv4 header checksum wrong");
    }

    #[test]
    fn offloads_the_sink_did_not_negotiate_are_refused() {
        let w = workload(Shape::Tso, Ip::V4, false, SourceChecksum::Partial);
        let frame = build(&w).swap_remove(0);
        let header = Header::parse(&frame[..12]);
        assert_eq!(verify(&w, sink(true, false), &header, &frame[12..]).unwrap_err(),
                   "GSO frame to a driver without guest_tso");
        assert_eq!(verify(&w, sink(false, false), &header, &frame[12..]).unwrap_err(),
                   "partial checksum to a driver without guest_csum");
    }

    #[test]
    fn payload_at_the_wrong_offset_is_found_even_with_a_right_checksum() {
        let w = workload(Shape::Mtu, Ip::V4, false, SourceChecksum::Partial);
        let frames = build(&w);
        // Frame 3 is flow 0's second segment: give it flow 0's first segment's payload.
        let mut moved = frames[3].clone();
        let start = 12 + w.headers_len();
        moved[start..].copy_from_slice(&frames[0][start..]);
        let header = Header::parse(&moved[..12]);
        assert_eq!(verify(&w, sink(true, true), &header, &moved[12..]).unwrap_err(),
                   "payload differs from the flow's bytes");
    }

    #[test]
    fn any_one_changed_payload_bit_is_found_at_every_offset_of_a_super_packet() {
        // Partial checksums: no checksum over the payload, so the payload check alone must
        // find it, whichever byte and bit: a 64 KiB super-packet, and at the jumbo MTU the
        // last segment of the longest run there is.
        let super_packet = workload(Shape::Tso, Ip::V4, false, SourceChecksum::Partial);
        let jumbo = Workload { mtu: 9000, ..workload(Shape::Mtu, Ip::V4, false, SourceChecksum::Partial) };
        assert_eq!(jumbo.run_len(), frames::LONGEST_RUN);
        for (w, frame) in [(super_packet, build(&super_packet).swap_remove(0)),
                           (jumbo, build(&jumbo).pop().unwrap())] {
            let mtu = w.mtu;
            let header = Header::parse(&frame[..12]);
            assert!(verify(&w, sink(true, true), &header, &frame[12..]).is_ok());
            let payload_start = 12 + w.headers_len();
            for (step, at) in (payload_start..frame.len()).step_by(97).enumerate() {
                let mut changed = frame.clone();
                changed[at] ^= 1 << (step % 8);
                assert_eq!(verify(&w, sink(true, true), &header, &changed[12..]).unwrap_err(),
                           "payload differs from the flow's bytes", "mtu {mtu}, byte {at}");
            }
        }
    }
}
