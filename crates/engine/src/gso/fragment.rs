//! UDP fragmentation offload (UFO): one UDP datagram becomes IPv4 fragments. Only the
//! first fragment carries the UDP header, whose checksum covers the whole datagram.

use crate::chain::Sums;
use crate::checksum;

use super::be;
use super::ip::v4;
use super::output::GsoOutput;
use super::plan::Plan;
use super::tunnel::{udp, Tail};
use super::udp::ZERO_CHECKSUM_SUBSTITUTE;
use super::limits::segment_count;
use super::{GsoError, GsoParams};

/// Fragment offsets count 8-byte units, so every fragment but the last carries a
/// multiple of 8 bytes: the size asked for is rounded down to one.
const FRAGMENT_UNIT: usize = 8;

/// Fragments a UDP datagram described by `plan`. The checksum is always completed here
/// (as Linux does): no device can finish a checksum spread over several fragments.
pub(super) fn segment(
    frame: &[u8],
    source: impl Sums,
    plan: &Plan,
    params: &GsoParams,
    out: &mut GsoOutput,
) -> Result<(), GsoError> {
    let unit = usize::from(params.segment_size) / FRAGMENT_UNIT * FRAGMENT_UNIT;
    if unit == 0 {
        return Err(GsoError::FragmentSizeTooSmall);
    }
    let at = plan.l4_offset;
    // The IP payload being fragmented: UDP header and data.
    let datagram = at..plan.payload_end;
    let count = segment_count(datagram.len(), unit)?;
    let udp_checksum = datagram_checksum(frame, source, plan, datagram.len());
    let first_template = &frame[..plan.headers_len];
    let next_template = &frame[..at];
    let per_fragment_sums = plan.needs_tail_sum();
    out.reserve(count, first_template.len());
    for index in 0..count {
        let ip_start = datagram.start + index * unit;
        let ip_end = datagram.end.min(ip_start + unit);
        let (template, payload) = if index == 0 {
            (first_template, plan.payload_start..ip_end)
        } else {
            (next_template, ip_start..ip_end)
        };
        let tail_sum = if per_fragment_sums {
            source.sum(frame, payload.clone(), 0)
        } else {
            0
        };
        let wire_len = at + (ip_end - ip_start);
        let header = out.push(template, payload);
        if index == 0 {
            be::put16(header, at + udp::LENGTH, datagram.len() as u16);
            be::put16(header, at + udp::CHECKSUM, udp_checksum);
        }
        // A lone fragment is the datagram itself and keeps its flags (DF included);
        // real fragments get offset and MF, and DF cleared as Linux does.
        let frag_word = (count > 1).then(|| {
            let more = if index + 1 < count { v4::MF } else { 0 };
            ((index * unit / FRAGMENT_UNIT) as u16 & v4::OFFSET_MASK) | more
        });
        let tail = Tail {
            start: template.len(),
            sum: tail_sum,
        };
        // Fragments of one datagram share its IP ID.
        plan.patch_ip_layers(header, wire_len, index, 0, frag_word, tail);
    }
    Ok(())
}

/// The UDP checksum of the whole datagram (header with its length, data, pseudo-header).
fn datagram_checksum(frame: &[u8], source: impl Sums, plan: &Plan, datagram_len: usize) -> u16 {
    let at = plan.l4_offset;
    let length = datagram_len as u32;
    let ports = checksum::sum(&frame[at..at + udp::LENGTH], 0);
    let data = source.sum(frame, plan.payload(), 0);
    match checksum::finish(ports + length + plan.pseudo_seed + length + data) {
        0 => ZERO_CHECKSUM_SUBSTITUTE,
        check => check,
    }
}
