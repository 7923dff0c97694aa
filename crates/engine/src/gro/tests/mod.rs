//! GRO rules, one test per rule, with real frames from `builder`.

pub(super) mod builder;
mod fast_path;
mod flush_kinds;
mod index;
mod rules;
mod table_udp_refusals;
mod tunnels;

use super::{Gro, GroConfig, Held, Merged, Part, Refusal, RxMeta};
use builder::Pkt;

/// A delivered run, copied out of the callback.
#[derive(Debug, Clone)]
pub(super) struct Out {
    pub header: Vec<u8>,
    pub parts: Vec<Part>,
    pub segments: u16,
    pub gso_size: u16,
    pub gso_type: u8,
    pub flags: u8,
    pub csum_start: u16,
    pub csum_offset: u16,
    pub tunnel: Option<crate::virtio::TunnelGso>,
    /// The whole virtio-net header, to validate against the merged packet.
    pub vnet: crate::virtio::Header,
    /// Why the run was delivered.
    pub end: super::FlushCause,
}

/// A GRO table plus the frames pushed into it (by id) and what it delivered.
pub(super) struct Harness {
    pub gro: Gro,
    pub frames: Vec<Vec<u8>>,
    pub out: Vec<Out>,
    pub validated: bool,
    pub now: u64,
}

impl Harness {
    pub fn new() -> Self {
        Self::with(GroConfig::default())
    }

    pub fn with(cfg: GroConfig) -> Self {
        Harness {
            gro: Gro::new(cfg),
            frames: Vec::new(),
            out: Vec::new(),
            validated: false,
            now: 0,
        }
    }

    pub fn push(&mut self, pkt: &Pkt) -> Result<Held, Refusal> {
        self.push_frame(pkt.build())
    }

    pub fn push_frame(&mut self, frame: Vec<u8>) -> Result<Held, Refusal> {
        let id = self.frames.len() as u64;
        let meta = RxMeta {
            csum_validated: self.validated,
            now: self.now,
        };
        let out = &mut self.out;
        let r = self
            .gro
            .push(id, &frame, meta, &mut |m: Merged<'_>| out.push(copy(&m)));
        self.frames.push(frame);
        r
    }

    pub fn flush(&mut self) {
        let out = &mut self.out;
        self.gro.flush(&mut |m: Merged<'_>| out.push(copy(&m)));
    }

    /// Header + payload parts of delivered run `i`, as one packet.
    pub fn packet(&self, i: usize) -> Vec<u8> {
        let o = &self.out[i];
        let mut bytes = o.header.clone();
        for p in &o.parts {
            bytes.extend_from_slice(
                &self.frames[p.id as usize][p.payload()],
            );
        }
        bytes
    }

    /// The segment counts of the delivered runs, in order.
    pub fn segments(&self) -> Vec<u16> {
        self.out.iter().map(|o| o.segments).collect()
    }
}

fn copy(m: &Merged<'_>) -> Out {
    Out {
        header: m.header.to_vec(),
        parts: m.parts.to_vec(),
        segments: m.segments,
        gso_size: m.vnet.gso_size,
        gso_type: u8::from(m.vnet.gso_type) | if m.vnet.gso_ecn { 0x80 } else { 0 },
        flags: m.vnet.flags.0,
        csum_start: m.vnet.csum_start,
        csum_offset: m.vnet.csum_offset,
        tunnel: m.vnet.tunnel,
        vnet: m.vnet,
        end: m.end,
    }
}

pub(super) fn reason(r: Result<Held, Refusal>) -> super::Reason {
    r.expect_err("expected a refusal").reason()
}
