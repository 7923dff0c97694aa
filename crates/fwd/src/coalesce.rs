//! The `gro` mode: each batch's MTU-size frames go through the engine's GRO table and
//! leave as super-packets (a fresh header plus payload slices of the received frames),
//! flushed at the end of every batch like a NAPI poll.

use crate::egress::{checksum_header, ChecksumSpan, Egress, Mode};
use crate::port::TxQueue;
use crate::stats::Counters;
use offlab_engine::gro::{Gro, GroConfig, Merged, RxMeta};
use offlab_engine::virtio::{ChecksumState, TunnelGso};
use offlab_engine::wire::{IpVersion, L4Proto, Layout};

/// What the forwarder remembers of a frame it handed to GRO, to send it on its own if
/// it comes back unmerged.
#[derive(Clone, Copy)]
struct Offered {
    checksum: ChecksumState,
    /// Where its IP packet ends (all of the layout a run of one needs: storing the
    /// whole layout was a memcpy call per frame offered).
    frame_end: usize,
    frame_len: usize,
}

pub struct Coalescer {
    gro: Gro,
    offered: Vec<Option<Offered>>,
    batches: u64,
    /// Length of the vnet header before each frame of the current batch.
    vnet_len: usize,
}

/// Where a delivered run goes: borrowed pieces of the caller's state.
struct Sink<'a> {
    egress: &'a Egress,
    tx: &'a mut TxQueue,
    counters: &'a mut Counters,
    to_complete: &'a mut Vec<(usize, ChecksumSpan)>,
    offered: &'a [Option<Offered>],
    vnet_len: usize,
}

impl Sink<'_> {
    fn deliver(&mut self, run: Merged<'_>) {
        if run.segments > 1 {
            self.counters.merged_super_packets += 1;
            self.counters.merged_packets += u64::from(run.segments);
            self.begin_run(&run);
            self.tx.push_bytes(run.header);
            for part in run.parts {
                let payload = part.payload();
                self.tx
                    .push_rx(part.id as usize, self.vnet_len + payload.start..self.vnet_len + payload.end);
            }
            return;
        }
        // A run of one: the frame goes as it came, with the header its checksum needs.
        let Some(part) = run.parts.first() else {
            return;
        };
        let slot = part.id as usize;
        let Some(Some(offered)) = self.offered.get(slot) else {
            return;
        };
        let header = checksum_header(
            Mode::Gro,
            slot,
            offered.checksum,
            offered.frame_end,
            self.egress,
            self.counters,
            self.to_complete,
        );
        self.tx.begin(&header.to_bytes());
        self.tx
            .push_rx(slot, self.vnet_len..self.vnet_len + offered.frame_len);
    }
}

impl Sink<'_> {
    /// Starts a merged run's frame; a tunnelled run's header carries the tunnel fields
    /// (GRO sets them; such runs are offered only to a `udptnl` egress).
    fn begin_run(&mut self, run: &Merged<'_>) {
        self.tx.begin_header(&run.vnet);
    }
}

impl Coalescer {
    pub fn new() -> Coalescer {
        Coalescer {
            gro: Gro::new(GroConfig::default()),
            offered: Vec::new(),
            batches: 0,
            vnet_len: crate::port::VNET_LEN,
        }
    }

    /// Offers frame `slot` to GRO. `true`: GRO took it (it leaves with a run);
    /// `false`: send it on as usual (after whatever this call queued).
    #[allow(clippy::too_many_arguments)]
    pub fn offer(
        &mut self,
        slot: usize,
        frame: &[u8],
        layout: &Layout,
        checksum: ChecksumState,
        egress: &Egress,
        tx: &mut TxQueue,
        counters: &mut Counters,
        to_complete: &mut Vec<(usize, ChecksumSpan)>,
    ) -> bool {
        if !egress_takes_runs_of(frame, layout, egress) {
            return false;
        }
        if self.offered.len() <= slot {
            self.offered.resize(slot + 1, None);
        }
        self.offered[slot] = Some(Offered {
            checksum,
            frame_end: layout.frame_end(),
            frame_len: frame.len(),
        });
        let meta = RxMeta {
            csum_validated: !matches!(checksum, ChecksumState::Complete),
            now: self.batches,
        };
        let mut sink = Sink {
            egress,
            tx,
            counters,
            to_complete,
            offered: &self.offered,
            vnet_len: self.vnet_len,
        };
        match self
            .gro
            .push(slot as u64, frame, meta, &mut |run| sink.deliver(run))
        {
            Ok(_) => true,
            Err(refusal) => {
                sink.counters.gro_refused(refusal.reason().name());
                false
            }
        }
    }

    /// Delivers every held run (end of a batch, or before a super-packet passes).
    pub fn flush(
        &mut self,
        egress: &Egress,
        tx: &mut TxQueue,
        counters: &mut Counters,
        to_complete: &mut Vec<(usize, ChecksumSpan)>,
    ) {
        let mut sink = Sink {
            egress,
            tx,
            counters,
            to_complete,
            offered: &self.offered,
            vnet_len: self.vnet_len,
        };
        self.gro.flush(&mut |run| sink.deliver(run));
    }

    /// Sets the header length of the batch about to be offered.
    pub fn begin_batch(&mut self, vnet_len: usize) {
        self.vnet_len = vnet_len;
    }

    /// Called once the batch's frames are all sent: their slots are reused next.
    pub fn end_batch(&mut self) {
        self.batches += 1;
        self.offered.iter_mut().for_each(|o| *o = None);
    }
}

/// GRO is worth it only if the egress takes the super-packet the run would become;
/// tunnelled frames only for an egress with `udptnl` (and `udptnl-csum` when they
/// carry an outer UDP checksum): a 12-byte header cannot describe tunnel GSO.
fn egress_takes_runs_of(frame: &[u8], layout: &Layout, egress: &Egress) -> bool {
    let o = &egress.offloads;
    if layout.ip.is_fragment || !o.csum {
        return false;
    }
    if layout.tunnel.is_some() {
        let Some(tunnel) = TunnelGso::describe(layout, frame) else {
            return false;
        };
        if !o.udp_tunnel || (tunnel.outer_checksum && !o.udp_tunnel_csum) {
            return false;
        }
    }
    match (layout.ip.l4, layout.ip.version) {
        (L4Proto::Tcp, IpVersion::V4) => o.tso4,
        (L4Proto::Tcp, IpVersion::V6) => o.tso6,
        (L4Proto::Udp, _) => o.uso,
        (L4Proto::Other(_), _) => false,
    }
}
