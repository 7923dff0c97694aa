//! GRO: an opaque flow table (`ofl_gro`) that frames are pushed into one at a time
//! under a caller id; merged runs come out through a C callback.
//!
//! Why a callback rather than a pull API: the engine hands a run out as fresh header
//! bytes plus the payload ranges of the caller's own frames, nothing copied, and those
//! header bytes live in the table slot that is reused right after delivery. A callback
//! lets the caller build its output (a DPDK header mbuf chained to the input mbufs
//! named by the ids, an OVS dp-packet, an iovec for `writev`) while the bytes are
//! valid, with no extra copy and no queue to size. It is the shape DPDK's own
//! GRO/GSO users already write around `rte_gro_reassemble` + `rte_gro_timeout_flush`:
//! push a burst, flush at the end of it, send what came out. The callback and its
//! `user` pointer are passed per call, so each burst can collect into its own
//! transmit array.

use core::cell::{Cell, UnsafeCell};
use core::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

use engine::gro::{FlushCause, Gro, GroConfig, GroStats, Held, Merged, Part, Reason, RxMeta};

use crate::allocator::{read_sized, routed, unrouted, Hook};
use crate::chain::{self, ofl_iovec};
use crate::{bytes, guard, input, ofl_allocator, ofl_parse_opts, ofl_status, ofl_vnet_hdr, out};

/// Number of `ofl_gro_reason` values this header knows. A newer library may know more:
/// `ofl_gro_get_reason_counts` tells how many and fills a caller-sized array.
pub const OFL_GRO_REASON_COUNT: usize = 36;
const _: () = assert!(OFL_GRO_REASON_COUNT == Reason::COUNT);
/// Size of the per-reason arrays of `ofl_gro_stats`: fixed for ABI 1 whatever the
/// number of reasons grows to, so no library writes past an older caller's struct.
pub const OFL_GRO_STATS_REASONS: usize = 36;
const _: () = assert!(OFL_GRO_STATS_REASONS <= Reason::COUNT);

/// Why a frame was refused, or why a run ended (stats indexes; names from
/// `ofl_gro_reason_name`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ofl_gro_reason {
    /// "unparseable"
    OFL_GRO_REASON_UNPARSEABLE = 0,
    /// "not tcp or udp"
    OFL_GRO_REASON_NOT_TCP_OR_UDP = 1,
    /// "tunnel unsupported"
    OFL_GRO_REASON_TUNNEL_UNSUPPORTED = 2,
    /// "ip options"
    OFL_GRO_REASON_IP_OPTIONS = 3,
    /// "fragment"
    OFL_GRO_REASON_FRAGMENT = 4,
    /// "padded"
    OFL_GRO_REASON_PADDED = 5,
    /// "header too long"
    OFL_GRO_REASON_HEADER_TOO_LONG = 6,
    /// "bad ip checksum"
    OFL_GRO_REASON_BAD_IP_CHECKSUM = 7,
    /// "bad l4 checksum"
    OFL_GRO_REASON_BAD_L4_CHECKSUM = 8,
    /// "udp zero checksum"
    OFL_GRO_REASON_UDP_ZERO_CHECKSUM = 9,
    /// "no payload"
    OFL_GRO_REASON_NO_PAYLOAD = 10,
    /// "syn"
    OFL_GRO_REASON_SYN = 11,
    /// "rst"
    OFL_GRO_REASON_RST = 12,
    /// "urg"
    OFL_GRO_REASON_URG = 13,
    /// "no ack"
    OFL_GRO_REASON_NO_ACK = 14,
    /// "psh"
    OFL_GRO_REASON_PSH = 15,
    /// "fin"
    OFL_GRO_REASON_FIN = 16,
    /// "cwr"
    OFL_GRO_REASON_CWR = 17,
    /// "ttl differs"
    OFL_GRO_REASON_TTL_DIFFERS = 18,
    /// "tos differs"
    OFL_GRO_REASON_TOS_DIFFERS = 19,
    /// "df differs"
    OFL_GRO_REASON_DF_DIFFERS = 20,
    /// "ip id not sequential"
    OFL_GRO_REASON_IP_ID_NOT_SEQUENTIAL = 21,
    /// "traffic class differs"
    OFL_GRO_REASON_TRAFFIC_CLASS_DIFFERS = 22,
    /// "hop limit differs"
    OFL_GRO_REASON_HOP_LIMIT_DIFFERS = 23,
    /// "tcp options differ"
    OFL_GRO_REASON_OPTIONS_DIFFER = 24,
    /// "window differs"
    OFL_GRO_REASON_WINDOW_DIFFERS = 25,
    /// "ack differs"
    OFL_GRO_REASON_ACK_DIFFERS = 26,
    /// "tcp flags differ"
    OFL_GRO_REASON_FLAGS_DIFFER = 27,
    /// "not contiguous"
    OFL_GRO_REASON_NOT_CONTIGUOUS = 28,
    /// "segment size differs"
    OFL_GRO_REASON_SIZE_DIFFERS = 29,
    /// "size cap"
    OFL_GRO_REASON_SIZE_CAP = 30,
    /// "psh ends run"
    OFL_GRO_REASON_PSH_END = 31,
    /// "fin ends run"
    OFL_GRO_REASON_FIN_END = 32,
    /// "short segment ends run"
    OFL_GRO_REASON_SHORT_SEGMENT = 33,
    /// "segment cap"
    OFL_GRO_REASON_SEGMENT_CAP = 34,
    /// "table full"
    OFL_GRO_REASON_TABLE_FULL = 35,
}

static REASON_NAMES: [&core::ffi::CStr; OFL_GRO_REASON_COUNT] = [
    c"unparseable",
    c"not tcp or udp",
    c"tunnel unsupported",
    c"ip options",
    c"fragment",
    c"padded",
    c"header too long",
    c"bad ip checksum",
    c"bad l4 checksum",
    c"udp zero checksum",
    c"no payload",
    c"syn",
    c"rst",
    c"urg",
    c"no ack",
    c"psh",
    c"fin",
    c"cwr",
    c"ttl differs",
    c"tos differs",
    c"df differs",
    c"ip id not sequential",
    c"traffic class differs",
    c"hop limit differs",
    c"tcp options differ",
    c"window differs",
    c"ack differs",
    c"tcp flags differ",
    c"not contiguous",
    c"segment size differs",
    c"size cap",
    c"psh ends run",
    c"fin ends run",
    c"short segment ends run",
    c"segment cap",
    c"table full",
];

/// What `ofl_gro_push` did with a frame (its non-negative return values).
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ofl_gro_verdict {
    /// Kept: it started a run. Keep the frame until a delivery names its id.
    OFL_GRO_NEW_FLOW = 0,
    /// Kept: it joined a run (which may already have been delivered).
    OFL_GRO_MERGED = 1,
    /// Not kept: forward the frame as it is; `*reason` says why.
    OFL_GRO_REFUSED = 2,
    /// Kept: it started a run after its flow's held run was delivered because the frame
    /// could not join it; `*reason` is the mismatch (ACK, sequence, options, ...). Only
    /// with the `OFL_GRO_REPORT_RESTART` flag; without it such a frame is reported as
    /// `OFL_GRO_NEW_FLOW`, as before.
    OFL_GRO_RESTARTED = 3,
}

/// Why a delivered run ended (`ofl_gro_merged.end`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ofl_gro_end {
    /// A packet ended it or could not join it; `end_reason` is the `ofl_gro_reason`.
    OFL_GRO_END_RULE = 0,
    /// `ofl_gro_flush`.
    OFL_GRO_END_FLUSH = 1,
    /// `ofl_gro_flush_older_than`.
    OFL_GRO_END_AGED = 2,
    /// The table was full and this was its oldest run.
    OFL_GRO_END_EVICTED = 3,
}

/// `ofl_gro_push` flag: the frame's transport checksums were validated (virtio
/// DATA_VALID, or the NIC said so); otherwise GRO verifies them.
pub const OFL_RX_CSUM_VALIDATED: u32 = 1;
/// `ofl_gro_push` flag: report a frame that started a run because its flow's run ended
/// on a mismatch as `OFL_GRO_RESTARTED` (with the reason) instead of
/// `OFL_GRO_NEW_FLOW`. A library older than ABI 1.1 refuses the flag
/// (`OFL_ERR_INVALID_ARGUMENT`).
pub const OFL_GRO_REPORT_RESTART: u32 = 2;
const PUSH_FLAGS: u32 = OFL_RX_CSUM_VALIDATED | OFL_GRO_REPORT_RESTART;

/// The C verdict of a push, and the reason to report with it.
fn verdict_of(held: Result<Held, engine::gro::Refusal>, flags: u32) -> (ofl_gro_verdict, Option<u32>) {
    match held {
        Ok(Held::NewFlow) => (ofl_gro_verdict::OFL_GRO_NEW_FLOW, None),
        Ok(Held::Restarted { ended_by }) if flags & OFL_GRO_REPORT_RESTART != 0 => {
            (ofl_gro_verdict::OFL_GRO_RESTARTED, Some(ended_by.index() as u32))
        }
        Ok(Held::Restarted { .. }) => (ofl_gro_verdict::OFL_GRO_NEW_FLOW, None),
        Ok(Held::Merged) => (ofl_gro_verdict::OFL_GRO_MERGED, None),
        Err(refusal) => (ofl_gro_verdict::OFL_GRO_REFUSED, Some(refusal.reason().index() as u32)),
        // A kind of kept frame added to the engine after this list: kept, a run opened.
        Ok(_) => (ofl_gro_verdict::OFL_GRO_NEW_FLOW, None),
    }
}

/// Capacities of a table (`ofl_gro_config_default` fills the defaults).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ofl_gro_config {
    /// Runs held at once (1 ..= 1048576); when full, the oldest is delivered.
    pub max_flows: u32,
    /// Segments per TCP run (1 ..= 4096; default 64).
    pub max_segments_tcp: u16,
    /// Segments per UDP run (1 ..= 4096; default 64, the kernel's UDP_GRO_CNT_MAX).
    pub max_segments_udp: u16,
    /// Largest outermost IP packet a run grows to (at most 65535).
    pub max_bytes: u32,
    /// Tunnel recognition (extra VXLAN/Geneve ports, or none).
    pub parse: ofl_parse_opts,
}

/// One piece of a merged packet's payload: `payload_len` bytes at `payload_offset` of
/// the caller's frame `id`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ofl_gro_part {
    pub id: u64,
    pub payload_offset: u32,
    pub payload_len: u32,
}

/// A delivered run, valid only during the callback: the packet is `header` followed
/// by each part's payload bytes, in order.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ofl_gro_merged {
    /// Every header up to the payload, lengths and IPv4 checksums fixed; with more
    /// than one segment the transport checksum is left partial (see `vnet`).
    pub header: *const u8,
    pub header_len: usize,
    pub parts: *const ofl_gro_part,
    pub n_parts: usize,
    /// The virtio-net header describing the packet (GSO type/size, NEEDS_CSUM with
    /// `csum_start`/`csum_offset`, or DATA_VALID for a single segment).
    pub vnet: ofl_vnet_hdr,
    /// Segments merged (1: the frame came out alone).
    pub segments: u16,
    /// Why the run was delivered (an `ofl_gro_end`), and with `OFL_GRO_END_RULE` the
    /// `ofl_gro_reason` (PSH, a cap, or the mismatch of the packet that could not join).
    /// Added in ABI 1.1 at the end of the struct, which the library writes and the
    /// caller only reads.
    pub end: u8,
    pub end_reason: u32,
}

fn end_of(cause: FlushCause) -> ofl_gro_end {
    match cause {
        FlushCause::Rule(_) => ofl_gro_end::OFL_GRO_END_RULE,
        FlushCause::Explicit => ofl_gro_end::OFL_GRO_END_FLUSH,
        FlushCause::Aged => ofl_gro_end::OFL_GRO_END_AGED,
        FlushCause::Evicted => ofl_gro_end::OFL_GRO_END_EVICTED,
        _ => ofl_gro_end::OFL_GRO_END_RULE,
    }
}

/// Receives each delivered run. It must not call into the same `ofl_gro` (such calls
/// return `OFL_ERR_BUSY`) and must not unwind or longjmp out.
pub type ofl_gro_deliver_fn =
    Option<unsafe extern "C" fn(user: *mut c_void, merged: *const ofl_gro_merged)>;

/// Counters of a table; all monotonic.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ofl_gro_stats {
    pub packets_in: u64,
    pub merged: u64,
    pub flows_opened: u64,
    pub emitted: u64,
    pub emitted_segments: u64,
    pub flushed_explicit: u64,
    pub flushed_aged: u64,
    pub flushed_evicted: u64,
    pub refused_total: u64,
    /// Runs ended by each `ofl_gro_reason`.
    pub ended: [u64; OFL_GRO_STATS_REASONS],
    /// Frames refused for each `ofl_gro_reason`.
    pub refused: [u64; OFL_GRO_STATS_REASONS],
}

const IDLE: u8 = 0;
const BUSY: u8 = 1;
const POISONED: u8 = 2;

/// Opaque GRO table (`ofl_gro_new` / `ofl_gro_free`). Not thread-safe: one per
/// thread (lcore), or serialise calls.
pub struct ofl_gro {
    state: Cell<u8>,
    inner: UnsafeCell<Inner>,
    /// Where the table's memory comes from (`ofl_gro_new_ex`); None: the system.
    hook: Option<Hook>,
}

struct Inner {
    gro: Gro,
}

// The engine's `Part` is laid out as `ofl_gro_part`, so a delivered run's parts go to C
// as the engine wrote them (`deliverer`): checked here, at compile time.
const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    assert!(size_of::<Part>() == size_of::<ofl_gro_part>());
    assert!(align_of::<Part>() == align_of::<ofl_gro_part>());
    assert!(offset_of!(Part, id) == offset_of!(ofl_gro_part, id));
    assert!(offset_of!(Part, offset) == offset_of!(ofl_gro_part, payload_offset));
    assert!(offset_of!(Part, len) == offset_of!(ofl_gro_part, payload_len));
};

const MAX_FLOWS: u32 = 1 << 20;
const MAX_SEGMENTS: u16 = 4096;

/// Fills `*cfg` with the defaults (1024 flows, 64 segments, 65535 bytes, default
/// tunnel ports).
///
/// # Safety
/// `cfg` points to an `ofl_gro_config`.
#[no_mangle]
pub unsafe extern "C" fn ofl_gro_config_default(cfg: *mut ofl_gro_config) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let cfg = unsafe { out(cfg) }?;
        let d = GroConfig::default();
        *cfg = ofl_gro_config {
            max_flows: d.max_flows as u32,
            max_segments_tcp: d.max_segments_tcp,
            max_segments_udp: d.max_segments_udp,
            max_bytes: d.max_bytes as u32,
            parse: ofl_parse_opts::default(),
        };
        Ok(0)
    })
}

/// Creates a table into `*gro`; `cfg` may be NULL for the defaults. All memory is
/// allocated here (about 0.9 MiB for 1024 flows); pushing never allocates. Returns
/// `OFL_OK`, `OFL_ERR_NULL` or `OFL_ERR_INVALID_ARGUMENT` (a capacity out of range).
///
/// # Safety
/// `cfg` NULL or valid; `gro` points to an `ofl_gro *`.
#[no_mangle]
pub unsafe extern "C" fn ofl_gro_new(cfg: *const ofl_gro_config, gro: *mut *mut ofl_gro) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let gro = unsafe { out(gro) }?;
        let cfg = if cfg.is_null() {
            default_config()
        } else {
            *unsafe { input(cfg) }?
        };
        *gro = create(&cfg, None)?;
        Ok(0)
    })
}

fn default_config() -> ofl_gro_config {
    let mut d = core::mem::MaybeUninit::uninit();
    // SAFETY: writes a whole config into `d`.
    unsafe { ofl_gro_config_default(d.as_mut_ptr()) };
    unsafe { d.assume_init() }
}

/// Parameters of `ofl_gro_new_ex` (ABI 1.2). Set `size` to `sizeof(ofl_gro_params)`,
/// fill `config` with `ofl_gro_config_default` and change what you need; a zero
/// `allocator` is the system allocator.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ofl_gro_params {
    /// The caller's `sizeof(ofl_gro_params)`; at least `OFL_GRO_PARAMS_SIZE_1_2`.
    pub size: u32,
    pub config: ofl_gro_config,
    /// Where the table's memory comes from (all of it is allocated at creation).
    pub allocator: ofl_allocator,
}

/// The smallest `ofl_gro_params.size` accepted: the struct as ABI 1.2 defines it.
pub const OFL_GRO_PARAMS_SIZE_1_2: usize = 56;
const _: () = assert!(OFL_GRO_PARAMS_SIZE_1_2 == core::mem::size_of::<ofl_gro_params>());

/// `ofl_gro_new` with a caller-sized parameter struct and an optional allocator hook
/// (ABI 1.2). Returns `OFL_OK`, `OFL_ERR_NULL`, `OFL_ERR_INVALID_ARGUMENT` (as
/// `ofl_gro_new`, or `size` below `OFL_GRO_PARAMS_SIZE_1_2`, non-zero bytes past what
/// this library knows, one of `alloc`/`free` NULL) or `OFL_ERR_NO_MEMORY` (the
/// allocator returned NULL; nothing is kept, `*gro` is left unchanged).
///
/// # Safety
/// `params` readable for its `size` bytes; `gro` points to an `ofl_gro *`; the
/// allocator's functions callable with its `user` until the table is freed.
#[no_mangle]
pub unsafe extern "C" fn ofl_gro_new_ex(params: *const ofl_gro_params, gro: *mut *mut ofl_gro) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let gro = unsafe { out(gro) }?;
        let params = unsafe { read_sized(params, OFL_GRO_PARAMS_SIZE_1_2) }?;
        let hook = params.allocator.to_hook()?;
        *gro = create(&params.config, hook)?;
        Ok(0)
    })
}

/// A new table after checking `cfg`, allocated through `hook` when there is one.
fn create(cfg: &ofl_gro_config, hook: Option<Hook>) -> Result<*mut ofl_gro, ofl_status> {
    let segments_ok = |n: u16| (1..=MAX_SEGMENTS).contains(&n);
    if !(1..=MAX_FLOWS).contains(&cfg.max_flows)
        || !segments_ok(cfg.max_segments_tcp)
        || !segments_ok(cfg.max_segments_udp)
        || cfg.max_bytes == 0
    {
        return Err(ofl_status::OFL_ERR_INVALID_ARGUMENT);
    }
    let parse = cfg.parse.to_engine()?;
    let engine_cfg = GroConfig {
        max_flows: cfg.max_flows as usize,
        max_segments_tcp: cfg.max_segments_tcp,
        max_segments_udp: cfg.max_segments_udp,
        max_bytes: (cfg.max_bytes as usize).min(65535),
    };
    routed(
        hook,
        || {
            Ok(Box::into_raw(Box::new(ofl_gro {
                state: Cell::new(IDLE),
                inner: UnsafeCell::new(Inner {
                    gro: Gro::with_parse_options(engine_cfg, parse),
                }),
                hook,
            })))
        },
        |built| {
            if let Ok(handle) = built {
                // SAFETY: just made by Box::into_raw, never handed out.
                drop(unsafe { Box::from_raw(handle) });
            }
        },
    )
}

/// Frees a table; runs still held are dropped (flush first to deliver them). NULL is
/// ignored; so is a call from inside the table's own callback.
///
/// # Safety
/// `gro` NULL or a live handle, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn ofl_gro_free(gro: *mut ofl_gro) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: NULL or a live handle by contract.
        let Some(handle) = (unsafe { gro.as_ref() }) else {
            return;
        };
        if handle.state.get() != BUSY {
            // SAFETY: from Box::into_raw in ofl_gro_new, not in use, freed once.
            drop(unsafe { Box::from_raw(gro) });
        }
    }));
}

/// Runs `body` on the table, refusing reentry and poisoning the handle on a panic.
///
/// # Safety
/// `gro` NULL or a live handle.
unsafe fn with_gro(
    gro: *mut ofl_gro,
    body: impl FnOnce(&mut Inner) -> Result<i32, ofl_status>,
) -> i32 {
    guard(|| {
        // SAFETY: NULL or a live handle; only shared references to the handle exist,
        // and `inner` is borrowed mutably only while `state` is BUSY.
        let handle = unsafe { gro.as_ref() }.ok_or(ofl_status::OFL_ERR_NULL)?;
        match handle.state.get() {
            BUSY => return Err(ofl_status::OFL_ERR_BUSY),
            POISONED => return Err(ofl_status::OFL_ERR_POISONED),
            _ => {}
        }
        handle.state.set(BUSY);
        // SAFETY: the BUSY state makes this the only live borrow of `inner`.
        let inner = unsafe { &mut *handle.inner.get() };
        // A table allocates only at creation; the route is there so that anything the
        // engine might allocate in a call still comes from the table's allocator.
        match catch_unwind(AssertUnwindSafe(|| routed(handle.hook, || body(inner), |_| ()))) {
            Ok(result) => {
                handle.state.set(IDLE);
                result
            }
            Err(_) => {
                handle.state.set(POISONED);
                Err(ofl_status::OFL_ERR_PANIC)
            }
        }
    })
}

/// A Rust closure that hands each run to the C callback; counts deliveries.
fn deliverer<'a>(
    cb: unsafe extern "C" fn(*mut c_void, *const ofl_gro_merged),
    user: *mut c_void,
    delivered: &'a mut i32,
) -> impl FnMut(Merged<'_>) + 'a {
    // Inlined into the engine's emit: a call per run would pass the `Merged` through
    // memory and save and restore the closure's registers (~40 instructions a run).
    #[inline(always)]
    move |m: Merged<'_>| {
        let merged = ofl_gro_merged {
            header: m.header.as_ptr(),
            header_len: m.header.len(),
            // The engine's parts as they are: `Part` is laid out as `ofl_gro_part`
            // (checked at compile time above), so C reads the same array.
            parts: m.parts.as_ptr().cast::<ofl_gro_part>(),
            n_parts: m.parts.len(),
            vnet: ofl_vnet_hdr::from_engine(&m.vnet),
            segments: m.segments,
            end: end_of(m.end) as u8,
            end_reason: match m.end {
                FlushCause::Rule(reason) => reason.index() as u32,
                _ => 0,
            },
        };
        // SAFETY: the caller's callback, given a pointer valid for this call.
        // The caller's own allocations in the callback are not the table's.
        unrouted(|| unsafe { cb(user, &merged) });
        *delivered = delivered.saturating_add(1);
    }
}

/// Offers one frame (`len` bytes from the Ethernet header) under the caller's `id`.
/// Runs that this ends are delivered through `cb(user, ...)` before it returns.
/// Returns an `ofl_gro_verdict` (kept: keep the frame's bytes unchanged until a
/// delivery names `id`; refused: forward it, `*reason` says why) or a negative code.
/// `flags`: `OFL_RX_CSUM_VALIDATED`. `now`: the caller's clock, for
/// `ofl_gro_flush_older_than`. `reason` may be NULL.
///
/// # Safety
/// `gro` a live handle; `frame` readable for `len` bytes; `cb` non-NULL; `reason`
/// NULL or pointing to a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn ofl_gro_push(
    gro: *mut ofl_gro,
    id: u64,
    frame: *const u8,
    len: usize,
    flags: u32,
    now: u64,
    cb: ofl_gro_deliver_fn,
    user: *mut c_void,
    reason: *mut u32,
) -> i32 {
    // SAFETY: caller contract, NULLs checked inside.
    unsafe {
        with_gro(gro, |inner| {
            let frame = bytes(frame, len)?;
            push_one(inner, id, Frame::Whole(frame), (flags, now), (cb, user), reason)
        })
    }
}

/// `ofl_gro_push` for a frame held in several buffers (e.g. an mbuf chain): the frame
/// is the concatenation of `iov[0..n_iov]`, Ethernet header first; an iovec may be
/// empty (`base` NULL allowed then) and headers may span iovecs. The verdict, the
/// reason and every delivered run are those `ofl_gro_push` gives for the concatenated
/// bytes; `ofl_gro_part.payload_offset` counts from the start of the concatenated
/// frame (walk the chain by the iovecs' lengths to find the bytes). Only header bytes
/// are copied (into scratch allocated by the table's first chained frame); checksums
/// are verified across iovec boundaries of any length. Returns as `ofl_gro_push`, or
/// `OFL_ERR_INVALID_ARGUMENT` for `n_iov` 0, `OFL_ERR_TOO_MANY_IOVECS` above
/// `OFL_CHAIN_MAX_IOV`, `OFL_ERR_NULL` for a NULL `iov` or a NULL `base` with a
/// non-zero `len`. Added in ABI 1.2.
///
/// # Safety
/// `gro` a live handle; `iov` readable for `n_iov` entries, each `base` readable for
/// its `len`; `cb` non-NULL; `reason` NULL or pointing to a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn ofl_gro_push_chain(
    gro: *mut ofl_gro,
    id: u64,
    iov: *const ofl_iovec,
    n_iov: usize,
    flags: u32,
    now: u64,
    cb: ofl_gro_deliver_fn,
    user: *mut c_void,
    reason: *mut u32,
) -> i32 {
    // SAFETY: caller contract, NULLs checked inside.
    unsafe {
        with_gro(gro, |inner| {
            let mut slots = chain::slots();
            let chain = chain::pieces(iov, n_iov, &mut slots)?;
            push_one(inner, id, Frame::Chain(chain), (flags, now), (cb, user), reason)
        })
    }
}

/// A frame as `ofl_gro_push` or `ofl_gro_push_chain` got it.
enum Frame<'a> {
    Whole(&'a [u8]),
    Chain(&'a [&'a [u8]]),
}

/// What `ofl_gro_push` and `ofl_gro_push_chain` share: checks the callback and the
/// flags, pushes the frame, and reports the verdict (and the reason into `reason`).
///
/// # Safety
/// `reason` NULL or pointing to a `uint32_t`.
unsafe fn push_one(
    inner: &mut Inner,
    id: u64,
    frame: Frame<'_>,
    (flags, now): (u32, u64),
    (cb, user): (ofl_gro_deliver_fn, *mut c_void),
    reason: *mut u32,
) -> Result<i32, ofl_status> {
    let cb = cb.ok_or(ofl_status::OFL_ERR_NULL)?;
    if flags & !PUSH_FLAGS != 0 {
        return Err(ofl_status::OFL_ERR_INVALID_ARGUMENT);
    }
    let meta = RxMeta {
        csum_validated: flags & OFL_RX_CSUM_VALIDATED != 0,
        now,
    };
    let mut delivered = 0;
    let Inner { gro } = inner;
    let mut deliver = deliverer(cb, user, &mut delivered);
    let pushed = match frame {
        Frame::Whole(frame) => gro.push(id, frame, meta, &mut deliver),
        Frame::Chain(chain) => gro.push_chain(id, chain, meta, &mut deliver),
    };
    let (verdict, why) = verdict_of(pushed, flags);
    // SAFETY: NULL or a valid `uint32_t` by contract.
    if let (Some(why), Some(r)) = (why, unsafe { reason.as_mut() }) {
        *r = why;
    }
    Ok(verdict as i32)
}

/// One received frame for `ofl_gro_push_burst`: `len` bytes at `data` (from the
/// Ethernet header), pushed under `id` (e.g. the mbuf pointer).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ofl_rx_frame {
    pub id: u64,
    pub data: *const u8,
    pub len: usize,
}

/// `ofl_gro_push` for a burst: pushes `frames[0..n]` in order with the same `flags`
/// and `now`. Every frame is checked before any frame is pushed (a NULL `data` with a
/// non-zero `len` gives `OFL_ERR_NULL`, a `len` above `PTRDIFF_MAX`
/// `OFL_ERR_INVALID_ARGUMENT`, and nothing is pushed). `verdicts`
/// (NULL, or `n` entries) receives each frame's `ofl_gro_verdict`; `reasons` (NULL,
/// or `n` entries) receives the `ofl_gro_reason` of each refused frame and is left
/// alone for kept ones. Returns how many frames were refused (to be forwarded as
/// they are), or a negative code.
///
/// # Safety
/// `gro` a live handle; `frames` readable for `n` entries, each `data` readable for
/// its `len`; `verdicts`/`reasons` NULL or writable for `n` entries; `cb` non-NULL.
#[no_mangle]
pub unsafe extern "C" fn ofl_gro_push_burst(
    gro: *mut ofl_gro,
    frames: *const ofl_rx_frame,
    n: usize,
    flags: u32,
    now: u64,
    cb: ofl_gro_deliver_fn,
    user: *mut c_void,
    verdicts: *mut u8,
    reasons: *mut u32,
) -> i32 {
    // SAFETY: caller contract, NULLs checked inside.
    unsafe {
        with_gro(gro, |inner| {
            let cb = cb.ok_or(ofl_status::OFL_ERR_NULL)?;
            if flags & !PUSH_FLAGS != 0 || n > i32::MAX as usize {
                return Err(ofl_status::OFL_ERR_INVALID_ARGUMENT);
            }
            if n == 0 {
                return Ok(0);
            }
            if frames.is_null() {
                return Err(ofl_status::OFL_ERR_NULL);
            }
            let frames = core::slice::from_raw_parts(frames, n);
            // Every frame is checked here, before any is pushed, for all that `bytes`
            // refuses; the loop then makes each slice with one test instead of three.
            // One pass for both refusals (two passes cost more than they saved).
            let unusable = |f: &&ofl_rx_frame| (f.data.is_null() && f.len > 0) || f.len > isize::MAX as usize;
            if let Some(bad) = frames.iter().find(unusable) {
                return Err(if bad.data.is_null() {
                    ofl_status::OFL_ERR_NULL
                } else {
                    ofl_status::OFL_ERR_INVALID_ARGUMENT
                });
            }
            let meta = RxMeta {
                csum_validated: flags & OFL_RX_CSUM_VALIDATED != 0,
                now,
            };
            let mut delivered = 0;
            let Inner { gro } = inner;
            let mut deliver = deliverer(cb, user, &mut delivered);
            // One loop per pair of output arrays given, so that the loop tests neither
            // pointer per frame.
            let out = BurstOut { flags, verdicts, reasons };
            Ok(match (verdicts.is_null(), reasons.is_null()) {
                (false, true) => push_frames::<true, false>(gro, frames, meta, &mut deliver, out),
                (false, false) => push_frames::<true, true>(gro, frames, meta, &mut deliver, out),
                (true, false) => push_frames::<false, true>(gro, frames, meta, &mut deliver, out),
                (true, true) => push_frames::<false, false>(gro, frames, meta, &mut deliver, out),
            })
        })
    }
}

/// Where `ofl_gro_push_burst` writes each frame's verdict and reason.
#[derive(Clone, Copy)]
struct BurstOut {
    flags: u32,
    verdicts: *mut u8,
    reasons: *mut u32,
}

/// Pushes `frames` in order; returns how many were refused. `VERDICTS` / `REASONS`:
/// whether `out.verdicts` / `out.reasons` are non-NULL (then they have room for every
/// frame, the caller's contract).
///
/// # Safety
/// Every frame was checked by `ofl_gro_push_burst` (`data` NULL only with length 0,
/// at most `isize::MAX` bytes) and has `len` readable bytes at `data`.
#[inline(always)]
unsafe fn push_frames<const VERDICTS: bool, const REASONS: bool>(
    gro: &mut Gro,
    frames: &[ofl_rx_frame],
    meta: RxMeta,
    deliver: &mut impl FnMut(Merged<'_>),
    out: BurstOut,
) -> i32 {
    let mut refused: i32 = 0;
    for (i, f) in frames.iter().enumerate() {
        // SAFETY: checked by the caller (see above); the caller promises `len`
        // readable bytes at `data`.
        let frame: &[u8] = if f.data.is_null() { &[] } else { unsafe { core::slice::from_raw_parts(f.data, f.len) } };
        let (verdict, why) = verdict_of(gro.push(f.id, frame, meta, deliver), out.flags);
        refused += i32::from(verdict == ofl_gro_verdict::OFL_GRO_REFUSED);
        if let (Some(why), true) = (why, REASONS) {
            // SAFETY: non-NULL (REASONS), room for every frame (caller's contract).
            unsafe { *out.reasons.add(i) = why };
        }
        if VERDICTS {
            // SAFETY: as above.
            unsafe { *out.verdicts.add(i) = verdict as u8 };
        }
    }
    refused
}

/// Delivers every held run, oldest first; returns how many were delivered.
///
/// # Safety
/// `gro` a live handle; `cb` non-NULL.
#[no_mangle]
pub unsafe extern "C" fn ofl_gro_flush(
    gro: *mut ofl_gro,
    cb: ofl_gro_deliver_fn,
    user: *mut c_void,
) -> i32 {
    // SAFETY: caller contract, NULLs checked inside.
    unsafe {
        with_gro(gro, |inner| {
            let cb = cb.ok_or(ofl_status::OFL_ERR_NULL)?;
            let mut delivered = 0;
            let Inner { gro } = inner;
            gro.flush(&mut deliverer(cb, user, &mut delivered));
            Ok(delivered)
        })
    }
}

/// Delivers the runs whose first frame came at least `age` before `now` (same clock
/// as `ofl_gro_push`'s `now`), oldest first; returns how many were delivered.
///
/// # Safety
/// `gro` a live handle; `cb` non-NULL.
#[no_mangle]
pub unsafe extern "C" fn ofl_gro_flush_older_than(
    gro: *mut ofl_gro,
    now: u64,
    age: u64,
    cb: ofl_gro_deliver_fn,
    user: *mut c_void,
) -> i32 {
    // SAFETY: caller contract, NULLs checked inside.
    unsafe {
        with_gro(gro, |inner| {
            let cb = cb.ok_or(ofl_status::OFL_ERR_NULL)?;
            let mut delivered = 0;
            let Inner { gro } = inner;
            gro.flush_older_than(now, age, &mut deliverer(cb, user, &mut delivered));
            Ok(delivered)
        })
    }
}

/// Runs currently held (a count, or a negative code).
///
/// # Safety
/// `gro` NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn ofl_gro_held_flows(gro: *mut ofl_gro) -> i32 {
    // SAFETY: caller contract.
    unsafe {
        with_gro(gro, |inner| {
            Ok(i32::try_from(inner.gro.held_flows()).unwrap_or(i32::MAX))
        })
    }
}

fn stats_to_c(s: &GroStats) -> ofl_gro_stats {
    ofl_gro_stats {
        packets_in: s.packets_in,
        merged: s.merged,
        flows_opened: s.flows_opened,
        emitted: s.emitted,
        emitted_segments: s.emitted_segments,
        flushed_explicit: s.flushed_explicit,
        flushed_aged: s.flushed_aged,
        flushed_evicted: s.flushed_evicted,
        refused_total: s.refused_total(),
        ended: first_reasons(&s.ended),
        refused: first_reasons(&s.refused),
    }
}

/// The counts of the first `OFL_GRO_STATS_REASONS` reasons.
fn first_reasons(counts: &[u64; Reason::COUNT]) -> [u64; OFL_GRO_STATS_REASONS] {
    core::array::from_fn(|i| counts[i])
}

/// Per-reason counters sized by the caller (as DPDK's xstats): writes the first
/// `min(n, reasons)` counts of runs ended and of frames refused into `ended` and
/// `refused` (either may be NULL) and returns how many reasons the library has, so a
/// caller can size its arrays by calling with `n == 0` first. Indexes are
/// `ofl_gro_reason` values.
///
/// # Safety
/// `gro` a live handle; `ended` and `refused` NULL or writable for `n` values.
#[no_mangle]
pub unsafe extern "C" fn ofl_gro_get_reason_counts(
    gro: *mut ofl_gro,
    ended: *mut u64,
    refused: *mut u64,
    n: usize,
) -> i32 {
    // SAFETY: caller contract, NULLs checked inside.
    unsafe {
        with_gro(gro, |inner| {
            let stats = inner.gro.stats();
            let count = n.min(Reason::COUNT);
            for (dst, src) in [(ended, &stats.ended), (refused, &stats.refused)] {
                if !dst.is_null() {
                    core::slice::from_raw_parts_mut(dst, count).copy_from_slice(&src[..count]);
                }
            }
            Ok(Reason::COUNT as i32)
        })
    }
}

/// Copies the table's counters into `*stats`.
///
/// # Safety
/// `gro` a live handle; `stats` points to an `ofl_gro_stats`.
#[no_mangle]
pub unsafe extern "C" fn ofl_gro_get_stats(gro: *mut ofl_gro, stats: *mut ofl_gro_stats) -> i32 {
    // SAFETY: caller contract, NULLs checked inside.
    unsafe {
        with_gro(gro, |inner| {
            *out(stats)? = stats_to_c(inner.gro.stats());
            Ok(0)
        })
    }
}

/// A static name for an `ofl_gro_reason` ("psh", "not contiguous", ...); values out
/// of range give "unknown reason". Never NULL; thread-safe.
#[no_mangle]
pub extern "C" fn ofl_gro_reason_name(reason: u32) -> *const c_char {
    let name = catch_unwind(|| {
        usize::try_from(reason)
            .ok()
            .and_then(|i| REASON_NAMES.get(i).copied())
            .unwrap_or(c"unknown reason")
    });
    name.unwrap_or(c"unknown reason").as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_names_and_values_follow_the_engine() {
        for r in Reason::ALL {
            let name = REASON_NAMES[r.index()].to_str().unwrap();
            assert_eq!(name, r.name());
        }
        assert_eq!(
            ofl_gro_reason::OFL_GRO_REASON_TABLE_FULL as usize,
            Reason::TableFull.index()
        );
        assert_eq!(
            ofl_gro_reason::OFL_GRO_REASON_PSH as usize,
            Reason::Psh.index()
        );
    }
}
