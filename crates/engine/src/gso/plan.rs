//! Checks a frame and its `Layout` once, and gathers what every segment repeats: the
//! offsets and constant sums the segmenters patch from.

use core::ops::Range;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::checksum;
use crate::wire::layout::{IpLayer, IpVersion, L4Proto, Layout, TunnelKind};

use super::ip::{v4, v6, IpFields};
use super::tunnel::{gre, udp, Tail, TunnelFields};
use super::v6ext;
use super::limits::MAX_HEADERS_LEN;
use super::{GsoError, GsoKind, GsoParams};

/// TCP header length limits (data offset 5..=15 words).
const TCP_MIN_LEN: usize = 20;
const TCP_MAX_LEN: usize = 60;
const IPPROTO_GRE: u8 = 47;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;
/// Largest transport payload one super-packet may carry.
const MAX_PAYLOAD: usize = 65535;

/// The facts of one super-packet that all its segments share.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan {
    /// Bytes from the frame start to the first payload byte (every header).
    pub headers_len: usize,
    /// Start and end of the innermost transport payload in the frame.
    pub payload_start: usize,
    pub payload_end: usize,
    /// Offset of the innermost transport header.
    pub l4_offset: usize,
    pub inner_ip: IpFields,
    /// Inner pseudo-header sum without the length.
    pub pseudo_seed: u32,
    pub tunnel: Option<TunnelFields>,
}

impl Plan {
    /// Validates `layout` against `frame` and `params`; on success every offset the
    /// segmenters index lies inside `frame[..headers_len]`.
    pub fn new(frame: &[u8], layout: &Layout, params: &GsoParams) -> Result<Self, GsoError> {
        if params.segment_size == 0 {
            return Err(GsoError::SegmentSizeZero);
        }
        check_layout(frame, layout)?;
        let ip = &layout.ip;
        if ip.is_fragment || layout.tunnel.is_some_and(|t| t.outer.is_fragment) {
            return Err(GsoError::FragmentedInput);
        }
        check_kind(params.kind, ip)?;
        let payload = ip.payload();
        if payload.len() > MAX_PAYLOAD {
            return Err(GsoError::TooLarge);
        }
        if layout.headers_len() > MAX_HEADERS_LEN {
            return Err(GsoError::HeadersTooLong);
        }
        let inner_ip = IpFields::new(frame, ip);
        let fixed_id_applies = params.fixed_ip_id && params.kind != GsoKind::UdpFragment;
        if fixed_id_applies && inner_ip.as_v4().is_some_and(|f| !f.dont_fragment()) {
            return Err(GsoError::FixedIdWithoutDf);
        }
        let tunnel = match &layout.tunnel {
            None => None,
            Some(t) => {
                if t.kind == TunnelKind::Gre && frame[t.offset] & gre::FLAG_SEQUENCE != 0 {
                    return Err(GsoError::GreSequenceNumber);
                }
                // The outer seed is needed only for an outer UDP checksum; an outer IPv6
                // header's extension headers are checked either way (AH refused).
                let outer_seed = if params.outer_udp_checksum {
                    pseudo_seed(frame, &t.outer, IPPROTO_UDP)?
                } else {
                    check_v6_extensions(frame, &t.outer)?;
                    0
                };
                let outer_pseudo = || outer_seed;
                Some(TunnelFields::new(frame, t, params.outer_udp_checksum, outer_pseudo))
            }
        };
        let proto = if ip.l4 == L4Proto::Tcp {
            IPPROTO_TCP
        } else {
            IPPROTO_UDP
        };
        Ok(Plan {
            headers_len: layout.headers_len(),
            payload_start: payload.start,
            payload_end: payload.end,
            l4_offset: ip.l4_offset,
            inner_ip,
            pseudo_seed: pseudo_seed(frame, ip, proto)?,
            tunnel,
        })
    }

    pub fn payload(&self) -> Range<usize> {
        self.payload_start..self.payload_end
    }

    /// Whether the outer checksums need each segment's `Tail` sum.
    pub fn needs_tail_sum(&self) -> bool {
        self.tunnel.is_some_and(|t| t.needs_tail_sum())
    }

    /// Patches the inner IP header and every outer header of a segment whose inner
    /// transport header is already final.
    #[inline(always)]
    pub fn patch_ip_layers(
        &self,
        header: &mut [u8],
        wire_len: usize,
        index: usize,
        inner_id_step: u16,
        inner_frag: Option<u16>,
        tail: Tail,
    ) {
        self.inner_ip
            .patch(header, wire_len, inner_id_step, inner_frag);
        if let Some(tunnel) = &self.tunnel {
            tunnel.patch(header, wire_len, index, tail);
        }
    }
}

/// Whether the innermost packet is one `kind` can segment.
fn check_kind(kind: GsoKind, ip: &IpLayer) -> Result<(), GsoError> {
    match (kind, ip.l4) {
        (GsoKind::Tcp, L4Proto::Tcp) => Ok(()),
        (GsoKind::Tcp, _) => Err(GsoError::NotTcp),
        (GsoKind::Udp | GsoKind::UdpFragment, L4Proto::Udp) => {
            if kind == GsoKind::UdpFragment && ip.version != IpVersion::V4 {
                Err(GsoError::UfoNeedsIpv4)
            } else {
                Ok(())
            }
        }
        (GsoKind::Udp | GsoKind::UdpFragment, _) => Err(GsoError::NotUdp),
    }
}

/// Pseudo-header sum (addresses and protocol, length 0) of an IP layer in `frame`;
/// for IPv6 with the final destination (`v6ext`), or why the layer cannot be segmented.
fn pseudo_seed(frame: &[u8], ip: &IpLayer, protocol: u8) -> Result<u32, GsoError> {
    let h = &frame[ip.offset..ip.l4_offset];
    Ok(match ip.version {
        IpVersion::V4 => {
            let addr = |at: usize| Ipv4Addr::new(h[at], h[at + 1], h[at + 2], h[at + 3]);
            checksum::pseudo_header_v4(addr(12), addr(16), protocol, 0)
        }
        IpVersion::V6 => {
            let mut source = [0u8; 16];
            source.copy_from_slice(&h[8..24]);
            let destination = if h.len() == v6::HEADER_LEN {
                let mut d = [0u8; 16];
                d.copy_from_slice(&h[24..40]);
                d
            } else {
                v6ext::pseudo_destination(h)?
            };
            checksum::pseudo_header_v6(&Ipv6Addr::from(source), &Ipv6Addr::from(destination), protocol, 0)
        }
    })
}

/// `pseudo_seed`'s refusals alone: an IPv6 layer's extension headers are walked (AH,
/// an unknown Routing type with segments left), an IPv4 layer has none.
fn check_v6_extensions(frame: &[u8], ip: &IpLayer) -> Result<(), GsoError> {
    let h = &frame[ip.offset..ip.l4_offset];
    if ip.version == IpVersion::V6 && h.len() > v6::HEADER_LEN {
        v6ext::pseudo_destination(h)?;
    }
    Ok(())
}

/// Refuses a `Layout` that does not describe `frame`: after this, every header offset
/// the segmenters touch is in bounds and in order.
fn check_layout(frame: &[u8], layout: &Layout) -> Result<(), GsoError> {
    let ip = &layout.ip;
    let end = layout.frame_end();
    if end > frame.len() || ip.end > end {
        return Err(GsoError::LayoutMismatch);
    }
    check_ip(frame, ip)?;
    let l4_ok = match ip.l4 {
        L4Proto::Tcp => {
            let len = ip.l4_header_len;
            // The data offset counts 4-byte words, so this also makes `len` a multiple of 4.
            (TCP_MIN_LEN..=TCP_MAX_LEN).contains(&len)
                && usize::from(frame[ip.l4_offset + 12] >> 4) * 4 == len
        }
        L4Proto::Udp => ip.l4_header_len == udp::HEADER_LEN,
        L4Proto::Other(_) => true,
    };
    if !l4_ok {
        return Err(GsoError::LayoutMismatch);
    }
    let Some(t) = &layout.tunnel else {
        return Ok(());
    };
    check_ip(frame, &t.outer)?;
    let encap_ok = match t.kind {
        TunnelKind::Vxlan | TunnelKind::Geneve => {
            t.outer.l4 == L4Proto::Udp
                && t.outer.l4_header_len == udp::HEADER_LEN
                && t.offset == t.outer.l4_offset + udp::HEADER_LEN
        }
        TunnelKind::Gre => {
            let has_checksum = frame[t.offset] & gre::FLAG_CHECKSUM != 0;
            t.outer.l4 == L4Proto::Other(IPPROTO_GRE)
                && t.offset == t.outer.l4_offset
                && (!has_checksum || t.header_len >= gre::LEN_WITH_CHECKSUM)
        }
    };
    let nested = t.offset + t.header_len <= ip.offset && ip.end <= t.outer.end;
    if !encap_ok || !nested || t.outer.end != end {
        return Err(GsoError::LayoutMismatch);
    }
    if ip.end != t.outer.end {
        return Err(GsoError::TrailingBytes);
    }
    Ok(())
}

/// One IP layer: header and transport header inside the frame, version and header
/// length as the bytes say.
fn check_ip(frame: &[u8], ip: &IpLayer) -> Result<(), GsoError> {
    let min = match ip.version {
        IpVersion::V4 => v4::MIN_LEN,
        IpVersion::V6 => v6::HEADER_LEN,
    };
    let in_bounds = ip.header_len >= min
        && ip.offset.checked_add(ip.header_len) == Some(ip.l4_offset)
        && ip
            .l4_offset
            .checked_add(ip.l4_header_len)
            .is_some_and(|h| h <= ip.end)
        && ip.end <= frame.len()
        && ip.l4_header_len.max(4) <= ip.end - ip.l4_offset;
    if !in_bounds {
        return Err(GsoError::LayoutMismatch);
    }
    let first = frame[ip.offset];
    let header_ok = match ip.version {
        IpVersion::V4 => {
            first >> 4 == 4 && usize::from(first & 0x0f) * 4 == ip.header_len && ip.header_len <= 60
        }
        IpVersion::V6 => first >> 4 == 6,
    };
    if header_ok {
        Ok(())
    } else {
        Err(GsoError::LayoutMismatch)
    }
}
