//! Generic receive offload in software: a flow table that coalesces frames of one flow
//! into one large packet, following the Linux kernel's rules.
//!
//! Frames are offered one at a time with [`Gro::push`] under an opaque caller id. A
//! frame is either kept (`Ok(Held)`: it opened a run or joined one) or handed back
//! (`Err(Refusal)`: forward it as it is; the reason is counted). Runs come out through
//! the `out` callback as a [`Merged`]: fresh header bytes, the payload ranges of the
//! caller's frames in order (`Part { id, offset, len }`, nothing copied), and the
//! virtio-net header that describes the offload. A run leaves the table when a packet
//! ends it (PSH, FIN, a shorter segment, a cap), when a packet of its flow cannot join
//! it (the run is delivered first, so a flow stays in order), when the table is full
//! (the oldest run goes), on [`Gro::flush`] and on [`Gro::flush_older_than`].
//!
//! A run of one packet comes out the same way, as its own header and one part, with
//! `segments == 1`, no GSO type and DATA_VALID (its checksums were verified or
//! validated). A merged run's transport checksum is left checksum-partial (the
//! pseudo-header sum, virtio NEEDS_CSUM with `csum_start`/`csum_offset`).
//!
//! # Merge rules
//!
//! A flow is identified by its L2 header (MACs, VLAN tags), IP addresses and protocol,
//! IPv6 flow label and extension headers, and ports; for VXLAN/Geneve also by the outer
//! addresses, ports, whether the outer UDP checksum is present (`udp_gro_receive`), the
//! whole tunnel header (VNI, flags, Geneve options) and the inner Ethernet header.
//! Frames that differ there are different flows. Within a flow:
//!
//! | Rule (kernel source)                                  | Outcome when broken            | Reason |
//! |-------------------------------------------------------|--------------------------------|--------|
//! | Frame parses (`parse_frame`)                           | refused                        | `Unparseable` |
//! | Innermost transport is TCP or UDP                      | refused                        | `NotTcpOrUdp` |
//! | Tunnel is VXLAN or Geneve (not GRE, not Geneve OAM)    | refused                        | `TunnelUnsupported` |
//! | IPv4 header is 20 bytes (no options), inner and outer  | refused                        | `IpOptions` |
//! | Not a fragment; IPv4 reserved flag clear (`inet_gro_receive`) | refused                 | `Fragment` |
//! | No bytes after the IP packet (`tot_len == gro_len`)    | refused                        | `Padded` |
//! | IPv4 header checksum verifies (always, `ip_fast_csum`) | refused                        | `BadIpChecksum` |
//! | TCP/UDP (and non-zero outer UDP) checksum verifies, unless `csum_validated` | refused | `BadL4Checksum` |
//! | UDP checksum non-zero (`udp_gro_receive_segment`)      | refused                        | `UdpZeroChecksum` |
//! | Payload not empty                                      | refused                        | `NoPayload` |
//! | No SYN, RST, URG; ACK set                              | refused                        | `Syn` `Rst` `Urg` `NoAck` |
//! | No CWR (Linux 6.18 delivers a CWR segment alone)       | refused                        | `Cwr` |
//! | A run does not start with PSH or FIN                   | refused                        | `Psh` `Fin` |
//! | Equal TTL, TOS, DF; IPv6 traffic class, hop limit (`inet_gro_flush`, `ipv6_gro_flush`) | run delivered, new run | `TtlDiffers` `TosDiffers` `DfDiffers` `TrafficClassDiffers` `HopLimitDiffers` |
//! | IPv4 ID = head's + n, or fixed when DF (decided by the 2nd packet), per IP layer | run delivered, new run | `IpIdNotSequential` |
//! | Equal TCP data offset and option bytes                 | run delivered, new run         | `OptionsDiffer` |
//! | Equal TCP flags except PSH/FIN (ECE, NS)               | run delivered, new run         | `FlagsDiffer` |
//! | Equal ACK number, equal window                         | run delivered, new run         | `AckDiffers` `WindowDiffers` |
//! | Payload ≤ the head's (TCP `len <= mss`; UDP length ≤ head's) | run delivered, new run   | `SizeDiffers` |
//! | TCP sequence = end of held data                        | run delivered, new run         | `NotContiguous` |
//! | Outermost IP length stays ≤ `max_bytes` (65535, `skb_gro_receive`) | run delivered, new run | `SizeCap` |
//! | PSH / FIN merged                                       | merged, run delivered          | `PshEnd` `FinEnd` |
//! | Payload shorter than the head's                        | merged, run delivered          | `ShortSegment` |
//! | Segments reach `max_segments_tcp` / `_udp` (UDP: 64, `UDP_GRO_CNT_MAX`) | merged, run delivered | `SegmentCap` |
//! | Table full                                             | oldest run delivered           | `TableFull` |
//!
//! "Run delivered, new run": the held run goes out first, then the packet starts a new
//! run (unless it has PSH/FIN, then it is refused as `Psh`/`Fin`). A refused packet whose
//! flow is held also delivers that run first, so nothing of a flow is reordered (Linux
//! lets a packet failing a checksum overtake the held run).
//!
//! # Memory and cost
//!
//! Everything is allocated in [`Gro::new`]: per flow a 256-byte header slot, the run
//! state and one id per allowed segment (the state for 1024 flows with the default
//! caps is about 0.9 MiB). `push` never allocates; `push_chain` allocates once, its
//! header scratch (`chain.rs`), on the first chained frame. A frame whose checksums were
//! validated (the common case) first tries a fast path. TCP/IPv4 without options,
//! bare or in VXLAN over IPv4 (`plain.rs`), and TCP/IPv6 without extension headers
//! (`plain6.rs`) are read at fixed offsets; the flow is found with a few word compares
//! and, when every rule allows it, the frame joins its run without `parse_frame` or the
//! general facts. Any other shape (VLAN, UDP, Geneve, VXLAN over IPv6, inner IPv6)
//! tries the template of the shape the general path classified last (`template.rs`, up
//! to four shapes kept): a frame that repeats its held run's header outside the
//! per-segment fields joins it without being parsed, and a head whose structural bytes
//! repeat the template's reference has its facts read at fixed offsets. Anything else,
//! or any rule that does not hold, goes through the general path (`facts::classify`,
//! `can_coalesce`), which decides exactly as it would have alone;
//! `gro/tests/fast_path.rs` checks on random frames of every shape that no fast path
//! changes a decision.
//!
//! # Layers
//!
//! The modules import downward only (`tests/layers.rs` fails on a loop):
//!
//! | Layer | Modules | Job |
//! |---|---|---|
//! | 0 | `reason`, `flow` | refusal reasons; flow identity and shape |
//! | 1 | `ip`, `tcp`, `udp`, `stats`, `kind` | per-protocol facts and rules; the fixed-offset kinds and `HEADER_CAP` |
//! | 2 | `tunnel` | outer headers of VXLAN/Geneve |
//! | 3 | `facts` | the general classifier |
//! | 4 | `coalesce` | `can_coalesce` and the run state |
//! | 5 | `table`, `emit`, `fast` | the flow table; finalizing a run; what the fast paths share |
//! | 6 | `plain`, `plain6`, `template`, `vnet` | the fast paths; the virtio header of a run |
//! | 7 | this module | `Gro`: push, flush, delivery |

mod coalesce;
mod emit;
mod facts;
mod fast;
mod flow;
mod ip;
mod kind;
mod plain;
mod plain6;
mod reason;
mod stats;
mod table;
mod tcp;
mod template;
mod tunnel;
mod udp;
mod vnet;

use core::ops::Range;

pub use reason::Reason;
pub use stats::{FlushCause, GroStats};
pub use kind::HEADER_CAP;

use crate::chain::{ChainScratch, Contiguous, Sums};
use crate::virtio;
use crate::wire::parse::ParseOptions;
use coalesce::{can_coalesce, Limits, Run, RunL4, Verdict};
use facts::{Facts, L4Facts};
use fast::{FastFrame, Joined};
use kind::{NOT_PLAIN, PLAIN6, VXLAN_OUTER};
use plain::Plain;
use plain6::Plain6;
use table::{AgeCursor, Table};
use template::Template;

/// Capacities and caps of a [`Gro`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroConfig {
    /// Flows held at once; when full, the oldest run is delivered.
    pub max_flows: usize,
    /// Segments per TCP run. The kernel bounds TCP runs by bytes only; 64 segments bind
    /// only below a 1 KiB MSS and keep a flow's id list at 512 bytes.
    pub max_segments_tcp: u16,
    /// Segments per UDP run (the kernel's `UDP_GRO_CNT_MAX` is 64).
    pub max_segments_udp: u16,
    /// Largest outermost IP packet a run may grow to (at most 65535).
    pub max_bytes: usize,
}

impl Default for GroConfig {
    fn default() -> Self {
        GroConfig {
            max_flows: 1024,
            max_segments_tcp: 64,
            max_segments_udp: 64,
            max_bytes: 65535,
        }
    }
}

/// What the caller knows about a received frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RxMeta {
    /// The transport checksums were validated (virtio DATA_VALID, or the NIC said so).
    pub csum_validated: bool,
    /// The caller's clock, any unit; used by [`Gro::flush_older_than`].
    pub now: u64,
}

/// One piece of a merged packet's payload: `len` bytes of the caller's frame `id` from
/// byte `offset`. Laid out as the C API's `ofl_gro_part` (`#[repr(C)]`: a `u64`, then
/// two `u32`), so the C API hands a run's parts to C as the engine wrote them, one
/// array per run instead of a converted copy.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Part {
    pub id: u64,
    pub offset: u32,
    pub len: u32,
}

impl Part {
    /// The payload's byte range in frame `id`.
    #[inline]
    pub fn payload(&self) -> Range<usize> {
        let start = self.offset as usize;
        start..start + self.len as usize
    }
}

/// A run delivered by the table.
#[derive(Debug)]
pub struct Merged<'a> {
    /// Every header up to the payload, with lengths and IPv4 header checksums fixed and
    /// the transport checksum seeded (checksum-partial) when `segments > 1`; the head
    /// frame's own header bytes when `segments == 1`.
    pub header: &'a [u8],
    /// The payload, in order.
    pub parts: &'a [Part],
    pub vnet: virtio::Header,
    pub segments: u16,
    /// Why the run was delivered: a rule (with the reason: PSH, a cap, or the mismatch
    /// of the packet that could not join), an explicit or aged flush, or eviction.
    pub end: FlushCause,
}

/// A frame that was kept.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// It started a run; its flow held none.
    NewFlow,
    /// It started a run after its flow's held run was delivered because the frame could
    /// not join it: `ended_by` is the mismatch (ACK, sequence, options, TTL, ...).
    Restarted { ended_by: Reason },
    /// It joined a run (which may already have been delivered, if the frame ended it).
    Merged,
}

/// A frame that was not kept: forward it as it is.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    NotMerged { reason: Reason },
}

impl Refusal {
    pub fn reason(&self) -> Reason {
        match *self {
            Refusal::NotMerged { reason } => reason,
        }
    }
}

/// The GRO engine: a bounded flow table, reusable across batches.
pub struct Gro {
    limits: Limits,
    parse: ParseOptions,
    table: Table,
    /// Scratch for the parts of the run being delivered, one per segment the cap
    /// allows: filled by index, no length kept or capacity checked per run.
    parts: Box<[Part]>,
    stats: GroStats,
    /// Whether validated frames try the fast paths (`plain.rs`, `plain6.rs`,
    /// `template.rs`) before the general path; off only in the tests that compare both.
    fast_path: bool,
    /// Templates of the shapes the general path classified lately (at most
    /// `TEMPLATES_KEPT`, allocated up front), and which one a frame tries first.
    templates: Vec<Template>,
    hint: usize,
    /// Header bytes of chained frames (`push_chain`), allocated by the first.
    chain_scratch: ChainScratch,
}

/// What `Gro::push` learned of a frame before `Gro::push_rest` takes it over.
enum Looked {
    /// Not tried: not validated, or of no fixed-offset kind by its first bytes.
    Nothing,
    /// Possibly a frame of the fixed-offset `kind` (`plain::kind_at`), with this flow
    /// hash; `candidate` is the first slot of that kind whose index tag is the hash's.
    Plain { kind: usize, hash: u64, candidate: Option<u32> },
}

/// Shapes whose templates are kept: a datapath sees few shapes at once.
const TEMPLATES_KEPT: usize = 4;

impl Gro {
    pub fn new(cfg: GroConfig) -> Self {
        Self::with_parse_options(cfg, ParseOptions::DEFAULT)
    }

    /// A table that recognises tunnels as `parse` says (e.g. VXLAN on port 8472 too).
    pub fn with_parse_options(cfg: GroConfig, parse: ParseOptions) -> Self {
        let limits = Limits {
            max_bytes: cfg.max_bytes.min(usize::from(u16::MAX)),
            max_segments_tcp: cfg.max_segments_tcp.max(1),
            max_segments_udp: cfg.max_segments_udp.max(1),
        };
        let segment_cap = usize::from(limits.max_segments_tcp.max(limits.max_segments_udp));
        Gro {
            limits,
            parse,
            table: Table::new(cfg.max_flows, segment_cap, Run::blank()),
            parts: vec![Part::default(); segment_cap].into_boxed_slice(),
            stats: GroStats::default(),
            fast_path: true,
            templates: Vec::with_capacity(TEMPLATES_KEPT),
            hint: 0,
            chain_scratch: ChainScratch::new(),
        }
    }

    /// Offers one frame under the caller's `id`. The caller keeps the frame's bytes
    /// until a [`Merged`] naming `id` has been emitted (or the frame was refused).
    ///
    /// Inlined into each caller's loop (the C API's burst push): as a call it saved and
    /// restored six registers and passed the frame and the deliverer through memory,
    /// ~16 instructions a frame (callgrind, the C API at 8 flows: 500 → 484).
    #[inline(always)]
    pub fn push(
        &mut self,
        id: u64,
        frame: &[u8],
        meta: RxMeta,
        out: &mut impl FnMut(Merged<'_>),
    ) -> Result<Held, Refusal> {
        self.stats.packets_in += 1;
        // Every fast path needs the transport checksums validated. The commonest frame,
        // the next segment of a held TCP/IPv4 run, joins here; everything else goes on
        // out of line, so that this stays a small function.
        let mut looked = Looked::Nothing;
        if self.fast_path && meta.csum_validated {
            let next = match plain::kind_at(frame) {
                Some(0) => self.continue_run::<0>(frame),
                Some(VXLAN_OUTER) => self.continue_run::<VXLAN_OUTER>(frame),
                Some(PLAIN6) => self.continue_run6(frame),
                _ => Err(Looked::Nothing),
            };
            match next {
                Ok((slot, joined)) => return Ok(self.join_next(slot, id, joined, out)),
                Err(other) => looked = other,
            }
        }
        self.push_rest(id, frame, Contiguous, meta, looked, out)
    }

    /// [`Gro::push`] for a frame held in several buffers: `chain` is the frame's pieces
    /// in order (Ethernet header first; pieces may be empty, headers may span them).
    /// Decides exactly as `push` on the concatenated bytes; the parts of a delivered
    /// run give payload offsets in the concatenated frame. Only header bytes are copied
    /// (into a scratch allocated by the first chained frame; `chain.rs` says when a
    /// whole frame is copied instead); checksums are summed over the pieces.
    pub fn push_chain(
        &mut self,
        id: u64,
        chain: &[&[u8]],
        meta: RxMeta,
        out: &mut impl FnMut(Merged<'_>),
    ) -> Result<Held, Refusal> {
        // `push` itself is left as it was: routing it through a function shared with
        // this one (even `#[inline(always)]`) cost the one-flow join 4 to 14 more
        // instructions per packet (callgrind, `gro_tcp4_f1_burst`). The scratch is
        // taken out of `self` (a move, no allocation) so the view can borrow it while
        // the table changes.
        let mut scratch = core::mem::take(&mut self.chain_scratch);
        let result = {
            let frame = scratch.view(chain, &self.parse);
            if meta.csum_validated {
                // Validated frames have no checksum verified, so no payload byte is
                // read: `push` takes the view as it is, fast paths and all.
                self.push(id, frame.view(), meta, out)
            } else {
                // What `push` does with an unvalidated frame (no fast path), with the
                // checksums summed over the pieces.
                self.stats.packets_in += 1;
                self.push_rest(id, frame.view(), frame.payload(), meta, Looked::Nothing, out)
            }
        };
        self.chain_scratch = scratch;
        result
    }

    /// Appends the next segment of the run in `slot`, as `continues` decided.
    #[inline(always)]
    fn join_next(&mut self, slot: u32, id: u64, joined: Joined, out: &mut impl FnMut(Merged<'_>)) -> Held {
        let run = &mut self.table.slot_mut(slot).run;
        run.append_segment(joined.payload_len, Some(joined.flags), (joined.ip_ids, joined.outer_ids));
        // The count just written, not read back through the slot index again.
        let segments = run.segments;
        self.table.set_id(slot, segments, id);
        self.stats.merged += 1;
        if let Some(reason) = joined.ends {
            self.deliver(slot, FlushCause::Rule(reason), out);
        }
        Held::Merged
    }

    /// Whether `frame`, which can only be TCP/IPv4 of kind `OUTER` (bare or in VXLAN),
    /// is the next full-size segment of a held run (`plain::continues`): its slot and
    /// how it joins, or what the lookup found. The run the previous such frame found
    /// through the index is tried first, if the frame's hash is that frame's.
    #[inline(always)]
    fn continue_run<const OUTER: usize>(&mut self, frame: &[u8]) -> Result<(u32, Joined), Looked> {
        let Some(hash) = plain::hash_at::<OUTER>(frame) else {
            return Err(Looked::Nothing);
        };
        if let Some(slot) = self.table.recent(hash) {
            let held = self.table.slot(slot);
            if held.plain == OUTER {
                if let Some(joined) = plain::continues::<OUTER>(frame, &held.run, &held.header, &self.limits) {
                    return Ok((slot, joined));
                }
            }
        }
        let candidate = self.table.find_by(hash, |s| s.plain == OUTER);
        if let Some(slot) = candidate {
            let held = self.table.slot(slot);
            if let Some(joined) = plain::continues::<OUTER>(frame, &held.run, &held.header, &self.limits) {
                self.table.remember(hash, slot);
                return Ok((slot, joined));
            }
        }
        Err(Looked::Plain { kind: OUTER, hash, candidate })
    }

    /// `continue_run` for a frame that can only be TCP/IPv6 (`plain6::continues`). Kept
    /// apart from `continue_run` on purpose: one function taking the hash and
    /// `continues` functions as arguments cost the IPv4 join 18 instructions and 5 %
    /// (measured side by side).
    #[inline(always)]
    fn continue_run6(&mut self, frame: &[u8]) -> Result<(u32, Joined), Looked> {
        let Some(hash) = plain6::hash_at(frame) else {
            return Err(Looked::Nothing);
        };
        if let Some(slot) = self.table.recent(hash) {
            let held = self.table.slot(slot);
            if held.plain == PLAIN6 {
                if let Some(joined) = plain6::continues(frame, &held.run, &held.header, &self.limits) {
                    return Ok((slot, joined));
                }
            }
        }
        let candidate = self.table.find_by(hash, |s| s.plain == PLAIN6);
        if let Some(slot) = candidate {
            let held = self.table.slot(slot);
            if let Some(joined) = plain6::continues(frame, &held.run, &held.header, &self.limits) {
                self.table.remember(hash, slot);
                return Ok((slot, joined));
            }
        }
        Err(Looked::Plain { kind: PLAIN6, hash, candidate })
    }

    /// `push` for every frame that did not join as the next segment of a run.
    #[inline(never)]
    fn push_rest(
        &mut self,
        id: u64,
        frame: &[u8],
        payload: impl Sums,
        meta: RxMeta,
        looked: Looked,
        out: &mut impl FnMut(Merged<'_>),
    ) -> Result<Held, Refusal> {
        if self.fast_path && meta.csum_validated {
            // `None`: not of the kind its first bytes suggested; try the templates.
            let plain = match looked {
                Looked::Plain { kind: 0, hash, candidate } => Plain::<0>::check(frame, true, HEADER_CAP, &self.parse)
                    .map(|p| self.push_looked(id, frame, &p, 0, (hash, candidate), meta.now, out)),
                Looked::Plain { kind: VXLAN_OUTER, hash, candidate } => {
                    Plain::<VXLAN_OUTER>::check(frame, true, HEADER_CAP, &self.parse)
                        .map(|p| self.push_looked(id, frame, &p, VXLAN_OUTER, (hash, candidate), meta.now, out))
                }
                Looked::Plain { kind, hash, candidate } => Plain6::check(frame, true, HEADER_CAP)
                    .map(|p| self.push_looked(id, frame, &p, kind, (hash, candidate), meta.now, out)),
                Looked::Nothing => None,
            };
            if let Some(result) = plain {
                return result;
            }
            if let Some(result) = self.push_by_template(id, frame, meta.now, out) {
                return result;
            }
        }
        let facts = match facts::classify_from(frame, payload, meta.csum_validated, HEADER_CAP, &self.parse) {
            Ok(facts) => facts,
            Err(refused) => return Err(self.refuse_in_order(frame, refused, out)),
        };
        if self.fast_path && facts.plain == NOT_PLAIN {
            self.remember_shape(&facts, frame);
        }
        let found = self.table.find(&facts.shape, facts.hash, frame);
        self.offer(id, frame, &facts, found, meta.now, out)
    }

    /// `push` for a frame of fixed-offset `kind` that is not the next full-size segment
    /// of the run `candidate` (the first slot of that kind whose index tag is the frame's
    /// `hash`'s, if any), once its classifier took it (`plain`): finds its flow, then
    /// decides.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn push_looked<F: FastFrame>(
        &mut self,
        id: u64,
        frame: &[u8],
        plain: &F,
        kind: usize,
        (hash, candidate): (u64, Option<u32>),
        now: u64,
        out: &mut impl FnMut(Merged<'_>),
    ) -> Result<Held, Refusal> {
        // No run of this kind has the frame's hash tag: none is its flow.
        let found = candidate.and_then(|_| {
            self.table.find_by(hash, |s| s.plain == kind && plain.same_flow(&s.header))
        });
        self.push_plain_found(id, frame, plain, hash, found, now, out)
    }

    /// A frame a fixed-offset classifier took, with its flow looked up (`found`): joins
    /// its run without reading the general facts when every rule allows it, else
    /// decides as the general path does.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn push_plain_found<F: FastFrame>(
        &mut self,
        id: u64,
        frame: &[u8],
        plain: &F,
        hash: u64,
        found: Option<u32>,
        now: u64,
        out: &mut impl FnMut(Merged<'_>),
    ) -> Result<Held, Refusal> {
        if let Some(slot) = found {
            let held = self.table.slot(slot);
            if let Some(j) = plain.try_join(&held.run, &held.header, &self.limits) {
                let run = &mut self.table.slot_mut(slot).run;
                let ids = (j.ip_ids, j.outer_ids);
                run.append_segment(j.payload_len, Some(j.flags), ids);
                return Ok(self.joined(slot, id, j.ends, out));
            }
        }
        self.offer(id, frame, &plain.facts(hash), found, now, out)
    }

    /// `push` for a frame of the shape the general path classified last, without
    /// parsing it: it joins its flow's run by template, or its facts are read by the
    /// template (`template.rs`). `None`: not sure, classify it.
    #[inline(always)]
    fn push_by_template(
        &mut self,
        id: u64,
        frame: &[u8],
        now: u64,
        out: &mut impl FnMut(Merged<'_>),
    ) -> Option<Result<Held, Refusal>> {
        let template = self.templates.get(self.hint)?;
        let hash = template.hash(frame);
        let repeated = self.table.find_by(hash, |s| {
            s.shape == template.shape && template.repeats(frame, &s.run, &s.header)
        });
        let found = match repeated {
            Some(slot) => {
                let run = &self.table.slot(slot).run;
                if let Some(j) = template.try_join(frame, run, &self.limits) {
                    let run = &mut self.table.slot_mut(slot).run;
                    let tcp_flags = matches!(run.l4, RunL4::Tcp(_)).then_some(j.flags);
                    run.append_segment(j.payload_len, tcp_flags, (j.ip_ids, j.outer_ids));
                    return Some(Ok(self.joined(slot, id, j.ends, out)));
                }
                Some(slot)
            }
            None => self.table.find(&template.shape, hash, frame),
        };
        let facts = template.classify(frame, hash, &self.parse)?;
        Some(self.offer(id, frame, &facts, found, now, out))
    }

    /// Makes the shape of `facts` (read from `frame` by the general path) the one frames
    /// try first, with `frame` as its template's reference.
    #[cold]
    fn remember_shape(&mut self, facts: &Facts, frame: &[u8]) {
        let header = frame.get(..facts.headers_len).unwrap_or(&[]);
        if let Some(i) = self.templates.iter().position(|t| t.shape == facts.shape) {
            self.hint = i;
            self.templates[i].set_reference(header);
            return;
        }
        let Some(template) = Template::of(&facts.shape, header) else { return };
        if self.templates.len() < TEMPLATES_KEPT {
            self.templates.push(template);
            self.hint = self.templates.len() - 1;
        } else {
            self.hint = (self.hint + 1) % TEMPLATES_KEPT;
            self.templates[self.hint] = template;
        }
    }

    /// Records `id` in the run `slot` it was appended to; delivers the run if it ends.
    #[inline(always)]
    fn joined(
        &mut self,
        slot: u32,
        id: u64,
        ends: Option<Reason>,
        out: &mut impl FnMut(Merged<'_>),
    ) -> Held {
        self.table.push_id(slot, id);
        self.stats.merged += 1;
        if let Some(reason) = ends {
            self.deliver(slot, FlushCause::Rule(reason), out);
        }
        Held::Merged
    }

    /// Joins the classified frame to its flow's run in `found`, or starts a run.
    #[inline(always)]
    fn offer(
        &mut self,
        id: u64,
        frame: &[u8],
        facts: &Facts,
        found: Option<u32>,
        now: u64,
        out: &mut impl FnMut(Merged<'_>),
    ) -> Result<Held, Refusal> {
        if let Some(slot) = found {
            let held = self.table.slot(slot);
            match can_coalesce(&held.run, &held.header, frame, facts, &self.limits) {
                Verdict::Join { ids, ends } => {
                    self.table.slot_mut(slot).run.append(facts, ids);
                    return Ok(self.joined(slot, id, ends, out));
                }
                Verdict::Restart(reason) => {
                    self.deliver(slot, FlushCause::Rule(reason), out);
                    return self.open(id, frame, facts, now, out).map(|held| match held {
                        Held::NewFlow => Held::Restarted { ended_by: reason },
                        other => other,
                    });
                }
            }
        }
        self.open(id, frame, facts, now, out)
    }

    /// Delivers every held run, oldest first.
    pub fn flush(&mut self, out: &mut impl FnMut(Merged<'_>)) {
        if self.table.closes_in_bulk() {
            let mut cursor = AgeCursor::start(&self.table);
            while let Some(slot) = cursor.next(&self.table) {
                self.emit::<true>(slot, FlushCause::Explicit, out);
            }
            self.table.close_all();
            return;
        }
        while let Some(slot) = self.table.oldest() {
            self.deliver(slot, FlushCause::Explicit, out);
        }
    }

    /// Delivers the runs whose first packet arrived at least `age` before `now`
    /// (`now - opened >= age`, on the clock given in [`RxMeta::now`]), oldest first.
    /// Runs open in clock order, so the walk stops at the first younger run.
    pub fn flush_older_than(&mut self, now: u64, age: u64, out: &mut impl FnMut(Merged<'_>)) {
        let mut cursor = AgeCursor::start(&self.table);
        while let Some(slot) = cursor.next(&self.table) {
            if now.saturating_sub(self.table.slot(slot).run.opened_at) < age {
                break;
            }
            self.deliver(slot, FlushCause::Aged, out);
        }
    }

    /// The same table without the fast classifier, to check that it changes nothing.
    #[cfg(test)]
    pub(crate) fn general_path_only(mut self) -> Self {
        self.fast_path = false;
        self
    }

    pub fn stats(&self) -> &GroStats {
        &self.stats
    }

    /// Runs currently held.
    pub fn held_flows(&self) -> usize {
        self.table.len()
    }

    /// Starts a run with `facts`' frame, making room if the table is full. Inlined, with
    /// `Table::open`, into each classifier's path: the run and the slot are then written
    /// from the frame's fields without the `Facts` going through memory, and a fast path
    /// pays no call (both inlined, side by side: +9 % at 8 flows, +18 % at 64; 18 fewer
    /// instructions per packet at 8 flows).
    #[inline(always)]
    fn open(
        &mut self,
        id: u64,
        frame: &[u8],
        facts: &Facts,
        now: u64,
        out: &mut impl FnMut(Merged<'_>),
    ) -> Result<Held, Refusal> {
        if let L4Facts::Tcp(tcp) = &facts.l4 {
            if let Err(reason) = tcp::can_open(tcp) {
                return Err(self.refuse(reason));
            }
        }
        if self.table.is_full() {
            if let Some(oldest) = self.table.oldest() {
                self.deliver(oldest, FlushCause::Rule(Reason::TableFull), out);
            }
        }
        let header = frame.get(..facts.headers_len).unwrap_or(&[]);
        let Some(slot) = self.table.open(facts, header, now, id) else {
            return Err(self.refuse(Reason::TableFull));
        };
        self.stats.flows_opened += 1;
        if self.table.slot(slot).run.is_full(&self.limits) {
            self.deliver(slot, FlushCause::Rule(Reason::SegmentCap), out);
        }
        Ok(Held::NewFlow)
    }

    /// Refuses a frame, delivering what its flow holds first so the flow stays in order.
    #[cold]
    fn refuse_in_order(
        &mut self,
        frame: &[u8],
        refused: facts::Refused,
        out: &mut impl FnMut(Merged<'_>),
    ) -> Refusal {
        if let Some((shape, hash)) = refused.flow {
            if let Some(slot) = self.table.find(&shape, hash, frame) {
                self.deliver(slot, FlushCause::Rule(refused.reason), out);
            }
        }
        self.refuse(refused.reason)
    }

    fn refuse(&mut self, reason: Reason) -> Refusal {
        self.stats.count_refusal(reason);
        Refusal::NotMerged { reason }
    }

    /// Emits the run in `slot` through `out` and frees the slot.
    fn deliver(&mut self, slot: u32, cause: FlushCause, out: &mut impl FnMut(Merged<'_>)) {
        self.emit::<false>(slot, cause, out);
        self.table.close(slot);
    }

    /// Hands the run in `slot` to `out`, finalized, and counts it; the slot stays taken.
    /// `BY_KIND`: one hand-over per kind of run (bare or VXLAN TCP/IPv4, TCP/IPv6, the
    /// rest), so that where `out` reads the virtio-net header (the C API converts it
    /// per run) each kind's is mostly constants, instead of one header built on the
    /// stack from whichever kind ran: ~50 instructions less a run at 8 flows
    /// (callgrind). Only the flush takes it: inlined into the push's paths too, the
    /// four copies pushed the push's own closures out of line (+19 a packet).
    #[inline(always)]
    fn emit<const BY_KIND: bool>(&mut self, slot: u32, cause: FlushCause, out: &mut impl FnMut(Merged<'_>)) {
        let (held, ids) = self.table.parts_of(slot);
        let run = held.run;
        // `parts_of` gives at most the segment cap's ids, the scratch's length.
        let parts = &mut self.parts[..ids.len()];
        let offset = u32::from(run.headers_len);
        // Every part but the last is one segment size long.
        let len = u32::from(run.seg_size);
        for (part, &id) in parts.iter_mut().zip(ids) {
            *part = Part { id, offset, len };
        }
        if let Some(last) = parts.last_mut() {
            last.len = u32::from(run.last_len);
        }
        let header_len = usize::from(run.headers_len);
        let segments = run.segments;
        if segments < 2 {
            hand_over(out, &held.header[..header_len], parts, vnet::single(), segments, cause);
        } else if BY_KIND {
            let header = &mut held.header;
            let headers = ..header_len;
            match held.plain {
                0 => {
                    let vnet = vnet::merged(&emit::finalize_plain::<0>(&run, header));
                    hand_over(out, &header[headers], parts, vnet, segments, cause);
                }
                VXLAN_OUTER => {
                    let vnet = vnet::merged(&emit::finalize_plain::<VXLAN_OUTER>(&run, header));
                    hand_over(out, &header[headers], parts, vnet, segments, cause);
                }
                PLAIN6 => {
                    let vnet = vnet::merged(&emit::finalize_plain6(&run, header));
                    hand_over(out, &header[headers], parts, vnet, segments, cause);
                }
                _ => {
                    let vnet = vnet::merged(&emit::finalize(&held.shape, &run, &mut header[headers]));
                    hand_over(out, &header[headers], parts, vnet, segments, cause);
                }
            }
        } else {
            let offload = match held.plain {
                0 => emit::finalize_plain::<0>(&run, &mut held.header),
                VXLAN_OUTER => emit::finalize_plain::<VXLAN_OUTER>(&run, &mut held.header),
                PLAIN6 => emit::finalize_plain6(&run, &mut held.header),
                _ => emit::finalize(&held.shape, &run, &mut held.header[..header_len]),
            };
            hand_over(out, &held.header[..header_len], parts, vnet::merged(&offload), segments, cause);
        }
        self.stats.count_flush(cause, segments);
    }
}

/// `out` given one run (`Gro::emit`).
#[inline(always)]
fn hand_over(
    out: &mut impl FnMut(Merged<'_>),
    header: &[u8],
    parts: &[Part],
    vnet: virtio::Header,
    segments: u16,
    end: FlushCause,
) {
    out(Merged { header, parts, vnet, segments, end });
}

#[cfg(test)]
mod tests;
