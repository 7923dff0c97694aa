//! The source and the sink on one thread: the source keeps the transmit ring of guest
//! A full of the prepared frames (descriptors pointing at them, nothing copied per
//! send), the sink keeps guest B's receive ring full of buffers and takes back what the
//! backend wrote, counting frames, payload and GSO marks and verifying a sample.

use std::collections::BTreeMap;
use std::io;
use std::time::{Duration, Instant};

use crate::frames::{self, Workload};
use crate::guest::{Guest, RX, TX};
use crate::verify::{self, Header, SinkOffloads};
use crate::virtq::F_WRITE;

/// Prepared frames in guest A's memory, sent round-robin.
pub struct Source {
    pub guest: Guest,
    frames: Vec<(u64, u32)>,
    next: usize,
    free: Vec<u16>,
    pub digest: u64,
    payload_per_frame: Vec<usize>,
    /// Ids in flight, to count the payload of each frame returned.
    in_flight: Vec<usize>,
}

impl Source {
    pub fn new(mut guest: Guest, w: &Workload) -> io::Result<Source> {
        let built = frames::build(w);
        let mut placed = Vec::with_capacity(built.len());
        for frame in &built {
            let addr = guest.memory.alloc(frame.len(), 64)?;
            guest.memory.write(addr, frame);
            placed.push((addr, frame.len() as u32));
        }
        let payload_per_frame = built.iter().map(|f| f.len() - 12 - w.headers_len()).collect();
        let size = guest.rings[TX].size;
        Ok(Source {
            guest,
            frames: placed,
            next: 0,
            free: (0..size).rev().collect(),
            digest: frames::digest(&built),
            payload_per_frame,
            in_flight: vec![0; usize::from(size)],
        })
    }

    /// The digest of the frames as guest A's memory holds them now: `digest` unless the
    /// backend wrote into a buffer the driver gave it only to read.
    pub fn digest_now(&self) -> u64 {
        let now: Vec<Vec<u8>> = self
            .frames
            .iter()
            .map(|&(addr, len)| self.guest.memory.slice(addr, len as usize).map(<[u8]>::to_vec).unwrap_or_default())
            .collect();
        frames::digest(&now)
    }

    /// Takes back sent frames and fills the ring again; returns (frames, payload) sent.
    fn pump(&mut self) -> (u64, u64) {
        let (mut frames, mut payload) = (0, 0);
        while let Some((id, _)) = self.guest.rings[TX].pop_used() {
            if let Some(&index) = self.in_flight.get(usize::from(id)) {
                frames += 1;
                payload += self.payload_per_frame[index] as u64;
                self.free.push(id);
            }
        }
        if self.free.is_empty() {
            return (frames, payload);
        }
        while let Some(id) = self.free.pop() {
            let (addr, len) = self.frames[self.next];
            self.in_flight[usize::from(id)] = self.next;
            self.next = (self.next + 1) % self.frames.len();
            let ring = &mut self.guest.rings[TX];
            ring.set_descriptor(id, addr, len, 0, 0);
            ring.push_avail(id);
        }
        self.guest.publish(TX);
        (frames, payload)
    }
}

/// Guest B's receive buffers and what arrived in them.
pub struct Sink {
    pub guest: Guest,
    buffers: Vec<u64>,
    buffer_len: usize,
    merged: bool,
    offloads: SinkOffloads,
    /// Buffers of a frame whose later buffers are not returned yet.
    pending: Vec<(u16, u32)>,
    scratch: Vec<u8>,
}

impl Sink {
    pub fn new(mut guest: Guest, buffer_len: usize) -> io::Result<Sink> {
        let size = guest.rings[RX].size;
        let mut buffers = Vec::with_capacity(usize::from(size));
        for id in 0..size {
            let addr = guest.memory.alloc(buffer_len, 64)?;
            guest.rings[RX].set_descriptor(id, addr, buffer_len as u32, F_WRITE, 0);
            guest.rings[RX].push_avail(id);
            buffers.push(addr);
        }
        guest.publish(RX);
        let merged = guest.has("mrg_rxbuf");
        let offloads = SinkOffloads {
            csum: guest.has("guest_csum"),
            tso: guest.has("guest_csum") && (guest.has("guest_tso4") || guest.has("guest_tso6")),
        };
        Ok(Sink { guest, buffers, buffer_len, merged, offloads, pending: Vec::new(), scratch: Vec::new() })
    }

    pub fn buffer_len(&self) -> usize {
        self.buffer_len
    }

    /// Takes every complete frame the backend returned, gives its buffers back.
    fn drain(&mut self, w: &Workload, counts: &mut Counts, verify_every: u64) {
        let mut returned = false;
        while let Some((id, len)) = self.guest.rings[RX].pop_used() {
            if usize::from(id) >= self.buffers.len() {
                counts.mismatch("used id outside the ring");
                continue;
            }
            self.pending.push((id, len));
            let first = self.slice(self.pending[0]);
            let wanted = if self.merged && first.len() >= 12 { Header::parse(first).num_buffers.max(1) } else { 1 };
            if self.pending.len() < usize::from(wanted) {
                continue;
            }
            self.take_frame(w, counts, verify_every);
            for (id, _) in self.pending.drain(..) {
                self.guest.rings[RX].push_avail(id);
            }
            returned = true;
        }
        if returned {
            self.guest.publish(RX);
        }
    }

    fn slice(&self, (id, len): (u16, u32)) -> &[u8] {
        let len = (len as usize).min(self.buffer_len);
        self.guest.memory.slice(self.buffers[usize::from(id)], len).unwrap_or(&[])
    }

    fn take_frame(&mut self, w: &Workload, counts: &mut Counts, verify_every: u64) {
        let total: usize = self.pending.iter().map(|&(_, len)| len as usize).sum();
        let hdr_len = self.guest.header_len();
        let first = self.slice(self.pending[0]);
        if total < hdr_len + 14 || first.len() < hdr_len {
            return counts.mismatch("frame shorter than its headers");
        }
        let header = Header::parse(&first[..hdr_len]);
        counts.frames += 1;
        counts.bytes += (total - hdr_len) as u64;
        *counts.gso.entry(header.gso_type).or_default() += 1;
        if total - hdr_len > w.mtu + 14 && header.gso_type == 0 {
            counts.over_mtu_without_gso += 1;
        }
        let payload = (total - hdr_len).saturating_sub(w.headers_len()) as u64;
        counts.payload += payload;
        counts.segments += payload.div_ceil(w.mss() as u64).max(1);
        if !counts.frames.is_multiple_of(verify_every) {
            return;
        }
        self.scratch.clear();
        for &(id, len) in &self.pending {
            let len = (len as usize).min(self.buffer_len);
            let part = self.guest.memory.slice(self.buffers[usize::from(id)], len).unwrap_or(&[]);
            self.scratch.extend_from_slice(part);
        }
        match verify::verify(w, self.offloads, &header, &self.scratch[hdr_len..]) {
            Ok(_) => counts.verified += 1,
            Err(reason) => counts.mismatch(reason),
        }
    }
}

/// What the sink counted (and the source sent) over a window.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    pub sent_frames: u64,
    pub sent_payload: u64,
    pub frames: u64,
    pub bytes: u64,
    pub payload: u64,
    /// MSS-size segments the received payload amounts to (merge depth = segments/frames).
    pub segments: u64,
    pub gso: BTreeMap<u8, u64>,
    pub over_mtu_without_gso: u64,
    pub verified: u64,
    pub mismatches: BTreeMap<&'static str, u64>,
    /// Time the source spent in rounds that sent or took back frames (its polls that
    /// found nothing to do are not counted): what a guest's driver would spend.
    pub source_busy: Duration,
    /// The same for the sink: rounds that took at least one frame.
    pub sink_busy: Duration,
}

impl Counts {
    fn mismatch(&mut self, reason: &'static str) {
        *self.mismatches.entry(reason).or_default() += 1;
    }

    /// What changed since `before` (the mismatches and verifications are kept whole).
    fn since(&self, before: &Counts) -> Counts {
        let mut gso = self.gso.clone();
        for (k, v) in &before.gso {
            *gso.entry(*k).or_default() -= v;
        }
        Counts {
            sent_frames: self.sent_frames - before.sent_frames,
            sent_payload: self.sent_payload - before.sent_payload,
            frames: self.frames - before.frames,
            bytes: self.bytes - before.bytes,
            payload: self.payload - before.payload,
            segments: self.segments - before.segments,
            gso,
            over_mtu_without_gso: self.over_mtu_without_gso - before.over_mtu_without_gso,
            verified: self.verified,
            mismatches: self.mismatches.clone(),
            source_busy: self.source_busy - before.source_busy,
            sink_busy: self.sink_busy - before.sink_busy,
        }
    }
}

pub struct Timing {
    pub warmup: Duration,
    pub measure: Duration,
    /// Verify one received frame in this many (1 = all).
    pub verify_every: u64,
    /// The window also lasts until the sink has counted this many frames (at most
    /// `MIN_FRAMES_CAP` windows): a test that must see some hundred frames gets them
    /// on a loaded machine too, where a fixed window can fall short. 0: the window is
    /// `measure` alone, as a measurement must be.
    pub min_frames: u64,
}

/// How many `measure` windows a window waiting for `min_frames` lasts at most: a
/// forwarder that moves nothing still ends the run, and the caller sees the count.
pub const MIN_FRAMES_CAP: u32 = 30;

/// Runs source and sink until the window ends; returns the window's counts and length.
pub fn run(source: &mut Source, sink: &mut Sink, w: &Workload, timing: &Timing) -> (Counts, Duration) {
    let mut counts = Counts::default();
    let start = Instant::now();
    let mut window: Option<(Instant, Counts)> = None;
    let verify_every = timing.verify_every.max(1);
    let mut now = Instant::now();
    for round in 0u64.. {
        let (frames, payload) = source.pump();
        let pumped = Instant::now();
        if frames > 0 {
            counts.source_busy += pumped - now;
        }
        counts.sent_frames += frames;
        counts.sent_payload += payload;
        let received = counts.frames;
        sink.drain(w, &mut counts, verify_every);
        now = Instant::now();
        if counts.frames > received {
            counts.sink_busy += now - pumped;
        }
        if round % 64 != 0 {
            continue;
        }
        match &window {
            None if now - start >= timing.warmup => window = Some((now, counts.clone())),
            Some((at, before)) if now - *at >= timing.measure => {
                let enough = counts.frames - before.frames >= timing.min_frames;
                if enough || now - *at >= timing.measure * MIN_FRAMES_CAP {
                    return (counts.since(before), now - *at);
                }
            }
            _ => {}
        }
    }
    unreachable!("the loop returns when the window ends")
}
