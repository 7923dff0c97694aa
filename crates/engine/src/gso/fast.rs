//! The fast path of TCP segmentation for the common shapes: TCP over IPv4 or IPv6,
//! bare or inside VXLAN / Geneve (a UDP tunnel) over IPv4 or IPv6, with the inner
//! checksum partial or in software and the outer UDP checksum on or off.
//!
//! It writes what the general path (`tcp::Segmenter`) writes, byte for byte (a property
//! test runs both), but resolves the shape once per call instead of once per segment:
//! every field offset is checked against the header length up front, then each segment
//! is an inlined copy of the header template and unchecked stores of the fields that
//! change, all headers written straight into the output buffer. The general path
//! matches on the IP version of each layer and the tunnel kind per segment, checks the
//! bounds of every field it writes, and returns through the optional outer layers;
//! with two IP headers and a UDP header to patch, that is where a VXLAN segment spent
//! most of its extra time.

use core::mem::MaybeUninit;

use crate::checksum;

use super::ip::{v4, v6, IpFields};
use super::output::{copy_header, GsoOutput, HeaderTargets};
use super::plan::Plan;
use super::tcp_fields::{field, TcpFields};
use super::tunnel::{udp, Encap};

/// One IP header's per-segment fields (`base_id` and `constant_sum` unused for IPv6).
#[derive(Clone, Copy)]
struct Ip {
    at: usize,
    v4: bool,
    base_id: u16,
    /// IPv4: sum of the constant words and the fragment word (unchanged per segment).
    constant_sum: u32,
}

impl Ip {
    /// `None` when the header's fields would not lie inside `headers_len` bytes (the plan
    /// has checked this already; this makes the unchecked stores below provably safe).
    fn new(fields: &IpFields, headers_len: usize) -> Option<Self> {
        let ip = match fields {
            IpFields::V4(f) => Ip {
                at: f.offset,
                v4: true,
                base_id: f.base_id,
                constant_sum: f.constant_sum + u32::from(f.frag_word),
            },
            IpFields::V6 { offset } => Ip {
                at: *offset,
                v4: false,
                base_id: 0,
                constant_sum: 0,
            },
        };
        let len = if ip.v4 { v4::MIN_LEN } else { v6::HEADER_LEN };
        (ip.at.checked_add(len)? <= headers_len).then_some(ip)
    }

    /// Writes the lengths (and for IPv4 the ID and the header checksum) of a segment
    /// whose bytes end `wire_len` bytes after the frame start. The fragment word is the
    /// template's. `V4` is `self.v4`, as a constant so each shape gets its own loop.
    ///
    /// # Safety
    /// `h` must point to the `headers_len` writable bytes `new` checked against.
    #[inline(always)]
    unsafe fn patch<const V4: bool>(self, h: *mut u8, wire_len: usize, id_step: u16) {
        let at = self.at;
        // SAFETY (all stores): `new` checked the header lies inside `headers_len` bytes.
        unsafe {
            if V4 {
                let total_len = (wire_len - at) as u16;
                let id = self.base_id.wrapping_add(id_step);
                put16(h, at + v4::TOTAL_LEN, total_len);
                put16(h, at + v4::IDENT, id);
                let sum = self.constant_sum + u32::from(total_len) + u32::from(id);
                put16(h, at + v4::CHECKSUM, !checksum::fold(sum));
            } else {
                put16(h, at + v6::PAYLOAD_LEN, (wire_len - at - v6::HEADER_LEN) as u16);
            }
        }
    }
}

impl Ip {
    /// IPv4: the header's constant sum plus the total length of a segment whose bytes end
    /// `wire_len` bytes after the frame start (what `patch` adds the ID to).
    fn length_sum(self, wire_len: usize) -> u32 {
        if self.v4 {
            self.constant_sum + u32::from((wire_len - self.at) as u16)
        } else {
            0
        }
    }

    /// IPv4: writes the ID `id` and the header checksum over `length_sum` (folded) and
    /// that ID, exactly as `patch` does for the same length and ID. Folded first, the
    /// sum with the ID stays below 2^17, which one end-around-carry step folds.
    ///
    /// # Safety
    /// As for `patch`.
    #[inline(always)]
    unsafe fn patch_id(self, h: *mut u8, length_sum: u16, id: u16) {
        let sum = u32::from(length_sum) + u32::from(id);
        let folded = (sum & 0xffff) + (sum >> 16);
        // SAFETY: the caller's (`new` checked the header lies inside the template).
        unsafe {
            put16(h, self.at + v4::IDENT, id);
            put16(h, self.at + v4::CHECKSUM, !(folded as u16));
        }
    }
}

/// What the middle segments (all but the first and the last) share, and the fields
/// that step from one to the next, kept as running values (an addition per segment,
/// not a multiplication by its index).
struct Middle {
    inner: Ip,
    /// The outer IPv4 header of a tunnel (unused otherwise).
    outer: Ip,
    /// The IPv4 headers' constant sums with the segment's length, folded.
    inner_sum: u16,
    outer_sum: u16,
    pseudo: u32,
    flags: u16,
    seq: u32,
    inner_id: u16,
    outer_id: u16,
}

impl Middle {
    /// The values of segment 1 of `fast`, whose segments carry `wire_len` bytes each.
    fn first(fast: &FastTcp<'_>, wire_len: usize) -> Self {
        let outer = fast.outer.map_or(fast.inner, |o| o.ip);
        Middle {
            inner: fast.inner,
            outer,
            inner_sum: checksum::fold(fast.inner.length_sum(wire_len)),
            outer_sum: checksum::fold(fast.outer.map_or(0, |o| o.ip.length_sum(wire_len))),
            pseudo: fast.pseudo_seed + (wire_len - fast.tcp.offset) as u32,
            flags: fast.tcp.flags(1, fast.count),
            seq: fast.tcp.base_seq.wrapping_add(fast.mss as u32),
            inner_id: fast.inner.base_id.wrapping_add(fast.id_step),
            // Linux increments the outer IPv4 ID per segment.
            outer_id: outer.base_id.wrapping_add(1),
        }
    }

    /// On to the next segment.
    #[inline(always)]
    fn advance(&mut self, mss: u32, id_step: u16) {
        self.seq = self.seq.wrapping_add(mss);
        self.inner_id = self.inner_id.wrapping_add(id_step);
        self.outer_id = self.outer_id.wrapping_add(1);
    }
}

/// What `run` hands each shape's loop: the output, the payload's start and end, the
/// payload sums (software checksums), and the caller's header targets, if any.
type Args<'o, 't> = (&'o mut GsoOutput, usize, usize, &'o [u32], Option<HeaderTargets<'t>>);

/// Longest header the middle-segment template takes (on the stack).
const MIDDLE_MAX_LEN: usize = 256;

/// The outer headers of a UDP tunnel.
#[derive(Clone, Copy)]
struct Outer {
    ip: Ip,
    udp: usize,
    /// Outer pseudo-header sum without the length, when the UDP checksum is computed.
    checksum_seed: Option<u32>,
}

/// Outer layer shapes, as const parameters.
const NO_TUNNEL: u8 = 0;
const OUTER_V4: u8 = 4;
const OUTER_V6: u8 = 6;

/// Everything a segment needs, resolved once per call.
pub(super) struct FastTcp<'a> {
    template: &'a [u8],
    tcp: TcpFields,
    pseudo_seed: u32,
    inner: Ip,
    outer: Option<Outer>,
    mss: usize,
    count: usize,
    full: bool,
    /// 0 with a fixed inner IPv4 ID, else 1 (the ID step is `index * id_step`).
    id_step: u16,
}

impl<'a> FastTcp<'a> {
    /// The fast path for this super-packet, or `None` for shapes it does not take (GRE,
    /// headers whose fields would not all be inside the template).
    pub fn new(
        frame: &'a [u8],
        plan: &Plan,
        tcp: TcpFields,
        mss: usize,
        count: usize,
        full: bool,
        fixed_id: bool,
    ) -> Option<Self> {
        let headers_len = plan.headers_len;
        let template = frame.get(..headers_len)?;
        let inner = Ip::new(&plan.inner_ip, headers_len)?;
        if tcp.offset.checked_add(field::CHECKSUM + 2)? > headers_len || count == 0 {
            return None;
        }
        let outer = match &plan.tunnel {
            None => None,
            Some(t) => match t.encap {
                Encap::Udp {
                    offset,
                    checksum_seed,
                } => {
                    // The UDP header, and (for its checksum) the bytes it covers in the
                    // headers, must come before the inner TCP header.
                    if offset.checked_add(udp::HEADER_LEN)? > tcp.offset {
                        return None;
                    }
                    Some(Outer {
                        ip: Ip::new(&t.outer_ip, headers_len)?,
                        udp: offset,
                        checksum_seed,
                    })
                }
                Encap::Gre { .. } => return None,
            },
        };
        Some(FastTcp {
            template,
            tcp,
            pseudo_seed: plan.pseudo_seed,
            inner,
            outer,
            mss,
            count,
            full,
            id_step: u16::from(!fixed_id),
        })
    }

    /// Appends every segment: payload `i` is `payload_start + i * mss` for `mss` bytes
    /// (the last one up to `payload_end`), its sum `sums[i]` with software checksums.
    /// The headers go into `targets` when there are enough of them and each holds the
    /// header (`out.headers_in_targets()` says so after), else into `out`.
    pub fn run(
        &self,
        out: &mut GsoOutput,
        payload_start: usize,
        payload_end: usize,
        sums: &[u32],
        targets: Option<HeaderTargets<'_>>,
    ) {
        let outer = match self.outer {
            None => NO_TUNNEL,
            Some(o) if o.ip.v4 => OUTER_V4,
            Some(_) => OUTER_V6,
        };
        let args = (out, payload_start, payload_end, sums, targets);
        match (self.inner.v4, outer, self.full) {
            (true, NO_TUNNEL, false) => self.run_shape::<true, NO_TUNNEL, false>(args),
            (true, NO_TUNNEL, true) => self.run_shape::<true, NO_TUNNEL, true>(args),
            (false, NO_TUNNEL, false) => self.run_shape::<false, NO_TUNNEL, false>(args),
            (false, NO_TUNNEL, true) => self.run_shape::<false, NO_TUNNEL, true>(args),
            (true, OUTER_V4, false) => self.run_shape::<true, OUTER_V4, false>(args),
            (true, OUTER_V4, true) => self.run_shape::<true, OUTER_V4, true>(args),
            (false, OUTER_V4, false) => self.run_shape::<false, OUTER_V4, false>(args),
            (false, OUTER_V4, true) => self.run_shape::<false, OUTER_V4, true>(args),
            (true, _, false) => self.run_shape::<true, OUTER_V6, false>(args),
            (true, _, true) => self.run_shape::<true, OUTER_V6, true>(args),
            (false, _, false) => self.run_shape::<false, OUTER_V6, false>(args),
            (false, _, true) => self.run_shape::<false, OUTER_V6, true>(args),
        }
    }

    /// `run` for one shape: `INNER_V4`, `OUTER` and `FULL` must match `self`. With AVX2
    /// the same loop is compiled for it, where a header copy is half as many moves.
    #[inline(never)]
    fn run_shape<const INNER_V4: bool, const OUTER: u8, const FULL: bool>(
        &self,
        args: Args<'_, '_>,
    ) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, the only requirement of `run_shape_avx2`.
            return unsafe { self.run_shape_avx2::<INNER_V4, OUTER, FULL>(args) };
        }
        self.run_shape_body::<INNER_V4, OUTER, FULL>(args)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn run_shape_avx2<const INNER_V4: bool, const OUTER: u8, const FULL: bool>(
        &self,
        args: Args<'_, '_>,
    ) {
        self.run_shape_body::<INNER_V4, OUTER, FULL>(args)
    }

    #[inline(always)]
    fn run_shape_body<const INNER_V4: bool, const OUTER: u8, const FULL: bool>(
        &self,
        (out, payload_start, payload_end, sums, targets): Args<'_, '_>,
    ) {
        let (hlen, count) = (self.template.len(), self.count);
        let payload = payload_start..payload_end;
        if let Some(slots) = targets.and_then(|t| t.slots(count, hlen)) {
            self.write_all::<INNER_V4, OUTER, FULL>(slots, payload.clone(), sums);
            out.commit_in_targets(count, hlen, payload, self.mss);
            return;
        }
        let headers = out.spare_headers(count * hlen);
        self.write_all::<INNER_V4, OUTER, FULL>(headers.chunks_exact_mut(hlen), payload, sums);
        // SAFETY: `write_all` wrote every one of the `count` chunks of `hlen` bytes.
        unsafe { out.commit_headers(count, hlen, payload_start, payload_end, self.mss) };
    }

    /// Writes the `count` headers into `headers` (`count` buffers of the template's
    /// length, in order: the output's own room or the caller's targets).
    #[inline(always)]
    fn write_all<'h, const INNER_V4: bool, const OUTER: u8, const FULL: bool>(
        &self,
        mut headers: impl Iterator<Item = &'h mut [MaybeUninit<u8>]>,
        payload: core::ops::Range<usize>,
        sums: &[u32],
    ) {
        let hlen = self.template.len();
        let last = self.count - 1;
        let sum = |index: usize| payload_sum::<FULL>(sums, index);
        let outer_checksum = self.outer.is_some_and(|o| o.checksum_seed.is_some());
        if last >= 2 && hlen <= MIDDLE_MAX_LEN && !outer_checksum {
            // Segments 1..last share every length, their flags and (partial) TCP
            // checksum, and the outer UDP header: segment 1 is written in full once, as a
            // template; each middle segment is a copy of it with its own sequence number,
            // IPv4 IDs and their header checksums (and TCP checksum, in software).
            let mut middle = [MaybeUninit::<u8>::uninit(); MIDDLE_MAX_LEN];
            let middle = &mut middle[..hlen];
            self.write::<INNER_V4, OUTER, FULL>(middle, 1, self.mss, sum(1));
            // SAFETY: `write` initialised all `hlen` bytes.
            let middle = unsafe { &*(middle as *const [MaybeUninit<u8>] as *const [u8]) };
            if let Some(header) = headers.next() {
                self.write::<INNER_V4, OUTER, FULL>(header, 0, self.mss, sum(0));
            }
            let middles = headers.by_ref().take(last - 1);
            match hlen {
                64..=128 => self.middle_segments::<INNER_V4, OUTER, FULL, 64>(middles, middle, sums),
                32..=63 => self.middle_segments::<INNER_V4, OUTER, FULL, 32>(middles, middle, sums),
                _ => self.middle_segments::<INNER_V4, OUTER, FULL, 0>(middles, middle, sums),
            }
        } else {
            for (index, header) in headers.by_ref().take(last).enumerate() {
                self.write::<INNER_V4, OUTER, FULL>(header, index, self.mss, sum(index));
            }
        }
        let last_len = payload.end - (payload.start + last * self.mss);
        if let Some(header) = headers.next() {
            self.write::<INNER_V4, OUTER, FULL>(header, last, last_len, sum(last));
        }
    }

    /// Writes the middle segments (1..last) into `headers`, each a copy of the `middle`
    /// template patched. With `PIECE` > 0 (`middle` is `PIECE..=2 * PIECE` bytes long)
    /// the template is held as its first and last `PIECE` bytes, loaded once: each copy
    /// is then a few vector stores, with no loads and no branching on the length.
    #[inline(always)]
    fn middle_segments<'h, const INNER_V4: bool, const OUTER: u8, const FULL: bool, const PIECE: usize>(
        &self,
        headers: impl Iterator<Item = &'h mut [MaybeUninit<u8>]>,
        middle: &[u8],
        sums: &[u32],
    ) {
        let hlen = middle.len();
        let sum = |index: usize| payload_sum::<FULL>(sums, index);
        let piece = |at: usize| -> [u8; PIECE] {
            middle.get(at..at + PIECE).and_then(|p| p.try_into().ok()).unwrap_or([0; PIECE])
        };
        let (first, last) = (piece(0), piece(hlen.saturating_sub(PIECE)));
        let in_pieces = PIECE > 0 && (PIECE..=2 * PIECE).contains(&hlen);
        let mut fields = Middle::first(self, hlen + self.mss);
        let (mss, id_step) = (self.mss as u32, self.id_step);
        for (index, header) in headers.enumerate() {
            if in_pieces && header.len() == hlen {
                let h = header.as_mut_ptr().cast::<u8>();
                // SAFETY: `header` is `hlen` writable bytes and `PIECE <= hlen`, so both
                // pieces lie inside it; `[u8; PIECE]` has alignment 1.
                unsafe {
                    h.cast::<[u8; PIECE]>().write(first);
                    h.add(hlen - PIECE).cast::<[u8; PIECE]>().write(last);
                }
            } else {
                copy_header(header, middle);
            }
            self.patch_middle::<INNER_V4, OUTER, FULL>(header, &fields, sum(index + 1));
            fields.advance(mss, id_step);
        }
    }

    /// Patches a copy of the middle template into the middle segment whose values `m`
    /// holds.
    #[inline(always)]
    fn patch_middle<const INNER_V4: bool, const OUTER: u8, const FULL: bool>(
        &self,
        header: &mut [MaybeUninit<u8>],
        m: &Middle,
        sum: u32,
    ) {
        let h = header.as_mut_ptr().cast::<u8>();
        let tcp = &self.tcp;
        let t = tcp.offset;
        let seq = m.seq;
        // SAFETY: `header` is `hlen` initialised bytes (a copy of the middle template);
        // `new` checked every offset written here lies inside `hlen`.
        unsafe {
            put32(h, t + field::SEQ, seq);
            if FULL {
                let header_sum = tcp.constant_sum + (seq >> 16) + (seq & 0xffff) + u32::from(m.flags);
                put16(h, t + field::CHECKSUM, checksum::finish(header_sum + m.pseudo + sum));
            }
            if INNER_V4 {
                m.inner.patch_id(h, m.inner_sum, m.inner_id);
            }
            if OUTER == OUTER_V4 {
                m.outer.patch_id(h, m.outer_sum, m.outer_id);
            }
        }
    }

    /// Writes the header of segment `index` with `len` payload bytes summing to `sum`.
    #[inline(always)]
    fn write<const INNER_V4: bool, const OUTER: u8, const FULL: bool>(
        &self,
        header: &mut [MaybeUninit<u8>],
        index: usize,
        len: usize,
        sum: u32,
    ) {
        let hlen = self.template.len();
        copy_header(header, self.template);
        let h = header.as_mut_ptr().cast::<u8>();
        let tcp = &self.tcp;
        let t = tcp.offset;
        let wire_len = hlen + len;
        let flags = tcp.flags(index, self.count);
        let seq = tcp.base_seq.wrapping_add((index * self.mss) as u32);
        let pseudo = self.pseudo_seed + (wire_len - t) as u32;
        let check = if FULL {
            let header_sum = tcp.constant_sum + (seq >> 16) + (seq & 0xffff) + u32::from(flags);
            checksum::finish(header_sum + pseudo + sum)
        } else {
            checksum::fold(pseudo)
        };
        let id_step = index as u16 * self.id_step;
        // SAFETY: `header` is `hlen` initialised bytes (the copy above); `new` checked
        // every offset written here lies inside `hlen`.
        unsafe {
            put32(h, t + field::SEQ, seq);
            put16(h, t + field::FLAGS_WORD, flags);
            put16(h, t + field::CHECKSUM, check);
            self.inner.patch::<INNER_V4>(h, wire_len, id_step);
        }
        if OUTER == NO_TUNNEL {
            return;
        }
        let Some(outer) = self.outer else {
            return;
        };
        let u = outer.udp;
        let length = (wire_len - u) as u16;
        // SAFETY: as above (`new` checked the UDP header ends before `t`).
        unsafe {
            put16(h, u + udp::LENGTH, length);
            put16(h, u + udp::CHECKSUM, 0);
        }
        if let Some(seed) = outer.checksum_seed {
            // The bytes from the UDP header to the inner TCP header, now final, and the
            // inner transport packet, which sums to the complement of its pseudo-header
            // sum once its checksum is finished (as in `tunnel::TunnelFields::patch`).
            // SAFETY: `u < t <= hlen`, all initialised.
            let covered = unsafe { core::slice::from_raw_parts(h.add(u), t - u) };
            let head = checksum::sum(covered, seed + u32::from(length));
            let tail = u32::from(!checksum::fold(pseudo));
            let check = checksum::finish(checksum::combine(head, tail, t - u));
            let check = if check == 0 { 0xffff } else { check };
            // SAFETY: as above.
            unsafe { put16(h, u + udp::CHECKSUM, check) };
        }
        // SAFETY: as above. Linux increments the outer IPv4 ID per segment.
        unsafe {
            if OUTER == OUTER_V4 {
                outer.ip.patch::<true>(h, wire_len, index as u16);
            } else {
                outer.ip.patch::<false>(h, wire_len, index as u16);
            }
        }
    }
}

/// Segment `index`'s payload sum with software checksums (`FULL`), else unused (0).
#[inline(always)]
fn payload_sum<const FULL: bool>(sums: &[u32], index: usize) -> u32 {
    if FULL {
        sums.get(index).copied().unwrap_or(0)
    } else {
        0
    }
}

/// # Safety
/// `h + at .. h + at + 2` must be writable.
#[inline(always)]
unsafe fn put16(h: *mut u8, at: usize, value: u16) {
    // SAFETY: the caller's; `[u8; 2]` has alignment 1.
    unsafe { h.add(at).cast::<[u8; 2]>().write(value.to_be_bytes()) }
}

/// # Safety
/// `h + at .. h + at + 4` must be writable.
#[inline(always)]
unsafe fn put32(h: *mut u8, at: usize, value: u32) {
    // SAFETY: the caller's; `[u8; 4]` has alignment 1.
    unsafe { h.add(at).cast::<[u8; 4]>().write(value.to_be_bytes()) }
}
