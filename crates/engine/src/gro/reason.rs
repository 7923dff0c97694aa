//! Why a packet was not merged, or why a run ended: one variant per rule.

use crate::wire::ParseError;

/// The rule that stopped a merge. Used both for packets handed back unmerged
/// ([`super::Refusal`]) and for runs that were ended (flushed) by a packet.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    // --- the packet itself cannot be coalesced (it is handed back) ---
    /// `wire::parse::parse_frame` refused the frame.
    Unparseable(ParseError),
    /// The innermost transport is neither TCP nor UDP.
    NotTcpOrUdp,
    /// A tunnel GRO does not handle (GRE; Geneve OAM).
    TunnelUnsupported,
    /// IPv4 header longer than 20 bytes (options), inner or outer.
    IpOptions,
    /// An IPv4 fragment (MF or offset set, or the reserved flag) or an IPv6
    /// Fragment header.
    Fragment,
    /// Bytes after the end of the IP packet (Ethernet padding).
    Padded,
    /// Headers longer than the per-flow header slot.
    HeaderTooLong,
    /// An IPv4 header checksum that does not verify (always checked, like the kernel).
    BadIpChecksum,
    /// A TCP/UDP checksum that does not verify (checked unless validated).
    BadL4Checksum,
    /// UDP with checksum 0: the kernel coalesces only checksummed datagrams.
    UdpZeroChecksum,
    /// No transport payload (pure ACK, empty datagram).
    NoPayload,
    Syn,
    Rst,
    Urg,
    /// TCP without ACK set.
    NoAck,
    /// PSH on a packet that has no run to join (the kernel delivers it at once).
    Psh,
    /// FIN on a packet that has no run to join.
    Fin,
    /// CWR: delivered on its own, like Linux 6.18 does.
    Cwr,

    // --- the packet belongs to a held flow but starts a new run ---
    TtlDiffers,
    TosDiffers,
    DfDiffers,
    IpIdNotSequential,
    /// IPv6 traffic class differs.
    TrafficClassDiffers,
    HopLimitDiffers,
    /// TCP data offset or option bytes differ.
    OptionsDiffer,
    WindowDiffers,
    AckDiffers,
    /// TCP flags other than PSH/FIN/CWR differ (ECE, NS).
    FlagsDiffer,
    /// The sequence number is not the end of the held data.
    NotContiguous,
    /// The payload is longer than the run's segment size.
    SizeDiffers,
    /// Appending would exceed `max_bytes` of outermost IP length.
    SizeCap,

    // --- the packet was merged and ended its run ---
    /// PSH merged: the run is delivered.
    PshEnd,
    /// FIN merged: the run is delivered.
    FinEnd,
    /// A segment shorter than the segment size is the last of a run.
    ShortSegment,
    /// The run reached `max_segments_tcp` / `max_segments_udp`.
    SegmentCap,

    // --- flushes not caused by a rule ---
    /// The table was full: the oldest flow was delivered to make room.
    TableFull,
}

impl Reason {
    /// Number of distinct counters (one per variant; every parse error counts as one).
    pub const COUNT: usize = 36;

    /// Every variant once, in counter order (`Unparseable` with a representative error).
    pub const ALL: [Reason; Reason::COUNT] = [
        Reason::Unparseable(ParseError::TooManyVlanTags),
        Reason::NotTcpOrUdp,
        Reason::TunnelUnsupported,
        Reason::IpOptions,
        Reason::Fragment,
        Reason::Padded,
        Reason::HeaderTooLong,
        Reason::BadIpChecksum,
        Reason::BadL4Checksum,
        Reason::UdpZeroChecksum,
        Reason::NoPayload,
        Reason::Syn,
        Reason::Rst,
        Reason::Urg,
        Reason::NoAck,
        Reason::Psh,
        Reason::Fin,
        Reason::Cwr,
        Reason::TtlDiffers,
        Reason::TosDiffers,
        Reason::DfDiffers,
        Reason::IpIdNotSequential,
        Reason::TrafficClassDiffers,
        Reason::HopLimitDiffers,
        Reason::OptionsDiffer,
        Reason::WindowDiffers,
        Reason::AckDiffers,
        Reason::FlagsDiffer,
        Reason::NotContiguous,
        Reason::SizeDiffers,
        Reason::SizeCap,
        Reason::PshEnd,
        Reason::FinEnd,
        Reason::ShortSegment,
        Reason::SegmentCap,
        Reason::TableFull,
    ];

    /// Position of this reason's counter in [`Reason::ALL`].
    pub fn index(self) -> usize {
        match self {
            Reason::Unparseable(_) => 0,
            Reason::NotTcpOrUdp => 1,
            Reason::TunnelUnsupported => 2,
            Reason::IpOptions => 3,
            Reason::Fragment => 4,
            Reason::Padded => 5,
            Reason::HeaderTooLong => 6,
            Reason::BadIpChecksum => 7,
            Reason::BadL4Checksum => 8,
            Reason::UdpZeroChecksum => 9,
            Reason::NoPayload => 10,
            Reason::Syn => 11,
            Reason::Rst => 12,
            Reason::Urg => 13,
            Reason::NoAck => 14,
            Reason::Psh => 15,
            Reason::Fin => 16,
            Reason::Cwr => 17,
            Reason::TtlDiffers => 18,
            Reason::TosDiffers => 19,
            Reason::DfDiffers => 20,
            Reason::IpIdNotSequential => 21,
            Reason::TrafficClassDiffers => 22,
            Reason::HopLimitDiffers => 23,
            Reason::OptionsDiffer => 24,
            Reason::WindowDiffers => 25,
            Reason::AckDiffers => 26,
            Reason::FlagsDiffer => 27,
            Reason::NotContiguous => 28,
            Reason::SizeDiffers => 29,
            Reason::SizeCap => 30,
            Reason::PshEnd => 31,
            Reason::FinEnd => 32,
            Reason::ShortSegment => 33,
            Reason::SegmentCap => 34,
            Reason::TableFull => 35,
        }
    }

    /// A short, stable name for counters and logs.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Unparseable(_) => "unparseable",
            Reason::NotTcpOrUdp => "not tcp or udp",
            Reason::TunnelUnsupported => "tunnel unsupported",
            Reason::IpOptions => "ip options",
            Reason::Fragment => "fragment",
            Reason::Padded => "padded",
            Reason::HeaderTooLong => "header too long",
            Reason::BadIpChecksum => "bad ip checksum",
            Reason::BadL4Checksum => "bad l4 checksum",
            Reason::UdpZeroChecksum => "udp zero checksum",
            Reason::NoPayload => "no payload",
            Reason::Syn => "syn",
            Reason::Rst => "rst",
            Reason::Urg => "urg",
            Reason::NoAck => "no ack",
            Reason::Psh => "psh",
            Reason::Fin => "fin",
            Reason::Cwr => "cwr",
            Reason::TtlDiffers => "ttl differs",
            Reason::TosDiffers => "tos differs",
            Reason::DfDiffers => "df differs",
            Reason::IpIdNotSequential => "ip id not sequential",
            Reason::TrafficClassDiffers => "traffic class differs",
            Reason::HopLimitDiffers => "hop limit differs",
            Reason::OptionsDiffer => "tcp options differ",
            Reason::WindowDiffers => "window differs",
            Reason::AckDiffers => "ack differs",
            Reason::FlagsDiffer => "tcp flags differ",
            Reason::NotContiguous => "not contiguous",
            Reason::SizeDiffers => "segment size differs",
            Reason::SizeCap => "size cap",
            Reason::PshEnd => "psh ends run",
            Reason::FinEnd => "fin ends run",
            Reason::ShortSegment => "short segment ends run",
            Reason::SegmentCap => "segment cap",
            Reason::TableFull => "table full",
        }
    }
}

impl core::fmt::Display for Reason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Reason::Unparseable(e) => write!(f, "unparseable: {e}"),
            other => f.write_str(other.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_its_own_counter() {
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert_eq!(r.index(), i, "{r:?}");
        }
        let mut names: Vec<_> = Reason::ALL.iter().map(|r| r.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Reason::COUNT);
    }
}
