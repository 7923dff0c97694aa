//! What happens to each received frame: validate its virtio header, then pass it,
//! complete its checksum, segment it or coalesce it, as the mode and the egress port's
//! offloads say. Output goes to a [`TxQueue`] whose payload pieces point into the
//! receive buffers.

use crate::coalesce::Coalescer;
use crate::egress::{checksum_header, ChecksumSpan, Egress, Mode};
use crate::port::{RxBatch, TxQueue};
use crate::stats::Counters;
use offlab_engine::checksum;
use offlab_engine::gso::{self, GsoKind, GsoOutput, GsoParams, L4Checksum};
use offlab_engine::virtio::{
    self, ChecksumState, Flags, GsoRequest, Header, HeaderForm,
};
use offlab_engine::wire::{parse_frame, parse_frame_with, Layout, ParseError, ParseOptions};

/// Length of an Ethernet header: anything shorter is not a frame.
const ETHERNET_HEADER_LEN: usize = 14;
/// What an unparsed frame's L2 header may add (two 802.1Q tags) before the MTU applies.
const TWO_VLAN_TAGS: usize = 8;

/// One direction's state: counters, the output being built and reusable engine state.
pub struct Direction {
    mode: Mode,
    counters: Counters,
    tx: TxQueue,
    segments: GsoOutput,
    coalescer: Option<Coalescer>,
    /// Partial checksums to finish in the receive buffers before sending.
    to_complete: Vec<(usize, ChecksumSpan)>,
}

/// A validated segmentation request and what it was read from.
#[derive(Clone, Copy)]
struct SuperPacket<'a> {
    header: &'a Header,
    layout: &'a Layout,
    request: &'a GsoRequest,
}

impl Direction {
    pub fn new(mode: Mode) -> Direction {
        Direction {
            mode,
            counters: Counters::default(),
            tx: TxQueue::default(),
            segments: GsoOutput::new(),
            coalescer: (mode == Mode::Gro).then(Coalescer::new),
            to_complete: Vec::new(),
        }
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    pub fn counters_mut(&mut self) -> &mut Counters {
        &mut self.counters
    }

    /// The frames to send and the counters the send updates.
    pub fn output(&mut self) -> (&TxQueue, &mut Counters) {
        (&self.tx, &mut self.counters)
    }

    /// Turns a received batch into the frames to send.
    pub fn process(&mut self, rx: &mut RxBatch, egress: &Egress) {
        self.tx.clear();
        self.tx.set_vnet_len(egress.offloads.vnet_len());
        self.to_complete.clear();
        if let Some(coalescer) = &mut self.coalescer {
            coalescer.begin_batch(rx.vnet_len());
        }
        for slot in 0..rx.len() {
            self.frame(rx, slot, egress);
        }
        if let Some(coalescer) = &mut self.coalescer {
            coalescer.flush(
                egress,
                &mut self.tx,
                &mut self.counters,
                &mut self.to_complete,
            );
            coalescer.end_batch();
        }
        let vnet_len = rx.vnet_len();
        for &(slot, span) in &self.to_complete {
            complete_checksum(&mut rx.raw_mut(slot)[vnet_len..], span);
        }
    }

    fn frame(&mut self, rx: &RxBatch, slot: usize, egress: &Egress) {
        let raw = rx.raw(slot);
        let vnet_len = rx.vnet_len();
        if raw.len() < vnet_len + ETHERNET_HEADER_LEN {
            self.counters.received(raw.len().saturating_sub(vnet_len));
            self.counters
                .drop("frame", "shorter than an ethernet header");
            return;
        }
        let frame = &raw[vnet_len..];
        self.counters.received(frame.len());
        // The port's negotiated header: v1, or the UDP-tunnel form (tunnel GSO).
        let form = HeaderForm::of_len(vnet_len).unwrap_or(HeaderForm::V1);
        let header = match Header::decode(&raw[..vnet_len], form) {
            Ok(header) => header,
            Err(err) => return self.counters.drop("virtio", err.reason()),
        };
        let parsed = parse_frame(frame);
        // The layout stays where the parser put it and is lent to the checks: handing
        // it through `Header::validate`'s result copied it twice more per frame (a
        // memcpy call each, ~60 instructions per MTU frame: callgrind, W5).
        let checked = match &parsed {
            Ok(layout) => header.validate_parsed(frame, layout),
            // The same checks against the same parse error (validate parses again).
            Err(_) => header.validate(frame, None).map(|offload| (offload.gso, offload.checksum)),
        };
        let (gso, checksum) = match checked {
            Ok(checked) => checked,
            Err(err) => return self.counters.drop("virtio", err.reason()),
        };
        if header.tunnel.is_some() {
            return self.tunnel_super_packet(rx, slot, &header, gso, parsed.as_ref().ok(), egress);
        }
        let layout = match parsed {
            Ok(ref layout) => layout,
            // No segmentation was asked; forward the frame if only our parser minds it.
            Err(error) => return self.unparsed(slot, frame, vnet_len, error, checksum, egress),
        };
        match gso {
            Some(request) => {
                let asked = SuperPacket {
                    header: &header,
                    layout,
                    request: &request,
                };
                self.super_packet(rx, slot, &asked, egress)
            }
            None => self.single(rx, slot, checksum, layout, egress),
        }
    }

    /// A frame that does not parse and asks for no segmentation: non-IP frames (ARP, …)
    /// and tunnels this parser refuses (ARP inside VXLAN, …) are forwarded; malformed
    /// IP is dropped. A partial checksum still travels with the frame (for a tunnel it
    /// is the outer UDP one), so it is handed on or completed like any other.
    fn unparsed(
        &mut self,
        slot: usize,
        frame: &[u8],
        rx_vnet_len: usize,
        error: ParseError,
        checksum: ChecksumState,
        egress: &Egress,
    ) {
        // Only the tunnel inside is odd; the outer packet is fine.
        let outer = parse_frame_with(frame, &ParseOptions::DEFAULT.without_tunnels());
        let end = match (&error, &outer) {
            (_, Ok(layout)) => layout.frame_end(),
            (ParseError::UnsupportedEtherType(_), Err(_)) => frame.len(),
            (_, Err(_)) => return self.counters.drop("parse", error.reason()),
        };
        if frame.len() - ETHERNET_HEADER_LEN > egress.mtu + TWO_VLAN_TAGS {
            return self.counters.drop("egress", "frame over egress mtu");
        }
        self.counters.non_ip_frames +=
            u64::from(matches!(error, ParseError::UnsupportedEtherType(_)));
        let header = checksum_header(
            self.mode,
            slot,
            checksum,
            end,
            egress,
            &mut self.counters,
            &mut self.to_complete,
        );
        self.tx.begin(&header.to_bytes());
        self.tx.push_rx(slot, rx_range(rx_vnet_len, frame.len()));
    }

    /// A frame that is not (or no longer) a super-packet.
    fn single(
        &mut self,
        rx: &RxBatch,
        slot: usize,
        checksum: ChecksumState,
        layout: &Layout,
        egress: &Egress,
    ) {
        // Bytes past the IP total length (Ethernet padding, or junk) are trimmed before
        // anything else, as the kernel's ip_rcv_core trims them (pskb_trim_rcsum): the
        // frame that leaves — and the one the MTU is checked on — ends with its IP
        // packet. An IP length beyond the frame never gets here: the parser refuses it.
        let full = &rx.raw(slot)[rx.vnet_len()..];
        let frame = &full[..layout.frame_end().min(full.len())];
        if frame.len() < full.len() && full.len() > MIN_FRAME_LEN {
            self.counters.trimmed_frames += 1;
        }
        if frame.len() - layout.l2_len > egress.mtu {
            return self.counters.drop("egress", "frame over egress mtu");
        }
        if let Some(coalescer) = &mut self.coalescer {
            let (tx, counters, to_complete) =
                (&mut self.tx, &mut self.counters, &mut self.to_complete);
            if coalescer.offer(
                slot,
                frame,
                layout,
                checksum,
                egress,
                tx,
                counters,
                to_complete,
            ) {
                return;
            }
        }
        let header = self.checksum_header(slot, checksum, layout.frame_end(), egress);
        self.emit_frame(rx, slot, &header, frame.len());
    }

    /// A frame whose header has the UDP-tunnel GSO bits (checked against the frame's
    /// tunnel by `Header::validate`): it must be a super-packet.
    fn tunnel_super_packet(
        &mut self,
        rx: &RxBatch,
        slot: usize,
        header: &Header,
        gso: Option<GsoRequest>,
        layout: Option<&Layout>,
        egress: &Egress,
    ) {
        let (Some(request), Some(layout)) = (gso, layout) else {
            // Nothing to segment, so no way to fill in the outer checksum asked for.
            return self.counters.drop("virtio", "tunnel gso of one segment");
        };
        let asked = SuperPacket {
            header,
            layout,
            request: &request,
        };
        self.super_packet(rx, slot, &asked, egress);
    }

    /// The vnet header a non-GSO frame leaves with; queues a completion if needed.
    fn checksum_header(
        &mut self,
        slot: usize,
        state: ChecksumState,
        end: usize,
        egress: &Egress,
    ) -> Header {
        checksum_header(
            self.mode,
            slot,
            state,
            end,
            egress,
            &mut self.counters,
            &mut self.to_complete,
        )
    }

    fn super_packet(&mut self, rx: &RxBatch, slot: usize, asked: &SuperPacket, egress: &Egress) {
        let SuperPacket {
            header,
            layout,
            request,
        } = *asked;
        // The UDP-tunnel fields, when the header had them.
        let tunnel = header.tunnel.as_ref();
        self.counters.rx_super_packets += 1;
        if let Some(coalescer) = &mut self.coalescer {
            // Runs held for this flow must leave before this packet does.
            coalescer.flush(
                egress,
                &mut self.tx,
                &mut self.counters,
                &mut self.to_complete,
            );
        }
        if request.headers_len - layout.l2_len + usize::from(request.gso_size) > egress.mtu {
            return self.counters.drop("egress", "segments over egress mtu");
        }
        let frame = &rx.raw(slot)[rx.vnet_len()..];
        let pass = matches!(self.mode, Mode::Pass | Mode::Gro) && egress.accepts(request, tunnel);
        if pass {
            self.counters.passed_super_packets += 1;
            let out = Header {
                num_buffers: 0,
                hdr_len: request.headers_len as u16,
                ..*header
            };
            return self.emit_frame(rx, slot, &out, frame.len());
        }
        let partial = self.mode != Mode::Csum && egress.offloads.csum;
        let params = GsoParams {
            kind: match request.kind {
                virtio::GsoKind::TcpV4 | virtio::GsoKind::TcpV6 => GsoKind::Tcp,
                virtio::GsoKind::Uso => GsoKind::Udp,
                virtio::GsoKind::Ufo => GsoKind::UdpFragment,
            },
            segment_size: request.gso_size,
            checksum: if partial {
                L4Checksum::Partial
            } else {
                L4Checksum::Full
            },
            fixed_ip_id: false,
            ecn: request.ecn,
            outer_udp_checksum: tunnel.is_some_and(|t| t.outer_checksum),
        };
        if let Err(err) = gso::segment(frame, layout, &params, &mut self.segments) {
            return self.counters.drop("gso", err.reason());
        }
        self.counters.segmented_super_packets += 1;
        for segment in self.segments.iter() {
            let vnet = match segment.partial_checksum {
                Some(pc) => Header {
                    flags: Flags::NEEDS_CSUM,
                    csum_start: pc.start,
                    csum_offset: pc.offset,
                    ..Header::none()
                },
                None => Header::none(),
            };
            self.tx.begin(&vnet.to_bytes());
            self.tx.push_bytes(segment.header);
            let vnet_len = rx.vnet_len();
            self.tx.push_rx(
                slot,
                vnet_len + segment.payload.start..vnet_len + segment.payload.end,
            );
            self.counters.segments += 1;
            self.counters.checksums_completed += u64::from(segment.partial_checksum.is_none());
        }
    }

    fn emit_frame(&mut self, rx: &RxBatch, slot: usize, header: &Header, frame_len: usize) {
        self.tx.begin_header(header);
        self.tx.push_rx(slot, rx_range(rx.vnet_len(), frame_len));
    }
}

/// The shortest Ethernet frame without its FCS: shorter ones arrive padded to it, and
/// trimming that padding is no news worth counting.
const MIN_FRAME_LEN: usize = 60;

/// Where a received frame of `frame_len` bytes sits in its slot.
fn rx_range(vnet_len: usize, frame_len: usize) -> std::ops::Range<usize> {
    vnet_len..vnet_len + frame_len
}

/// Finishes a partial checksum in place, as the kernel's `skb_checksum_help` does: the
/// field holds the pseudo-header sum, so summing the span and folding completes it.
fn complete_checksum(frame: &mut [u8], span: ChecksumSpan) {
    let field = span.start + span.offset;
    // Validation put the field inside the packet; a frame too short is left as it is.
    let Some(data) = frame.get(span.start..span.end) else {
        return;
    };
    if field + 2 > span.end {
        return;
    }
    let value = match checksum::finish(checksum::sum(data, 0)) {
        0 => 0xffff, // an all-zero result is sent as its one's-complement twin
        value => value,
    };
    frame[field..field + 2].copy_from_slice(&value.to_be_bytes());
}

#[cfg(test)]
#[path = "forward_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "forward_tunnel_tests.rs"]
mod tunnel_tests;

#[cfg(test)]
#[path = "forward_udp_tunnel_tests.rs"]
mod udp_tunnel_tests;
