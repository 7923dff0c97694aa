//! A held run and the decision whether a packet continues it: `can_coalesce` decides
//! (and only decides), `Run::append` mutates.

use super::facts::{Facts, L4Facts};
use super::ip::{self, IdMode, IpFacts};
use super::reason::Reason;
use super::tcp::{self, TcpRun};
use super::tunnel::OuterFacts;
use super::udp;
use crate::wire::TcpFlags;

/// Caps a run must stay within (from `GroConfig`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_bytes: usize,
    pub max_segments_tcp: u16,
    pub max_segments_udp: u16,
}

impl Limits {
    fn max_segments(&self, l4: &RunL4) -> u16 {
        match l4 {
            RunL4::Tcp(_) => self.max_segments_tcp,
            RunL4::Udp { .. } => self.max_segments_udp,
        }
    }
}

/// The state of one held run: its head's facts and what has been appended.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Run {
    /// The caller's clock when the head arrived.
    pub opened_at: u64,
    pub segments: u16,
    /// Payload length of the head: every segment but the last has it.
    pub seg_size: u16,
    pub last_len: u16,
    /// Header bytes before the payload (the same for every segment of the run).
    pub headers_len: u16,
    /// Length of the outermost IP packet once merged.
    pub outer_ip_len: u32,
    pub ip: IpFacts,
    pub ip_ids: IdMode,
    pub outer: Option<OuterFacts>,
    pub outer_ids: IdMode,
    pub l4: RunL4,
    /// PSH/FIN of the segment that ended the run, to be set on the merged header.
    pub end_flags: TcpFlags,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum RunL4 {
    Tcp(TcpRun),
    /// UDP: the head datagram's UDP length.
    Udp {
        head_len: u16,
    },
}

/// What to do with a packet of a held flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Append it; `ends` says why the run is complete afterwards, if it is.
    Join {
        ids: (IdMode, IdMode),
        ends: Option<Reason>,
    },
    /// Deliver the run as it is; the packet may then start a new one.
    Restart(Reason),
}

impl Run {
    /// The contents of an unused slot.
    pub fn blank() -> Run {
        let ip = IpFacts {
            v6: false,
            ttl: 0,
            tos: 0,
            df: false,
            id: 0,
        };
        Run {
            opened_at: 0,
            segments: 0,
            seg_size: 0,
            last_len: 0,
            headers_len: 0,
            outer_ip_len: 0,
            ip,
            ip_ids: IdMode::Undecided,
            outer: None,
            outer_ids: IdMode::Undecided,
            l4: RunL4::Udp { head_len: 0 },
            end_flags: TcpFlags::NONE,
        }
    }

    /// A run whose head is `pkt`.
    pub fn open(pkt: &Facts, now: u64) -> Run {
        let l4 = match pkt.l4 {
            L4Facts::Tcp(t) => RunL4::Tcp(TcpRun::open(t, pkt.payload_len)),
            L4Facts::Udp(u) => RunL4::Udp { head_len: u.len },
        };
        Run {
            opened_at: now,
            segments: 1,
            seg_size: narrow(pkt.payload_len),
            last_len: narrow(pkt.payload_len),
            headers_len: narrow(pkt.headers_len),
            outer_ip_len: pkt.outer_ip_len as u32,
            ip: pkt.ip,
            ip_ids: IdMode::Undecided,
            outer: pkt.outer,
            outer_ids: IdMode::Undecided,
            l4,
            end_flags: TcpFlags::NONE,
        }
    }

    /// Total payload bytes held.
    pub fn payload_total(&self) -> usize {
        usize::from(self.seg_size) * usize::from(self.segments.saturating_sub(1))
            + usize::from(self.last_len)
    }

    /// Whether the run holds as many segments as it may.
    pub fn is_full(&self, limits: &Limits) -> bool {
        self.segments >= limits.max_segments(&self.l4)
    }

    /// Appends `pkt` as `can_coalesce` allowed.
    pub fn append(&mut self, pkt: &Facts, ids: (IdMode, IdMode)) {
        let flags = match &pkt.l4 {
            L4Facts::Tcp(t) => Some(t.flags),
            L4Facts::Udp(_) => None,
        };
        self.append_segment(pkt.payload_len, flags, ids);
    }

    /// Appends a segment of `payload_len` bytes (`tcp_flags`: its TCP flags, if TCP).
    #[inline(always)]
    pub fn append_segment(
        &mut self,
        payload_len: usize,
        tcp_flags: Option<TcpFlags>,
        ids: (IdMode, IdMode),
    ) {
        self.segments += 1;
        self.last_len = narrow(payload_len);
        self.outer_ip_len += payload_len as u32;
        (self.ip_ids, self.outer_ids) = ids;
        if let (RunL4::Tcp(run), Some(flags)) = (&mut self.l4, tcp_flags) {
            run.next_seq = run.next_seq.wrapping_add(payload_len as u32);
            self.end_flags = flags & TcpFlags(TcpFlags::PSH.bits() | TcpFlags::FIN.bits());
        }
    }
}

/// Whether `pkt` (from `frame`) continues `run`, whose head's header is `held`.
/// Rules in order, each an early return with its reason.
#[inline(always)]
pub(crate) fn can_coalesce(
    run: &Run,
    held: &[u8],
    frame: &[u8],
    pkt: &Facts,
    limits: &Limits,
) -> Verdict {
    let ids = match network_rules(run, pkt) {
        Ok(ids) => ids,
        Err(reason) => return Verdict::Restart(reason),
    };
    let transport = match (&run.l4, &pkt.l4) {
        (RunL4::Tcp(t), L4Facts::Tcp(p)) => {
            let l4 = usize::from(pkt.shape.ip_offset) + usize::from(pkt.shape.ip_header_len);
            let pkt_options = tcp::options(frame, l4, p.header_len);
            let held_options = tcp::options(held, l4, t.head.header_len);
            tcp::can_join(
                t,
                p,
                pkt_options,
                held_options,
                pkt.payload_len,
                usize::from(run.seg_size),
            )
            .map(|()| tcp::ends_run(p, pkt.payload_len, usize::from(run.seg_size)))
        }
        (RunL4::Udp { head_len }, L4Facts::Udp(p)) => {
            udp::can_join(*head_len, p).map(|()| udp::ends_run(*head_len, p))
        }
        // Unreachable for one flow (the transport is part of its shape); refuse safely.
        _ => Err(Reason::NotTcpOrUdp),
    };
    let ends = match transport {
        Ok(ends) => ends,
        Err(reason) => return Verdict::Restart(reason),
    };
    if run.outer_ip_len as usize + pkt.payload_len > limits.max_bytes {
        return Verdict::Restart(Reason::SizeCap);
    }
    let full = run.segments + 1 >= limits.max_segments(&run.l4);
    let ends = ends.or(full.then_some(Reason::SegmentCap));
    Verdict::Join { ids, ends }
}

/// Outer then inner IP rules; the ID modes after this packet.
#[inline(always)]
fn network_rules(run: &Run, pkt: &Facts) -> Result<(IdMode, IdMode), Reason> {
    let outer_ids = match (&run.outer, &pkt.outer) {
        (Some(head), Some(p)) => ip::can_join(&head.ip, run.outer_ids, &p.ip, run.segments)?,
        _ => run.outer_ids,
    };
    let ip_ids = ip::can_join(&run.ip, run.ip_ids, &pkt.ip, run.segments)?;
    Ok((ip_ids, outer_ids))
}

fn narrow(v: usize) -> u16 {
    u16::try_from(v).unwrap_or(u16::MAX)
}
