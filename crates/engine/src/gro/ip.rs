//! IP-layer facts of one packet and the IP merge rules (kernel `inet_gro_receive`,
//! `inet_gro_flush`, `ipv6_gro_receive`, `ipv6_gro_flush`).

use super::reason::Reason;
use crate::chain::Sums;
use crate::checksum;
use crate::wire::layout::{IpLayer, IpVersion};
use crate::wire::{Ipv4Packet, Ipv6Packet};

/// The IPv4 flags byte and its reserved ("evil") bit, which `Ipv4Packet` does not name;
/// the kernel refuses to coalesce packets that set it.
const IPV4_FLAGS_BYTE: usize = 6;
const IPV4_RESERVED_FLAG: u8 = 0x80;
const IPV4_PLAIN_HEADER_LEN: usize = 20;

/// What the merge rules need from one IP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IpFacts {
    pub v6: bool,
    /// TTL or hop limit.
    pub ttl: u8,
    /// TOS or traffic class.
    pub tos: u8,
    /// IPv4 don't-fragment (false for IPv6).
    pub df: bool,
    /// IPv4 identification (0 for IPv6).
    pub id: u16,
}

/// How a run's IPv4 IDs advance, decided when its second packet arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdMode {
    Undecided,
    /// Packet `n` of the run carries the head's ID + n.
    Incrementing,
    /// Every packet carries the head's ID (allowed only with DF).
    Fixed,
}

/// Reads one IP header whose bounds `parse_frame` has checked, and applies the rules
/// that refuse the packet on its own: IPv4 options, fragments, a bad header checksum.
#[inline]
pub(crate) fn read(frame: &[u8], layer: &IpLayer) -> Result<IpFacts, Reason> {
    let header = frame
        .get(layer.offset..layer.offset + layer.header_len)
        .ok_or(Reason::HeaderTooLong)?;
    if layer.is_fragment {
        return Err(Reason::Fragment);
    }
    match layer.version {
        IpVersion::V4 => {
            if layer.header_len != IPV4_PLAIN_HEADER_LEN {
                return Err(Reason::IpOptions);
            }
            // A fixed-size view lets the compiler drop every getter's bounds check.
            let fixed: &[u8; IPV4_PLAIN_HEADER_LEN] =
                header.try_into().map_err(|_| Reason::IpOptions)?;
            let ip = Ipv4Packet::new_unchecked(fixed);
            if ip.is_fragment() || fixed[IPV4_FLAGS_BYTE] & IPV4_RESERVED_FLAG != 0 {
                return Err(Reason::Fragment);
            }
            if !header_checksum_ok(fixed) {
                return Err(Reason::BadIpChecksum);
            }
            Ok(IpFacts {
                v6: false,
                ttl: ip.ttl(),
                tos: ip.tos(),
                df: ip.dont_frag(),
                id: ip.ident(),
            })
        }
        IpVersion::V6 => {
            let ip = Ipv6Packet::new_unchecked(header);
            Ok(IpFacts {
                v6: true,
                ttl: ip.hop_limit(),
                tos: ip.traffic_class(),
                df: false,
                id: 0,
            })
        }
    }
}

/// Whether a 20-byte IPv4 header sums to 0xffff. Summed inline: the general
/// `checksum::sum` costs more in dispatch and setup than this whole header.
#[inline(always)]
pub(crate) fn header_checksum_ok(words: &[u8; IPV4_PLAIN_HEADER_LEN]) -> bool {
    // Summing in native byte order gives the sum byte-swapped (RFC 1071's byte-order
    // independence), and 0xffff swapped is itself: no conversions needed.
    let word = |at: usize| {
        u64::from(u32::from_ne_bytes([
            words[at],
            words[at + 1],
            words[at + 2],
            words[at + 3],
        ]))
    };
    checksum::fold64(word(0) + word(4) + word(8) + word(12) + word(16)) == 0xffff
}

/// `header_checksum_ok(ip)` for a header that differs from `head`, whose checksum
/// verified, at most in the ID (bytes 4..6) and the header checksum (10..12), as a
/// segment continuing a run differs from the run's head (`plain::continues` has
/// compared the rest). The eight other words are common, so `ip` verifies exactly when
/// its ID plus checksum is congruent to the head's modulo 0xffff: a header's sum is
/// never zero (version 4), and a non-zero sum folds to 0xffff exactly when 0xffff
/// divides it. Two words a side instead of ten: 10 fewer instructions per packet at
/// W1's 1 flow, +5–7 % at 1 and 8 flows side by side. (A first try with `%` instead of
/// the fold below measured 2–4 % slower.)
///
/// Words are read in native order: swapping a word's bytes multiplies it by 256 modulo
/// 0xffff, which keeps congruent sums congruent.
#[inline(always)]
pub(crate) fn header_checksum_ok_beside(
    ip: &[u8; IPV4_PLAIN_HEADER_LEN],
    head: &[u8; IPV4_PLAIN_HEADER_LEN],
) -> bool {
    let id_plus_checksum = |h: &[u8; IPV4_PLAIN_HEADER_LEN]| {
        u32::from(u16::from_ne_bytes([h[4], h[5]])) + u32::from(u16::from_ne_bytes([h[10], h[11]]))
    };
    // At most 0x1fffe folds to 0..=0xffff, congruent to it; 0 and 0xffff are the one
    // residue with two forms.
    let fold = |x: u32| (x & 0xffff) + (x >> 16);
    let (a, b) = (fold(id_plus_checksum(ip)), fold(id_plus_checksum(head)));
    a == b || (a ^ b == 0xffff && (a == 0 || b == 0))
}

/// The checksum for an IPv4 header whose checksum field is zero (any IHL).
#[inline]
pub(crate) fn header_checksum(header: &[u8]) -> u16 {
    !ones_complement_sum(header)
}

/// The folded 16-bit one's-complement sum of a header whose length is a multiple of 4
/// (every IPv4 header's is).
#[inline]
fn ones_complement_sum(words: &[u8]) -> u16 {
    // Summing 32-bit big-endian words and folding gives the 16-bit one's-complement sum.
    checksum::fold64(
        words
            .chunks_exact(4)
            .map(|w| u64::from(u32::from_be_bytes([w[0], w[1], w[2], w[3]])))
            .sum(),
    )
}

/// Whether `pkt` may join a run whose head is `head` and which holds `count` packets.
/// Returns the run's ID mode after this packet.
#[inline]
pub(crate) fn can_join(
    head: &IpFacts,
    mode: IdMode,
    pkt: &IpFacts,
    count: u16,
) -> Result<IdMode, Reason> {
    if head.v6 {
        if pkt.tos != head.tos {
            return Err(Reason::TrafficClassDiffers);
        }
        if pkt.ttl != head.ttl {
            return Err(Reason::HopLimitDiffers);
        }
        return Ok(mode);
    }
    if pkt.ttl != head.ttl {
        return Err(Reason::TtlDiffers);
    }
    if pkt.tos != head.tos {
        return Err(Reason::TosDiffers);
    }
    if pkt.df != head.df {
        return Err(Reason::DfDiffers);
    }
    let offset = pkt.id.wrapping_sub(head.id);
    let mode = match mode {
        IdMode::Undecided if pkt.df && offset == 0 => IdMode::Fixed,
        IdMode::Undecided => IdMode::Incrementing,
        decided => decided,
    };
    let expected = if mode == IdMode::Fixed { 0 } else { count };
    if offset != expected {
        return Err(Reason::IpIdNotSequential);
    }
    Ok(mode)
}

/// Whether the transport checksum of `layer` (header + payload + pseudo-header) verifies,
/// the bytes summed read as `payload` says (from `frame`, or from a chain's pieces).
pub(crate) fn l4_checksum_ok(frame: &[u8], payload: impl Sums, layer: &IpLayer, protocol: u8) -> bool {
    let (Some(segment), Some(header)) = (
        frame.get(layer.l4_offset..layer.end),
        frame.get(layer.offset..layer.l4_offset),
    ) else {
        return false;
    };
    let pseudo = match layer.version {
        IpVersion::V4 => {
            let Ok(len) = u16::try_from(segment.len()) else {
                return false;
            };
            let ip = Ipv4Packet::new_unchecked(header);
            checksum::pseudo_header_v4(ip.src_addr(), ip.dst_addr(), protocol, len)
        }
        IpVersion::V6 => {
            let ip = Ipv6Packet::new_unchecked(header);
            checksum::pseudo_header_v6(
                &ip.src_addr(),
                &ip.dst_addr(),
                protocol,
                segment.len() as u32,
            )
        }
    };
    checksum::fold(payload.sum(frame, layer.l4_offset..layer.end, pseudo)) == 0xffff
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(ttl: u8, tos: u8, df: bool, id: u16) -> IpFacts {
        IpFacts {
            v6: false,
            ttl,
            tos,
            df,
            id,
        }
    }

    #[test]
    fn ip_id_must_increment_by_position() {
        let head = v4(64, 0, false, 100);
        assert_eq!(
            can_join(&head, IdMode::Undecided, &v4(64, 0, false, 101), 1),
            Ok(IdMode::Incrementing)
        );
        assert_eq!(
            can_join(&head, IdMode::Incrementing, &v4(64, 0, false, 102), 2),
            Ok(IdMode::Incrementing)
        );
        assert_eq!(
            can_join(&head, IdMode::Incrementing, &v4(64, 0, false, 104), 2),
            Err(Reason::IpIdNotSequential)
        );
    }

    #[test]
    fn fixed_ip_id_needs_df() {
        let head = v4(64, 0, true, 7);
        assert_eq!(
            can_join(&head, IdMode::Undecided, &v4(64, 0, true, 7), 1),
            Ok(IdMode::Fixed)
        );
        assert_eq!(
            can_join(&head, IdMode::Fixed, &v4(64, 0, true, 7), 5),
            Ok(IdMode::Fixed)
        );
        let no_df = v4(64, 0, false, 7);
        assert_eq!(
            can_join(&no_df, IdMode::Undecided, &no_df, 1),
            Err(Reason::IpIdNotSequential)
        );
    }

    #[test]
    fn id_wraps_around() {
        let head = v4(64, 0, false, 0xffff);
        assert_eq!(
            can_join(&head, IdMode::Undecided, &v4(64, 0, false, 0), 1),
            Ok(IdMode::Incrementing)
        );
    }

    /// Where the eight other words sum to 0 modulo 0xffff, an ID and a checksum that
    /// verify add up to 0 or to 0xffff, one residue in two forms: each form verifies
    /// beside the other.
    #[test]
    fn header_checksum_ok_beside_takes_both_forms_of_zero() {
        let set = |mut h: [u8; 20], at: usize, value: u16| {
            h[at..at + 2].copy_from_slice(&value.to_be_bytes());
            h
        };
        let base = [0x45, 0, 0x05, 0xdc, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 0];
        // With ID and checksum 0, the header verifies exactly when the rest sums to 0.
        let head = (0..=u16::MAX).map(|w| set(base, 18, w)).find(header_checksum_ok).unwrap();
        let with = |id: u16, checksum: u16| set(set(head, 4, id), 10, checksum);
        let pairs = [(0, 0), (0, 0xffff), (1, 0xfffe), (0x1234, 0xedcb), (0xffff, 0), (0xffff, 0xffff)];
        for (head_id, head_checksum) in pairs {
            let head_form = with(head_id, head_checksum);
            assert!(header_checksum_ok(&head_form));
            for (id, checksum) in pairs {
                let ip = with(id, checksum);
                assert!(header_checksum_ok_beside(&ip, &head_form), "{id:#x} {checksum:#x} beside {head_id:#x} {head_checksum:#x}");
            }
            assert!(!header_checksum_ok_beside(&with(0, 1), &head_form));
        }
        // Elsewhere a pair whose residue is the complement of the head's is wrong.
        let right = crate::checksum::of(&base);
        assert!(right != 0 && right != 0xffff);
        let (plain, complement) = (set(base, 10, right), set(base, 10, !right));
        assert!(header_checksum_ok(&plain) && !header_checksum_ok(&complement));
        assert!(!header_checksum_ok_beside(&complement, &plain));
    }

    proptest::proptest! {
        /// The inline sum agrees with the general checksum, on random headers and on
        /// headers made to verify.
        #[test]
        fn header_checksum_ok_agrees_with_the_folded_sum(
            mut header in proptest::array::uniform20(proptest::num::u8::ANY),
            fix in proptest::bool::ANY,
        ) {
            if fix {
                header[10] = 0;
                header[11] = 0;
                let checksum = crate::checksum::of(&header);
                header[10..12].copy_from_slice(&checksum.to_be_bytes());
            }
            let folded = crate::checksum::fold(crate::checksum::sum(&header, 0));
            proptest::prop_assert_eq!(header_checksum_ok(&header), folded == 0xffff);
        }

        /// Beside a head that verifies, the two-word test agrees with summing the whole
        /// header, for any ID and checksum: random ones, the right checksum for the ID,
        /// and its other form (0 and 0xffff are the same residue).
        #[test]
        fn header_checksum_ok_beside_agrees_with_the_full_sum(
            mut head in proptest::array::uniform20(proptest::num::u8::ANY),
            id in proptest::num::u16::ANY,
            checksum in proptest::num::u16::ANY,
            form in 0u8..3,
        ) {
            head[0] = 0x45;
            head[10..12].copy_from_slice(&[0, 0]);
            let head_checksum = crate::checksum::of(&head);
            head[10..12].copy_from_slice(&head_checksum.to_be_bytes());
            proptest::prop_assume!(header_checksum_ok(&head));
            let mut ip = head;
            ip[4..6].copy_from_slice(&id.to_be_bytes());
            let checksum = match form {
                0 => checksum,
                _ => {
                    ip[10..12].copy_from_slice(&[0, 0]);
                    let right = crate::checksum::of(&ip);
                    // The other form of the same residue, where there is one.
                    match (form, right) {
                        (2, 0) => 0xffff,
                        (2, 0xffff) => 0,
                        _ => right,
                    }
                }
            };
            ip[10..12].copy_from_slice(&checksum.to_be_bytes());
            proptest::prop_assert_eq!(header_checksum_ok_beside(&ip, &head), header_checksum_ok(&ip));
        }
    }
}
