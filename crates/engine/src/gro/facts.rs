//! Classification: one parse of a frame, then the facts every merge rule needs, kept in
//! one struct. Rules that refuse a frame on its own (whatever the table holds) are
//! applied here, each an early return with its reason.

use super::flow::{self, Shape, Transport};
use super::ip::{self, l4_checksum_ok, IpFacts};
use super::kind;
use super::reason::Reason;
use super::tcp::{self, TcpFacts};
use super::tunnel::{self, OuterFacts};
use super::udp::{self, UdpFacts};
use crate::chain::Sums;
use crate::wire::layout::Layout;
use crate::wire::parse::{parse_frame_with, ParseOptions};

/// Everything the merge rules need to know about one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Facts {
    pub shape: Shape,
    /// `plain::kind_of(&shape)`: which fixed-offset classifier takes the shape, kept
    /// with the run so the fast paths' lookups test one word.
    pub plain: usize,
    pub hash: u64,
    /// Offset of the first payload byte: every header above it is held per flow.
    pub headers_len: usize,
    pub payload_len: usize,
    /// Length of the outermost IP packet (the 64 KiB cap applies to it).
    pub outer_ip_len: usize,
    /// The innermost IP header.
    pub ip: IpFacts,
    pub outer: Option<OuterFacts>,
    pub l4: L4Facts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum L4Facts {
    Tcp(TcpFacts),
    Udp(UdpFacts),
}

/// A frame refused on its own. `flow` is its flow identity when that could be read, so
/// the caller can deliver what that flow holds first and keep the flow in order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Refused {
    pub reason: Reason,
    pub flow: Option<(Shape, u64)>,
}

/// Parses `frame` and reads its facts. `validated`: the transport checksums are known
/// good (virtio DATA_VALID); IPv4 header checksums are checked regardless, as in Linux.
/// `header_cap`: the largest header a flow slot holds; `parse`: which ports are tunnels.
/// Inlined into `push` (as is `read_facts`): `Facts` is then built in place instead of
/// being copied through two `Result`s, about 6% of a push.
#[cfg(test)]
pub(crate) fn classify(
    frame: &[u8],
    validated: bool,
    header_cap: usize,
    parse: &ParseOptions,
) -> Result<Facts, Refused> {
    classify_from(frame, crate::chain::Contiguous, validated, header_cap, parse)
}

/// `classify` with the checksummed bytes read as `payload` says (from `frame`, or from
/// the pieces of a chained frame whose headers `frame` holds).
#[inline(always)]
pub(crate) fn classify_from(
    frame: &[u8],
    payload: impl Sums,
    validated: bool,
    header_cap: usize,
    parse: &ParseOptions,
) -> Result<Facts, Refused> {
    let alone = |reason| Refused { reason, flow: None };
    // Borrowed, not moved out of the Result: copying the Layout right after it was
    // written costs store-forwarding stalls on the hot path.
    let parsed = parse_frame_with(frame, parse);
    let layout = match &parsed {
        Ok(layout) => layout,
        Err(e) => return Err(alone(Reason::Unparseable(*e))),
    };
    let transport = flow::transport_of(&layout.ip).ok_or(alone(Reason::NotTcpOrUdp))?;
    let headers_len = layout.headers_len();
    if headers_len > header_cap {
        return Err(alone(Reason::HeaderTooLong));
    }
    let shape = Shape::of(layout, transport);
    let hash = flow::flow_hash(&shape, frame);
    read_facts(frame, payload, layout, shape, hash, validated).map_err(|reason| Refused {
        reason,
        flow: Some((shape, hash)),
    })
}

#[inline(always)]
fn read_facts(
    frame: &[u8],
    payload: impl Sums,
    layout: &Layout,
    shape: Shape,
    hash: u64,
    validated: bool,
) -> Result<Facts, Reason> {
    let outer = match &layout.tunnel {
        Some(t) => Some(tunnel::read(frame, payload, t, validated)?),
        None => None,
    };
    if frame.len() > layout.frame_end() || layout.ip.end != layout.frame_end() {
        return Err(Reason::Padded);
    }
    let ip = ip::read(frame, &layout.ip)?;
    let l4 = &layout.ip;
    let l4_header = frame
        .get(l4.l4_offset..l4.l4_offset + l4.l4_header_len)
        .ok_or(Reason::HeaderTooLong)?;
    let payload_len = layout.payload().len();
    let (l4_facts, protocol) = match shape.transport {
        Transport::Tcp => {
            let tcp = tcp::read(l4_header);
            tcp::refuse_alone(&tcp, payload_len)?;
            (L4Facts::Tcp(tcp), TCP_PROTOCOL)
        }
        Transport::Udp => {
            let udp = udp::read(l4_header);
            udp::refuse_alone(&udp, payload_len)?;
            (L4Facts::Udp(udp), UDP_PROTOCOL)
        }
    };
    if !validated && !l4_checksum_ok(frame, payload, l4, protocol) {
        return Err(Reason::BadL4Checksum);
    }
    let outer_ip = layout.tunnel.as_ref().map_or(l4, |t| &t.outer);
    Ok(Facts {
        plain: kind::kind_of(&shape),
        shape,
        hash,
        headers_len: layout.headers_len(),
        payload_len,
        outer_ip_len: outer_ip.end - outer_ip.offset,
        ip,
        outer,
        l4: l4_facts,
    })
}

const TCP_PROTOCOL: u8 = 6;
const UDP_PROTOCOL: u8 = 17;

