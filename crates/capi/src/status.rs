//! Status codes: `0` is success, every error is a distinct negative value, and
//! [`ofl_strerror`] names each with a static string. Engine errors keep their cause:
//! parse errors are -100.., GSO errors -200.., virtio-net header errors -300...

use core::ffi::c_char;

use engine::gso::GsoError;
use engine::virtio::VirtioError;
use engine::wire::ParseError;

/// Result codes. Functions return `int32_t`: a non-negative value (0, or a count) on
/// success, one of these negative values on failure.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ofl_status {
    /// Success (functions that return a count return it instead).
    OFL_OK = 0,
    /// A required pointer was NULL (or NULL with a non-zero length).
    OFL_ERR_NULL = -1,
    /// An output buffer or array is too short for the result.
    OFL_ERR_BUFFER_TOO_SMALL = -2,
    /// An argument is out of its range (index, config value, unknown flag bits).
    OFL_ERR_INVALID_ARGUMENT = -3,
    /// The engine panicked; the panic was caught at the boundary. A GRO handle is poisoned after it.
    OFL_ERR_PANIC = -4,
    /// The handle is already inside a call on this thread (e.g. from the GRO delivery callback).
    OFL_ERR_BUSY = -5,
    /// The handle was left unusable by an earlier OFL_ERR_PANIC; free it.
    OFL_ERR_POISONED = -6,
    /// An engine refusal this version of the C API has no code of its own for (the
    /// engine's error enums are non-exhaustive; every current one has a code).
    OFL_ERR_OTHER = -7,
    /// The handle's `ofl_allocator` returned NULL (ABI 1.2); the call made no change
    /// that needs memory (a handle is not created, a GSO call gives no segments).
    OFL_ERR_NO_MEMORY = -8,

    /// A chained frame has more than `OFL_CHAIN_MAX_IOV` iovecs (added in ABI 1.2).
    OFL_ERR_TOO_MANY_IOVECS = -9,
    /// Frame parse: truncated.
    OFL_ERR_PARSE_TRUNCATED = -100,
    /// Frame parse: bad ip version.
    OFL_ERR_PARSE_BAD_IP_VERSION = -101,
    /// Frame parse: bad header length.
    OFL_ERR_PARSE_BAD_HEADER_LENGTH = -102,
    /// Frame parse: length mismatch.
    OFL_ERR_PARSE_LENGTH_MISMATCH = -103,
    /// Frame parse: too many ipv6 extension headers.
    OFL_ERR_PARSE_TOO_MANY_EXTENSION_HEADERS = -104,
    /// Frame parse: misplaced ipv6 hop-by-hop header.
    OFL_ERR_PARSE_MISPLACED_HOP_BY_HOP = -105,
    /// Frame parse: too many vlan tags.
    OFL_ERR_PARSE_TOO_MANY_VLAN_TAGS = -106,
    /// Frame parse: unsupported ethertype.
    OFL_ERR_PARSE_UNSUPPORTED_ETHERTYPE = -107,
    /// Frame parse: bad tunnel header.
    OFL_ERR_PARSE_BAD_TUNNEL_HEADER = -108,
    /// Frame parse: unsupported tunnel payload.
    OFL_ERR_PARSE_UNSUPPORTED_TUNNEL_PAYLOAD = -109,
    /// GSO: not tcp.
    OFL_ERR_GSO_NOT_TCP = -200,
    /// GSO: not udp.
    OFL_ERR_GSO_NOT_UDP = -201,
    /// GSO: segment size zero.
    OFL_ERR_GSO_SEGMENT_SIZE_ZERO = -202,
    /// GSO: fragment size below 8.
    OFL_ERR_GSO_FRAGMENT_SIZE_TOO_SMALL = -203,
    /// GSO: too many segments.
    OFL_ERR_GSO_TOO_MANY_SEGMENTS = -204,
    /// GSO: payload over 65535 bytes.
    OFL_ERR_GSO_TOO_LARGE = -205,
    /// GSO: headers too long.
    OFL_ERR_GSO_HEADERS_TOO_LONG = -206,
    /// GSO: fragmented input.
    OFL_ERR_GSO_FRAGMENTED_INPUT = -207,
    /// GSO: ufo on ipv6.
    OFL_ERR_GSO_UFO_NEEDS_IPV4 = -208,
    /// GSO: fixed ip id without df.
    OFL_ERR_GSO_FIXED_ID_WITHOUT_DF = -209,
    /// GSO: gre sequence number.
    OFL_ERR_GSO_GRE_SEQUENCE_NUMBER = -210,
    /// GSO: bytes after the inner packet.
    OFL_ERR_GSO_TRAILING_BYTES = -211,
    /// GSO: layout does not match frame.
    OFL_ERR_GSO_LAYOUT_MISMATCH = -212,
    /// GSO: virtio gso type does not match packet.
    OFL_ERR_GSO_VIRTIO_TYPE_MISMATCH = -213,
    /// GSO: virtio header asks for no gso.
    OFL_ERR_GSO_VIRTIO_NO_GSO = -214,
    /// GSO: unsupported virtio gso type.
    OFL_ERR_GSO_VIRTIO_UNSUPPORTED_TYPE = -215,
    /// GSO: virtio checksum start/offset mismatch.
    OFL_ERR_GSO_VIRTIO_CHECKSUM_MISMATCH = -216,
    /// GSO: ipv6 authentication header (each segment would need a fresh ICV).
    OFL_ERR_GSO_AUTHENTICATION_HEADER = -217,
    /// GSO: ipv6 routing header with segments left of a type whose final destination is unknown.
    OFL_ERR_GSO_ROUTING_HEADER_UNSUPPORTED = -218,
    /// virtio-net header: truncated header.
    OFL_ERR_VNET_TRUNCATED = -300,
    /// virtio-net header: buffer too small.
    OFL_ERR_VNET_BUFFER_TOO_SMALL = -301,
    /// virtio-net header: unknown flags.
    OFL_ERR_VNET_UNKNOWN_FLAGS = -302,
    /// virtio-net header: rsc info not allowed.
    OFL_ERR_VNET_RSC_INFO_NOT_ALLOWED = -303,
    /// virtio-net header: needs_csum with data_valid.
    OFL_ERR_VNET_CONFLICTING_CHECKSUM_FLAGS = -304,
    /// virtio-net header: unknown gso type.
    OFL_ERR_VNET_UNKNOWN_GSO_TYPE = -305,
    /// virtio-net header: ecn without tcp.
    OFL_ERR_VNET_ECN_WITHOUT_TCP = -306,
    /// virtio-net header: gso without needs_csum.
    OFL_ERR_VNET_GSO_WITHOUT_NEEDS_CSUM = -307,
    /// virtio-net header: gso size zero.
    OFL_ERR_VNET_GSO_SIZE_ZERO = -308,
    /// virtio-net header: gso size too large.
    OFL_ERR_VNET_GSO_SIZE_TOO_LARGE = -309,
    /// virtio-net header: gso size without gso.
    OFL_ERR_VNET_GSO_SIZE_WITHOUT_GSO = -310,
    /// virtio-net header: gso ip version mismatch.
    OFL_ERR_VNET_GSO_IP_VERSION_MISMATCH = -311,
    /// virtio-net header: gso transport mismatch.
    OFL_ERR_VNET_GSO_TRANSPORT_MISMATCH = -312,
    /// virtio-net header: gso on fragment.
    OFL_ERR_VNET_GSO_ON_FRAGMENT = -313,
    /// virtio-net header: checksum outside frame.
    OFL_ERR_VNET_CHECKSUM_OUTSIDE_FRAME = -314,
    /// virtio-net header: checksum start mismatch.
    OFL_ERR_VNET_CHECKSUM_START_MISMATCH = -315,
    /// virtio-net header: checksum offset mismatch.
    OFL_ERR_VNET_CHECKSUM_OFFSET_MISMATCH = -316,
    /// virtio-net header: not tcp or udp.
    OFL_ERR_VNET_NOT_TCP_OR_UDP = -317,
    /// virtio-net header: offset too large.
    OFL_ERR_VNET_OFFSET_TOO_LARGE = -318,
    /// virtio-net header: layout outside frame.
    OFL_ERR_VNET_LAYOUT_OUTSIDE_FRAME = -319,
    /// virtio-net header: tunnel gso names both ip versions.
    OFL_ERR_VNET_TUNNEL_BOTH_IP_VERSIONS = -320,
    /// virtio-net header: tunnel checksum flag without tunnel gso.
    OFL_ERR_VNET_TUNNEL_CHECKSUM_WITHOUT_TUNNEL = -321,
    /// virtio-net header: tunnel gso without inner gso.
    OFL_ERR_VNET_TUNNEL_WITHOUT_GSO = -322,
    /// virtio-net header: tunnel gso on a frame without a tunnel.
    OFL_ERR_VNET_TUNNEL_NOT_IN_FRAME = -323,
    /// virtio-net header: tunnel gso outer ip version mismatch.
    OFL_ERR_VNET_TUNNEL_IP_VERSION_MISMATCH = -324,
    /// virtio-net header: tunnel gso outer_th_offset mismatch.
    OFL_ERR_VNET_TUNNEL_OUTER_OFFSET_MISMATCH = -325,
    /// virtio-net header: tunnel gso inner_nh_offset mismatch.
    OFL_ERR_VNET_TUNNEL_INNER_OFFSET_MISMATCH = -326,
    /// virtio-net header: tunnel fields need the tunnel header form.
    OFL_ERR_VNET_TUNNEL_NEEDS_TUNNEL_FORM = -327,
    /// virtio-net header: checksum start inside the l2/ip headers.
    OFL_ERR_VNET_CHECKSUM_START_IN_HEADERS = -328,
}

impl ofl_status {
    /// Every code, for tests and tools.
    pub const ALL: [ofl_status; 68] = [
        ofl_status::OFL_OK,
        ofl_status::OFL_ERR_NULL,
        ofl_status::OFL_ERR_BUFFER_TOO_SMALL,
        ofl_status::OFL_ERR_INVALID_ARGUMENT,
        ofl_status::OFL_ERR_PANIC,
        ofl_status::OFL_ERR_BUSY,
        ofl_status::OFL_ERR_POISONED,
        ofl_status::OFL_ERR_OTHER,
        ofl_status::OFL_ERR_NO_MEMORY,

        ofl_status::OFL_ERR_TOO_MANY_IOVECS,
        ofl_status::OFL_ERR_PARSE_TRUNCATED,
        ofl_status::OFL_ERR_PARSE_BAD_IP_VERSION,
        ofl_status::OFL_ERR_PARSE_BAD_HEADER_LENGTH,
        ofl_status::OFL_ERR_PARSE_LENGTH_MISMATCH,
        ofl_status::OFL_ERR_PARSE_TOO_MANY_EXTENSION_HEADERS,
        ofl_status::OFL_ERR_PARSE_MISPLACED_HOP_BY_HOP,
        ofl_status::OFL_ERR_PARSE_TOO_MANY_VLAN_TAGS,
        ofl_status::OFL_ERR_PARSE_UNSUPPORTED_ETHERTYPE,
        ofl_status::OFL_ERR_PARSE_BAD_TUNNEL_HEADER,
        ofl_status::OFL_ERR_PARSE_UNSUPPORTED_TUNNEL_PAYLOAD,
        ofl_status::OFL_ERR_GSO_NOT_TCP,
        ofl_status::OFL_ERR_GSO_NOT_UDP,
        ofl_status::OFL_ERR_GSO_SEGMENT_SIZE_ZERO,
        ofl_status::OFL_ERR_GSO_FRAGMENT_SIZE_TOO_SMALL,
        ofl_status::OFL_ERR_GSO_TOO_MANY_SEGMENTS,
        ofl_status::OFL_ERR_GSO_TOO_LARGE,
        ofl_status::OFL_ERR_GSO_HEADERS_TOO_LONG,
        ofl_status::OFL_ERR_GSO_FRAGMENTED_INPUT,
        ofl_status::OFL_ERR_GSO_UFO_NEEDS_IPV4,
        ofl_status::OFL_ERR_GSO_FIXED_ID_WITHOUT_DF,
        ofl_status::OFL_ERR_GSO_GRE_SEQUENCE_NUMBER,
        ofl_status::OFL_ERR_GSO_TRAILING_BYTES,
        ofl_status::OFL_ERR_GSO_LAYOUT_MISMATCH,
        ofl_status::OFL_ERR_GSO_VIRTIO_TYPE_MISMATCH,
        ofl_status::OFL_ERR_GSO_VIRTIO_NO_GSO,
        ofl_status::OFL_ERR_GSO_VIRTIO_UNSUPPORTED_TYPE,
        ofl_status::OFL_ERR_GSO_VIRTIO_CHECKSUM_MISMATCH,
        ofl_status::OFL_ERR_GSO_AUTHENTICATION_HEADER,
        ofl_status::OFL_ERR_GSO_ROUTING_HEADER_UNSUPPORTED,
        ofl_status::OFL_ERR_VNET_TRUNCATED,
        ofl_status::OFL_ERR_VNET_BUFFER_TOO_SMALL,
        ofl_status::OFL_ERR_VNET_UNKNOWN_FLAGS,
        ofl_status::OFL_ERR_VNET_RSC_INFO_NOT_ALLOWED,
        ofl_status::OFL_ERR_VNET_CONFLICTING_CHECKSUM_FLAGS,
        ofl_status::OFL_ERR_VNET_UNKNOWN_GSO_TYPE,
        ofl_status::OFL_ERR_VNET_ECN_WITHOUT_TCP,
        ofl_status::OFL_ERR_VNET_GSO_WITHOUT_NEEDS_CSUM,
        ofl_status::OFL_ERR_VNET_GSO_SIZE_ZERO,
        ofl_status::OFL_ERR_VNET_GSO_SIZE_TOO_LARGE,
        ofl_status::OFL_ERR_VNET_GSO_SIZE_WITHOUT_GSO,
        ofl_status::OFL_ERR_VNET_GSO_IP_VERSION_MISMATCH,
        ofl_status::OFL_ERR_VNET_GSO_TRANSPORT_MISMATCH,
        ofl_status::OFL_ERR_VNET_GSO_ON_FRAGMENT,
        ofl_status::OFL_ERR_VNET_CHECKSUM_OUTSIDE_FRAME,
        ofl_status::OFL_ERR_VNET_CHECKSUM_START_MISMATCH,
        ofl_status::OFL_ERR_VNET_CHECKSUM_OFFSET_MISMATCH,
        ofl_status::OFL_ERR_VNET_NOT_TCP_OR_UDP,
        ofl_status::OFL_ERR_VNET_OFFSET_TOO_LARGE,
        ofl_status::OFL_ERR_VNET_LAYOUT_OUTSIDE_FRAME,
        ofl_status::OFL_ERR_VNET_TUNNEL_BOTH_IP_VERSIONS,
        ofl_status::OFL_ERR_VNET_TUNNEL_CHECKSUM_WITHOUT_TUNNEL,
        ofl_status::OFL_ERR_VNET_TUNNEL_WITHOUT_GSO,
        ofl_status::OFL_ERR_VNET_TUNNEL_NOT_IN_FRAME,
        ofl_status::OFL_ERR_VNET_TUNNEL_IP_VERSION_MISMATCH,
        ofl_status::OFL_ERR_VNET_TUNNEL_OUTER_OFFSET_MISMATCH,
        ofl_status::OFL_ERR_VNET_TUNNEL_INNER_OFFSET_MISMATCH,
        ofl_status::OFL_ERR_VNET_TUNNEL_NEEDS_TUNNEL_FORM,
        ofl_status::OFL_ERR_VNET_CHECKSUM_START_IN_HEADERS,
    ];

    /// The static, NUL-terminated name of this code.
    pub fn message(self) -> &'static core::ffi::CStr {
        match self {
            ofl_status::OFL_OK => c"ok",
            ofl_status::OFL_ERR_NULL => c"null pointer",
            ofl_status::OFL_ERR_BUFFER_TOO_SMALL => c"buffer too small",
            ofl_status::OFL_ERR_INVALID_ARGUMENT => c"invalid argument",
            ofl_status::OFL_ERR_PANIC => c"internal error (panic caught)",
            ofl_status::OFL_ERR_BUSY => c"handle busy (called from its own callback)",
            ofl_status::OFL_ERR_POISONED => c"handle poisoned by an earlier panic",
            ofl_status::OFL_ERR_OTHER => c"engine error without a code of its own",
            ofl_status::OFL_ERR_NO_MEMORY => c"the handle's allocator returned NULL",

            ofl_status::OFL_ERR_TOO_MANY_IOVECS => c"more iovecs than OFL_CHAIN_MAX_IOV",
            ofl_status::OFL_ERR_PARSE_TRUNCATED => c"parse: truncated",
            ofl_status::OFL_ERR_PARSE_BAD_IP_VERSION => c"parse: bad ip version",
            ofl_status::OFL_ERR_PARSE_BAD_HEADER_LENGTH => c"parse: bad header length",
            ofl_status::OFL_ERR_PARSE_LENGTH_MISMATCH => c"parse: length mismatch",
            ofl_status::OFL_ERR_PARSE_TOO_MANY_EXTENSION_HEADERS => {
                c"parse: too many ipv6 extension headers"
            }
            ofl_status::OFL_ERR_PARSE_MISPLACED_HOP_BY_HOP => {
                c"parse: misplaced ipv6 hop-by-hop header"
            }
            ofl_status::OFL_ERR_PARSE_TOO_MANY_VLAN_TAGS => c"parse: too many vlan tags",
            ofl_status::OFL_ERR_PARSE_UNSUPPORTED_ETHERTYPE => c"parse: unsupported ethertype",
            ofl_status::OFL_ERR_PARSE_BAD_TUNNEL_HEADER => c"parse: bad tunnel header",
            ofl_status::OFL_ERR_PARSE_UNSUPPORTED_TUNNEL_PAYLOAD => {
                c"parse: unsupported tunnel payload"
            }
            ofl_status::OFL_ERR_GSO_NOT_TCP => c"gso: not tcp",
            ofl_status::OFL_ERR_GSO_NOT_UDP => c"gso: not udp",
            ofl_status::OFL_ERR_GSO_SEGMENT_SIZE_ZERO => c"gso: segment size zero",
            ofl_status::OFL_ERR_GSO_FRAGMENT_SIZE_TOO_SMALL => c"gso: fragment size below 8",
            ofl_status::OFL_ERR_GSO_TOO_MANY_SEGMENTS => c"gso: too many segments",
            ofl_status::OFL_ERR_GSO_TOO_LARGE => c"gso: payload over 65535 bytes",
            ofl_status::OFL_ERR_GSO_HEADERS_TOO_LONG => c"gso: headers too long",
            ofl_status::OFL_ERR_GSO_FRAGMENTED_INPUT => c"gso: fragmented input",
            ofl_status::OFL_ERR_GSO_UFO_NEEDS_IPV4 => c"gso: ufo on ipv6",
            ofl_status::OFL_ERR_GSO_FIXED_ID_WITHOUT_DF => c"gso: fixed ip id without df",
            ofl_status::OFL_ERR_GSO_GRE_SEQUENCE_NUMBER => c"gso: gre sequence number",
            ofl_status::OFL_ERR_GSO_TRAILING_BYTES => c"gso: bytes after the inner packet",
            ofl_status::OFL_ERR_GSO_LAYOUT_MISMATCH => c"gso: layout does not match frame",
            ofl_status::OFL_ERR_GSO_VIRTIO_TYPE_MISMATCH => {
                c"gso: virtio gso type does not match packet"
            }
            ofl_status::OFL_ERR_GSO_VIRTIO_NO_GSO => c"gso: virtio header asks for no gso",
            ofl_status::OFL_ERR_GSO_VIRTIO_UNSUPPORTED_TYPE => c"gso: unsupported virtio gso type",
            ofl_status::OFL_ERR_GSO_VIRTIO_CHECKSUM_MISMATCH => {
                c"gso: virtio checksum start/offset mismatch"
            }
            ofl_status::OFL_ERR_GSO_AUTHENTICATION_HEADER => c"gso: ipv6 authentication header",
            ofl_status::OFL_ERR_GSO_ROUTING_HEADER_UNSUPPORTED => {
                c"gso: ipv6 routing header type unsupported"
            }
            ofl_status::OFL_ERR_VNET_TRUNCATED => c"vnet: truncated header",
            ofl_status::OFL_ERR_VNET_BUFFER_TOO_SMALL => c"vnet: buffer too small",
            ofl_status::OFL_ERR_VNET_UNKNOWN_FLAGS => c"vnet: unknown flags",
            ofl_status::OFL_ERR_VNET_RSC_INFO_NOT_ALLOWED => c"vnet: rsc info not allowed",
            ofl_status::OFL_ERR_VNET_CONFLICTING_CHECKSUM_FLAGS => {
                c"vnet: needs_csum with data_valid"
            }
            ofl_status::OFL_ERR_VNET_UNKNOWN_GSO_TYPE => c"vnet: unknown gso type",
            ofl_status::OFL_ERR_VNET_ECN_WITHOUT_TCP => c"vnet: ecn without tcp",
            ofl_status::OFL_ERR_VNET_GSO_WITHOUT_NEEDS_CSUM => c"vnet: gso without needs_csum",
            ofl_status::OFL_ERR_VNET_GSO_SIZE_ZERO => c"vnet: gso size zero",
            ofl_status::OFL_ERR_VNET_GSO_SIZE_TOO_LARGE => c"vnet: gso size too large",
            ofl_status::OFL_ERR_VNET_GSO_SIZE_WITHOUT_GSO => c"vnet: gso size without gso",
            ofl_status::OFL_ERR_VNET_GSO_IP_VERSION_MISMATCH => c"vnet: gso ip version mismatch",
            ofl_status::OFL_ERR_VNET_GSO_TRANSPORT_MISMATCH => c"vnet: gso transport mismatch",
            ofl_status::OFL_ERR_VNET_GSO_ON_FRAGMENT => c"vnet: gso on fragment",
            ofl_status::OFL_ERR_VNET_CHECKSUM_OUTSIDE_FRAME => c"vnet: checksum outside frame",
            ofl_status::OFL_ERR_VNET_CHECKSUM_START_MISMATCH => c"vnet: checksum start mismatch",
            ofl_status::OFL_ERR_VNET_CHECKSUM_OFFSET_MISMATCH => c"vnet: checksum offset mismatch",
            ofl_status::OFL_ERR_VNET_NOT_TCP_OR_UDP => c"vnet: not tcp or udp",
            ofl_status::OFL_ERR_VNET_OFFSET_TOO_LARGE => c"vnet: offset too large",
            ofl_status::OFL_ERR_VNET_LAYOUT_OUTSIDE_FRAME => c"vnet: layout outside frame",
            ofl_status::OFL_ERR_VNET_TUNNEL_BOTH_IP_VERSIONS => {
                c"vnet: tunnel gso names both ip versions"
            }
            ofl_status::OFL_ERR_VNET_TUNNEL_CHECKSUM_WITHOUT_TUNNEL => {
                c"vnet: tunnel checksum flag without tunnel gso"
            }
            ofl_status::OFL_ERR_VNET_TUNNEL_WITHOUT_GSO => c"vnet: tunnel gso without inner gso",
            ofl_status::OFL_ERR_VNET_TUNNEL_NOT_IN_FRAME => {
                c"vnet: tunnel gso on a frame without a tunnel"
            }
            ofl_status::OFL_ERR_VNET_TUNNEL_IP_VERSION_MISMATCH => {
                c"vnet: tunnel gso outer ip version mismatch"
            }
            ofl_status::OFL_ERR_VNET_TUNNEL_OUTER_OFFSET_MISMATCH => {
                c"vnet: tunnel gso outer_th_offset mismatch"
            }
            ofl_status::OFL_ERR_VNET_TUNNEL_INNER_OFFSET_MISMATCH => {
                c"vnet: tunnel gso inner_nh_offset mismatch"
            }
            ofl_status::OFL_ERR_VNET_TUNNEL_NEEDS_TUNNEL_FORM => {
                c"vnet: tunnel fields need the tunnel header form"
            }
            ofl_status::OFL_ERR_VNET_CHECKSUM_START_IN_HEADERS => {
                c"vnet: checksum start inside the l2/ip headers"
            }
        }
    }

    /// The code for `value`, if it is one.
    pub fn from_code(value: i32) -> Option<ofl_status> {
        ofl_status::ALL.iter().copied().find(|s| *s as i32 == value)
    }
}

/// A static, NUL-terminated description of `code` (any `ofl_status` value, or a
/// non-negative result, which reads "ok"). Never NULL: unknown codes give
/// "unknown error code". Thread-safe.
#[no_mangle]
pub extern "C" fn ofl_strerror(code: i32) -> *const c_char {
    let text = std::panic::catch_unwind(|| match code {
        c if c >= 0 => c"ok",
        c => ofl_status::from_code(c).map_or(c"unknown error code", ofl_status::message),
    });
    text.unwrap_or(c"unknown error code").as_ptr()
}

/// The code of a parse error.
pub fn parse_status(err: &ParseError) -> ofl_status {
    match err {
        ParseError::Truncated { .. } => ofl_status::OFL_ERR_PARSE_TRUNCATED,
        ParseError::BadIpVersion(_) => ofl_status::OFL_ERR_PARSE_BAD_IP_VERSION,
        ParseError::BadHeaderLength { .. } => ofl_status::OFL_ERR_PARSE_BAD_HEADER_LENGTH,
        ParseError::LengthMismatch { .. } => ofl_status::OFL_ERR_PARSE_LENGTH_MISMATCH,
        ParseError::TooManyExtensionHeaders => ofl_status::OFL_ERR_PARSE_TOO_MANY_EXTENSION_HEADERS,
        ParseError::MisplacedHopByHop => ofl_status::OFL_ERR_PARSE_MISPLACED_HOP_BY_HOP,
        ParseError::TooManyVlanTags => ofl_status::OFL_ERR_PARSE_TOO_MANY_VLAN_TAGS,
        ParseError::UnsupportedEtherType(_) => ofl_status::OFL_ERR_PARSE_UNSUPPORTED_ETHERTYPE,
        ParseError::BadTunnelHeader { .. } => ofl_status::OFL_ERR_PARSE_BAD_TUNNEL_HEADER,
        ParseError::UnsupportedTunnelPayload(_) => {
            ofl_status::OFL_ERR_PARSE_UNSUPPORTED_TUNNEL_PAYLOAD
        }
        _ => ofl_status::OFL_ERR_OTHER,
    }
}

/// The code of a GSO error.
pub fn gso_status(err: &GsoError) -> ofl_status {
    match err {
        GsoError::NotTcp => ofl_status::OFL_ERR_GSO_NOT_TCP,
        GsoError::NotUdp => ofl_status::OFL_ERR_GSO_NOT_UDP,
        GsoError::SegmentSizeZero => ofl_status::OFL_ERR_GSO_SEGMENT_SIZE_ZERO,
        GsoError::FragmentSizeTooSmall => ofl_status::OFL_ERR_GSO_FRAGMENT_SIZE_TOO_SMALL,
        GsoError::TooManySegments(_) => ofl_status::OFL_ERR_GSO_TOO_MANY_SEGMENTS,
        GsoError::TooLarge => ofl_status::OFL_ERR_GSO_TOO_LARGE,
        GsoError::HeadersTooLong => ofl_status::OFL_ERR_GSO_HEADERS_TOO_LONG,
        GsoError::FragmentedInput => ofl_status::OFL_ERR_GSO_FRAGMENTED_INPUT,
        GsoError::UfoNeedsIpv4 => ofl_status::OFL_ERR_GSO_UFO_NEEDS_IPV4,
        GsoError::FixedIdWithoutDf => ofl_status::OFL_ERR_GSO_FIXED_ID_WITHOUT_DF,
        GsoError::GreSequenceNumber => ofl_status::OFL_ERR_GSO_GRE_SEQUENCE_NUMBER,
        GsoError::TrailingBytes => ofl_status::OFL_ERR_GSO_TRAILING_BYTES,
        GsoError::LayoutMismatch => ofl_status::OFL_ERR_GSO_LAYOUT_MISMATCH,
        GsoError::VirtioTypeMismatch => ofl_status::OFL_ERR_GSO_VIRTIO_TYPE_MISMATCH,
        GsoError::VirtioNoGso => ofl_status::OFL_ERR_GSO_VIRTIO_NO_GSO,
        GsoError::VirtioUnsupportedType(_) => ofl_status::OFL_ERR_GSO_VIRTIO_UNSUPPORTED_TYPE,
        GsoError::VirtioChecksumMismatch => ofl_status::OFL_ERR_GSO_VIRTIO_CHECKSUM_MISMATCH,
        GsoError::AuthenticationHeader => ofl_status::OFL_ERR_GSO_AUTHENTICATION_HEADER,
        GsoError::RoutingHeaderUnsupported(_) => ofl_status::OFL_ERR_GSO_ROUTING_HEADER_UNSUPPORTED,
        _ => ofl_status::OFL_ERR_OTHER,
    }
}

/// The code of a virtio-net header error (an unparseable frame gives the parse code).
pub fn virtio_status(err: &VirtioError) -> ofl_status {
    match err {
        VirtioError::Unparseable(parse) => parse_status(parse),
        VirtioError::Truncated => ofl_status::OFL_ERR_VNET_TRUNCATED,
        VirtioError::BufferTooSmall => ofl_status::OFL_ERR_VNET_BUFFER_TOO_SMALL,
        VirtioError::UnknownFlags(_) => ofl_status::OFL_ERR_VNET_UNKNOWN_FLAGS,
        VirtioError::RscInfoNotAllowed => ofl_status::OFL_ERR_VNET_RSC_INFO_NOT_ALLOWED,
        VirtioError::ConflictingChecksumFlags => {
            ofl_status::OFL_ERR_VNET_CONFLICTING_CHECKSUM_FLAGS
        }
        VirtioError::UnknownGsoType(_) => ofl_status::OFL_ERR_VNET_UNKNOWN_GSO_TYPE,
        VirtioError::EcnWithoutTcp => ofl_status::OFL_ERR_VNET_ECN_WITHOUT_TCP,
        VirtioError::GsoWithoutNeedsCsum => ofl_status::OFL_ERR_VNET_GSO_WITHOUT_NEEDS_CSUM,
        VirtioError::GsoSizeZero => ofl_status::OFL_ERR_VNET_GSO_SIZE_ZERO,
        VirtioError::GsoSizeTooLarge => ofl_status::OFL_ERR_VNET_GSO_SIZE_TOO_LARGE,
        VirtioError::GsoSizeWithoutGso => ofl_status::OFL_ERR_VNET_GSO_SIZE_WITHOUT_GSO,
        VirtioError::GsoIpVersionMismatch => ofl_status::OFL_ERR_VNET_GSO_IP_VERSION_MISMATCH,
        VirtioError::GsoTransportMismatch => ofl_status::OFL_ERR_VNET_GSO_TRANSPORT_MISMATCH,
        VirtioError::GsoOnFragment => ofl_status::OFL_ERR_VNET_GSO_ON_FRAGMENT,
        VirtioError::ChecksumOutsideFrame => ofl_status::OFL_ERR_VNET_CHECKSUM_OUTSIDE_FRAME,
        VirtioError::ChecksumStartMismatch => ofl_status::OFL_ERR_VNET_CHECKSUM_START_MISMATCH,
        VirtioError::ChecksumOffsetMismatch => ofl_status::OFL_ERR_VNET_CHECKSUM_OFFSET_MISMATCH,
        VirtioError::NotTcpOrUdp => ofl_status::OFL_ERR_VNET_NOT_TCP_OR_UDP,
        VirtioError::OffsetTooLarge => ofl_status::OFL_ERR_VNET_OFFSET_TOO_LARGE,
        VirtioError::LayoutOutsideFrame => ofl_status::OFL_ERR_VNET_LAYOUT_OUTSIDE_FRAME,
        VirtioError::TunnelBothIpVersions => ofl_status::OFL_ERR_VNET_TUNNEL_BOTH_IP_VERSIONS,
        VirtioError::TunnelChecksumWithoutTunnel => {
            ofl_status::OFL_ERR_VNET_TUNNEL_CHECKSUM_WITHOUT_TUNNEL
        }
        VirtioError::TunnelWithoutGso => ofl_status::OFL_ERR_VNET_TUNNEL_WITHOUT_GSO,
        VirtioError::TunnelNotInFrame => ofl_status::OFL_ERR_VNET_TUNNEL_NOT_IN_FRAME,
        VirtioError::TunnelIpVersionMismatch => {
            ofl_status::OFL_ERR_VNET_TUNNEL_IP_VERSION_MISMATCH
        }
        VirtioError::TunnelOuterOffsetMismatch => {
            ofl_status::OFL_ERR_VNET_TUNNEL_OUTER_OFFSET_MISMATCH
        }
        VirtioError::TunnelInnerOffsetMismatch => {
            ofl_status::OFL_ERR_VNET_TUNNEL_INNER_OFFSET_MISMATCH
        }
        VirtioError::TunnelNeedsTunnelForm => ofl_status::OFL_ERR_VNET_TUNNEL_NEEDS_TUNNEL_FORM,
        VirtioError::ChecksumStartInHeaders => ofl_status::OFL_ERR_VNET_CHECKSUM_START_IN_HEADERS,
        _ => ofl_status::OFL_ERR_OTHER,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::wire::Layer;

    /// The C strings say what the engine's own reason strings say.
    #[test]
    fn messages_follow_the_engine_reasons() {
        let parse = [
            ParseError::Truncated {
                layer: Layer::Ethernet,
            },
            ParseError::BadIpVersion(0),
            ParseError::BadHeaderLength { layer: Layer::Ipv4 },
            ParseError::LengthMismatch { layer: Layer::Udp },
            ParseError::TooManyExtensionHeaders,
            ParseError::MisplacedHopByHop,
            ParseError::TooManyVlanTags,
            ParseError::UnsupportedEtherType(0),
            ParseError::BadTunnelHeader {
                layer: Layer::Vxlan,
            },
            ParseError::UnsupportedTunnelPayload(0),
        ];
        for err in parse {
            let msg = parse_status(&err).message().to_str().unwrap();
            assert_eq!(msg, format!("parse: {}", err.reason()));
        }
        let gso = [
            GsoError::NotTcp,
            GsoError::NotUdp,
            GsoError::SegmentSizeZero,
            GsoError::FragmentSizeTooSmall,
            GsoError::TooManySegments(0),
            GsoError::TooLarge,
            GsoError::HeadersTooLong,
            GsoError::FragmentedInput,
            GsoError::UfoNeedsIpv4,
            GsoError::FixedIdWithoutDf,
            GsoError::GreSequenceNumber,
            GsoError::TrailingBytes,
            GsoError::LayoutMismatch,
            GsoError::VirtioTypeMismatch,
            GsoError::VirtioNoGso,
            GsoError::VirtioUnsupportedType(0),
            GsoError::VirtioChecksumMismatch,
            GsoError::AuthenticationHeader,
            GsoError::RoutingHeaderUnsupported(3),
        ];
        for err in gso {
            let msg = gso_status(&err).message().to_str().unwrap();
            assert_eq!(msg, format!("gso: {}", err.reason()));
        }
        let virtio = [
            VirtioError::Truncated,
            VirtioError::BufferTooSmall,
            VirtioError::UnknownFlags(0),
            VirtioError::RscInfoNotAllowed,
            VirtioError::ConflictingChecksumFlags,
            VirtioError::UnknownGsoType(0),
            VirtioError::EcnWithoutTcp,
            VirtioError::GsoWithoutNeedsCsum,
            VirtioError::GsoSizeZero,
            VirtioError::GsoSizeTooLarge,
            VirtioError::GsoSizeWithoutGso,
            VirtioError::GsoIpVersionMismatch,
            VirtioError::GsoTransportMismatch,
            VirtioError::GsoOnFragment,
            VirtioError::ChecksumOutsideFrame,
            VirtioError::ChecksumStartInHeaders,
            VirtioError::ChecksumStartMismatch,
            VirtioError::ChecksumOffsetMismatch,
            VirtioError::NotTcpOrUdp,
            VirtioError::OffsetTooLarge,
            VirtioError::LayoutOutsideFrame,
        ];
        for err in virtio {
            let msg = virtio_status(&err).message().to_str().unwrap();
            assert_eq!(msg, format!("vnet: {}", err.reason()));
        }
    }

    #[test]
    fn codes_are_distinct_and_negative() {
        let mut seen = std::collections::HashSet::new();
        for s in ofl_status::ALL {
            assert!(seen.insert(s as i32), "{s:?} repeats a value");
            assert!(s == ofl_status::OFL_OK || (s as i32) < 0);
            assert_eq!(ofl_status::from_code(s as i32), Some(s));
        }
    }
}
