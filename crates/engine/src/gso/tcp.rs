//! TCP segmentation (TSO in software): every segment repeats the headers with its own
//! sequence number, flags, lengths, IPv4 ID and checksums.

use crate::chain::Sums;
use crate::checksum;

use super::be;
use super::fast::FastTcp;
use super::tcp_fields::{field, TcpFields};
use super::output::{GsoOutput, HeaderTargets, PartialChecksum};
use super::plan::Plan;
use super::tunnel::Tail;
use super::limits::segment_count;
use super::{GsoError, GsoParams, L4Checksum};

/// Segments a TCP super-packet described by `plan` into `out`; the fast path writes
/// the headers into `targets` when they fit (`FastTcp::run`).
pub(super) fn segment(
    frame: &[u8],
    source: impl Sums,
    plan: &Plan,
    params: &GsoParams,
    out: &mut GsoOutput,
    targets: Option<HeaderTargets<'_>>,
) -> Result<(), GsoError> {
    let mss = usize::from(params.segment_size);
    let payload = plan.payload();
    let count = segment_count(payload.len(), mss)?;
    let full = params.checksum == L4Checksum::Full;
    if !full {
        out.set_partial_checksum(Some(PartialChecksum {
            start: plan.l4_offset as u16,
            offset: field::CHECKSUM as u16,
        }));
    }
    out.reserve(count, plan.headers_len);
    // Software checksums: every segment's payload summed in one pass first.
    let sums = if full {
        out.payload_sums((frame, source), payload.clone(), mss, count)
    } else {
        Vec::new()
    };
    let tcp = TcpFields::new(frame, plan);
    if fast_path_enabled() {
        let fixed_id = params.fixed_ip_id;
        if let Some(fast) = FastTcp::new(frame, plan, tcp, mss, count, full, fixed_id) {
            fast.run(out, payload.start, payload.end, &sums, targets);
            if full {
                out.put_payload_sums(sums);
            }
            return Ok(());
        }
    }
    let segmenter = Segmenter {
        frame,
        plan,
        tcp,
        mss,
        count,
        full,
        fixed_id: params.fixed_ip_id,
    };
    // All but the last segment carry exactly `mss` bytes: a loop of its own lets the
    // compiler hoist everything that depends only on the length.
    let last = count - 1;
    for index in 0..last {
            segmenter.emit(out, index, payload.start + index * mss, mss, sum_of(&sums, index));
    }
    let last_start = payload.start + last * mss;
    let last_sum = sum_of(&sums, last);
    segmenter.emit(out, last, last_start, payload.end - last_start, last_sum);
    if full {
        out.put_payload_sums(sums);
    }
    Ok(())
}

#[cfg(test)]
std::thread_local! {
    /// Whether `segment` may take `FastTcp` (tests turn it off to run the general path
    /// on the same input and compare).
    static FAST_PATH: core::cell::Cell<bool> = const { core::cell::Cell::new(true) };
}

#[cfg(test)]
fn fast_path_enabled() -> bool {
    FAST_PATH.with(|f| f.get())
}

#[cfg(not(test))]
#[inline(always)]
fn fast_path_enabled() -> bool {
    true
}

/// Runs `f` with the fast path off on this thread (tests only).
#[cfg(test)]
pub(super) fn without_fast_path<R>(f: impl FnOnce() -> R) -> R {
    FAST_PATH.with(|c| c.set(false));
    let result = f();
    FAST_PATH.with(|c| c.set(true));
    result
}

/// Segment `index`'s payload sum (0 when the checksum is left partial).
#[inline(always)]
fn sum_of(sums: &[u32], index: usize) -> u32 {
    sums.get(index).copied().unwrap_or(0)
}

/// Everything one segment of a call needs.
struct Segmenter<'a> {
    frame: &'a [u8],
    plan: &'a Plan,
    tcp: TcpFields,
    mss: usize,
    count: usize,
    full: bool,
    fixed_id: bool,
}

impl Segmenter<'_> {
    /// Appends segment `index`, whose payload is `len` bytes of the frame from `start`
    /// and sums to `payload_sum` (used with software checksums only).
    #[inline(always)]
    fn emit(&self, out: &mut GsoOutput, index: usize, start: usize, len: usize, payload_sum: u32) {
        let (plan, tcp) = (self.plan, &self.tcp);
        let payload = start..start + len;
        let wire_len = plan.headers_len + len;
        let header = out.push(&self.frame[..plan.headers_len], payload);

        let flags = tcp.flags(index, self.count);
        let seq = tcp.base_seq.wrapping_add((index * self.mss) as u32);
        be::put32(header, tcp.offset + field::SEQ, seq);
        be::put16(header, tcp.offset + field::FLAGS_WORD, flags);
        let pseudo = plan.pseudo_seed + (wire_len - tcp.offset) as u32;
        let check = if self.full {
            let header_sum = tcp.constant_sum + (seq >> 16) + (seq & 0xffff) + u32::from(flags);
            checksum::finish(header_sum + pseudo + payload_sum)
        } else {
            checksum::fold(pseudo)
        };
        be::put16(header, tcp.offset + field::CHECKSUM, check);

        let tail = Tail {
            start: tcp.offset,
            sum: u32::from(!checksum::fold(pseudo)),
        };
        let id_step = if self.fixed_id { 0 } else { index as u16 };
        plan.patch_ip_layers(header, wire_len, index, id_step, None, tail);
    }
}
