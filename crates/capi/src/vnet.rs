//! The virtio-net header as a plain C struct (host byte order), with decode/encode of
//! its little-endian wire forms and strict validation against a frame.

use engine::virtio::{Flags, GsoType, Header, HeaderForm};

use crate::{bytes, bytes_mut, guard, input, ofl_status, out, virtio_status};

/// `flags`: the checksum from `csum_start` on is partial (finish and store it at
/// `csum_start + csum_offset`).
pub const OFL_VNET_F_NEEDS_CSUM: u8 = 1;
/// `flags`: the checksums were validated.
pub const OFL_VNET_F_DATA_VALID: u8 = 2;
/// `flags`: receive-side coalescing info (device to driver only).
pub const OFL_VNET_F_RSC_INFO: u8 = 4;
/// `gso_type` values (the ECN bit may be or-ed in with TCP).
pub const OFL_VNET_GSO_NONE: u8 = 0;
pub const OFL_VNET_GSO_TCPV4: u8 = 1;
/// UFO: IPv4 fragmentation of one UDP datagram.
pub const OFL_VNET_GSO_UDP: u8 = 3;
pub const OFL_VNET_GSO_TCPV6: u8 = 4;
/// USO: one UDP datagram per `gso_size` bytes.
pub const OFL_VNET_GSO_UDP_L4: u8 = 5;
pub const OFL_VNET_GSO_ECN: u8 = 0x80;
/// Wire length of the virtio 1.x header (with `num_buffers`).
pub const OFL_VNET_HDR_LEN: usize = 12;
/// Wire length of the legacy header (TAP's default).
pub const OFL_VNET_HDR_LEN_LEGACY: usize = 10;

/// A virtio-net header (virtio 1.x section 5.1.6), fields in host byte order.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ofl_vnet_hdr {
    /// `OFL_VNET_F_*` bits.
    pub flags: u8,
    /// An `OFL_VNET_GSO_*` value, possibly with `OFL_VNET_GSO_ECN`.
    pub gso_type: u8,
    /// Header length hint (never trusted: the engine recomputes it).
    pub hdr_len: u16,
    /// Payload bytes per segment.
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
    /// Mergeable receive buffers (v1 form only).
    pub num_buffers: u16,
}

impl ofl_vnet_hdr {
    pub fn to_engine(&self) -> Header {
        Header {
            flags: Flags(self.flags),
            gso_type: GsoType::from(self.gso_type & !OFL_VNET_GSO_ECN),
            gso_ecn: self.gso_type & OFL_VNET_GSO_ECN != 0,
            hdr_len: self.hdr_len,
            gso_size: self.gso_size,
            csum_start: self.csum_start,
            csum_offset: self.csum_offset,
            num_buffers: self.num_buffers,
        }
    }

    pub fn from_engine(h: &Header) -> ofl_vnet_hdr {
        ofl_vnet_hdr {
            flags: h.flags.0,
            gso_type: u8::from(h.gso_type) | if h.gso_ecn { OFL_VNET_GSO_ECN } else { 0 },
            hdr_len: h.hdr_len,
            gso_size: h.gso_size,
            csum_start: h.csum_start,
            csum_offset: h.csum_offset,
            num_buffers: h.num_buffers,
        }
    }
}

fn form(legacy: i32) -> Result<HeaderForm, ofl_status> {
    match legacy {
        0 => Ok(HeaderForm::V1),
        1 => Ok(HeaderForm::Legacy),
        _ => Err(ofl_status::OFL_ERR_INVALID_ARGUMENT),
    }
}

/// Reads a header from the wire bytes at `bytes` (`legacy` 0: the 12-byte v1 form,
/// 1: the 10-byte legacy form). Returns the bytes consumed (12 or 10), or
/// `OFL_ERR_VNET_TRUNCATED` when `len` is shorter than the form. Thread-safe.
///
/// # Safety
/// `bytes` readable for `len` bytes; `hdr` points to an `ofl_vnet_hdr`.
#[no_mangle]
pub unsafe extern "C" fn ofl_vnet_decode(
    bytes: *const u8,
    len: usize,
    legacy: i32,
    hdr: *mut ofl_vnet_hdr,
) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let data = unsafe { crate::bytes(bytes, len) }?;
        let hdr = unsafe { out(hdr) }?;
        let form = form(legacy)?;
        let decoded = Header::decode(data, form).map_err(|e| virtio_status(&e))?;
        *hdr = ofl_vnet_hdr::from_engine(&decoded);
        Ok(form.header_len() as i32)
    })
}

/// Writes `*hdr` in wire form into `buf` (`cap` bytes); returns the bytes written, or
/// `OFL_ERR_BUFFER_TOO_SMALL`.
///
/// # Safety
/// `hdr` points to an `ofl_vnet_hdr`; `buf` writable for `cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn ofl_vnet_encode(
    hdr: *const ofl_vnet_hdr,
    legacy: i32,
    buf: *mut u8,
    cap: usize,
) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let hdr = unsafe { input(hdr) }?;
        let form = form(legacy)?;
        if cap < form.header_len() {
            return Err(ofl_status::OFL_ERR_BUFFER_TOO_SMALL);
        }
        let buf = unsafe { bytes_mut(buf, cap) }?;
        let n = hdr
            .to_engine()
            .encode(form, buf)
            .map_err(|e| virtio_status(&e))?;
        Ok(n as i32)
    })
}

/// Checks an untrusted header strictly against the frame it came with (known flags
/// only, GSO type matching the packet, checksum fields naming the transport checksum,
/// ...). Returns `OFL_OK` or an `OFL_ERR_VNET_*` / `OFL_ERR_PARSE_*` code.
///
/// # Safety
/// `hdr` points to an `ofl_vnet_hdr`; `frame` readable for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn ofl_vnet_validate(
    hdr: *const ofl_vnet_hdr,
    frame: *const u8,
    len: usize,
) -> i32 {
    guard(|| {
        // SAFETY: caller contract, NULL checked inside.
        let hdr = unsafe { input(hdr) }?;
        let frame = unsafe { bytes(frame, len) }?;
        hdr.to_engine()
            .validate(frame, None)
            .map_err(|e| virtio_status(&e))?;
        Ok(0)
    })
}
