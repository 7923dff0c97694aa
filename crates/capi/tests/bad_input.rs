//! The extern "C" functions called directly with bad input: NULL pointers, short
//! buffers, malformed frames, out-of-range arguments, reentry. Each must return its
//! documented code (and never panic or touch memory it should not).
#![allow(clippy::undocumented_unsafe_blocks)]

use core::ffi::{c_void, CStr};
use core::ptr::{null, null_mut};

use offlab_engine_c::*;

mod common;
use common::tso_vnet;

const OK: i32 = ofl_status::OFL_OK as i32;
const NULL: i32 = ofl_status::OFL_ERR_NULL as i32;
const SMALL: i32 = ofl_status::OFL_ERR_BUFFER_TOO_SMALL as i32;
const INVALID: i32 = ofl_status::OFL_ERR_INVALID_ARGUMENT as i32;

fn cstr(p: *const core::ffi::c_char) -> &'static str {
    assert!(!p.is_null());
    unsafe { CStr::from_ptr(p) }.to_str().unwrap()
}

/// A TCP/IPv4 frame: `payload` bytes, given flags, full (correct) checksums or the
/// pseudo-header sum only.
fn tcp4(payload: usize, seq: u32, ip_id: u16, flags: u8, full: bool) -> Vec<u8> {
    common::tcp4_frame(40000, seq, ip_id, payload, flags, full)
}

#[test]
fn strerror_names_every_code() {
    for s in ofl_status::ALL {
        let text = cstr(ofl_strerror(s as i32));
        assert!(!text.is_empty() && text != "unknown error code", "{s:?}");
    }
    assert_eq!(cstr(ofl_strerror(0)), "ok");
    assert_eq!(cstr(ofl_strerror(7)), "ok");
    assert_eq!(cstr(ofl_strerror(-9999)), "unknown error code");
    assert_eq!(cstr(ofl_strerror(i32::MIN)), "unknown error code");
    assert_eq!(cstr(ofl_strerror(NULL)), "null pointer");
    assert_eq!(cstr(ofl_version()), env!("CARGO_PKG_VERSION"));
    let kernels = ["avx512vnni", "avx512", "avxvnni", "avx2", "sse2", "portable"];
    assert!(kernels.contains(&cstr(ofl_csum_kernel())));
}

#[test]
fn parse_checks_pointers_and_reports_parse_errors() {
    let frame = tcp4(100, 1, 1, 0x10, true);
    let mut layout = ofl_layout::default();
    unsafe {
        assert_eq!(ofl_parse_frame(null(), 10, &mut layout), NULL);
        assert_eq!(
            ofl_parse_frame(frame.as_ptr(), frame.len(), null_mut()),
            NULL
        );
        assert_eq!(
            ofl_parse_frame(null(), 0, &mut layout),
            ofl_status::OFL_ERR_PARSE_TRUNCATED as i32
        );
        assert_eq!(
            ofl_parse_frame(frame.as_ptr(), 30, &mut layout),
            ofl_status::OFL_ERR_PARSE_TRUNCATED as i32
        );
        assert_eq!(layout, ofl_layout::default(), "untouched on error");
        let mut arp = frame.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(
            ofl_parse_frame(arp.as_ptr(), arp.len(), &mut layout),
            ofl_status::OFL_ERR_PARSE_UNSUPPORTED_ETHERTYPE as i32
        );
        let mut v5 = frame.clone();
        v5[14] = 0x55;
        assert_eq!(
            ofl_parse_frame(v5.as_ptr(), v5.len(), &mut layout),
            ofl_status::OFL_ERR_PARSE_BAD_IP_VERSION as i32
        );
        let mut short_ihl = frame.clone();
        short_ihl[14] = 0x44;
        assert_eq!(
            ofl_parse_frame(short_ihl.as_ptr(), short_ihl.len(), &mut layout),
            ofl_status::OFL_ERR_PARSE_BAD_HEADER_LENGTH as i32
        );
        // An IP length longer than the frame.
        assert_eq!(
            ofl_parse_frame(frame.as_ptr(), frame.len() - 1, &mut layout),
            ofl_status::OFL_ERR_PARSE_TRUNCATED as i32
        );
        let bad_opts = ofl_parse_opts {
            no_tunnels: 2,
            ..Default::default()
        };
        assert_eq!(
            ofl_parse_frame_opts(frame.as_ptr(), frame.len(), &bad_opts, &mut layout),
            INVALID
        );

        assert_eq!(
            ofl_parse_frame(frame.as_ptr(), frame.len(), &mut layout),
            OK
        );
    }
    assert_eq!(layout.l2_len, 14);
    assert_eq!(layout.headers_len, 54);
    assert_eq!((layout.payload_offset, layout.payload_len), (54, 100));
    assert_eq!(layout.ip.version, 4);
    assert_eq!(layout.ip.l4, ofl_l4_kind::OFL_L4_TCP as u8);
    assert_eq!(
        (layout.ip.ip_protocol, layout.ip.l4_offset, layout.ip.end),
        (6, 34, 154)
    );
    assert_eq!(layout.tunnel, ofl_tunnel_kind::OFL_TUNNEL_NONE as u8);
}

#[test]
fn checksum_functions_check_pointers_and_compute() {
    // RFC 1071's example: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2.
    let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
    let mut sum = 0u32;
    let mut check = 0u16;
    unsafe {
        assert_eq!(ofl_csum_sum(null(), 5, 0, &mut sum), NULL);
        assert_eq!(ofl_csum_sum(data.as_ptr(), 8, 0, null_mut()), NULL);
        assert_eq!(ofl_csum_sum(null(), 0, 0x1234, &mut sum), OK);
        assert_eq!(sum, 0x1234);
        assert_eq!(ofl_csum_sum(data.as_ptr(), 8, 0, &mut sum), OK);
        assert_eq!(ofl_csum_fold(sum), 0xddf2);
        assert_eq!(ofl_csum_of(data.as_ptr(), 8, &mut check), OK);
        assert_eq!(check, !0xddf2);
        assert_eq!(ofl_csum_of(null(), 1, &mut check), NULL);
        assert_eq!(ofl_csum_of(data.as_ptr(), 8, null_mut()), NULL);
        // Sum of halves split at an odd offset combines to the whole.
        let (mut a, mut b) = (0u32, 0u32);
        ofl_csum_sum(data.as_ptr(), 3, 0, &mut a);
        ofl_csum_sum(data[3..].as_ptr(), 5, 0, &mut b);
        assert_eq!(ofl_csum_fold(ofl_csum_combine(a, b, 3)), 0xddf2);
        let addr = [10u8, 0, 0, 1];
        assert_eq!(
            ofl_csum_pseudo_v4(null(), addr.as_ptr(), 6, 20, &mut sum),
            NULL
        );
        assert_eq!(
            ofl_csum_pseudo_v4(addr.as_ptr(), null(), 6, 20, &mut sum),
            NULL
        );
        assert_eq!(
            ofl_csum_pseudo_v4(addr.as_ptr(), addr.as_ptr(), 6, 20, null_mut()),
            NULL
        );
        assert_eq!(
            ofl_csum_pseudo_v4(addr.as_ptr(), addr.as_ptr(), 6, 20, &mut sum),
            OK
        );
        assert_eq!(sum, 0x0a00 + 0x0001 + 0x0a00 + 0x0001 + 6 + 20);
        let v6 = [0u8; 16];
        assert_eq!(
            ofl_csum_pseudo_v6(v6.as_ptr(), null(), 17, 8, &mut sum),
            NULL
        );
        assert_eq!(
            ofl_csum_pseudo_v6(v6.as_ptr(), v6.as_ptr(), 17, 8, &mut sum),
            OK
        );
        assert_eq!(sum, 17 + 8);
    }
    // RFC 1624: changing a word updates the checksum as recomputing would.
    let new = ofl_csum_update16(!0xddf2, 0x0001, 0x0002);
    let mut changed = data;
    changed[1] = 2;
    let mut expected = 0u16;
    unsafe { ofl_csum_of(changed.as_ptr(), 8, &mut expected) };
    assert_eq!(new, expected);
    assert_eq!(
        ofl_csum_update32(!0xddf2, 0x0001_f203, 0x0001_f203),
        !0xddf2
    );
}

#[test]
fn vnet_decode_encode_validate() {
    let mut hdr = ofl_vnet_hdr::default();
    let wire = [1u8, 0x81, 54, 0, 0xa8, 5, 34, 0, 16, 0, 3, 0];
    unsafe {
        assert_eq!(
            ofl_vnet_decode(wire.as_ptr(), 5, 0, &mut hdr),
            ofl_status::OFL_ERR_VNET_TRUNCATED as i32
        );
        assert_eq!(
            ofl_vnet_decode(wire.as_ptr(), 11, 0, &mut hdr),
            ofl_status::OFL_ERR_VNET_TRUNCATED as i32
        );
        assert_eq!(ofl_vnet_decode(null(), 12, 0, &mut hdr), NULL);
        assert_eq!(ofl_vnet_decode(wire.as_ptr(), 12, 0, null_mut()), NULL);
        assert_eq!(ofl_vnet_decode(wire.as_ptr(), 12, 3, &mut hdr), INVALID);
        assert_eq!(
            ofl_vnet_decode(wire.as_ptr(), 12, OFL_VNET_FORM_TUNNEL, &mut hdr),
            ofl_status::OFL_ERR_VNET_TRUNCATED as i32
        );
        assert_eq!(ofl_vnet_decode(wire.as_ptr(), 12, 0, &mut hdr), 12);
        assert_eq!(hdr.gso_type, OFL_VNET_GSO_TCPV4 | OFL_VNET_GSO_ECN);
        assert_eq!(
            (hdr.gso_size, hdr.csum_start, hdr.num_buffers),
            (1448, 34, 3)
        );
        assert_eq!(ofl_vnet_decode(wire.as_ptr(), 10, 1, &mut hdr), 10);
        assert_eq!(hdr.num_buffers, 0);
        let mut buf = [0u8; 12];
        assert_eq!(ofl_vnet_encode(&hdr, 0, buf.as_mut_ptr(), 11), SMALL);
        assert_eq!(ofl_vnet_encode(&hdr, 1, buf.as_mut_ptr(), 9), SMALL);
        assert_eq!(ofl_vnet_encode(null(), 1, buf.as_mut_ptr(), 12), NULL);
        assert_eq!(ofl_vnet_encode(&hdr, 0, null_mut(), 12), NULL);
        assert_eq!(ofl_vnet_encode(&hdr, 1, buf.as_mut_ptr(), 12), 10);
        assert_eq!(buf[..10], wire[..10]);

        let frame = tcp4(3000, 1, 1, 0x18, false);
        let good = tso_vnet(1000);
        assert_eq!(ofl_vnet_validate(&good, frame.as_ptr(), frame.len()), OK);
        assert_eq!(ofl_vnet_validate(null(), frame.as_ptr(), frame.len()), NULL);
        assert_eq!(ofl_vnet_validate(&good, null(), 1), NULL);
        let unknown = ofl_vnet_hdr {
            flags: 0x40,
            ..good
        };
        assert_eq!(
            ofl_vnet_validate(&unknown, frame.as_ptr(), frame.len()),
            ofl_status::OFL_ERR_VNET_UNKNOWN_FLAGS as i32
        );
        let no_csum = ofl_vnet_hdr { flags: 0, ..good };
        assert_eq!(
            ofl_vnet_validate(&no_csum, frame.as_ptr(), frame.len()),
            ofl_status::OFL_ERR_VNET_GSO_WITHOUT_NEEDS_CSUM as i32
        );
        // GSO on a frame that does not parse reports the parse error.
        assert_eq!(
            ofl_vnet_validate(&good, frame.as_ptr(), 40),
            ofl_status::OFL_ERR_PARSE_TRUNCATED as i32
        );
    }
}

#[test]
fn vnet_tunnel_form() {
    // NEEDS_CSUM | UDP_TUNNEL_CSUM, TCPV4 | UDP_TUNNEL_IPV4, outer UDP at 34, inner IP at 64.
    let mut wire = [0u8; 24];
    wire[..10].copy_from_slice(&[1 | 8, 1 | 0x20, 104, 0, 0xa8, 5, 84, 0, 16, 0]);
    wire[20..24].copy_from_slice(&[34, 0, 64, 0]);
    let mut hdr = ofl_vnet_hdr::default();
    unsafe {
        assert_eq!(ofl_vnet_decode(wire.as_ptr(), 24, OFL_VNET_FORM_TUNNEL, &mut hdr), 24);
        assert_eq!(hdr.gso_type, OFL_VNET_GSO_TCPV4 | OFL_VNET_GSO_UDP_TUNNEL_IPV4);
        assert_eq!(hdr.flags, OFL_VNET_F_NEEDS_CSUM | OFL_VNET_F_UDP_TUNNEL_CSUM);
        assert_eq!((hdr.outer_th_offset, hdr.inner_nh_offset), (34, 64));
        let mut buf = [0u8; 24];
        assert_eq!(ofl_vnet_encode(&hdr, OFL_VNET_FORM_TUNNEL, buf.as_mut_ptr(), 24), 24);
        assert_eq!(buf, wire);
        assert_eq!(
            ofl_vnet_encode(&hdr, OFL_VNET_FORM_V1, buf.as_mut_ptr(), 24),
            ofl_status::OFL_ERR_VNET_TUNNEL_NEEDS_TUNNEL_FORM as i32
        );
        let both = ofl_vnet_hdr {
            gso_type: hdr.gso_type | OFL_VNET_GSO_UDP_TUNNEL_IPV6,
            ..hdr
        };
        assert_eq!(
            ofl_vnet_encode(&both, OFL_VNET_FORM_TUNNEL, buf.as_mut_ptr(), 24),
            ofl_status::OFL_ERR_VNET_TUNNEL_BOTH_IP_VERSIONS as i32
        );
        // A frame without a tunnel does not match the tunnel fields.
        let frame = tcp4(3000, 1, 1, 0x18, false);
        assert_eq!(
            ofl_vnet_validate(&hdr, frame.as_ptr(), frame.len()),
            ofl_status::OFL_ERR_VNET_TUNNEL_NOT_IN_FRAME as i32
        );
    }
}

struct Gso(*mut ofl_gso);
impl Drop for Gso {
    fn drop(&mut self) {
        unsafe { ofl_gso_free(self.0) };
    }
}

fn new_gso() -> Gso {
    let mut gso = null_mut();
    assert_eq!(unsafe { ofl_gso_new(null(), &mut gso) }, OK);
    assert!(!gso.is_null());
    Gso(gso)
}

#[test]
fn gso_checks_pointers_buffers_and_headers() {
    let frame = tcp4(2500, 1, 1, 0x18, false);
    let vnet = tso_vnet(1000);
    let g = new_gso();
    let mut seg = ofl_gso_seg {
        header: null(),
        header_len: 0,
        payload_offset: 0,
        payload_len: 0,
        csum_partial: 0,
        csum_start: 0,
        csum_offset: 0,
    };
    unsafe {
        assert_eq!(ofl_gso_new(null(), null_mut()), NULL);
        let bad_opts = ofl_parse_opts {
            no_tunnels: 9,
            ..Default::default()
        };
        let mut h = null_mut();
        assert_eq!(ofl_gso_new(&bad_opts, &mut h), INVALID);
        assert!(h.is_null());
        ofl_gso_free(null_mut());

        assert_eq!(
            ofl_gso_segment(null_mut(), frame.as_ptr(), frame.len(), &vnet, 0),
            NULL
        );
        assert_eq!(ofl_gso_segment(g.0, null(), frame.len(), &vnet, 0), NULL);
        assert_eq!(
            ofl_gso_segment(g.0, frame.as_ptr(), frame.len(), null(), 0),
            NULL
        );
        assert_eq!(
            ofl_gso_segment(g.0, frame.as_ptr(), frame.len(), &vnet, 1 << 9),
            INVALID
        );
        let both = OFL_GSO_OUTER_UDP_CSUM | OFL_GSO_NO_OUTER_UDP_CSUM;
        assert_eq!(
            ofl_gso_segment(g.0, frame.as_ptr(), frame.len(), &vnet, both),
            INVALID
        );

        // Success: 3 segments, partial checksums as NEEDS_CSUM asks.
        assert_eq!(
            ofl_gso_segment(g.0, frame.as_ptr(), frame.len(), &vnet, 0),
            3
        );
        assert_eq!(ofl_gso_count(g.0), 3);
        assert_eq!(ofl_gso_segment_get(g.0, 2, &mut seg), OK);
        assert_eq!(
            (seg.header_len, seg.payload_offset, seg.payload_len),
            (54, 2054, 500)
        );
        assert_eq!(
            (seg.csum_partial, seg.csum_start, seg.csum_offset),
            (1, 34, 16)
        );
        assert_eq!(ofl_gso_segment_get(g.0, 3, &mut seg), INVALID);
        assert_eq!(ofl_gso_segment_get(g.0, usize::MAX, &mut seg), INVALID);
        assert_eq!(ofl_gso_segment_get(null(), 0, &mut seg), NULL);
        assert_eq!(ofl_gso_segment_get(g.0, 0, null_mut()), NULL);
        let mut total = 0usize;
        assert_eq!(ofl_gso_total_len(g.0, &mut total), OK);
        assert_eq!(total, 3 * 54 + 2500);
        assert_eq!(ofl_gso_total_len(g.0, null_mut()), NULL);

        // Malformed frames and headers; afterwards no segment is readable.
        assert_eq!(
            ofl_gso_segment(g.0, frame.as_ptr(), 20, &vnet, 0),
            ofl_status::OFL_ERR_PARSE_TRUNCATED as i32
        );
        assert_eq!(ofl_gso_count(g.0), 0);
        assert_eq!(ofl_gso_segment_get(g.0, 0, &mut seg), INVALID);
        let none = ofl_vnet_hdr {
            gso_type: OFL_VNET_GSO_NONE,
            gso_size: 0,
            ..vnet
        };
        assert_eq!(
            ofl_gso_segment(g.0, frame.as_ptr(), frame.len(), &none, 0),
            ofl_status::OFL_ERR_GSO_VIRTIO_NO_GSO as i32
        );
        let v6 = ofl_vnet_hdr {
            gso_type: OFL_VNET_GSO_TCPV6,
            ..vnet
        };
        assert_eq!(
            ofl_gso_segment(g.0, frame.as_ptr(), frame.len(), &v6, 0),
            ofl_status::OFL_ERR_VNET_GSO_IP_VERSION_MISMATCH as i32
        );
        let zero = ofl_vnet_hdr {
            gso_size: 0,
            ..vnet
        };
        assert_eq!(
            ofl_gso_segment(g.0, frame.as_ptr(), frame.len(), &zero, 0),
            ofl_status::OFL_ERR_VNET_GSO_SIZE_ZERO as i32
        );
        let tiny = ofl_vnet_hdr {
            gso_size: 1,
            ..vnet
        };
        assert_eq!(
            ofl_gso_segment(g.0, frame.as_ptr(), frame.len(), &tiny, 0),
            ofl_status::OFL_ERR_GSO_TOO_MANY_SEGMENTS as i32
        );

        // Copying forms: too few or too short buffers copy nothing.
        let mut mem = vec![[0u8; 1054]; 3];
        let mut bufs: Vec<ofl_buf> = mem
            .iter_mut()
            .map(|m| ofl_buf {
                data: m.as_mut_ptr(),
                cap: m.len(),
                len: 0,
            })
            .collect();
        assert_eq!(
            ofl_gso_segment_into(
                g.0,
                frame.as_ptr(),
                frame.len(),
                &vnet,
                0,
                bufs.as_mut_ptr(),
                2
            ),
            SMALL
        );
        assert_eq!(ofl_gso_count(g.0), 3, "the segments stay readable");
        assert_eq!(
            ofl_gso_segment_into(g.0, frame.as_ptr(), frame.len(), &vnet, 0, null_mut(), 3),
            NULL
        );
        let saved = bufs[2].data;
        bufs[2].data = null_mut();
        assert_eq!(
            ofl_gso_segment_into(
                g.0,
                frame.as_ptr(),
                frame.len(),
                &vnet,
                0,
                bufs.as_mut_ptr(),
                3
            ),
            NULL
        );
        assert!(bufs.iter().all(|b| b.len == 0));
        bufs[2].data = saved;
        bufs[1].cap = 1053;
        assert_eq!(
            ofl_gso_segment_into(
                g.0,
                frame.as_ptr(),
                frame.len(),
                &vnet,
                0,
                bufs.as_mut_ptr(),
                3
            ),
            SMALL
        );
        assert!(bufs.iter().all(|b| b.len == 0));
        bufs[1].cap = 1054;
        assert_eq!(
            ofl_gso_segment_into(
                g.0,
                frame.as_ptr(),
                frame.len(),
                &vnet,
                0,
                bufs.as_mut_ptr(),
                3
            ),
            3
        );
        assert_eq!(
            bufs.iter().map(|b| b.len).collect::<Vec<_>>(),
            [1054, 1054, 554]
        );
        assert_eq!(mem[1][54..], frame[1054..2054]);

        let mut contig = vec![0u8; total];
        let mut offsets = [0usize; 4];
        let (buf, cap) = (contig.as_mut_ptr(), contig.len());
        assert_eq!(
            ofl_gso_segment_contig(
                g.0,
                frame.as_ptr(),
                frame.len(),
                &vnet,
                0,
                buf,
                cap - 1,
                offsets.as_mut_ptr(),
                4
            ),
            SMALL
        );
        assert_eq!(
            ofl_gso_segment_contig(
                g.0,
                frame.as_ptr(),
                frame.len(),
                &vnet,
                0,
                buf,
                cap,
                offsets.as_mut_ptr(),
                3
            ),
            SMALL
        );
        assert_eq!(
            ofl_gso_segment_contig(
                g.0,
                frame.as_ptr(),
                frame.len(),
                &vnet,
                0,
                null_mut(),
                cap,
                offsets.as_mut_ptr(),
                4
            ),
            NULL
        );
        assert_eq!(
            ofl_gso_segment_contig(
                g.0,
                frame.as_ptr(),
                frame.len(),
                &vnet,
                0,
                buf,
                cap,
                null_mut(),
                4
            ),
            NULL
        );
        assert_eq!(
            ofl_gso_segment_contig(
                g.0,
                frame.as_ptr(),
                frame.len(),
                &vnet,
                0,
                buf,
                cap,
                offsets.as_mut_ptr(),
                4
            ),
            3
        );
        assert_eq!(offsets, [0, 1054, 2108, total]);
        assert_eq!(contig[1054 + 54..2108], frame[1054..2054]);
    }
}

#[derive(Default)]
struct Sink {
    packets: usize,
    segments: usize,
    payload: Vec<u8>,
    frames: Vec<Vec<u8>>,
    gro: Option<*mut ofl_gro>,
    reentry: Vec<i32>,
}

unsafe extern "C" fn collect(user: *mut c_void, merged: *const ofl_gro_merged) {
    let sink = unsafe { &mut *(user as *mut Sink) };
    let m = unsafe { &*merged };
    sink.packets += 1;
    sink.segments += usize::from(m.segments);
    let parts = unsafe { core::slice::from_raw_parts(m.parts, m.n_parts) };
    for p in parts {
        let f = &sink.frames[p.id as usize];
        let start = p.payload_offset as usize;
        sink.payload
            .extend_from_slice(&f[start..start + p.payload_len as usize]);
    }
    if let Some(gro) = sink.gro {
        // Calls into the same table from its callback are refused.
        let frame = &sink.frames[0];
        sink.reentry.push(unsafe {
            ofl_gro_push(
                gro,
                0,
                frame.as_ptr(),
                frame.len(),
                0,
                0,
                Some(collect),
                user,
                null_mut(),
            )
        });
        sink.reentry
            .push(unsafe { ofl_gro_flush(gro, Some(collect), user) });
        let mut stats = core::mem::MaybeUninit::uninit();
        sink.reentry
            .push(unsafe { ofl_gro_get_stats(gro, stats.as_mut_ptr()) });
        unsafe { ofl_gro_free(gro) }; // ignored while busy
    }
}

struct Table(*mut ofl_gro);
impl Drop for Table {
    fn drop(&mut self) {
        unsafe { ofl_gro_free(self.0) };
    }
}

fn new_gro() -> Table {
    let mut gro = null_mut();
    assert_eq!(unsafe { ofl_gro_new(null(), &mut gro) }, OK);
    Table(gro)
}

#[test]
fn gro_config_is_checked() {
    let mut cfg = core::mem::MaybeUninit::<ofl_gro_config>::uninit();
    unsafe {
        assert_eq!(ofl_gro_config_default(null_mut()), NULL);
        assert_eq!(ofl_gro_config_default(cfg.as_mut_ptr()), OK);
    }
    let cfg = unsafe { cfg.assume_init() };
    assert_eq!(
        (cfg.max_flows, cfg.max_segments_tcp, cfg.max_bytes),
        (1024, 64, 65535)
    );
    let mut gro = null_mut();
    for bad in [
        ofl_gro_config {
            max_flows: 0,
            ..cfg
        },
        ofl_gro_config {
            max_flows: (1 << 20) + 1,
            ..cfg
        },
        ofl_gro_config {
            max_segments_tcp: 0,
            ..cfg
        },
        ofl_gro_config {
            max_segments_udp: 5000,
            ..cfg
        },
        ofl_gro_config {
            max_bytes: 0,
            ..cfg
        },
        ofl_gro_config {
            parse: ofl_parse_opts {
                no_tunnels: 3,
                ..cfg.parse
            },
            ..cfg
        },
    ] {
        assert_eq!(unsafe { ofl_gro_new(&bad, &mut gro) }, INVALID, "{bad:?}");
        assert!(gro.is_null());
    }
    assert_eq!(unsafe { ofl_gro_new(&cfg, null_mut()) }, NULL);
    assert_eq!(unsafe { ofl_gro_new(&cfg, &mut gro) }, OK);
    unsafe { ofl_gro_free(gro) };
    unsafe { ofl_gro_free(null_mut()) };
}

#[test]
fn gro_checks_pointers_and_refuses_malformed_frames() {
    let t = new_gro();
    let frame = tcp4(1000, 1, 1, 0x10, true);
    let mut sink = Sink::default();
    let user = &mut sink as *mut Sink as *mut c_void;
    let mut reason = u32::MAX;
    let refused = ofl_gro_verdict::OFL_GRO_REFUSED as i32;
    unsafe {
        let push = |gro, f: *const u8, len, flags, cb: ofl_gro_deliver_fn, reason: *mut u32| {
            ofl_gro_push(gro, 0, f, len, flags, 0, cb, user, reason)
        };
        assert_eq!(
            push(
                null_mut(),
                frame.as_ptr(),
                frame.len(),
                0,
                Some(collect),
                &mut reason
            ),
            NULL
        );
        assert_eq!(push(t.0, null(), 10, 0, Some(collect), &mut reason), NULL);
        assert_eq!(
            push(t.0, frame.as_ptr(), frame.len(), 0, None, &mut reason),
            NULL
        );
        assert_eq!(
            push(
                t.0,
                frame.as_ptr(),
                frame.len(),
                6,
                Some(collect),
                &mut reason
            ),
            INVALID
        );
        // Malformed: refused (to be forwarded as is) with the reason.
        assert_eq!(
            push(t.0, frame.as_ptr(), 30, 0, Some(collect), &mut reason),
            refused
        );
        assert_eq!(reason, ofl_gro_reason::OFL_GRO_REASON_UNPARSEABLE as u32);
        assert_eq!(push(t.0, null(), 0, 0, Some(collect), null_mut()), refused);
        let mut bad_sum = frame.clone();
        bad_sum[60] ^= 0xff;
        assert_eq!(
            push(
                t.0,
                bad_sum.as_ptr(),
                bad_sum.len(),
                0,
                Some(collect),
                &mut reason
            ),
            refused
        );
        assert_eq!(
            reason,
            ofl_gro_reason::OFL_GRO_REASON_BAD_L4_CHECKSUM as u32
        );
        let syn = tcp4(1000, 1, 1, 0x02, true);
        assert_eq!(
            push(t.0, syn.as_ptr(), syn.len(), 0, Some(collect), &mut reason),
            refused
        );
        assert_eq!(reason, ofl_gro_reason::OFL_GRO_REASON_SYN as u32);
        assert_eq!(cstr(ofl_gro_reason_name(reason)), "syn");
        assert_eq!(
            cstr(ofl_gro_reason_name(OFL_GRO_REASON_COUNT as u32)),
            "unknown reason"
        );
        assert_eq!(cstr(ofl_gro_reason_name(u32::MAX)), "unknown reason");

        assert_eq!(ofl_gro_flush(null_mut(), Some(collect), user), NULL);
        assert_eq!(ofl_gro_flush(t.0, None, user), NULL);
        assert_eq!(ofl_gro_flush_older_than(t.0, 0, 0, None, user), NULL);
        assert_eq!(ofl_gro_held_flows(null_mut()), NULL);
        assert_eq!(ofl_gro_get_stats(t.0, null_mut()), NULL);
        assert_eq!(ofl_gro_get_stats(null_mut(), null_mut()), NULL);
        let mut stats = core::mem::MaybeUninit::<ofl_gro_stats>::uninit();
        assert_eq!(ofl_gro_get_stats(t.0, stats.as_mut_ptr()), OK);
        let stats = stats.assume_init();
        assert_eq!(stats.packets_in, 4);
        assert_eq!(stats.refused_total, 4);
        assert_eq!(
            stats.refused[ofl_gro_reason::OFL_GRO_REASON_UNPARSEABLE as usize],
            2
        );
        assert_eq!(
            stats.refused[ofl_gro_reason::OFL_GRO_REASON_SYN as usize],
            1
        );
    }
    assert_eq!(sink.packets, 0);
}

#[test]
fn gro_merges_and_refuses_reentry_from_its_callback() {
    let t = new_gro();
    let mut sink = Sink::default();
    for k in 0..4u32 {
        let flags = if k == 3 { 0x18 } else { 0x10 };
        sink.frames
            .push(tcp4(1000, 1 + k * 1000, k as u16, flags, true));
    }
    let frames = sink.frames.clone();
    let user = &mut sink as *mut Sink as *mut c_void;
    let mut verdicts = Vec::new();
    for (id, f) in frames.iter().enumerate().take(3) {
        verdicts.push(unsafe {
            ofl_gro_push(
                t.0,
                id as u64,
                f.as_ptr(),
                f.len(),
                OFL_RX_CSUM_VALIDATED,
                5,
                Some(collect),
                user,
                null_mut(),
            )
        });
    }
    assert_eq!(verdicts, [0, 1, 1]);
    assert_eq!(unsafe { ofl_gro_held_flows(t.0) }, 1);
    // Too young to flush.
    assert_eq!(
        unsafe { ofl_gro_flush_older_than(t.0, 6, 2, Some(collect), user) },
        0
    );
    // The PSH frame ends the run; the callback tries to call back in.
    sink.gro = Some(t.0);
    let f = &frames[3];
    let rc = unsafe {
        ofl_gro_push(
            t.0,
            3,
            f.as_ptr(),
            f.len(),
            0,
            6,
            Some(collect),
            user,
            null_mut(),
        )
    };
    assert_eq!(rc, ofl_gro_verdict::OFL_GRO_MERGED as i32);
    let busy = ofl_status::OFL_ERR_BUSY as i32;
    assert_eq!(sink.reentry, [busy, busy, busy]);
    assert_eq!((sink.packets, sink.segments), (1, 4));
    let expected: Vec<u8> = sink.frames.iter().flat_map(|f| f[54..].to_vec()).collect();
    assert_eq!(sink.payload, expected);
    // The table still works after the refused reentry (and the ignored free).
    sink.gro = None;
    let user = &mut sink as *mut Sink as *mut c_void;
    assert_eq!(unsafe { ofl_gro_held_flows(t.0) }, 0);
    assert_eq!(unsafe { ofl_gro_flush(t.0, Some(collect), user) }, 0);
}

#[test]
fn gro_burst_checks_every_frame_first() {
    let t = new_gro();
    let mut sink = Sink::default();
    for k in 0..4u32 {
        sink.frames
            .push(tcp4(1000, 1 + k * 1000, k as u16, 0x10, true));
    }
    let mut bad = sink.frames[0].clone();
    bad[60] ^= 0xff; // wrong TCP checksum
    let frames = sink.frames.clone();
    let user = &mut sink as *mut Sink as *mut c_void;
    let mut rx = rx_frames(&frames);
    let mut verdicts = [9u8; 5];
    let mut reasons = [u32::MAX; 5];
    let stats = |t: &Table| {
        let mut s = core::mem::MaybeUninit::<ofl_gro_stats>::uninit();
        assert_eq!(unsafe { ofl_gro_get_stats(t.0, s.as_mut_ptr()) }, OK);
        unsafe { s.assume_init() }
    };
    unsafe {
        let cb = Some(collect as unsafe extern "C" fn(*mut c_void, *const ofl_gro_merged));
        let (v, r) = (verdicts.as_mut_ptr(), reasons.as_mut_ptr());
        assert_eq!(
            ofl_gro_push_burst(null_mut(), rx.as_ptr(), 4, 0, 0, cb, user, v, r),
            NULL
        );
        assert_eq!(
            ofl_gro_push_burst(t.0, null(), 4, 0, 0, cb, user, v, r),
            NULL
        );
        assert_eq!(
            ofl_gro_push_burst(t.0, rx.as_ptr(), 4, 0, 0, None, user, v, r),
            NULL
        );
        assert_eq!(
            ofl_gro_push_burst(t.0, rx.as_ptr(), 4, 8, 0, cb, user, v, r),
            INVALID
        );
        assert_eq!(
            ofl_gro_push_burst(t.0, null(), 0, 0, 0, cb, user, null_mut(), null_mut()),
            0
        );
        // A NULL frame anywhere in the burst: nothing at all is pushed.
        rx[3].data = null();
        assert_eq!(
            ofl_gro_push_burst(t.0, rx.as_ptr(), 4, 0, 0, cb, user, v, r),
            NULL
        );
        assert_eq!(stats(&t).packets_in, 0);
        assert_eq!(verdicts, [9; 5]);
        // A length no buffer can have, anywhere in the burst: refused before any push
        // too (it was refused only when the loop reached it, after the frames before).
        rx[3].data = frames[3].as_ptr();
        rx[3].len = isize::MAX as usize + 1;
        assert_eq!(
            ofl_gro_push_burst(t.0, rx.as_ptr(), 4, 0, 0, cb, user, v, r),
            INVALID
        );
        assert_eq!(stats(&t).packets_in, 0);
        assert_eq!(verdicts, [9; 5]);
        rx[3].len = frames[3].len();
        // Four frames of one flow and a bad one: merged, the bad one refused.
        rx.push(ofl_rx_frame {
            id: 4,
            data: bad.as_ptr(),
            len: bad.len(),
        });
        assert_eq!(
            ofl_gro_push_burst(t.0, rx.as_ptr(), 5, 0, 0, cb, user, v, r),
            1
        );
    }
    assert_eq!(verdicts, [0, 1, 1, 1, 2]);
    assert_eq!(
        reasons[4],
        ofl_gro_reason::OFL_GRO_REASON_BAD_L4_CHECKSUM as u32
    );
    assert_eq!(reasons[..4], [u32::MAX; 4]);
    let s = stats(&t);
    assert_eq!((s.packets_in, s.merged, s.refused_total), (5, 3, 1));
}

/// `ofl_gro_push_burst` runs one loop per pair of output arrays given (verdicts,
/// reasons, both, neither): each must push the same frames, write exactly the arrays it
/// was given, and return the same refused count.
/// A burst's frames as the C API takes them, each frame's id its index.
fn rx_frames(frames: &[Vec<u8>]) -> Vec<ofl_rx_frame> {
    frames
        .iter()
        .enumerate()
        .map(|(id, f)| ofl_rx_frame {
            id: id as u64,
            data: f.as_ptr(),
            len: f.len(),
        })
        .collect()
}

#[test]
fn gro_burst_gives_the_same_result_whichever_arrays_are_given() {
    let mut frames: Vec<Vec<u8>> = (0..4u32)
        .map(|k| tcp4(1000, 1 + k * 1000, k as u16, 0x10, true))
        .collect();
    let mut bad = frames[0].clone();
    bad[60] ^= 0xff; // wrong TCP checksum
    frames.push(bad);
    let rx = rx_frames(&frames);
    let cb = Some(collect as unsafe extern "C" fn(*mut c_void, *const ofl_gro_merged));
    let refused = ofl_gro_reason::OFL_GRO_REASON_BAD_L4_CHECKSUM as u32;
    for (give_verdicts, give_reasons) in [(true, true), (true, false), (false, true), (false, false)] {
        let t = new_gro();
        let mut sink = Sink {
            frames: frames.clone(),
            ..Sink::default()
        };
        let user = &mut sink as *mut Sink as *mut c_void;
        let mut verdicts = [9u8; 5];
        let mut reasons = [u32::MAX; 5];
        let v = if give_verdicts { verdicts.as_mut_ptr() } else { null_mut() };
        let r = if give_reasons { reasons.as_mut_ptr() } else { null_mut() };
        let rc = unsafe { ofl_gro_push_burst(t.0, rx.as_ptr(), 5, 0, 0, cb, user, v, r) };
        assert_eq!(rc, 1, "verdicts {give_verdicts}, reasons {give_reasons}");
        let expected_verdicts = if give_verdicts { [0, 1, 1, 1, 2] } else { [9; 5] };
        assert_eq!(verdicts, expected_verdicts);
        let expected_reasons = if give_reasons {
            [u32::MAX, u32::MAX, u32::MAX, u32::MAX, refused]
        } else {
            [u32::MAX; 5]
        };
        assert_eq!(reasons, expected_reasons);
        // The refused frame of the same flow delivered the run before it, in order.
        assert_eq!(unsafe { ofl_gro_flush(t.0, cb, user) }, 0);
        assert_eq!((sink.packets, sink.segments), (1, 4));
        let payload: Vec<u8> = frames[..4].iter().flat_map(|f| f[54..].to_vec()).collect();
        assert_eq!(sink.payload, payload);
    }
}
