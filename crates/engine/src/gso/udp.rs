//! UDP segmentation offload (USO, Linux's UDP_L4): the payload is cut into datagrams of
//! `segment_size` bytes, each with its own UDP header, length and checksum.

use crate::chain::Sums;
use crate::checksum;

use super::be;
use super::output::{GsoOutput, PartialChecksum};
use super::plan::Plan;
use super::tunnel::{udp, Tail};
use super::limits::segment_count;
use super::{GsoError, GsoParams, L4Checksum};

/// The checksum value sent when the computed one is zero (zero means "none" in UDP).
pub(super) const ZERO_CHECKSUM_SUBSTITUTE: u16 = 0xffff;

/// Segments a UDP super-packet described by `plan` into one datagram per segment.
pub(super) fn segment(
    frame: &[u8],
    source: impl Sums,
    plan: &Plan,
    params: &GsoParams,
    out: &mut GsoOutput,
) -> Result<(), GsoError> {
    let size = usize::from(params.segment_size);
    let payload = plan.payload();
    let count = segment_count(payload.len(), size)?;
    let at = plan.l4_offset;
    let template = &frame[..plan.headers_len];
    // Source and destination ports: the only constant part of the UDP header.
    let ports_sum = checksum::sum(&template[at..at + udp::LENGTH], 0);
    let full = params.checksum == L4Checksum::Full;
    let fixed_id = params.fixed_ip_id;
    if !full {
        out.set_partial_checksum(Some(PartialChecksum {
            start: at as u16,
            offset: udp::CHECKSUM as u16,
        }));
    }
    out.reserve(count, template.len());
    // Software checksums: every datagram's payload summed in one pass first.
    let sums = if full {
        out.payload_sums((frame, source), payload.clone(), size, count)
    } else {
        Vec::new()
    };
    let mut start = payload.start;
    for index in 0..count {
        let end = payload.end.min(start + size);
        let payload_sum = sums.get(index).copied().unwrap_or(0);
        let wire_len = plan.headers_len + (end - start);
        let header = out.push(template, start..end);

        let length = (wire_len - at) as u16;
        be::put16(header, at + udp::LENGTH, length);
        let pseudo = plan.pseudo_seed + u32::from(length);
        let check = if full {
            let sum = ports_sum + u32::from(length) + pseudo + payload_sum;
            match checksum::finish(sum) {
                0 => ZERO_CHECKSUM_SUBSTITUTE,
                check => check,
            }
        } else {
            checksum::fold(pseudo)
        };
        be::put16(header, at + udp::CHECKSUM, check);

        let tail = Tail {
            start: at,
            sum: u32::from(!checksum::fold(pseudo)),
        };
        let id_step = if fixed_id { 0 } else { index as u16 };
        plan.patch_ip_layers(header, wire_len, index, id_step, None, tail);
        start = end;
    }
    if full {
        out.put_payload_sums(sums);
    }
    Ok(())
}
