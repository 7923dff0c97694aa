//! What leaves towards the egress port, shared by the per-frame path (forward.rs) and
//! the GRO path (coalesce.rs) below both of them: the mode, what the egress accepts, and
//! the virtio-net header a frame that is not a super-packet leaves with.

use crate::port::Offloads;
use crate::stats::Counters;
use offlab_engine::virtio::{self, ChecksumState, Flags, GsoRequest, Header, TunnelGso};

/// What the forwarder does with offloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Hand super-packets and partial checksums on when the egress accepts them;
    /// segment or complete otherwise (the least work).
    Pass,
    /// Send only MTU-size frames with complete checksums (no offload towards egress).
    Csum,
    /// Segment every super-packet in software (checksums left partial when the egress
    /// accepts that).
    Gso,
    /// Coalesce each batch's MTU-size frames into super-packets for the egress.
    Gro,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Pass => "pass",
            Mode::Csum => "csum",
            Mode::Gso => "gso",
            Mode::Gro => "gro",
        }
    }
}

/// What the egress port accepts now.
#[derive(Debug, Clone, Copy)]
pub struct Egress {
    pub offloads: Offloads,
    /// Largest IP packet the egress device carries.
    pub mtu: usize,
}

impl Egress {
    /// Whether a super-packet of this kind (inside this UDP tunnel, if any) may be
    /// written to the egress as it is.
    pub(crate) fn accepts(&self, request: &GsoRequest, tunnel: Option<&TunnelGso>) -> bool {
        let o = &self.offloads;
        let tunnel_ok =
            tunnel.is_none_or(|t| o.udp_tunnel && (!t.outer_checksum || o.udp_tunnel_csum));
        let kind = match request.kind {
            virtio::GsoKind::TcpV4 => o.tso4,
            virtio::GsoKind::TcpV6 => o.tso6,
            virtio::GsoKind::Uso => o.uso,
            virtio::GsoKind::Ufo => false,
        };
        kind && tunnel_ok && o.csum && (!request.ecn || o.ecn)
    }
}

/// Where a partial checksum is, in frame offsets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChecksumSpan {
    pub start: usize,
    pub offset: usize,
    pub end: usize,
}

/// The vnet header a non-GSO frame leaves with: a partial checksum is handed on when
/// the egress accepts it (and the mode allows), otherwise queued for completion over
/// the frame up to `end` (the end of its IP packet: Ethernet padding is not summed).
pub(crate) fn checksum_header(
    mode: Mode,
    slot: usize,
    state: ChecksumState,
    end: usize,
    egress: &Egress,
    counters: &mut Counters,
    to_complete: &mut Vec<(usize, ChecksumSpan)>,
) -> Header {
    match state {
        ChecksumState::Partial { start, offset } if mode == Mode::Csum || !egress.offloads.csum => {
            to_complete.push((slot, ChecksumSpan { start, offset, end }));
            counters.checksums_completed += 1;
            Header::none()
        }
        ChecksumState::Partial { start, offset } => Header {
            flags: Flags::NEEDS_CSUM,
            csum_start: start as u16,
            csum_offset: offset as u16,
            ..Header::none()
        },
        ChecksumState::Valid if egress.offloads.csum => Header::data_valid(),
        ChecksumState::Valid | ChecksumState::Complete => Header::none(),
    }
}
