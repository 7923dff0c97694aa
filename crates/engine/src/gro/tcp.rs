//! TCP merge rules (kernel `tcp_gro_receive`; wireguard-go `tcpPacketsCanCoalesce`).

use super::flow::same_bytes;
use super::reason::Reason;
use crate::wire::{TcpFlags, TcpPacket};

/// Byte holding the data offset, the reserved bits and NS; `TcpPacket` exposes only the
/// offset, but the kernel compares the whole byte.
const DATA_OFFSET_BYTE: usize = 12;
const TCP_FIXED_HEADER_LEN: usize = 20;

/// What the merge rules need from one TCP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TcpFacts {
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    pub window: u16,
    pub header_len: u16,
    /// Data offset, reserved bits and NS, as on the wire.
    pub offset_byte: u8,
}

/// Flags that may differ inside a run: PSH and FIN end it (CWR is refused earlier).
const RUN_VARIANT_FLAGS: TcpFlags = TcpFlags(TcpFlags::PSH.bits() | TcpFlags::FIN.bits());

/// Reads a TCP header; `header` is exactly the header `parse_frame` measured.
#[inline]
pub(crate) fn read(header: &[u8]) -> TcpFacts {
    // The fixed part as an array: the getters then need no bounds checks.
    let fixed: [u8; TCP_FIXED_HEADER_LEN] = header
        .get(..TCP_FIXED_HEADER_LEN)
        .and_then(|h| h.try_into().ok())
        .unwrap_or([0; TCP_FIXED_HEADER_LEN]);
    let tcp = TcpPacket::new_unchecked(&fixed);
    TcpFacts {
        seq: tcp.seq_number(),
        ack: tcp.ack_number(),
        flags: tcp.flags(),
        window: tcp.window(),
        header_len: u16::try_from(header.len()).unwrap_or(u16::MAX),
        offset_byte: fixed[DATA_OFFSET_BYTE],
    }
}

/// Rules that refuse a segment whatever the flow holds.
pub(crate) fn refuse_alone(tcp: &TcpFacts, payload_len: usize) -> Result<(), Reason> {
    if tcp.flags.contains(TcpFlags::SYN) {
        return Err(Reason::Syn);
    }
    if tcp.flags.contains(TcpFlags::RST) {
        return Err(Reason::Rst);
    }
    if tcp.flags.contains(TcpFlags::URG) {
        return Err(Reason::Urg);
    }
    // Linux 6.18 delivers a CWR segment on its own (after the flow's held run), whether
    // it would start a run or continue one; measured by tests/kernel_gro.rs.
    if tcp.flags.contains(TcpFlags::CWR) {
        return Err(Reason::Cwr);
    }
    if !tcp.flags.contains(TcpFlags::ACK) {
        return Err(Reason::NoAck);
    }
    if payload_len == 0 {
        return Err(Reason::NoPayload);
    }
    Ok(())
}

/// Whether a segment may be the head of a new run: one with PSH or FIN is delivered at
/// once instead (kernel: it sets `flush`, so it is never held).
pub(crate) fn can_open(tcp: &TcpFacts) -> Result<(), Reason> {
    if tcp.flags.contains(TcpFlags::PSH) {
        return Err(Reason::Psh);
    }
    if tcp.flags.contains(TcpFlags::FIN) {
        return Err(Reason::Fin);
    }
    Ok(())
}

/// The TCP state of a held run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TcpRun {
    pub head: TcpFacts,
    /// Sequence number the next segment must carry.
    pub next_seq: u32,
}

impl TcpRun {
    pub fn open(head: TcpFacts, payload_len: usize) -> Self {
        TcpRun {
            head,
            next_seq: head.seq.wrapping_add(payload_len as u32),
        }
    }
}

/// Whether `pkt` continues `run`. `pkt_options`/`held_options` are the option bytes of
/// the segment and of the run's head; `seg_size` is the run's segment size.
#[inline(always)]
pub(crate) fn can_join(
    run: &TcpRun,
    pkt: &TcpFacts,
    pkt_options: &[u8],
    held_options: &[u8],
    payload_len: usize,
    seg_size: usize,
) -> Result<(), Reason> {
    let head = &run.head;
    if pkt.header_len != head.header_len || !same_bytes(pkt_options, held_options) {
        return Err(Reason::OptionsDiffer);
    }
    if pkt.flags.without(RUN_VARIANT_FLAGS) != head.flags.without(RUN_VARIANT_FLAGS)
        || pkt.offset_byte != head.offset_byte
    {
        return Err(Reason::FlagsDiffer);
    }
    if pkt.ack != head.ack {
        return Err(Reason::AckDiffers);
    }
    if pkt.window != head.window {
        return Err(Reason::WindowDiffers);
    }
    if payload_len > seg_size {
        return Err(Reason::SizeDiffers);
    }
    if pkt.seq != run.next_seq {
        return Err(Reason::NotContiguous);
    }
    Ok(())
}

/// Why a segment that joined a run also ends it, if it does.
pub(crate) fn ends_run(pkt: &TcpFacts, payload_len: usize, seg_size: usize) -> Option<Reason> {
    ends_run_by_flags(pkt.flags, payload_len, seg_size)
}

/// `ends_run` from the segment's flags.
#[inline(always)]
pub(crate) fn ends_run_by_flags(flags: TcpFlags, payload_len: usize, seg_size: usize) -> Option<Reason> {
    if flags.contains(TcpFlags::PSH) {
        Some(Reason::PshEnd)
    } else if flags.contains(TcpFlags::FIN) {
        Some(Reason::FinEnd)
    } else if payload_len < seg_size {
        Some(Reason::ShortSegment)
    } else {
        None
    }
}

/// The option bytes of a TCP header of `header_len` bytes starting at `l4` in `bytes`.
pub(crate) fn options(bytes: &[u8], l4: usize, header_len: u16) -> &[u8] {
    bytes
        .get(l4 + TCP_FIXED_HEADER_LEN..l4 + usize::from(header_len))
        .unwrap_or(&[])
}
