//! UDP merge rules, USO style (kernel `udp_gro_receive_segment`): datagrams of one
//! flow are kept in order; all but the last have the head's length.

use super::reason::Reason;
use crate::wire::UdpPacket;

/// What the merge rules need from one UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UdpFacts {
    /// The UDP length field (header + payload).
    pub len: u16,
    pub checksum: u16,
}

pub(crate) fn read(header: &[u8]) -> UdpFacts {
    let udp = UdpPacket::new_unchecked(header);
    UdpFacts {
        len: udp.len(),
        checksum: udp.checksum(),
    }
}

/// Rules that refuse a datagram whatever the flow holds.
pub(crate) fn refuse_alone(udp: &UdpFacts, payload_len: usize) -> Result<(), Reason> {
    // The kernel coalesces only checksummed datagrams, for symmetry with GSO.
    if udp.checksum == 0 {
        return Err(Reason::UdpZeroChecksum);
    }
    if payload_len == 0 {
        return Err(Reason::NoPayload);
    }
    Ok(())
}

/// Whether a datagram of `pkt.len` may follow a run whose head was `head_len` long.
pub(crate) fn can_join(head_len: u16, pkt: &UdpFacts) -> Result<(), Reason> {
    if pkt.len > head_len {
        return Err(Reason::SizeDiffers);
    }
    Ok(())
}

/// A shorter datagram is the last of its run.
pub(crate) fn ends_run(head_len: u16, pkt: &UdpFacts) -> Option<Reason> {
    (pkt.len < head_len).then_some(Reason::ShortSegment)
}
