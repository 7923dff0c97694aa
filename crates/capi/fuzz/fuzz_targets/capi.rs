//! Every C API entry point on arbitrary bytes: nothing panics (a panic would be caught
//! and turned into OFL_ERR_PANIC, which this target treats as a finding, as libFuzzer's
//! panic hook does), every error code has a name, and what comes back adds up: layout
//! offsets lie inside the frame, the three GSO output forms agree byte for byte, and
//! every GRO part names a frame that was pushed and a range inside it.
//!
//! Input: a control byte, a 12-byte virtio-net header, then frames as (u16
//! little-endian length, bytes). The first frame is parsed, summed, validated against
//! the header and segmented, also with the header in its 24-byte tunnel form; all
//! frames are pushed into a small GRO table. The tunnel-form GSO handle takes its
//! memory from an allocator hook, which must get every byte back.
#![no_main]

use core::ffi::{c_void, CStr};
use core::ptr::{null, null_mut};

use libfuzzer_sys::fuzz_target;
use offlab_engine_c::*;

const PANIC: i32 = ofl_status::OFL_ERR_PANIC as i32;
const MAX_FRAMES: usize = 32;

fn check_code(rc: i32) -> i32 {
    assert_ne!(rc, PANIC, "a panic crossed into the C API");
    if rc < 0 {
        let name = unsafe { CStr::from_ptr(ofl_strerror(rc)) };
        assert_ne!(
            name.to_bytes(),
            b"unknown error code",
            "code {rc} has no name"
        );
    }
    rc
}

fn split_frames(mut rest: &[u8]) -> Vec<&[u8]> {
    let mut frames = Vec::new();
    while rest.len() >= 2 && frames.len() < MAX_FRAMES {
        let len = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
        rest = &rest[2..];
        let take = len.min(rest.len());
        frames.push(&rest[..take]);
        rest = &rest[take..];
    }
    frames
}

fn parse(frame: &[u8], control: u8) {
    let mut layout = ofl_layout::default();
    let opts = ofl_parse_opts {
        extra_vxlan_port: if control & 2 != 0 { 8472 } else { 0 },
        extra_geneve_port: 0,
        no_tunnels: (control >> 2) & 1,
    };
    let rc = check_code(unsafe {
        ofl_parse_frame_opts(frame.as_ptr(), frame.len(), &opts, &mut layout)
    });
    if rc == 0 {
        let len = frame.len() as u64;
        assert!(u64::from(layout.frame_end) <= len);
        assert!(u64::from(layout.payload_offset) + u64::from(layout.payload_len) <= len);
        assert!(u64::from(layout.ip.end) <= len && layout.ip.l4_offset <= layout.ip.end);
    }
}

fn checksum(data: &[u8]) {
    let (mut whole, mut a, mut b) = (0u32, 0u32, 0u32);
    let split = data.first().map_or(0, |&x| usize::from(x)).min(data.len());
    unsafe {
        assert_eq!(
            check_code(ofl_csum_sum(data.as_ptr(), data.len(), 0, &mut whole)),
            0
        );
        ofl_csum_sum(data.as_ptr(), split, 0, &mut a);
        ofl_csum_sum(data[split..].as_ptr(), data.len() - split, 0, &mut b);
    }
    assert_eq!(
        ofl_csum_fold(ofl_csum_combine(a, b, split)),
        ofl_csum_fold(whole)
    );
}

fn gso(frame: &[u8], vnet_bytes: &[u8], control: u8) {
    let mut vnet = ofl_vnet_hdr::default();
    let rc =
        check_code(unsafe { ofl_vnet_decode(vnet_bytes.as_ptr(), vnet_bytes.len(), 0, &mut vnet) });
    assert_eq!(rc, 12);
    let mut wire = [0u8; 12];
    assert_eq!(
        unsafe { ofl_vnet_encode(&vnet, 0, wire.as_mut_ptr(), 12) },
        12
    );
    assert_eq!(&wire[..], vnet_bytes);
    check_code(unsafe { ofl_vnet_validate(&vnet, frame.as_ptr(), frame.len()) });

    let flags = u32::from(control >> 4);
    let mut handle = null_mut();
    assert_eq!(unsafe { ofl_gso_new(null(), &mut handle) }, 0);
    let n =
        check_code(unsafe { ofl_gso_segment(handle, frame.as_ptr(), frame.len(), &vnet, flags) });
    if n > 0 {
        let n = n as usize;
        let mut total = 0usize;
        assert_eq!(unsafe { ofl_gso_total_len(handle, &mut total) }, 0);
        // Zero-copy form, assembled by hand.
        let mut assembled = Vec::with_capacity(total);
        let mut lens = Vec::new();
        for i in 0..n {
            let mut seg = core::mem::MaybeUninit::<ofl_gso_seg>::uninit();
            assert_eq!(
                unsafe { ofl_gso_segment_get(handle, i, seg.as_mut_ptr()) },
                0
            );
            let seg = unsafe { seg.assume_init() };
            let header = unsafe { core::slice::from_raw_parts(seg.header, seg.header_len) };
            assembled.extend_from_slice(header);
            assembled.extend_from_slice(
                &frame[seg.payload_offset..seg.payload_offset + seg.payload_len],
            );
            lens.push(seg.header_len + seg.payload_len);
        }
        assert_eq!(assembled.len(), total);
        // Contiguous form.
        let mut contig = vec![0u8; total];
        let mut offsets = vec![0usize; n + 1];
        let rc = unsafe {
            ofl_gso_segment_contig(
                handle,
                frame.as_ptr(),
                frame.len(),
                &vnet,
                flags,
                contig.as_mut_ptr(),
                total,
                offsets.as_mut_ptr(),
                n + 1,
            )
        };
        assert_eq!(rc, n as i32);
        assert_eq!(contig, assembled);
        // Buffer-array form.
        let mut mem: Vec<Vec<u8>> = lens.iter().map(|&l| vec![0u8; l]).collect();
        let mut bufs: Vec<ofl_buf> = mem
            .iter_mut()
            .map(|m| ofl_buf {
                data: m.as_mut_ptr(),
                cap: m.len(),
                len: 0,
            })
            .collect();
        let rc = unsafe {
            ofl_gso_segment_into(
                handle,
                frame.as_ptr(),
                frame.len(),
                &vnet,
                flags,
                bufs.as_mut_ptr(),
                n,
            )
        };
        assert_eq!(rc, n as i32);
        assert_eq!(mem.concat(), assembled);
        if n > 1 {
            let rc = unsafe {
                ofl_gso_segment_into(
                    handle,
                    frame.as_ptr(),
                    frame.len(),
                    &vnet,
                    flags,
                    bufs.as_mut_ptr(),
                    n - 1,
                )
            };
            assert_eq!(rc, ofl_status::OFL_ERR_BUFFER_TOO_SMALL as i32);
        }
    } else {
        assert_eq!(unsafe { ofl_gso_count(handle) }, 0);
    }
    unsafe { ofl_gso_free(handle) };
}

struct Pushed<'a> {
    frames: &'a [&'a [u8]],
    held: Vec<bool>,
    delivered_segments: u64,
}

unsafe extern "C" fn deliver(user: *mut c_void, merged: *const ofl_gro_merged) {
    let pushed = unsafe { &mut *(user as *mut Pushed<'_>) };
    let m = unsafe { &*merged };
    assert!(m.n_parts >= 1 && m.n_parts == usize::from(m.segments));
    let parts = unsafe { core::slice::from_raw_parts(m.parts, m.n_parts) };
    for p in parts {
        let id = p.id as usize;
        assert!(pushed.held[id], "part of frame {id}, which is not held");
        pushed.held[id] = false;
        let end = u64::from(p.payload_offset) + u64::from(p.payload_len);
        assert!(end <= pushed.frames[id].len() as u64);
    }
    pushed.delivered_segments += u64::from(m.segments);
}

fn gro(frames: &[&[u8]], control: u8) {
    let mut cfg = core::mem::MaybeUninit::<ofl_gro_config>::uninit();
    assert_eq!(unsafe { ofl_gro_config_default(cfg.as_mut_ptr()) }, 0);
    let mut cfg = unsafe { cfg.assume_init() };
    cfg.max_flows = 4;
    cfg.max_segments_tcp = 8;
    let mut table = null_mut();
    assert_eq!(unsafe { ofl_gro_new(&cfg, &mut table) }, 0);
    let mut pushed = Pushed {
        frames,
        held: vec![false; frames.len()],
        delivered_segments: 0,
    };
    let user = &mut pushed as *mut Pushed<'_> as *mut c_void;
    let flags = u32::from(control & 1);
    // The first half goes in as one burst, the rest frame by frame.
    let half = frames.len() / 2;
    let rx: Vec<ofl_rx_frame> = frames[..half]
        .iter()
        .enumerate()
        .map(|(id, f)| ofl_rx_frame {
            id: id as u64,
            data: f.as_ptr(),
            len: f.len(),
        })
        .collect();
    let mut verdicts = vec![u8::MAX; half];
    let mut reasons = vec![u32::MAX; half];
    for id in 0..half {
        unsafe { (&mut (*(user as *mut Pushed<'_>)).held)[id] = true };
    }
    let refused = check_code(unsafe {
        ofl_gro_push_burst(
            table,
            rx.as_ptr(),
            half,
            flags,
            0,
            Some(deliver),
            user,
            verdicts.as_mut_ptr(),
            reasons.as_mut_ptr(),
        )
    });
    assert_eq!(
        refused as usize,
        verdicts.iter().filter(|&&v| v == 2).count()
    );
    for id in 0..half {
        assert!(verdicts[id] <= 2);
        if verdicts[id] == ofl_gro_verdict::OFL_GRO_REFUSED as u8 {
            assert!((reasons[id] as usize) < OFL_GRO_REASON_COUNT);
            let held = unsafe { &mut (*(user as *mut Pushed<'_>)).held };
            assert!(held[id], "a refused frame was delivered");
            held[id] = false;
        }
    }
    for (id, f) in frames.iter().enumerate().skip(half) {
        let mut reason = u32::MAX;
        // Marked before the push: a frame that ends its run is delivered inside it.
        unsafe { (&mut (*(user as *mut Pushed<'_>)).held)[id] = true };
        let rc = check_code(unsafe {
            ofl_gro_push(
                table,
                id as u64,
                f.as_ptr(),
                f.len(),
                flags,
                id as u64,
                Some(deliver),
                user,
                &mut reason,
            )
        });
        if rc == ofl_gro_verdict::OFL_GRO_REFUSED as i32 {
            assert!((reason as usize) < OFL_GRO_REASON_COUNT);
            let held = unsafe { &mut (*(user as *mut Pushed<'_>)).held };
            assert!(held[id], "a refused frame was delivered");
            held[id] = false;
        } else {
            assert!(rc == 0 || rc == 1);
        }
        if id % 5 == 4 {
            check_code(unsafe {
                ofl_gro_flush_older_than(table, id as u64, 3, Some(deliver), user)
            });
        }
    }
    check_code(unsafe { ofl_gro_flush(table, Some(deliver), user) });
    assert_eq!(unsafe { ofl_gro_held_flows(table) }, 0);
    let mut stats = core::mem::MaybeUninit::<ofl_gro_stats>::uninit();
    assert_eq!(unsafe { ofl_gro_get_stats(table, stats.as_mut_ptr()) }, 0);
    let stats = unsafe { stats.assume_init() };
    assert_eq!(stats.packets_in, frames.len() as u64);
    assert_eq!(
        stats.emitted_segments + stats.refused_total,
        frames.len() as u64
    );
    unsafe { ofl_gro_free(table) };
}

/// Makes an IPv4-looking frame's total length and header checksum consistent.
fn repair_ipv4(frame: &mut [u8]) {
    if frame.len() < 34 || frame[12..14] != [0x08, 0x00] {
        return;
    }
    frame[14] = 0x45;
    let total = (frame.len() - 14).min(65535) as u16;
    frame[16..18].copy_from_slice(&total.to_be_bytes());
    frame[24..26].copy_from_slice(&[0, 0]);
    let mut check = 0u16;
    assert_eq!(
        unsafe { ofl_csum_of(frame[14..34].as_ptr(), 20, &mut check) },
        0
    );
    frame[24..26].copy_from_slice(&check.to_be_bytes());
}

/// The same header in the 24-byte UDP-tunnel form, its tunnel offsets taken from the
/// four input bytes after the header (the first frame's length prefix and first bytes):
/// decoded, encoded back, validated against the frame and segmented.
fn tunnel_form(frame: &[u8], vnet12: &[u8; 12], offsets: &[u8]) {
    let mut bytes = [0u8; 24];
    bytes[..12].copy_from_slice(vnet12);
    let n = offsets.len().min(4);
    bytes[20..20 + n].copy_from_slice(&offsets[..n]);
    let mut vnet = ofl_vnet_hdr::default();
    let rc = check_code(unsafe { ofl_vnet_decode(bytes.as_ptr(), 24, OFL_VNET_FORM_TUNNEL, &mut vnet) });
    if rc < 0 {
        return;
    }
    assert_eq!(rc, 24);
    let mut wire = [0u8; 24];
    assert_eq!(unsafe { ofl_vnet_encode(&vnet, OFL_VNET_FORM_TUNNEL, wire.as_mut_ptr(), 24) }, 24);
    // The hash fields (12..20) are not carried; the offsets only with tunnel GSO.
    assert_eq!(&wire[..12], &bytes[..12]);
    if (vnet.outer_th_offset, vnet.inner_nh_offset) != (0, 0) {
        assert_eq!(&wire[20..24], &bytes[20..24]);
    }
    if check_code(unsafe { ofl_vnet_validate(&vnet, frame.as_ptr(), frame.len()) }) < 0 {
        return;
    }
    // This handle takes its memory from a counting allocator hook (ABI 1.2): every
    // byte it allocates, growing to this frame, comes back when it is freed.
    let ledger = Ledger::default();
    let params = ofl_gso_params {
        size: core::mem::size_of::<ofl_gso_params>() as u32,
        parse: ofl_parse_opts::default(),
        allocator: ofl_allocator {
            alloc: Some(ledger_alloc),
            free: Some(ledger_free),
            user: &ledger as *const Ledger as *mut c_void,
            numa_node: 0,
        },
    };
    let mut handle = null_mut();
    assert_eq!(unsafe { ofl_gso_new_ex(&params, &mut handle) }, 0);
    check_code(unsafe { ofl_gso_segment(handle, frame.as_ptr(), frame.len(), &vnet, 0) });
    unsafe { ofl_gso_free(handle) };
    assert!(ledger.allocs.get() > 0);
    assert_eq!((ledger.allocs.get(), ledger.bytes.get()), (ledger.frees.get(), 0));
}

/// What a counting allocator hook saw: blocks allocated and freed, bytes outstanding.
#[derive(Default)]
struct Ledger {
    allocs: core::cell::Cell<u64>,
    frees: core::cell::Cell<u64>,
    bytes: core::cell::Cell<usize>,
}

unsafe extern "C" fn ledger_alloc(user: *mut c_void, size: usize, align: usize, _node: i32) -> *mut c_void {
    let ledger = unsafe { &*(user as *const Ledger) };
    ledger.allocs.set(ledger.allocs.get() + 1);
    ledger.bytes.set(ledger.bytes.get() + size);
    let layout = std::alloc::Layout::from_size_align(size, align).unwrap();
    unsafe { std::alloc::GlobalAlloc::alloc(&std::alloc::System, layout) }.cast()
}

unsafe extern "C" fn ledger_free(user: *mut c_void, ptr: *mut c_void, size: usize, align: usize) {
    let ledger = unsafe { &*(user as *const Ledger) };
    ledger.frees.set(ledger.frees.get() + 1);
    ledger.bytes.set(ledger.bytes.get() - size);
    let layout = std::alloc::Layout::from_size_align(size, align).unwrap();
    unsafe { std::alloc::GlobalAlloc::dealloc(&std::alloc::System, ptr.cast(), layout) };
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 13 {
        return;
    }
    let (control, rest) = (input[0], &input[13..]);
    let mut vnet = [0u8; 12];
    vnet.copy_from_slice(&input[1..13]);
    let mut owned: Vec<Vec<u8>> = split_frames(rest).iter().map(|f| f.to_vec()).collect();
    if control & 8 != 0 {
        owned.iter_mut().for_each(|f| repair_ipv4(f));
        if let Some(f) = owned
            .first()
            .filter(|f| f.len() >= 34 && f[12..14] == [0x08, 0x00])
        {
            let offset: u16 = if f[23] == 6 { 16 } else { 6 };
            vnet[6..8].copy_from_slice(&34u16.to_le_bytes());
            vnet[8..10].copy_from_slice(&offset.to_le_bytes());
        }
    }
    let frames: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    let first = frames.first().copied().unwrap_or(&[]);
    parse(first, control);
    checksum(rest);
    gso(first, &vnet, control);
    tunnel_form(first, &vnet, rest);
    gro(&frames, control);
});
