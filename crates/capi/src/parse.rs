//! Frame parsing: `ofl_parse_frame` fills a flat [`ofl_layout`] of offsets and
//! protocols (the engine's `wire::Layout`).

use engine::wire::{
    parse_frame_with, IpLayer, IpVersion, L4Proto, Layout, ParseOptions, TunnelKind,
};

use crate::{bytes, guard, input, ofl_status, parse_status, u32_of};

/// Transport protocol of an IP layer (`ofl_ip_layer::l4`).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ofl_l4_kind {
    /// Any other protocol, or a non-first fragment (no transport header in it).
    OFL_L4_OTHER = 0,
    OFL_L4_TCP = 1,
    OFL_L4_UDP = 2,
}

/// Encapsulation of a tunnelled frame (`ofl_layout::tunnel`).
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ofl_tunnel_kind {
    OFL_TUNNEL_NONE = 0,
    OFL_TUNNEL_VXLAN = 1,
    OFL_TUNNEL_GENEVE = 2,
    OFL_TUNNEL_GRE = 3,
}

/// One IP header (with IPv6 extension headers) and the transport header above it.
/// Offsets are from the first byte of the frame.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ofl_ip_layer {
    /// Offset of the IP header.
    pub offset: u32,
    /// IPv4: IHL x 4. IPv6: 40 + the extension headers walked.
    pub header_len: u32,
    /// End of the IP packet by its length field (bytes after it are padding).
    pub end: u32,
    /// Offset of the transport header.
    pub l4_offset: u32,
    /// TCP: data offset x 4; UDP: 8; other: 0.
    pub l4_header_len: u32,
    /// 4 or 6.
    pub version: u8,
    /// An `ofl_l4_kind` value.
    pub l4: u8,
    /// The IP protocol number above this layer (6, 17, 47, ...).
    pub ip_protocol: u8,
    /// 1 for an IPv4 fragment (MF or offset) or an IPv6 packet with a Fragment header.
    pub is_fragment: u8,
}

/// Everything parsing learned about a frame.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ofl_layout {
    /// Ethernet header plus 802.1Q/802.1ad tags of the outermost frame.
    pub l2_len: u32,
    /// Headers up to the first payload byte: what every GSO segment repeats.
    pub headers_len: u32,
    /// Innermost transport payload: offset and length.
    pub payload_offset: u32,
    pub payload_len: u32,
    /// End of the frame by the outermost IP length (Ethernet padding excluded).
    pub frame_end: u32,
    /// Outermost VLAN TCI, valid when `has_vlan` is 1.
    pub vlan_tci: u16,
    pub has_vlan: u8,
    /// An `ofl_tunnel_kind` value; the `tunnel_*`, `inner_*` and `outer` fields are
    /// zero when it is `OFL_TUNNEL_NONE`.
    pub tunnel: u8,
    /// Offset and length of the VXLAN / Geneve / GRE header.
    pub tunnel_offset: u32,
    pub tunnel_header_len: u32,
    /// Offset of the inner Ethernet header; 0 when GRE carries IP directly.
    pub inner_l2_offset: u32,
    /// Inner Ethernet header plus tags (0 when none).
    pub inner_l2_len: u32,
    /// The tunnel's outer IP layer (with UDP for VXLAN/Geneve).
    pub outer: ofl_ip_layer,
    /// The innermost IP layer (the only one when not tunnelled).
    pub ip: ofl_ip_layer,
}

/// Which UDP ports mean a tunnel, beyond the defaults (VXLAN 4789, Geneve 6081).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ofl_parse_opts {
    /// Another VXLAN port (e.g. Linux's 8472); 0 for none.
    pub extra_vxlan_port: u16,
    /// Another Geneve port; 0 for none.
    pub extra_geneve_port: u16,
    /// 1: report VXLAN/Geneve/GRE frames as plain UDP / protocol 47.
    pub no_tunnels: u8,
}

impl ofl_parse_opts {
    pub(crate) fn to_engine(self) -> Result<ParseOptions, ofl_status> {
        let mut opts = ParseOptions::DEFAULT;
        if self.extra_vxlan_port != 0 {
            opts = opts
                .with_vxlan_port(self.extra_vxlan_port)
                .ok_or(ofl_status::OFL_ERR_INVALID_ARGUMENT)?;
        }
        if self.extra_geneve_port != 0 {
            opts = opts
                .with_geneve_port(self.extra_geneve_port)
                .ok_or(ofl_status::OFL_ERR_INVALID_ARGUMENT)?;
        }
        if self.no_tunnels > 1 {
            return Err(ofl_status::OFL_ERR_INVALID_ARGUMENT);
        }
        Ok(if self.no_tunnels == 1 {
            opts.without_tunnels()
        } else {
            opts
        })
    }
}

fn ip_layer(ip: &IpLayer) -> ofl_ip_layer {
    let (l4, ip_protocol) = match ip.l4 {
        L4Proto::Tcp => (ofl_l4_kind::OFL_L4_TCP, 6),
        L4Proto::Udp => (ofl_l4_kind::OFL_L4_UDP, 17),
        L4Proto::Other(p) => (ofl_l4_kind::OFL_L4_OTHER, p),
    };
    ofl_ip_layer {
        offset: u32_of(ip.offset),
        header_len: u32_of(ip.header_len),
        end: u32_of(ip.end),
        l4_offset: u32_of(ip.l4_offset),
        l4_header_len: u32_of(ip.l4_header_len),
        version: match ip.version {
            IpVersion::V4 => 4,
            IpVersion::V6 => 6,
        },
        l4: l4 as u8,
        ip_protocol,
        is_fragment: u8::from(ip.is_fragment),
    }
}

/// The flat C form of an engine `Layout`.
pub fn layout_to_c(layout: &Layout) -> ofl_layout {
    let payload = layout.payload();
    let mut c = ofl_layout {
        l2_len: u32_of(layout.l2_len),
        headers_len: u32_of(layout.headers_len()),
        payload_offset: u32_of(payload.start),
        payload_len: u32_of(payload.len()),
        frame_end: u32_of(layout.frame_end()),
        vlan_tci: layout.vlan_tci.unwrap_or(0),
        has_vlan: u8::from(layout.vlan_tci.is_some()),
        inner_l2_len: u32_of(layout.inner_l2_len),
        ip: ip_layer(&layout.ip),
        ..ofl_layout::default()
    };
    if let Some(t) = &layout.tunnel {
        c.tunnel = match t.kind {
            TunnelKind::Vxlan => ofl_tunnel_kind::OFL_TUNNEL_VXLAN,
            TunnelKind::Geneve => ofl_tunnel_kind::OFL_TUNNEL_GENEVE,
            TunnelKind::Gre => ofl_tunnel_kind::OFL_TUNNEL_GRE,
        } as u8;
        c.tunnel_offset = u32_of(t.offset);
        c.tunnel_header_len = u32_of(t.header_len);
        c.inner_l2_offset = t.inner_l2_offset.map_or(0, u32_of);
        c.outer = ip_layer(&t.outer);
    }
    c
}

/// Parses `frame` (`len` bytes from the Ethernet destination address) into `*out`
/// with the default tunnel ports. Returns `OFL_OK` or an `OFL_ERR_PARSE_*` code
/// (`*out` is untouched on error). Thread-safe.
///
/// # Safety
/// `frame` must be readable for `len` bytes; `out` must point to an `ofl_layout`.
#[no_mangle]
pub unsafe extern "C" fn ofl_parse_frame(
    frame: *const u8,
    len: usize,
    out: *mut ofl_layout,
) -> i32 {
    // SAFETY: forwarded caller contract; NULL options mean the defaults.
    unsafe { ofl_parse_frame_opts(frame, len, core::ptr::null(), out) }
}

/// `ofl_parse_frame` with tunnel options; `opts` may be NULL for the defaults.
///
/// # Safety
/// As `ofl_parse_frame`; `opts` is NULL or points to an `ofl_parse_opts`.
#[no_mangle]
pub unsafe extern "C" fn ofl_parse_frame_opts(
    frame: *const u8,
    len: usize,
    opts: *const ofl_parse_opts,
    out: *mut ofl_layout,
) -> i32 {
    guard(|| {
        // SAFETY: caller contract (checked for NULL inside).
        let frame = unsafe { bytes(frame, len) }?;
        let out = unsafe { crate::out(out) }?;
        let opts = if opts.is_null() {
            ParseOptions::DEFAULT
        } else {
            // SAFETY: non-NULL and, by contract, valid.
            unsafe { input(opts) }?.to_engine()?
        };
        let layout = parse_frame_with(frame, &opts).map_err(|e| parse_status(&e))?;
        *out = layout_to_c(&layout);
        Ok(0)
    })
}
