//! What the IPv6 extension headers of a super-packet mean for its segments.
//!
//! - The transport pseudo-header uses the *final* destination (RFC 8200 §8.1): when a
//!   Routing header still has segments left, that is an address inside it, not the IPv6
//!   header's destination. Linux never recomputes the pseudo-header in GSO (it adjusts
//!   the seed the sender wrote), so its segments carry the final destination's sum; the
//!   engine computes the seed itself and so must find that address.
//! - AH authenticates the whole packet: every segment would need a fresh ICV, which only
//!   the IPsec endpoint can compute. Linux has no GSO handler for it and drops the
//!   super-packet (`ipv6_gso_segment` → `-EPROTONOSUPPORT`); the engine refuses it.

use super::GsoError;

const HOP_BY_HOP: u8 = 0;
const ROUTING: u8 = 43;
const FRAGMENT: u8 = 44;
const AH: u8 = 51;
const DEST_OPTS: u8 = 60;

/// Routing types whose final destination the engine knows where to find.
mod routing {
    /// RFC 2460 type 0 (deprecated by RFC 5095): addresses in visiting order, the last
    /// one final.
    pub const SOURCE_ROUTE: u8 = 0;
    /// RFC 6275 type 2 (Mobile IPv6): one address, the home address, which is final.
    pub const MOBILE_IPV6: u8 = 2;
    /// RFC 8754 type 4 (Segment Routing): Segment List[0] is the last segment.
    pub const SEGMENT_ROUTING: u8 = 4;
    /// Offset of the first address after the 8-byte fixed part.
    pub const ADDRESSES: usize = 8;
}

/// Walks the extension headers of the IPv6 header `h` (40 bytes, then extension
/// headers up to the transport header, which `h` ends at); returns the destination the
/// transport pseudo-header uses, or why the super-packet cannot be segmented.
/// `h` has been walked by `parse_frame` already, so the lengths are consistent; every
/// read is still bounds-checked, and an inconsistency is a `LayoutMismatch`.
pub(super) fn pseudo_destination(h: &[u8]) -> Result<[u8; 16], GsoError> {
    let address = |at: usize| -> Result<[u8; 16], GsoError> {
        h.get(at..at + 16)
            .and_then(|a| a.try_into().ok())
            .ok_or(GsoError::LayoutMismatch)
    };
    let mut destination = address(24)?;
    let mut next = *h.get(6).ok_or(GsoError::LayoutMismatch)?;
    let mut at = 40;
    let mut routed = false;
    while at < h.len() {
        let kind = next;
        let ext = h.get(at..at + 8).ok_or(GsoError::LayoutMismatch)?;
        next = ext[0];
        let len = match kind {
            FRAGMENT => 8,
            AH => return Err(GsoError::AuthenticationHeader),
            HOP_BY_HOP | DEST_OPTS | ROUTING => (usize::from(ext[1]) + 1) * 8,
            _ => return Err(GsoError::LayoutMismatch),
        };
        let segments_left = ext[3];
        if kind == ROUTING && segments_left != 0 {
            if routed {
                // RFC 8200 §4.1: at most one Routing header; two would leave the final
                // destination ambiguous.
                return Err(GsoError::RoutingHeaderUnsupported(ext[2]));
            }
            routed = true;
            destination = final_destination(at, ext[1], ext[2], address)?;
        }
        at += len;
    }
    Ok(destination)
}

/// The final destination named by the Routing header at `at` (`hdr_ext_len` in 8-byte
/// units after the first 8 bytes, of `routing_type`) that has segments left.
fn final_destination(
    at: usize,
    hdr_ext_len: u8,
    routing_type: u8,
    address: impl Fn(usize) -> Result<[u8; 16], GsoError>,
) -> Result<[u8; 16], GsoError> {
    // Each address takes two of the 8-byte units.
    let addresses = usize::from(hdr_ext_len) / 2;
    let first = at + routing::ADDRESSES;
    match routing_type {
        routing::SOURCE_ROUTE if addresses > 0 => address(first + 16 * (addresses - 1)),
        routing::MOBILE_IPV6 if addresses == 1 => address(first),
        routing::SEGMENT_ROUTING if addresses > 0 => address(first),
        other => Err(GsoError::RoutingHeaderUnsupported(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv6(next: u8, ext: &[u8]) -> Vec<u8> {
        let mut h = vec![0u8; 40];
        h[0] = 0x60;
        h[6] = next;
        h[24..40].copy_from_slice(&[0xfd; 16]);
        h.extend_from_slice(ext);
        h
    }

    fn srh(segments_left: u8, list: &[[u8; 16]]) -> Vec<u8> {
        let mut e = vec![6, (list.len() * 2) as u8, routing::SEGMENT_ROUTING, segments_left, 0, 0, 0, 0];
        list.iter().for_each(|a| e.extend_from_slice(a));
        e
    }

    #[test]
    fn without_routing_header_the_ipv6_destination() {
        assert_eq!(pseudo_destination(&ipv6(6, &[])), Ok([0xfd; 16]));
        let dest_opts = [6, 0, 1, 4, 0, 0, 0, 0];
        assert_eq!(pseudo_destination(&ipv6(DEST_OPTS, &dest_opts)), Ok([0xfd; 16]));
    }

    #[test]
    fn segment_routing_final_is_segment_list_0() {
        let h = ipv6(ROUTING, &srh(1, &[[1; 16], [2; 16]]));
        assert_eq!(pseudo_destination(&h), Ok([1; 16]));
    }

    #[test]
    fn routing_header_with_no_segments_left_keeps_the_ipv6_destination() {
        let h = ipv6(ROUTING, &srh(0, &[[1; 16], [2; 16]]));
        assert_eq!(pseudo_destination(&h), Ok([0xfd; 16]));
    }

    #[test]
    fn type_0_final_is_the_last_address_and_type_2_the_home_address() {
        let mut t0 = vec![6, 4, routing::SOURCE_ROUTE, 2, 0, 0, 0, 0];
        t0.extend_from_slice(&[3; 16]);
        t0.extend_from_slice(&[4; 16]);
        assert_eq!(pseudo_destination(&ipv6(ROUTING, &t0)), Ok([4; 16]));
        let mut t2 = vec![6, 2, routing::MOBILE_IPV6, 1, 0, 0, 0, 0];
        t2.extend_from_slice(&[5; 16]);
        assert_eq!(pseudo_destination(&ipv6(ROUTING, &t2)), Ok([5; 16]));
    }

    #[test]
    fn unknown_routing_type_with_segments_left_is_refused() {
        let rpl = [6, 2, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(pseudo_destination(&ipv6(ROUTING, &rpl)), Err(GsoError::RoutingHeaderUnsupported(3)));
    }

    #[test]
    fn authentication_header_is_refused() {
        let ah = [6, 4, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(pseudo_destination(&ipv6(AH, &ah)), Err(GsoError::AuthenticationHeader));
    }
}
